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
        crate::stored_json::check_name(&self.subject, "notification subject", MAX_SUBJECT_CHARS)?;
        crate::stored_json::check_object(&self.content, "notification content")
    }
}

/// Longest subject a notification may have (PostgreSQL's column).
pub const MAX_SUBJECT_CHARS: usize = 255;

/// One change `nk.notifications_update` makes to a stored notification:
/// each field given replaces the stored one; the others stay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationUpdate {
    pub id: Uuid,
    /// A JSON object.
    pub content: Option<String>,
    pub subject: Option<String>,
    pub sender_id: Option<Uuid>,
}

impl NotificationUpdate {
    /// What every stored notification must be: content a JSON object under
    /// the stored-JSON rule, a subject without NUL that the column holds.
    pub fn check(&self) -> Result<(), crate::error::ApiError> {
        if let Some(subject) = &self.subject {
            if subject.is_empty() {
                return Err(crate::error::ApiError::invalid(
                    "notification subject must not be empty",
                ));
            }
            crate::stored_json::check_name(subject, "notification subject", MAX_SUBJECT_CHARS)?;
        }
        match &self.content {
            Some(content) => crate::stored_json::check_object(content, "notification content"),
            None => Ok(()),
        }
    }

    /// `updates` with one entry per id, in first-seen order, each later
    /// change of an id laid over the earlier ones, as applying them one
    /// after the other would leave the row.
    pub fn merged(updates: Vec<NotificationUpdate>) -> Vec<NotificationUpdate> {
        let mut at = std::collections::HashMap::with_capacity(updates.len());
        let mut out: Vec<NotificationUpdate> = Vec::with_capacity(updates.len());
        for u in updates {
            match at.get(&u.id) {
                Some(&i) => {
                    let o: &mut NotificationUpdate = &mut out[i];
                    o.content = u.content.or(o.content.take());
                    o.subject = u.subject.or(o.subject.take());
                    o.sender_id = u.sender_id.or(o.sender_id);
                }
                None => {
                    at.insert(u.id, out.len());
                    out.push(u);
                }
            }
        }
        out
    }
}
