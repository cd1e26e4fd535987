//! Streams: the `(mode, subject, subcontext, label)` keys that every realtime
//! feature (status, chat, notifications, later matches and parties) tracks
//! presences on and routes messages through.

use std::fmt;
use std::sync::Arc;

use uuid::Uuid;

/// What a stream carries. The numbers are Nakama's, so they can travel in
/// `Stream.mode` on the wire unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum StreamMode {
    /// One per user: where that user's notifications are pushed.
    Notifications = 0,
    /// One per user: that user's online status, seen by followers.
    Status = 1,
    /// A chat room; the label is the room name.
    ChatRoom = 2,
    /// A group's chat; the subject is the group id.
    ChatGroup = 3,
    /// A direct conversation; subject and subcontext are the two users.
    ChatDirect = 4,
    MatchRelayed = 5,
    MatchAuthoritative = 6,
    Party = 7,
}

impl StreamMode {
    pub fn as_u8(self) -> u8 {
        self as u8
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
            label: Arc::from(label),
        }
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
