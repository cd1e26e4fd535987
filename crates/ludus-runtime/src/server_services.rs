//! [`ServerServices`]: the server's [`RuntimeServices`], what `nk.*` and
//! native modules reach in a running server. Sign-in, accounts, users and
//! tokens go through `AccountService`; notifications, chat, sessions, streams,
//! parties and matches through the realtime layer; storage objects, wallets
//! and the ledger through `StorageService`, as the server; `nk.sql_*` to the store,
//! bounded by `runtime.sql_max_rows`. Outgoing HTTP is the injected
//! [`HttpClient`], the one part only `ludus-server` has.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ludus_core::accounts::{AccountService, AuthRequest, Credential};
use ludus_core::chat_service::{self, HistoryPage};
use ludus_core::leaderboard_service::LeaderboardService;
use ludus_core::model::{Account, AccountUpdate, Identity, User};
use ludus_core::multi_update::{MultiUpdate, MultiUpdateResult};
use ludus_core::notification::{Notification, NotificationUpdate};
use ludus_core::notification_service::{self, NotificationPage};
use ludus_core::social_service::SocialService;
use ludus_core::storage::{
    Access, ObjectId, StorageAck, StorageDelete, StorageObject, StoragePage, StorageWrite,
};
use ludus_core::storage_service::StorageService;
use ludus_core::store::{SqlRow, SqlValue};
use ludus_core::wallet::{LedgerEntry, LedgerPage, WalletUpdate, WalletUpdateResult};
use ludus_core::{ApiError, Code};
use ludus_realtime::matches::{HandlerFactory, ListRequest, MatchListing};
use ludus_realtime::{CloseReason, PartyInfo, Presence, Realtime, RtCode, RtError, Stream};
use uuid::Uuid;

use crate::services::{
    Authenticated, HttpClient, HttpRequest, HttpResponse, RuntimeServices, StreamMeta,
};

/// Most items of each kind an account export holds (storage objects,
/// friends, messages, ...): an export is one answer, so it is bounded.
const EXPORT_LIMIT: usize = 10_000;

/// How many users `nk.notification_send_all` stores copies for per
/// transaction (Nakama pages by 10,000).
const SEND_ALL_PAGE: usize = 1_000;

/// The services of a running server.
pub struct ServerServices {
    accounts: Arc<AccountService>,
    /// Storage objects, wallets and the ledger, on behalf of the server.
    storage: Arc<StorageService>,
    /// Friends and groups, as the server.
    social: Arc<SocialService>,
    leaderboards: Arc<LeaderboardService>,
    realtime: Arc<Realtime>,
    purchases: Arc<ludus_core::purchase::PurchaseService>,
    http: Arc<dyn HttpClient>,
    sql_max_rows: usize,
    /// Where `nk.metrics_*` record: the node's metrics handle.
    metrics: Arc<ludus_core::metrics::Metrics>,
}

impl std::fmt::Debug for ServerServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerServices")
            .field("sql_max_rows", &self.sql_max_rows)
            .finish_non_exhaustive()
    }
}

impl ServerServices {
    /// `sql_max_rows` bounds `nk.sql_query` (`runtime.sql_max_rows`).
    /// Every service is built before the runtime, in dependency order, and
    /// handed over here whole.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        accounts: Arc<AccountService>,
        storage: Arc<StorageService>,
        social: Arc<SocialService>,
        leaderboards: Arc<LeaderboardService>,
        realtime: Arc<Realtime>,
        purchases: Arc<ludus_core::purchase::PurchaseService>,
        http: Arc<dyn HttpClient>,
        sql_max_rows: usize,
    ) -> ServerServices {
        ServerServices {
            accounts,
            storage,
            social,
            leaderboards,
            realtime,
            purchases,
            http,
            sql_max_rows,
            metrics: Arc::new(ludus_core::metrics::Metrics::unnamed()),
        }
    }

    /// Modules' own metrics go to `metrics` (the one the exporter shows)
    /// instead of a handle of their own that nothing reads.
    pub fn with_metrics(mut self, metrics: Arc<ludus_core::metrics::Metrics>) -> ServerServices {
        self.metrics = metrics;
        self
    }
}

