//! Online status ([`Status`]): who follows whom, the `status_follow`,
//! `status_unfollow` and `status_update` requests, and the
//! `status_presence_event` pushes to followers.
//!
//! A user's status lives as a presence on that user's status stream (mode 1);
//! followers are kept here, outside the tracker, as in Nakama, so following
//! someone costs nothing on their side until they change status. A session
//! with no status presence appears offline.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use ludus_core::Store;
use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::{
    Status as StatusWire, StatusFollow, StatusPresenceEvent, StatusUnfollow, StatusUpdate,
    UserPresence,
};
use uuid::Uuid;

use crate::error::RtError;
use crate::hub::{Announce, Hub, push, visible};
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
struct Follows {
    inner: Mutex<Inner>,
}

impl Follows {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn follow(&self, session: Uuid, users: impl IntoIterator<Item = Uuid>) {
        let mut inner = self.lock();
        for user in users {
            inner.followers.entry(user).or_default().insert(session);
            inner.following.entry(session).or_default().insert(user);
        }
    }

    fn unfollow(&self, session: Uuid, users: &[Uuid]) {
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

    fn unfollow_all(&self, session: Uuid) {
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
    fn followers(&self, user: Uuid) -> Vec<Uuid> {
        self.lock()
            .followers
            .get(&user)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }

    #[cfg(test)]
    fn is_following(&self, session: Uuid, user: Uuid) -> bool {
        self.lock()
            .following
            .get(&session)
            .is_some_and(|s| s.contains(&user))
    }
}

/// Online status and following, over the hub.
pub struct Status {
    hub: Arc<Hub>,
    store: Arc<dyn Store>,
    follows: Follows,
}

impl std::fmt::Debug for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Status").finish_non_exhaustive()
    }
}

impl Status {
    pub(crate) fn new(hub: Arc<Hub>, store: Arc<dyn Store>) -> Status {
        Status {
            hub,
            store,
            follows: Follows::default(),
        }
    }

    /// Whether a user appears online: a session of theirs is on their status
    /// stream (it connected with `status=true` or set a status), as Nakama's
    /// status registry answers `online` for users and accounts.
    pub fn is_online(&self, user: Uuid) -> bool {
        self.hub.count(&Stream::status(user)) > 0
    }

    /// A new session follows its own user (so the user's other sessions
    /// see changes), and with `?status=true` appears online.
    pub(crate) fn connect(&self, session: &SessionHandle, online: bool) {
        self.follows.follow(session.id(), [session.user_id()]);
        if online {
            let a = self.hub.track(
                &Stream::status(session.user_id()),
                self.hub.presence_of(session),
            );
            self.announce_change(&a);
        }
    }

    /// A gone session follows nobody (its status presence left with its
    /// other streams).
    pub(crate) fn disconnect(&self, session: Uuid) {
        self.follows.unfollow_all(session);
    }

    /// `status_follow`: follows users by id or username and answers with the
    /// status presences they have now. Unknown users are skipped, as in Nakama.
    pub async fn follow(
        &self,
        session: &SessionHandle,
        req: StatusFollow,
    ) -> Result<StatusWire, RtError> {
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
            return Ok(StatusWire::default());
        }
        let wanted: Vec<Uuid> = ids.into_iter().collect();
        let found = crate::existing_users(&*self.store, &wanted, &usernames).await?;
        let follow: Vec<Uuid> = found
            .into_iter()
            .filter(|u| *u != session.user_id())
            .collect();
        self.follows.follow(session.id(), follow.iter().copied());
        let mut presences = Vec::new();
        for user in follow {
            presences.extend(
                self.hub
                    .presences(&Stream::status(user), false)
                    .iter()
                    .map(|p| p.to_wire(true)),
            );
        }
        Ok(StatusWire { presences })
    }

    /// `status_unfollow`.
    pub fn unfollow(&self, session: &SessionHandle, req: StatusUnfollow) -> Result<(), RtError> {
        let mut users = Vec::with_capacity(req.user_ids.len());
        for raw in &req.user_ids {
            let id = Uuid::parse_str(raw).map_err(|_| {
                RtError::bad_input(format!("invalid user id {raw:?}, expected a uuid"))
            })?;
            if id != session.user_id() {
                users.push(id);
            }
        }
        self.follows.unfollow(session.id(), &users);
        Ok(())
    }

    /// `status_update`: sets this session's status, or with no status
    /// appears offline (the status presence is removed).
    pub fn update(&self, session: &SessionHandle, req: StatusUpdate) -> Result<(), RtError> {
        let stream = Stream::status(session.user_id());
        let Some(status) = req.status else {
            if let Some(gone) = self.hub.untrack(session.id(), &stream) {
                self.announce(session.user_id(), &[], &[gone]);
            }
            return Ok(());
        };
        if status.value.len() > MAX_STATUS_LEN {
            return Err(RtError::bad_input(format!(
                "status too long, at most {MAX_STATUS_LEN} bytes"
            )));
        }
        let mut presence = self.hub.presence_of(session);
        presence.meta.status = Arc::from(status.value.as_str());
        let a = self.hub.track(&stream, presence);
        self.announce_change(&a);
        Ok(())
    }

    fn announce_change(&self, a: &Announce) {
        let (joins, leaves) = a.changes();
        self.announce(a.stream.subject, &joins, &leaves);
    }

    /// Sends a status presence event about `user` to its followers.
    pub(crate) fn announce(&self, user: Uuid, joins: &[Presence], leaves: &[Presence]) {
        let (joins, leaves) = (visible(joins), visible(leaves));
        if joins.is_empty() && leaves.is_empty() {
            return;
        }
        let followers = self.follows.followers(user);
        let wire =
            |ps: &[Presence]| -> Vec<UserPresence> { ps.iter().map(|p| p.to_wire(true)).collect() };
        let event = StatusPresenceEvent {
            joins: wire(&joins),
            leaves: wire(&leaves),
        };
        self.hub
            .send_to_followers(user, &followers, push(Message::StatusPresenceEvent(event)));
    }

    /// A status event about `user` from another node, for the sessions
    /// here that follow them.
    pub(crate) fn deliver_to_followers(&self, user: Uuid, message: &Arc<crate::codec::Encoded>) {
        let followers = self.follows.followers(user);
        self.hub.remote_to_sessions(&followers, message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follow_and_unfollow_keep_both_sides_in_step() {
        let r = Follows::default();
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
