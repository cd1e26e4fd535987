//! `SocialService`: friends and groups as every caller uses them. REST
//! handlers, the Lua `nk` functions and native modules turn their arguments
//! into these calls, so input checks, limits, cursors, notifications and
//! `online` flags are the same whoever asks. The rules that decide a change
//! live in [`crate::friend`] and [`crate::group`] and run inside the store's
//! transaction; this layer checks input before and tells people after.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use uuid::Uuid;

use crate::accounts::AccountService;
use crate::error::ApiError;
use crate::friend::{
    self, Friend, FriendBound, FriendOfFriendPage, FriendOp, FriendOutcome, FriendPage, FriendRef,
    FriendSink, FriendState,
};
use crate::group::{
    self, Group, GroupFilter, GroupOp, GroupPage, GroupRole, GroupUpdate, GroupUserPage, RoleBound,
    RoleChange, UserGroupPage,
};
use crate::notification::{
    CODE_FRIEND_ACCEPT, CODE_FRIEND_JOIN_GAME, CODE_FRIEND_REMOVE, CODE_FRIEND_REQUEST,
    CODE_GROUP_ADD, CODE_GROUP_JOIN_REQUEST, Notification,
};
use crate::social_auth::{FriendSource, SocialCredential, SocialVerifier};
use crate::store::{self, Store, StoreError};

/// Most users or groups one call may name (Nakama bounds these by request
/// size only; a bound keeps one call one short transaction).
pub const MAX_IDS: usize = 1000;
/// Byte limits of group fields (the columns' sizes in PostgreSQL).
pub const MAX_GROUP_NAME: usize = 255;
pub const MAX_GROUP_DESCRIPTION: usize = 255;
pub const MAX_GROUP_AVATAR_URL: usize = 512;
pub const MAX_GROUP_LANG_TAG: usize = 18;

/// What the social graph needs from the realtime layer: who is online,
/// delivering notifications, and cutting a user off from a group's chat.
/// Implemented by `ludus_realtime::Realtime`.
#[async_trait]
pub trait SocialPresence: Send + Sync {
    /// Whether the user has a session on their status stream.
    fn is_online(&self, user: Uuid) -> bool;
    /// Stores the persistent notifications and pushes all of them to their
    /// users' sockets.
    async fn notify(&self, notifications: Vec<Notification>) -> Result<(), StoreError>;
    /// The user is no longer a member of the group: their sessions leave its
    /// chat channel now.
    fn left_group(&self, group: Uuid, user: Uuid);
    /// `user` blocked `other`: their direct conversation ends now.
    fn blocked(&self, user: Uuid, other: Uuid);
    /// Announces a membership change in the group's chat channel, as Nakama
    /// does: a stored message with one of the `chat::CODE_GROUP_*` codes,
    /// sent by the user it is about, content `{}`.
    async fn group_event(
        &self,
        group: Uuid,
        user: Uuid,
        username: String,
        code: i32,
    ) -> Result<(), StoreError>;
}

/// The sink of one friends page: passes on the first `room` friends with
/// their `online` flags and notes whether more followed.
struct FriendPaging<S> {
    sink: S,
    presence: Arc<dyn SocialPresence>,
    room: usize,
    last: Option<FriendBound>,
    more: bool,
}

impl<S: FriendSink> FriendSink for FriendPaging<S> {
    fn push(&mut self, friend: &FriendRef<'_>) {
        if self.room == 0 {
            self.more = true;
            return;
        }
        self.room -= 1;
        self.last = Some(friend.bound());
        let mut friend = *friend;
        friend.user.online = self.presence.is_online(friend.user.id);
        self.sink.push(&friend);
    }
}

/// A group as a caller asks for it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NewGroup {
    pub name: String,
    pub description: String,
    pub avatar_url: String,
    /// Empty: `en`.
    pub lang_tag: String,
    /// Empty: `{}`.
    pub metadata: String,
    pub open: bool,
    /// `None` or 0: [`group::DEFAULT_MAX_COUNT`].
    pub max_count: Option<i32>,
}

