//! What modules may ask of the server: the [`RuntimeServices`] trait behind
//! the `nk` API and native modules. [`crate::ServerServices`] implements it
//! over the account service, the realtime layer and the store; the one thing
//! only the server has, its outgoing HTTP client, is injected as an
//! [`HttpClient`]. Tests implement the trait with fakes.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use ludus_core::ApiError;
use ludus_core::accounts::Credential;
use ludus_core::chat_service::HistoryPage;
use ludus_core::model::{Account, AccountUpdate, Identity, User};
use ludus_core::multi_update::{MultiUpdate, MultiUpdateResult};
use ludus_core::notification::{Notification, NotificationUpdate};
use ludus_core::notification_service::NotificationPage;
use ludus_core::social_auth::SocialCredential;
use ludus_core::storage::{
    ObjectId, StorageAck, StorageDelete, StorageObject, StoragePage, StorageWrite,
};
use ludus_core::store::{SqlRow, SqlValue};
use ludus_core::wallet::{LedgerEntry, LedgerPage, WalletUpdate, WalletUpdateResult};
use ludus_realtime::matches::{HandlerFactory, ListRequest, MatchListing};
use ludus_realtime::{PartyInfo, Presence, Stream};
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

/// A presence's metadata set by `nk.stream_user_join|update`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StreamMeta {
    pub hidden: bool,
    pub persistence: bool,
    pub status: String,
}

