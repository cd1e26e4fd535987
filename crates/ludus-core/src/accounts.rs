//! Sign-in, sessions and the account a user owns: the rules Nakama's clients
//! expect, independent of any transport.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::Rng as _;
use uuid::Uuid;

use crate::error::{ApiError, Code};
use crate::model::{Account, AccountUpdate, Identity, NewUser, Provider, User, UserAuth};
use crate::revocation::{RevocationFeed, RevocationList, Revoked};
use crate::sign_in_throttle::{SignInThrottle, ThrottleSettings};
use crate::social_auth::{FriendSource, SocialCredential, SocialVerifier, Verified};
use crate::store::{Store, StoreError};
pub use crate::token::Caller;
use crate::token::{self, SessionClaims, TokenError, TokenKind};
use crate::verified::VerifiedTokens;
use crate::{unix_now, validate};

/// Session settings, with Nakama's key names in the config.
#[derive(Debug, Clone)]
pub struct SessionSettings {
    pub encryption_key: String,
    pub refresh_encryption_key: String,
    pub token_expiry_sec: i64,
    pub refresh_token_expiry_sec: i64,
    /// bcrypt cost for new passwords; Nakama uses 10.
    pub bcrypt_cost: u32,
    /// Most access tokens remembered as verified (0: none; see `verified.rs`).
    pub token_cache_size: usize,
    /// Failed sign-in back-off (`session.sign_in_*`).
    pub throttle: ThrottleSettings,
}

impl Default for SessionSettings {
    fn default() -> Self {
        SessionSettings {
            encryption_key: "defaultencryptionkey".into(),
            refresh_encryption_key: "defaultrefreshencryptionkey".into(),
            token_expiry_sec: 60,
            refresh_token_expiry_sec: 3600,
            bcrypt_cost: 10,
            token_cache_size: 16_384,
            throttle: ThrottleSettings::default(),
        }
    }
}

/// The credential a client signs in with.
#[derive(Debug, Clone)]
pub enum Credential {
    Device {
        id: String,
    },
    Custom {
        id: String,
    },
    /// An empty email signs in by username and password instead.
    Email {
        email: String,
        password: String,
    },
    /// A platform's proof, checked by the [`SocialVerifier`].
    Social(SocialCredential),
}

#[derive(Debug, Clone)]
pub struct AuthRequest {
    pub credential: Credential,
    /// Empty: generate one when creating.
    pub username: String,
    pub create: bool,
    pub vars: BTreeMap<String, String>,
    /// The client's address, for the failed sign-in throttle (None: a
    /// module's call, counted per account only).
    pub source: Option<std::net::IpAddr>,
}

/// What a successful sign-in or refresh returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionTokens {
    pub created: bool,
    pub token: String,
    pub refresh_token: String,
}

/// Most ids and usernames one `get_users` call may ask for.
pub const MAX_USERS_LOOKUP: usize = 1000;

pub struct AccountService {
    store: Arc<dyn Store>,
    settings: SessionSettings,
    revocations: RevocationList,
    verified: VerifiedTokens,
    /// Where revocations go for the other nodes of a cluster.
    feed: Option<Arc<dyn RevocationFeed>>,
    /// Checks platform sign-ins (Apple, Steam, …).
    social: Arc<SocialVerifier>,
    throttle: SignInThrottle,
}

impl AccountService {
    /// Loads the revocations still in force, so logouts survive restarts.
    pub async fn new(store: Arc<dyn Store>, settings: SessionSettings) -> Result<Self, StoreError> {
        let stored = store.load_revocations(unix_now()).await?;
        let settings_throttle = settings.throttle;
        Ok(AccountService {
            store,
            verified: VerifiedTokens::new(settings.token_cache_size),
            settings,
            revocations: RevocationList::from_stored(stored),
            feed: None,
            social: Arc::new(SocialVerifier::new(Default::default(), None)),
            throttle: SignInThrottle::new(settings_throttle),
        })
    }

