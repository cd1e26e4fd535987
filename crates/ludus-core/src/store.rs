//! The `Store` trait: everything the domain persists, implemented by each
//! storage backend (SQLite and PostgreSQL in `ludus-store`).
//!
//! Every method is one transaction. Backends retry serialization failures
//! themselves; callers only ever see the outcomes named in [`StoreError`].

use std::any::Any;

use async_trait::async_trait;
use uuid::Uuid;

use crate::chat::{ChannelKey, ChannelMessage, MessageBound};
use crate::console::{ConsoleUser, ConsoleUserAuth, ConsoleUserChange};
use crate::console_ops::{AuditEntry, AuditQuery, Wipe};
use crate::console_records::{AccountNote, AclTemplate, ConsoleSetting, NoteWrite, NotesPosition};
use crate::error::{ApiError, Code};
use crate::friend::{
    FriendBound, FriendOfFriend, FriendOp, FriendOutcome, FriendSink, FriendState,
};
use crate::group::{
    Group, GroupFilter, GroupOp, GroupRefusal, GroupRole, GroupUpdate, GroupUser, RoleBound,
    RoleChange, UserGroup,
};
use crate::leaderboard::{Leaderboard, LeaderboardRecord, RecordWrite, WriteOutcome};
use crate::model::{
    Account, AccountImport, AccountUpdate, Identity, NewUser, Provider, Revocations, User, UserAuth,
};
use crate::multi_update::{MultiUpdate, MultiUpdateResult};
use crate::notification::{Notification, NotificationUpdate};
use crate::purchase::{IapListQuery, Purchase, Subscription};
use crate::storage::{ListQuery, ObjectId, Rejection, StorageObject};
use crate::token::TokenKind;
use crate::wallet::{LedgerBound, LedgerEntry};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("username is already in use")]
    UsernameTaken,
    #[error("identity is already linked to another account")]
    IdentityTaken,
    #[error("not found")]
    NotFound,
    /// An imported account's id belongs to an account already.
    #[error("user id already exists")]
    UserIdTaken,
    /// A console user's username or email belongs to another console user.
    #[error("console username or email already exists")]
    ConsoleUserTaken,
    /// An ACL template's name belongs to another template.
    #[error("acl template name already exists")]
    AclTemplateTaken,
    /// The database could not be reached or is shutting down.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    #[error("storage error: {0}")]
    Backend(String),
    /// A module's own SQL (`nk.sql_exec` / `nk.sql_query`) was refused or
    /// failed; the message is meant for the module's author.
    #[error("{0}")]
    Sql(String),
    /// A storage or wallet change was refused by the domain's rules; the
    /// transaction it was part of wrote nothing.
    #[error("{0}")]
    Rejected(Rejection),
    /// A group change was refused by the group rules; nothing was written.
    #[error("{0}")]
    Group(GroupRefusal),
}

/// The one mapping of a store's outcome to the caller's error: what a
/// client may learn, and what is only logged.
impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        use StoreError as S;
        match e {
            S::UsernameTaken => ApiError::new(Code::AlreadyExists, "username is already in use"),
            S::IdentityTaken => ApiError::new(
                Code::AlreadyExists,
                "this identity is linked to another account",
            ),
            S::NotFound => ApiError::not_found("user account not found"),
            S::UserIdTaken => ApiError::new(
                Code::AlreadyExists,
                "user identifier already exists, import into it by naming it",
            ),
            S::ConsoleUserTaken => ApiError::new(
                Code::FailedPrecondition,
                "a console user with this username or email already exists, choose another",
            ),
            S::AclTemplateTaken => ApiError::new(
                Code::AlreadyExists,
                "an acl template with this name already exists, choose another name",
            ),
            S::Unavailable(msg) => {
                tracing::error!(error = %msg, "storage unavailable");
                ApiError::new(Code::Unavailable, "storage is unavailable, try again later")
            }
            S::Backend(msg) => {
                tracing::error!(error = %msg, "storage error");
                ApiError::internal("internal storage error")
            }
            // A module's own SQL: its author needs the database's message.
            S::Sql(msg) => ApiError::internal(msg),
            S::Rejected(r) => r.into(),
            S::Group(r) => r.into(),
        }
    }
}

impl From<GroupRefusal> for StoreError {
    fn from(r: GroupRefusal) -> Self {
        StoreError::Group(r)
    }
}

