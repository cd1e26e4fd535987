//! The SQLite backend: one file under the data directory, one writer thread
//! committing queued writes in batches (see [`writer`]) and a few read-only
//! connections on their own threads (see [`readers`]). No SQLite call runs on
//! an async thread.

mod chat;
mod checkpointer;
mod connection;
mod console;
mod console_ops;
mod console_records;
mod leaderboard;
mod links;
mod module_sql;
mod purchases;
mod queries;
mod readers;
mod social;
mod storage;
mod writer;

use std::path::PathBuf;

use async_trait::async_trait;
use ludus_core::chat::{ChannelKey, ChannelMessage, MessageBound};
use ludus_core::console::{ConsoleUser, ConsoleUserAuth, ConsoleUserChange};
use ludus_core::console_ops::{AuditEntry, AuditQuery, Wipe};
use ludus_core::console_records::{
    AccountNote, AclTemplate, ConsoleSetting, NoteWrite, NotesPosition,
};
use ludus_core::friend::{
    FriendBound, FriendOfFriend, FriendOp, FriendOutcome, FriendSink, FriendState,
};
use ludus_core::group::{
    Group, GroupFilter, GroupOp, GroupRole, GroupUpdate, GroupUser, RoleBound, RoleChange,
    UserGroup,
};
use ludus_core::leaderboard::{Leaderboard, LeaderboardRecord, RecordWrite, WriteOutcome};
use ludus_core::model::{
    Account, AccountUpdate, Identity, NewUser, Provider, Revocations, User, UserAuth,
};
use ludus_core::multi_update::{MultiUpdate, MultiUpdateResult};
use ludus_core::notification::{Notification, NotificationUpdate};
use ludus_core::purchase::{IapListQuery, Purchase, Subscription};
use ludus_core::storage::{ListQuery, ObjectId, StorageObject};
use ludus_core::store::{
    ConsoleUserKey, JoinOutcome, RankedScore, ScheduleKind, SqlRow, SqlValue, Store, StoreResult,
    TournamentJoin,
};
use ludus_core::token::TokenKind;
use ludus_core::wallet::{LedgerBound, LedgerEntry};
use uuid::Uuid;

use crate::{MigrationReport, MigrationStatus, OpenError, StoreOptions};
use checkpointer::Checkpointer;
use readers::Readers;
use writer::Writer;

/// Reader connections when the machine does not say how many cores it has.
const FALLBACK_READERS: usize = 2;

pub(crate) struct SqliteStore {
    writer: Writer,
    readers: Readers,
    checkpointer: Checkpointer,
    /// How long one module statement may run (`StoreOptions`).
    module_sql_timeout: std::time::Duration,
}

impl SqliteStore {
    /// Creates the folder and file as needed, migrates, and starts the threads.
    pub(crate) async fn open(path: PathBuf, opts: &StoreOptions) -> Result<SqliteStore, OpenError> {
        let cores = std::thread::available_parallelism().map_or(FALLBACK_READERS, usize::from);
        let reader_count = cores.clamp(2, 8).min(opts.max_open_conns.max(1));
        let module_sql_timeout = std::time::Duration::from_millis(opts.module_sql_timeout_ms);
        // The writer's move of new ledger entries into the indexed table
        // (migration 10, `storage::merge_ledger`). At 20,000 wallet updates a
        // second and the default 50 ms a move takes about 1,000 entries; the
        // recent table, which ledger pages scan, holds at most what came
        // since the last move.
        let ledger_merge = writer::Upkeep {
            every: std::time::Duration::from_millis(opts.ledger_merge_interval_ms),
            work: storage::merge_ledger,
            what: "ledger merge",
        };
        let intervals = checkpointer::Intervals {
            sync: std::time::Duration::from_millis(opts.wal_sync_interval_ms),
            checkpoint: std::time::Duration::from_millis(opts.checkpoint_interval_ms),
        };
        blocking(move || {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|source| OpenError::DataDir {
                    path: dir.to_owned(),
                    source,
                })?;
            }
            let mut conn = connection::open_writer(&path)?;
            let report = connection::migrate(&mut conn, &path)?;
            let readers = (0..reader_count)
                .map(|_| connection::open_reader(&path))
                .collect::<Result<Vec<_>, _>>()?;
            // Checkpoints move to their own thread (checkpointer.rs); the
            // writer's own, at a higher mark, only finds the WAL copied
            // already (no copy, no sync) and restarts it from the top.
            conn.pragma_update(None, "wal_autocheckpoint", checkpointer::WRITER_MARK_FRAMES)
                .map_err(|e| OpenError::Sqlite {
                    path: path.clone(),
                    message: e.to_string(),
                })?;
            let checkpointer = Checkpointer::start(&path, intervals)?;
            let writer = Writer::start(conn, checkpointer.committed(), Some(ledger_merge))
                .map_err(OpenError::Thread)?;
            let readers = Readers::start(readers).map_err(OpenError::Thread)?;
            tracing::info!(
                backend = "sqlite",
                path = %path.display(),
                schema_version = report.to,
                readers = reader_count,
                "store open"
            );
            Ok(SqliteStore {
                writer,
                readers,
                checkpointer,
                module_sql_timeout,
            })
        })
        .await
    }
}

