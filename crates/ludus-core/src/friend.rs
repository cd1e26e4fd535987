//! Friends: the edges between two users, their states as Nakama numbers
//! them, and the one state machine (`plan`) both stores apply inside their
//! transaction to decide what an add, delete or block changes.
//!
//! Each user owns the edge that starts at them (`source → destination`); a
//! pair of users has at most one edge each way. A user's `edge_count` is the
//! number of edges they own, so every insert and delete moves exactly one
//! count.

use std::any::Any;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use uuid::Uuid;

use crate::error::ApiError;
use crate::model::{User, UserRef};

/// Most friends one listing page may hold (Nakama's bound).
pub const MAX_LIST_LIMIT: usize = 1000;
/// Most friends of friends one page may hold (Nakama's bound).
pub const MAX_FOF_LIMIT: usize = 100;

/// The state of the edge from one user to another, numbered as Nakama's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FriendState {
    Friend = 0,
    InviteSent = 1,
    InviteReceived = 2,
    Blocked = 3,
}

impl FriendState {
    pub fn from_i64(n: i64) -> Option<FriendState> {
        match n {
            0 => Some(FriendState::Friend),
            1 => Some(FriendState::InviteSent),
            2 => Some(FriendState::InviteReceived),
            3 => Some(FriendState::Blocked),
            _ => None,
        }
    }

    pub fn as_i64(self) -> i64 {
        self as i64
    }
}

/// What the caller asks for one other user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FriendOp {
    /// Invite, or accept the other side's invite.
    Add,
    /// Remove a friend, cancel or reject an invite, or unblock.
    Delete,
    Block,
}

/// One stored edge as the state machine needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    pub state: FriendState,
    /// A JSON object.
    pub metadata: String,
}

/// What becomes of one edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EdgeWrite {
    Keep,
    /// A new edge (the owner's `edge_count` goes up by one).
    Insert {
        state: FriendState,
        metadata: String,
    },
    /// The existing edge takes this state (and metadata when given).
    Update {
        state: FriendState,
        metadata: Option<String>,
    },
    /// The existing edge goes (the owner's `edge_count` goes down by one).
    Delete,
}

/// What happened between the caller and one other user, for notifications.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FriendOutcome {
    /// Nothing changed (already friends, blocked, unknown user…).
    Unchanged,
    Invited,
    Accepted,
    /// Both edges went: a friendship ended or an invite was cancelled or rejected.
    Removed,
    /// Only the caller's edge changed (a block, or an unblock).
    Changed,
}

/// The writes of one operation between `user` (owning `mine`) and another
/// user (owning `theirs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FriendPlan {
    pub mine: EdgeWrite,
    pub theirs: EdgeWrite,
    pub outcome: FriendOutcome,
}

impl FriendPlan {
    fn unchanged() -> FriendPlan {
        FriendPlan {
            mine: EdgeWrite::Keep,
            theirs: EdgeWrite::Keep,
            outcome: FriendOutcome::Unchanged,
        }
    }
}

/// Nakama's friend state machine. `target_exists` says whether the other
/// user exists; `metadata` is the caller's metadata for an add (a JSON
/// object, merged into the caller's edge on accept).
pub fn plan(
    op: FriendOp,
    target_exists: bool,
    mine: Option<&Edge>,
    theirs: Option<&Edge>,
    metadata: &str,
) -> FriendPlan {
    use FriendState::*;
    match op {
        FriendOp::Add => match (mine.map(|e| e.state), theirs.map(|e| e.state)) {
            // The caller blocked them, or they blocked the caller: nothing, quietly.
            (Some(Blocked), _) | (_, Some(Blocked)) => FriendPlan::unchanged(),
            (Some(InviteReceived), Some(InviteSent)) => FriendPlan {
                mine: EdgeWrite::Update {
                    state: Friend,
                    metadata: Some(merge_metadata(
                        mine.map_or("{}", |e| e.metadata.as_str()),
                        metadata,
                    )),
                },
                theirs: EdgeWrite::Update {
                    state: Friend,
                    metadata: None,
                },
                outcome: FriendOutcome::Accepted,
            },
            (None, None) if target_exists => FriendPlan {
                mine: EdgeWrite::Insert {
                    state: InviteSent,
                    metadata: metadata.to_owned(),
                },
                theirs: EdgeWrite::Insert {
                    state: InviteReceived,
                    metadata: "{}".to_owned(),
                },
                outcome: FriendOutcome::Invited,
            },
            // Already friends, already invited, or no such user.
            _ => FriendPlan::unchanged(),
        },
        FriendOp::Delete => {
            let mine_goes = mine.is_some();
            // A block the other side holds stays.
            let theirs_goes = theirs.is_some_and(|e| e.state != Blocked);
            let outcome = match (mine_goes, theirs_goes) {
                (true, true) => FriendOutcome::Removed,
                (false, false) => FriendOutcome::Unchanged,
                _ => FriendOutcome::Changed,
            };
            FriendPlan {
                mine: if mine_goes {
                    EdgeWrite::Delete
                } else {
                    EdgeWrite::Keep
                },
                theirs: if theirs_goes {
                    EdgeWrite::Delete
                } else {
                    EdgeWrite::Keep
                },
                outcome,
            }
        }
        FriendOp::Block => {
            let mine_write = match mine {
                Some(e) if e.state == Blocked => EdgeWrite::Keep,
                Some(_) => EdgeWrite::Update {
                    state: Blocked,
                    metadata: None,
                },
                None if target_exists => EdgeWrite::Insert {
                    state: Blocked,
                    metadata: "{}".to_owned(),
                },
                None => return FriendPlan::unchanged(),
            };
            let theirs_write = if theirs.is_some_and(|e| e.state != Blocked) {
                EdgeWrite::Delete
            } else {
                EdgeWrite::Keep
            };
            let outcome = if mine_write == EdgeWrite::Keep && theirs_write == EdgeWrite::Keep {
                FriendOutcome::Unchanged
            } else {
                FriendOutcome::Changed
            };
            FriendPlan {
                mine: mine_write,
                theirs: theirs_write,
                outcome,
            }
        }
    }
}

