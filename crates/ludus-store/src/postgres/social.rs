//! Friends and groups on PostgreSQL. A change is one transaction at READ
//! COMMITTED that locks what it decides on before reading it: a friends
//! change locks the rows of the caller and every target (in id order, so
//! two users befriending each other at once queue instead of deadlocking);
//! a membership change locks the group's row. Concurrent joins therefore
//! take turns on the group, each sees the previous one's `edge_count`, and
//! `max_count` holds exactly. `edge_count` columns are kept by triggers.
//!
//! The four listings (friends, group users, user groups, group search) are
//! prepared once per connection in `statements.rs`; the rest is prepared
//! per call (one extra round trip on paths that write anyway).

use std::collections::HashMap;
use std::sync::Arc;

use ludus_core::friend::{
    self, Edge, EdgeWrite, FriendBound, FriendOfFriend, FriendOp, FriendOutcome, FriendRef,
    FriendSink, FriendState,
};
use ludus_core::group::{
    self, Group, GroupFilter, GroupOp, GroupRefusal, GroupRole, GroupSnapshot, GroupUpdate,
    GroupUser, RoleBound, RoleChange, Target, UserGroup,
};
use ludus_core::model::{Provider, User};
use ludus_core::store::StoreError;
use tokio_postgres::{GenericClient, Row, Transaction};
use uuid::Uuid;

use super::errors::Failure;
use super::pool::Conn;
use super::profiles::{Listing, Profiles};
use super::statements::{GROUP_SELECT, Stmt, USER_COLUMNS, USER_SELECT};
use super::{JsonbText, user_from_row, user_ref_from_row};

const GROUP_COLUMNS: &str = GROUP_SELECT;
const GROUP_COLUMN_COUNT: usize = 12;

fn bad_state(n: i16) -> Failure {
    Failure::Fatal(StoreError::Backend(format!("state {n} out of range")))
}

fn friend_state_at(row: &Row, idx: usize) -> Result<FriendState, Failure> {
    let n: i16 = row.try_get(idx)?;
    FriendState::from_i64(n.into()).ok_or_else(|| bad_state(n))
}

fn role_at(row: &Row, idx: usize) -> Result<GroupRole, Failure> {
    let n: i16 = row.try_get(idx)?;
    GroupRole::from_i64(n.into()).ok_or_else(|| bad_state(n))
}

fn group_from_row(row: &Row) -> Result<Group, Failure> {
    Ok(Group {
        id: row.try_get(0)?,
        creator_id: row.try_get(1)?,
        name: row.try_get(2)?,
        description: row.try_get(3)?,
        avatar_url: row.try_get(4)?,
        lang_tag: row.try_get(5)?,
        metadata: row.try_get(6)?,
        open: row.try_get(7)?,
        edge_count: row.try_get(8)?,
        max_count: row.try_get(9)?,
        create_time: row.try_get(10)?,
        update_time: row.try_get(11)?,
    })
}

async fn edge(
    tx: &Transaction<'_>,
    source: Uuid,
    destination: Uuid,
) -> Result<Option<Edge>, Failure> {
    let row = tx
        .query_opt(
            "SELECT state, metadata::text FROM user_edge WHERE source_id = $1 AND destination_id = $2",
            &[&source, &destination],
        )
        .await?;
    row.map(|row| {
        Ok(Edge {
            state: friend_state_at(&row, 0)?,
            metadata: row.try_get(1)?,
        })
    })
    .transpose()
}

async fn write_edge(
    tx: &Transaction<'_>,
    source: Uuid,
    destination: Uuid,
    write: &EdgeWrite,
    now_us: i64,
) -> Result<(), Failure> {
    let now = now_us / 1_000_000;
    match write {
        EdgeWrite::Keep => {}
        EdgeWrite::Insert { state, metadata } => {
            tx.execute(
                "INSERT INTO user_edge (source_id, destination_id, state, position, update_time, metadata)
                 VALUES ($1, $2, $3, $4, $5, $6::text::jsonb)",
                &[&source, &destination, &(*state as i16), &now_us, &now, metadata],
            )
            .await?;
        }
        EdgeWrite::Update { state, metadata } => {
            tx.execute(
                "UPDATE user_edge SET state = $3, update_time = $4,
                        metadata = coalesce($5::text::jsonb, metadata)
                  WHERE source_id = $1 AND destination_id = $2",
                &[&source, &destination, &(*state as i16), &now, metadata],
            )
            .await?;
        }
        EdgeWrite::Delete => {
            tx.execute(
                "DELETE FROM user_edge WHERE source_id = $1 AND destination_id = $2",
                &[&source, &destination],
            )
            .await?;
        }
    }
    Ok(())
}

