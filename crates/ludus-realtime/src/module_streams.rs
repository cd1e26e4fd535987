//! Streams as the server's modules drive them (`nk.stream_*`): tracking
//! any session of this node on any stream, listing, closing, and sending
//! `stream_data`. Presences on a module's own streams (mode 8 and up) are
//! announced with `stream_presence_event`, as Nakama does.

use ludus_proto::realtime::envelope::Message;
use ludus_proto::realtime::{self as rt, Envelope, StreamData, StreamPresenceEvent};
use uuid::Uuid;

use crate::Realtime;
use crate::error::RtError;
use crate::hub::{Hub, visible};
use crate::stream::Stream;
use crate::tracker::{Presence, TrackOutcome};

/// The wire form of a stream key: nil ids are left empty.
pub(crate) fn stream_to_wire(stream: &Stream) -> rt::Stream {
    let id = |u: Uuid| {
        if u.is_nil() {
            String::new()
        } else {
            u.to_string()
        }
    };
    rt::Stream {
        mode: i32::from(stream.mode.as_u8()),
        subject: id(stream.subject),
        subcontext: id(stream.subcontext),
        label: stream.label.to_string(),
    }
}

impl Realtime {
    /// Tracks session `session` of `user` on `stream`, or changes its
    /// metadata; true when newly tracked.
    pub fn stream_user_join(
        &self,
        user: Uuid,
        session: Uuid,
        stream: &Stream,
        hidden: bool,
        persistence: bool,
        status: &str,
    ) -> Result<bool, RtError> {
        let handle = self
            .hub
            .session(session)
            .filter(|s| s.user_id() == user)
            .ok_or_else(|| {
                RtError::bad_input(
                    "session id does not exist: no such session of that user on this node",
                )
            })?;
        let outcome = self.track(&handle, stream, hidden, persistence, status);
        Ok(outcome == TrackOutcome::Joined)
    }

    /// Takes a user's session off a stream; false when it was not there.
    pub fn stream_user_leave(&self, user: Uuid, session: Uuid, stream: &Stream) -> bool {
        match self.hub.presence(session, stream) {
            Some(p) if p.user_id == user => self.untrack(session, stream),
            _ => false,
        }
    }

    /// Takes every presence off a stream.
    pub fn stream_close(&self, stream: &Stream) {
        for p in self.hub.presences(stream, true) {
            self.untrack(p.session_id, stream);
        }
    }

    /// Sends a whole envelope, as the module built it
    /// (`nk.stream_send_raw`), to every presence on the stream, or to
    /// `sessions` only.
    pub fn stream_send_raw(&self, stream: &Stream, envelope: Envelope, sessions: &[Uuid]) {
        if sessions.is_empty() {
            self.hub.send_to_stream(stream, envelope, None);
        } else {
            self.hub.send_to_sessions(sessions, envelope);
        }
    }

    /// Sends `data` to every presence on the stream, or to `sessions` only.
    pub fn stream_send(&self, stream: &Stream, data: String, sessions: &[Uuid], reliable: bool) {
        let envelope = Envelope {
            cid: String::new(),
            message: Some(Message::StreamData(StreamData {
                stream: Some(stream_to_wire(stream)),
                sender: None,
                data,
                reliable,
            })),
        };
        if sessions.is_empty() {
            self.hub.send_to_stream(stream, envelope, None);
        } else {
            self.hub.send_to_sessions(sessions, envelope);
        }
    }
}

/// Announces joins and leaves (the visible ones) on a module's own stream
/// to everyone on it.
pub(crate) fn announce(hub: &Hub, stream: &Stream, joins: &[Presence], leaves: &[Presence]) {
    let (joins, leaves) = (visible(joins), visible(leaves));
    if joins.is_empty() && leaves.is_empty() {
        return;
    }
    hub.send_to_stream(
        stream,
        Envelope {
            cid: String::new(),
            message: Some(Message::StreamPresenceEvent(StreamPresenceEvent {
                stream: Some(stream_to_wire(stream)),
                joins: joins.iter().map(|p| p.to_wire(true)).collect(),
                leaves: leaves.iter().map(|p| p.to_wire(true)).collect(),
            })),
        },
        None,
    );
}