/// Nakama's rule for one friend found by a platform import (Facebook,
/// Steam): no edges make both users friends at once, invites either way
/// become a friendship, and anything else (friends already, a block on
/// either side) changes nothing. Both edges carry `{"provider": …}` in their
/// metadata. `Accepted` means they are friends now.
pub fn import_plan(mine: Option<&Edge>, theirs: Option<&Edge>, provider: &str) -> FriendPlan {
    use FriendState::*;
    let tag = serde_json::json!({ "provider": provider }).to_string();
    let invite =
        |e: Option<&Edge>| e.is_some_and(|e| matches!(e.state, InviteSent | InviteReceived));
    let accept = |e: Option<&Edge>| EdgeWrite::Update {
        state: Friend,
        metadata: Some(merge_metadata(
            e.map_or("{}", |e| e.metadata.as_str()),
            &tag,
        )),
    };
    match (mine, theirs) {
        (None, None) => FriendPlan {
            mine: EdgeWrite::Insert {
                state: Friend,
                metadata: tag.clone(),
            },
            theirs: EdgeWrite::Insert {
                state: Friend,
                metadata: tag,
            },
            outcome: FriendOutcome::Accepted,
        },
        (m, t) if invite(m) && invite(t) => FriendPlan {
            mine: accept(m),
            theirs: accept(t),
            outcome: FriendOutcome::Accepted,
        },
        _ => FriendPlan::unchanged(),
    }
}

/// `base` with the keys of `patch` set over it (both JSON objects; a
/// malformed one counts as empty), as PostgreSQL's `jsonb || jsonb`.
pub fn merge_metadata(base: &str, patch: &str) -> String {
    let parse = |s: &str| {
        serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(s).unwrap_or_default()
    };
    let mut merged = parse(base);
    merged.extend(parse(patch));
    serde_json::Value::Object(merged).to_string()
}

/// One friend of a listing: the other user, the state of the caller's edge
/// to them and that edge's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Friend {
    pub user: User,
    pub state: FriendState,
    /// Seconds since the UNIX epoch of the edge's last change.
    pub update_time: i64,
    /// A JSON object.
    pub metadata: String,
    /// When the edge was made (microseconds); the listing order within a state.
    pub position: i64,
}

impl Friend {
    /// This friend, borrowed.
    pub fn view(&self) -> FriendRef<'_> {
        FriendRef {
            user: self.user.view(),
            state: self.state,
            update_time: self.update_time,
            metadata: &self.metadata,
            position: self.position,
        }
    }
}

/// A [`Friend`] as a store reads it, its strings borrowed from the row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FriendRef<'a> {
    pub user: UserRef<'a>,
    pub state: FriendState,
    /// Seconds since the UNIX epoch of the edge's last change.
    pub update_time: i64,
    /// A JSON object.
    pub metadata: &'a str,
    /// When the edge was made (microseconds); the listing order within a state.
    pub position: i64,
}