pub(super) async fn friends_change(
    tx: &Transaction<'_>,
    user: Uuid,
    op: FriendOp,
    targets: &[Uuid],
    metadata: &str,
    now_us: i64,
) -> Result<Vec<(Uuid, FriendOutcome)>, Failure> {
    let mut ids: Vec<Uuid> = targets.to_vec();
    ids.push(user);
    let rows = tx
        .query(
            "SELECT id FROM users WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE",
            &[&ids],
        )
        .await?;
    let existing: std::collections::HashSet<Uuid> = rows
        .iter()
        .map(|r| r.try_get(0))
        .collect::<Result<_, _>>()?;
    let mut outcomes = Vec::with_capacity(targets.len());
    for &target in targets {
        let mine = edge(tx, user, target).await?;
        let theirs = edge(tx, target, user).await?;
        let plan = friend::plan(
            op,
            existing.contains(&target),
            mine.as_ref(),
            theirs.as_ref(),
            metadata,
        );
        write_edge(tx, user, target, &plan.mine, now_us).await?;
        write_edge(tx, target, user, &plan.theirs, now_us).await?;
        outcomes.push((target, plan.outcome));
    }
    Ok(outcomes)
}

pub(super) async fn friends_import(
    tx: &Transaction<'_>,
    user: Uuid,
    provider: Provider,
    provider_ids: &[String],
    reset: bool,
    now_us: i64,
) -> Result<Vec<Uuid>, Failure> {
    if reset {
        tx.execute(
            "DELETE FROM user_edge WHERE (source_id = $1 OR destination_id = $1) AND state <> 3",
            &[&user],
        )
        .await?;
    }
    if provider_ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT id FROM users WHERE {} = ANY($1) AND id <> $2 ORDER BY id",
        provider.column()
    );
    let rows = tx.query(&sql, &[&provider_ids, &user]).await?;
    let friends: Vec<Uuid> = rows
        .iter()
        .map(|r| r.try_get(0))
        .collect::<Result<_, _>>()?;
    // Lock the caller and the friends in id order, as `friends_change` does.
    let mut lock = friends.clone();
    lock.push(user);
    tx.query(
        "SELECT id FROM users WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE",
        &[&lock],
    )
    .await?;
    let name = provider.name();
    let mut befriended = Vec::new();
    for friend in friends {
        let mine = edge(tx, user, friend).await?;
        let theirs = edge(tx, friend, user).await?;
        let plan = friend::import_plan(mine.as_ref(), theirs.as_ref(), name);
        write_edge(tx, user, friend, &plan.mine, now_us).await?;
        write_edge(tx, friend, user, &plan.theirs, now_us).await?;
        if plan.outcome == FriendOutcome::Accepted {
            befriended.push(friend);
        }
    }
    Ok(befriended)
}

/// One page of a user's friends, read as `profiles.rs` decides.
pub(super) enum FriendsPage {
    /// Full rows (`Stmt::FriendsList`).
    Full(Vec<Row>),
    /// The edges and each friend's row version (`Stmt::FriendEdges`), with
    /// the friends' profiles in the same order.
    Slim(Vec<Row>, Vec<Arc<User>>),
}

/// One page of `user`'s friends: edges only when `cache` mostly holds the
/// profiles listed lately, full rows otherwise (and when a friend vanished
/// between the edges and the profiles).
pub(super) async fn friends_page(
    conn: &Conn,
    cache: Option<&Profiles>,
    user: Uuid,
    state: Option<FriendState>,
    after: Option<FriendBound>,
    limit: usize,
) -> Result<FriendsPage, Failure> {
    let (s, p, id) = match after {
        Some(b) => (b.state as i16, b.position, b.id),
        None => (-1, i64::MIN, Uuid::nil()),
    };
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 6] = [
        &user,
        &state.map(|s| s as i16),
        &s,
        &p,
        &id,
        &(limit as i64),
    ];
    if let Some((rows, users)) =
        slim_read(conn, cache, Listing::Friends, Stmt::FriendEdges, &params).await?
    {
        return Ok(FriendsPage::Slim(rows, users));
    }
    let rows = conn
        .client
        .query(conn.stmt(Stmt::FriendsList), &params)
        .await?;
    Ok(FriendsPage::Full(rows))
}

