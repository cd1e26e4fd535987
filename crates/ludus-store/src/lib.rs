//! Storage backends for Ludus: SQLite (the default, a file under the data
//! directory) and PostgreSQL, both implementing [`ludus_core::Store`], plus the
//! numbered SQL migrations each one runs.
//!
//! [`open`] picks the backend from the configured address (`database.address`):
//!
//! - empty: SQLite at `<data_dir>/ludus.db`, created and migrated on open;
//! - `postgres://…` or `postgresql://…`: PostgreSQL;
//! - Nakama's bare form `user:password@host:port/dbname` (also `user@host:port`):
//!   PostgreSQL. Without a database name the database is `ludus`, without a
//!   user it is `postgres`.
//!
//! PostgreSQL is never migrated implicitly: `ludus migrate up` ([`migrate_up`])
//! does it, and [`open`] refuses a schema older or newer than this build knows.
//!
//! Both backends batch concurrent writes into one transaction (group commit);
//! see the `sqlite` and `postgres` modules for how.

mod address;
mod error;
mod migrate;
mod module_sql;
mod postgres;
mod sqlite;

use std::path::Path;
use std::sync::Arc;

use ludus_core::Store;

pub use error::OpenError;
pub use migrate::{MigrationInfo, MigrationReport, MigrationStatus};

/// The SQLite file inside the data directory.
pub const SQLITE_FILE_NAME: &str = "ludus.db";

/// The PostgreSQL database used when the address names none.
pub const DEFAULT_POSTGRES_DATABASE: &str = "ludus";

/// Tuning of the connections a store keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreOptions {
    /// Most connections open at once (`database.max_open_conns`). PostgreSQL:
    /// the pool size. SQLite: caps the reader connections (one writer is
    /// always added). Group commit makes a small pool enough.
    pub max_open_conns: usize,
    /// A connection older than this is closed instead of reused
    /// (`database.conn_max_lifetime_ms`); 0 keeps connections forever.
    pub conn_max_lifetime_ms: u64,
    /// How long a request waits for a free PostgreSQL connection before it
    /// fails as unavailable, so an exhausted pool never hangs a client.
    pub acquire_timeout_ms: u64,
    /// Longest one module statement (`nk.sql_*`) may run on SQLite before
    /// it is interrupted: it holds the writer or a reader while it runs, and
    /// the Lua call waiting for it has given up by then
    /// (`runtime.lua_call_timeout_ms`).
    pub module_sql_timeout_ms: u64,
    /// PostgreSQL: registration batches that may commit at once
    /// (`database.register_in_flight`). While they commit the next batch
    /// gathers, so fewer in flight means larger batches: one made sign-up
    /// about a third faster than four (BENCHMARKS.md).
    pub register_in_flight: usize,
    /// PostgreSQL: batches of each other batched kind (single-wallet
    /// updates, single-object storage writes, storage reads by id) that may
    /// run at once (`database.batches_in_flight`), at most half the pool.
    /// While they run the next batch gathers, so fewer in flight means
    /// larger batches and less of PostgreSQL's time per change: one rather
    /// than two made wallet updates about a tenth and storage writes about
    /// a fifth faster with PostgreSQL's core the bound (BENCHMARKS.md).
    pub batches_in_flight: usize,
    /// PostgreSQL: listed users' profiles (friends, group members) kept in
    /// memory, each checked against its row's version whenever it is
    /// listed, so PostgreSQL sends only the edges of a listing it mostly
    /// holds (`database.profile_cache_entries`); 0 turns the cache off.
    pub profile_cache_entries: usize,
    /// PostgreSQL: how often tables that are still filling up (under
    /// 100,000 rows) are checked and, when their live rows grew or shrank
    /// by half since their last statistics, analyzed, so plans made while
    /// they were empty do not last until autovacuum's next visit
    /// (`database.analyze_interval_ms`); 0 leaves statistics to autovacuum
    /// alone.
    pub analyze_interval_ms: u64,
    /// SQLite: the least time between the writer's moves of new ledger
    /// entries into the indexed ledger table (`database.ledger_merge_interval_ms`,
    /// migration 10); 0 moves them after every commit. A longer interval
    /// writes fewer WAL pages per wallet update, keeps callers waiting longer
    /// behind each move, and leaves more entries for ledger pages to scan.
    pub ledger_merge_interval_ms: u64,
    /// SQLite: the least time between two syncs of the WAL
    /// (`database.wal_sync_interval_ms`). Commits do not sync
    /// (`synchronous=NORMAL`), so this bounds how many of the latest
    /// commits a power loss or kernel crash can take; a crash of the
    /// process alone loses none.
    pub wal_sync_interval_ms: u64,
    /// SQLite: the least time between two checkpoints, which copy the WAL
    /// into the database file (`database.checkpoint_interval_ms`); at or
    /// below `wal_sync_interval_ms`, every sync is a checkpoint.
    pub checkpoint_interval_ms: u64,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            max_open_conns: 16,
            conn_max_lifetime_ms: 3_600_000,
            acquire_timeout_ms: 5_000,
            module_sql_timeout_ms: 5_000,
            register_in_flight: 1,
            batches_in_flight: 1,
            profile_cache_entries: 10_000,
            analyze_interval_ms: 1_000,
            ledger_merge_interval_ms: 50,
            wal_sync_interval_ms: 10,
            checkpoint_interval_ms: 100,
        }
    }
}