impl FriendRef<'_> {
    pub fn to_friend(&self) -> Friend {
        Friend {
            user: self.user.to_user(),
            state: self.state,
            update_time: self.update_time,
            metadata: self.metadata.to_owned(),
            position: self.position,
        }
    }

    /// Where a listing that ends with this friend resumes.
    pub fn bound(&self) -> FriendBound {
        FriendBound {
            state: self.state,
            position: self.position,
            id: self.user.id,
        }
    }
}

/// Where the rows of a friends listing go, one at a time and in order, while
/// the store still holds them: a whole list is 1,000 users, and writing each
/// one out from the row costs far less than owning its strings first. A
/// sink moves to the thread that reads the rows and back (`Any`, so the
/// caller gets its own type back; see [`crate::store::friends_into`]).
pub trait FriendSink: Any + Send {
    fn push(&mut self, friend: &FriendRef<'_>);
}

/// The owned friends, for callers that keep the list (modules, hooks).
impl FriendSink for Vec<Friend> {
    fn push(&mut self, friend: &FriendRef<'_>) {
        Vec::push(self, friend.to_friend());
    }
}

/// Where a friends listing resumes: strictly after this in (state, position, id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FriendBound {
    pub state: FriendState,
    pub position: i64,
    pub id: Uuid,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FriendPage {
    pub friends: Vec<Friend>,
    pub cursor: Option<String>,
}

/// One friend of a friend and the friend who links them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FriendOfFriend {
    pub referrer: Uuid,
    pub user: User,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FriendOfFriendPage {
    pub friends_of_friends: Vec<FriendOfFriend>,
    pub cursor: Option<String>,
}

fn invalid_cursor() -> ApiError {
    ApiError::invalid("cursor is invalid, list again without one")
}

/// The cursor after `last` (the bound of the page's last friend) in
/// `user`'s friends listing with `filter`.
pub fn cursor_after(user: Uuid, filter: Option<FriendState>, last: &FriendBound) -> String {
    let filter = filter.map_or(-1, FriendState::as_i64);
    URL_SAFE_NO_PAD.encode(format!(
        "f1|{user}|{filter}|{}|{}|{}",
        last.state.as_i64(),
        last.position,
        last.id
    ))
}

fn decode_parts(cursor: &str, tag: &str, n: usize) -> Result<Vec<String>, ApiError> {
    let raw = URL_SAFE_NO_PAD
        .decode(cursor.trim_end_matches('='))
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(invalid_cursor)?;
    let parts: Vec<String> = raw.split('|').map(str::to_owned).collect();
    if parts.len() != n || parts[0] != tag {
        return Err(invalid_cursor());
    }
    Ok(parts)
}

/// The bound a cursor made by [`cursor_after`] stands for; refused for
/// another user's listing or another state filter (as Nakama's).
pub fn resume(
    user: Uuid,
    filter: Option<FriendState>,
    cursor: &str,
) -> Result<FriendBound, ApiError> {
    let p = decode_parts(cursor, "f1", 6)?;
    let owner: Uuid = p[1].parse().map_err(|_| invalid_cursor())?;
    let f: i64 = p[2].parse().map_err(|_| invalid_cursor())?;
    if owner != user || f != filter.map_or(-1, FriendState::as_i64) {
        return Err(invalid_cursor());
    }
    let state = p[3]
        .parse()
        .ok()
        .and_then(FriendState::from_i64)
        .ok_or_else(invalid_cursor)?;
    Ok(FriendBound {
        state,
        position: p[4].parse().map_err(|_| invalid_cursor())?,
        id: p[5].parse().map_err(|_| invalid_cursor())?,
    })
}

/// The cursor after `last` in `user`'s friends of friends.
pub fn fof_cursor_after(user: Uuid, last: &FriendOfFriend) -> String {
    URL_SAFE_NO_PAD.encode(format!("o1|{user}|{}|{}", last.referrer, last.user.id))
}

/// The (referrer, user) a cursor made by [`fof_cursor_after`] stands for.
pub fn fof_resume(user: Uuid, cursor: &str) -> Result<(Uuid, Uuid), ApiError> {
    let p = decode_parts(cursor, "o1", 4)?;
    let owner: Uuid = p[1].parse().map_err(|_| invalid_cursor())?;
    if owner != user {
        return Err(invalid_cursor());
    }
    Ok((
        p[2].parse().map_err(|_| invalid_cursor())?,
        p[3].parse().map_err(|_| invalid_cursor())?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use FriendState::*;

    fn edge(state: FriendState) -> Edge {
        Edge {
            state,
            metadata: "{}".into(),
        }
    }

    #[test]
    fn import_befriends_strangers_and_settles_invites_but_never_a_block() {
        let p = import_plan(None, None, "steam");
        assert_eq!(p.outcome, FriendOutcome::Accepted);
        let tagged = EdgeWrite::Insert {
            state: Friend,
            metadata: r#"{"provider":"steam"}"#.into(),
        };
        assert_eq!((&p.mine, &p.theirs), (&tagged, &tagged));

        let sent = Edge {
            state: InviteSent,
            metadata: r#"{"note":"hi"}"#.into(),
        };
        let p = import_plan(Some(&sent), Some(&edge(InviteReceived)), "facebook");
        assert_eq!(p.outcome, FriendOutcome::Accepted);
        assert_eq!(
            p.mine,
            EdgeWrite::Update {
                state: Friend,
                metadata: Some(r#"{"note":"hi","provider":"facebook"}"#.into())
            }
        );

        for (mine, theirs) in [
            (Some(edge(Friend)), Some(edge(Friend))),
            (Some(edge(Blocked)), None),
            (None, Some(edge(Blocked))),
            (Some(edge(Blocked)), Some(edge(InviteSent))),
        ] {
            let p = import_plan(mine.as_ref(), theirs.as_ref(), "steam");
            assert_eq!(p, FriendPlan::unchanged(), "{mine:?} {theirs:?}");
        }
    }

    #[test]
    fn add_invites_then_the_other_side_accepts() {
        let p = plan(FriendOp::Add, true, None, None, r#"{"a":1}"#);
        assert_eq!(p.outcome, FriendOutcome::Invited);
        assert_eq!(
            p.mine,
            EdgeWrite::Insert {
                state: InviteSent,
                metadata: r#"{"a":1}"#.into()
            }
        );
        let p = plan(
            FriendOp::Add,
            true,
            Some(&edge(InviteReceived)),
            Some(&edge(InviteSent)),
            r#"{"b":2}"#,
        );
        assert_eq!(p.outcome, FriendOutcome::Accepted);
        assert_eq!(
            p.mine,
            EdgeWrite::Update {
                state: Friend,
                metadata: Some(r#"{"b":2}"#.into())
            }
        );
    }

    #[test]
    fn add_changes_nothing_when_blocked_known_or_unknown() {
        for (mine, theirs) in [
            (Some(Blocked), None),
            (None, Some(Blocked)),
            (Some(Friend), Some(Friend)),
            (Some(InviteSent), Some(InviteReceived)),
        ] {
            let (m, t) = (mine.map(edge), theirs.map(edge));
            let p = plan(FriendOp::Add, true, m.as_ref(), t.as_ref(), "{}");
            assert_eq!(p, FriendPlan::unchanged(), "{mine:?} {theirs:?}");
        }
        assert_eq!(
            plan(FriendOp::Add, false, None, None, "{}"),
            FriendPlan::unchanged()
        );
    }

    #[test]
    fn delete_keeps_the_other_sides_block() {
        let p = plan(
            FriendOp::Delete,
            true,
            Some(&edge(Friend)),
            Some(&edge(Friend)),
            "{}",
        );
        assert_eq!(p.outcome, FriendOutcome::Removed);
        let p = plan(
            FriendOp::Delete,
            true,
            Some(&edge(Blocked)),
            Some(&edge(Blocked)),
            "{}",
        );
        assert_eq!((p.mine, p.theirs), (EdgeWrite::Delete, EdgeWrite::Keep));
    }

    #[test]
    fn block_replaces_any_edge_and_drops_theirs() {
        let p = plan(
            FriendOp::Block,
            true,
            Some(&edge(Friend)),
            Some(&edge(Friend)),
            "{}",
        );
        assert_eq!(
            (p.mine, p.theirs),
            (
                EdgeWrite::Update {
                    state: Blocked,
                    metadata: None
                },
                EdgeWrite::Delete
            )
        );
        assert_eq!(
            plan(FriendOp::Block, false, None, None, "{}"),
            FriendPlan::unchanged()
        );
    }

    #[test]
    fn cursors_belong_to_their_listing() {
        let user = Uuid::new_v4();
        let f = super::Friend {
            user: User {
                id: Uuid::new_v4(),
                ..User::default()
            },
            state: FriendState::Friend,
            update_time: 0,
            metadata: "{}".into(),
            position: 42,
        };
        let c = cursor_after(user, None, &f.view().bound());
        assert_eq!(resume(user, None, &c).unwrap().position, 42);
        assert!(resume(user, Some(FriendState::Friend), &c).is_err());
        assert!(resume(Uuid::new_v4(), None, &c).is_err());
        assert!(resume(user, None, "garbage").is_err());
    }
}