/// Pushes each friend of `page` to `sink`, its strings borrowed from the
/// row or the cached profile; full rows also keep in `cache` the profiles
/// it lacked.
pub(super) fn push_friends(
    page: &FriendsPage,
    cache: Option<&Profiles>,
    sink: &mut dyn FriendSink,
) -> Result<(), Failure> {
    match page {
        FriendsPage::Slim(rows, users) => {
            for (row, user) in rows.iter().zip(users) {
                sink.push(&FriendRef {
                    user: user.view(),
                    state: friend_state_at(row, 2)?,
                    update_time: row.try_get(3)?,
                    metadata: row.try_get::<_, JsonbText<'_>>(4)?.0,
                    position: row.try_get(5)?,
                });
            }
        }
        FriendsPage::Full(rows) => {
            let mut hits = 0;
            for row in rows {
                let user = user_ref_from_row(row)?;
                if let Some(cache) = cache {
                    hits += usize::from(cache.check_in(&user, row.try_get(21)?));
                }
                sink.push(&FriendRef {
                    user,
                    state: friend_state_at(row, 17)?,
                    update_time: row.try_get(18)?,
                    metadata: row.try_get::<_, JsonbText<'_>>(19)?.0,
                    position: row.try_get(20)?,
                });
            }
            if let Some(cache) = cache {
                cache.record(Listing::Friends, hits, rows.len());
            }
        }
    }
    Ok(())
}