pub struct SocialService {
    store: Arc<dyn Store>,
    presence: Arc<dyn SocialPresence>,
}

fn parse_user_id(id: &str) -> Result<Uuid, ApiError> {
    match Uuid::parse_str(id) {
        Ok(u) if !u.is_nil() => Ok(u),
        _ => Err(ApiError::invalid(format!(
            "invalid user id {id:?}, it must be a uuid"
        ))),
    }
}

/// Parses a group id, as every group call needs.
pub fn parse_group_id(id: &str) -> Result<Uuid, ApiError> {
    if id.is_empty() {
        return Err(ApiError::invalid("group id must be set"));
    }
    match Uuid::parse_str(id) {
        Ok(u) if !u.is_nil() => Ok(u),
        _ => Err(ApiError::invalid(format!(
            "group id {id:?} is not a valid uuid"
        ))),
    }
}

fn json_object(field: &'static str, value: &str) -> Result<(), ApiError> {
    crate::stored_json::check_object(value, field)
}

fn limit(value: Option<i32>, default: usize, max: usize) -> Result<usize, ApiError> {
    match value {
        None => Ok(default),
        Some(l) if l >= 1 && l as usize <= max => Ok(l as usize),
        Some(_) => Err(ApiError::invalid(format!(
            "invalid limit - limit must be between 1 and {max}"
        ))),
    }
}

fn group_role(state: Option<i32>) -> Result<Option<GroupRole>, ApiError> {
    state
        .map(|s| {
            GroupRole::from_i64(s.into())
                .ok_or_else(|| ApiError::invalid("invalid state - state must be between 0 and 4"))
        })
        .transpose()
}

fn check_group_fields(
    name: Option<&str>,
    description: Option<&str>,
    avatar_url: Option<&str>,
    lang_tag: Option<&str>,
    metadata: Option<&str>,
) -> Result<(), ApiError> {
    use crate::validate::text_field;
    if let Some(name) = name {
        if name.is_empty() {
            return Err(ApiError::invalid("group name must be set"));
        }
        text_field("group name", name, MAX_GROUP_NAME)?;
    }
    if let Some(d) = description {
        text_field("group description", d, MAX_GROUP_DESCRIPTION)?;
    }
    if let Some(a) = avatar_url {
        text_field("group avatar url", a, MAX_GROUP_AVATAR_URL)?;
    }
    if let Some(l) = lang_tag {
        if l.is_empty() {
            return Err(ApiError::invalid("group language cannot be empty"));
        }
        text_field("group lang tag", l, MAX_GROUP_LANG_TAG)?;
    }
    if let Some(m) = metadata {
        json_object("group metadata", m)?;
    }
    Ok(())
}

fn notification(
    user: Uuid,
    sender: Uuid,
    code: i32,
    subject: String,
    content: String,
) -> Notification {
    Notification {
        id: crate::new_row_id(),
        user_id: user,
        subject,
        content,
        code,
        sender_id: sender,
        create_time_us: crate::unix_now_us(),
        persistent: true,
    }
}

impl SocialService {
    pub fn new(store: Arc<dyn Store>, presence: Arc<dyn SocialPresence>) -> SocialService {
        SocialService { store, presence }
    }

    async fn notify(&self, notifications: Vec<Notification>) {
        if notifications.is_empty() {
            return;
        }
        // The change stands either way, as in Nakama: a notice that failed to
        // store is logged, not reported to the caller.
        if let Err(e) = self.presence.notify(notifications).await {
            tracing::warn!(error = %e, "social notifications not delivered");
        }
    }

