//! The SQL of storage objects, wallets and the ledger on SQLite. A
//! multi-update runs as one write job on the writer thread, so it is one
//! savepoint of the group commit: every row it touched is rolled back when
//! any part is refused. The writer is the only writer, so reading a row and
//! then changing it cannot race another transaction.

use ludus_core::multi_update::{MultiUpdate, MultiUpdateResult};
use ludus_core::storage::{
    Existing, ListQuery, ObjectId, ReadPermission, Rejection, StorageAck, StorageObject,
    WritePermission, check_delete, check_write,
};
use ludus_core::store::{StoreError, StoreResult};
use ludus_core::wallet::{self, LedgerBound, LedgerEntry, WalletUpdateResult};
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension as _, Row, params};
use uuid::Uuid;

use super::queries::{IdText, exec, map_err, update_account, uuid_at};
use super::writer::Tx;

const OBJECT_COLUMNS: &str =
    "collection, key, user_id, value, version, read, write, create_time, update_time";

fn object_from_row(row: &Row<'_>) -> rusqlite::Result<StorageObject> {
    let read: i64 = row.get(5)?;
    let write: i64 = row.get(6)?;
    Ok(StorageObject {
        collection: row.get(0)?,
        key: row.get(1)?,
        user_id: uuid_at(row, 2)?,
        value: row.get(3)?,
        version: row.get(4)?,
        read: ReadPermission::from_i64(read).ok_or_else(|| bad_column(5, read))?,
        write: WritePermission::from_i64(write).ok_or_else(|| bad_column(6, write))?,
        create_time: row.get(7)?,
        update_time: row.get(8)?,
    })
}

pub(super) fn objects_of_owner(
    conn: &Connection,
    owner: Uuid,
    limit: usize,
) -> StoreResult<Vec<StorageObject>> {
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {OBJECT_COLUMNS} FROM storage WHERE user_id = ?1
              ORDER BY collection, key LIMIT +?2"
        ))
        .map_err(map_err)?;
    let rows = stmt
        .query_map(
            params![IdText::new(owner), i64::try_from(limit).unwrap_or(i64::MAX)],
            object_from_row,
        )
        .map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}

fn bad_column(idx: usize, value: i64) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        idx,
        Type::Integer,
        format!("permission {value} out of range").into(),
    )
}

/// A foreign key names a user that does not exist; anything else as usual.
fn map_write_err(e: rusqlite::Error) -> StoreError {
    if let rusqlite::Error::SqliteFailure(failure, _) = &e
        && failure.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY
    {
        return StoreError::Rejected(Rejection::UnknownUser);
    }
    map_err(e)
}

pub(super) fn read_objects(conn: &Connection, ids: &[ObjectId]) -> StoreResult<Vec<StorageObject>> {
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {OBJECT_COLUMNS} FROM storage WHERE collection = ?1 AND key = ?2 AND user_id = ?3"
        ))
        .map_err(map_err)?;
    // One snapshot for the whole batch; a read of one object is a snapshot
    // of its own. `exec` keeps BEGIN and COMMIT prepared: `execute_batch`
    // parsed them again for every read.
    let snapshot = ids.len() > 1;
    if snapshot {
        exec(conn, "BEGIN")?;
    }
    let mut objects = Vec::with_capacity(ids.len());
    let mut result = Ok(());
    for id in ids {
        match stmt
            .query_row(
                params![id.collection, id.key, IdText::new(id.user_id)],
                object_from_row,
            )
            .optional()
        {
            Ok(Some(o)) => objects.push(o),
            Ok(None) => {}
            Err(e) => {
                result = Err(map_err(e));
                break;
            }
        }
    }
    if snapshot {
        exec(conn, "COMMIT")?;
    }
    result.map(|()| objects)
}