/// Opens the store the address names, ready for use.
///
/// SQLite creates `data_dir` and migrates itself; PostgreSQL must already be
/// at the schema version this build knows (run `ludus migrate up`).
pub async fn open(
    address: &str,
    data_dir: &Path,
    opts: StoreOptions,
) -> Result<Arc<dyn Store>, OpenError> {
    match address::parse(address)? {
        address::Address::Sqlite => {
            let store = sqlite::SqliteStore::open(data_dir.join(SQLITE_FILE_NAME), &opts).await?;
            Ok(Arc::new(store))
        }
        address::Address::Postgres(config) => {
            let store = postgres::PgStore::open(*config, &opts).await?;
            Ok(Arc::new(store))
        }
    }
}

/// Applies every migration the database lacks (`ludus migrate up`).
pub async fn migrate_up(address: &str, data_dir: &Path) -> Result<MigrationReport, OpenError> {
    match address::parse(address)? {
        address::Address::Sqlite => sqlite::migrate_up(data_dir.join(SQLITE_FILE_NAME)).await,
        address::Address::Postgres(config) => postgres::migrate_up(&config).await,
    }
}

/// Reports the schema version and what `migrate_up` would apply (`ludus migrate status`).
pub async fn migrate_status(address: &str, data_dir: &Path) -> Result<MigrationStatus, OpenError> {
    match address::parse(address)? {
        address::Address::Sqlite => sqlite::migrate_status(data_dir.join(SQLITE_FILE_NAME)).await,
        address::Address::Postgres(config) => postgres::migrate_status(&config).await,
    }
}

/// Deletes the groups whose only superadmin is the user `?1` / `$1`
/// (before the user goes, as Nakama's account deletion does).
pub(crate) const ORPHANED_GROUPS_DELETE_SQLITE: &str = "DELETE FROM groups WHERE id IN (
    SELECT e.group_id FROM group_edge e
     WHERE e.user_id = ?1 AND e.state = 0
       AND NOT EXISTS (SELECT 1 FROM group_edge o
                        WHERE o.group_id = e.group_id AND o.user_id <> ?1 AND o.state = 0))";

/// The PostgreSQL form of [`ORPHANED_GROUPS_DELETE_SQLITE`].
pub(crate) const ORPHANED_GROUPS_DELETE_POSTGRES: &str = "DELETE FROM groups WHERE id IN (
    SELECT e.group_id FROM group_edge e
     WHERE e.user_id = $1 AND e.state = 0
       AND NOT EXISTS (SELECT 1 FROM group_edge o
                        WHERE o.group_id = e.group_id AND o.user_id <> $1 AND o.state = 0))";