/// A slim read of `listing` when `cache` mostly holds what it listed
/// lately: the rows of `edges` (a user id, its row's `xmin`, then the
/// edge's columns) and their users' profiles in order. `None` means read
/// full rows: no cache, a cache that mostly misses, or a listed user gone
/// before its profile was fetched.
async fn slim_read(
    conn: &Conn,
    cache: Option<&Profiles>,
    listing: Listing,
    edges: Stmt,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<Option<(Vec<Row>, Vec<Arc<User>>)>, Failure> {
    let Some(cache) = cache.filter(|c| c.slim(listing)) else {
        return Ok(None);
    };
    let rows = conn.client.query(conn.stmt(edges), params).await?;
    let users = cached_profiles(conn, cache, listing, &rows).await?;
    Ok(users.map(|users| (rows, users)))
}

/// The profiles that slim rows (a user id, then its row's `xmin`) name, in
/// their order: from `cache` where it holds the row version listed, the
/// rest read (and kept) with one more statement. `None` when a listed user
/// is gone by then (deleted after the edges were read): the caller reads
/// full rows instead, so a page never comes back short.
pub(super) async fn cached_profiles(
    conn: &Conn,
    cache: &Profiles,
    listing: Listing,
    rows: &[Row],
) -> Result<Option<Vec<Arc<User>>>, Failure> {
    let mut users = Vec::with_capacity(rows.len());
    let mut missing = Vec::new();
    for row in rows {
        let id: Uuid = row.try_get(0)?;
        let found = cache.get(id, row.try_get(1)?);
        if found.is_none() {
            missing.push(id);
        }
        users.push(found);
    }
    cache.record(listing, rows.len() - missing.len(), rows.len());
    if !missing.is_empty() {
        let fetched = conn
            .client
            .query(conn.stmt(Stmt::ProfilesByIds), &[&missing])
            .await?;
        let mut by_id = HashMap::with_capacity(fetched.len());
        for row in &fetched {
            let user = Arc::new(user_from_row(row)?);
            cache.put(row.try_get(USER_COLUMNS)?, user.clone());
            by_id.insert(user.id, user);
        }
        for (slot, row) in users.iter_mut().zip(rows) {
            if slot.is_none() {
                *slot = by_id.get(&row.try_get::<_, Uuid>(0)?).cloned();
            }
        }
    }
    Ok(users.into_iter().collect())
}

pub(super) async fn friends_of_friends(
    client: &impl GenericClient,
    user: Uuid,
    after: Option<(Uuid, Uuid)>,
    limit: usize,
) -> Result<Vec<FriendOfFriend>, Failure> {
    let sql = format!(
        "SELECT {USER_SELECT}, f2.source_id
           FROM user_edge f1
           JOIN user_edge f2 ON f2.source_id = f1.destination_id AND f2.state = 0
           JOIN users u ON u.id = f2.destination_id
          WHERE f1.source_id = $1 AND f1.state = 0 AND f2.destination_id <> $1
            AND NOT EXISTS (SELECT 1 FROM user_edge m
                             WHERE m.source_id = $1 AND m.destination_id = f2.destination_id AND m.state = 0)
            AND (f2.source_id, f2.destination_id) > ($2, $3)
          ORDER BY f2.source_id, f2.destination_id LIMIT $4"
    );
    let (r, u) = after.unwrap_or((Uuid::nil(), Uuid::nil()));
    let rows = client
        .query(&sql, &[&user, &r, &u, &(limit as i64)])
        .await?;
    rows.iter()
        .map(|row| {
            Ok(FriendOfFriend {
                user: user_from_row(row)?,
                referrer: row.try_get(17)?,
            })
        })
        .collect()
}

pub(super) async fn friend_state(
    client: &impl GenericClient,
    user: Uuid,
    other: Uuid,
) -> Result<Option<FriendState>, Failure> {
    let row = client
        .query_opt(
            "SELECT state FROM user_edge WHERE source_id = $1 AND destination_id = $2",
            &[&user, &other],
        )
        .await?;
    row.map(|r| friend_state_at(&r, 0)).transpose()
}

pub(super) async fn friend_metadata_update(
    client: &impl GenericClient,
    user: Uuid,
    friend: Uuid,
    metadata: &str,
    now_us: i64,
) -> Result<bool, Failure> {
    let n = client
        .execute(
            "UPDATE user_edge SET metadata = $3::text::jsonb, update_time = $4
              WHERE source_id = $1 AND destination_id = $2",
            &[&user, &friend, &metadata, &(now_us / 1_000_000)],
        )
        .await?;
    Ok(n > 0)
}

/// The group's row, locked for the rest of the transaction.
async fn lock_group(tx: &Transaction<'_>, id: Uuid) -> Result<Group, Failure> {
    let sql = format!("SELECT {GROUP_COLUMNS} FROM groups g WHERE g.id = $1 FOR NO KEY UPDATE");
    let row = tx.query_opt(&sql, &[&id]).await?;
    match row {
        Some(row) => group_from_row(&row),
        None => Err(Failure::Fatal(GroupRefusal::NotFound.into())),
    }
}

pub(super) async fn group_role(
    client: &impl GenericClient,
    group: Uuid,
    user: Uuid,
) -> Result<Option<GroupRole>, Failure> {
    let row = client
        .query_opt(
            "SELECT state FROM group_edge WHERE group_id = $1 AND user_id = $2",
            &[&group, &user],
        )
        .await?;
    row.map(|r| role_at(&r, 0)).transpose()
}

/// The caller's role, or `Err(())` for the server (no caller).
async fn caller_role(
    tx: &Transaction<'_>,
    group: Uuid,
    caller: Option<Uuid>,
) -> Result<Result<Option<GroupRole>, ()>, Failure> {
    match caller {
        None => Ok(Err(())),
        Some(user) => Ok(Ok(group_role(tx, group, user).await?)),
    }
}

async fn set_role(
    tx: &Transaction<'_>,
    group: Uuid,
    change: &RoleChange,
    now: i64,
) -> Result<(), Failure> {
    match (change.from, change.to) {
        (_, None) => {
            tx.execute(
                "DELETE FROM group_edge WHERE group_id = $1 AND user_id = $2",
                &[&group, &change.user],
            )
            .await?
        }
        (None, Some(to)) => {
            tx.execute(
                "INSERT INTO group_edge (group_id, user_id, state, update_time) VALUES ($1, $2, $3, $4)",
                &[&group, &change.user, &(to as i16), &now],
            )
            .await?
        }
        (Some(_), Some(to)) => {
            tx.execute(
                "UPDATE group_edge SET state = $3, update_time = $4 WHERE group_id = $1 AND user_id = $2",
                &[&group, &change.user, &(to as i16), &now],
            )
            .await?
        }
    };
    Ok(())
}

pub(super) async fn group_create(
    tx: &Transaction<'_>,
    g: &Group,
    superadmin: Uuid,
) -> Result<(), Failure> {
    let member = tx
        .query_opt(
            "SELECT 1 FROM users WHERE id = $1 FOR KEY SHARE",
            &[&superadmin],
        )
        .await?;
    if member.is_none() {
        return Err(Failure::Fatal(GroupRefusal::UserNotFound.into()));
    }
    tx.execute(
        "INSERT INTO groups (id, creator_id, name, description, avatar_url, lang_tag, metadata,
                             open, max_count, create_time, update_time)
         VALUES ($1, $2, $3, $4, $5, $6, $7::text::jsonb, $8, $9, $10, $10)",
        &[
            &g.id,
            &g.creator_id,
            &g.name,
            &g.description,
            &g.avatar_url,
            &g.lang_tag,
            &g.metadata,
            &g.open,
            &g.max_count,
            &g.create_time,
        ],
    )
    .await?;
    set_role(
        tx,
        g.id,
        &RoleChange {
            user: superadmin,
            from: None,
            to: Some(GroupRole::Superadmin),
        },
        g.create_time,
    )
    .await
}

