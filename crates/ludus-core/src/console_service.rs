//! Console sign-in and console users over the `Store`: the root user of the
//! configuration, users added by other console users, their session and
//! invitation tokens, and the lockout after failed sign-ins. The console's
//! HTTP layer calls this service; it knows no transport.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use subtle::ConstantTimeEq as _;
use uuid::Uuid;

use crate::console::{
    self, ConsoleClaims, ConsoleUser, ConsoleUserAuth, ConsoleUserChange, InvitationClaims,
    LoginAttempts,
};
use crate::console_acl::{Acl, Permissions};
use crate::console_mfa::{self, MfaSetupClaims};
use crate::error::{ApiError, Code};
use crate::store::{ConsoleUserKey, Store};
use crate::token;

/// What the console's configuration decides.
#[derive(Debug, Clone)]
pub struct ConsoleSettings {
    /// The root user (`console.username`, `console.password`): an admin
    /// that no console call can change or delete.
    pub username: String,
    pub password: String,
    pub signing_key: String,
    pub token_expiry_sec: i64,
    pub bcrypt_cost: u32,
    /// Failed sign-ins within `lockout_sec` that lock an account for
    /// `lockout_sec`.
    pub max_failed_sign_ins: u32,
    pub lockout_sec: i64,
    /// The key MFA secrets and recovery codes are sealed with
    /// (`mfa.storage_encryption_key`).
    pub mfa_key: [u8; 32],
    /// Whether the root user must sign in with MFA too
    /// (`mfa.admin_account_enabled`).
    pub mfa_admin: bool,
}

/// What a sign-in with the right password answers: a session, or (MFA is
/// required and not set up yet) the token that sets it up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignedIn {
    Session(String),
    MfaSetup(String),
}

/// A signed-in console user, as every console call sees it.
#[derive(Debug, Clone)]
pub struct ConsoleCaller {
    pub id: Uuid,
    pub username: String,
    pub email: String,
    pub acl: Acl,
}

/// A console user just added, with its one-time invitation code.
#[derive(Debug, Clone)]
pub struct AddedUser {
    pub user: ConsoleUser,
    pub code: String,
}

pub struct ConsoleService {
    store: Arc<dyn Store>,
    settings: ConsoleSettings,
    attempts: Mutex<LoginAttempts>,
}

fn invalid_credentials() -> ApiError {
    ApiError::unauthenticated("invalid credentials, check the username and password")
}

fn bad_session() -> ApiError {
    ApiError::unauthenticated("console session is invalid or has ended, sign in again")
}

/// A valid bcrypt hash of a random string, so a sign-in as an unknown user
/// takes as long as one with a wrong password.
const DUMMY_HASH: &str = "$2b$10$Wl7l8KmhH3mXo3eI5mXG6eMGXw3cQF3m9k7gT5H4m4w1Hc2bYV0aO";

impl ConsoleService {
    pub fn new(store: Arc<dyn Store>, settings: ConsoleSettings) -> ConsoleService {
        let attempts = LoginAttempts::new(
            settings.max_failed_sign_ins,
            settings.lockout_sec.saturating_mul(1000),
        );
        ConsoleService {
            store,
            settings,
            attempts: Mutex::new(attempts),
        }
    }

    fn key(&self) -> &[u8] {
        self.settings.signing_key.as_bytes()
    }

    fn attempts(&self) -> std::sync::MutexGuard<'_, LoginAttempts> {
        self.attempts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts a failed sign-in of an existing account and logs a lockout.
    fn failed(&self, account: &str, now_ms: i64) -> ApiError {
        if self.attempts().fail(account, now_ms) {
            tracing::warn!(
                username = account,
                "console account locked after repeated failed sign-ins"
            );
        }
        invalid_credentials()
    }

    /// Checks the root user's name and password (HTTP Basic on a console
    /// call, as Nakama accepts for scripts), counting failures as sign-ins.
    pub fn basic(
        &self,
        username: &str,
        password: &str,
        now_ms: i64,
    ) -> Result<ConsoleCaller, ApiError> {
        if username != self.settings.username {
            return Err(invalid_credentials());
        }
        if !self.attempts().allow(username, now_ms) {
            return Err(console::locked_out());
        }
        if !self.root_password(password) {
            return Err(self.failed(username, now_ms));
        }
        Ok(ConsoleCaller {
            id: Uuid::nil(),
            username: username.to_owned(),
            email: String::new(),
            acl: Acl::ADMIN,
        })
    }

