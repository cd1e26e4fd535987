//! Why a store could not be opened or migrated. Each message says what the
//! operator can do about it; backend error types stay private to this crate.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(
        "database address {address:?} is invalid: {reason}; use postgres://user:password@host:port/dbname, \
         user:password@host:port/dbname, or leave it empty for sqlite"
    )]
    InvalidAddress { address: String, reason: String },

    #[error("cannot create data directory {}: {source}; check that the path is writable", path.display())]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("cannot open sqlite database {}: {message}; check the file and its directory permissions", path.display())]
    Sqlite { path: PathBuf, message: String },

    #[error(
        "cannot connect to postgresql at {target}: {message}; check database.address and that the server is up"
    )]
    Connect { target: String, message: String },

    #[error("database {target} has no ludus schema; run `ludus migrate up` first")]
    NotMigrated { target: String },

    #[error(
        "database {target} is at schema version {current} but this ludus needs version {latest}; \
         run `ludus migrate up`"
    )]
    Outdated {
        target: String,
        current: i64,
        latest: i64,
    },

    #[error(
        "database {target} is at schema version {current}, newer than this ludus knows ({latest}); \
         upgrade ludus"
    )]
    TooNew {
        target: String,
        current: i64,
        latest: i64,
    },

    #[error(
        "migration {version} ({name}) failed: {message}; the database stays at version {current}"
    )]
    Migration {
        version: i64,
        name: &'static str,
        message: String,
        current: i64,
    },

    #[error("database error on {target}: {message}")]
    Database { target: String, message: String },

    #[error("cannot start storage thread: {0}")]
    Thread(std::io::Error),
}