impl From<Rejection> for StoreError {
    fn from(r: Rejection) -> Self {
        StoreError::Rejected(r)
    }
}

/// A value bound to, or read from, a module's own SQL: the types a Lua value
/// maps to.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
    Bytes(Vec<u8>),
}

/// One result row of a module's query: column name and value, in the
/// query's column order.
pub type SqlRow = Vec<(String, SqlValue)>;

pub type StoreResult<T> = Result<T, StoreError>;

/// An owner's scores in one period of a board, for its rank index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankedScore {
    pub owner: Uuid,
    pub score: i64,
    pub subscore: i64,
    pub num_score: i32,
}

/// How a console user is found: by id, or by username or email.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsoleUserKey {
    Id(Uuid),
    Name(String),
}

/// A tournament join, resolved against the tournament's current period.
#[derive(Debug, Clone, PartialEq)]
pub struct TournamentJoin {
    pub id: String,
    pub owner: Uuid,
    pub username: String,
    pub expiry: i64,
    pub max_num_score: u32,
    pub max_size: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinOutcome {
    Joined,
    AlreadyJoined,
    Full,
}

/// Which of a board's scheduled events fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScheduleKind {
    /// A leaderboard or tournament period ended (its records expired).
    Reset,
    /// A tournament period stopped being active.
    End,
}

/// What a store reports to the metrics, read at scrape time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Group commits (batches of writes in one transaction or statement)
    /// and the writes they carried: their ratio is the mean batch size.
    pub batches: u64,
    pub batched: u64,
    /// The connection pool, on an engine that has one (PostgreSQL).
    pub pool: Option<PoolStats>,
}

/// A connection pool's state (Nakama's `db_*` gauges).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    pub max_open: u64,
    pub open: u64,
    pub in_use: u64,
    pub idle: u64,
    /// Requests that found every connection in use and waited, and how
    /// long they waited in all.
    pub wait_count: u64,
    pub wait_ns: u64,
}

