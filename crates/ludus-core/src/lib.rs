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
pub mod model;
pub mod multi_update;
pub mod notification;
pub mod revocation;
pub mod storage;
pub mod storage_service;
pub mod store;
pub mod token;
pub mod validate;
pub mod wallet;

pub use error::{ApiError, Code};
pub use store::{Store, StoreError};

/// Seconds since the UNIX epoch, the one clock the domain uses.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}
