//! Friends and groups on SQLite. Every change runs as one write job on the
//! writer thread (one savepoint of the group commit): it reads the edges or
//! the group it decides on, asks `ludus_core`'s rules, then writes. The
//! writer is the only writer, so nothing can change between the read and
//! the write, which is what keeps a group's `max_count` exact under
//! concurrent joins. `edge_count` columns are kept by triggers.

use ludus_core::friend::{
    self, Edge, EdgeWrite, FriendBound, FriendOfFriend, FriendOp, FriendOutcome, FriendRef,
    FriendSink, FriendState,
};
use ludus_core::group::{
    self, Group, GroupFilter, GroupOp, GroupRefusal, GroupRole, GroupSnapshot, GroupUpdate,
    GroupUser, RoleBound, RoleChange, Target, UserGroup,
};
use ludus_core::model::Provider;
use ludus_core::store::{StoreError, StoreResult};
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension as _, Row, params};
use uuid::Uuid;

use super::queries::{
    IdText, USER_SELECT, map_err, user_columns, user_from_row, user_ref_from_row, uuid_at,
};

const GROUP_COLUMNS: &str = "g.id, g.creator_id, g.name, g.description, g.avatar_url, g.lang_tag, \
     g.metadata, g.open, g.edge_count, g.max_count, g.create_time, g.update_time";
const GROUP_COLUMN_COUNT: usize = 12;

fn bad_state(idx: usize, value: i64) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        idx,
        Type::Integer,
        format!("state {value} out of range").into(),
    )
}

fn friend_state_at(row: &Row<'_>, idx: usize) -> rusqlite::Result<FriendState> {
    let n: i64 = row.get(idx)?;
    FriendState::from_i64(n).ok_or_else(|| bad_state(idx, n))
}

fn role_at(row: &Row<'_>, idx: usize) -> rusqlite::Result<GroupRole> {
    let n: i64 = row.get(idx)?;
    GroupRole::from_i64(n).ok_or_else(|| bad_state(idx, n))
}

fn group_from_row(row: &Row<'_>) -> rusqlite::Result<Group> {
    Ok(Group {
        id: uuid_at(row, 0)?,
        creator_id: uuid_at(row, 1)?,
        name: row.get(2)?,
        description: row.get(3)?,
        avatar_url: row.get(4)?,
        lang_tag: row.get(5)?,
        metadata: row.get(6)?,
        open: row.get::<_, i64>(7)? != 0,
        edge_count: row.get(8)?,
        max_count: row.get(9)?,
        create_time: row.get(10)?,
        update_time: row.get(11)?,
    })
}

fn user_exists(conn: &Connection, id: Uuid) -> StoreResult<bool> {
    let mut stmt = conn
        .prepare_cached("SELECT 1 FROM users WHERE id = ?1")
        .map_err(map_err)?;
    stmt.exists([IdText::new(id)]).map_err(map_err)
}

fn edge(conn: &Connection, source: Uuid, destination: Uuid) -> StoreResult<Option<Edge>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT state, metadata FROM user_edge WHERE source_id = ?1 AND destination_id = ?2",
        )
        .map_err(map_err)?;
    stmt.query_row(
        params![IdText::new(source), IdText::new(destination)],
        |row| {
            Ok(Edge {
                state: friend_state_at(row, 0)?,
                metadata: row.get(1)?,
            })
        },
    )
    .optional()
    .map_err(map_err)
}