    /// The distinct users named by id or username, never `caller` (then
    /// `self_error`); unknown usernames are dropped, as in Nakama.
    async fn resolve_users(
        &self,
        caller: Uuid,
        ids: &[String],
        usernames: &[String],
        self_error: &'static str,
    ) -> Result<Vec<Uuid>, ApiError> {
        if ids.is_empty() && usernames.is_empty() {
            return Err(ApiError::invalid("specify at least one id or username"));
        }
        if ids.len() + usernames.len() > MAX_IDS {
            return Err(ApiError::invalid(format!(
                "too many users, at most {MAX_IDS} at once"
            )));
        }
        let mut out = BTreeSet::new();
        for id in ids {
            let id = parse_user_id(id)?;
            if id == caller {
                return Err(ApiError::invalid(self_error));
            }
            out.insert(id);
        }
        if usernames.iter().any(String::is_empty) {
            return Err(ApiError::invalid("username must not be empty"));
        }
        if !usernames.is_empty() {
            for u in self.store.get_users(&[], usernames).await? {
                if u.id == caller {
                    return Err(ApiError::invalid(self_error));
                }
                out.insert(u.id);
            }
        }
        if out.is_empty() {
            return Err(ApiError::invalid("no valid id or username was provided"));
        }
        Ok(out.into_iter().collect())
    }

    /// Invites each user, or accepts their invite; notifies them.
    pub async fn add_friends(
        &self,
        caller: Uuid,
        caller_username: &str,
        ids: &[String],
        usernames: &[String],
        metadata: Option<&str>,
    ) -> Result<(), ApiError> {
        let metadata = metadata.filter(|m| !m.is_empty()).unwrap_or("{}");
        json_object("metadata", metadata)?;
        let targets = self
            .resolve_users(caller, ids, usernames, "cannot add self as friend")
            .await?;
        let outcomes = self
            .store
            .friends_change(
                caller,
                FriendOp::Add,
                &targets,
                metadata,
                crate::unix_now_us(),
            )
            .await?;
        let content = serde_json::json!({ "username": caller_username }).to_string();
        let notifications = outcomes
            .into_iter()
            .filter_map(|(user, outcome)| {
                let (code, subject) = match outcome {
                    FriendOutcome::Invited => (
                        CODE_FRIEND_REQUEST,
                        format!("{caller_username} wants to add you as a friend"),
                    ),
                    FriendOutcome::Accepted => (
                        CODE_FRIEND_ACCEPT,
                        format!("{caller_username} accepted your friend request"),
                    ),
                    _ => return None,
                };
                Some(notification(user, caller, code, subject, content.clone()))
            })
            .collect();
        self.notify(notifications).await;
        Ok(())
    }

    /// Imports the caller's platform friends (`POST /v2/friend/facebook`,
    /// `/v2/friend/steam`, and `sync` when signing in or linking), as Nakama
    /// does: every player here who is the caller's friend there becomes
    /// their friend at once (an invite either way is settled), in one
    /// transaction, and hears of it (code -6). `reset` first removes all
    /// the caller's friendships and invites, never blocks. Answers how many
    /// became friends.
    pub async fn import_friends(
        &self,
        verifier: &SocialVerifier,
        caller: Uuid,
        caller_username: &str,
        source: &FriendSource,
        reset: bool,
    ) -> Result<usize, ApiError> {
        let (provider, ids) = verifier.friend_ids(source).await?;
        if ids.is_empty() && !reset {
            return Ok(0);
        }
        let befriended = self
            .store
            .friends_import(caller, provider, &ids, reset, crate::unix_now_us())
            .await?;
        let content = serde_json::json!({ "username": caller_username }).to_string();
        let count = befriended.len();
        let notifications = befriended
            .into_iter()
            .map(|friend| {
                notification(
                    friend,
                    caller,
                    CODE_FRIEND_JOIN_GAME,
                    "Your friend has just joined the game".to_owned(),
                    content.clone(),
                )
            })
            .collect();
        self.notify(notifications).await;
        Ok(count)
    }