pub(super) async fn group_update(
    tx: &Transaction<'_>,
    id: Uuid,
    caller: Option<Uuid>,
    u: &GroupUpdate,
    now_us: i64,
) -> Result<Group, Failure> {
    let group = lock_group(tx, id).await?;
    if let Ok(role) = caller_role(tx, id, caller).await?
        && role.is_none_or(|r| !r.is_admin())
    {
        return Err(Failure::Fatal(GroupRefusal::PermissionDenied.into()));
    }
    if u.max_count.is_some_and(|m| m < group.edge_count) {
        return Err(Failure::Fatal(GroupRefusal::MaxCountBelowMembers.into()));
    }
    let sql = format!(
        "UPDATE groups g SET name = coalesce($2, name), description = coalesce($3, description),
                avatar_url = coalesce($4, avatar_url), lang_tag = coalesce($5, lang_tag),
                metadata = coalesce($6::text::jsonb, metadata), open = coalesce($7, open),
                max_count = coalesce($8, max_count), update_time = $9,
                creator_id = coalesce($10, creator_id)
          WHERE id = $1 RETURNING {GROUP_COLUMNS}"
    );
    let row = tx
        .query_one(
            &sql,
            &[
                &id,
                &u.name,
                &u.description,
                &u.avatar_url,
                &u.lang_tag,
                &u.metadata,
                &u.open,
                &u.max_count,
                &(now_us / 1_000_000),
                &u.creator_id,
            ],
        )
        .await?;
    group_from_row(&row)
}

pub(super) async fn group_delete(
    tx: &Transaction<'_>,
    id: Uuid,
    caller: Option<Uuid>,
) -> Result<Vec<Uuid>, Failure> {
    lock_group(tx, id).await?;
    if let Ok(role) = caller_role(tx, id, caller).await?
        && role != Some(GroupRole::Superadmin)
    {
        return Err(Failure::Fatal(GroupRefusal::PermissionDenied.into()));
    }
    let rows = tx
        .query(
            "SELECT user_id FROM group_edge WHERE group_id = $1 AND state <= 2",
            &[&id],
        )
        .await?;
    let members = rows
        .iter()
        .map(|r| r.try_get(0))
        .collect::<Result<Vec<Uuid>, _>>()?;
    tx.execute("DELETE FROM groups WHERE id = $1", &[&id])
        .await?;
    Ok(members)
}