fn write_edge(
    conn: &Connection,
    source: Uuid,
    destination: Uuid,
    write: &EdgeWrite,
    now_us: i64,
) -> StoreResult<()> {
    let (s, d) = (IdText::new(source), IdText::new(destination));
    let now = now_us / 1_000_000;
    let result = match write {
        EdgeWrite::Keep => return Ok(()),
        EdgeWrite::Insert { state, metadata } => conn
            .prepare_cached(
                "INSERT INTO user_edge (source_id, destination_id, state, position, update_time, metadata)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .and_then(|mut st| st.execute(params![s, d, state.as_i64(), now_us, now, metadata])),
        EdgeWrite::Update { state, metadata } => conn
            .prepare_cached(
                "UPDATE user_edge SET state = ?3, update_time = ?4, metadata = coalesce(?5, metadata)
                  WHERE source_id = ?1 AND destination_id = ?2",
            )
            .and_then(|mut st| st.execute(params![s, d, state.as_i64(), now, metadata])),
        EdgeWrite::Delete => conn
            .prepare_cached("DELETE FROM user_edge WHERE source_id = ?1 AND destination_id = ?2")
            .and_then(|mut st| st.execute(params![s, d])),
    };
    result.map(drop).map_err(map_err)
}

pub(super) fn friend_state(
    conn: &Connection,
    user: Uuid,
    other: Uuid,
) -> StoreResult<Option<FriendState>> {
    Ok(edge(conn, user, other)?.map(|e| e.state))
}

pub(super) fn friends_change(
    conn: &Connection,
    user: Uuid,
    op: FriendOp,
    targets: &[Uuid],
    metadata: &str,
    now_us: i64,
) -> StoreResult<Vec<(Uuid, FriendOutcome)>> {
    let mut outcomes = Vec::with_capacity(targets.len());
    for &target in targets {
        let exists = user_exists(conn, target)?;
        let mine = edge(conn, user, target)?;
        let theirs = edge(conn, target, user)?;
        let plan = friend::plan(op, exists, mine.as_ref(), theirs.as_ref(), metadata);
        write_edge(conn, user, target, &plan.mine, now_us)?;
        write_edge(conn, target, user, &plan.theirs, now_us)?;
        outcomes.push((target, plan.outcome));
    }
    Ok(outcomes)
}

pub(super) fn friends_import(
    conn: &Connection,
    user: Uuid,
    provider: Provider,
    provider_ids: &[String],
    reset: bool,
    now_us: i64,
) -> StoreResult<Vec<Uuid>> {
    if reset {
        conn.prepare_cached(
            "DELETE FROM user_edge WHERE (source_id = ?1 OR destination_id = ?1) AND state <> 3",
        )
        .and_then(|mut st| st.execute([IdText::new(user)]))
        .map_err(map_err)?;
    }
    let sql = format!("SELECT id FROM users WHERE {} = ?1", provider.column());
    let mut find = conn.prepare_cached(&sql).map_err(map_err)?;
    let mut friends = std::collections::BTreeSet::new();
    for id in provider_ids {
        if let Some(found) = find
            .query_row([id], |row| uuid_at(row, 0))
            .optional()
            .map_err(map_err)?
            && found != user
        {
            friends.insert(found);
        }
    }
    let name = provider.name();
    let mut befriended = Vec::new();
    for friend in friends {
        let mine = edge(conn, user, friend)?;
        let theirs = edge(conn, friend, user)?;
        let plan = friend::import_plan(mine.as_ref(), theirs.as_ref(), name);
        write_edge(conn, user, friend, &plan.mine, now_us)?;
        write_edge(conn, friend, user, &plan.theirs, now_us)?;
        if plan.outcome == FriendOutcome::Accepted {
            befriended.push(friend);
        }
    }
    Ok(befriended)
}

/// The friends listing with only the clauses it needs: `?2 IS NULL OR …`
/// guards cost a test per row and keep the planner from seeing the plain
/// walk of `user_edge_list_idx`. Every variant takes the same six
/// parameters (user, state, bound state, bound position, bound id, limit).
///
/// The limit is `+?6`, not `?6`: SQLite (since 3.47) plans a bare
/// parameter in `LIMIT` with its bound value and so marks the statement
/// stale whenever that parameter is bound again, which re-prepared it on
/// every call (2 % of a 1,000-friend answer). The unary plus keeps the
/// value out of the plan.
macro_rules! friends_list_sql {
    ($($clause:literal),*) => {
        concat!(
            "SELECT ",
            user_columns!(),
            ", e.state, e.update_time, e.metadata, e.position
               FROM user_edge e JOIN users u ON u.id = e.destination_id
              WHERE e.source_id = ?1",
            $($clause,)*
            " ORDER BY e.state, e.position, e.destination_id LIMIT +?6"
        )
    };
}

pub(super) fn friends_list_into(
    conn: &Connection,
    user: Uuid,
    state: Option<FriendState>,
    after: Option<FriendBound>,
    limit: usize,
    sink: &mut dyn FriendSink,
) -> StoreResult<()> {
    let sql = match (state.is_some(), after.is_some()) {
        (false, false) => friends_list_sql!(),
        (true, false) => friends_list_sql!(" AND e.state = ?2"),
        (false, true) => {
            friends_list_sql!(" AND (e.state, e.position, e.destination_id) > (?3, ?4, ?5)")
        }
        (true, true) => friends_list_sql!(
            " AND e.state = ?2",
            " AND (e.state, e.position, e.destination_id) > (?3, ?4, ?5)"
        ),
    };
    let mut stmt = conn.prepare_cached(sql).map_err(map_err)?;
    let (s, p, id) = match after {
        Some(b) => (b.state.as_i64(), b.position, IdText::new(b.id)),
        None => (-1, i64::MIN, IdText::new(Uuid::nil())),
    };
    let mut rows = stmt
        .query(params![
            IdText::new(user),
            state.map(FriendState::as_i64),
            s,
            p,
            id,
            limit as i64
        ])
        .map_err(map_err)?;
    while let Some(row) = rows.next().map_err(map_err)? {
        let friend = FriendRef {
            user: user_ref_from_row(row).map_err(map_err)?,
            state: friend_state_at(row, 17).map_err(map_err)?,
            update_time: row.get(18).map_err(map_err)?,
            metadata: row
                .get_ref(19)
                .and_then(|v| Ok(v.as_str()?))
                .map_err(map_err)?,
            position: row.get(20).map_err(map_err)?,
        };
        sink.push(&friend);
    }
    Ok(())
}

pub(super) fn friends_of_friends(
    conn: &Connection,
    user: Uuid,
    after: Option<(Uuid, Uuid)>,
    limit: usize,
) -> StoreResult<Vec<FriendOfFriend>> {
    let sql = format!(
        "SELECT {USER_SELECT}, f2.source_id
           FROM user_edge f1
           JOIN user_edge f2 ON f2.source_id = f1.destination_id AND f2.state = 0
           JOIN users u ON u.id = f2.destination_id
          WHERE f1.source_id = ?1 AND f1.state = 0 AND f2.destination_id <> ?1
            AND NOT EXISTS (SELECT 1 FROM user_edge m
                             WHERE m.source_id = ?1 AND m.destination_id = f2.destination_id AND m.state = 0)
            AND (f2.source_id, f2.destination_id) > (?2, ?3)
          ORDER BY f2.source_id, f2.destination_id LIMIT +?4"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(map_err)?;
    let (r, u) = after.map_or((String::new(), String::new()), |(r, u)| {
        (r.to_string(), u.to_string())
    });
    let rows = stmt
        .query_map(params![IdText::new(user), r, u, limit as i64], |row| {
            Ok(FriendOfFriend {
                user: user_from_row(row)?,
                referrer: uuid_at(row, 17)?,
            })
        })
        .map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}

pub(super) fn friend_metadata_update(
    conn: &Connection,
    user: Uuid,
    friend: Uuid,
    metadata: &str,
    now_us: i64,
) -> StoreResult<bool> {
    let mut stmt = conn
        .prepare_cached(
            "UPDATE user_edge SET metadata = ?3, update_time = ?4
              WHERE source_id = ?1 AND destination_id = ?2",
        )
        .map_err(map_err)?;
    let n = stmt
        .execute(params![
            IdText::new(user),
            IdText::new(friend),
            metadata,
            now_us / 1_000_000
        ])
        .map_err(map_err)?;
    Ok(n > 0)
}

fn load_group(conn: &Connection, id: Uuid) -> StoreResult<Option<Group>> {
    let sql = format!("SELECT {GROUP_COLUMNS} FROM groups g WHERE g.id = ?1");
    let mut stmt = conn.prepare_cached(&sql).map_err(map_err)?;
    stmt.query_row([IdText::new(id)], group_from_row)
        .optional()
        .map_err(map_err)
}

pub(super) fn group_role(
    conn: &Connection,
    group: Uuid,
    user: Uuid,
) -> StoreResult<Option<GroupRole>> {
    let mut stmt = conn
        .prepare_cached("SELECT state FROM group_edge WHERE group_id = ?1 AND user_id = ?2")
        .map_err(map_err)?;
    stmt.query_row(params![IdText::new(group), IdText::new(user)], |row| {
        role_at(row, 0)
    })
    .optional()
    .map_err(map_err)
}

/// The caller's role, or `Err(())` for the server (no caller).
fn caller_role(
    conn: &Connection,
    group: Uuid,
    caller: Option<Uuid>,
) -> StoreResult<Result<Option<GroupRole>, ()>> {
    match caller {
        None => Ok(Err(())),
        Some(user) => Ok(Ok(group_role(conn, group, user)?)),
    }
}

fn set_role(conn: &Connection, group: Uuid, change: &RoleChange, now: i64) -> StoreResult<()> {
    let (g, u) = (IdText::new(group), IdText::new(change.user));
    let result = match (change.from, change.to) {
        (_, None) => conn
            .prepare_cached("DELETE FROM group_edge WHERE group_id = ?1 AND user_id = ?2")
            .and_then(|mut st| st.execute(params![g, u])),
        (None, Some(to)) => conn
            .prepare_cached(
                "INSERT INTO group_edge (group_id, user_id, state, update_time) VALUES (?1, ?2, ?3, ?4)",
            )
            .and_then(|mut st| st.execute(params![g, u, to.as_i64(), now])),
        (Some(_), Some(to)) => conn
            .prepare_cached(
                "UPDATE group_edge SET state = ?3, update_time = ?4 WHERE group_id = ?1 AND user_id = ?2",
            )
            .and_then(|mut st| st.execute(params![g, u, to.as_i64(), now])),
    };
    result.map(drop).map_err(map_err)
}

pub(super) fn group_create(conn: &Connection, g: &Group, superadmin: Uuid) -> StoreResult<()> {
    if !user_exists(conn, superadmin)? {
        return Err(GroupRefusal::UserNotFound.into());
    }
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO groups (id, creator_id, name, description, avatar_url, lang_tag, metadata,
                                 open, max_count, create_time, update_time)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10)",
        )
        .map_err(map_err)?;
    stmt.execute(params![
        IdText::new(g.id),
        IdText::new(g.creator_id),
        g.name,
        g.description,
        g.avatar_url,
        g.lang_tag,
        g.metadata,
        i64::from(g.open),
        g.max_count,
        g.create_time
    ])
    .map_err(map_err)?;
    set_role(
        conn,
        g.id,
        &RoleChange {
            user: superadmin,
            from: None,
            to: Some(GroupRole::Superadmin),
        },
        g.create_time,
    )
}