    fn root_password(&self, password: &str) -> bool {
        password
            .as_bytes()
            .ct_eq(self.settings.password.as_bytes())
            .into()
    }

    /// Signs a console user in: with the right password (and, once the user
    /// set MFA up, a code from its authenticator app or a recovery code) it
    /// answers a session token; when MFA is required and not set up, the
    /// token that sets it up.
    pub async fn authenticate(
        &self,
        username: &str,
        password: &str,
        mfa: &str,
        now_ms: i64,
    ) -> Result<SignedIn, ApiError> {
        if !self.attempts().allow(username, now_ms) {
            return Err(console::locked_out());
        }
        if username == self.settings.username {
            if !self.root_password(password) {
                return Err(self.failed(username, now_ms));
            }
            self.attempts().reset(username);
            let root = self
                .store
                .console_user_get(&ConsoleUserKey::Id(Uuid::nil()))
                .await?;
            let cutoff = root.as_ref().map_or(0, |u| u.user.tokens_after_ms);
            let caller = ConsoleCaller {
                id: Uuid::nil(),
                username: username.to_owned(),
                email: String::new(),
                acl: Acl::ADMIN,
            };
            if self.settings.mfa_admin || root.as_ref().is_some_and(|r| r.mfa_secret.is_some()) {
                let root = match root {
                    Some(root) => root,
                    None => self.root_row(now_ms).await?,
                };
                if let Some(setup) = self
                    .second_factor(&caller, &root, true, mfa, now_ms)
                    .await?
                {
                    return Ok(setup);
                }
            }
            return Ok(SignedIn::Session(
                self.sign(&caller, now_ms.max(cutoff + 1)),
            ));
        }
        let found = match username.is_empty() {
            true => None,
            false => {
                self.store
                    .console_user_get(&ConsoleUserKey::Name(username.to_lowercase()))
                    .await?
            }
        };
        let Some(found) = found else {
            let _ = verify_password(password, DUMMY_HASH.to_owned()).await;
            return Err(invalid_credentials());
        };
        let account = found.user.username.clone();
        // The look-up may have been by email: check the account's own lock.
        if !self.attempts().allow(&account, now_ms) {
            return Err(console::locked_out());
        }
        let Some(hash) = found.password_hash.clone() else {
            return Err(invalid_credentials());
        };
        if found.disabled {
            return Err(ApiError::new(
                Code::PermissionDenied,
                "this console user is disabled, ask an administrator",
            ));
        }
        if !verify_password(password, hash).await? {
            return Err(self.failed(&account, now_ms));
        }
        self.attempts().reset(&account);
        if found.user.acl.is_none() {
            return Err(invalid_credentials());
        }
        let caller = ConsoleCaller {
            id: found.user.id,
            username: found.user.username.clone(),
            email: found.user.email.clone(),
            acl: found.user.acl,
        };
        let required = found.user.mfa_required;
        if let Some(setup) = self
            .second_factor(&caller, &found, required, mfa, now_ms)
            .await?
        {
            return Ok(setup);
        }
        Ok(SignedIn::Session(
            self.sign(&caller, now_ms.max(found.user.tokens_after_ms + 1)),
        ))
    }