/// The API code of a realtime error, for modules.
fn rt_error(e: RtError) -> ApiError {
    let code = match e.code {
        RtCode::BadInput => Code::InvalidArgument,
        RtCode::MatchNotFound => Code::NotFound,
        _ => Code::Internal,
    };
    ApiError::new(code, e.message)
}

fn sql_error(what: &str, e: ludus_core::StoreError) -> ApiError {
    match e {
        ludus_core::StoreError::Sql(message) => ApiError::new(Code::Internal, message),
        other => {
            tracing::warn!(error = %other, what, "module sql failed");
            ApiError::from(other)
        }
    }
}

#[async_trait]
impl RuntimeServices for ServerServices {
    fn leaderboards(&self) -> Option<Arc<LeaderboardService>> {
        Some(self.leaderboards.clone())
    }

    async fn authenticate(
        &self,
        credential: Credential,
        username: String,
        create: bool,
    ) -> Result<Authenticated, ApiError> {
        let tokens = self
            .accounts
            .authenticate(AuthRequest {
                credential,
                username,
                create,
                vars: BTreeMap::new(),
                source: None,
            })
            .await?;
        let caller = self.accounts.verify_access(&tokens.token)?;
        Ok(Authenticated {
            user_id: caller.user_id.to_string(),
            username: caller.claims.username,
            created: tokens.created,
        })
    }

    fn generate_token(
        &self,
        user_id: Uuid,
        username: &str,
        expires_at: i64,
        vars: BTreeMap<String, String>,
    ) -> Result<(String, i64), ApiError> {
        Ok(self
            .accounts
            .generate_token(user_id, username, expires_at, vars))
    }

    async fn account(&self, user_id: Uuid) -> Result<Account, ApiError> {
        let mut account = self.accounts.account(user_id).await?;
        account.user.online = self.realtime.status.is_online(account.user.id);
        Ok(account)
    }

    async fn update_account(&self, user_id: Uuid, update: AccountUpdate) -> Result<(), ApiError> {
        self.accounts.update_account(user_id, update).await
    }

    async fn users(&self, ids: Vec<String>, usernames: Vec<String>) -> Result<Vec<User>, ApiError> {
        let mut users = self.accounts.users(&ids, &usernames).await?;
        for u in &mut users {
            u.online = self.realtime.status.is_online(u.id);
        }
        Ok(users)
    }

    async fn users_random(&self, count: usize) -> Result<Vec<User>, ApiError> {
        let mut users = self.accounts.random_users(count).await?;
        for u in &mut users {
            u.online = self.realtime.status.is_online(u.id);
        }
        Ok(users)
    }

    async fn link(&self, user_id: Uuid, credential: Credential) -> Result<(), ApiError> {
        self.accounts.link(user_id, credential).await
    }

    async fn sync_friends(
        &self,
        user_id: Uuid,
        username: &str,
        credential: ludus_core::social_auth::SocialCredential,
    ) {
        self.social
            .sync_friends(&self.accounts, user_id, username, &credential)
            .await;
    }

    async fn unlink(&self, user_id: Uuid, identity: Identity) -> Result<(), ApiError> {
        self.accounts.unlink(user_id, identity).await
    }

    async fn unlink_social(
        &self,
        user_id: Uuid,
        credential: ludus_core::social_auth::SocialCredential,
    ) -> Result<(), ApiError> {
        self.accounts.unlink_social(user_id, &credential).await
    }

    async fn users_ban(&self, ids: Vec<Uuid>) -> Result<(), ApiError> {
        self.accounts.ban_users(&ids).await?;
        self.realtime.hub().close_banned(&ids);
        Ok(())
    }

    async fn users_unban(&self, ids: Vec<Uuid>) -> Result<(), ApiError> {
        self.accounts.unban_users(&ids).await
    }

    async fn http_request(&self, request: HttpRequest) -> Result<HttpResponse, ApiError> {
        self.http.request(request).await
    }