pub(super) fn group_update(
    conn: &Connection,
    id: Uuid,
    caller: Option<Uuid>,
    u: &GroupUpdate,
    now_us: i64,
) -> StoreResult<Group> {
    let group = load_group(conn, id)?.ok_or(GroupRefusal::NotFound)?;
    if let Ok(role) = caller_role(conn, id, caller)?
        && role.is_none_or(|r| !r.is_admin())
    {
        return Err(GroupRefusal::PermissionDenied.into());
    }
    if u.max_count.is_some_and(|m| m < group.edge_count) {
        return Err(GroupRefusal::MaxCountBelowMembers.into());
    }
    let mut stmt = conn
        .prepare_cached(
            "UPDATE groups SET name = coalesce(?2, name), description = coalesce(?3, description),
                    avatar_url = coalesce(?4, avatar_url), lang_tag = coalesce(?5, lang_tag),
                    metadata = coalesce(?6, metadata), open = coalesce(?7, open),
                    max_count = coalesce(?8, max_count), update_time = ?9,
                    creator_id = coalesce(?10, creator_id)
              WHERE id = ?1",
        )
        .map_err(map_err)?;
    stmt.execute(params![
        IdText::new(id),
        u.name,
        u.description,
        u.avatar_url,
        u.lang_tag,
        u.metadata,
        u.open.map(i64::from),
        u.max_count,
        now_us / 1_000_000,
        u.creator_id.map(IdText::new)
    ])
    .map_err(map_err)?;
    load_group(conn, id)?.ok_or_else(|| StoreError::Backend("updated group vanished".into()))
}

