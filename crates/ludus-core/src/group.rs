//! Groups: their records, member roles as Nakama numbers them, and the one
//! rule book (`plan`) both stores apply inside the transaction that holds the
//! group's row, so a membership change is decided on what is stored and the
//! group's `edge_count` never drifts from its members.
//!
//! `edge_count` counts members (superadmins, admins and members); join
//! requests and bans do not count towards it or towards `max_count`.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use uuid::Uuid;

use crate::error::{ApiError, Code};
use crate::model::User;

/// Default `max_count` of a new group (Nakama's).
pub const DEFAULT_MAX_COUNT: i32 = 100;
/// Most groups or group users one page may hold (Nakama's bound).
pub const MAX_LIST_LIMIT: usize = 100;

/// A member's role, numbered as Nakama's `GroupUserList.GroupUser.State`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GroupRole {
    Superadmin = 0,
    Admin = 1,
    Member = 2,
    JoinRequest = 3,
    Banned = 4,
}

impl GroupRole {
    pub fn from_i64(n: i64) -> Option<GroupRole> {
        match n {
            0 => Some(GroupRole::Superadmin),
            1 => Some(GroupRole::Admin),
            2 => Some(GroupRole::Member),
            3 => Some(GroupRole::JoinRequest),
            4 => Some(GroupRole::Banned),
            _ => None,
        }
    }

    pub fn as_i64(self) -> i64 {
        self as i64
    }

    /// Superadmins, admins and members: who counts towards `edge_count` and
    /// may use the group's chat.
    pub fn is_member(self) -> bool {
        self <= GroupRole::Member
    }

    /// Superadmins and admins: who may manage members and update the group.
    pub fn is_admin(self) -> bool {
        self <= GroupRole::Admin
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Group {
    pub id: Uuid,
    pub creator_id: Uuid,
    pub name: String,
    pub description: String,
    pub avatar_url: String,
    pub lang_tag: String,
    /// A JSON object.
    pub metadata: String,
    pub open: bool,
    pub edge_count: i32,
    pub max_count: i32,
    /// Seconds since the UNIX epoch.
    pub create_time: i64,
    pub update_time: i64,
}

/// The fields of a group update; `None` keeps the stored value.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupUpdate {
    pub name: Option<String>,
    pub description: Option<String>,
    pub avatar_url: Option<String>,
    pub lang_tag: Option<String>,
    pub metadata: Option<String>,
    pub open: Option<bool>,
    pub max_count: Option<i32>,
    /// Server calls only (`nk.group_update`), as Nakama: the creator
    /// recorded on the group.
    pub creator_id: Option<uuid::Uuid>,
}

impl GroupUpdate {
    pub fn is_empty(&self) -> bool {
        *self == GroupUpdate::default()
    }
}

/// Why a group change was refused; the store's transaction wrote nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GroupRefusal {
    #[error("group name is in use, choose another")]
    NameInUse,
    #[error("group not found")]
    NotFound,
    #[error("group not found or permission denied")]
    PermissionDenied,
    #[error("group is full")]
    Full,
    #[error("one or more users not found")]
    UserNotFound,
    #[error("cannot leave group when you are the last superadmin")]
    LastSuperadmin,
    #[error("user is banned from this group")]
    Banned,
    #[error("max count cannot be lower than the group's member count")]
    MaxCountBelowMembers,
}

impl From<GroupRefusal> for ApiError {
    fn from(r: GroupRefusal) -> Self {
        let code = match r {
            GroupRefusal::NameInUse => Code::AlreadyExists,
            GroupRefusal::NotFound | GroupRefusal::PermissionDenied => Code::NotFound,
            GroupRefusal::Banned => Code::PermissionDenied,
            GroupRefusal::Full
            | GroupRefusal::UserNotFound
            | GroupRefusal::LastSuperadmin
            | GroupRefusal::MaxCountBelowMembers => Code::InvalidArgument,
        };
        ApiError::new(code, r.to_string())
    }
}

/// A membership change, by the caller (`None`: the server, which may do anything).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupOp {
    Join,
    Leave,
    Add,
    Kick,
    Ban,
    Promote,
    Demote,
}

/// What the store read, in the transaction, about one user the op names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    pub user: Uuid,
    pub exists: bool,
    pub role: Option<GroupRole>,
}

/// One user's role change; `to: None` removes the edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoleChange {
    pub user: Uuid,
    pub from: Option<GroupRole>,
    pub to: Option<GroupRole>,
}

impl RoleChange {
    /// How this change moves `edge_count`.
    pub fn count_delta(&self) -> i32 {
        let member = |r: Option<GroupRole>| i32::from(r.is_some_and(GroupRole::is_member));
        member(self.to) - member(self.from)
    }
}

