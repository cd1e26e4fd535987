//! Notifications: messages to one user, pushed live to that user's sockets
//! and stored when persistent (listing and deleting them is in
//! `notification_service`).

use uuid::Uuid;

/// Most notifications one page may hold.
pub const MAX_LIST_LIMIT: u32 = 100;
/// Most ids one delete may name.
pub const MAX_DELETE_IDS: usize = 100;

/// Nakama's reserved code for "someone wants to chat".
pub const CODE_DM_REQUEST: i32 = -1;
/// Nakama's code: someone invited the user to be friends.
pub const CODE_FRIEND_REQUEST: i32 = -2;
/// Nakama's code: someone accepted the user's friend invite.
pub const CODE_FRIEND_ACCEPT: i32 = -3;
/// Nakama's code: the user was added to a group.
pub const CODE_GROUP_ADD: i32 = -4;
/// Nakama's code: someone asks to join a group the user administers.
pub const CODE_GROUP_JOIN_REQUEST: i32 = -5;
/// Nakama's code: a platform friend of the user joined the game and is
/// now their friend here (Facebook and Steam imports).
pub const CODE_FRIEND_JOIN_GAME: i32 = -6;
/// Nakama's code: someone removed the user as a friend.
pub const CODE_FRIEND_REMOVE: i32 = -9;
/// Nakama's code of the notice a socket gets when `session.single_socket`
/// replaces it.
pub const CODE_SINGLE_SOCKET: i32 = -7;
/// Nakama's code of the notice a banned user's sockets get before they close.
pub const CODE_USER_BANNED: i32 = -8;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub id: Uuid,
    pub user_id: Uuid,
    pub subject: String,
    /// A JSON object.
    pub content: String,
    pub code: i32,
    /// Nil for the system.
    pub sender_id: Uuid,
    /// Microseconds since the UNIX epoch.
    pub create_time_us: i64,
    pub persistent: bool,
}

impl Notification {
    /// What a module's notification must be to be stored and read back by
    /// every reader: content a JSON object under the stored-JSON rule, and
    /// a subject without NUL.
    pub fn check(&self) -> Result<(), crate::error::ApiError> {
        crate::stored_json::check_name(&self.subject, "notification subject", usize::MAX)?;
        crate::stored_json::check_object(&self.content, "notification content")
    }
}
