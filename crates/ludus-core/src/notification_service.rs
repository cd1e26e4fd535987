//! A user's stored notifications: listed oldest first with a cursor, and
//! deleted by id.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use uuid::Uuid;

use crate::chat::MessageBound;
use crate::error::ApiError;
use crate::notification::{MAX_DELETE_IDS, MAX_LIST_LIMIT, Notification};
use crate::store::Store;

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
    list_up_to(store, user, limit.unwrap_or(1), cursor, MAX_LIST_LIMIT).await
}

/// [`list`] with a limit of 1 to `max` (modules may list 1000 at once, as
/// in Nakama's `nk.notifications_list`).
pub async fn list_up_to(
    store: &dyn Store,
    user: Uuid,
    limit: u32,
    cursor: Option<&str>,
    max: u32,
) -> Result<NotificationPage, ApiError> {
    if !(1..=max).contains(&limit) {
        return Err(ApiError::invalid(format!(
            "invalid limit, it must be between 1 and {max}"
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