/// Server functions behind the `nk` API and native modules.
#[async_trait]
pub trait RuntimeServices: Send + Sync + 'static {
    /// Leaderboards and tournaments (`nk.leaderboard_*`, `nk.tournament_*`);
    /// a feature of its own rather than more methods here. `None` where the
    /// server offers modules none (test fakes).
    fn leaderboards(
        &self,
    ) -> Option<std::sync::Arc<ludus_core::leaderboard_service::LeaderboardService>> {
        None
    }

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

    /// Up to `count` users picked at random (`nk.users_get_random`).
    async fn users_random(&self, count: usize) -> Result<Vec<User>, ApiError> {
        let _ = count;
        Err(no_accounts())
    }

    async fn http_request(&self, request: HttpRequest) -> Result<HttpResponse, ApiError>;

    // Linking (`nk.link_*`, `nk.unlink_*`): `AccountService::link` and
    // `unlink`, with their rules. The defaults serve hosts without accounts.

    /// Links a device, email (with password) or custom id to a user.
    async fn link(&self, user_id: Uuid, credential: Credential) -> Result<(), ApiError> {
        let _ = (user_id, credential);
        Err(no_accounts())
    }

    /// Imports the platform friends of `user_id`, who just signed in or
    /// linked with `credential` (the `import_friends` argument of
    /// `nk.authenticate_facebook`, `nk.link_steam`, …). A failure is
    /// logged, as in Nakama; the sign-in or link stands.
    async fn sync_friends(&self, user_id: Uuid, username: &str, credential: SocialCredential) {
        let _ = (user_id, username, credential);
    }

    /// Unlinks a device, email or custom id (empty: whichever is linked),
    /// never the user's last identity.
    async fn unlink(&self, user_id: Uuid, identity: Identity) -> Result<(), ApiError> {
        let _ = (user_id, identity);
        Err(no_accounts())
    }

    /// Unlinks the platform id `credential` proves, never the last identity.
    async fn unlink_social(
        &self,
        user_id: Uuid,
        credential: SocialCredential,
    ) -> Result<(), ApiError> {
        let _ = (user_id, credential);
        Err(no_accounts())
    }

    /// Friends and groups (`nk.friends_*`, `nk.group*`, `nk.user_groups_list`
    /// and their native equivalents): the server's one
    /// `ludus_core::social_service::SocialService`, which modules use as the
    /// server (a missing caller id acts with every permission).
    fn social(&self) -> Result<&ludus_core::social_service::SocialService, ApiError> {
        Err(no_social())
    }

    /// Purchase and subscription validation (`nk.purchase_*`,
    /// `nk.subscription_*` and their native equivalents): the server's one
    /// `ludus_core::purchase::PurchaseService`.
    fn purchases(&self) -> Result<&ludus_core::purchase::PurchaseService, ApiError> {
        Err(ApiError::new(
            ludus_core::Code::Unimplemented,
            "purchase validation is not available to modules here",
        ))
    }

    /// Deletes an account (`nk.account_delete_id`): its data goes and every
    /// session it had is revoked, as `DELETE /v2/account`.
    async fn account_delete(&self, user_id: Uuid) -> Result<(), ApiError> {
        let _ = user_id;
        Err(no_accounts())
    }

    /// Revokes a user's given tokens, or every session of the user when
    /// both are empty (`nk.session_logout`).
    async fn session_logout(
        &self,
        user_id: Uuid,
        token: String,
        refresh_token: String,
    ) -> Result<(), ApiError> {
        let _ = (user_id, token, refresh_token);
        Err(no_accounts())
    }

    /// A page of a user's stored notifications, oldest first, of 1 to 1000
    /// (`nk.notifications_list`).
    async fn notifications_list(
        &self,
        user_id: Uuid,
        limit: u32,
        cursor: Option<String>,
    ) -> Result<NotificationPage, ApiError> {
        let _ = (user_id, limit, cursor);
        Err(no_realtime())
    }

    /// Deletes these stored notifications of a user; unknown ids are
    /// ignored (`nk.notifications_delete`).
    async fn notifications_delete(&self, user_id: Uuid, ids: Vec<Uuid>) -> Result<(), ApiError> {
        let _ = (user_id, ids);
        Err(no_realtime())
    }

    /// Adds to a module's counter (`nk.metrics_counter_add`). Like the
    /// other two, it never fails the module: a refused series (past
    /// `metrics.custom_scope_limit`, a kind clash, a negative delta) is
    /// counted and logged by the metrics, as Nakama drops it.
    fn metrics_counter_add(&self, name: &str, tags: BTreeMap<String, String>, delta: i64) {
        let _ = (name, tags, delta);
    }

    /// Sets a module's gauge (`nk.metrics_gauge_set`).
    fn metrics_gauge_set(&self, name: &str, tags: BTreeMap<String, String>, value: f64) {
        let _ = (name, tags, value);
    }

    /// Records a duration in a module's timer (`nk.metrics_timer_record`).
    fn metrics_timer_record(&self, name: &str, tags: BTreeMap<String, String>, elapsed: Duration) {
        let _ = (name, tags, elapsed);
    }

    /// Stored notifications by id, of `user_id` only when given, oldest
    /// first; unknown ids are skipped (`nk.notifications_get_id`).
    async fn notifications_get_id(
        &self,
        user_id: Option<Uuid>,
        ids: Vec<Uuid>,
    ) -> Result<Vec<Notification>, ApiError> {
        let _ = (user_id, ids);
        Err(no_realtime())
    }

    /// Deletes stored notifications by id, of `user_id` only when given;
    /// unknown ids are ignored (`nk.notifications_delete_id`).
    async fn notifications_delete_id(
        &self,
        user_id: Option<Uuid>,
        ids: Vec<Uuid>,
    ) -> Result<(), ApiError> {
        let _ = (user_id, ids);
        Err(no_realtime())
    }

    /// Everything stored of a user, as Nakama's console `AccountExport` in
    /// its JSON form (`nk.account_export_id`): the account, storage
    /// objects, friends, groups, sent channel messages, leaderboard
    /// records, notifications and wallet ledger.
    async fn account_export(&self, user_id: Uuid) -> Result<String, ApiError> {
        let _ = user_id;
        Err(no_realtime())
    }

    /// Imports an account export (`nk.account_import_id`, Nakama's
    /// `ImportAccount`): into the existing account `into` (its metadata,
    /// wallet and storage are replaced), or as a new account under the
    /// export's user id; answers the account as it now is.
    async fn account_import(&self, data: String, into: Option<Uuid>) -> Result<Account, ApiError> {
        let _ = (data, into);
        Err(no_realtime())
    }

    /// Changes stored notifications, whoever holds them, in one
    /// transaction; unknown ids are ignored (`nk.notifications_update`).
    async fn notifications_update(&self, updates: Vec<NotificationUpdate>) -> Result<(), ApiError> {
        let _ = updates;
        Err(no_realtime())
    }

    /// Sends `notification` to every user (`nk.notification_send_all`):
    /// when it is not persistent, to every socket of every node at once;
    /// else a stored copy per user, made in the background after this
    /// returns, as Nakama does.
    async fn notification_send_all(&self, notification: Notification) -> Result<(), ApiError> {
        let _ = notification;
        Err(no_realtime())
    }

    /// A page of a channel's history, read as the server (every channel),
    /// of 1 to 100 messages (`nk.channel_messages_list`).
    async fn channel_messages_list(
        &self,
        channel_id: String,
        limit: u32,
        forward: bool,
        cursor: Option<String>,
    ) -> Result<HistoryPage, ApiError> {
        let _ = (channel_id, limit, forward, cursor);
        Err(no_realtime())
    }

    /// Stores the persistent notifications and pushes all of them live.
    async fn notifications_send(&self, notifications: Vec<Notification>) -> Result<(), ApiError> {
        let _ = notifications;
        Err(no_realtime())
    }

    /// Bans users (`nk.users_ban_id`): they cannot sign in, every token they
    /// hold is revoked and their sockets close on every node, each told
    /// first with Nakama's notice -8. Unknown ids are skipped.
    async fn users_ban(&self, ids: Vec<Uuid>) -> Result<(), ApiError> {
        let _ = ids;
        Err(no_accounts())
    }

    /// Lifts bans (`nk.users_unban_id`); revoked tokens stay revoked.
    async fn users_unban(&self, ids: Vec<Uuid>) -> Result<(), ApiError> {
        let _ = ids;
        Err(no_accounts())
    }

    /// Closes a session's socket; unknown sessions are ignored.
    fn session_disconnect(&self, session_id: Uuid, reason: i32) -> Result<(), ApiError> {
        let _ = (session_id, reason);
        Err(no_realtime())
    }

    /// Sends a chat message as `sender` (nil: the system) to a channel id.
    async fn channel_message_send(
        &self,
        channel_id: &str,
        content: String,
        sender: Uuid,
        username: String,
        persist: bool,
    ) -> Result<ludus_proto::realtime::ChannelMessageAck, ApiError> {
        let _ = (channel_id, content, sender, username, persist);
        Err(no_realtime())
    }

    /// Makes a session of this node follow users' status
    /// (`nk.status_follow`); a session not on this node is left alone, as in
    /// Nakama. Unknown users and the session's own user are skipped.
    async fn status_follow(&self, session_id: Uuid, users: Vec<Uuid>) -> Result<(), ApiError> {
        let _ = (session_id, users);
        Err(no_realtime())
    }

    /// Stops a session of this node following users (`nk.status_unfollow`).
    fn status_unfollow(&self, session_id: Uuid, users: Vec<Uuid>) -> Result<(), ApiError> {
        let _ = (session_id, users);
        Err(no_realtime())
    }

    /// Changes a message as the server (`nk.channel_message_update`); when
    /// `persist`, the stored message of that id and sender is changed.
    async fn channel_message_update(
        &self,
        channel_id: &str,
        message_id: &str,
        content: String,
        sender: Uuid,
        username: String,
        persist: bool,
    ) -> Result<ludus_proto::realtime::ChannelMessageAck, ApiError> {
        let _ = (channel_id, message_id, content, sender, username, persist);
        Err(no_realtime())
    }

    /// Removes a message as the server (`nk.channel_message_remove`); when
    /// `persist`, the stored message of that id and sender is deleted.
    async fn channel_message_remove(
        &self,
        channel_id: &str,
        message_id: &str,
        sender: Uuid,
        username: String,
        persist: bool,
    ) -> Result<ludus_proto::realtime::ChannelMessageAck, ApiError> {
        let _ = (channel_id, message_id, sender, username, persist);
        Err(no_realtime())
    }

    /// Tracks a session of `user` on a stream (or changes its metadata);
    /// true when newly tracked.
    fn stream_user_join(
        &self,
        user: Uuid,
        session: Uuid,
        stream: &Stream,
        meta: StreamMeta,
    ) -> Result<bool, ApiError> {
        let _ = (user, session, stream, meta);
        Err(no_realtime())
    }

    /// Takes a session off a stream; unknown presences are ignored.
    fn stream_user_leave(
        &self,
        user: Uuid,
        session: Uuid,
        stream: &Stream,
    ) -> Result<(), ApiError> {
        let _ = (user, session, stream);
        Err(no_realtime())
    }

    fn stream_user_list(
        &self,
        stream: &Stream,
        include_hidden: bool,
        include_not_hidden: bool,
    ) -> Vec<Presence> {
        let _ = (stream, include_hidden, include_not_hidden);
        Vec::new()
    }

    fn stream_user_get(&self, user: Uuid, session: Uuid, stream: &Stream) -> Option<Presence> {
        let _ = (user, session, stream);
        None
    }

    fn stream_count(&self, stream: &Stream) -> usize {
        let _ = stream;
        0
    }

    /// Takes every presence off a stream.
    fn stream_close(&self, stream: &Stream) {
        let _ = stream;
    }

    /// Sends `stream_data` to every presence on the stream, or only to the
    /// given sessions.
    fn stream_send(&self, stream: &Stream, data: String, sessions: Vec<Uuid>, reliable: bool) {
        let _ = (stream, data, sessions, reliable);
    }

    /// Sends a whole socket envelope to every presence on the stream, or
    /// only to the given sessions (`nk.stream_send_raw`).
    fn stream_send_raw(
        &self,
        stream: &Stream,
        envelope: ludus_proto::realtime::Envelope,
        sessions: Vec<Uuid>,
    ) -> Result<(), ApiError> {
        let _ = (stream, envelope, sessions);
        Err(no_realtime())
    }

    // Parties

    /// Live parties for `nk.party_list`, in creation order: only open or
    /// only closed ones when `open` says so, hidden ones with `show_hidden`;
    /// `cursor` is the one the previous page returned (empty for the first).
    /// Answers the page and the next cursor, `None` after the last page.
    fn party_list(
        &self,
        limit: usize,
        open: Option<bool>,
        show_hidden: bool,
        query: &str,
        cursor: &str,
    ) -> Result<(Vec<PartyInfo>, Option<String>), ApiError> {
        let _ = (limit, open, show_hidden, query, cursor);
        Err(no_realtime())
    }

    // Matches

    /// Creates an authoritative match run by the handler `make` builds (the
    /// runtime's for `module`, a native registration or a Lua module);
    /// answers its id after `match_init`.
    async fn match_create(
        &self,
        module: &str,
        params: serde_json::Value,
        make: HandlerFactory,
    ) -> Result<String, ApiError> {
        let _ = (module, params, make);
        Err(no_realtime())
    }

    /// One match by id; `None` when it does not exist.
    fn match_get(&self, match_id: &str) -> Option<MatchListing> {
        let _ = match_id;
        None
    }

    /// Matches as `GET /v2/match` lists them.
    fn match_list(&self, request: ListRequest) -> Result<Vec<MatchListing>, ApiError> {
        let _ = request;
        Ok(Vec::new())
    }

    /// Sends `match_signal` data to a match; answers what it returned.
    async fn match_signal(&self, match_id: &str, data: String) -> Result<String, ApiError> {
        let _ = (match_id, data);
        Err(no_realtime())
    }

    // SQL

    /// Runs one statement of the module's own SQL (`nk.sql_exec`), `$1, $2…`
    /// bound to `params`; returns the rows it changed.
    async fn sql_exec(&self, query: &str, params: Vec<SqlValue>) -> Result<u64, ApiError> {
        let _ = (query, params);
        Err(no_sql())
    }

    /// Runs one query of the module's own SQL (`nk.sql_query`) and returns
    /// its rows; more rows than the server allows is an error.
    async fn sql_query(&self, query: &str, params: Vec<SqlValue>) -> Result<Vec<SqlRow>, ApiError> {
        let _ = (query, params);
        Err(no_sql())
    }

    // Storage and wallets: what `nk.storage_*`, `nk.wallet*` and
    // `nk.multi_update` call, and what native modules call directly. Each
    // is `ludus_core::storage_service::StorageService`'s method of the same
    // name on behalf of the server: permissions are not checked, and
    // objects of the system user (`ludus_core::storage::SYSTEM_USER_ID`)
    // are the server's own.

    /// The objects among `ids` that exist.
    async fn storage_read(&self, ids: Vec<ObjectId>) -> Result<Vec<StorageObject>, ApiError> {
        let _ = ids;
        Err(no_storage())
    }

    /// Writes a batch in one transaction: all of it or none.
    async fn storage_write(&self, writes: Vec<StorageWrite>) -> Result<Vec<StorageAck>, ApiError> {
        let _ = writes;
        Err(no_storage())
    }

    /// Deletes a batch in one transaction: all of it or none.
    async fn storage_delete(&self, deletes: Vec<StorageDelete>) -> Result<(), ApiError> {
        let _ = deletes;
        Err(no_storage())
    }

    /// A page of a collection (of `owner`'s objects, when given); with a
    /// `caller`, only what that user may see, as the REST listing.
    async fn storage_list(
        &self,
        caller: Option<Uuid>,
        owner: Option<Uuid>,
        collection: &str,
        limit: usize,
        cursor: &str,
    ) -> Result<StoragePage, ApiError> {
        let _ = (caller, owner, collection, limit, cursor);
        Err(no_storage())
    }

    /// Declares a storage search index (`nk.register_storage_index`); only
    /// while modules load.
    fn storage_index_register(
        &self,
        spec: ludus_core::storage_index::IndexSpec,
    ) -> Result<(), ApiError> {
        let _ = spec;
        Err(no_storage())
    }

    /// A page of storage index `name` (`nk.storage_index_list`); with a
    /// `caller`, only what that user may read.
    async fn storage_index_list(
        &self,
        name: &str,
        query: &str,
        limit: usize,
        order: Vec<String>,
        caller: Option<Uuid>,
        cursor: &str,
    ) -> Result<StoragePage, ApiError> {
        let _ = (name, query, limit, order, caller, cursor);
        Err(no_storage())
    }

    /// Changes wallets in one transaction; users that do not exist are skipped.
    async fn wallets_update(
        &self,
        updates: Vec<WalletUpdate>,
        update_ledger: bool,
    ) -> Result<Vec<WalletUpdateResult>, ApiError> {
        let _ = (updates, update_ledger);
        Err(no_storage())
    }

    /// A page of a user's wallet ledger, newest first.
    async fn wallet_ledger_list(
        &self,
        user: Uuid,
        limit: usize,
        cursor: &str,
    ) -> Result<LedgerPage, ApiError> {
        let _ = (user, limit, cursor);
        Err(no_storage())
    }

    /// Merges metadata (a JSON object) into a ledger entry's.
    async fn wallet_ledger_update(
        &self,
        id: Uuid,
        metadata: &str,
    ) -> Result<LedgerEntry, ApiError> {
        let _ = (id, metadata);
        Err(no_storage())
    }

    /// Account changes, storage writes and deletes, and wallet updates in
    /// one transaction.
    async fn multi_update(&self, update: MultiUpdate) -> Result<MultiUpdateResult, ApiError> {
        let _ = update;
        Err(no_storage())
    }
}