/// Runs blocking set-up work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, OpenError> + Send + 'static,
) -> Result<T, OpenError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| {
        OpenError::Thread(std::io::Error::other(format!(
            "sqlite set-up task failed: {e}"
        )))
    })?
}

pub(crate) async fn migrate_up(path: PathBuf) -> Result<MigrationReport, OpenError> {
    blocking(move || {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| OpenError::DataDir {
                path: dir.to_owned(),
                source,
            })?;
        }
        let mut conn = connection::open_writer(&path)?;
        connection::migrate(&mut conn, &path)
    })
    .await
}

pub(crate) async fn migrate_status(path: PathBuf) -> Result<MigrationStatus, OpenError> {
    blocking(move || connection::status(&path)).await
}

#[async_trait]
impl Store for SqliteStore {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    fn stats(&self) -> ludus_core::store::StoreStats {
        let (batches, batched) = self.writer.batch_counts();
        ludus_core::store::StoreStats {
            batches,
            batched,
            pool: None,
        }
    }

    async fn find_user_by_identity(&self, identity: &Identity) -> StoreResult<Option<UserAuth>> {
        let identity = identity.clone();
        self.readers
            .read(move |conn| queries::find_by_identity(conn, &identity))
            .await
    }

    async fn find_user_auth(&self, id: Uuid) -> StoreResult<Option<UserAuth>> {
        self.readers
            .read(move |conn| queries::find_auth(conn, id))
            .await
    }

    async fn create_user(&self, user: NewUser) -> StoreResult<()> {
        self.writer
            .write(move |conn| queries::create_user(conn, &user))
            .await
    }

    async fn get_account(&self, id: Uuid) -> StoreResult<Option<Account>> {
        self.readers
            .read(move |conn| queries::get_account(conn, id))
            .await
    }

    async fn link_identity(
        &self,
        user: Uuid,
        identity: Identity,
        password_hash: Option<String>,
        now: i64,
    ) -> StoreResult<()> {
        self.writer
            .write(move |conn| {
                links::link_identity(conn, user, &identity, password_hash.as_deref(), now)
            })
            .await
    }

    async fn unlink_identity(&self, user: Uuid, identity: Identity, now: i64) -> StoreResult<bool> {
        self.writer
            .write(move |conn| links::unlink_identity(conn, user, &identity, now))
            .await
    }

    async fn update_account(&self, id: Uuid, update: AccountUpdate, now: i64) -> StoreResult<()> {
        self.writer
            .write(move |conn| queries::update_account(conn, id, &update, now))
            .await
    }

    async fn import_account(
        &self,
        import: &ludus_core::model::AccountImport,
    ) -> StoreResult<Vec<ObjectId>> {
        let import = import.clone();
        self.writer
            .write(move |conn| queries::import_account(conn, &import))
            .await
    }

    async fn delete_user(&self, id: Uuid) -> StoreResult<bool> {
        self.writer
            .write(move |conn| queries::delete_user(conn, id))
            .await
    }

    async fn get_users(&self, ids: &[Uuid], usernames: &[String]) -> StoreResult<Vec<User>> {
        if ids.is_empty() && usernames.is_empty() {
            return Ok(Vec::new());
        }
        let (ids, usernames) = (ids.to_vec(), usernames.to_vec());
        self.readers
            .read(move |conn| queries::get_users(conn, &ids, &usernames))
            .await
    }

    async fn users_after(&self, after: Uuid, limit: usize) -> StoreResult<Vec<User>> {
        self.readers
            .read(move |conn| queries::users_after(conn, after, limit))
            .await
    }