    /// `sync` (REST) or `import_friends` (modules): the platform friends of
    /// `user`, who just signed in or linked with `credential`, are
    /// imported. As in Nakama, a failed import is logged and the sign-in or
    /// link stands.
    pub async fn sync_friends(
        &self,
        accounts: &AccountService,
        user: Uuid,
        username: &str,
        credential: &SocialCredential,
    ) {
        let imported = async {
            let Some(source) = accounts.friend_source(user, credential).await? else {
                return Ok(0);
            };
            self.import_friends(accounts.social(), user, username, &source, false)
                .await
        };
        match imported.await {
            Ok(count) => tracing::debug!(%user, count, "platform friends imported"),
            Err(e) => tracing::info!(%user, error = %e.message, "platform friends not imported"),
        }
    }

    /// Removes friends, cancels or rejects invites, lifts blocks.
    pub async fn delete_friends(
        &self,
        caller: Uuid,
        caller_username: &str,
        ids: &[String],
        usernames: &[String],
    ) -> Result<(), ApiError> {
        let targets = self
            .resolve_users(caller, ids, usernames, "cannot delete self")
            .await?;
        let outcomes = self
            .store
            .friends_change(
                caller,
                FriendOp::Delete,
                &targets,
                "{}",
                crate::unix_now_us(),
            )
            .await?;
        let content = serde_json::json!({ "username": caller_username }).to_string();
        let notifications = outcomes
            .into_iter()
            .filter(|(_, o)| *o == FriendOutcome::Removed)
            .map(|(user, _)| {
                notification(
                    user,
                    caller,
                    CODE_FRIEND_REMOVE,
                    format!("{caller_username} removed you as a friend"),
                    content.clone(),
                )
            })
            .collect();
        self.notify(notifications).await;
        Ok(())
    }

    /// Blocks users: their edge to the caller goes, they cannot invite.
    pub async fn block_friends(
        &self,
        caller: Uuid,
        ids: &[String],
        usernames: &[String],
    ) -> Result<(), ApiError> {
        let targets = self
            .resolve_users(caller, ids, usernames, "cannot block self")
            .await?;
        let outcomes = self
            .store
            .friends_change(
                caller,
                FriendOp::Block,
                &targets,
                "{}",
                crate::unix_now_us(),
            )
            .await?;
        for (other, outcome) in outcomes {
            if outcome != FriendOutcome::Unchanged {
                self.presence.blocked(caller, other);
            }
        }
        Ok(())
    }

    /// A page of the user's friends (Nakama's defaults: 1000 per page).
    pub async fn list_friends(
        &self,
        user: Uuid,
        limit_value: Option<i32>,
        state: Option<i32>,
        cursor: &str,
    ) -> Result<FriendPage, ApiError> {
        let (friends, cursor) = self
            .list_friends_into(user, limit_value, state, cursor, Vec::new())
            .await?;
        Ok(FriendPage { friends, cursor })
    }

    /// [`Self::list_friends`] pushing the page's friends (with their
    /// `online` flags) to `sink` as the store reads them; returns the sink
    /// and the page's cursor.
    pub async fn list_friends_into<S: FriendSink>(
        &self,
        user: Uuid,
        limit_value: Option<i32>,
        state: Option<i32>,
        cursor: &str,
        sink: S,
    ) -> Result<(S, Option<String>), ApiError> {
        let limit = limit(limit_value, friend::MAX_LIST_LIMIT, friend::MAX_LIST_LIMIT)?;
        let state = state
            .map(|s| {
                FriendState::from_i64(s.into()).ok_or_else(|| {
                    ApiError::invalid("invalid state - state must be between 0 and 3")
                })
            })
            .transpose()?;
        let after = match cursor {
            "" => None,
            c => Some(friend::resume(user, state, c)?),
        };
        let page = FriendPaging {
            sink,
            presence: Arc::clone(&self.presence),
            room: limit,
            last: None,
            more: false,
        };
        // One row past the page says whether there is a next one.
        let page = store::friends_into(&*self.store, user, state, after, limit + 1, page).await?;
        let cursor = match (page.more, page.last) {
            (true, Some(last)) => Some(friend::cursor_after(user, state, &last)),
            _ => None,
        };
        Ok((page.sink, cursor))
    }

