//! Reading a chat channel's history: who may read which channel, and paging
//! with opaque cursors, as `GET /v2/channel/{channel_id}` answers.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use uuid::Uuid;

use crate::chat::{ChannelKey, ChannelMessage, MAX_HISTORY_LIMIT, MODE_GROUP, MessageBound};
use crate::error::ApiError;
use crate::group::GroupRole;
use crate::store::Store;

/// One page of history.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HistoryPage {
    pub messages: Vec<ChannelMessage>,
    pub next_cursor: Option<String>,
    pub prev_cursor: Option<String>,
    /// Where a client that keeps this page can later ask for only what is
    /// newer (a forward cursor past the page's last message), as Nakama's
    /// `cacheable_cursor`.
    pub cacheable_cursor: Option<String>,
}

/// A history cursor: the channel, the list direction, whether it pages on
/// (next) or back (prev), and the message to continue from.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Cursor {
    channel: String,
    forward: bool,
    next: bool,
    bound: MessageBound,
}

impl Cursor {
    fn encode(&self) -> String {
        let raw = format!(
            "1|{}|{}|{}|{}|{}",
            u8::from(self.forward),
            u8::from(self.next),
            self.bound.create_time_us,
            self.bound.id,
            self.channel
        );
        URL_SAFE_NO_PAD.encode(raw)
    }

    fn decode(s: &str) -> Option<Cursor> {
        let raw = URL_SAFE_NO_PAD.decode(s.trim_end_matches('=')).ok()?;
        let raw = String::from_utf8(raw).ok()?;
        let mut parts = raw.splitn(6, '|');
        if parts.next()? != "1" {
            return None;
        }
        let flag = |p: &str| match p {
            "0" => Some(false),
            "1" => Some(true),
            _ => None,
        };
        let forward = flag(parts.next()?)?;
        let next = flag(parts.next()?)?;
        let create_time_us = parts.next()?.parse().ok()?;
        let id = Uuid::parse_str(parts.next()?).ok()?;
        let channel = parts.next()?.to_owned();
        Some(Cursor {
            channel,
            forward,
            next,
            bound: MessageBound { create_time_us, id },
        })
    }
}

/// Reads a page of a channel's history, as `GET /v2/channel/{channel_id}`.
///
/// `forward` lists oldest first, otherwise newest first. A `next_cursor`
/// continues in the same direction; a `prev_cursor` (given once a cursor was
/// used) goes back to the page before.
///
/// `caller` `None` is the server (`nk.channel_messages_list`), which reads
/// every channel.
pub async fn channel_history(
    store: &dyn Store,
    caller: Option<Uuid>,
    channel_id: &str,
    limit: Option<u32>,
    forward: bool,
    cursor: Option<&str>,
) -> Result<HistoryPage, ApiError> {
    let key = ChannelKey::parse(channel_id).map_err(|e| ApiError::invalid(e.to_string()))?;
    let Some(caller) = caller else {
        // The server reads every channel.
        return history_page(store, &key, channel_id, limit, forward, cursor).await;
    };
    if key.mode == MODE_GROUP {
        // A group's history is for its members (superadmins, admins, members).
        let role = store.group_role(key.subject, caller).await?;
        if !role.is_some_and(GroupRole::is_member) {
            return Err(ApiError::not_found(
                "group not found, or you are not a member of it",
            ));
        }
    } else if !key.readable_by(caller) {
        return Err(ApiError::invalid(
            "invalid channel id, a direct conversation is readable only by its two users",
        ));
    }
    history_page(store, &key, channel_id, limit, forward, cursor).await
}

/// A page of `key`'s history, whoever may read it.
async fn history_page(
    store: &dyn Store,
    key: &ChannelKey,
    channel_id: &str,
    limit: Option<u32>,
    forward: bool,
    cursor: Option<&str>,
) -> Result<HistoryPage, ApiError> {
    let limit = limit.unwrap_or(1);
    if !(1..=MAX_HISTORY_LIMIT).contains(&limit) {
        return Err(ApiError::invalid(format!(
            "invalid limit, it must be between 1 and {MAX_HISTORY_LIMIT}"
        )));
    }
    let cursor = match cursor.filter(|c| !c.is_empty()) {
        None => None,
        Some(raw) => {
            let c = Cursor::decode(raw).ok_or_else(|| {
                ApiError::invalid("invalid cursor, pass a cursor from an earlier page")
            })?;
            if c.channel != channel_id || c.forward != forward {
                return Err(ApiError::invalid(
                    "invalid cursor, it belongs to another channel or direction",
                ));
            }
            Some(c)
        }
    };
    // Paging on lists in the page's own order; paging back lists the other
    // way and flips the result.
    let (ascending, bound) = match &cursor {
        None => (forward, None),
        Some(c) => (forward == c.next, Some(c.bound)),
    };
    let mut messages = store
        .list_channel_messages(key, bound, ascending, limit as usize + 1)
        .await?;
    let more = messages.len() > limit as usize;
    messages.truncate(limit as usize);
    let going_back = cursor.as_ref().is_some_and(|c| !c.next);
    if going_back {
        messages.reverse();
    }
    let bound_of = |m: &ChannelMessage| MessageBound {
        create_time_us: m.create_time_us,
        id: m.id,
    };
    let make = |next: bool, m: &ChannelMessage| {
        Cursor {
            channel: channel_id.to_owned(),
            forward,
            next,
            bound: bound_of(m),
        }
        .encode()
    };
    // A next page exists when more rows followed (paging on) or when we came
    // back from a later page.
    let next_cursor = if more || going_back {
        messages.last().map(|m| make(true, m))
    } else {
        None
    };
    let prev_cursor = if cursor.is_some() && (!going_back || more) {
        messages.first().map(|m| make(false, m))
    } else {
        None
    };
    // Nakama's rule: the last message of a non-empty page; with an empty
    // page, the cursor the client came with (turned to page forward when it
    // paged backward).
    let cacheable_cursor = match (messages.last(), &cursor) {
        (Some(last), _) => Some(
            Cursor {
                channel: channel_id.to_owned(),
                forward: true,
                next: true,
                bound: bound_of(last),
            }
            .encode(),
        ),
        (None, Some(c)) if forward => Some(c.encode()),
        (None, Some(c)) => Some(
            Cursor {
                forward: true,
                next: true,
                ..c.clone()
            }
            .encode(),
        ),
        (None, None) => None,
    };
    Ok(HistoryPage {
        messages,
        next_cursor,
        prev_cursor,
        cacheable_cursor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        let c = Cursor {
            channel: "2...room.with.dots".into(),
            forward: false,
            next: true,
            bound: MessageBound {
                create_time_us: 1_700_000_000_123_456,
                id: Uuid::from_u128(7),
            },
        };
        assert_eq!(Cursor::decode(&c.encode()), Some(c));
        assert_eq!(Cursor::decode("!!"), None);
        assert_eq!(Cursor::decode(&URL_SAFE_NO_PAD.encode("2|1|1|x|y|z")), None);
    }
}