    /// The MFA step of a sign-in whose password was right, as Nakama's:
    /// with MFA set up, the code must pass (a wrong one counts as a failed
    /// sign-in); without it, when it is `required`, the answer is the setup
    /// token instead of a session. `None` lets the sign-in through.
    async fn second_factor(
        &self,
        caller: &ConsoleCaller,
        stored: &ConsoleUserAuth,
        required: bool,
        code: &str,
        now_ms: i64,
    ) -> Result<Option<SignedIn>, ApiError> {
        let Some(sealed_secret) = &stored.mfa_secret else {
            if !required {
                return Ok(None);
            }
            let issued_at_ms = now_ms.max(stored.user.tokens_after_ms + 1);
            let secret = console_mfa::new_secret();
            let claims = MfaSetupClaims {
                user_id: caller.id.to_string(),
                user_email: caller.email.clone(),
                expires_at: now_ms / 1000 + self.settings.token_expiry_sec,
                created_at: now_ms / 1000,
                mfa_url: console_mfa::provision_url(&secret, &caller.username),
                secret,
                mfa_required: required,
                issued_at_ms,
            };
            return Ok(Some(SignedIn::MfaSetup(token::sign_claims(
                self.key(),
                &claims,
            ))));
        };
        if code.trim().is_empty() {
            return Err(ApiError::new(
                Code::PermissionDenied,
                "an MFA code is required, send the one your authenticator app shows as mfa",
            ));
        }
        let key = &self.settings.mfa_key;
        let unreadable = || {
            ApiError::internal(
                "cannot read the stored MFA secret, check mfa.storage_encryption_key",
            )
        };
        let secret = console_mfa::open(key, sealed_secret).ok_or_else(unreadable)?;
        let secret = String::from_utf8(secret).map_err(|_| unreadable())?;
        let sealed_codes = stored.mfa_recovery_codes.clone().unwrap_or_default();
        let mut codes: Vec<String> = match sealed_codes.is_empty() {
            true => Vec::new(),
            false => {
                let plain = console_mfa::open(key, &sealed_codes).ok_or_else(unreadable)?;
                String::from_utf8_lossy(&plain)
                    .split(',')
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned)
                    .collect()
            }
        };
        let before = codes.len();
        let ok =
            console_mfa::check_sign_in(&secret, &mut codes, code, now_ms / 1000).map_err(|_| {
                ApiError::invalid(
                    "the MFA code is malformed, send 6 digits or a recovery code of 8",
                )
            })?;
        if !ok {
            let _ = self.failed(&caller.username, now_ms);
            return Err(ApiError::unauthenticated("the MFA code is invalid"));
        }
        if codes.len() != before {
            // A recovery code was used: it works once, even against a
            // concurrent sign-in with the same code.
            let change = ConsoleUserChange::MfaRecoveryCodes {
                before: sealed_codes,
                after: console_mfa::seal(key, codes.join(",").as_bytes()),
            };
            let changed = self
                .store
                .console_user_change(&ConsoleUserKey::Id(caller.id), &change, now_ms)
                .await?;
            if changed.is_none() {
                return Err(ApiError::unauthenticated("the MFA code is invalid"));
            }
        }
        Ok(None)
    }

    /// The root user's row, which keeps its sign-outs and MFA secret.
    async fn root_row(&self, now_ms: i64) -> Result<ConsoleUserAuth, ApiError> {
        let user = self.store.console_user_put(&root_user(now_ms, 0)).await?;
        Ok(ConsoleUserAuth {
            user,
            password_hash: None,
            disabled: false,
            mfa_secret: None,
            mfa_recovery_codes: None,
        })
    }

    /// Sets MFA up with the token a sign-in answered and a first code from
    /// the authenticator app; answers the recovery codes, shown once.
    pub async fn mfa_setup(
        &self,
        setup_token: &str,
        code: &str,
        now_ms: i64,
    ) -> Result<Vec<String>, ApiError> {
        let refused = || {
            ApiError::unauthenticated(
                "the MFA setup token is invalid, expired or already used, sign in again for a new one",
            )
        };
        let claims: MfaSetupClaims =
            token::verify_claims(self.key(), setup_token).map_err(|_| refused())?;
        if claims.expires_at <= now_ms / 1000 || claims.secret.is_empty() {
            return Err(refused());
        }
        let id = Uuid::parse_str(&claims.user_id).map_err(|_| refused())?;
        let ok =
            console_mfa::check_totp(&claims.secret, code.trim(), now_ms / 1000).map_err(|_| {
                ApiError::invalid(
                    "the MFA code is malformed, send the 6 digits your authenticator app shows",
                )
            })?;
        if !ok {
            return Err(ApiError::invalid(
                "the MFA code is invalid, send the one your authenticator app shows now",
            ));
        }
        let key = &self.settings.mfa_key;
        let codes = console_mfa::new_recovery_codes();
        let change = ConsoleUserChange::MfaSet {
            secret: console_mfa::seal(key, claims.secret.as_bytes()),
            recovery_codes: console_mfa::seal(key, codes.join(",").as_bytes()),
            unchanged_since_ms: claims.issued_at_ms,
        };
        self.store
            .console_user_change(&ConsoleUserKey::Id(id), &change, now_ms)
            .await?
            .ok_or_else(refused)?;
        Ok(codes)
    }

    /// Sets whether a console user must sign in with MFA. The root user's
    /// is `mfa.admin_account_enabled`.
    pub async fn require_mfa(
        &self,
        username: &str,
        required: bool,
        now_ms: i64,
    ) -> Result<(), ApiError> {
        if username.eq_ignore_ascii_case(&self.settings.username) {
            return Err(ApiError::invalid(
                "the root user's MFA requirement is mfa.admin_account_enabled in the configuration",
            ));
        }
        let target = self.user(username).await?;
        self.store
            .console_user_change(
                &ConsoleUserKey::Id(target.id),
                &ConsoleUserChange::MfaRequired(required),
                now_ms,
            )
            .await?
            .map(drop)
            .ok_or_else(|| ApiError::not_found("console user not found"))
    }

    /// Removes a console user's MFA (a lost device): its sessions end, and
    /// its next sign-in sets MFA up again when it is required. The root
    /// user's too.
    pub async fn reset_mfa(&self, username: &str, now_ms: i64) -> Result<(), ApiError> {
        let id = match username.eq_ignore_ascii_case(&self.settings.username) {
            true => Uuid::nil(),
            false => self.user(username).await?.id,
        };
        let changed = self
            .store
            .console_user_change(
                &ConsoleUserKey::Id(id),
                &ConsoleUserChange::MfaReset,
                now_ms,
            )
            .await?;
        match changed {
            Some(_) => Ok(()),
            // The root user has no row until it signs out or sets MFA up.
            None if id.is_nil() => Ok(()),
            None => Err(ApiError::not_found("console user not found")),
        }
    }

    fn sign(&self, caller: &ConsoleCaller, issued_at_ms: i64) -> String {
        let claims = ConsoleClaims {
            id: caller.id.to_string(),
            username: caller.username.clone(),
            email: caller.email.clone(),
            acl: caller.acl.to_token(),
            expires_at: issued_at_ms / 1000 + self.settings.token_expiry_sec,
            cookie: String::new(),
            issued_at_ms,
        };
        token::sign_claims(self.key(), &claims)
    }

    /// Checks a console session token against the signing key, its expiry
    /// and the stored user: a deleted user, a changed ACL, a password reset
    /// or a sign-out ends every token issued before it.
    pub async fn verify(&self, session: &str, now_ms: i64) -> Result<ConsoleCaller, ApiError> {
        let claims: ConsoleClaims =
            token::verify_claims(self.key(), session).map_err(|_| bad_session())?;
        if claims.expires_at <= now_ms / 1000 {
            return Err(ApiError::unauthenticated(
                "console session has expired, sign in again",
            ));
        }
        let id = Uuid::parse_str(&claims.id).map_err(|_| bad_session())?;
        let stored = self.store.console_user_get(&ConsoleUserKey::Id(id)).await?;
        if id.is_nil() {
            // The root user: as long as the configuration names it.
            if claims.username != self.settings.username
                || stored.is_some_and(|s| claims.issued_at_ms <= s.user.tokens_after_ms)
            {
                return Err(bad_session());
            }
            return Ok(ConsoleCaller {
                id,
                username: claims.username,
                email: String::new(),
                acl: Acl::ADMIN,
            });
        }
        match stored {
            Some(s) if !s.disabled && claims.issued_at_ms > s.user.tokens_after_ms => {
                Ok(ConsoleCaller {
                    id,
                    username: s.user.username,
                    email: s.user.email,
                    acl: s.user.acl,
                })
            }
            _ => Err(bad_session()),
        }
    }

    /// Ends every console session of the token's user. A token that does
    /// not verify ends nothing and is not an error, as in Nakama.
    pub async fn sign_out(&self, session: &str, now_ms: i64) -> Result<(), ApiError> {
        let Ok(caller) = self.verify(session, now_ms).await else {
            return Ok(());
        };
        let key = ConsoleUserKey::Id(caller.id);
        let changed = self
            .store
            .console_user_change(&key, &ConsoleUserChange::SignOut, now_ms)
            .await?;
        if changed.is_none() && caller.id.is_nil() {
            // The root user's row exists only to remember its sign-outs.
            self.store
                .console_user_put(&root_user(now_ms, now_ms))
                .await?;
        }
        Ok(())
    }

    /// Checks the permissions a caller asks to grant.
    fn grantable(
        &self,
        caller: &ConsoleCaller,
        map: &BTreeMap<String, Permissions>,
    ) -> Result<Acl, ApiError> {
        let acl = Acl::from_map(map).map_err(|name| {
            ApiError::invalid(format!(
                "unknown acl resource `{name}`, use one of Nakama's console resources such as ACCOUNT or USER"
            ))
        })?;
        if acl.is_none() {
            return Err(ApiError::invalid(
                "a console user needs at least one permission in acl",
            ));
        }
        if !caller.acl.covers(acl) {
            return Err(ApiError::invalid(
                "cannot grant permissions you do not hold yourself",
            ));
        }
        Ok(acl)
    }

    fn own_user(&self, caller: &ConsoleCaller, username: &str) -> Result<(), ApiError> {
        if caller.username.eq_ignore_ascii_case(username) {
            return Err(ApiError::new(
                Code::FailedPrecondition,
                "cannot change your own console user, ask another administrator",
            ));
        }
        Ok(())
    }

    /// Adds a console user (or, for an existing username, sets its ACL) and
    /// answers it with its invitation code, which sets its password.
    pub async fn add_user(
        &self,
        caller: &ConsoleCaller,
        username: &str,
        email: &str,
        acl: &BTreeMap<String, Permissions>,
        mfa_required: bool,
        now_ms: i64,
    ) -> Result<AddedUser, ApiError> {
        self.own_user(caller, username)?;
        let username = console::username(username)?;
        if username == "admin" || username == self.settings.username.to_lowercase() {
            return Err(ApiError::invalid(
                "username cannot be the console's configured username, choose another",
            ));
        }
        let email = console::email(email)?;
        let acl = self.grantable(caller, acl)?;
        let user = ConsoleUser {
            id: crate::new_row_id(),
            username,
            email,
            acl,
            mfa_required,
            mfa_enabled: false,
            create_time: now_ms / 1000,
            update_time: now_ms / 1000,
            tokens_after_ms: now_ms,
        };
        let user = self.store.console_user_put(&user).await?;
        let code = self.invitation(&user, now_ms);
        Ok(AddedUser { user, code })
    }

    fn invitation(&self, user: &ConsoleUser, now_ms: i64) -> String {
        let claims = InvitationClaims {
            id: user.id.to_string(),
            username: user.username.clone(),
            email: user.email.clone(),
            expires_at: now_ms / 1000 + self.settings.token_expiry_sec,
            issued_at: now_ms / 1000,
            issued_at_ms: now_ms,
        };
        token::sign_claims(self.key(), &claims)
    }

    pub async fn users(&self) -> Result<Vec<ConsoleUser>, ApiError> {
        Ok(self.store.console_users().await?)
    }

    pub async fn user(&self, username: &str) -> Result<ConsoleUser, ApiError> {
        let key = ConsoleUserKey::Name(username.to_lowercase());
        match self.store.console_user_get(&key).await? {
            Some(found) if !found.user.id.is_nil() && found.user.username == key_name(&key) => {
                Ok(found.user)
            }
            _ => Err(ApiError::not_found("console user not found")),
        }
    }

    /// Sets another console user's permissions; its sessions end.
    pub async fn update_user(
        &self,
        caller: &ConsoleCaller,
        username: &str,
        acl: &BTreeMap<String, Permissions>,
        now_ms: i64,
    ) -> Result<ConsoleUser, ApiError> {
        self.own_user(caller, username)?;
        let acl = self.grantable(caller, acl)?;
        let target = self.user(username).await?;
        self.store
            .console_user_change(
                &ConsoleUserKey::Id(target.id),
                &ConsoleUserChange::Acl(acl),
                now_ms,
            )
            .await?
            .ok_or_else(|| ApiError::not_found("console user not found"))
    }

    /// Deletes another console user.
    pub async fn delete_user(
        &self,
        caller: &ConsoleCaller,
        username: &str,
    ) -> Result<(), ApiError> {
        self.own_user(caller, username)?;
        if username.is_empty() {
            return Err(ApiError::invalid("username is required"));
        }
        match self
            .store
            .console_user_delete(&username.to_lowercase())
            .await?
        {
            true => Ok(()),
            // Nakama answers InvalidArgument here.
            false => Err(ApiError::invalid("console user not found")),
        }
    }

    /// Gives a console user a random password and answers a one-time code
    /// that sets a new one; the user's sessions end.
    pub async fn reset_password(&self, username: &str, now_ms: i64) -> Result<String, ApiError> {
        let target = self.user(username).await?;
        let random: String = {
            use rand::Rng as _;
            let mut rng = rand::rng();
            (0..32)
                .map(|_| rng.sample(rand::distr::Alphanumeric) as char)
                .collect()
        };
        let hash = hash_password(&random, self.settings.bcrypt_cost).await?;
        let change = ConsoleUserChange::Password {
            hash,
            unchanged_since_ms: None,
        };
        let user = self
            .store
            .console_user_change(&ConsoleUserKey::Id(target.id), &change, now_ms)
            .await?
            .ok_or_else(|| ApiError::not_found("console user not found"))?;
        Ok(self.invitation(&user, now_ms))
    }

    /// Sets a password with an invitation or reset code; each code works once.
    pub async fn change_password(
        &self,
        code: &str,
        password: &str,
        now_ms: i64,
    ) -> Result<(), ApiError> {
        console::password(password)?;
        let refused = || {
            ApiError::unauthenticated(
                "the code is invalid, expired or already used, ask an administrator for a new one",
            )
        };
        let claims: InvitationClaims =
            token::verify_claims(self.key(), code).map_err(|_| refused())?;
        if claims.expires_at <= now_ms / 1000 {
            return Err(refused());
        }
        let id = Uuid::parse_str(&claims.id).map_err(|_| refused())?;
        let hash = hash_password(password, self.settings.bcrypt_cost).await?;
        let change = ConsoleUserChange::Password {
            hash,
            unchanged_since_ms: Some(claims.issued_at_ms),
        };
        self.store
            .console_user_change(&ConsoleUserKey::Id(id), &change, now_ms)
            .await?
            .map(drop)
            .ok_or_else(refused)
    }
}