pub(super) async fn group_change(
    tx: &Transaction<'_>,
    id: Uuid,
    op: GroupOp,
    caller: Option<Uuid>,
    targets: &[Uuid],
    now_us: i64,
) -> Result<Vec<RoleChange>, Failure> {
    let g = lock_group(tx, id).await?;
    let superadmins: i64 = tx
        .query_one(
            "SELECT count(*) FROM group_edge WHERE group_id = $1 AND state = 0",
            &[&id],
        )
        .await?
        .try_get(0)?;
    let snapshot = GroupSnapshot {
        open: g.open,
        edge_count: g.edge_count,
        max_count: g.max_count,
        superadmins,
    };
    let caller_role = caller_role(tx, id, caller).await?;
    let ids: Vec<Uuid> = targets.to_vec();
    let existing: std::collections::HashSet<Uuid> = tx
        .query(
            "SELECT id FROM users WHERE id = ANY($1) FOR KEY SHARE",
            &[&ids],
        )
        .await?
        .iter()
        .map(|r| r.try_get(0))
        .collect::<Result<_, _>>()?;
    let mut roles = std::collections::HashMap::new();
    for row in tx
        .query(
            "SELECT user_id, state FROM group_edge WHERE group_id = $1 AND user_id = ANY($2)",
            &[&id, &ids],
        )
        .await?
    {
        roles.insert(row.try_get::<_, Uuid>(0)?, role_at(&row, 1)?);
    }
    let targets: Vec<Target> = targets
        .iter()
        .map(|&user| Target {
            user,
            exists: existing.contains(&user),
            role: roles.get(&user).copied(),
        })
        .collect();
    let changes = group::plan(op, &snapshot, caller_role, caller, &targets)
        .map_err(|r| Failure::Fatal(r.into()))?;
    let now = now_us / 1_000_000;
    for c in &changes {
        set_role(tx, id, c, now).await?;
    }
    Ok(changes)
}

pub(super) async fn groups_get(
    client: &impl GenericClient,
    ids: &[Uuid],
) -> Result<Vec<Group>, Failure> {
    let sql = format!("SELECT {GROUP_COLUMNS} FROM groups g WHERE g.id = ANY($1)");
    let rows = client.query(&sql, &[&ids]).await?;
    rows.iter().map(group_from_row).collect()
}

pub(super) async fn groups_list(conn: &Conn, f: &GroupFilter) -> Result<Vec<Group>, Failure> {
    let (exact, prefix) = match f.name.as_deref() {
        Some(n) => match n.strip_suffix('%') {
            Some(p) => (None, Some(p)),
            None => (Some(n), None),
        },
        None => (None, None),
    };
    let (after_name, after_id) = f
        .after
        .clone()
        .unwrap_or_else(|| (String::new(), Uuid::nil()));
    let rows = match prefix {
        Some(prefix) => {
            let upper = format!("{prefix}\u{10FFFF}");
            conn.client
                .query(
                    conn.stmt(Stmt::GroupsByPrefix),
                    &[
                        &prefix,
                        &f.lang_tag,
                        &f.members,
                        &f.open,
                        &after_name,
                        &after_id,
                        &(f.limit as i64),
                        &upper,
                    ],
                )
                .await?
        }
        // An exact name or none: prefixes took the branch above.
        None => {
            conn.client
                .query(
                    conn.stmt(Stmt::GroupsList),
                    &[
                        &exact,
                        &f.lang_tag,
                        &f.members,
                        &f.open,
                        &after_name,
                        &after_id,
                        &(f.limit as i64),
                    ],
                )
                .await?
        }
    };
    rows.iter().map(group_from_row).collect()
}

pub(super) async fn groups_random(
    client: &impl GenericClient,
    count: usize,
) -> Result<Vec<Group>, Failure> {
    let sql = format!("SELECT {GROUP_COLUMNS} FROM groups g ORDER BY random() LIMIT $1");
    let rows = client.query(&sql, &[&(count as i64)]).await?;
    rows.iter().map(group_from_row).collect()
}

fn bound_params(after: Option<RoleBound>) -> (i16, Uuid) {
    after.map_or((-1, Uuid::nil()), |b| (b.role as i16, b.id))
}