pub(super) fn list_objects(conn: &Connection, q: &ListQuery) -> StoreResult<Vec<StorageObject>> {
    let owner_clause = if q.owner.is_some() {
        "user_id = ?2"
    } else {
        "?2 IS NULL"
    };
    let after_clause = if q.after.is_some() {
        "(read, key, user_id) > (?5, ?6, ?7)"
    } else {
        "?5 IS NULL AND ?6 IS NULL AND ?7 IS NULL"
    };
    let sql = format!(
        "SELECT {OBJECT_COLUMNS} FROM storage
          WHERE collection = ?1 AND {owner_clause} AND read >= ?3 AND {after_clause}
          ORDER BY read, key, user_id LIMIT +?4"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(map_err)?;
    let owner = q.owner.map(|o| o.to_string());
    let (read, key, user) = match &q.after {
        Some(a) => (
            Some(a.read.as_i64()),
            Some(a.key.as_str()),
            Some(a.user_id.to_string()),
        ),
        None => (None, None, None),
    };
    let rows = stmt
        .query_map(
            params![
                q.collection,
                owner,
                q.min_read.as_i64(),
                q.limit as i64,
                read,
                key,
                user
            ],
            object_from_row,
        )
        .map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}

/// A stored object as a write or delete checks it, with what a write
/// that replaces it keeps (its creation time) or must move (its read
/// permission, a column of both listing indexes).
struct Stored {
    existing: Existing,
    read: i64,
    create_time: i64,
}

fn stored(tx: &Tx<'_>, id: &ObjectId) -> StoreResult<Option<Stored>> {
    tx.with(
        "SELECT version, write, read, create_time FROM storage
          WHERE collection = ?1 AND key = ?2 AND user_id = ?3",
        |stmt| {
            stmt.query_row(
                params![id.collection, id.key, IdText::new(id.user_id)],
                |row| {
                    let write: i64 = row.get(1)?;
                    Ok(Stored {
                        existing: Existing {
                            version: row.get(0)?,
                            write: WritePermission::from_i64(write)
                                .ok_or_else(|| bad_column(1, write))?,
                        },
                        read: row.get(2)?,
                        create_time: row.get(3)?,
                    })
                },
            )
            .optional()
        },
    )
    .map_err(map_err)
}

/// Everything of a [`MultiUpdate`], inside the writer's savepoint.
pub(super) fn multi_update(
    tx: &Tx<'_>,
    update: &MultiUpdate,
    now_us: i64,
) -> StoreResult<MultiUpdateResult> {
    let now = now_us / 1_000_000;
    for (user, account) in &update.accounts {
        update_account(tx, *user, account, now)?;
    }
    let acks = write_objects(tx, update, now)?;
    delete_objects(tx, update)?;
    let wallets = update_wallets(tx, update, now, now_us)?;
    Ok(MultiUpdateResult { acks, wallets })
}

/// Each write is a plain INSERT or UPDATE of one row, chosen by what
/// [`stored`] found: an upsert with `RETURNING` made SQLite build an
/// ephemeral table and a statement journal per write (about a quarter of
/// the writer's time a storage write; BENCHMARKS.md, "Storage writes
/// without an upsert on SQLite"), and an update that leaves the read
/// permission as it was does not name it, so neither listing index is
/// touched.
fn write_objects(tx: &Tx<'_>, update: &MultiUpdate, now: i64) -> StoreResult<Vec<StorageAck>> {
    let mut acks = Vec::with_capacity(update.writes.len());
    for w in &update.writes {
        let stored = stored(tx, &w.id)?;
        check_write(stored.as_ref().map(|s| &s.existing), w, update.access)?;
        let version = w.version();
        let read = w.read.as_i64();
        // The three statements take the same parameters; the update that
        // keeps the read permission leaves `?6` unread.
        let sql = match &stored {
            None => {
                "INSERT INTO storage (collection, key, user_id, value, version, read, write,
                                      create_time, update_time)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)"
            }
            Some(s) if s.read == read => {
                "UPDATE storage SET value = ?4, version = ?5, write = ?7, update_time = ?8
                  WHERE collection = ?1 AND key = ?2 AND user_id = ?3"
            }
            Some(_) => {
                "UPDATE storage SET value = ?4, version = ?5, read = ?6, write = ?7, update_time = ?8
                  WHERE collection = ?1 AND key = ?2 AND user_id = ?3"
            }
        };
        tx.with(sql, |stmt| {
            stmt.execute(params![
                w.id.collection,
                w.id.key,
                IdText::new(w.id.user_id),
                w.value,
                version,
                read,
                w.write.as_i64(),
                now
            ])
        })
        .map_err(map_write_err)?;
        let create_time = stored.map_or(now, |s| s.create_time);
        acks.push(StorageAck {
            collection: w.id.collection.clone(),
            key: w.id.key.clone(),
            user_id: w.id.user_id,
            version,
            create_time,
            update_time: now,
        });
    }
    Ok(acks)
}