    /// The user's edges to those of `others` it has one with (any state),
    /// as Nakama's `nk.users_get_friend_status` answers them, in listing
    /// order. Reads the user's friend list page by page, stopping once
    /// every one of `others` was found.
    pub async fn friend_status(
        &self,
        user: Uuid,
        others: &[Uuid],
    ) -> Result<Vec<Friend>, ApiError> {
        let mut wanted: std::collections::HashSet<Uuid> = others.iter().copied().collect();
        let mut found = Vec::new();
        let mut cursor = String::new();
        while !wanted.is_empty() {
            let page = self.list_friends(user, None, None, &cursor).await?;
            for f in page.friends {
                if wanted.remove(&f.user.id) {
                    found.push(f);
                }
            }
            match page.cursor {
                Some(next) => cursor = next,
                None => break,
            }
        }
        Ok(found)
    }

    /// A page of the friends of the user's friends; `max` is the caller's
    /// bound on `limit` (REST: [`friend::MAX_FOF_LIMIT`], 10 by default).
    pub async fn friends_of_friends(
        &self,
        user: Uuid,
        limit_value: Option<i32>,
        max: usize,
        cursor: &str,
    ) -> Result<FriendOfFriendPage, ApiError> {
        let limit = limit(limit_value, 10.min(max), max)?;
        let after = match cursor {
            "" => None,
            c => Some(friend::fof_resume(user, c)?),
        };
        let mut list = self
            .store
            .friends_of_friends(user, after, limit + 1)
            .await?;
        let cursor = if list.len() > limit {
            list.truncate(limit);
            list.last().map(|f| friend::fof_cursor_after(user, f))
        } else {
            None
        };
        for f in &mut list {
            f.user.online = self.presence.is_online(f.user.id);
        }
        Ok(FriendOfFriendPage {
            friends_of_friends: list,
            cursor,
        })
    }

    /// Replaces the metadata of the user's edge to `friend`.
    pub async fn friend_metadata_update(
        &self,
        user: Uuid,
        friend: Uuid,
        metadata: &str,
    ) -> Result<(), ApiError> {
        json_object("metadata", metadata)?;
        if !self
            .store
            .friend_metadata_update(user, friend, metadata, crate::unix_now_us())
            .await?
        {
            return Err(ApiError::not_found("no friend edge to that user"));
        }
        Ok(())
    }

    /// Creates a group with `superadmin` as its first member and `creator`
    /// as its recorded creator: the same user for a client's call; a module
    /// may name another one, or the system user (as Nakama's `group_create`).
    pub async fn create_group(
        &self,
        superadmin: Uuid,
        creator: Uuid,
        g: NewGroup,
    ) -> Result<Group, ApiError> {
        let lang_tag = if g.lang_tag.is_empty() {
            "en".to_owned()
        } else {
            g.lang_tag
        };
        let metadata = if g.metadata.is_empty() {
            "{}".to_owned()
        } else {
            g.metadata
        };
        check_group_fields(
            Some(&g.name),
            Some(&g.description),
            Some(&g.avatar_url),
            Some(&lang_tag),
            Some(&metadata),
        )?;
        let max_count = match g.max_count {
            None | Some(0) => group::DEFAULT_MAX_COUNT,
            Some(n) if n >= 1 => n,
            Some(_) => return Err(ApiError::invalid("group max count must be >= 1 when set")),
        };
        let now = crate::unix_now();
        let group = Group {
            id: crate::new_row_id(),
            creator_id: creator,
            name: g.name,
            description: g.description,
            avatar_url: g.avatar_url,
            lang_tag,
            metadata,
            open: g.open,
            edge_count: 1,
            max_count,
            create_time: now,
            update_time: now,
        };
        self.store.group_create(&group, superadmin).await?;
        Ok(group)
    }

