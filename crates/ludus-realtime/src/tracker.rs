//! The presence tracker: which sessions are on which streams, with each
//! presence's metadata (format, status, hidden, persistence); and
//! [`Presence`], the one presence type of the realtime layer.
//!
//! It only keeps the books, behind the [`crate::Hub`]. Turning a join or
//! leave into an event on the wire is the job of the feature that owns the
//! stream's mode.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use ludus_proto::realtime::UserPresence;
use uuid::Uuid;

use crate::codec::Format;
use crate::stream::{Stream, StreamMode};

/// What a presence carries on a stream besides who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresenceMeta {
    pub format: Format,
    /// Hidden presences receive stream messages but are neither listed nor
    /// announced.
    pub hidden: bool,
    pub persistence: bool,
    pub status: Arc<str>,
}

impl Default for PresenceMeta {
    fn default() -> Self {
        PresenceMeta {
            format: Format::Json,
            hidden: false,
            persistence: false,
            status: crate::stream::shared_str(""),
        }
    }
}

/// A session of a user on a node: one presence on a stream, a player in a
/// match, a member of a party or of a matchmaker ticket. The realtime
/// layer's one presence type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presence {
    pub user_id: Uuid,
    pub session_id: Uuid,
    /// Shared with the session: cloning a presence copies no text.
    pub username: Arc<str>,
    /// The node the session is connected to (`name`).
    pub node: Arc<str>,
    pub meta: PresenceMeta,
}

impl Presence {
    /// A presence with default metadata (visible, no status, JSON).
    pub fn new(user_id: Uuid, session_id: Uuid, username: Arc<str>, node: Arc<str>) -> Presence {
        Presence {
            user_id,
            session_id,
            username,
            node,
            meta: PresenceMeta::default(),
        }
    }

    /// The wire form; `status` is set for status streams only.
    pub fn to_wire(&self, with_status: bool) -> UserPresence {
        UserPresence {
            user_id: self.user_id.to_string(),
            session_id: self.session_id.to_string(),
            username: self.username.to_string(),
            persistence: self.meta.persistence,
            status: with_status.then(|| self.meta.status.to_string().into()),
        }
    }
}

/// What a `track` or `update` changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrackOutcome {
    /// A new presence on the stream.
    Joined,
    /// Already there with the same metadata.
    Unchanged,
    /// Already there; the metadata changed from the old value.
    Updated(Presence),
}

/// The presences on one stream. Most streams hold one presence (a user's
/// notification or status stream), so that one is kept inline: a map of its
/// own would cost about 400 bytes more per socket.
enum Members {
    One(Presence),
    Many(HashMap<Uuid, Presence>),
}

impl Members {
    fn get(&self, session: &Uuid) -> Option<&Presence> {
        match self {
            Members::One(p) => (p.session_id == *session).then_some(p),
            Members::Many(m) => m.get(session),
        }
    }

    /// Puts `presence` in; answers the one it replaced.
    fn insert(&mut self, presence: Presence) -> Option<Presence> {
        match self {
            Members::One(p) if p.session_id == presence.session_id => {
                Some(std::mem::replace(p, presence))
            }
            Members::One(p) => {
                let mut m = HashMap::with_capacity(2);
                m.insert(p.session_id, p.clone());
                m.insert(presence.session_id, presence);
                *self = Members::Many(m);
                None
            }
            Members::Many(m) => m.insert(presence.session_id, presence),
        }
    }

