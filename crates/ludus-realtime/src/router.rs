//! The stream router: sends one message to every presence on a stream, or to
//! a list of sessions: straight into the queues of this node's sessions, and
//! through the [`Bus`] once per other node that has any. The message is
//! wrapped once in an [`Encoded`], so it is serialized at most once per wire
//! format however many recipients it has.

use std::cell::Cell;
use std::sync::Arc;

use ludus_proto::realtime::Envelope;
use uuid::Uuid;

use crate::bus::Bus;
use crate::codec::Encoded;
use crate::registry::SessionRegistry;
use crate::stream::Stream;
use crate::tracker::PresenceTracker;

thread_local! {
    /// Set while this thread announces what another node can no longer
    /// announce itself (it died): every node tells its own sessions only.
    static LOCAL_ONLY: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with deliveries kept to this node's sessions.
pub(crate) fn local_only<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            LOCAL_ONLY.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(LOCAL_ONLY.with(|c| c.replace(true)));
    f()
}

#[derive(Clone)]
pub(crate) struct StreamRouter {
    node: Arc<str>,
    tracker: Arc<PresenceTracker>,
    sessions: Arc<SessionRegistry>,
    bus: Arc<dyn Bus>,
}

impl std::fmt::Debug for StreamRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamRouter").finish_non_exhaustive()
    }
}

impl StreamRouter {
    pub(crate) fn new(
        node: Arc<str>,
        tracker: Arc<PresenceTracker>,
        sessions: Arc<SessionRegistry>,
        bus: Arc<dyn Bus>,
    ) -> StreamRouter {
        StreamRouter {
            node,
            tracker,
            sessions,
            bus,
        }
    }

    pub(crate) fn bus(&self) -> &Arc<dyn Bus> {
        &self.bus
    }

    /// Sends to every presence on `stream` (hidden ones too), except `skip`.
    pub(crate) fn send_to_stream(&self, stream: &Stream, envelope: Envelope, skip: Option<Uuid>) {
        let (local, remote) = self.tracker.targets(stream, &self.node, skip);
        if stream.is_node_local() && self.bus.clustered() && !LOCAL_ONLY.with(Cell::get) {
            // Other nodes' presences on it are not known here: every node
            // delivers to its own.
            let message = Arc::new(Encoded::new(envelope));
            self.deliver_local(&local, &message);
            self.bus.to_stream_everywhere(stream, skip, &message);
            return;
        }
        let remote_too = !remote.is_empty() && !LOCAL_ONLY.with(Cell::get);
        if local.is_empty() && !remote_too {
            return;
        }
        let message = Arc::new(Encoded::new(envelope));
        self.deliver_local(&local, &message);
        if remote_too {
            for node in remote {
                self.bus.to_stream(&node, stream, skip, &message);
            }
        }
    }

    /// Sends to each of `sessions`, wherever it is connected.
    pub(crate) fn send_to_sessions(&self, sessions: &[Uuid], envelope: Envelope) {
        if sessions.is_empty() {
            return;
        }
        let message = Arc::new(Encoded::new(envelope));
        let mut elsewhere: Vec<(Arc<str>, Vec<Uuid>)> = Vec::new();
        let mut unknown = Vec::new();
        for id in sessions {
            if let Some(session) = self.sessions.get(*id) {
                // A full queue closes that session; the others carry on.
                let _ = session.send(&message);
            } else if let Some(node) = self.tracker.node_of(*id) {
                match elsewhere.iter_mut().find(|(n, _)| *n == node) {
                    Some((_, ids)) => ids.push(*id),
                    None => elsewhere.push((node, vec![*id])),
                }
            } else {
                unknown.push(*id);
            }
        }
        if LOCAL_ONLY.with(Cell::get) {
            return;
        }
        for (node, ids) in elsewhere {
            self.bus.to_sessions(&node, &ids, &message);
        }
        // A session on no replicated stream (an idle socket of another node
        // has only its node-local notification stream): every node is asked.
        if !unknown.is_empty() && self.bus.clustered() {
            self.bus.to_sessions_everywhere(&unknown, &message);
        }
    }

    /// Sends to `followers` (this node's sessions following `user`) and to
    /// the followers of `user` on every other node.
    pub(crate) fn send_to_followers(&self, user: Uuid, followers: &[Uuid], envelope: Envelope) {
        let message = Arc::new(Encoded::new(envelope));
        self.deliver_local(followers, &message);
        if !LOCAL_ONLY.with(Cell::get) {
            self.bus.to_followers(user, &message);
        }
    }