pub(super) fn group_delete(
    conn: &Connection,
    id: Uuid,
    caller: Option<Uuid>,
) -> StoreResult<Vec<Uuid>> {
    if load_group(conn, id)?.is_none() {
        return Err(GroupRefusal::NotFound.into());
    }
    if let Ok(role) = caller_role(conn, id, caller)?
        && role != Some(GroupRole::Superadmin)
    {
        return Err(GroupRefusal::PermissionDenied.into());
    }
    let members = {
        let mut stmt = conn
            .prepare_cached("SELECT user_id FROM group_edge WHERE group_id = ?1 AND state <= 2")
            .map_err(map_err)?;
        let rows = stmt
            .query_map([IdText::new(id)], |row| uuid_at(row, 0))
            .map_err(map_err)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(map_err)?
    };
    conn.prepare_cached("DELETE FROM groups WHERE id = ?1")
        .and_then(|mut st| st.execute([IdText::new(id)]))
        .map_err(map_err)?;
    Ok(members)
}

pub(super) fn group_change(
    conn: &Connection,
    id: Uuid,
    op: GroupOp,
    caller: Option<Uuid>,
    targets: &[Uuid],
    now_us: i64,
) -> StoreResult<Vec<RoleChange>> {
    let g = load_group(conn, id)?.ok_or(GroupRefusal::NotFound)?;
    let superadmins: i64 = conn
        .prepare_cached("SELECT count(*) FROM group_edge WHERE group_id = ?1 AND state = 0")
        .and_then(|mut st| st.query_row([IdText::new(id)], |row| row.get(0)))
        .map_err(map_err)?;
    let snapshot = GroupSnapshot {
        open: g.open,
        edge_count: g.edge_count,
        max_count: g.max_count,
        superadmins,
    };
    let caller_role = caller_role(conn, id, caller)?;
    let targets = targets
        .iter()
        .map(|&user| {
            Ok(Target {
                user,
                exists: user_exists(conn, user)?,
                role: group_role(conn, id, user)?,
            })
        })
        .collect::<StoreResult<Vec<_>>>()?;
    let changes = group::plan(op, &snapshot, caller_role, caller, &targets)?;
    let now = now_us / 1_000_000;
    for c in &changes {
        set_role(conn, id, c, now)?;
    }
    Ok(changes)
}