fn key_name(key: &ConsoleUserKey) -> &str {
    match key {
        ConsoleUserKey::Name(n) => n,
        ConsoleUserKey::Id(_) => "",
    }
}

async fn hash_password(password: &str, cost: u32) -> Result<String, ApiError> {
    let password = password.to_owned();
    tokio::task::spawn_blocking(move || bcrypt::hash(password, cost))
        .await
        .map_err(|_| ApiError::internal("password hashing was interrupted"))?
        .map_err(|_| ApiError::internal("password hashing failed"))
}

async fn verify_password(password: &str, hash: String) -> Result<bool, ApiError> {
    let password = password.to_owned();
    tokio::task::spawn_blocking(move || bcrypt::verify(password, &hash).unwrap_or(false))
        .await
        .map_err(|_| ApiError::internal("password check was interrupted"))
}

/// The root user's row (from the configuration, not the store): it exists
/// only to keep the root's sign-outs (`tokens_after_ms`) and MFA secret.
fn root_user(now_ms: i64, tokens_after_ms: i64) -> ConsoleUser {
    ConsoleUser {
        id: Uuid::nil(),
        username: String::new(),
        email: String::new(),
        acl: Acl::ADMIN,
        mfa_required: false,
        mfa_enabled: false,
        create_time: now_ms / 1000,
        update_time: now_ms / 1000,
        tokens_after_ms,
    }
}