    async fn revoke_token(
        &self,
        token_id: &str,
        kind: TokenKind,
        expires_at: i64,
    ) -> StoreResult<()> {
        let token_id = token_id.to_owned();
        self.writer
            .write(move |conn| queries::revoke_token(conn, &token_id, kind, expires_at))
            .await
    }

    async fn revoke_user_sessions(&self, user: Uuid, cutoff: i64) -> StoreResult<()> {
        self.writer
            .write(move |conn| queries::revoke_user_sessions(conn, user, cutoff))
            .await
    }

    async fn set_users_banned(&self, ids: &[Uuid], at: Option<i64>) -> StoreResult<()> {
        let ids = ids.to_vec();
        self.writer
            .write(move |conn| queries::set_users_banned(conn, &ids, at))
            .await
    }

    async fn load_revocations(&self, now: i64) -> StoreResult<Revocations> {
        self.writer
            .write(move |conn| queries::load_revocations(conn, now))
            .await
    }

    async fn insert_channel_message(&self, message: &ChannelMessage) -> StoreResult<()> {
        let message = message.clone();
        self.writer
            .write(move |conn| chat::insert_message(conn, &message))
            .await
    }

    async fn update_channel_message(
        &self,
        channel: &ChannelKey,
        id: Uuid,
        sender: Uuid,
        content: &str,
        update_time_us: i64,
    ) -> StoreResult<Option<ChannelMessage>> {
        let content = content.to_owned();
        let channel = channel.clone();
        self.writer
            .write(move |conn| {
                chat::update_message(conn, &channel, id, sender, &content, update_time_us)
            })
            .await
    }

    async fn delete_channel_message(
        &self,
        channel: &ChannelKey,
        id: Uuid,
        sender: Uuid,
    ) -> StoreResult<Option<ChannelMessage>> {
        let channel = channel.clone();
        self.writer
            .write(move |conn| chat::delete_message(conn, &channel, id, sender))
            .await
    }

    async fn list_channel_messages(
        &self,
        channel: &ChannelKey,
        bound: Option<MessageBound>,
        ascending: bool,
        limit: usize,
    ) -> StoreResult<Vec<ChannelMessage>> {
        let channel = channel.clone();
        self.readers
            .read(move |conn| chat::list_messages(conn, &channel, bound, ascending, limit))
            .await
    }

    async fn insert_notifications(&self, notifications: &[Notification]) -> StoreResult<()> {
        if notifications.is_empty() {
            return Ok(());
        }
        let notifications = notifications.to_vec();
        self.writer
            .write(move |conn| chat::insert_notifications(conn, &notifications))
            .await
    }

    async fn list_notifications(
        &self,
        user: Uuid,
        after: Option<MessageBound>,
        limit: usize,
    ) -> StoreResult<Vec<Notification>> {
        self.readers
            .read(move |conn| chat::list_notifications(conn, user, after, limit))
            .await
    }

    async fn delete_notifications(&self, user: Uuid, ids: &[Uuid]) -> StoreResult<u64> {
        let ids = ids.to_vec();
        self.writer
            .write(move |conn| chat::delete_notifications(conn, user, &ids))
            .await
    }

    async fn purchases_upsert(
        &self,
        purchases: Vec<Purchase>,
        now_ms: i64,
    ) -> StoreResult<Vec<Purchase>> {
        self.writer
            .write(move |conn| purchases::upsert_purchases(conn, &purchases, now_ms))
            .await
    }

    async fn purchase_get(&self, transaction_id: &str) -> StoreResult<Option<Purchase>> {
        let id = transaction_id.to_owned();
        self.readers
            .read(move |conn| purchases::get_purchase(conn, &id))
            .await
    }

    async fn purchases_list(&self, query: &IapListQuery) -> StoreResult<Vec<Purchase>> {
        let query = query.clone();
        self.readers
            .read(move |conn| purchases::list_purchases(conn, &query))
            .await
    }

    async fn subscriptions_upsert(
        &self,
        subscriptions: Vec<Subscription>,
        now_ms: i64,
    ) -> StoreResult<Vec<Subscription>> {
        self.writer
            .write(move |conn| purchases::upsert_subscriptions(conn, &subscriptions, now_ms))
            .await
    }

