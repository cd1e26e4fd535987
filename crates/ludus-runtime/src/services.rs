//! What modules may ask of the server. `ludus-server` implements
//! [`RuntimeServices`] over its account service and HTTP client, so this
//! crate never depends on the server, its routes or its database drivers.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use ludus_core::ApiError;
use ludus_core::accounts::Credential;
use ludus_core::model::{Account, AccountUpdate, User};
use uuid::Uuid;

/// The result of a sign-in made by a module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    pub user_id: String,
    pub username: String,
    pub created: bool,
}

/// An outgoing HTTP request made by `nk.http_request`.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub url: String,
    /// Upper case: GET, POST, PUT, PATCH, DELETE or HEAD.
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub timeout: Duration,
}

#[derive(Debug, Clone, Default)]
pub struct HttpResponse {
    pub status: u16,
    /// Header names in lower case; repeated headers keep every value.
    pub headers: BTreeMap<String, Vec<String>>,
    pub body: Vec<u8>,
}

/// Server functions behind the `nk` API and native modules.
#[async_trait]
pub trait RuntimeServices: Send + Sync + 'static {
    /// Signs in (or registers, when `create`) by device, email or custom id.
    async fn authenticate(
        &self,
        credential: Credential,
        username: String,
        create: bool,
    ) -> Result<Authenticated, ApiError>;

    /// Signs a session token for a user; `expires_at` 0 means the configured
    /// expiry. Returns the token and its expiry (UNIX seconds).
    fn generate_token(
        &self,
        user_id: Uuid,
        username: &str,
        expires_at: i64,
        vars: BTreeMap<String, String>,
    ) -> Result<(String, i64), ApiError>;

    async fn account(&self, user_id: Uuid) -> Result<Account, ApiError>;

    async fn update_account(&self, user_id: Uuid, update: AccountUpdate) -> Result<(), ApiError>;

    /// Users by id or username; unknown ones are left out.
    async fn users(&self, ids: Vec<String>, usernames: Vec<String>) -> Result<Vec<User>, ApiError>;

    async fn http_request(&self, request: HttpRequest) -> Result<HttpResponse, ApiError>;
}
