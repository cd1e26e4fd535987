//! Plain domain records: users, accounts, identities and the changes a client
//! may ask for. Times are UNIX seconds; ids are UUIDs.

use uuid::Uuid;

/// The public face of a user, as other players see it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct User {
    pub id: Uuid,
    pub username: String,
    pub display_name: String,
    pub avatar_url: String,
    pub lang_tag: String,
    pub location: String,
    pub timezone: String,
    /// A JSON object, `{}` when unset.
    pub metadata: String,
    pub facebook_id: String,
    pub google_id: String,
    pub gamecenter_id: String,
    pub steam_id: String,
    pub facebook_instant_game_id: String,
    pub apple_id: String,
    pub edge_count: i32,
    pub online: bool,
    pub create_time: i64,
    pub update_time: i64,
}

/// A user's own view of their account.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Account {
    pub user: User,
    /// A JSON object, `{}` when empty.
    pub wallet: String,
    pub email: Option<String>,
    /// Device ids linked to the account, sorted.
    pub devices: Vec<String>,
    pub custom_id: Option<String>,
    pub verify_time: Option<i64>,
    pub disable_time: Option<i64>,
}

/// How a client proves who it is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Identity {
    Device(String),
    Custom(String),
    /// Lower-cased email address.
    Email(String),
    Username(String),
}

/// What sign-in needs to know about an existing user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserAuth {
    pub id: Uuid,
    pub username: String,
    /// bcrypt hash, when the account has a password.
    pub password_hash: Option<String>,
    pub disable_time: Option<i64>,
}

/// A user to register, with the identity that created it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewUser {
    pub id: Uuid,
    pub username: String,
    pub identity: Identity,
    pub password_hash: Option<String>,
    pub create_time: i64,
}

/// Fields a user may change on their own account; `None` leaves a field alone.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AccountUpdate {
    pub username: Option<String>,
    pub display_name: Option<String>,
    pub avatar_url: Option<String>,
    pub lang_tag: Option<String>,
    pub location: Option<String>,
    pub timezone: Option<String>,
    pub metadata: Option<String>,
}

impl AccountUpdate {
    pub fn is_empty(&self) -> bool {
        self == &AccountUpdate::default()
    }
}

/// Revocations that are still in force, loaded at start-up.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Revocations {
    /// `(token id, kind, expiry)` of single revoked tokens.
    pub tokens: Vec<(String, crate::token::TokenKind, i64)>,
    /// `(user, cutoff)`: every token of the user issued at or before the cutoff is revoked.
    pub users: Vec<(Uuid, i64)>,
}