    async fn subscription_get(
        &self,
        user: Uuid,
        product_id: &str,
    ) -> StoreResult<Option<Subscription>> {
        let product = product_id.to_owned();
        self.readers
            .read(move |conn| purchases::get_subscription(conn, user, &product))
            .await
    }

    async fn subscription_by_transaction(
        &self,
        original_transaction_id: &str,
    ) -> StoreResult<Option<Subscription>> {
        let id = original_transaction_id.to_owned();
        self.readers
            .read(move |conn| purchases::subscription_by_transaction(conn, &id))
            .await
    }

    async fn subscriptions_list(&self, query: &IapListQuery) -> StoreResult<Vec<Subscription>> {
        let query = query.clone();
        self.readers
            .read(move |conn| purchases::list_subscriptions(conn, &query))
            .await
    }

    async fn notifications_by_id(
        &self,
        user: Option<Uuid>,
        ids: &[Uuid],
    ) -> StoreResult<Vec<Notification>> {
        let ids = ids.to_vec();
        self.readers
            .read(move |conn| chat::notifications_by_id(conn, user, &ids))
            .await
    }

    async fn delete_notifications_by_id(
        &self,
        user: Option<Uuid>,
        ids: &[Uuid],
    ) -> StoreResult<u64> {
        let ids = ids.to_vec();
        self.writer
            .write(move |conn| chat::delete_notifications_by_id(conn, user, &ids))
            .await
    }

    async fn update_notifications(&self, updates: &[NotificationUpdate]) -> StoreResult<u64> {
        if updates.is_empty() {
            return Ok(0);
        }
        let updates = updates.to_vec();
        self.writer
            .write(move |conn| chat::update_notifications(conn, &updates))
            .await
    }

    async fn sql_exec(&self, sql: &str, params: Vec<SqlValue>) -> StoreResult<u64> {
        crate::module_sql::check(sql)?;
        let sql = sql.to_owned();
        let limit = self.module_sql_timeout;
        self.writer
            .write(move |conn| module_sql::exec(conn, &sql, &params, limit))
            .await
    }

    async fn sql_query(
        &self,
        sql: &str,
        params: Vec<SqlValue>,
        max_rows: usize,
    ) -> StoreResult<Vec<SqlRow>> {
        crate::module_sql::check(sql)?;
        let sql: std::sync::Arc<str> = sql.into();
        let params = std::sync::Arc::new(params);
        let (read_sql, read_params) = (sql.clone(), params.clone());
        let limit = self.module_sql_timeout;
        let read = self
            .readers
            .read(move |conn| {
                module_sql::query_read_only(conn, &read_sql, &read_params, max_rows, limit)
            })
            .await?;
        match read {
            Some(rows) => Ok(rows),
            // The statement writes (`… RETURNING`): run it on the writer.
            None => {
                self.writer
                    .write(move |conn| module_sql::query(conn, &sql, &params, max_rows, limit))
                    .await
            }
        }
    }

