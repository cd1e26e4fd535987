//! The `Store` trait: everything the domain persists, implemented by each
//! storage backend (SQLite and PostgreSQL in `ludus-store`).
//!
//! Every method is one transaction. Backends retry serialization failures
//! themselves; callers only ever see the outcomes named in [`StoreError`].

use async_trait::async_trait;
use uuid::Uuid;

use crate::model::{Account, AccountUpdate, Identity, NewUser, Revocations, User, UserAuth};
use crate::token::TokenKind;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("username is already in use")]
    UsernameTaken,
    #[error("identity is already linked to another account")]
    IdentityTaken,
    #[error("not found")]
    NotFound,
    /// The database could not be reached or is shutting down.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    #[error("storage error: {0}")]
    Backend(String),
}

pub type StoreResult<T> = Result<T, StoreError>;

#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// `"sqlite"` or `"postgres"`, for logs.
    fn backend(&self) -> &'static str;

    /// The user a device id, custom id, email or username belongs to.
    async fn find_user_by_identity(&self, identity: &Identity) -> StoreResult<Option<UserAuth>>;

    /// Sign-in details of a user by id.
    async fn find_user_auth(&self, id: Uuid) -> StoreResult<Option<UserAuth>>;

    /// Registers a user with its first identity, all or nothing.
    /// Fails with `UsernameTaken` or `IdentityTaken` and writes nothing then.
    async fn create_user(&self, user: NewUser) -> StoreResult<()>;

    async fn get_account(&self, id: Uuid) -> StoreResult<Option<Account>>;

    /// Applies the changes; `NotFound` for no such user, `UsernameTaken` on a clash.
    async fn update_account(&self, id: Uuid, update: AccountUpdate, now: i64) -> StoreResult<()>;

    /// Deletes the user and everything linked to it; false when there was none.
    async fn delete_user(&self, id: Uuid) -> StoreResult<bool>;

    /// Users by id or username, each at most once, in no particular order.
    async fn get_users(&self, ids: &[Uuid], usernames: &[String]) -> StoreResult<Vec<User>>;

    /// Records that one token is revoked until it expires.
    async fn revoke_token(
        &self,
        token_id: &str,
        kind: TokenKind,
        expires_at: i64,
    ) -> StoreResult<()>;

    /// Records that every token of a user issued at or before `cutoff` is revoked.
    async fn revoke_user_sessions(&self, user: Uuid, cutoff: i64) -> StoreResult<()>;

    /// Revocations still in force at `now`; expired ones may be purged.
    async fn load_revocations(&self, now: i64) -> StoreResult<Revocations>;

    /// Finishes pending writes and closes connections.
    async fn close(&self);
}
