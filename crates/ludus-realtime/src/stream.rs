//! Streams: the `(mode, subject, subcontext, label)` keys that every realtime
//! feature (status, chat, notifications, later matches and parties) tracks
//! presences on and routes messages through.

use std::fmt;
use std::sync::{Arc, LazyLock};

use uuid::Uuid;

/// What a stream carries. The numbers are Nakama's, so they can travel in
/// `Stream.mode` on the wire unchanged; modules may use any other number for
/// streams of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StreamMode {
    /// One per user: where that user's notifications are pushed.
    Notifications,
    /// One per user: that user's online status, seen by followers.
    Status,
    /// A chat room; the label is the room name.
    ChatRoom,
    /// A group's chat; the subject is the group id.
    ChatGroup,
    /// A direct conversation; subject and subcontext are the two users.
    ChatDirect,
    MatchRelayed,
    MatchAuthoritative,
    Party,
    /// A module's own stream (`nk.stream_user_join`), numbered 8-255.
    Custom(u8),
}

impl StreamMode {
    pub fn as_u8(self) -> u8 {
        match self {
            StreamMode::Notifications => 0,
            StreamMode::Status => 1,
            StreamMode::ChatRoom => 2,
            StreamMode::ChatGroup => 3,
            StreamMode::ChatDirect => 4,
            StreamMode::MatchRelayed => 5,
            StreamMode::MatchAuthoritative => 6,
            StreamMode::Party => 7,
            StreamMode::Custom(n) => n,
        }
    }

    pub fn from_u8(n: u8) -> StreamMode {
        match n {
            0 => StreamMode::Notifications,
            1 => StreamMode::Status,
            2 => StreamMode::ChatRoom,
            3 => StreamMode::ChatGroup,
            4 => StreamMode::ChatDirect,
            5 => StreamMode::MatchRelayed,
            6 => StreamMode::MatchAuthoritative,
            7 => StreamMode::Party,
            n => StreamMode::Custom(n),
        }
    }
}

/// A stream key. Cheap to clone: the label is shared.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Stream {
    pub mode: StreamMode,
    pub subject: Uuid,
    pub subcontext: Uuid,
    pub label: Arc<str>,
}

impl Stream {
    /// The status stream of `user`.
    pub fn status(user: Uuid) -> Stream {
        Stream::new(StreamMode::Status, user, Uuid::nil(), "")
    }

    /// The notification stream of `user`.
    pub fn notifications(user: Uuid) -> Stream {
        Stream::new(StreamMode::Notifications, user, Uuid::nil(), "")
    }

    pub fn new(mode: StreamMode, subject: Uuid, subcontext: Uuid, label: &str) -> Stream {
        Stream {
            mode,
            subject,
            subcontext,
            label: shared_str(label),
        }
    }

    /// Whether the stream's presences stay on their node: a user's
    /// notification stream is one hidden presence per socket that nobody
    /// lists, so a cluster does not copy it to every node (which would make
    /// every idle socket cost memory on every node); what is sent to it goes
    /// to every node instead.
    pub fn is_node_local(&self) -> bool {
        self.mode == StreamMode::Notifications
    }
}

/// `text` as shared text; the empty text (most labels and statuses) is one
/// allocation for the whole process rather than one per stream or presence.
pub(crate) fn shared_str(text: &str) -> Arc<str> {
    static EMPTY: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from(""));
    if text.is_empty() {
        EMPTY.clone()
    } else {
        Arc::from(text)
    }
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?}({}, {}, {:?})",
            self.mode, self.subject, self.subcontext, &*self.label
        )
    }
}