fn delete_objects(tx: &Tx<'_>, update: &MultiUpdate) -> StoreResult<()> {
    for d in &update.deletes {
        let stored = stored(tx, &d.id)?;
        if check_delete(stored.as_ref().map(|s| &s.existing), d, update.access)? {
            tx.with(
                "DELETE FROM storage WHERE collection = ?1 AND key = ?2 AND user_id = ?3",
                |stmt| {
                    stmt.execute(params![
                        d.id.collection,
                        d.id.key,
                        IdText::new(d.id.user_id)
                    ])
                },
            )
            .map_err(map_err)?;
        }
    }
    Ok(())
}

fn update_wallets(
    tx: &Tx<'_>,
    update: &MultiUpdate,
    now: i64,
    now_us: i64,
) -> StoreResult<Vec<WalletUpdateResult>> {
    let mut results = Vec::with_capacity(update.wallets.len());
    for u in &update.wallets {
        let user = IdText::new(u.user_id);
        // The read answers the row's rowid, and the write finds the row by
        // it: one B-tree search instead of two (the id's index, then the
        // table). Nothing else writes between the two: this is the
        // writer's transaction.
        let found = tx
            .with("SELECT rowid, wallet FROM users WHERE id = ?1", |stmt| {
                stmt.query_row(params![user], |row| {
                    Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
                })
                .optional()
            })
            .map_err(map_err)?;
        let Some((rowid, stored)) = found else {
            continue;
        };
        let previous = wallet::decode(u.user_id, &stored)?;
        let updated = wallet::apply(u.user_id, &previous, &u.changeset)?;
        tx.with(
            "UPDATE users SET wallet = ?2, update_time = ?3 WHERE rowid = ?1",
            |stmt| stmt.execute(params![rowid, wallet::encode(&updated), now]),
        )
        .map_err(map_err)?;
        if update.update_ledger {
            tx.with(
                "INSERT INTO wallet_ledger_recent (id, user_id, changeset, metadata, create_time, update_time)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
                |stmt| {
                    stmt.execute(params![
                        IdText::new(ludus_core::new_row_id()),
                        user,
                        wallet::encode(&u.changeset),
                        u.metadata,
                        now_us
                    ])
                },
            )
            .map_err(map_err)?;
        }
        results.push(WalletUpdateResult {
            user_id: u.user_id,
            updated,
            previous,
        });
    }
    Ok(results)
}

const LEDGER_COLUMNS: &str = "id, user_id, changeset, metadata, create_time, update_time";

fn ledger_from_row(row: &Row<'_>) -> rusqlite::Result<LedgerEntry> {
    Ok(LedgerEntry {
        id: uuid_at(row, 0)?,
        user_id: uuid_at(row, 1)?,
        changeset: row.get(2)?,
        metadata: row.get(3)?,
        create_time_us: row.get(4)?,
        update_time_us: row.get(5)?,
    })
}