    /// Changes a group's fields; `caller` `None` is the server.
    pub async fn update_group(
        &self,
        caller: Option<Uuid>,
        id: Uuid,
        update: GroupUpdate,
    ) -> Result<Group, ApiError> {
        if update.is_empty() {
            return Err(ApiError::invalid("specify at least one field to update"));
        }
        check_group_fields(
            update.name.as_deref(),
            update.description.as_deref(),
            update.avatar_url.as_deref(),
            update.lang_tag.as_deref(),
            update.metadata.as_deref(),
        )?;
        if update.max_count.is_some_and(|m| m < 1) {
            return Err(ApiError::invalid("group max count must be >= 1 when set"));
        }
        Ok(self
            .store
            .group_update(id, caller, &update, crate::unix_now_us())
            .await?)
    }

    /// Deletes a group (superadmins only); its members leave its chat.
    pub async fn delete_group(&self, caller: Option<Uuid>, id: Uuid) -> Result<(), ApiError> {
        let members = self.store.group_delete(id, caller).await?;
        for m in members {
            self.presence.left_group(id, m);
        }
        Ok(())
    }

    async fn change(
        &self,
        id: Uuid,
        op: GroupOp,
        caller: Option<Uuid>,
        targets: &[Uuid],
    ) -> Result<Vec<RoleChange>, ApiError> {
        if targets.len() > MAX_IDS {
            return Err(ApiError::invalid(format!(
                "too many users, at most {MAX_IDS} at once"
            )));
        }
        let changes = self
            .store
            .group_change(id, op, caller, targets, crate::unix_now_us())
            .await?;
        self.announce(id, op, &changes).await;
        for c in &changes {
            let was = c.from.is_some_and(GroupRole::is_member);
            let is = c.to.is_some_and(GroupRole::is_member);
            if was && !is {
                self.presence.left_group(id, c.user);
            }
        }
        Ok(changes)
    }