fn no_social() -> ApiError {
    ApiError::new(
        ludus_core::Code::Unimplemented,
        "this server offers modules no friends or groups",
    )
}

fn no_storage() -> ApiError {
    ApiError::new(
        ludus_core::Code::Unimplemented,
        "this server offers modules no storage",
    )
}

fn no_sql() -> ApiError {
    ApiError::new(
        ludus_core::Code::Unimplemented,
        "this server offers modules no sql access",
    )
}

fn no_accounts() -> ApiError {
    ApiError::new(
        ludus_core::Code::Unimplemented,
        "this server offers modules no account linking",
    )
}

fn no_realtime() -> ApiError {
    ApiError::new(
        ludus_core::Code::Unimplemented,
        "this server offers modules no realtime layer",
    )
}

/// A future the [`HttpClient`] answers with.
pub type HttpFuture = Pin<Box<dyn Future<Output = Result<HttpResponse, ApiError>> + Send>>;

/// The server's outgoing HTTP client (`nk.http_request`): the one thing
/// modules use that only `ludus-server` has (hyper and rustls), injected into
/// [`crate::ServerServices`].
pub trait HttpClient: Send + Sync + 'static {
    /// Sends the request and reads the answer within `request.timeout`.
    fn request(&self, request: HttpRequest) -> HttpFuture;
}
