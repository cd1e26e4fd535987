//! Opening SQLite connections with the settings this store relies on, and
//! running the embedded migrations on the write connection.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension as _, TransactionBehavior};

use crate::migrate::{self, MigrationInfo, MigrationReport, MigrationStatus};
use ludus_core::unix_now;

use crate::OpenError;

/// How long a statement waits for a lock held by another process (for
/// example `ludus migrate` or a backup tool) before failing as busy.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Enough for every statement of the store, with room for later ones.
const STATEMENT_CACHE: usize = 64;

/// Opens (creating if needed) the read-write connection owned by the writer thread.
pub(super) fn open_writer(path: &Path) -> Result<Connection, OpenError> {
    let sqlite_err = |e: rusqlite::Error| OpenError::Sqlite {
        path: path.to_owned(),
        message: e.to_string(),
    };
    let conn = Connection::open(path).map_err(sqlite_err)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(sqlite_err)?;
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .map_err(sqlite_err)?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(path = %path.display(), mode, "sqlite refused WAL mode, readers will block the writer");
    }
    // Durability trade-off: in WAL mode with synchronous=NORMAL a commit
    // appends to the WAL without fsync; the checkpointer thread syncs the
    // WAL (`database.wal_sync_interval_ms`, 10 ms by default). A crash of
    // the ludus process loses nothing (the OS has the pages), but a power
    // loss or kernel crash can lose the transactions committed since the
    // last sync. The database is never corrupted either way.
    // FULL would fsync every group commit, costing one disk flush per batch.
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(sqlite_err)?;
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(sqlite_err)?;
    conn.pragma_update(None, "temp_store", "MEMORY")
        .map_err(sqlite_err)?;
    // Negative sizes are KiB: 32 MiB of page cache for the writer.
    conn.pragma_update(None, "cache_size", -32_768)
        .map_err(sqlite_err)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(conn)
}

/// Opens a read-only connection for the reader pool; the writer must have
/// created the database first.
pub(super) fn open_reader(path: &Path) -> Result<Connection, OpenError> {
    let sqlite_err = |e: rusqlite::Error| OpenError::Sqlite {
        path: path.to_owned(),
        message: e.to_string(),
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(path, flags).map_err(sqlite_err)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(sqlite_err)?;
    conn.pragma_update(None, "cache_size", -16_384)
        .map_err(sqlite_err)?;
    // Reads straight from the page cache of the OS instead of copying pages.
    conn.pragma_update(None, "mmap_size", 256 * 1024 * 1024)
        .map_err(sqlite_err)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(conn)
}

/// Highest applied migration, 0 when there is no `schema_migrations` table.
pub(super) fn current_version(conn: &Connection) -> rusqlite::Result<i64> {
    let exists = conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
            [],
            |_| Ok(()),
        )
        .optional()?
        .is_some();
    if !exists {
        return Ok(0);
    }
    conn.query_row(
        "SELECT coalesce(max(version), 0) FROM schema_migrations",
        [],
        |row| row.get(0),
    )
}

/// Applies the pending migrations, each in its own transaction.
pub(super) fn migrate(conn: &mut Connection, path: &Path) -> Result<MigrationReport, OpenError> {
    let target = path.display().to_string();
    let db_err = |e: rusqlite::Error| OpenError::Database {
        target: target.clone(),
        message: e.to_string(),
    };
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
             version    INTEGER NOT NULL PRIMARY KEY,
             name       TEXT    NOT NULL,
             applied_at INTEGER NOT NULL
         ) STRICT",
    )
    .map_err(db_err)?;
    let from = current_version(conn).map_err(db_err)?;
    let latest = migrate::latest(migrate::SQLITE);
    if from > latest {
        return Err(OpenError::TooNew {
            target,
            current: from,
            latest,
        });
    }
    let mut current = from;
    let mut applied = Vec::new();
    for m in migrate::pending(migrate::SQLITE, from) {
        let failed = |current: i64, e: rusqlite::Error| OpenError::Migration {
            version: m.version,
            name: m.name,
            message: e.to_string(),
            current,
        };
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| failed(current, e))?;
        // Another process may have migrated while this one waited for the lock.
        let now = current_version(&tx).map_err(|e| failed(current, e))?;
        if now >= m.version {
            current = now;
            continue;
        }
        tx.execute_batch(m.sql).map_err(|e| failed(current, e))?;
        tx.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?1, ?2, ?3)",
            rusqlite::params![m.version, m.name, unix_now()],
        )
        .map_err(|e| failed(current, e))?;
        tx.commit().map_err(|e| failed(current, e))?;
        tracing::info!(
            backend = "sqlite",
            version = m.version,
            name = m.name,
            "applied migration"
        );
        current = m.version;
        applied.push(MigrationInfo::from(m));
    }
    Ok(MigrationReport {
        backend: "sqlite",
        from,
        to: current,
        applied,
    })
}