pub(super) fn ledger_list(
    conn: &Connection,
    user: Uuid,
    before: Option<LedgerBound>,
    limit: usize,
) -> StoreResult<Vec<LedgerEntry>> {
    // An entry is in one of two tables (migration 10): the recent one, which
    // `merge_ledger` empties while writes come (writer.rs), and the indexed
    // one. A page takes up to `limit` from each, newest first, and keeps the
    // newest `limit` of both.
    //
    // The per-user index is (user_id, create_time) (migration 9): a page
    // seeks through it to its cursor's time (the first page's is past any
    // time), rather than walking (and reading the id of) every newer entry
    // as the row-value form `(create_time, id) < (?3, ?4)` would, and the
    // entries of one microsecond are put in id order by a sort of just those.
    // The recent table has no such index: it is scanned, and it holds at
    // most the entries of one merge interval.
    let (time, id) = match before {
        Some(b) => (b.create_time_us, b.id.to_string()),
        None => (i64::MAX, String::new()),
    };
    // One statement, so one snapshot: a merge that commits between two
    // statements would hide (or double) the entries it moves.
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT * FROM (SELECT {LEDGER_COLUMNS} FROM wallet_ledger_indexed
                             WHERE user_id = ?1 AND create_time <= ?3 AND (create_time < ?3 OR id < ?4)
                             ORDER BY create_time DESC, id DESC LIMIT +?2)
             UNION ALL
             SELECT * FROM (SELECT {LEDGER_COLUMNS} FROM wallet_ledger_recent
                             WHERE user_id = ?1 AND create_time <= ?3 AND (create_time < ?3 OR id < ?4)
                             ORDER BY create_time DESC, id DESC LIMIT +?2)"
        ))
        .map_err(map_err)?;
    let rows = stmt
        .query_map(
            params![IdText::new(user), limit as i64, time, id],
            ledger_from_row,
        )
        .map_err(map_err)?;
    let mut entries = rows.collect::<Result<Vec<_>, _>>().map_err(map_err)?;
    // A uuid's bytes sort as its text does, so this is the SQL's order.
    entries.sort_unstable_by_key(|e| std::cmp::Reverse((e.create_time_us, e.id)));
    entries.truncate(limit);
    Ok(entries)
}

/// The two tables behind the `wallet_ledger` view (migration 10).
const LEDGER_TABLES: [&str; 2] = ["wallet_ledger_indexed", "wallet_ledger_recent"];

/// Moves every entry of the recent ledger table into the indexed one, in
/// the writer's transaction: the per-user index then takes each user's new
/// entries in one change to that user's leaf page rather than one a commit.
/// Returns how many entries moved.
///
/// `OR ROLLBACK`: an entry whose id the indexed table holds already (only
/// a module's SQL written past the view can make one) rolls back the whole
/// move, which is what the upkeep's own transaction does with any error.
/// With the default `ABORT`, SQLite would keep a statement journal to undo
/// the statement alone: a copy of every page the move changes, about a
/// third of the move's time (BENCHMARKS.md, "The WAL synced between
/// checkpoints").
pub(super) fn merge_ledger(conn: &Connection) -> StoreResult<usize> {
    let moved = conn
        .prepare_cached(&format!(
            "INSERT OR ROLLBACK INTO wallet_ledger_indexed ({LEDGER_COLUMNS})
             SELECT {LEDGER_COLUMNS} FROM wallet_ledger_recent"
        ))
        .and_then(|mut stmt| stmt.execute([]))
        .map_err(map_err)?;
    if moved > 0 {
        conn.prepare_cached("DELETE FROM wallet_ledger_recent")
            .and_then(|mut stmt| stmt.execute([]))
            .map_err(map_err)?;
    }
    Ok(moved)
}

/// Distinct collection names after `after`, in order.
pub(super) fn collections(
    conn: &Connection,
    after: &str,
    limit: usize,
) -> StoreResult<Vec<String>> {
    conn.prepare_cached(
        "SELECT DISTINCT collection FROM storage WHERE collection > ?1 ORDER BY collection LIMIT +?2",
    )
    .map_err(map_err)?
    .query_map(params![after, limit as i64], |row| row.get(0))
    .map_err(map_err)?
    .collect::<Result<Vec<String>, _>>()
    .map_err(map_err)
}

