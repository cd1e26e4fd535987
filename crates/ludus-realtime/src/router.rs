//! The stream router: sends one message to every presence on a stream, or to
//! a list of sessions, through the [`Bus`]. The message is wrapped once in an
//! [`Encoded`], so it is serialized at most once per wire format however many
//! recipients it has.

use std::sync::Arc;

use ludus_proto::realtime::Envelope;
use uuid::Uuid;

use crate::bus::Bus;
use crate::codec::Encoded;
use crate::stream::Stream;
use crate::tracker::PresenceTracker;

#[derive(Clone)]
pub(crate) struct StreamRouter {
    tracker: Arc<PresenceTracker>,
    bus: Arc<dyn Bus>,
}

impl std::fmt::Debug for StreamRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamRouter").finish_non_exhaustive()
    }
}

impl StreamRouter {
    pub(crate) fn new(tracker: Arc<PresenceTracker>, bus: Arc<dyn Bus>) -> StreamRouter {
        StreamRouter { tracker, bus }
    }

    /// Sends to every presence on `stream` (hidden ones too), except `skip`.
    pub(crate) fn send_to_stream(&self, stream: &Stream, envelope: Envelope, skip: Option<Uuid>) {
        let mut sessions = self.tracker.session_ids(stream);
        if let Some(skip) = skip {
            sessions.retain(|s| *s != skip);
        }
        self.send_to_sessions(&sessions, envelope);
    }

    pub(crate) fn send_to_sessions(&self, sessions: &[Uuid], envelope: Envelope) {
        if sessions.is_empty() {
            return;
        }
        self.bus
            .deliver(sessions, &Arc::new(Encoded::new(envelope)));
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
        let router = StreamRouter::new(tracker.clone(), Arc::new(LocalBus::new(registry.clone())));
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
        let router = StreamRouter::new(tracker.clone(), Arc::new(LocalBus::new(registry.clone())));
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
        let router = StreamRouter::new(tracker.clone(), Arc::new(LocalBus::new(registry.clone())));
        let room = Stream::new(StreamMode::ChatRoom, Uuid::nil(), Uuid::nil(), "r");
        let a = join(&tracker, &registry, &room, Format::Json, 4);
        let b = join(&tracker, &registry, &room, Format::Json, 4);
        router.send_to_stream(&room, Envelope::default(), Some(a.id()));
        assert!(a.outbound().is_empty());
        assert_eq!(b.outbound().len(), 1);
    }
}