    /// The group channel's messages about `changes`, as Nakama sends them:
    /// none for join requests or for rejecting one.
    async fn announce(&self, id: Uuid, op: GroupOp, changes: &[RoleChange]) {
        use crate::chat::*;
        let about: Vec<(Uuid, i32)> = changes
            .iter()
            .filter_map(|c| {
                let member = |r: Option<GroupRole>| r.is_some_and(GroupRole::is_member);
                let code = match op {
                    GroupOp::Join if member(c.to) => CODE_GROUP_JOIN,
                    GroupOp::Add => CODE_GROUP_ADD,
                    GroupOp::Leave if member(c.from) => CODE_GROUP_LEAVE,
                    GroupOp::Kick if member(c.from) => CODE_GROUP_KICK,
                    GroupOp::Promote => CODE_GROUP_PROMOTE,
                    GroupOp::Ban => CODE_GROUP_BAN,
                    GroupOp::Demote => CODE_GROUP_DEMOTE,
                    _ => return None,
                };
                Some((c.user, code))
            })
            .collect();
        if about.is_empty() {
            return;
        }
        let ids: Vec<Uuid> = about.iter().map(|(u, _)| *u).collect();
        let names: std::collections::HashMap<Uuid, String> =
            match self.store.get_users(&ids, &[]).await {
                Ok(users) => users.into_iter().map(|u| (u.id, u.username)).collect(),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot name users for group channel messages");
                    Default::default()
                }
            };
        for (user, code) in about {
            let username = names.get(&user).cloned().unwrap_or_default();
            // The change stands either way; a lost announcement is logged.
            if let Err(e) = self.presence.group_event(id, user, username, code).await {
                tracing::warn!(error = %e, group = %id, "group channel message not stored");
            }
        }
    }

    /// Joins an open group, or asks to join a closed one (admins are told).
    pub async fn join_group(&self, user: Uuid, username: &str, id: Uuid) -> Result<(), ApiError> {
        let changes = self.change(id, GroupOp::Join, Some(user), &[user]).await?;
        if changes.iter().any(|c| c.to == Some(GroupRole::JoinRequest)) {
            let content =
                serde_json::json!({ "group_id": id.to_string(), "username": username }).to_string();
            let mut admins = Vec::new();
            for role in [GroupRole::Superadmin, GroupRole::Admin] {
                admins.extend(
                    self.store
                        .group_users(id, Some(role), None, usize::MAX >> 1)
                        .await?,
                );
            }
            let notifications = admins
                .into_iter()
                .map(|a| {
                    notification(
                        a.user.id,
                        user,
                        CODE_GROUP_JOIN_REQUEST,
                        format!("User {username} wants to join your group"),
                        content.clone(),
                    )
                })
                .collect();
            self.notify(notifications).await;
        }
        Ok(())
    }

    /// Leaves a group (the last superadmin cannot).
    pub async fn leave_group(&self, user: Uuid, id: Uuid) -> Result<(), ApiError> {
        self.change(id, GroupOp::Leave, Some(user), &[user]).await?;
        Ok(())
    }

    /// Adds users (or accepts their requests); each added user is told.
    pub async fn add_group_users(
        &self,
        caller: Option<Uuid>,
        id: Uuid,
        users: &[Uuid],
    ) -> Result<(), ApiError> {
        let changes = self.change(id, GroupOp::Add, caller, users).await?;
        if changes.is_empty() {
            return Ok(());
        }
        let name = self
            .store
            .groups_get(&[id])
            .await?
            .pop()
            .map(|g| g.name)
            .unwrap_or_default();
        let content = serde_json::json!({ "group_id": id.to_string(), "name": name }).to_string();
        let notifications = changes
            .iter()
            .map(|c| {
                notification(
                    c.user,
                    caller.unwrap_or(Uuid::nil()),
                    CODE_GROUP_ADD,
                    format!("You've been added to group {name}"),
                    content.clone(),
                )
            })
            .collect();
        self.notify(notifications).await;
        Ok(())
    }

    pub async fn kick_group_users(
        &self,
        caller: Option<Uuid>,
        id: Uuid,
        users: &[Uuid],
    ) -> Result<(), ApiError> {
        self.change(id, GroupOp::Kick, caller, users).await?;
        Ok(())
    }

    pub async fn ban_group_users(
        &self,
        caller: Option<Uuid>,
        id: Uuid,
        users: &[Uuid],
    ) -> Result<(), ApiError> {
        self.change(id, GroupOp::Ban, caller, users).await?;
        Ok(())
    }

    pub async fn promote_group_users(
        &self,
        caller: Option<Uuid>,
        id: Uuid,
        users: &[Uuid],
    ) -> Result<(), ApiError> {
        self.change(id, GroupOp::Promote, caller, users).await?;
        Ok(())
    }

    pub async fn demote_group_users(
        &self,
        caller: Option<Uuid>,
        id: Uuid,
        users: &[Uuid],
    ) -> Result<(), ApiError> {
        self.change(id, GroupOp::Demote, caller, users).await?;
        Ok(())
    }

    /// A page of a group's users (100 by default); `max` is the caller's
    /// bound on `limit` (REST: [`group::MAX_LIST_LIMIT`], Lua: 10,000).
    pub async fn list_group_users(
        &self,
        id: Uuid,
        limit_value: Option<i32>,
        max: usize,
        state: Option<i32>,
        cursor: &str,
    ) -> Result<GroupUserPage, ApiError> {
        let limit = limit(limit_value, group::MAX_LIST_LIMIT.min(max), max)?;
        let role = group_role(state)?;
        let after = match cursor {
            "" => None,
            c => Some(group::role_resume(id, role, c)?),
        };
        if self.store.groups_get(&[id]).await?.is_empty() {
            return Err(group::GroupRefusal::NotFound.into());
        }
        let mut users = self.store.group_users(id, role, after, limit + 1).await?;
        let cursor = if users.len() > limit {
            users.truncate(limit);
            users.last().map(|u| {
                group::role_cursor(
                    id,
                    role,
                    RoleBound {
                        role: u.role,
                        id: u.user.id,
                    },
                )
            })
        } else {
            None
        };
        for u in &mut users {
            u.user.online = self.presence.is_online(u.user.id);
        }
        Ok(GroupUserPage { users, cursor })
    }

    /// A page of a user's groups (Nakama: 100 by default and at most).
    pub async fn list_user_groups(
        &self,
        user: Uuid,
        limit_value: Option<i32>,
        state: Option<i32>,
        cursor: &str,
    ) -> Result<UserGroupPage, ApiError> {
        let limit = limit(limit_value, group::MAX_LIST_LIMIT, group::MAX_LIST_LIMIT)?;
        let role = group_role(state)?;
        let after = match cursor {
            "" => None,
            c => Some(group::role_resume(user, role, c)?),
        };
        let mut groups = self.store.user_groups(user, role, after, limit + 1).await?;
        let cursor = if groups.len() > limit {
            groups.truncate(limit);
            groups.last().map(|g| {
                group::role_cursor(
                    user,
                    role,
                    RoleBound {
                        role: g.role,
                        id: g.group.id,
                    },
                )
            })
        } else {
            None
        };
        Ok(UserGroupPage { groups, cursor })
    }

    /// Searches groups (Nakama: 1 by default, at most 100). A name ending
    /// in `%` is a prefix.
    #[allow(clippy::too_many_arguments)]
    pub async fn list_groups(
        &self,
        name: &str,
        lang_tag: &str,
        members: Option<i32>,
        open: Option<bool>,
        limit_value: Option<i32>,
        cursor: &str,
    ) -> Result<GroupPage, ApiError> {
        let limit = limit(limit_value, 1, group::MAX_LIST_LIMIT)?;
        let after = match cursor {
            "" => None,
            c => Some(group::list_resume(c)?),
        };
        let name = name.trim_start_matches(['%', ' ']);
        let filter = GroupFilter {
            name: (!name.is_empty()).then(|| name.to_owned()),
            lang_tag: (!lang_tag.is_empty()).then(|| lang_tag.to_owned()),
            members,
            open,
            limit: limit + 1,
            after,
        };
        let mut groups = self.store.groups_list(&filter).await?;
        let cursor = if groups.len() > limit {
            groups.truncate(limit);
            groups.last().map(group::list_cursor)
        } else {
            None
        };
        Ok(GroupPage { groups, cursor })
    }

    /// Groups by id; unknown ids are left out.
    pub async fn get_groups(&self, ids: &[Uuid]) -> Result<Vec<Group>, ApiError> {
        if ids.len() > MAX_IDS {
            return Err(ApiError::invalid(format!(
                "too many groups, at most {MAX_IDS} at once"
            )));
        }
        Ok(self.store.groups_get(ids).await?)
    }

    /// Up to `count` random groups.
    pub async fn random_groups(&self, count: usize) -> Result<Vec<Group>, ApiError> {
        if count > group::MAX_LIST_LIMIT {
            return Err(ApiError::invalid(format!(
                "count must be at most {}",
                group::MAX_LIST_LIMIT
            )));
        }
        Ok(self.store.groups_random(count).await?)
    }

    /// A user's role in a group, if any (group chat asks this).
    pub async fn group_role(&self, group: Uuid, user: Uuid) -> Result<Option<GroupRole>, ApiError> {
        Ok(self.store.group_role(group, user).await?)
    }
}