/// Deletes a user's ledger entry from whichever of the two tables holds it.
pub(super) fn ledger_delete(conn: &Connection, user: Uuid, id: Uuid) -> StoreResult<bool> {
    let mut deleted = 0;
    for table in LEDGER_TABLES {
        deleted += conn
            .prepare_cached(&format!(
                "DELETE FROM {table} WHERE id = ?1 AND user_id = ?2"
            ))
            .map_err(map_err)?
            .execute(params![IdText::new(id), IdText::new(user)])
            .map_err(map_err)?;
    }
    Ok(deleted > 0)
}

pub(super) fn ledger_update(
    conn: &Connection,
    id: Uuid,
    metadata: &str,
    now_us: i64,
) -> StoreResult<Option<LedgerEntry>> {
    // The entry is in one of the two tables (migration 10); the writer runs
    // this, so no merge moves it in between.
    for table in LEDGER_TABLES {
        let current: Option<String> = conn
            .prepare_cached(&format!("SELECT metadata FROM {table} WHERE id = ?1"))
            .map_err(map_err)?
            .query_row(params![IdText::new(id)], |row| row.get(0))
            .optional()
            .map_err(map_err)?;
        let Some(current) = current else {
            continue;
        };
        let merged = wallet::merge_metadata(&current, metadata)
            .map_err(|e| StoreError::Backend(e.message.into_owned()))?;
        return conn
            .prepare_cached(&format!(
                "UPDATE {table} SET metadata = ?2, update_time = ?3 WHERE id = ?1 RETURNING {LEDGER_COLUMNS}"
            ))
            .map_err(map_err)?
            .query_row(params![IdText::new(id), merged, now_us], ledger_from_row)
            .optional()
            .map_err(map_err);
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(conn: &Connection, table: &str) -> i64 {
        conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap()
    }

    /// A move that meets an id the indexed table holds already fails whole,
    /// as the upkeep runs it (its own transaction, rolled back on error):
    /// no entry is lost or moved twice, and the next move, once the clash
    /// is gone, takes them all.
    #[test]
    fn a_ledger_move_that_clashes_changes_neither_table() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("merge.db");
        let mut conn = super::super::connection::open_writer(&path).unwrap();
        super::super::connection::migrate(&mut conn, &path).unwrap();
        let ann = "00000000-0000-0000-0000-0000000000a1";
        conn.execute(
            "INSERT INTO users (id, username, create_time, update_time) VALUES (?1, 'ann', 0, 0)",
            [ann],
        )
        .unwrap();
        for (table, id) in [
            ("wallet_ledger_recent", "r-1"),
            ("wallet_ledger_recent", "r-2"),
            ("wallet_ledger_indexed", "r-2"),
        ] {
            conn.execute(
                &format!(
                    "INSERT INTO {table} (id, user_id, changeset, create_time, update_time)
                     VALUES (?1, ?2, '{{}}', 1, 1)"
                ),
                [id, ann],
            )
            .unwrap();
        }
        // As the writer runs it: a transaction of its own, rolled back on error.
        let move_entries = super::super::writer::Upkeep {
            every: std::time::Duration::ZERO,
            work: merge_ledger,
            what: "ledger merge",
        };
        let committed = super::super::checkpointer::Committed::default();
        let upkeep =
            |conn: &Connection| super::super::writer::run_upkeep(conn, move_entries, &committed);
        let err = upkeep(&conn).unwrap_err();
        assert!(err.to_string().contains("UNIQUE"), "{err}");
        assert!(conn.is_autocommit());
        assert_eq!(count(&conn, "wallet_ledger_recent"), 2);
        assert_eq!(count(&conn, "wallet_ledger_indexed"), 1);

        conn.execute("DELETE FROM wallet_ledger_indexed WHERE id = 'r-2'", [])
            .unwrap();
        assert_eq!(upkeep(&conn).unwrap(), 2);
        assert_eq!(count(&conn, "wallet_ledger_recent"), 0);
        assert_eq!(count(&conn, "wallet_ledger_indexed"), 2);
    }
}