/// One page of a group's users: full rows, or through `cache` (as
/// [`friends_page`] does) the edges and each user's row version, with the
/// profiles from the cache or one more statement.
pub(super) async fn group_users(
    conn: &Conn,
    cache: Option<&Profiles>,
    group: Uuid,
    role: Option<GroupRole>,
    after: Option<RoleBound>,
    limit: usize,
) -> Result<Vec<GroupUser>, Failure> {
    let (r, id) = bound_params(after);
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] =
        [&group, &role.map(|r| r as i16), &r, &id, &(limit as i64)];
    if let Some((rows, users)) = slim_read(
        conn,
        cache,
        Listing::GroupUsers,
        Stmt::GroupUserEdges,
        &params,
    )
    .await?
    {
        return rows
            .iter()
            .zip(users)
            .map(|(row, user)| {
                Ok(GroupUser {
                    user: Arc::unwrap_or_clone(user),
                    role: role_at(row, 2)?,
                })
            })
            .collect();
    }
    let rows = conn
        .client
        .query(conn.stmt(Stmt::GroupUsers), &params)
        .await?;
    let mut hits = 0;
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        let user = user_ref_from_row(row)?;
        if let Some(cache) = cache {
            hits += usize::from(cache.check_in(&user, row.try_get(18)?));
        }
        out.push(GroupUser {
            user: user.to_user(),
            role: role_at(row, 17)?,
        });
    }
    if let Some(cache) = cache {
        cache.record(Listing::GroupUsers, hits, rows.len());
    }
    Ok(out)
}

pub(super) async fn user_groups(
    conn: &Conn,
    user: Uuid,
    role: Option<GroupRole>,
    after: Option<RoleBound>,
    limit: usize,
) -> Result<Vec<UserGroup>, Failure> {
    let (r, id) = bound_params(after);
    let rows = conn
        .client
        .query(
            conn.stmt(Stmt::UserGroups),
            &[&user, &role.map(|r| r as i16), &r, &id, &(limit as i64)],
        )
        .await?;
    rows.iter()
        .map(|row| {
            Ok(UserGroup {
                group: group_from_row(row)?,
                role: role_at(row, GROUP_COLUMN_COUNT)?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use ludus_core::Store;

    use super::*;
    use crate::postgres::testing::{store, user};

    /// A friend deleted after the edges were read and before its profile
    /// is fetched: `cached_profiles` says so rather than leave the friend
    /// out (a page one short of its limit would end the listing early), and
    /// the next page read in slim mode no longer lists the friend.
    #[tokio::test]
    async fn a_friend_deleted_between_the_statements_is_not_dropped_silently() {
        let (store, _dir) = store().await;
        let ann = user(&store, "ann").await;
        let mut friends = Vec::new();
        for name in ["bob", "cat", "dan"] {
            friends.push(user(&store, name).await);
        }
        store
            .friends_change(ann, FriendOp::Add, &friends, "{}", 1)
            .await
            .unwrap();
        let cache = store.profiles.as_ref().unwrap();
        let conn = store.pool.get().await.unwrap();
        let edges = || async {
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 6] =
                [&ann, &None::<i16>, &-1i16, &i64::MIN, &Uuid::nil(), &100i64];
            conn.client
                .query(conn.stmt(Stmt::FriendEdges), &params)
                .await
                .unwrap()
        };

        let rows = edges().await;
        let users = cached_profiles(&conn, cache, Listing::Friends, &rows)
            .await
            .unwrap()
            .unwrap();
        let ids: Vec<Uuid> = rows.iter().map(|r| r.get(0)).collect();
        let listed: Vec<Uuid> = users.iter().map(|u| u.id).collect();
        assert_eq!(
            (ids.len(), &listed),
            (3, &ids),
            "profiles in the rows' order"
        );

        let rows = edges().await;
        assert!(store.delete_user(friends[1]).await.unwrap());
        // Held at the version the edges saw: the page is as of that read.
        let users = cached_profiles(&conn, cache, Listing::Friends, &rows)
            .await
            .unwrap();
        assert_eq!(users.map(|u| u.len()), Some(3));
        // Not held, and gone by the time it is fetched.
        let cold = Profiles::new(100, crate::postgres::profiles::MAX_AGE).unwrap();
        let users = cached_profiles(&conn, &cold, Listing::Friends, &rows)
            .await
            .unwrap();
        assert!(users.is_none(), "a vanished friend asks for full rows");

        for _ in 0..4 {
            cache.record(Listing::Friends, 1, 1);
        }
        match friends_page(&conn, Some(cache), ann, None, None, 100)
            .await
            .unwrap()
        {
            FriendsPage::Slim(rows, users) => {
                assert_eq!(rows.len(), 2);
                assert!(users.iter().all(|u| u.id != friends[1]));
            }
            FriendsPage::Full(_) => panic!("a cache that mostly hits reads edges only"),
        }
    }
}
