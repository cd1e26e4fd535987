//! Online status: who follows whom, and the `status_follow`,
//! `status_unfollow` and `status_update` requests.
//!
//! A user's status lives as a presence on that user's status stream (mode 1);
//! followers are kept here, outside the tracker, as in Nakama, so following
//! someone costs nothing on their side until they change status. A session
//! with no status presence appears offline.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

use ludus_proto::realtime::{Status, StatusFollow, StatusUnfollow, StatusUpdate, UserPresence};
use uuid::Uuid;

use crate::Realtime;
use crate::error::RtError;
use crate::registry::SessionHandle;
use crate::stream::Stream;
use crate::tracker::Presence;

/// Longest status text, in bytes (Nakama's limit).
pub(crate) const MAX_STATUS_LEN: usize = 2048;
/// Most users one `status_follow` may name.
pub(crate) const MAX_FOLLOW: usize = 1000;

#[derive(Default)]
struct Inner {
    /// user → sessions following them.
    followers: HashMap<Uuid, HashSet<Uuid>>,
    /// session → users it follows.
    following: HashMap<Uuid, HashSet<Uuid>>,
}

/// Follow relations of this node's sessions.
#[derive(Default)]
pub struct StatusRegistry {
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for StatusRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusRegistry").finish_non_exhaustive()
    }
}

impl StatusRegistry {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn follow(&self, session: Uuid, users: impl IntoIterator<Item = Uuid>) {
        let mut inner = self.lock();
        for user in users {
            inner.followers.entry(user).or_default().insert(session);
            inner.following.entry(session).or_default().insert(user);
        }
    }

    pub fn unfollow(&self, session: Uuid, users: &[Uuid]) {
        let mut inner = self.lock();
        for user in users {
            if let Some(f) = inner.followers.get_mut(user) {
                f.remove(&session);
                if f.is_empty() {
                    inner.followers.remove(user);
                }
            }
            if let Some(f) = inner.following.get_mut(&session) {
                f.remove(user);
                if f.is_empty() {
                    inner.following.remove(&session);
                }
            }
        }
    }

    pub fn unfollow_all(&self, session: Uuid) {
        let mut inner = self.lock();
        let Some(users) = inner.following.remove(&session) else {
            return;
        };
        for user in users {
            if let Some(f) = inner.followers.get_mut(&user) {
                f.remove(&session);
                if f.is_empty() {
                    inner.followers.remove(&user);
                }
            }
        }
    }

    /// Sessions following `user`.
    pub fn followers(&self, user: Uuid) -> Vec<Uuid> {
        self.lock()
            .followers
            .get(&user)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }

    pub fn is_following(&self, session: Uuid, user: Uuid) -> bool {
        self.lock()
            .following
            .get(&session)
            .is_some_and(|s| s.contains(&user))
    }
}

impl Realtime {
    /// Whether a user appears online: a session of theirs is on their status
    /// stream (it connected with `status=true` or set a status), as Nakama's
    /// status registry answers `online` for users and accounts.
    pub fn is_online(&self, user: Uuid) -> bool {
        self.tracker.count(&Stream::status(user)) > 0
    }
}

impl Realtime {
    /// `status_follow`: follows users by id or username and answers with the
    /// status presences they have now. Unknown users are skipped, as in Nakama.
    pub async fn status_follow(
        &self,
        session: &SessionHandle,
        req: StatusFollow,
    ) -> Result<Status, RtError> {
        if req.user_ids.len() + req.usernames.len() > MAX_FOLLOW {
            return Err(RtError::bad_input(format!(
                "too many users to follow, at most {MAX_FOLLOW} at once"
            )));
        }
        let mut ids = HashSet::new();
        for raw in &req.user_ids {
            let id = Uuid::parse_str(raw).map_err(|_| {
                RtError::bad_input(format!("invalid user id {raw:?}, expected a uuid"))
            })?;
            if id != session.user_id() {
                ids.insert(id);
            }
        }
        let mut usernames = Vec::new();
        for name in &req.usernames {
            if name.is_empty() {
                return Err(RtError::bad_input("invalid username, it must not be empty"));
            }
            if name != session.username() {
                usernames.push(name.clone());
            }
        }
        if ids.is_empty() && usernames.is_empty() {
            return Ok(Status::default());
        }
        let wanted: Vec<Uuid> = ids.into_iter().collect();
        let found = self.existing_users(&wanted, &usernames).await?;
        let follow: Vec<Uuid> = found
            .into_iter()
            .filter(|u| *u != session.user_id())
            .collect();
        self.status.follow(session.id(), follow.iter().copied());
        let mut presences = Vec::new();
        for user in follow {
            presences.extend(
                self.tracker
                    .list(&Stream::status(user), false)
                    .iter()
                    .map(|p| p.to_wire(true)),
            );
        }
        Ok(Status { presences })
    }

    /// `status_unfollow`.
    pub fn status_unfollow(
        &self,
        session: &SessionHandle,
        req: StatusUnfollow,
    ) -> Result<(), RtError> {
        let mut users = Vec::with_capacity(req.user_ids.len());
        for raw in &req.user_ids {
            let id = Uuid::parse_str(raw).map_err(|_| {
                RtError::bad_input(format!("invalid user id {raw:?}, expected a uuid"))
            })?;
            if id != session.user_id() {
                users.push(id);
            }
        }
        self.status.unfollow(session.id(), &users);
        Ok(())
    }

    /// `status_update`: sets this session's status, or with no status
    /// appears offline (the status presence is removed).
    pub fn status_update(&self, session: &SessionHandle, req: StatusUpdate) -> Result<(), RtError> {
        let stream = Stream::status(session.user_id());
        let Some(status) = req.status else {
            self.untrack(session.id(), &stream);
            return Ok(());
        };
        if status.value.len() > MAX_STATUS_LEN {
            return Err(RtError::bad_input(format!(
                "status too long, at most {MAX_STATUS_LEN} bytes"
            )));
        }
        self.track(session, &stream, false, false, &status.value);
        Ok(())
    }

    /// Sends a status presence event for `user` to its followers.
    pub(crate) fn emit_status_event(&self, user: Uuid, joins: &[Presence], leaves: &[Presence]) {
        let followers = self.status.followers(user);
        if followers.is_empty() {
            return;
        }
        let wire =
            |ps: &[Presence]| -> Vec<UserPresence> { ps.iter().map(|p| p.to_wire(true)).collect() };
        let event = ludus_proto::realtime::StatusPresenceEvent {
            joins: wire(joins),
            leaves: wire(leaves),
        };
        self.router.send_to_sessions(
            &followers,
            ludus_proto::realtime::Envelope {
                cid: String::new(),
                message: Some(ludus_proto::realtime::envelope::Message::StatusPresenceEvent(event)),
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follow_and_unfollow_keep_both_sides_in_step() {
        let r = StatusRegistry::default();
        let (s, a, b) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        r.follow(s, [a, b]);
        assert_eq!(r.followers(a), vec![s]);
        r.unfollow(s, &[a]);
        assert!(r.followers(a).is_empty());
        assert!(r.is_following(s, b));
        r.unfollow_all(s);
        assert!(r.followers(b).is_empty());
        assert!(r.lock().following.is_empty());
    }
}