/// The schema status of a database file, without creating it.
pub(super) fn status(path: &Path) -> Result<MigrationStatus, OpenError> {
    let current = if path.exists() {
        let conn = open_reader(path)?;
        current_version(&conn).map_err(|e| OpenError::Database {
            target: path.display().to_string(),
            message: e.to_string(),
        })?
    } else {
        0
    };
    let pending = migrate::pending(migrate::SQLITE, current)
        .map(MigrationInfo::from)
        .collect();
    Ok(MigrationStatus {
        backend: "sqlite",
        current,
        latest: migrate::latest(migrate::SQLITE),
        pending,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(conn: &Connection, sql: &str) -> i64 {
        conn.query_row(sql, [], |row| row.get(0)).unwrap()
    }

    /// The first column of every row `sql` answers, as text.
    fn texts(conn: &Connection, sql: &str) -> Vec<String> {
        conn.prepare(sql)
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// The bundled SQLite is built with `.cargo/config.toml`'s flags: no
    /// memory statistics, so no global mutex around each of its allocations.
    #[test]
    fn bundled_sqlite_keeps_no_memory_statistics() {
        let conn = Connection::open_in_memory().unwrap();
        let options = texts(&conn, "PRAGMA compile_options");
        assert!(
            options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"),
            "compile options: {options:?}"
        );
    }

    /// Migration 11 rebuilds the ledger's two tables without their foreign
    /// key: a database at version 10 keeps every entry (ids, rowids, rows)
    /// and its per-user index, deleting an account still deletes its
    /// entries from both tables, and a module's write through the view for
    /// an unknown account is refused with SQLite's message.
    #[test]
    fn ledger_tables_lose_their_foreign_key_and_keep_their_entries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ludus.db");
        let mut conn = open_writer(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE schema_migrations (
                 version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL,
                 applied_at INTEGER NOT NULL) STRICT",
        )
        .unwrap();
        for m in migrate::SQLITE.iter().filter(|m| m.version <= 10) {
            conn.execute_batch(m.sql).unwrap();
            conn.execute(
                "INSERT INTO schema_migrations VALUES (?1, ?2, 0)",
                rusqlite::params![m.version, m.name],
            )
            .unwrap();
        }
        conn.execute_batch(
            "INSERT INTO users (id, username, create_time, update_time) VALUES
                 ('00000000-0000-0000-0000-0000000000a1', 'ann', 0, 0),
                 ('00000000-0000-0000-0000-0000000000b0', 'bob', 0, 0);
             INSERT INTO wallet_ledger_indexed (rowid, id, user_id, changeset, create_time, update_time) VALUES
                 (7, 'i-ann', '00000000-0000-0000-0000-0000000000a1', '{\"coins\":1}', 1, 1),
                 (8, 'i-bob', '00000000-0000-0000-0000-0000000000b0', '{\"coins\":2}', 2, 2);
             INSERT INTO wallet_ledger_recent (id, user_id, changeset, create_time, update_time) VALUES
                 ('r-ann', '00000000-0000-0000-0000-0000000000a1', '{\"coins\":3}', 3, 3),
                 ('r-bob', '00000000-0000-0000-0000-0000000000b0', '{\"coins\":4}', 4, 4);",
        )
        .unwrap();

        let report = migrate(&mut conn, &path).unwrap();
        assert_eq!(report.from, 10);
        assert_eq!(report.to, migrate::latest(migrate::SQLITE));
        let keys = "SELECT (SELECT count(*) FROM pragma_foreign_key_list('wallet_ledger_indexed'))
                         + (SELECT count(*) FROM pragma_foreign_key_list('wallet_ledger_recent'))";
        assert_eq!(count(&conn, keys), 0);
        let rows: Vec<(i64, String, String)> = conn
            .prepare("SELECT rowid, id, changeset FROM wallet_ledger_indexed ORDER BY rowid")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            rows,
            [
                (7, "i-ann".to_owned(), r#"{"coins":1}"#.to_owned()),
                (8, "i-bob".to_owned(), r#"{"coins":2}"#.to_owned()),
            ]
        );
        assert_eq!(count(&conn, "SELECT count(*) FROM wallet_ledger"), 4);
        let plan: String = conn
            .query_row(
                "EXPLAIN QUERY PLAN SELECT id FROM wallet_ledger_indexed
                  WHERE user_id = 'x' ORDER BY create_time DESC",
                [],
                |r| r.get(3),
            )
            .unwrap();
        assert!(plan.contains("wallet_ledger_user_idx"), "{plan}");

        // Deleting an account takes its entries from both tables.
        conn.execute(
            "DELETE FROM users WHERE id = '00000000-0000-0000-0000-0000000000b0'",
            [],
        )
        .unwrap();
        let ids = texts(&conn, "SELECT id FROM wallet_ledger ORDER BY id");
        assert_eq!(ids, ["i-ann", "r-ann"]);

        // A module's insert or move to an unknown account is refused, and
        // writes nothing.
        let unknown = conn
            .execute(
                "INSERT INTO wallet_ledger (id, user_id, changeset, create_time)
                 VALUES ('m-1', '00000000-0000-0000-0000-0000000000ff', '{}', 5)",
                [],
            )
            .unwrap_err();
        assert!(
            unknown
                .to_string()
                .contains("FOREIGN KEY constraint failed"),
            "{unknown}"
        );
        let moved = conn
            .execute(
                "UPDATE wallet_ledger SET user_id = '00000000-0000-0000-0000-0000000000ff'
                  WHERE id = 'r-ann'",
                [],
            )
            .unwrap_err();
        assert!(
            moved.to_string().contains("FOREIGN KEY constraint failed"),
            "{moved}"
        );
        assert_eq!(count(&conn, "SELECT count(*) FROM wallet_ledger"), 2);
        assert_eq!(
            count(
                &conn,
                "SELECT count(*) FROM wallet_ledger
                  WHERE user_id = '00000000-0000-0000-0000-0000000000a1'"
            ),
            2
        );
        // A known account is still accepted, and other updates pass.
        conn.execute(
            "INSERT INTO wallet_ledger (id, user_id, changeset, create_time)
             VALUES ('m-2', '00000000-0000-0000-0000-0000000000a1', '{}', 6)",
            [],
        )
        .unwrap();
        conn.execute(
            "UPDATE wallet_ledger SET metadata = '{\"seen\":true}' WHERE id = 'r-ann'",
            [],
        )
        .unwrap();
        assert_eq!(count(&conn, "SELECT count(*) FROM wallet_ledger"), 3);
        let integrity: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(integrity, "ok");
    }
}
