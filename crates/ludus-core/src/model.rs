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

/// A [`User`] as a store reads it, its strings borrowed from the row: a
/// listing of a thousand users can be written out without owning them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserRef<'a> {
    pub id: Uuid,
    pub username: &'a str,
    pub display_name: &'a str,
    pub avatar_url: &'a str,
    pub lang_tag: &'a str,
    pub location: &'a str,
    pub timezone: &'a str,
    /// A JSON object, `{}` when unset.
    pub metadata: &'a str,
    pub facebook_id: &'a str,
    pub google_id: &'a str,
    pub gamecenter_id: &'a str,
    pub steam_id: &'a str,
    pub facebook_instant_game_id: &'a str,
    pub apple_id: &'a str,
    pub edge_count: i32,
    pub online: bool,
    pub create_time: i64,
    pub update_time: i64,
}

impl UserRef<'_> {
    pub fn to_user(&self) -> User {
        User {
            id: self.id,
            username: self.username.to_owned(),
            display_name: self.display_name.to_owned(),
            avatar_url: self.avatar_url.to_owned(),
            lang_tag: self.lang_tag.to_owned(),
            location: self.location.to_owned(),
            timezone: self.timezone.to_owned(),
            metadata: self.metadata.to_owned(),
            facebook_id: self.facebook_id.to_owned(),
            google_id: self.google_id.to_owned(),
            gamecenter_id: self.gamecenter_id.to_owned(),
            steam_id: self.steam_id.to_owned(),
            facebook_instant_game_id: self.facebook_instant_game_id.to_owned(),
            apple_id: self.apple_id.to_owned(),
            edge_count: self.edge_count,
            online: self.online,
            create_time: self.create_time,
            update_time: self.update_time,
        }
    }
}

impl User {
    /// This user, borrowed.
    pub fn view(&self) -> UserRef<'_> {
        UserRef {
            id: self.id,
            username: &self.username,
            display_name: &self.display_name,
            avatar_url: &self.avatar_url,
            lang_tag: &self.lang_tag,
            location: &self.location,
            timezone: &self.timezone,
            metadata: &self.metadata,
            facebook_id: &self.facebook_id,
            google_id: &self.google_id,
            gamecenter_id: &self.gamecenter_id,
            steam_id: &self.steam_id,
            facebook_instant_game_id: &self.facebook_instant_game_id,
            apple_id: &self.apple_id,
            edge_count: self.edge_count,
            online: self.online,
            create_time: self.create_time,
            update_time: self.update_time,
        }
    }
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
    /// An id a platform vouched for (Apple, Google, Steam, …).
    Social(Provider, String),
}

/// The platforms a user can sign in with, each with its own id column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    Apple,
    Facebook,
    FacebookInstantGame,
    GameCenter,
    Google,
    Steam,
}

impl Provider {
    pub const ALL: [Provider; 6] = [
        Provider::Apple,
        Provider::Facebook,
        Provider::FacebookInstantGame,
        Provider::GameCenter,
        Provider::Google,
        Provider::Steam,
    ];

    /// The `users` column that holds this provider's id (both backends).
    pub fn column(self) -> &'static str {
        match self {
            Provider::Apple => "apple_id",
            Provider::Facebook => "facebook_id",
            Provider::FacebookInstantGame => "facebook_instant_game_id",
            Provider::GameCenter => "gamecenter_id",
            Provider::Google => "google_id",
            Provider::Steam => "steam_id",
        }
    }

    /// How messages name the provider, after Nakama's ("apple", "game center", …).
    pub fn name(self) -> &'static str {
        match self {
            Provider::Apple => "apple",
            Provider::Facebook => "facebook",
            Provider::FacebookInstantGame => "facebook instant game",
            Provider::GameCenter => "gamecenter",
            Provider::Google => "google",
            Provider::Steam => "steam",
        }
    }
}

/// The identities linked to one user, as a store reads them inside the
/// transaction that unlinks one, so both backends apply one rule.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LinkedIdentities {
    /// Lower-cased.
    pub email: Option<String>,
    pub custom_id: Option<String>,
    pub devices: Vec<String>,
    /// The social providers linked, with their ids.
    pub social: Vec<(Provider, String)>,
}