    async fn account_delete(&self, user_id: Uuid) -> Result<(), ApiError> {
        self.accounts.delete_account(user_id).await
    }

    async fn session_logout(
        &self,
        user_id: Uuid,
        token: String,
        refresh_token: String,
    ) -> Result<(), ApiError> {
        self.accounts
            .logout_user(user_id, &token, &refresh_token)
            .await
    }

    async fn notifications_list(
        &self,
        user_id: Uuid,
        limit: u32,
        cursor: Option<String>,
    ) -> Result<NotificationPage, ApiError> {
        notification_service::list_up_to(
            self.accounts.store().as_ref(),
            user_id,
            limit,
            cursor.as_deref(),
            1000,
        )
        .await
    }

    async fn notifications_delete(&self, user_id: Uuid, ids: Vec<Uuid>) -> Result<(), ApiError> {
        if ids.is_empty() {
            return Ok(());
        }
        self.accounts
            .store()
            .delete_notifications(user_id, &ids)
            .await?;
        Ok(())
    }

    fn metrics_counter_add(&self, name: &str, tags: BTreeMap<String, String>, delta: i64) {
        // A refusal is counted and logged by the custom series themselves.
        let _ = self.metrics.custom.counter_add(name, tags, delta);
    }

    fn metrics_gauge_set(&self, name: &str, tags: BTreeMap<String, String>, value: f64) {
        let _ = self.metrics.custom.gauge_set(name, tags, value);
    }

    fn metrics_timer_record(&self, name: &str, tags: BTreeMap<String, String>, elapsed: Duration) {
        let _ = self.metrics.custom.timer_record(name, tags, elapsed);
    }