    /// Platform sign-ins are checked by `social` (its settings and its
    /// outgoing HTTP); without it they answer that nothing is configured.
    pub fn with_social(mut self, social: Arc<SocialVerifier>) -> Self {
        self.social = social;
        self
    }

    pub fn social(&self) -> &SocialVerifier {
        &self.social
    }

    /// This node's revocations also go to `feed` (a cluster's other nodes).
    pub fn with_feed(mut self, feed: Arc<dyn RevocationFeed>) -> Self {
        self.feed = Some(feed);
        self
    }

    fn publish(&self, revoked: Revoked) {
        if let Some(feed) = &self.feed {
            feed.revoked(&revoked);
        }
    }

    /// A revocation another node made: applied here at once.
    pub fn apply_revoked(&self, revoked: Revoked) {
        self.revocations.apply(revoked, unix_now());
    }

    /// Reads the stored revocations again (after this node may have missed
    /// some another node made: the bus was down).
    pub async fn reload_revocations(&self) -> Result<(), StoreError> {
        let now = unix_now();
        let stored = self.store.load_revocations(now).await?;
        self.revocations.merge(stored, now);
        Ok(())
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    pub fn settings(&self) -> &SessionSettings {
        &self.settings
    }

    /// Signs in, under the failed sign-in throttle: a password or platform
    /// proof that fails counts against the account named (email or
    /// username) and the source address; a refused key answers
    /// `ResourceExhausted` before any check runs.
    pub async fn authenticate(&self, req: AuthRequest) -> Result<SessionTokens, ApiError> {
        let account = match &req.credential {
            Credential::Email { email, .. } if email.is_empty() => {
                Some(format!("username:{}", req.username))
            }
            Credential::Email { email, .. } => Some(format!("email:{}", email.to_lowercase())),
            Credential::Social(_) => None,
            // Device and custom ids are not secrets a guess can find.
            Credential::Device { .. } | Credential::Custom { .. } => {
                return self.authenticate_unthrottled(req).await;
            }
        };
        let mut keys: Vec<String> = account.iter().cloned().collect();
        if let Some(ip) = req.source {
            keys.push(format!("addr:{ip}"));
        }
        self.throttle.check(&keys)?;
        let result = self.authenticate_unthrottled(req).await;
        match &result {
            Err(e) if e.code == Code::Unauthenticated => self.throttle.failed(&keys),
            Ok(_) => {
                if let Some(account) = &account {
                    self.throttle.succeeded(account);
                }
            }
            Err(_) => {}
        }
        result
    }

    async fn authenticate_unthrottled(&self, req: AuthRequest) -> Result<SessionTokens, ApiError> {
        let generated = req.username.is_empty();
        if !generated {
            validate::username(&req.username)?;
        }
        let (user, created) = match &req.credential {
            Credential::Device { id } => {
                validate::device_id(id)?;
                self.find_or_create(Identity::Device(id.clone()), None, &req)
                    .await?
            }
            Credential::Custom { id } => {
                validate::custom_id(id)?;
                self.find_or_create(Identity::Custom(id.clone()), None, &req)
                    .await?
            }
            Credential::Social(credential) => {
                let verified = self.social.verify(credential).await?;
                self.remap_original_id(credential.provider(), &verified)
                    .await?;
                let identity = Identity::Social(credential.provider(), verified.id.clone());
                let (user, created) = self.find_or_create(identity, None, &req).await?;
                // Google's profile fills empty fields at every sign-in,
                // Facebook's at sign-up, as in Nakama.
                if created || credential.provider() == Provider::Google {
                    self.adopt_profile(user.id, &verified).await;
                }
                if created && let Some(email) = verified.email {
                    self.adopt_email(user.id, email).await;
                }
                (user, created)
            }
            Credential::Email { email, password } if email.is_empty() => {
                validate::password(password)?;
                if generated {
                    return Err(ApiError::invalid(
                        "username is required when email address is not supplied",
                    ));
                }
                (
                    self.sign_in_with_password(Identity::Username(req.username.clone()), password)
                        .await?,
                    false,
                )
            }
            Credential::Email { email, password } => {
                let email = validate::email(email)?;
                validate::password(password)?;
                let identity = Identity::Email(email);
                match self.store.find_user_by_identity(&identity).await? {
                    Some(found) => (self.check_password(found, password).await?, false),
                    None => {
                        let hash = self.hash_password(password).await?;
                        self.find_or_create(identity, Some(hash), &req).await?
                    }
                }
            }
        };
        Ok(self.issue(user.id, &user.username, req.vars, created))
    }

    /// Copies the platform's display name and avatar into the account
    /// where its own are empty (and within their limits), as Nakama does.
    /// A courtesy: a failure is logged and the sign-in stands.
    async fn adopt_profile(&self, user: Uuid, verified: &Verified) {
        if verified.display_name.is_none() && verified.avatar_url.is_none() {
            return;
        }
        let Ok(Some(account)) = self.store.get_account(user).await else {
            return;
        };
        let fill = |mine: &str, theirs: &Option<String>, max: usize| {
            theirs
                .as_ref()
                .filter(|t| t.len() <= max && mine.is_empty())
                .cloned()
        };
        let update = AccountUpdate {
            display_name: fill(&account.user.display_name, &verified.display_name, 255),
            avatar_url: fill(&account.user.avatar_url, &verified.avatar_url, 512),
            ..AccountUpdate::default()
        };
        if update.is_empty() {
            return;
        }
        if let Err(e) = self.store.update_account(user, update, unix_now()).await {
            tracing::info!(%user, error = %e, "platform profile not copied to the account");
        }
    }

    /// Play Games' per-game ids: an account that holds the player's
    /// original id moves to the new one before anything looks it up, as
    /// Nakama's `RemapGoogleId` does. Nothing moves when the new id is
    /// already someone's.
    async fn remap_original_id(
        &self,
        provider: Provider,
        verified: &Verified,
    ) -> Result<(), ApiError> {
        let Some(original) = &verified.original_id else {
            return Ok(());
        };
        let old = Identity::Social(provider, original.clone());
        let Some(holder) = self.store.find_user_by_identity(&old).await? else {
            return Ok(());
        };
        let new = Identity::Social(provider, verified.id.clone());
        match self
            .store
            .link_identity(holder.id, new, None, unix_now())
            .await
        {
            Ok(()) => {
                tracing::info!(user = %holder.id, "google id moved to its play games id");
                Ok(())
            }
            Err(StoreError::IdentityTaken) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Fills an account's empty email with the one its newly linked
    /// platform vouched for, keeping its password. Nakama overwrites the
    /// account's email, which silently changes how an email player signs
    /// in; Ludus only fills it (docs/differences.md). A courtesy: when the
    /// email is malformed or another account has it, the link stands.
    async fn adopt_email_on_link(&self, user: Uuid, email: String) {
        let Ok(email) = validate::email(&email) else {
            return;
        };
        let Ok(Some(account)) = self.store.get_account(user).await else {
            return;
        };
        if account.email.as_deref().is_some_and(|e| !e.is_empty()) {
            return;
        }
        let Ok(Some(auth)) = self.store.find_user_auth(user).await else {
            return;
        };
        if let Err(e) = self
            .store
            .link_identity(user, Identity::Email(email), auth.password_hash, unix_now())
            .await
        {
            tracing::info!(%user, error = %e, "platform email not stored on the linked account");
        }
    }

    /// Gives a new account the email its platform vouched for (Apple), as
    /// Nakama's sign-up does. The email is a courtesy: when it is malformed
    /// or another account has it, the account goes without, and sign-up
    /// still succeeds.
    async fn adopt_email(&self, user: Uuid, email: String) {
        let Ok(email) = validate::email(&email) else {
            return;
        };
        if let Err(e) = self
            .store
            .link_identity(user, Identity::Email(email), None, unix_now())
            .await
        {
            tracing::info!(%user, error = %e, "platform email not stored on the new account");
        }
    }

    /// Finds the identity's user, or registers one when `create` allows it.
    async fn find_or_create(
        &self,
        identity: Identity,
        password_hash: Option<String>,
        req: &AuthRequest,
    ) -> Result<(UserAuth, bool), ApiError> {
        if let Some(found) = self.store.find_user_by_identity(&identity).await? {
            return Ok((check_enabled(found)?, false));
        }
        if !req.create {
            return Err(ApiError::not_found("user account not found"));
        }
        let generated = req.username.is_empty();
        // A generated name can clash by chance; a chosen one clashes for real.
        let attempts = if generated { 4 } else { 1 };
        for _ in 0..attempts {
            let username = if generated {
                generate_username()
            } else {
                req.username.clone()
            };
            let user = NewUser {
                id: crate::new_row_id(),
                username: username.clone(),
                identity: identity.clone(),
                password_hash: password_hash.clone(),
                create_time: unix_now(),
            };
            let id = user.id;
            match self.store.create_user(user).await {
                Ok(()) => {
                    let auth = UserAuth {
                        id,
                        username,
                        password_hash: None,
                        disable_time: None,
                    };
                    return Ok((auth, true));
                }
                Err(StoreError::UsernameTaken) if generated => continue,
                // Another request registered the same identity first: sign in to it.
                Err(StoreError::IdentityTaken) => {
                    return match self.store.find_user_by_identity(&identity).await? {
                        Some(found) => Ok((check_enabled(found)?, false)),
                        None => Err(ApiError::new(
                            Code::Aborted,
                            "account was removed while signing in, try again",
                        )),
                    };
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(StoreError::UsernameTaken.into())
    }

    async fn sign_in_with_password(
        &self,
        identity: Identity,
        password: &str,
    ) -> Result<UserAuth, ApiError> {
        match self.store.find_user_by_identity(&identity).await? {
            Some(found) => self.check_password(found, password).await,
            None => {
                // Spend the same time as a real comparison so probing names learns nothing.
                let _ = self
                    .compare_password(password, DUMMY_HASH.to_string())
                    .await;
                Err(ApiError::unauthenticated("invalid credentials"))
            }
        }
    }

    async fn check_password(&self, user: UserAuth, password: &str) -> Result<UserAuth, ApiError> {
        let Some(hash) = user.password_hash.clone() else {
            return Err(ApiError::unauthenticated("invalid credentials"));
        };
        if !self.compare_password(password, hash).await? {
            return Err(ApiError::unauthenticated("invalid credentials"));
        }
        check_enabled(user)
    }

    async fn hash_password(&self, password: &str) -> Result<String, ApiError> {
        let password = password.to_owned();
        let cost = self.settings.bcrypt_cost;
        tokio::task::spawn_blocking(move || bcrypt::hash(password, cost))
            .await
            .map_err(|_| ApiError::internal("password hashing was interrupted"))?
            .map_err(|_| ApiError::internal("password hashing failed"))
    }

    async fn compare_password(&self, password: &str, hash: String) -> Result<bool, ApiError> {
        let password = password.to_owned();
        tokio::task::spawn_blocking(move || bcrypt::verify(password, &hash).unwrap_or(false))
            .await
            .map_err(|_| ApiError::internal("password check was interrupted"))
    }

    /// Signs a new access and refresh token pair sharing one token id.
    fn issue(
        &self,
        user: Uuid,
        username: &str,
        vars: BTreeMap<String, String>,
        created: bool,
    ) -> SessionTokens {
        let token_id = Uuid::new_v4().to_string();
        let issued_at = self.revocations.issue_time(user, unix_now());
        self.sign_pair(token_id, issued_at, user, username, vars, created)
    }

    fn sign_pair(
        &self,
        token_id: String,
        issued_at: i64,
        user: Uuid,
        username: &str,
        vars: BTreeMap<String, String>,
        created: bool,
    ) -> SessionTokens {
        let now = unix_now();
        let mut claims = SessionClaims {
            token_id,
            user_id: user.to_string(),
            username: username.to_owned(),
            vars,
            expires_at: now + self.settings.token_expiry_sec,
            issued_at,
        };
        let token = token::sign(self.settings.encryption_key.as_bytes(), &claims);
        claims.expires_at = now + self.settings.refresh_token_expiry_sec;
        let refresh_token = token::sign(self.settings.refresh_encryption_key.as_bytes(), &claims);
        SessionTokens {
            created,
            token,
            refresh_token,
        }
    }

    /// A session token for a user, made by a module
    /// (`nk.authenticate_token_generate`): issued under the same revocation
    /// rule as a sign-in's (after the user's last logout-all cutoff, so it is
    /// neither born revoked nor able to outlive a later logout-all).
    /// `expires_at` 0 means the configured expiry. Answers the token and its
    /// expiry (UNIX seconds).
    pub fn generate_token(
        &self,
        user: Uuid,
        username: &str,
        expires_at: i64,
        vars: BTreeMap<String, String>,
    ) -> (String, i64) {
        let now = unix_now();
        let expires_at = if expires_at > 0 {
            expires_at
        } else {
            now + self.settings.token_expiry_sec
        };
        let claims = SessionClaims {
            token_id: Uuid::new_v4().to_string(),
            user_id: user.to_string(),
            username: username.to_owned(),
            vars,
            expires_at,
            issued_at: self.revocations.issue_time(user, now),
        };
        (
            token::sign(self.settings.encryption_key.as_bytes(), &claims),
            expires_at,
        )
    }

    /// Checks an access token: algorithm, signature, expiry and revocation.
    pub fn verify_access(&self, token: &str) -> Result<Caller, ApiError> {
        // A token verified before skips the signature and the claims; the
        // revocations are checked on every use all the same.
        let now = unix_now();
        let caller = match self.verified.get(token, now) {
            Some(caller) => caller,
            None => {
                let caller = self.decode(token, TokenKind::Access, now)?;
                self.verified.insert(token, &caller, now);
                caller
            }
        };
        self.unrevoked(caller, TokenKind::Access)
    }

    fn verify(&self, token: &str, kind: TokenKind) -> Result<Caller, ApiError> {
        let caller = self.decode(token, kind, unix_now())?;
        self.unrevoked(caller, kind)
    }

    /// The caller a token names, if its algorithm, signature and expiry
    /// (at `now`) hold; revocations are [`unrevoked`](Self::unrevoked)'s.
    fn decode(&self, token: &str, kind: TokenKind, now: i64) -> Result<Caller, ApiError> {
        let key = match kind {
            TokenKind::Access => self.settings.encryption_key.as_bytes(),
            TokenKind::Refresh => self.settings.refresh_encryption_key.as_bytes(),
        };
        let what = token_name(kind);
        let claims = token::verify(key, token, now).map_err(|e| match e {
            TokenError::Expired => ApiError::unauthenticated(format!(
                "{what} expired, refresh the session or sign in again"
            )),
            TokenError::UnsupportedAlgorithm => {
                ApiError::unauthenticated(format!("{what} invalid, only HS256 is accepted"))
            }
            TokenError::BadSignature | TokenError::Malformed => {
                ApiError::unauthenticated(format!("{what} invalid"))
            }
        })?;
        let user_id = Uuid::parse_str(&claims.user_id)
            .map_err(|_| ApiError::unauthenticated(format!("{what} invalid")))?;
        Ok(Caller { user_id, claims })
    }

    fn unrevoked(&self, caller: Caller, kind: TokenKind) -> Result<Caller, ApiError> {
        if self
            .revocations
            .is_revoked(&caller.claims, caller.user_id, kind)
        {
            return Err(ApiError::unauthenticated(format!(
                "{} has been revoked, sign in again",
                token_name(kind)
            )));
        }
        Ok(caller)
    }

    /// New tokens from a refresh token; keeps its token id and issue time as Nakama does.
    pub async fn refresh(
        &self,
        refresh_token: &str,
        vars: BTreeMap<String, String>,
    ) -> Result<SessionTokens, ApiError> {
        if refresh_token.is_empty() {
            return Err(ApiError::invalid("refresh token is required"));
        }
        let caller = self.verify(refresh_token, TokenKind::Refresh)?;
        let user = self
            .store
            .find_user_auth(caller.user_id)
            .await?
            .ok_or_else(|| ApiError::not_found("user account not found"))?;
        let user = check_enabled(user)?;
        let vars = if vars.is_empty() {
            caller.claims.vars
        } else {
            vars
        };
        Ok(self.sign_pair(
            caller.claims.token_id,
            caller.claims.issued_at,
            user.id,
            &user.username,
            vars,
            false,
        ))
    }

    /// Revokes the given tokens of the caller, or every session when both are empty.
    pub async fn logout(
        &self,
        caller: &Caller,
        token: &str,
        refresh_token: &str,
    ) -> Result<(), ApiError> {
        self.logout_user(caller.user_id, token, refresh_token).await
    }

    /// Revokes the given tokens of `user`, or every session of `user` when
    /// both are empty (`POST /v2/session/logout` for the caller,
    /// `nk.session_logout` for any user). A token of another user is refused.
    pub async fn logout_user(
        &self,
        user: Uuid,
        token: &str,
        refresh_token: &str,
    ) -> Result<(), ApiError> {
        let now = unix_now();
        if token.is_empty() && refresh_token.is_empty() {
            let cutoff = self.revocations.issue_time(user, now);
            self.store.revoke_user_sessions(user, cutoff).await?;
            self.revocations.revoke_user(user, cutoff);
            self.publish(Revoked::User { user, cutoff });
            return Ok(());
        }
        for (raw, kind) in [
            (token, TokenKind::Access),
            (refresh_token, TokenKind::Refresh),
        ] {
            if raw.is_empty() {
                continue;
            }
            let key = match kind {
                TokenKind::Access => self.settings.encryption_key.as_bytes(),
                TokenKind::Refresh => self.settings.refresh_encryption_key.as_bytes(),
            };
            let claims = token::verify_signature(key, raw).map_err(|_| match kind {
                TokenKind::Access => ApiError::invalid("session token invalid"),
                TokenKind::Refresh => ApiError::invalid("refresh token invalid"),
            })?;
            if claims.user_id != user.to_string() {
                return Err(ApiError::invalid("token belongs to another user"));
            }
            if claims.expires_at <= now {
                continue; // Already useless; nothing to store.
            }
            self.store
                .revoke_token(&claims.token_id, kind, claims.expires_at)
                .await?;
            self.publish(Revoked::Token {
                token_id: claims.token_id.clone(),
                kind: kind.as_str().to_owned(),
                expires_at: claims.expires_at,
            });
            self.revocations
                .revoke_token(claims.token_id, kind, claims.expires_at, now);
        }
        Ok(())
    }

    /// Bans users, as Nakama's `BanUsers`: they cannot sign in or refresh
    /// (`disable_time` is set) and every token they hold now is revoked, on
    /// every node. Closing their sockets is the realtime layer's part.
    /// Unknown ids are skipped.
    pub async fn ban_users(&self, ids: &[Uuid]) -> Result<(), ApiError> {
        if ids.is_empty() {
            return Ok(());
        }
        let now = unix_now();
        self.store.set_users_banned(ids, Some(now)).await?;
        for &user in ids {
            let cutoff = self.revocations.issue_time(user, now);
            self.revocations.revoke_user(user, cutoff);
            self.publish(Revoked::User { user, cutoff });
        }
        Ok(())
    }

    /// Lifts bans: the users may sign in again (the tokens revoked by the
    /// ban stay revoked, as in Nakama).
    pub async fn unban_users(&self, ids: &[Uuid]) -> Result<(), ApiError> {
        if ids.is_empty() {
            return Ok(());
        }
        Ok(self.store.set_users_banned(ids, None).await?)
    }

    pub async fn account(&self, user: Uuid) -> Result<Account, ApiError> {
        self.store
            .get_account(user)
            .await?
            .ok_or_else(|| ApiError::not_found("user account not found"))
    }

    pub async fn update_account(&self, user: Uuid, update: AccountUpdate) -> Result<(), ApiError> {
        update.check()?;
        if update.is_empty() {
            return Ok(());
        }
        self.store
            .update_account(user, update, unix_now())
            .await
            .map_err(Into::into)
    }

    /// Links another sign-in identity to `user`, with Nakama's rules: a
    /// device is added to the account's devices, a custom id or an email
    /// (with its password) replaces the one linked, and an identity that
    /// another account holds is refused with `AlreadyExists`.
    pub async fn link(&self, user: Uuid, credential: Credential) -> Result<(), ApiError> {
        let (identity, password_hash, taken) = match credential {
            Credential::Device { id } => {
                validate::device_id(&id)?;
                (Identity::Device(id), None, "device id is already in use")
            }
            Credential::Custom { id } => {
                validate::custom_id(&id)?;
                (Identity::Custom(id), None, "custom id is already in use")
            }
            Credential::Email { email, password } => {
                if email.is_empty() || password.is_empty() {
                    return Err(ApiError::invalid("email address and password are required"));
                }
                let email = validate::email(&email)?;
                validate::password(&password)?;
                let hash = self.hash_password(&password).await?;
                (
                    Identity::Email(email),
                    Some(hash),
                    "email is already in use",
                )
            }
            Credential::Social(credential) => {
                let verified = self.social.verify(&credential).await?;
                let provider = credential.provider();
                self.remap_original_id(provider, &verified).await?;
                let identity = Identity::Social(provider, verified.id.clone());
                match self
                    .store
                    .link_identity(user, identity, None, unix_now())
                    .await
                {
                    Err(StoreError::IdentityTaken) => {
                        return Err(ApiError::new(
                            Code::AlreadyExists,
                            format!("{} id is already in use", provider.name()),
                        ));
                    }
                    other => other?,
                }
                // Nakama's link copies Facebook's and Google's name,
                // picture and email into the account.
                if matches!(provider, Provider::Facebook | Provider::Google) {
                    self.adopt_profile(user, &verified).await;
                    if let Some(email) = verified.email {
                        self.adopt_email_on_link(user, email).await;
                    }
                }
                return Ok(());
            }
        };
        match self
            .store
            .link_identity(user, identity, password_hash, unix_now())
            .await
        {
            Err(StoreError::IdentityTaken) => Err(ApiError::new(Code::AlreadyExists, taken)),
            other => other.map_err(Into::into),
        }
    }

    /// Unlinks a sign-in identity from `user`. An empty custom id or email
    /// unlinks whichever is linked (Nakama's optional argument); a device id
    /// is required. The account's last identity is never unlinked: that,
    /// or an identity the account does not have, is `PermissionDenied` with
    /// Nakama's message.
    pub async fn unlink(&self, user: Uuid, identity: Identity) -> Result<(), ApiError> {
        let identity = match identity {
            Identity::Device(id) if id.is_empty() => {
                return Err(ApiError::invalid("a device id must be supplied"));
            }
            Identity::Email(email) => Identity::Email(email.to_lowercase()),
            Identity::Username(_) => {
                return Err(ApiError::invalid("a username cannot be unlinked"));
            }
            other => other,
        };
        if self
            .store
            .unlink_identity(user, identity, unix_now())
            .await?
        {
            Ok(())
        } else {
            Err(ApiError::new(
                Code::PermissionDenied,
                "cannot unlink the last account identifier, check the profile exists and keeps another link",
            ))
        }
    }

    /// Unlinks a platform from `user` after checking the proof, as Nakama
    /// does: the id the platform vouches for must be the one linked, and
    /// something else must stay linked.
    pub async fn unlink_social(
        &self,
        user: Uuid,
        credential: &SocialCredential,
    ) -> Result<(), ApiError> {
        let id = self.social.verify(credential).await?.id;
        self.unlink(user, Identity::Social(credential.provider(), id))
            .await
    }

    /// Where the friends of `user`, who just signed in or linked with
    /// `credential`, are read for a `sync` import: a Facebook Graph token
    /// (a Limited Login token cannot list friends, so none), or the Steam
    /// id the account holds now. None for other platforms.
    pub async fn friend_source(
        &self,
        user: Uuid,
        credential: &SocialCredential,
    ) -> Result<Option<FriendSource>, ApiError> {
        Ok(match credential {
            SocialCredential::Facebook { token } if token.split('.').count() != 3 => {
                Some(FriendSource::Facebook {
                    token: token.clone(),
                })
            }
            SocialCredential::Steam { .. } => {
                let steam_id = self.account(user).await?.user.steam_id;
                (!steam_id.is_empty()).then_some(FriendSource::SteamId(steam_id))
            }
            _ => None,
        })
    }

    /// Deletes the account and revokes every session it had.
    pub async fn delete_account(&self, user: Uuid) -> Result<(), ApiError> {
        self.store.delete_user(user).await?;
        let cutoff = self.revocations.issue_time(user, unix_now());
        self.store.revoke_user_sessions(user, cutoff).await?;
        self.revocations.revoke_user(user, cutoff);
        self.publish(Revoked::User { user, cutoff });
        Ok(())
    }

    /// Up to `count` users picked at random, as Nakama's `GetRandomUsers`:
    /// those after a random id, then, when too few follow it, more from
    /// the first id on, each user once.
    pub async fn random_users(&self, count: usize) -> Result<Vec<User>, ApiError> {
        if count == 0 {
            return Ok(Vec::new());
        }
        let mut users = self.store.users_after(Uuid::new_v4(), count).await?;
        if users.len() < count {
            for user in self.store.users_after(Uuid::nil(), count).await? {
                if users.len() == count {
                    break;
                }
                if !users.iter().any(|u| u.id == user.id) {
                    users.push(user);
                }
            }
        }
        Ok(users)
    }

    /// Up to `limit` users after `after`, in id order (the console's
    /// account listing).
    pub async fn users_page(&self, after: Uuid, limit: usize) -> Result<Vec<User>, ApiError> {
        Ok(self.store.users_after(after, limit).await?)
    }

    pub async fn users(&self, ids: &[String], usernames: &[String]) -> Result<Vec<User>, ApiError> {
        if ids.len() + usernames.len() > MAX_USERS_LOOKUP {
            return Err(ApiError::invalid(format!(
                "too many users requested, at most {MAX_USERS_LOOKUP} ids and usernames in all"
            )));
        }
        let ids = ids
            .iter()
            .map(|id| {
                Uuid::parse_str(id)
                    .map_err(|_| ApiError::invalid(format!("user id {id:?} is not a valid uuid")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if ids.is_empty() && usernames.is_empty() {
            return Ok(Vec::new());
        }
        Ok(self.store.get_users(&ids, usernames).await?)
    }
}

fn check_enabled(user: UserAuth) -> Result<UserAuth, ApiError> {
    if user.disable_time.is_some_and(|t| t > 0) {
        return Err(ApiError::new(Code::PermissionDenied, "user account banned"));
    }
    Ok(user)
}

/// A valid bcrypt hash of a random string, used to keep failed look-ups as slow as real ones.
const DUMMY_HASH: &str = "$2b$10$Wl7l8KmhH3mXo3eI5mXG6eMGXw3cQF3m9k7gT5H4m4w1Hc2bYV0aO";

/// Ten random letters, as Nakama generates.
pub fn generate_username() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut rng = rand::rng();
    (0..10)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// How errors name a token of `kind`.
fn token_name(kind: TokenKind) -> &'static str {
    match kind {
        TokenKind::Access => "auth token",
        TokenKind::Refresh => "refresh token",
    }
}