#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// `"sqlite"` or `"postgres"`, for logs.
    fn backend(&self) -> &'static str;

    /// Batching and pool figures for the metrics; cheap (atomic reads).
    fn stats(&self) -> StoreStats {
        StoreStats::default()
    }

    /// The user a device id, custom id, email or username belongs to.
    async fn find_user_by_identity(&self, identity: &Identity) -> StoreResult<Option<UserAuth>>;

    /// Sign-in details of a user by id.
    async fn find_user_auth(&self, id: Uuid) -> StoreResult<Option<UserAuth>>;

    /// Registers a user with its first identity, all or nothing.
    /// Fails with `UsernameTaken` or `IdentityTaken` and writes nothing then.
    async fn create_user(&self, user: NewUser) -> StoreResult<()>;

    async fn get_account(&self, id: Uuid) -> StoreResult<Option<Account>>;

    /// Links a device, custom id or email (with its password hash) to an
    /// existing user: a device is added to the user's devices, a custom id
    /// or email replaces the one linked; linking what the user already has
    /// changes nothing else. `IdentityTaken` when another user has it,
    /// `NotFound` when the user does not exist.
    async fn link_identity(
        &self,
        user: Uuid,
        identity: Identity,
        password_hash: Option<String>,
        now: i64,
    ) -> StoreResult<()>;

    /// Unlinks a device, custom id or email (an empty custom id or email:
    /// whichever is linked) when [`crate::model::LinkedIdentities::may_unlink`] allows it,
    /// deciding on the identities read in the same transaction. Unlinking an
    /// email also removes the password. Returns whether it did.
    async fn unlink_identity(&self, user: Uuid, identity: Identity, now: i64) -> StoreResult<bool>;

    /// Applies the changes; `NotFound` for no such user, `UsernameTaken` on a clash.
    async fn update_account(&self, id: Uuid, update: AccountUpdate, now: i64) -> StoreResult<()>;

    /// Imports an account (`nk.account_import_id`) in one transaction:
    /// creates `account` with its id, devices and ids, or (`into`) replaces
    /// the metadata and wallet of an existing one; then replaces every
    /// storage object of the account with `objects`. Answers the ids of the
    /// objects it replaced.
    async fn import_account(&self, import: &AccountImport) -> StoreResult<Vec<ObjectId>>;

    /// Deletes the user and everything linked to it; false when there was none.
    async fn delete_user(&self, id: Uuid) -> StoreResult<bool>;

    /// Users by id or username, each at most once, in no particular order.
    async fn get_users(&self, ids: &[Uuid], usernames: &[String]) -> StoreResult<Vec<User>>;

    /// Up to `limit` users with an id above `after`, in id order (the
    /// system user, whose id is nil, never): how random users are picked,
    /// from a random id, as Nakama's `GetRandomUsers` does.
    async fn users_after(&self, after: Uuid, limit: usize) -> StoreResult<Vec<User>>;

    /// Records that one token is revoked until it expires.
    async fn revoke_token(
        &self,
        token_id: &str,
        kind: TokenKind,
        expires_at: i64,
    ) -> StoreResult<()>;

    /// Records that every token of a user issued at or before `cutoff` is revoked.
    async fn revoke_user_sessions(&self, user: Uuid, cutoff: i64) -> StoreResult<()>;

    /// Bans users as of `at` (their `disable_time`, and every token they
    /// hold revoked as in [`Store::revoke_user_sessions`]) or, with `None`,
    /// lifts their bans; one transaction. Unknown ids are skipped.
    async fn set_users_banned(&self, ids: &[Uuid], at: Option<i64>) -> StoreResult<()>;

    /// Revocations still in force at `now`; expired ones may be purged.
    async fn load_revocations(&self, now: i64) -> StoreResult<Revocations>;

    /// Stores a chat message.
    async fn insert_channel_message(&self, message: &ChannelMessage) -> StoreResult<()>;

    /// Replaces the content of a message its sender wrote in `channel`;
    /// `None` (and nothing written) when there is no such message from that
    /// sender in that channel.
    async fn update_channel_message(
        &self,
        channel: &ChannelKey,
        id: Uuid,
        sender: Uuid,
        content: &str,
        update_time_us: i64,
    ) -> StoreResult<Option<ChannelMessage>>;

    /// Deletes a message its sender wrote in `channel`; returns it, or `None`
    /// (and nothing deleted).
    async fn delete_channel_message(
        &self,
        channel: &ChannelKey,
        id: Uuid,
        sender: Uuid,
    ) -> StoreResult<Option<ChannelMessage>>;

    /// Up to `limit` messages of a channel ordered by (create time, id),
    /// ascending or descending, strictly past `bound` in that order.
    async fn list_channel_messages(
        &self,
        channel: &ChannelKey,
        bound: Option<MessageBound>,
        ascending: bool,
        limit: usize,
    ) -> StoreResult<Vec<ChannelMessage>>;

    /// Stores notifications (all or none).
    async fn insert_notifications(&self, notifications: &[Notification]) -> StoreResult<()>;

    /// Up to `limit` of a user's notifications, oldest first, after `after`.
    async fn list_notifications(
        &self,
        user: Uuid,
        after: Option<MessageBound>,
        limit: usize,
    ) -> StoreResult<Vec<Notification>>;

    /// Deletes these notifications of `user`; returns how many went.
    async fn delete_notifications(&self, user: Uuid, ids: &[Uuid]) -> StoreResult<u64>;

    /// The stored notifications with these ids, of `user` only when given
    /// (`nk.notifications_get_id`), oldest first.
    async fn notifications_by_id(
        &self,
        user: Option<Uuid>,
        ids: &[Uuid],
    ) -> StoreResult<Vec<Notification>>;

    /// Deletes the notifications with these ids, of `user` only when given
    /// (`nk.notifications_delete_id`); returns how many went.
    async fn delete_notifications_by_id(
        &self,
        user: Option<Uuid>,
        ids: &[Uuid],
    ) -> StoreResult<u64>;

    /// Applies `updates` (one per id, [`NotificationUpdate::merged`]) to
    /// the stored notifications, whoever holds them, in one transaction
    /// (`nk.notifications_update`); unknown ids are ignored. Returns how
    /// many rows changed.
    async fn update_notifications(&self, updates: &[NotificationUpdate]) -> StoreResult<u64>;

    /// Runs one statement of a module's own SQL (`nk.sql_exec`) in its own
    /// transaction; `$1, $2…` are bound to `params` in order. Returns the
    /// rows it changed. Transaction control (`BEGIN`, `COMMIT`…) is refused:
    /// each call already is one transaction.
    async fn sql_exec(&self, sql: &str, params: Vec<SqlValue>) -> StoreResult<u64>;

    /// Runs one statement of a module's own SQL (`nk.sql_query`) and returns
    /// its rows; more than `max_rows` rows is an error (`StoreError::Sql`),
    /// never a truncated answer.
    async fn sql_query(
        &self,
        sql: &str,
        params: Vec<SqlValue>,
        max_rows: usize,
    ) -> StoreResult<Vec<SqlRow>>;

    /// The stored objects among `ids`, in no particular order; missing ones
    /// are left out. Permissions are the caller's business
    /// ([`crate::storage::readable`]).
    async fn storage_read(&self, ids: &[ObjectId]) -> StoreResult<Vec<StorageObject>>;

    /// Up to `query.limit` objects of a collection ordered by (read
    /// permission, key, user id), strictly after `query.after`.
    async fn storage_list(&self, query: &ListQuery) -> StoreResult<Vec<StorageObject>>;

    /// Applies account changes, storage writes (sorted by object, so
    /// concurrent batches lock in one order), storage deletes and wallet
    /// updates in ONE transaction, checking each against what is stored with
    /// [`crate::storage::check_write`], [`crate::storage::check_delete`] and
    /// [`crate::wallet::apply`]. The first refusal fails the whole
    /// transaction with [`StoreError::Rejected`]. `now_us` stamps every row.
    async fn multi_update(
        &self,
        update: MultiUpdate,
        now_us: i64,
    ) -> StoreResult<MultiUpdateResult>;

    /// Up to `limit` of a user's ledger entries, newest first, strictly
    /// before `before` in (create time, id) order.
    async fn wallet_ledger_list(
        &self,
        user: Uuid,
        before: Option<LedgerBound>,
        limit: usize,
    ) -> StoreResult<Vec<LedgerEntry>>;

    /// Merges `metadata` (a JSON object) into a ledger entry's metadata;
    /// `None` when there is no such entry.
    async fn wallet_ledger_update(
        &self,
        id: Uuid,
        metadata: &str,
        now_us: i64,
    ) -> StoreResult<Option<LedgerEntry>>;

    /// Up to `limit` distinct storage collection names after `after`, in
    /// order (the console's `ListStorageCollections`, a page at a time).
    async fn storage_collections(&self, after: &str, limit: usize) -> StoreResult<Vec<String>>;

    /// Deletes one of `user`'s ledger entries (the console's
    /// `DeleteWalletLedger`); false when `user` has no entry `id`. The
    /// wallet itself is not changed, as in Nakama.
    async fn wallet_ledger_delete(&self, user: Uuid, id: Uuid) -> StoreResult<bool>;

    /// Adds, deletes or blocks each of `targets` (distinct, never `user`)
    /// for `user` in ONE transaction, deciding each pair with
    /// [`crate::friend::plan`] on the edges read in it; `metadata` is the
    /// caller's edge metadata for an add. Unknown users change nothing.
    /// Returns what happened with each target, in order.
    async fn friends_change(
        &self,
        user: Uuid,
        op: FriendOp,
        targets: &[Uuid],
        metadata: &str,
        now_us: i64,
    ) -> StoreResult<Vec<(Uuid, FriendOutcome)>>;

    /// A platform friend import for `user` in ONE transaction: with `reset`,
    /// first every edge from or to `user` that is not a block goes; then
    /// each other user whose `provider` id is one of `provider_ids` is
    /// decided with [`crate::friend::import_plan`]. Ids no user holds, and
    /// `user`'s own, are skipped. Returns the users who became friends.
    async fn friends_import(
        &self,
        user: Uuid,
        provider: Provider,
        provider_ids: &[String],
        reset: bool,
        now_us: i64,
    ) -> StoreResult<Vec<Uuid>>;

    /// Pushes up to `limit` of `user`'s edges (with `state` only, when
    /// given), ordered by (state, position, friend id), strictly after
    /// `after`, to `sink` while their rows are read, and gives the sink back.
    /// [`friends_into`] is the same for a sink of a known type.
    async fn friends_list_into(
        &self,
        user: Uuid,
        state: Option<FriendState>,
        after: Option<FriendBound>,
        limit: usize,
        sink: Box<dyn FriendSink>,
    ) -> StoreResult<Box<dyn FriendSink>>;

    /// Up to `limit` friends of `user`'s friends who are neither `user` nor
    /// `user`'s friends, ordered by (referrer, user id), strictly after `after`.
    async fn friends_of_friends(
        &self,
        user: Uuid,
        after: Option<(Uuid, Uuid)>,
        limit: usize,
    ) -> StoreResult<Vec<FriendOfFriend>>;

    /// The state of `user`'s edge to `other`, if any.
    async fn friend_state(&self, user: Uuid, other: Uuid) -> StoreResult<Option<FriendState>>;

    /// Replaces the metadata of `user`'s edge to `friend`; false when there is none.
    async fn friend_metadata_update(
        &self,
        user: Uuid,
        friend: Uuid,
        metadata: &str,
        now_us: i64,
    ) -> StoreResult<bool>;

    /// Stores a new group with its creator as superadmin (one member).
    /// Stores `group` with its `creator_id` as given (any id: Nakama's
    /// modules may name another user, or the system user) and `superadmin`
    /// as its first member. `Group(NameInUse)` on a taken name,
    /// `Group(UserNotFound)` for an unknown superadmin.
    async fn group_create(&self, group: &Group, superadmin: Uuid) -> StoreResult<()>;

    /// Applies `update` when `caller` (`None`: the server) is a superadmin
    /// or admin of the group; returns the group as stored after.
    async fn group_update(
        &self,
        id: Uuid,
        caller: Option<Uuid>,
        update: &GroupUpdate,
        now_us: i64,
    ) -> StoreResult<Group>;

    /// Deletes the group and its edges when `caller` (`None`: the server)
    /// is a superadmin; returns the members it had.
    async fn group_delete(&self, id: Uuid, caller: Option<Uuid>) -> StoreResult<Vec<Uuid>>;

    /// One membership change in ONE transaction that holds the group's row,
    /// decided by [`crate::group::plan`] on what is stored (`caller`: `None`
    /// for the server; for `Join` and `Leave` the caller is the one target).
    /// Returns the role changes it applied.
    async fn group_change(
        &self,
        id: Uuid,
        op: GroupOp,
        caller: Option<Uuid>,
        targets: &[Uuid],
        now_us: i64,
    ) -> StoreResult<Vec<RoleChange>>;

    /// Groups by id, in no particular order; missing ones are left out.
    async fn groups_get(&self, ids: &[Uuid]) -> StoreResult<Vec<Group>>;

    /// Up to `filter.limit` groups matching `filter`, in (name, id) order.
    async fn groups_list(&self, filter: &GroupFilter) -> StoreResult<Vec<Group>>;

    /// Up to `count` groups picked at random.
    async fn groups_random(&self, count: usize) -> StoreResult<Vec<Group>>;

    /// Up to `limit` users of a group (with `role` only, when given; with
    /// no role, every role but banned, as Nakama's `ListGroupUsers`) in
    /// (role, user id) order, strictly after `after`.
    async fn group_users(
        &self,
        group: Uuid,
        role: Option<GroupRole>,
        after: Option<RoleBound>,
        limit: usize,
    ) -> StoreResult<Vec<GroupUser>>;

    /// Up to `limit` groups of a user (with `role` only, when given) in
    /// (role, group id) order, strictly after `after`.
    async fn user_groups(
        &self,
        user: Uuid,
        role: Option<GroupRole>,
        after: Option<RoleBound>,
        limit: usize,
    ) -> StoreResult<Vec<UserGroup>>;

    /// A user's role in a group, if any.
    async fn group_role(&self, group: Uuid, user: Uuid) -> StoreResult<Option<GroupRole>>;

    /// Creates a leaderboard or tournament unless one with its id exists;
    /// returns the stored board and whether this call created it.
    async fn leaderboard_create(&self, board: &Leaderboard) -> StoreResult<(Leaderboard, bool)>;

    /// Deletes a board and all its records; false when there was none.
    async fn leaderboard_delete(&self, id: &str) -> StoreResult<bool>;

    /// Every board, for the cache the service keeps.
    async fn leaderboards_load(&self) -> StoreResult<Vec<Leaderboard>>;

    /// Turns a board's ranks on or off; false when there is no such board.
    async fn leaderboard_set_ranks(&self, id: &str, enable: bool) -> StoreResult<bool>;

    /// `(owner, score, subscore, num_score)` of every record of one period
    /// of a board, to build its rank index.
    async fn leaderboard_scores(&self, id: &str, expiry: i64) -> StoreResult<Vec<RankedScore>>;

    /// The records of these owners in one period of a board, in no order.
    async fn leaderboard_records_get(
        &self,
        id: &str,
        expiry: i64,
        owners: &[Uuid],
    ) -> StoreResult<Vec<LeaderboardRecord>>;

    /// Applies a score submission atomically: reads the owner's record,
    /// decides with [`crate::leaderboard::apply_write`] and writes, in one
    /// transaction; a new tournament record also counts against the
    /// tournament's `max_size` for its period. `now` stamps the row.
    async fn leaderboard_record_write(
        &self,
        w: &RecordWrite,
        now: i64,
    ) -> StoreResult<WriteOutcome>;

    /// Up to `limit` storage objects of `owner` in every collection, by
    /// collection and key (an account's export).
    async fn objects_of_owner(&self, owner: Uuid, limit: usize) -> StoreResult<Vec<StorageObject>>;

    /// Up to `limit` records of `owner` on every board and period, oldest
    /// first (an account's export).
    async fn records_of_owner(
        &self,
        owner: Uuid,
        limit: usize,
    ) -> StoreResult<Vec<LeaderboardRecord>>;

    /// Up to `limit` channel messages `sender` sent, oldest first (an
    /// account's export).
    async fn messages_of_sender(
        &self,
        sender: Uuid,
        limit: usize,
    ) -> StoreResult<Vec<ChannelMessage>>;

    /// Deletes an owner's record of one period; false when there was none.
    async fn leaderboard_record_delete(
        &self,
        id: &str,
        owner: Uuid,
        expiry: i64,
    ) -> StoreResult<bool>;

    /// Joins a tournament period: a record with score 0 unless the owner
    /// has one, counted against `max_size` in the same transaction.
    async fn tournament_join(&self, join: &TournamentJoin, now: i64) -> StoreResult<JoinOutcome>;

    /// Adds `count` attempts to an owner's record of one period; false when
    /// the owner has no record there.
    async fn tournament_add_attempt(
        &self,
        id: &str,
        owner: Uuid,
        expiry: i64,
        count: i64,
    ) -> StoreResult<bool>;

    /// Records that a board's schedule fired for the period ending at
    /// `period` (UNIX seconds), unless it already fired for it or a later
    /// one. True when this call recorded it: exactly one caller wins.
    async fn leaderboard_schedule_fired(
        &self,
        id: &str,
        kind: ScheduleKind,
        period: i64,
    ) -> StoreResult<bool>;

    /// Finishes pending writes and closes connections.
    /// Adds a console user; when its username exists, sets that user's ACL
    /// and MFA flag instead (Nakama's `AddUser`). Answers the stored user;
    /// `ConsoleUserTaken` when the email is another user's.
    async fn console_user_put(&self, user: &ConsoleUser) -> StoreResult<ConsoleUser>;

    /// A console user with its password hash, by id or by username or email.
    async fn console_user_get(&self, key: &ConsoleUserKey) -> StoreResult<Option<ConsoleUserAuth>>;

    /// Every console user but the root user (the nil id), by username.
    async fn console_users(&self) -> StoreResult<Vec<ConsoleUser>>;

    /// Changes one console user at `now_ms`; `None` when there is no such
    /// user (or, for a password with `unchanged_since`, it changed since).
    async fn console_user_change(
        &self,
        key: &ConsoleUserKey,
        change: &ConsoleUserChange,
        now_ms: i64,
    ) -> StoreResult<Option<ConsoleUser>>;

    /// Deletes a console user by username; whether it existed.
    async fn console_user_delete(&self, username: &str) -> StoreResult<bool>;

    /// Stores validated purchases, in one transaction. A transaction id
    /// already stored keeps its owner, product and times; it only gains a
    /// refund time (when the new one has one) and a new update time, and
    /// comes back with `seen_before`. Answers every purchase as stored.
    async fn purchases_upsert(
        &self,
        purchases: Vec<Purchase>,
        now_ms: i64,
    ) -> StoreResult<Vec<Purchase>>;

    /// The stored purchase of a transaction id.
    async fn purchase_get(&self, transaction_id: &str) -> StoreResult<Option<Purchase>>;

    /// Stored purchases, newest purchase first, after the query's cursor.
    async fn purchases_list(&self, query: &IapListQuery) -> StoreResult<Vec<Purchase>>;

    /// Stores validated subscriptions, in one transaction. An original
    /// transaction id already stored keeps its owner and purchase time and
    /// takes the new product, expiry, update time, and the new responses and
    /// refund time where they are set. Answers every subscription as stored.
    async fn subscriptions_upsert(
        &self,
        subscriptions: Vec<Subscription>,
        now_ms: i64,
    ) -> StoreResult<Vec<Subscription>>;

    /// A user's stored subscription to a product, the latest to expire.
    async fn subscription_get(
        &self,
        user: Uuid,
        product_id: &str,
    ) -> StoreResult<Option<Subscription>>;

    /// The stored subscription of an original transaction id, whoever owns
    /// it (a store's notification names only the transaction).
    async fn subscription_by_transaction(
        &self,
        original_transaction_id: &str,
    ) -> StoreResult<Option<Subscription>>;

    /// Stored subscriptions, newest purchase first, after the cursor.
    async fn subscriptions_list(&self, query: &IapListQuery) -> StoreResult<Vec<Subscription>>;

    /// Deletes what `what` names (the console's wipes), in one
    /// transaction; answers how many rows of its main table went (accounts
    /// or storage objects).
    async fn console_wipe(&self, what: Wipe) -> StoreResult<u64>;

    /// Deletes chat messages created before `before_us` (when given) and
    /// those with these ids (the console's `DeleteChannelMessages`), in one
    /// transaction; answers how many went.
    async fn channel_messages_delete(
        &self,
        before_us: Option<i64>,
        ids: &[Uuid],
    ) -> StoreResult<u64>;

    /// Appends one entry to the console's audit log.
    async fn audit_add(&self, entry: &AuditEntry) -> StoreResult<()>;

    /// Up to `limit + 1` audit log entries that pass the query's filter,
    /// from its position in its direction (newest first without one).
    async fn audit_list(&self, query: &AuditQuery) -> StoreResult<Vec<AuditEntry>>;

    /// Adds a note to an account (`write.create`), or changes the note of
    /// that account with that id. `None` when the account (or, for a
    /// change, its note) does not exist.
    async fn account_note_put(&self, write: &NoteWrite) -> StoreResult<Option<AccountNote>>;

    /// Up to `limit + 1` notes of an account, newest first, from `from`
    /// (that note included) when given.
    async fn account_notes(
        &self,
        user: Uuid,
        from: Option<NotesPosition>,
        limit: usize,
    ) -> StoreResult<Vec<AccountNote>>;

    /// Deletes one note of an account; whether it existed.
    async fn account_note_delete(&self, user: Uuid, id: Uuid) -> StoreResult<bool>;

    /// Adds an ACL template; `AclTemplateTaken` when its name is another's.
    async fn acl_template_add(&self, template: &AclTemplate) -> StoreResult<AclTemplate>;

    /// Sets the name, description, ACL and update time of the template with
    /// the same id; `None` when there is none.
    async fn acl_template_update(&self, template: &AclTemplate)
    -> StoreResult<Option<AclTemplate>>;

    /// Every ACL template, by name.
    async fn acl_templates(&self) -> StoreResult<Vec<AclTemplate>>;

    /// Deletes an ACL template; whether it existed.
    async fn acl_template_delete(&self, id: Uuid) -> StoreResult<bool>;

    /// The console's settings with these names (all of them when empty),
    /// by name.
    async fn console_settings(&self, names: &[String]) -> StoreResult<Vec<ConsoleSetting>>;

    /// Sets a stored setting's value at `now` (seconds); `None` when the
    /// setting is not stored.
    async fn console_setting_set(
        &self,
        name: &str,
        value: &str,
        now: i64,
    ) -> StoreResult<Option<ConsoleSetting>>;

    async fn close(&self);
}

/// [`Store::friends_list_into`] with a sink of a known type, given back as
/// that type (`Vec<Friend>` collects the friends).
pub async fn friends_into<S: FriendSink>(
    store: &(impl Store + ?Sized),
    user: Uuid,
    state: Option<FriendState>,
    after: Option<FriendBound>,
    limit: usize,
    sink: S,
) -> StoreResult<S> {
    let sink: Box<dyn Any> = store
        .friends_list_into(user, state, after, limit, Box::new(sink))
        .await?;
    sink.downcast()
        .map(|sink| *sink)
        .map_err(|_| StoreError::Backend("the friends listing gave back another sink".into()))
}