pub(super) fn groups_get(conn: &Connection, ids: &[Uuid]) -> StoreResult<Vec<Group>> {
    let ids: Vec<String> = ids.iter().map(Uuid::to_string).collect();
    let ids = serde_json::to_string(&ids).map_err(|e| StoreError::Backend(e.to_string()))?;
    let sql = format!(
        "SELECT {GROUP_COLUMNS} FROM groups g WHERE g.id IN (SELECT value FROM json_each(?1))"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(map_err)?;
    let rows = stmt.query_map([ids], group_from_row).map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}

/// `name` as a prefix when it ends with `%` (Nakama's rule), else exact.
fn name_filter(name: Option<&str>) -> (Option<&str>, Option<&str>) {
    match name {
        Some(n) => match n.strip_suffix('%') {
            Some(prefix) => (None, Some(prefix)),
            None => (Some(n), None),
        },
        None => (None, None),
    }
}

/// The SQL of a group listing with only the filters given, so the planner
/// sees a name prefix as a range on the unique name index (a bound parameter
/// guarded by `? IS NULL OR` hides it, and a search then walks the index
/// from its first name).
fn groups_list_sql(f: &GroupFilter) -> (String, Vec<rusqlite::types::Value>) {
    use rusqlite::types::Value as V;
    let mut conds: Vec<&str> = Vec::new();
    let mut args: Vec<V> = Vec::new();
    match name_filter(f.name.as_deref()) {
        (Some(exact), _) => {
            conds.push("g.name = ?");
            args.push(V::Text(exact.to_owned()));
        }
        (None, Some(prefix)) => {
            // Every name that starts with the prefix sorts between it and
            // the prefix followed by the highest code point (BINARY order);
            // `substr` keeps the match exact.
            conds.push("g.name >= ? AND g.name < ? AND substr(g.name, 1, length(?)) = ?");
            args.push(V::Text(prefix.to_owned()));
            args.push(V::Text(format!("{prefix}\u{10FFFF}")));
            args.push(V::Text(prefix.to_owned()));
            args.push(V::Text(prefix.to_owned()));
        }
        (None, None) => {}
    }
    if let Some(lang) = &f.lang_tag {
        conds.push("g.lang_tag = ?");
        args.push(V::Text(lang.clone()));
    }
    if let Some(members) = f.members {
        conds.push("g.edge_count <= ?");
        args.push(V::Integer(i64::from(members)));
    }
    if let Some(open) = f.open {
        conds.push("g.open = ?");
        args.push(V::Integer(i64::from(open)));
    }
    if let Some((name, id)) = &f.after {
        conds.push("(g.name, g.id) > (?, ?)");
        args.push(V::Text(name.clone()));
        args.push(V::Text(id.to_string()));
    }
    let filter = if conds.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", conds.join(" AND "))
    };
    args.push(V::Integer(f.limit as i64));
    (
        format!("SELECT {GROUP_COLUMNS} FROM groups g {filter} ORDER BY g.name LIMIT +?"),
        args,
    )
}

