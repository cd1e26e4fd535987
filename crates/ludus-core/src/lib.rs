//! The Ludus domain: accounts and users, session tokens, storage objects and
//! wallets, domain errors and the `Store` trait that every storage backend implements.
//!
//! This crate knows nothing of HTTP, WebSocket, SQL or Lua. Transports turn
//! their requests into calls on [`accounts::AccountService`] and turn
//! [`error::ApiError`] back into their own wire format through the one mapping
//! in [`error::Code`].

pub mod accounts;
pub mod chat;
pub mod error;
pub mod friend;
pub mod group;
pub mod leaderboard;
pub mod leaderboard_service;
pub mod model;
pub mod multi_update;
pub mod notification;
pub mod query;
pub mod rank_index;
pub mod revocation;
pub mod sched;
pub mod schedule;
pub mod social_service;
pub mod storage;
pub mod storage_index;
pub mod storage_service;
pub mod store;
pub mod token;
pub mod validate;
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

/// Nanoseconds since the UNIX epoch (matchmaker ticket times, as Nakama).
pub fn unix_now_ns() -> i64 {
    since_epoch().as_nanos() as i64
}

fn since_epoch() -> std::time::Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}