    async fn notifications_get_id(
        &self,
        user_id: Option<Uuid>,
        ids: Vec<Uuid>,
    ) -> Result<Vec<Notification>, ApiError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        Ok(self
            .accounts
            .store()
            .notifications_by_id(user_id, &ids)
            .await?)
    }

    async fn notifications_delete_id(
        &self,
        user_id: Option<Uuid>,
        ids: Vec<Uuid>,
    ) -> Result<(), ApiError> {
        if ids.is_empty() {
            return Ok(());
        }
        self.accounts
            .store()
            .delete_notifications_by_id(user_id, &ids)
            .await?;
        Ok(())
    }

    async fn account_export(&self, user_id: Uuid) -> Result<String, ApiError> {
        use ludus_realtime::wire;
        let store = self.accounts.store();
        let account = store
            .get_account(user_id)
            .await?
            .ok_or_else(|| ApiError::not_found("account not found"))?;
        let mut friends = Vec::new();
        let mut cursor = String::new();
        loop {
            let page = self
                .social
                .list_friends(user_id, Some(1000), None, &cursor)
                .await?;
            friends.extend(page.friends.into_iter().map(wire::friend));
            match page.cursor {
                Some(next) if friends.len() < EXPORT_LIMIT => cursor = next,
                _ => break,
            }
        }
        let groups = store.user_groups(user_id, None, None, EXPORT_LIMIT).await?;
        let messages = store.messages_of_sender(user_id, EXPORT_LIMIT).await?;
        let ledger = store
            .wallet_ledger_list(user_id, None, EXPORT_LIMIT)
            .await?;
        let stamp = |us: i64| wire::timestamp_us(us);
        let export = serde_json::json!({
            "account": wire::account(account),
            "objects": store
                .objects_of_owner(user_id, EXPORT_LIMIT)
                .await?
                .into_iter()
                .map(wire::storage_object)
                .collect::<Vec<_>>(),
            "friends": friends,
            "groups": groups.into_iter().map(|g| wire::group(g.group)).collect::<Vec<_>>(),
            "messages": messages
                .iter()
                .map(|m| ludus_realtime::chat::message_to_wire(m, true))
                .collect::<Vec<_>>(),
            "leaderboard_records": store
                .records_of_owner(user_id, EXPORT_LIMIT)
                .await?
                .into_iter()
                .map(wire::leaderboard_record)
                .collect::<Vec<_>>(),
            "notifications": store
                .list_notifications(user_id, None, EXPORT_LIMIT)
                .await?
                .iter()
                .map(wire::notification_to_wire)
                .collect::<Vec<_>>(),
            "wallet_ledgers": ledger
                .iter()
                .map(|e| serde_json::json!({
                    "id": e.id.to_string(),
                    "user_id": e.user_id.to_string(),
                    "changeset": e.changeset,
                    "metadata": e.metadata,
                    "create_time": stamp(e.create_time_us),
                    "update_time": stamp(e.update_time_us),
                }))
                .collect::<Vec<_>>(),
        });
        Ok(export.to_string())
    }

    async fn account_import(&self, data: String, into: Option<Uuid>) -> Result<Account, ApiError> {
        let import = crate::account_import::parse(&data, into)?;
        let store = self.accounts.store();
        let replaced = store.import_account(&import).await?;
        // The search indexes follow the storage the import replaced.
        let indexes = self.storage.indexes();
        indexes.deleted(&replaced);
        indexes.written(&import.objects).await;
        store
            .get_account(import.user_id())
            .await?
            .ok_or_else(|| ApiError::not_found("account not found"))
    }

    async fn notifications_update(&self, updates: Vec<NotificationUpdate>) -> Result<(), ApiError> {
        for u in &updates {
            u.check()?;
        }
        let updates = NotificationUpdate::merged(updates);
        if updates.is_empty() {
            return Ok(());
        }
        self.accounts.store().update_notifications(&updates).await?;
        Ok(())
    }

    async fn notification_send_all(&self, notification: Notification) -> Result<(), ApiError> {
        notification.check()?;
        let notifier = &self.realtime.notifier;
        if !notification.persistent {
            notifier.send_to_everyone(&notification);
            return Ok(());
        }
        let realtime = self.realtime.clone();
        tokio::spawn(async move {
            let subject = notification.subject.clone();
            match realtime
                .notifier
                .notify_everyone(&notification, SEND_ALL_PAGE)
                .await
            {
                Ok(users) => tracing::info!(%subject, users, "notification sent to every user"),
                Err(error) => tracing::error!(
                    %subject,
                    %error,
                    "notification to every user stopped part way, some users did not get it"
                ),
            }
        });
        Ok(())
    }

    async fn channel_messages_list(
        &self,
        channel_id: String,
        limit: u32,
        forward: bool,
        cursor: Option<String>,
    ) -> Result<HistoryPage, ApiError> {
        chat_service::channel_history(
            self.accounts.store().as_ref(),
            None,
            &channel_id,
            Some(limit),
            forward,
            cursor.as_deref(),
        )
        .await
    }

    async fn notifications_send(&self, notifications: Vec<Notification>) -> Result<(), ApiError> {
        for n in &notifications {
            n.check()?;
        }
        self.realtime
            .notifier
            .notify(notifications)
            .await
            .map_err(|error| {
                tracing::error!(%error, "cannot store notifications sent by a module");
                ApiError::new(Code::Internal, "could not store notifications, try again")
            })
    }

    /// Nakama's reasons 0-4 (0: none given, which Nakama reads as 4,
    /// disconnect); the socket's close frame carries it.
    fn session_disconnect(&self, session_id: Uuid, reason: i32) -> Result<(), ApiError> {
        let reason = u8::try_from(reason)
            .ok()
            .and_then(CloseReason::module)
            .ok_or_else(|| {
                ApiError::new(
                    Code::InvalidArgument,
                    "invalid disconnect reason, must be a value 0-4",
                )
            })?;
        self.realtime.hub().disconnect(session_id, reason);
        Ok(())
    }

    async fn channel_message_send(
        &self,
        channel_id: &str,
        content: String,
        sender: Uuid,
        username: String,
        persist: bool,
    ) -> Result<ludus_proto::realtime::ChannelMessageAck, ApiError> {
        self.realtime
            .chat
            .send_as(channel_id, content, sender, username, persist)
            .await
            .map_err(rt_error)
    }

    async fn status_follow(&self, session_id: Uuid, users: Vec<Uuid>) -> Result<(), ApiError> {
        let Some(session) = self.realtime.hub().session(session_id) else {
            return Ok(());
        };
        let req = ludus_proto::realtime::StatusFollow {
            user_ids: users.iter().map(Uuid::to_string).collect(),
            usernames: Vec::new(),
        };
        self.realtime
            .status
            .follow(&session, req)
            .await
            .map(|_| ())
            .map_err(rt_error)
    }

    fn status_unfollow(&self, session_id: Uuid, users: Vec<Uuid>) -> Result<(), ApiError> {
        let Some(session) = self.realtime.hub().session(session_id) else {
            return Ok(());
        };
        let req = ludus_proto::realtime::StatusUnfollow {
            user_ids: users.iter().map(Uuid::to_string).collect(),
        };
        self.realtime
            .status
            .unfollow(&session, req)
            .map_err(rt_error)
    }

    async fn channel_message_update(
        &self,
        channel_id: &str,
        message_id: &str,
        content: String,
        sender: Uuid,
        username: String,
        persist: bool,
    ) -> Result<ludus_proto::realtime::ChannelMessageAck, ApiError> {
        self.realtime
            .chat
            .update_as(channel_id, message_id, content, sender, username, persist)
            .await
            .map_err(rt_error)
    }

    async fn channel_message_remove(
        &self,
        channel_id: &str,
        message_id: &str,
        sender: Uuid,
        username: String,
        persist: bool,
    ) -> Result<ludus_proto::realtime::ChannelMessageAck, ApiError> {
        self.realtime
            .chat
            .remove_as(channel_id, message_id, sender, username, persist)
            .await
            .map_err(rt_error)
    }

    fn stream_user_join(
        &self,
        user: Uuid,
        session: Uuid,
        stream: &Stream,
        meta: StreamMeta,
    ) -> Result<bool, ApiError> {
        self.realtime
            .stream_user_join(
                user,
                session,
                stream,
                meta.hidden,
                meta.persistence,
                &meta.status,
            )
            .map_err(rt_error)
    }

    fn stream_user_leave(
        &self,
        user: Uuid,
        session: Uuid,
        stream: &Stream,
    ) -> Result<(), ApiError> {
        self.realtime.stream_user_leave(user, session, stream);
        Ok(())
    }

    fn stream_user_list(
        &self,
        stream: &Stream,
        include_hidden: bool,
        include_not_hidden: bool,
    ) -> Vec<Presence> {
        self.realtime
            .hub()
            .presences(stream, true)
            .into_iter()
            .filter(|p| {
                if p.meta.hidden {
                    include_hidden
                } else {
                    include_not_hidden
                }
            })
            .collect()
    }

    fn stream_user_get(&self, user: Uuid, session: Uuid, stream: &Stream) -> Option<Presence> {
        self.realtime
            .hub()
            .presence(session, stream)
            .filter(|p| p.user_id == user)
    }

    fn stream_count(&self, stream: &Stream) -> usize {
        self.realtime.hub().count(stream)
    }

    fn stream_close(&self, stream: &Stream) {
        self.realtime.stream_close(stream);
    }

    fn stream_send(&self, stream: &Stream, data: String, sessions: Vec<Uuid>, reliable: bool) {
        self.realtime.stream_send(stream, data, &sessions, reliable);
    }

    fn stream_send_raw(
        &self,
        stream: &Stream,
        envelope: ludus_proto::realtime::Envelope,
        sessions: Vec<Uuid>,
    ) -> Result<(), ApiError> {
        self.realtime.stream_send_raw(stream, envelope, &sessions);
        Ok(())
    }

    fn party_list(
        &self,
        limit: usize,
        open: Option<bool>,
        show_hidden: bool,
        query: &str,
        cursor: &str,
    ) -> Result<(Vec<PartyInfo>, Option<String>), ApiError> {
        self.realtime
            .parties
            .list(limit, open, show_hidden, query, cursor)
            .map_err(rt_error)
    }

    async fn match_create(
        &self,
        module: &str,
        params: serde_json::Value,
        make: HandlerFactory,
    ) -> Result<String, ApiError> {
        self.realtime
            .matches
            .create(module, params, make)
            .await
            .map_err(rt_error)
    }

    fn match_get(&self, match_id: &str) -> Option<MatchListing> {
        self.realtime.matches.get(match_id)
    }

    fn match_list(&self, request: ListRequest) -> Result<Vec<MatchListing>, ApiError> {
        self.realtime.matches.list(&request).map_err(rt_error)
    }

    async fn match_signal(&self, match_id: &str, data: String) -> Result<String, ApiError> {
        self.realtime
            .matches
            .signal(match_id, data)
            .await
            .map_err(rt_error)
    }

    async fn sql_exec(&self, query: &str, params: Vec<SqlValue>) -> Result<u64, ApiError> {
        self.accounts
            .store()
            .sql_exec(query, params)
            .await
            .map_err(|e| sql_error("exec", e))
    }

    async fn sql_query(&self, query: &str, params: Vec<SqlValue>) -> Result<Vec<SqlRow>, ApiError> {
        self.accounts
            .store()
            .sql_query(query, params, self.sql_max_rows)
            .await
            .map_err(|e| sql_error("query", e))
    }

    // Storage and wallets: one-line delegations to `StorageService`, as the server.

    fn social(&self) -> Result<&SocialService, ApiError> {
        Ok(&self.social)
    }

    fn purchases(&self) -> Result<&ludus_core::purchase::PurchaseService, ApiError> {
        Ok(&self.purchases)
    }

    async fn storage_read(&self, ids: Vec<ObjectId>) -> Result<Vec<StorageObject>, ApiError> {
        self.storage.read(Access::Server, ids).await
    }

    async fn storage_write(&self, writes: Vec<StorageWrite>) -> Result<Vec<StorageAck>, ApiError> {
        self.storage.write(Access::Server, writes).await
    }

    async fn storage_delete(&self, deletes: Vec<StorageDelete>) -> Result<(), ApiError> {
        self.storage.delete(Access::Server, deletes).await
    }

    async fn storage_list(
        &self,
        caller: Option<Uuid>,
        owner: Option<Uuid>,
        collection: &str,
        limit: usize,
        cursor: &str,
    ) -> Result<StoragePage, ApiError> {
        let access = caller.map_or(Access::Server, Access::User);
        self.storage
            .list(access, collection, owner, limit, cursor)
            .await
    }

    fn storage_index_register(
        &self,
        spec: ludus_core::storage_index::IndexSpec,
    ) -> Result<(), ApiError> {
        self.storage.indexes().register(spec)
    }

    async fn storage_index_list(
        &self,
        name: &str,
        query: &str,
        limit: usize,
        order: Vec<String>,
        caller: Option<Uuid>,
        cursor: &str,
    ) -> Result<StoragePage, ApiError> {
        self.storage
            .index_list(name, query, limit, &order, caller, cursor)
            .await
    }

    async fn wallets_update(
        &self,
        updates: Vec<WalletUpdate>,
        update_ledger: bool,
    ) -> Result<Vec<WalletUpdateResult>, ApiError> {
        self.storage.wallets_update(updates, update_ledger).await
    }

    async fn wallet_ledger_list(
        &self,
        user: Uuid,
        limit: usize,
        cursor: &str,
    ) -> Result<LedgerPage, ApiError> {
        self.storage.wallet_ledger_list(user, limit, cursor).await
    }

    async fn wallet_ledger_update(
        &self,
        id: Uuid,
        metadata: &str,
    ) -> Result<LedgerEntry, ApiError> {
        self.storage.wallet_ledger_update(id, metadata).await
    }

    async fn multi_update(&self, update: MultiUpdate) -> Result<MultiUpdateResult, ApiError> {
        self.storage.multi_update(update).await
    }
}