    async fn storage_read(&self, ids: &[ObjectId]) -> StoreResult<Vec<StorageObject>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids = ids.to_vec();
        self.readers
            .read(move |conn| storage::read_objects(conn, &ids))
            .await
    }

    async fn storage_list(&self, query: &ListQuery) -> StoreResult<Vec<StorageObject>> {
        let query = query.clone();
        self.readers
            .read(move |conn| storage::list_objects(conn, &query))
            .await
    }

    async fn multi_update(
        &self,
        update: MultiUpdate,
        now_us: i64,
    ) -> StoreResult<MultiUpdateResult> {
        self.writer
            .write(move |conn| storage::multi_update(conn, &update, now_us))
            .await
    }

    async fn wallet_ledger_list(
        &self,
        user: Uuid,
        before: Option<LedgerBound>,
        limit: usize,
    ) -> StoreResult<Vec<LedgerEntry>> {
        self.readers
            .read(move |conn| storage::ledger_list(conn, user, before, limit))
            .await
    }

    async fn storage_collections(&self, after: &str, limit: usize) -> StoreResult<Vec<String>> {
        let after = after.to_owned();
        self.readers
            .read(move |conn| storage::collections(conn, &after, limit))
            .await
    }

    async fn wallet_ledger_delete(&self, user: Uuid, id: Uuid) -> StoreResult<bool> {
        self.writer
            .write(move |conn| storage::ledger_delete(conn, user, id))
            .await
    }

    async fn wallet_ledger_update(
        &self,
        id: Uuid,
        metadata: &str,
        now_us: i64,
    ) -> StoreResult<Option<LedgerEntry>> {
        let metadata = metadata.to_owned();
        self.writer
            .write(move |conn| storage::ledger_update(conn, id, &metadata, now_us))
            .await
    }

    async fn friends_change(
        &self,
        user: Uuid,
        op: FriendOp,
        targets: &[Uuid],
        metadata: &str,
        now_us: i64,
    ) -> StoreResult<Vec<(Uuid, FriendOutcome)>> {
        let (targets, metadata) = (targets.to_vec(), metadata.to_owned());
        self.writer
            .write(move |conn| social::friends_change(conn, user, op, &targets, &metadata, now_us))
            .await
    }

    async fn friends_import(
        &self,
        user: Uuid,
        provider: Provider,
        provider_ids: &[String],
        reset: bool,
        now_us: i64,
    ) -> StoreResult<Vec<Uuid>> {
        let ids = provider_ids.to_vec();
        self.writer
            .write(move |conn| social::friends_import(conn, user, provider, &ids, reset, now_us))
            .await
    }

    async fn friends_list_into(
        &self,
        user: Uuid,
        state: Option<FriendState>,
        after: Option<FriendBound>,
        limit: usize,
        mut sink: Box<dyn FriendSink>,
    ) -> StoreResult<Box<dyn FriendSink>> {
        self.readers
            .read(move |conn| {
                social::friends_list_into(conn, user, state, after, limit, &mut *sink)?;
                Ok(sink)
            })
            .await
    }

    async fn friends_of_friends(
        &self,
        user: Uuid,
        after: Option<(Uuid, Uuid)>,
        limit: usize,
    ) -> StoreResult<Vec<FriendOfFriend>> {
        self.readers
            .read(move |conn| social::friends_of_friends(conn, user, after, limit))
            .await
    }

    async fn friend_state(&self, user: Uuid, other: Uuid) -> StoreResult<Option<FriendState>> {
        self.readers
            .read(move |conn| social::friend_state(conn, user, other))
            .await
    }

    async fn friend_metadata_update(
        &self,
        user: Uuid,
        friend: Uuid,
        metadata: &str,
        now_us: i64,
    ) -> StoreResult<bool> {
        let metadata = metadata.to_owned();
        self.writer
            .write(move |conn| {
                social::friend_metadata_update(conn, user, friend, &metadata, now_us)
            })
            .await
    }

    async fn group_create(&self, group: &Group, superadmin: Uuid) -> StoreResult<()> {
        let group = group.clone();
        self.writer
            .write(move |conn| social::group_create(conn, &group, superadmin))
            .await
    }

    async fn group_update(
        &self,
        id: Uuid,
        caller: Option<Uuid>,
        update: &GroupUpdate,
        now_us: i64,
    ) -> StoreResult<Group> {
        let update = update.clone();
        self.writer
            .write(move |conn| social::group_update(conn, id, caller, &update, now_us))
            .await
    }

    async fn group_delete(&self, id: Uuid, caller: Option<Uuid>) -> StoreResult<Vec<Uuid>> {
        self.writer
            .write(move |conn| social::group_delete(conn, id, caller))
            .await
    }

    async fn group_change(
        &self,
        id: Uuid,
        op: GroupOp,
        caller: Option<Uuid>,
        targets: &[Uuid],
        now_us: i64,
    ) -> StoreResult<Vec<RoleChange>> {
        let targets = targets.to_vec();
        self.writer
            .write(move |conn| social::group_change(conn, id, op, caller, &targets, now_us))
            .await
    }

    async fn groups_get(&self, ids: &[Uuid]) -> StoreResult<Vec<Group>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids = ids.to_vec();
        self.readers
            .read(move |conn| social::groups_get(conn, &ids))
            .await
    }

    async fn groups_list(&self, filter: &GroupFilter) -> StoreResult<Vec<Group>> {
        let filter = filter.clone();
        self.readers
            .read(move |conn| social::groups_list(conn, &filter))
            .await
    }

    async fn groups_random(&self, count: usize) -> StoreResult<Vec<Group>> {
        self.readers
            .read(move |conn| social::groups_random(conn, count))
            .await
    }

    async fn group_users(
        &self,
        group: Uuid,
        role: Option<GroupRole>,
        after: Option<RoleBound>,
        limit: usize,
    ) -> StoreResult<Vec<GroupUser>> {
        self.readers
            .read(move |conn| social::group_users(conn, group, role, after, limit))
            .await
    }

    async fn user_groups(
        &self,
        user: Uuid,
        role: Option<GroupRole>,
        after: Option<RoleBound>,
        limit: usize,
    ) -> StoreResult<Vec<UserGroup>> {
        self.readers
            .read(move |conn| social::user_groups(conn, user, role, after, limit))
            .await
    }

    async fn group_role(&self, group: Uuid, user: Uuid) -> StoreResult<Option<GroupRole>> {
        self.readers
            .read(move |conn| social::group_role(conn, group, user))
            .await
    }

    async fn leaderboard_create(&self, board: &Leaderboard) -> StoreResult<(Leaderboard, bool)> {
        let board = board.clone();
        self.writer
            .write(move |conn| leaderboard::create(conn, &board))
            .await
    }

    async fn leaderboard_delete(&self, id: &str) -> StoreResult<bool> {
        let id = id.to_owned();
        self.writer
            .write(move |conn| leaderboard::delete(conn, &id))
            .await
    }

    async fn leaderboards_load(&self) -> StoreResult<Vec<Leaderboard>> {
        self.readers.read(leaderboard::load).await
    }

    async fn leaderboard_set_ranks(&self, id: &str, enable: bool) -> StoreResult<bool> {
        let id = id.to_owned();
        self.writer
            .write(move |conn| leaderboard::set_ranks(conn, &id, enable))
            .await
    }

    async fn leaderboard_scores(&self, id: &str, expiry: i64) -> StoreResult<Vec<RankedScore>> {
        let id = id.to_owned();
        self.readers
            .read(move |conn| leaderboard::scores(conn, &id, expiry))
            .await
    }

    async fn leaderboard_records_get(
        &self,
        id: &str,
        expiry: i64,
        owners: &[Uuid],
    ) -> StoreResult<Vec<LeaderboardRecord>> {
        let id = id.to_owned();
        let owners = owners.to_vec();
        self.readers
            .read(move |conn| leaderboard::records_get(conn, &id, expiry, &owners))
            .await
    }

    async fn objects_of_owner(&self, owner: Uuid, limit: usize) -> StoreResult<Vec<StorageObject>> {
        self.readers
            .read(move |conn| storage::objects_of_owner(conn, owner, limit))
            .await
    }

    async fn records_of_owner(
        &self,
        owner: Uuid,
        limit: usize,
    ) -> StoreResult<Vec<LeaderboardRecord>> {
        self.readers
            .read(move |conn| leaderboard::records_of_owner(conn, owner, limit))
            .await
    }

    async fn messages_of_sender(
        &self,
        sender: Uuid,
        limit: usize,
    ) -> StoreResult<Vec<ChannelMessage>> {
        self.readers
            .read(move |conn| chat::messages_of_sender(conn, sender, limit))
            .await
    }

    async fn leaderboard_record_write(
        &self,
        w: &RecordWrite,
        now: i64,
    ) -> StoreResult<WriteOutcome> {
        let w = w.clone();
        self.writer
            .write(move |conn| leaderboard::write(conn, &w, now))
            .await
    }

    async fn leaderboard_record_delete(
        &self,
        id: &str,
        owner: Uuid,
        expiry: i64,
    ) -> StoreResult<bool> {
        let id = id.to_owned();
        self.writer
            .write(move |conn| leaderboard::delete_record(conn, &id, owner, expiry))
            .await
    }

    async fn tournament_join(&self, join: &TournamentJoin, now: i64) -> StoreResult<JoinOutcome> {
        let join = join.clone();
        self.writer
            .write(move |conn| leaderboard::join(conn, &join, now))
            .await
    }

    async fn tournament_add_attempt(
        &self,
        id: &str,
        owner: Uuid,
        expiry: i64,
        count: i64,
    ) -> StoreResult<bool> {
        let id = id.to_owned();
        self.writer
            .write(move |conn| leaderboard::add_attempt(conn, &id, owner, expiry, count))
            .await
    }

    async fn leaderboard_schedule_fired(
        &self,
        id: &str,
        kind: ScheduleKind,
        period: i64,
    ) -> StoreResult<bool> {
        let id = id.to_owned();
        self.writer
            .write(move |conn| leaderboard::schedule_fired(conn, &id, kind, period))
            .await
    }

    async fn console_user_put(&self, user: &ConsoleUser) -> StoreResult<ConsoleUser> {
        let user = user.clone();
        self.writer
            .write(move |conn| console::put(conn, &user))
            .await
    }

    async fn console_user_get(&self, key: &ConsoleUserKey) -> StoreResult<Option<ConsoleUserAuth>> {
        let key = key.clone();
        self.readers
            .read(move |conn| console::get(conn, &key))
            .await
    }

    async fn console_users(&self) -> StoreResult<Vec<ConsoleUser>> {
        self.readers.read(console::list).await
    }

    async fn console_user_change(
        &self,
        key: &ConsoleUserKey,
        change: &ConsoleUserChange,
        now_ms: i64,
    ) -> StoreResult<Option<ConsoleUser>> {
        let (key, change) = (key.clone(), change.clone());
        self.writer
            .write(move |conn| console::change(conn, &key, &change, now_ms))
            .await
    }

    async fn console_user_delete(&self, username: &str) -> StoreResult<bool> {
        let username = username.to_owned();
        self.writer
            .write(move |conn| console::delete(conn, &username))
            .await
    }

    async fn console_wipe(&self, what: Wipe) -> StoreResult<u64> {
        self.writer
            .write(move |conn| console_ops::wipe(conn, what))
            .await
    }

    async fn channel_messages_delete(
        &self,
        before_us: Option<i64>,
        ids: &[Uuid],
    ) -> StoreResult<u64> {
        let ids = ids.to_vec();
        self.writer
            .write(move |conn| console_ops::delete_messages(conn, before_us, &ids))
            .await
    }

    async fn audit_add(&self, entry: &AuditEntry) -> StoreResult<()> {
        let entry = entry.clone();
        self.writer
            .write(move |conn| console_ops::audit_add(conn, &entry))
            .await
    }

    async fn audit_list(&self, query: &AuditQuery) -> StoreResult<Vec<AuditEntry>> {
        let query = query.clone();
        self.readers
            .read(move |conn| console_ops::audit_list(conn, &query))
            .await
    }

    async fn account_note_put(&self, write: &NoteWrite) -> StoreResult<Option<AccountNote>> {
        let write = write.clone();
        self.writer
            .write(move |conn| console_records::note_put(conn, &write))
            .await
    }

    async fn account_notes(
        &self,
        user: Uuid,
        from: Option<NotesPosition>,
        limit: usize,
    ) -> StoreResult<Vec<AccountNote>> {
        self.readers
            .read(move |conn| console_records::notes(conn, user, from, limit))
            .await
    }

    async fn account_note_delete(&self, user: Uuid, id: Uuid) -> StoreResult<bool> {
        self.writer
            .write(move |conn| console_records::note_delete(conn, user, id))
            .await
    }

    async fn acl_template_add(&self, template: &AclTemplate) -> StoreResult<AclTemplate> {
        let template = template.clone();
        self.writer
            .write(move |conn| console_records::template_add(conn, &template))
            .await
    }

    async fn acl_template_update(
        &self,
        template: &AclTemplate,
    ) -> StoreResult<Option<AclTemplate>> {
        let template = template.clone();
        self.writer
            .write(move |conn| console_records::template_update(conn, &template))
            .await
    }

    async fn acl_templates(&self) -> StoreResult<Vec<AclTemplate>> {
        self.readers.read(console_records::templates).await
    }

    async fn acl_template_delete(&self, id: Uuid) -> StoreResult<bool> {
        self.writer
            .write(move |conn| console_records::template_delete(conn, id))
            .await
    }

    async fn console_settings(&self, names: &[String]) -> StoreResult<Vec<ConsoleSetting>> {
        let names = names.to_vec();
        self.readers
            .read(move |conn| console_records::settings(conn, &names))
            .await
    }

    async fn console_setting_set(
        &self,
        name: &str,
        value: &str,
        now: i64,
    ) -> StoreResult<Option<ConsoleSetting>> {
        let (name, value) = (name.to_owned(), value.to_owned());
        self.writer
            .write(move |conn| console_records::setting_set(conn, &name, &value, now))
            .await
    }

    async fn close(&self) {
        // Readers first: reads queued before close still see every committed write.
        self.readers.close().await;
        self.writer.close().await;
        self.checkpointer.close().await;
        tracing::info!(backend = "sqlite", "store closed");
    }
}