/// The state of the group the rules decide on, read under the group's lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupSnapshot {
    pub open: bool,
    pub edge_count: i32,
    pub max_count: i32,
    pub superadmins: i64,
}

/// Nakama's group rules. `caller` is the acting user's role (`Ok(None)`: not
/// in the group) or `Err(())` for the server; `caller_id` the acting user,
/// whom the five managing operations skip among their targets, as Nakama.
/// For `Join` and `Leave` the caller is the one target. Returns the changes
/// to apply, in target order.
pub fn plan(
    op: GroupOp,
    group: &GroupSnapshot,
    caller: Result<Option<GroupRole>, ()>,
    caller_id: Option<Uuid>,
    targets: &[Target],
) -> Result<Vec<RoleChange>, GroupRefusal> {
    use GroupRole::*;
    let server = caller.is_err();
    let caller_role = caller.ok().flatten();
    let mut changes = Vec::new();
    let mut count = group.edge_count;
    let mut superadmins = group.superadmins;
    let mut push = |c: RoleChange, count: &mut i32| -> Result<(), GroupRefusal> {
        *count += c.count_delta();
        if c.count_delta() > 0 && *count > group.max_count {
            return Err(GroupRefusal::Full);
        }
        changes.push(c);
        Ok(())
    };
    if !matches!(op, GroupOp::Join | GroupOp::Leave) && !server {
        // Managing others takes an admin or a superadmin.
        if !caller_role.is_some_and(GroupRole::is_admin) {
            return Err(GroupRefusal::PermissionDenied);
        }
    }
    for t in targets {
        if !t.exists {
            return Err(GroupRefusal::UserNotFound);
        }
        if !matches!(op, GroupOp::Join | GroupOp::Leave) && Some(t.user) == caller_id {
            continue;
        }
        let change = |to| RoleChange {
            user: t.user,
            from: t.role,
            to,
        };
        // An admin acts only on users below them; a superadmin on anyone
        // but themselves, the server on anyone.
        let outranks = |target: GroupRole| match caller_role {
            _ if server => true,
            Some(Superadmin) => true,
            Some(r) => r < target,
            None => false,
        };
        match op {
            GroupOp::Join => match t.role {
                None if group.open => push(change(Some(Member)), &mut count)?,
                None => {
                    if count >= group.max_count {
                        return Err(GroupRefusal::Full);
                    }
                    push(change(Some(JoinRequest)), &mut count)?
                }
                Some(Banned) => return Err(GroupRefusal::Banned),
                // Already in, or already asked.
                Some(_) => {}
            },
            GroupOp::Leave => match t.role {
                Some(Superadmin) if superadmins <= 1 => {
                    return Err(GroupRefusal::LastSuperadmin);
                }
                Some(Superadmin) => {
                    superadmins -= 1;
                    push(change(None), &mut count)?
                }
                // A ban outlives leaving.
                None | Some(Banned) => {}
                Some(_) => push(change(None), &mut count)?,
            },
            GroupOp::Add => match t.role {
                None | Some(JoinRequest) => push(change(Some(Member)), &mut count)?,
                // Members stay as they are; a ban must be lifted first (kick).
                Some(_) => {}
            },
            GroupOp::Kick => match t.role {
                None => {}
                Some(r) if !outranks(r) => {}
                Some(Superadmin) if superadmins <= 1 => {}
                Some(r) => {
                    if r == Superadmin {
                        superadmins -= 1;
                    }
                    push(change(None), &mut count)?
                }
            },
            GroupOp::Ban => match t.role {
                Some(Banned) => {}
                Some(r) if !outranks(r) => {}
                Some(Superadmin) if superadmins <= 1 => {}
                r => {
                    if r == Some(Superadmin) {
                        superadmins -= 1;
                    }
                    push(change(Some(Banned)), &mut count)?
                }
            },
            // Up one step, for members and admins below the caller (join
            // requests are accepted with `Add`, as Nakama).
            GroupOp::Promote => match t.role {
                Some(Member) if outranks(Member) => push(change(Some(Admin)), &mut count)?,
                Some(Admin) if server || caller_role == Some(Superadmin) => {
                    superadmins += 1;
                    push(change(Some(Superadmin)), &mut count)?
                }
                _ => {}
            },
            // Down one step, for admins and superadmins at or below the
            // caller's rank, never the last superadmin.
            GroupOp::Demote => match t.role {
                Some(Superadmin)
                    if (server || caller_role == Some(Superadmin)) && superadmins > 1 =>
                {
                    superadmins -= 1;
                    push(change(Some(Admin)), &mut count)?
                }
                Some(Admin) if server || caller_role.is_some_and(GroupRole::is_admin) => {
                    push(change(Some(Member)), &mut count)?
                }
                _ => {}
            },
        }
    }
    Ok(changes)
}