pub(super) fn groups_list(conn: &Connection, f: &GroupFilter) -> StoreResult<Vec<Group>> {
    let (sql, args) = groups_list_sql(f);
    let mut stmt = conn.prepare_cached(&sql).map_err(map_err)?;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(args), group_from_row)
        .map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}

pub(super) fn groups_random(conn: &Connection, count: usize) -> StoreResult<Vec<Group>> {
    let sql = format!("SELECT {GROUP_COLUMNS} FROM groups g ORDER BY random() LIMIT +?1");
    let mut stmt = conn.prepare_cached(&sql).map_err(map_err)?;
    let rows = stmt
        .query_map([count as i64], group_from_row)
        .map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}

fn bound_params(after: Option<RoleBound>) -> (i64, String) {
    after.map_or((-1, String::new()), |b| (b.role.as_i64(), b.id.to_string()))
}

pub(super) fn group_users(
    conn: &Connection,
    group: Uuid,
    role: Option<GroupRole>,
    after: Option<RoleBound>,
    limit: usize,
) -> StoreResult<Vec<GroupUser>> {
    let sql = format!(
        "SELECT {USER_SELECT}, e.state
           FROM group_edge e JOIN users u ON u.id = e.user_id
          WHERE e.group_id = ?1 AND (?2 IS NULL AND e.state <= 3 OR e.state = ?2)
            AND (e.state, e.user_id) > (?3, ?4)
          ORDER BY e.state, e.user_id LIMIT +?5"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(map_err)?;
    let (r, id) = bound_params(after);
    let rows = stmt
        .query_map(
            params![
                IdText::new(group),
                role.map(GroupRole::as_i64),
                r,
                id,
                limit as i64
            ],
            |row| {
                Ok(GroupUser {
                    user: user_from_row(row)?,
                    role: role_at(row, 17)?,
                })
            },
        )
        .map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}

pub(super) fn user_groups(
    conn: &Connection,
    user: Uuid,
    role: Option<GroupRole>,
    after: Option<RoleBound>,
    limit: usize,
) -> StoreResult<Vec<UserGroup>> {
    let sql = format!(
        "SELECT {GROUP_COLUMNS}, e.state
           FROM group_edge e JOIN groups g ON g.id = e.group_id
          WHERE e.user_id = ?1 AND (?2 IS NULL OR e.state = ?2)
            AND (e.state, e.group_id) > (?3, ?4)
          ORDER BY e.state, e.group_id LIMIT +?5"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(map_err)?;
    let (r, id) = bound_params(after);
    let rows = stmt
        .query_map(
            params![
                IdText::new(user),
                role.map(GroupRole::as_i64),
                r,
                id,
                limit as i64
            ],
            |row| {
                Ok(UserGroup {
                    group: group_from_row(row)?,
                    role: role_at(row, GROUP_COLUMN_COUNT)?,
                })
            },
        )
        .map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}