    /// Takes `session` out; a stream left empty must be dropped by the
    /// caller (`is_empty`).
    fn remove(&mut self, session: &Uuid) -> Option<Presence> {
        match self {
            Members::One(p) if p.session_id == *session => {
                // Left as a tombstone the caller removes at once.
                let gone = p.clone();
                *self = Members::Many(HashMap::new());
                Some(gone)
            }
            Members::One(_) => None,
            Members::Many(m) => {
                let gone = m.remove(session)?;
                if m.len() == 1
                    && let Some(last) = std::mem::take(m).into_values().next()
                {
                    *self = Members::One(last);
                }
                Some(gone)
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Members::One(_) => 1,
            Members::Many(m) => m.len(),
        }
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn iter(&self) -> impl Iterator<Item = &Presence> {
        let (one, many) = match self {
            Members::One(p) => (Some(p), None),
            Members::Many(m) => (None, Some(m.values())),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }
}

#[derive(Default)]
struct Inner {
    by_stream: HashMap<Stream, Members>,
    by_session: HashMap<Uuid, Vec<Stream>>,
}

/// What [`PresenceTracker::replace_node`] changed.
#[derive(Debug, Default)]
pub(crate) struct Replaced {
    pub(crate) joined: Vec<(Stream, Presence)>,
    /// The presence now, and the one it replaced (its metadata changed).
    pub(crate) updated: Vec<(Stream, Presence, Presence)>,
    pub(crate) gone: Vec<(Stream, Presence)>,
}

#[derive(Default)]
pub(crate) struct PresenceTracker {
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for PresenceTracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PresenceTracker").finish_non_exhaustive()
    }
}

impl PresenceTracker {
    pub(crate) fn new() -> PresenceTracker {
        PresenceTracker::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Presences tracked, on every stream (the console's status); one pass
    /// over the sessions under the lock, so not for hot paths.
    pub(crate) fn total(&self) -> usize {
        self.lock().by_session.values().map(Vec::len).sum()
    }

    /// Puts a presence on a stream, or updates its metadata if it is there.
    pub(crate) fn track(&self, stream: &Stream, presence: Presence) -> TrackOutcome {
        let mut inner = self.lock();
        let session = presence.session_id;
        let outcome = match inner.by_stream.entry(stream.clone()) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(Members::One(presence.clone()));
                None
            }
            std::collections::hash_map::Entry::Occupied(mut o) => {
                o.get_mut().insert(presence.clone())
            }
        };
        let outcome = match outcome {
            None => TrackOutcome::Joined,
            Some(old) if old == presence => TrackOutcome::Unchanged,
            Some(old) => TrackOutcome::Updated(old),
        };
        if outcome == TrackOutcome::Joined {
            inner
                .by_session
                .entry(session)
                .or_default()
                .push(stream.clone());
        }
        outcome
    }

    /// Takes a session off a stream; returns the presence it had.
    pub(crate) fn untrack(&self, session: Uuid, stream: &Stream) -> Option<Presence> {
        let mut inner = self.lock();
        let members = inner.by_stream.get_mut(stream)?;
        let gone = members.remove(&session)?;
        if members.is_empty() {
            inner.by_stream.remove(stream);
        }
        if let Some(streams) = inner.by_session.get_mut(&session) {
            streams.retain(|s| s != stream);
            if streams.is_empty() {
                inner.by_session.remove(&session);
            }
        }
        Some(gone)
    }

    /// Takes a session off every stream (it disconnected).
    pub(crate) fn untrack_all(&self, session: Uuid) -> Vec<(Stream, Presence)> {
        let mut inner = self.lock();
        let Some(streams) = inner.by_session.remove(&session) else {
            return Vec::new();
        };
        let mut gone = Vec::with_capacity(streams.len());
        for stream in streams {
            if let Some(members) = inner.by_stream.get_mut(&stream) {
                if let Some(p) = members.remove(&session) {
                    gone.push((stream.clone(), p));
                }
                if members.is_empty() {
                    inner.by_stream.remove(&stream);
                }
            }
        }
        gone
    }

    /// Presences on a stream; hidden ones only when asked.
    pub(crate) fn list(&self, stream: &Stream, include_hidden: bool) -> Vec<Presence> {
        self.lock()
            .by_stream
            .get(stream)
            .map(|m| {
                m.iter()
                    .filter(|p| include_hidden || !p.meta.hidden)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Session ids on a stream, hidden included: where its messages go.
    pub(crate) fn session_ids(&self, stream: &Stream) -> Vec<Uuid> {
        self.lock()
            .by_stream
            .get(stream)
            .map(|m| m.iter().map(|p| p.session_id).collect())
            .unwrap_or_default()
    }

    pub(crate) fn get(&self, session: Uuid, stream: &Stream) -> Option<Presence> {
        self.lock().by_stream.get(stream)?.get(&session).cloned()
    }

    pub(crate) fn count(&self, stream: &Stream) -> usize {
        self.lock().by_stream.get(stream).map_or(0, Members::len)
    }

    /// Whether a session is on a stream.
    pub(crate) fn contains(&self, stream: &Stream, session: Uuid) -> bool {
        self.lock()
            .by_stream
            .get(stream)
            .is_some_and(|m| m.get(&session).is_some())
    }

    /// Up to `limit` streams of one mode, with their presence counts.
    pub(crate) fn streams_of_mode(&self, mode: StreamMode, limit: usize) -> Vec<(Stream, usize)> {
        self.lock()
            .by_stream
            .iter()
            .filter(|(s, _)| s.mode == mode)
            .take(limit)
            .map(|(s, m)| (s.clone(), m.len()))
            .collect()
    }

    /// Where a stream's messages go: the sessions on it connected to `node`
    /// (this one) except `skip`, and the other nodes that have any.
    pub(crate) fn targets(
        &self,
        stream: &Stream,
        node: &str,
        skip: Option<Uuid>,
    ) -> (Vec<Uuid>, Vec<Arc<str>>) {
        let inner = self.lock();
        let Some(members) = inner.by_stream.get(stream) else {
            return (Vec::new(), Vec::new());
        };
        let mut local = Vec::with_capacity(members.len());
        let mut remote: Vec<Arc<str>> = Vec::new();
        for p in members.iter() {
            let session = p.session_id;
            if &*p.node == node {
                if Some(session) != skip {
                    local.push(session);
                }
            } else if Some(session) != skip && !remote.iter().any(|n| n == &p.node) {
                remote.push(p.node.clone());
            }
        }
        (local, remote)
    }

    /// The node a session is connected to, if it is on any stream.
    pub(crate) fn node_of(&self, session: Uuid) -> Option<Arc<str>> {
        let inner = self.lock();
        let stream = inner.by_session.get(&session)?.first()?;
        Some(inner.by_stream.get(stream)?.get(&session)?.node.clone())
    }

    /// The presences of `node`'s sessions on the streams `which` accepts.
    pub(crate) fn of_node(
        &self,
        node: &str,
        which: impl Fn(&Stream) -> bool,
    ) -> Vec<(Stream, Presence)> {
        let inner = self.lock();
        let mut out = Vec::new();
        for (stream, members) in &inner.by_stream {
            if !which(stream) {
                continue;
            }
            for p in members.iter() {
                if &*p.node == node {
                    out.push((stream.clone(), p.clone()));
                }
            }
        }
        out
    }

    /// Replaces what is known of `node`'s presences on the streams `which`
    /// accepts by `now` (a snapshot of another node); answers what changed.
    pub(crate) fn replace_node(
        &self,
        node: &str,
        which: impl Fn(&Stream) -> bool,
        now: Vec<(Stream, Presence)>,
    ) -> Replaced {
        let old = self.of_node(node, &which);
        let keep: std::collections::HashSet<(&Stream, Uuid)> =
            now.iter().map(|(s, p)| (s, p.session_id)).collect();
        let mut changes = Replaced::default();
        for (stream, p) in old {
            if !keep.contains(&(&stream, p.session_id))
                && let Some(p) = self.untrack(p.session_id, &stream)
            {
                changes.gone.push((stream, p));
            }
        }
        for (stream, p) in now {
            match self.track(&stream, p.clone()) {
                TrackOutcome::Joined => changes.joined.push((stream, p)),
                TrackOutcome::Updated(old) => changes.updated.push((stream, p, old)),
                TrackOutcome::Unchanged => {}
            }
        }
        changes
    }

    /// Streams one session is on.
    #[cfg(test)]
    pub(crate) fn streams_of(&self, session: Uuid) -> Vec<Stream> {
        self.lock()
            .by_session
            .get(&session)
            .cloned()
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn presence(session: Uuid, status: &str, hidden: bool) -> Presence {
        let mut p = Presence::new(Uuid::new_v4(), session, "u".into(), "node".into());
        p.meta.hidden = hidden;
        p.meta.status = status.into();
        p
    }

    #[test]
    fn track_update_untrack() {
        let t = PresenceTracker::new();
        let s = Stream::new(StreamMode::ChatRoom, Uuid::nil(), Uuid::nil(), "lobby");
        let session = Uuid::new_v4();
        let p = presence(session, "", false);
        assert_eq!(t.track(&s, p.clone()), TrackOutcome::Joined);
        assert_eq!(t.track(&s, p.clone()), TrackOutcome::Unchanged);
        let mut busy = p.clone();
        busy.meta.status = "busy".into();
        assert_eq!(t.track(&s, busy.clone()), TrackOutcome::Updated(p));
        assert_eq!(t.count(&s), 1);
        assert_eq!(t.untrack(session, &s), Some(busy));
        assert_eq!(t.count(&s), 0);
        assert!(t.streams_of(session).is_empty());
    }

    #[test]
    fn a_stream_goes_from_one_member_to_many_and_back() {
        let t = PresenceTracker::new();
        let s = Stream::new(StreamMode::ChatRoom, Uuid::nil(), Uuid::nil(), "room");
        let (one, two, three) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        assert_eq!(t.track(&s, presence(one, "", false)), TrackOutcome::Joined);
        // An update of the only member stays one member.
        assert!(matches!(
            t.track(&s, presence(one, "away", false)),
            TrackOutcome::Updated(_)
        ));
        assert_eq!(t.count(&s), 1);
        assert_eq!(t.track(&s, presence(two, "", false)), TrackOutcome::Joined);
        assert_eq!(t.track(&s, presence(three, "", true)), TrackOutcome::Joined);
        assert_eq!(t.count(&s), 3);
        assert_eq!(t.list(&s, false).len(), 2);
        let mut ids = t.session_ids(&s);
        ids.sort();
        let mut want = vec![one, two, three];
        want.sort();
        assert_eq!(ids, want);
        assert!(t.untrack(two, &s).is_some());
        assert!(t.untrack(two, &s).is_none());
        assert!(t.untrack(one, &s).is_some());
        // Down to one member again: it is still found, and the last leave
        // drops the stream.
        assert!(t.contains(&s, three));
        assert!(!t.contains(&s, one));
        assert_eq!(t.get(three, &s).map(|p| p.session_id), Some(three));
        assert!(t.untrack(one, &s).is_none());
        assert!(t.untrack(three, &s).is_some());
        assert_eq!(t.count(&s), 0);
        assert!(t.lock().by_stream.is_empty());
        assert_eq!(t.track(&s, presence(two, "", false)), TrackOutcome::Joined);
        assert_eq!(t.list(&s, false)[0].session_id, two);
    }

    #[test]
    fn hidden_presences_receive_but_are_not_listed() {
        let t = PresenceTracker::new();
        let s = Stream::notifications(Uuid::new_v4());
        let session = Uuid::new_v4();
        t.track(&s, presence(session, "", true));
        assert!(t.list(&s, false).is_empty());
        assert_eq!(t.list(&s, true).len(), 1);
        assert_eq!(t.session_ids(&s), vec![session]);
    }

    #[test]
    fn untrack_all_leaves_every_stream() {
        let t = PresenceTracker::new();
        let session = Uuid::new_v4();
        let a = Stream::new(StreamMode::ChatRoom, Uuid::nil(), Uuid::nil(), "a");
        let b = Stream::new(StreamMode::ChatRoom, Uuid::nil(), Uuid::nil(), "b");
        t.track(&a, presence(session, "", false));
        t.track(&b, presence(session, "", false));
        let gone = t.untrack_all(session);
        assert_eq!(gone.len(), 2);
        assert_eq!(t.count(&a) + t.count(&b), 0);
        assert!(t.untrack_all(session).is_empty());
    }
}
