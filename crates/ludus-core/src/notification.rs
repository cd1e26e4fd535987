//! Notifications: messages to one user, pushed live to that user's sockets
//! and stored when persistent, listed with a cursor and deleted by id.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use uuid::Uuid;

use crate::chat::MessageBound;
use crate::error::ApiError;
use crate::store::Store;

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

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NotificationPage {
    pub notifications: Vec<Notification>,
    /// Continues after this page; Nakama's `cacheable_cursor`.
    pub cursor: Option<String>,
}

fn encode_cursor(b: MessageBound) -> String {
    URL_SAFE_NO_PAD.encode(format!("1|{}|{}", b.create_time_us, b.id))
}

fn decode_cursor(s: &str) -> Option<MessageBound> {
    let raw = String::from_utf8(URL_SAFE_NO_PAD.decode(s.trim_end_matches('=')).ok()?).ok()?;
    let mut parts = raw.splitn(3, '|');
    if parts.next()? != "1" {
        return None;
    }
    let create_time_us = parts.next()?.parse().ok()?;
    let id = Uuid::parse_str(parts.next()?).ok()?;
    Some(MessageBound { create_time_us, id })
}

/// A page of the caller's stored notifications, oldest first.
pub async fn list(
    store: &dyn Store,
    user: Uuid,
    limit: Option<u32>,
    cursor: Option<&str>,
) -> Result<NotificationPage, ApiError> {
    // Nakama lists one notification when the client names no limit.
    let limit = limit.unwrap_or(1);
    if !(1..=MAX_LIST_LIMIT).contains(&limit) {
        return Err(ApiError::invalid(format!(
            "invalid limit, it must be between 1 and {MAX_LIST_LIMIT}"
        )));
    }
    let after = match cursor.filter(|c| !c.is_empty()) {
        None => None,
        Some(c) => Some(decode_cursor(c).ok_or_else(|| {
            ApiError::invalid("invalid cursor, pass the cacheable_cursor of an earlier page")
        })?),
    };
    let notifications = store
        .list_notifications(user, after, limit as usize)
        .await?;
    // Like Nakama's cacheable cursor: always given when the page has rows, so
    // a client can poll for what arrives later.
    let cursor = notifications.last().map(|n| {
        encode_cursor(MessageBound {
            create_time_us: n.create_time_us,
            id: n.id,
        })
    });
    Ok(NotificationPage {
        notifications,
        cursor,
    })
}

/// Deletes the caller's notifications by id; unknown ids are ignored.
pub async fn delete(store: &dyn Store, user: Uuid, ids: &[String]) -> Result<(), ApiError> {
    if ids.len() > MAX_DELETE_IDS {
        return Err(ApiError::invalid(format!(
            "too many ids, at most {MAX_DELETE_IDS} at once"
        )));
    }
    let ids = ids
        .iter()
        .map(|id| {
            Uuid::parse_str(id).map_err(|_| {
                ApiError::invalid(format!("notification id {id:?} is not a valid uuid"))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if ids.is_empty() {
        return Ok(());
    }
    store.delete_notifications(user, &ids).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_round_trips() {
        let b = MessageBound {
            create_time_us: 42,
            id: Uuid::from_u128(9),
        };
        assert_eq!(decode_cursor(&encode_cursor(b)), Some(b));
        assert_eq!(decode_cursor("zz"), None);
    }
}