    /// Delivers a message another node sent for `stream` to the sessions on
    /// it connected here, except `skip`.
    pub(crate) fn deliver_stream_here(
        &self,
        stream: &Stream,
        skip: Option<Uuid>,
        message: &Arc<Encoded>,
    ) {
        let (local, _) = self.tracker.targets(stream, &self.node, skip);
        self.deliver_local(&local, message);
    }

    /// Queues `message` for each of `sessions` connected here.
    pub(crate) fn deliver_local(&self, sessions: &[Uuid], message: &Arc<Encoded>) {
        for id in sessions {
            if let Some(session) = self.sessions.get(*id) {
                // A full queue closes that session; the others carry on.
                let _ = session.send(message);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use ludus_proto::realtime::Pong;
    use ludus_proto::realtime::envelope::Message;

    use super::*;
    use crate::bus::LocalBus;
    use crate::codec::Format;
    use crate::outbound::{CloseReason, Next};
    use crate::registry::{SessionHandle, SessionRegistry};
    use crate::stream::StreamMode;
    use crate::tracker::{Presence, PresenceMeta};

    fn join(
        t: &PresenceTracker,
        r: &SessionRegistry,
        s: &Stream,
        format: Format,
        queue: usize,
    ) -> SessionHandle {
        let h = SessionHandle::new(Uuid::new_v4(), Uuid::new_v4(), "u", format, queue);
        r.add(h.clone(), false);
        t.track(
            s,
            Presence {
                meta: PresenceMeta {
                    format,
                    ..Default::default()
                },
                ..Presence::new(h.user_id(), h.id(), "u".into(), "n".into())
            },
        );
        h
    }

    async fn frames(h: &SessionHandle) -> Vec<bytes::Bytes> {
        match h.outbound().next_batch().await {
            Next::Frames(f) => f,
            Next::Close(r) => panic!("closed: {r:?}"),
        }
    }

    #[tokio::test]
    async fn one_encoding_per_format_shared_by_every_recipient() {
        let tracker = Arc::new(PresenceTracker::new());
        let registry = Arc::new(SessionRegistry::new());
        let router = StreamRouter::new(
            "n".into(),
            tracker.clone(),
            registry.clone(),
            Arc::new(LocalBus),
        );
        let room = Stream::new(StreamMode::ChatRoom, Uuid::nil(), Uuid::nil(), "r");
        let j1 = join(&tracker, &registry, &room, Format::Json, 4);
        let j2 = join(&tracker, &registry, &room, Format::Json, 4);
        let p1 = join(&tracker, &registry, &room, Format::Protobuf, 4);
        router.send_to_stream(
            &room,
            Envelope {
                cid: String::new(),
                message: Some(Message::Pong(Pong {})),
            },
            None,
        );
        let (a, b, c) = (frames(&j1).await, frames(&j2).await, frames(&p1).await);
        assert_eq!(
            a[0].as_ptr(),
            b[0].as_ptr(),
            "json bytes are shared, not re-encoded"
        );
        assert_eq!(&a[0][..], br#"{"pong":{}}"#);
        assert_ne!(&c[0][..], &a[0][..]);
    }

    #[tokio::test]
    async fn a_full_queue_closes_only_that_session() {
        let tracker = Arc::new(PresenceTracker::new());
        let registry = Arc::new(SessionRegistry::new());
        let router = StreamRouter::new(
            "n".into(),
            tracker.clone(),
            registry.clone(),
            Arc::new(LocalBus),
        );
        let room = Stream::new(StreamMode::ChatRoom, Uuid::nil(), Uuid::nil(), "r");
        let slow = join(&tracker, &registry, &room, Format::Json, 2);
        let fast = join(&tracker, &registry, &room, Format::Json, 64);
        for _ in 0..3 {
            router.send_to_stream(&room, Envelope::default(), None);
        }
        assert_eq!(slow.outbound().close_reason(), Some(CloseReason::QueueFull));
        assert_eq!(frames(&fast).await.len(), 3);
    }

    #[tokio::test]
    async fn skip_leaves_out_the_sender() {
        let tracker = Arc::new(PresenceTracker::new());
        let registry = Arc::new(SessionRegistry::new());
        let router = StreamRouter::new(
            "n".into(),
            tracker.clone(),
            registry.clone(),
            Arc::new(LocalBus),
        );
        let room = Stream::new(StreamMode::ChatRoom, Uuid::nil(), Uuid::nil(), "r");
        let a = join(&tracker, &registry, &room, Format::Json, 4);
        let b = join(&tracker, &registry, &room, Format::Json, 4);
        router.send_to_stream(&room, Envelope::default(), Some(a.id()));
        assert!(a.outbound().is_empty());
        assert_eq!(b.outbound().len(), 1);
    }
}