impl LinkedIdentities {
    /// Whether `identity` may be unlinked, with Nakama's rule: it must be
    /// this user's (an empty custom id or email stands for whichever is
    /// linked, even none) and something else must stay linked, so the
    /// account can still sign in. Usernames are never unlinked.
    pub fn may_unlink(&self, identity: &Identity) -> bool {
        let others = |email: bool, custom: bool, devices: usize| {
            !self.social.is_empty()
                || (email && self.email.is_some())
                || (custom && self.custom_id.is_some())
                || self.devices.len() > devices
        };
        match identity {
            Identity::Device(id) => self.devices.contains(id) && others(true, true, 1),
            Identity::Custom(id) => {
                (id.is_empty() || self.custom_id.as_deref() == Some(id.as_str()))
                    && others(true, false, 0)
            }
            Identity::Email(email) => {
                (email.is_empty()
                    || self
                        .email
                        .as_deref()
                        .is_some_and(|e| e.eq_ignore_ascii_case(email)))
                    && others(false, true, 0)
            }
            Identity::Username(_) => false,
            Identity::Social(provider, id) => {
                self.social.iter().any(|(p, i)| p == provider && i == id)
                    && (self.social.len() > 1
                        || self.email.is_some()
                        || self.custom_id.is_some()
                        || !self.devices.is_empty())
            }
        }
    }
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

/// An account to import (`nk.account_import_id`, from an export).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountImport {
    /// The existing account whose metadata and wallet are replaced, or
    /// `None` to create `account` under its own id.
    pub into: Option<Uuid>,
    pub account: Account,
    /// What the account's storage becomes, owned by the account imported.
    pub objects: Vec<crate::storage::StorageObject>,
}

impl AccountImport {
    /// The account the import writes.
    pub fn user_id(&self) -> Uuid {
        self.into.unwrap_or(self.account.user.id)
    }
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

    /// Nakama's limits on each field, and the stored-JSON rule on the
    /// metadata: what every door that changes an account checks.
    pub fn check(&self) -> Result<(), crate::error::ApiError> {
        use crate::validate;
        if let Some(name) = &self.username {
            validate::username(name)?;
        }
        let fields = [
            ("display_name", &self.display_name, 255),
            ("avatar_url", &self.avatar_url, 512),
            ("lang_tag", &self.lang_tag, 18),
            ("location", &self.location, 255),
            ("timezone", &self.timezone, 255),
        ];
        for (name, value, max) in fields {
            if let Some(v) = value {
                validate::text_field(name, v, max)?;
            }
        }
        if let Some(meta) = &self.metadata {
            crate::stored_json::check_object(meta, "metadata")?;
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn linked(email: Option<&str>, custom: Option<&str>, devices: &[&str]) -> LinkedIdentities {
        LinkedIdentities {
            email: email.map(Into::into),
            custom_id: custom.map(Into::into),
            devices: devices.iter().map(|d| d.to_string()).collect(),
            social: Vec::new(),
        }
    }

    #[test]
    fn the_last_identity_is_never_unlinked() {
        let device = Identity::Device("dev-1".into());
        assert!(!linked(None, None, &["dev-1"]).may_unlink(&device));
        assert!(linked(None, None, &["dev-1", "dev-2"]).may_unlink(&device));
        assert!(linked(None, Some("c"), &["dev-1"]).may_unlink(&device));
        assert!(!linked(None, Some("c"), &[]).may_unlink(&Identity::Custom("c".into())));
        assert!(!linked(Some("a@b.cd"), None, &[]).may_unlink(&Identity::Email(String::new())));
        let mut social = linked(Some("a@b.cd"), None, &[]);
        social.social = vec![(Provider::Steam, "76561".into())];
        assert!(social.may_unlink(&Identity::Email("A@B.cd".into())));
        let steam = Identity::Social(Provider::Steam, "76561".into());
        assert!(social.may_unlink(&steam));
        social.email = None;
        assert!(!social.may_unlink(&steam), "the last way in stays");
        social.social.push((Provider::Apple, "a.1".into()));
        assert!(social.may_unlink(&steam));
        assert!(!social.may_unlink(&Identity::Social(Provider::Steam, "other".into())));
        assert!(!social.may_unlink(&Identity::Social(Provider::Google, "76561".into())));
    }

    #[test]
    fn only_the_users_own_identity_is_unlinked() {
        let l = linked(Some("a@b.cd"), Some("mine"), &["dev-1"]);
        assert!(!l.may_unlink(&Identity::Device("dev-2".into())));
        assert!(!l.may_unlink(&Identity::Custom("theirs".into())));
        assert!(!l.may_unlink(&Identity::Email("x@y.zz".into())));
        assert!(l.may_unlink(&Identity::Custom(String::new())));
        assert!(!l.may_unlink(&Identity::Username("u".into())));
        // Nothing linked of that kind, but the empty form is Nakama's "any".
        assert!(linked(None, None, &["dev-1"]).may_unlink(&Identity::Custom(String::new())));
    }
}
