//! The Ludus domain: accounts and users, session tokens, storage objects and
//! wallets, domain errors and the `Store` trait that every storage backend implements.
//!
//! This crate knows nothing of HTTP, WebSocket, SQL or Lua. Transports turn
//! their requests into calls on [`accounts::AccountService`] and turn
//! [`error::ApiError`] back into their own wire format through the one mapping
//! in [`error::Code`].

pub mod accounts;
pub mod chat;
pub mod chat_service;
pub mod console;
pub mod console_acl;
pub mod console_mfa;
pub mod console_ops;
pub mod console_records;
pub mod console_service;
pub mod error;
pub mod friend;
pub mod group;
pub mod leaderboard;
pub mod leaderboard_service;
pub mod metrics;
pub mod model;
pub mod multi_update;
pub mod notification;
pub mod notification_service;
pub mod purchase;
pub mod query;
pub mod rank_index;
pub mod revocation;
pub mod sched;
pub mod schedule;
pub mod sign_in_throttle;
pub mod social_auth;
pub mod social_service;
pub mod storage;
pub mod storage_index;
pub mod storage_service;
pub mod store;
pub mod stored_json;
pub mod token;
mod urlencode;
pub mod validate;
mod verified;
pub mod wallet;

pub use error::{ApiError, Code};
pub use store::{Store, StoreError};

/// Seconds since the UNIX epoch: the one wall clock of every crate (with
/// [`unix_now_us`] and [`unix_now_ns`] for finer stamps).
pub fn unix_now() -> i64 {
    since_epoch().as_secs() as i64
}

/// Microseconds since the UNIX epoch (stored times of messages).
pub fn unix_now_us() -> i64 {
    since_epoch().as_micros() as i64
}

/// Milliseconds since the UNIX epoch (purchase and subscription times).
pub fn unix_now_ms() -> i64 {
    since_epoch().as_millis() as i64
}

/// Nanoseconds since the UNIX epoch (matchmaker ticket times, as Nakama).
pub fn unix_now_ns() -> i64 {
    since_epoch().as_nanos() as i64
}

/// A new id for a row the server stores: a time-ordered UUID (version 7:
/// milliseconds since the epoch, then random bits), so each table's primary
/// key index grows at its right edge instead of taking each insert on a
/// random page. On SQLite that cuts the pages a commit writes to the WAL
/// (sign-up +33 %, wallet updates with a ledger entry +17 %: BENCHMARKS.md,
/// "Time-ordered row ids"). Nakama makes version-4 ids; clients only see an
/// opaque UUID either way. Within a process the uuid crate's counter keeps
/// the ids of one millisecond increasing; the rest of their bits are random.
/// Ids that are not row keys (sessions, tokens, matches) stay version 4.
pub fn new_row_id() -> uuid::Uuid {
    uuid::Uuid::now_v7()
}

fn since_epoch() -> std::time::Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_ids_are_version_7_and_increase_in_creation_order() {
        let ids: Vec<uuid::Uuid> = (0..10_000).map(|_| new_row_id()).collect();
        assert!(ids.iter().all(|id| id.get_version_num() == 7));
        // Many ids fall in one millisecond: the counter still orders them,
        // as bytes and as the text SQLite keys them by.
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert!(
            ids.windows(2)
                .all(|w| w[0].hyphenated().to_string() < w[1].hyphenated().to_string())
        );
        let secs = |id: &uuid::Uuid| id.get_timestamp().map(|t| t.to_unix().0 as i64);
        let now = unix_now();
        assert!(secs(&ids[0]).is_some_and(|s| (now - 2..=now).contains(&s)));
    }
}