/// One user of a group listing and their role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupUser {
    pub user: User,
    pub role: GroupRole,
}

/// One group of a user's listing and the user's role in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserGroup {
    pub group: Group,
    pub role: GroupRole,
}

/// Where a members or user-groups listing resumes: strictly after this in
/// (role, id) order, the id being the user's or the group's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoleBound {
    pub role: GroupRole,
    pub id: Uuid,
}

/// A search over groups (`GET /v2/group`, `nk.groups_list`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupFilter {
    /// An exact name, or a prefix when it ends with `%`.
    pub name: Option<String>,
    pub lang_tag: Option<String>,
    /// Groups with at most this many members.
    pub members: Option<i32>,
    pub open: Option<bool>,
    pub limit: usize,
    /// Strictly after this (name, id) in name order.
    pub after: Option<(String, Uuid)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupPage {
    pub groups: Vec<Group>,
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupUserPage {
    pub users: Vec<GroupUser>,
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserGroupPage {
    pub groups: Vec<UserGroup>,
    pub cursor: Option<String>,
}

fn invalid_cursor() -> ApiError {
    ApiError::invalid("cursor is invalid, list again without one")
}

fn decode(cursor: &str) -> Result<Vec<String>, ApiError> {
    let raw = URL_SAFE_NO_PAD
        .decode(cursor.trim_end_matches('='))
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(invalid_cursor)?;
    Ok(raw.split('|').map(str::to_owned).collect())
}

/// The cursor after `(role, id)` in the listing `scope` (a group's members
/// or a user's groups) with the role filter `filter`.
pub fn role_cursor(scope: Uuid, filter: Option<GroupRole>, last: RoleBound) -> String {
    let filter = filter.map_or(-1, GroupRole::as_i64);
    URL_SAFE_NO_PAD.encode(format!(
        "g1|{scope}|{filter}|{}|{}",
        last.role.as_i64(),
        last.id
    ))
}

/// The bound a cursor made by [`role_cursor`] for the same listing stands for.
pub fn role_resume(
    scope: Uuid,
    filter: Option<GroupRole>,
    cursor: &str,
) -> Result<RoleBound, ApiError> {
    let p = decode(cursor)?;
    if p.len() != 5 || p[0] != "g1" {
        return Err(invalid_cursor());
    }
    let owner: Uuid = p[1].parse().map_err(|_| invalid_cursor())?;
    let f: i64 = p[2].parse().map_err(|_| invalid_cursor())?;
    if owner != scope || f != filter.map_or(-1, GroupRole::as_i64) {
        return Err(invalid_cursor());
    }
    Ok(RoleBound {
        role: p[3]
            .parse()
            .ok()
            .and_then(GroupRole::from_i64)
            .ok_or_else(invalid_cursor)?,
        id: p[4].parse().map_err(|_| invalid_cursor())?,
    })
}

/// The cursor after `last` in a group search.
pub fn list_cursor(last: &Group) -> String {
    URL_SAFE_NO_PAD.encode(format!("l1|{}|{}", last.id, last.name))
}

/// The (name, id) a cursor made by [`list_cursor`] stands for.
pub fn list_resume(cursor: &str) -> Result<(String, Uuid), ApiError> {
    let raw = URL_SAFE_NO_PAD
        .decode(cursor.trim_end_matches('='))
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(invalid_cursor)?;
    let mut parts = raw.splitn(3, '|');
    if parts.next() != Some("l1") {
        return Err(invalid_cursor());
    }
    let id = parts
        .next()
        .and_then(|p| p.parse().ok())
        .ok_or_else(invalid_cursor)?;
    let name = parts.next().ok_or_else(invalid_cursor)?.to_owned();
    Ok((name, id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use GroupRole::*;

    /// `plan` with no caller id (no target is the caller).
    fn plan4(
        op: GroupOp,
        group: &GroupSnapshot,
        caller: Result<Option<GroupRole>, ()>,
        targets: &[Target],
    ) -> Result<Vec<RoleChange>, GroupRefusal> {
        plan(op, group, caller, None, targets)
    }

    fn snap(open: bool, edge_count: i32, max_count: i32, superadmins: i64) -> GroupSnapshot {
        GroupSnapshot {
            open,
            edge_count,
            max_count,
            superadmins,
        }
    }

    fn target(role: Option<GroupRole>) -> Target {
        Target {
            user: Uuid::new_v4(),
            exists: true,
            role,
        }
    }

    #[test]
    fn join_open_closed_full_and_banned() {
        let t = target(None);
        let c = plan4(GroupOp::Join, &snap(true, 1, 10, 1), Ok(None), &[t]).unwrap();
        assert_eq!(c[0].to, Some(Member));
        let c = plan4(GroupOp::Join, &snap(false, 1, 10, 1), Ok(None), &[t]).unwrap();
        assert_eq!(c[0].to, Some(JoinRequest));
        assert_eq!(
            plan4(GroupOp::Join, &snap(true, 10, 10, 1), Ok(None), &[t]),
            Err(GroupRefusal::Full)
        );
        assert_eq!(
            plan4(
                GroupOp::Join,
                &snap(true, 1, 10, 1),
                Ok(Some(Banned)),
                &[target(Some(Banned))]
            ),
            Err(GroupRefusal::Banned)
        );
    }

    #[test]
    fn the_last_superadmin_cannot_leave() {
        let me = target(Some(Superadmin));
        assert_eq!(
            plan4(GroupOp::Leave, &snap(true, 2, 10, 1), Ok(me.role), &[me]),
            Err(GroupRefusal::LastSuperadmin)
        );
        let c = plan4(GroupOp::Leave, &snap(true, 2, 10, 2), Ok(me.role), &[me]).unwrap();
        assert_eq!(c[0].to, None);
        assert_eq!(c[0].count_delta(), -1);
    }

    #[test]
    fn admins_cannot_act_on_superadmins_and_members_cannot_manage() {
        let boss = target(Some(Superadmin));
        let g = snap(true, 3, 10, 1);
        for op in [GroupOp::Kick, GroupOp::Ban, GroupOp::Demote] {
            assert!(plan4(op, &g, Ok(Some(Admin)), &[boss]).unwrap().is_empty());
        }
        assert_eq!(
            plan4(GroupOp::Kick, &g, Ok(Some(Member)), &[target(Some(Member))]),
            Err(GroupRefusal::PermissionDenied)
        );
        assert_eq!(
            plan4(GroupOp::Add, &g, Ok(None), &[target(None)]),
            Err(GroupRefusal::PermissionDenied)
        );
        // An admin cannot make superadmins; a superadmin can.
        let admin = target(Some(Admin));
        assert!(
            plan4(GroupOp::Promote, &g, Ok(Some(Admin)), &[admin])
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            plan4(GroupOp::Promote, &g, Ok(Some(Superadmin)), &[admin]).unwrap()[0].to,
            Some(Superadmin)
        );
    }

    #[test]
    fn managers_skip_themselves_and_promote_one_step() {
        let g = snap(true, 3, 10, 2);
        let me = target(Some(Superadmin));
        for op in [GroupOp::Kick, GroupOp::Ban, GroupOp::Demote] {
            assert!(
                plan(op, &g, Ok(me.role), Some(me.user), &[me])
                    .unwrap()
                    .is_empty()
            );
        }
        // Join requests are accepted with add, not promote.
        assert!(
            plan4(
                GroupOp::Promote,
                &g,
                Ok(Some(Admin)),
                &[target(Some(JoinRequest))]
            )
            .unwrap()
            .is_empty()
        );
        // Admins demote admins, as Nakama; not superadmins.
        let c = plan4(GroupOp::Demote, &g, Ok(Some(Admin)), &[target(Some(Admin))]).unwrap();
        assert_eq!(c[0].to, Some(Member));
    }

    #[test]
    fn add_accepts_requests_and_respects_max_count() {
        let g = snap(false, 9, 10, 1);
        let c = plan4(
            GroupOp::Add,
            &g,
            Ok(Some(Admin)),
            &[target(Some(JoinRequest))],
        )
        .unwrap();
        assert_eq!(c[0].to, Some(Member));
        assert_eq!(
            plan4(
                GroupOp::Add,
                &g,
                Err(()),
                &[target(None), target(Some(JoinRequest))]
            ),
            Err(GroupRefusal::Full)
        );
        assert_eq!(
            plan4(
                GroupOp::Add,
                &g,
                Err(()),
                &[Target {
                    user: Uuid::new_v4(),
                    exists: false,
                    role: None
                }]
            ),
            Err(GroupRefusal::UserNotFound)
        );
    }

    #[test]
    fn cursors_round_trip_and_refuse_others() {
        let scope = Uuid::new_v4();
        let b = RoleBound {
            role: Member,
            id: Uuid::new_v4(),
        };
        let c = role_cursor(scope, None, b);
        assert_eq!(role_resume(scope, None, &c).unwrap(), b);
        assert!(role_resume(scope, Some(Admin), &c).is_err());
        assert!(role_resume(Uuid::new_v4(), None, &c).is_err());
        let g = Group {
            id: Uuid::new_v4(),
            name: "a|b".into(),
            ..Group::default()
        };
        assert_eq!(list_resume(&list_cursor(&g)).unwrap(), ("a|b".into(), g.id));
        assert!(list_resume("nope").is_err());
    }
}
