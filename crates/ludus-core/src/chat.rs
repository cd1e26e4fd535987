//! Chat channels as the domain sees them: Nakama's channel ids
//! (`<mode>.<subject>.<subcontext>.<label>`), and stored messages (history paging is in
//! `chat_service`).
//!
//! Three kinds of channel exist: rooms (mode 2, the label is the room name),
//! groups (mode 3, the subject is the group id) and direct conversations
//! (mode 4, subject and subcontext are the two users, the smaller id first).

use uuid::Uuid;

/// Stream modes of chat channels (Nakama's numbers).
pub const MODE_ROOM: u8 = 2;
pub const MODE_GROUP: u8 = 3;
pub const MODE_DIRECT: u8 = 4;

/// Longest room name, in bytes.
pub const MAX_ROOM_NAME: usize = 64;
/// Most messages one history page may hold.
pub const MAX_HISTORY_LIMIT: u32 = 100;

/// Message codes of `ChannelMessage.code`.
pub const CODE_CHAT: i32 = 0;
pub const CODE_CHAT_UPDATE: i32 = 1;
pub const CODE_CHAT_REMOVE: i32 = 2;
/// Nakama's codes of the messages a group channel gets when its members
/// change (`ChannelMessageTypeGroupJoin` … `GroupDemote`).
pub const CODE_GROUP_JOIN: i32 = 3;
pub const CODE_GROUP_ADD: i32 = 4;
pub const CODE_GROUP_LEAVE: i32 = 5;
pub const CODE_GROUP_KICK: i32 = 6;
pub const CODE_GROUP_PROMOTE: i32 = 7;
pub const CODE_GROUP_BAN: i32 = 8;
pub const CODE_GROUP_DEMOTE: i32 = 9;

/// The stream key of a chat channel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChannelKey {
    pub mode: u8,
    pub subject: Uuid,
    pub subcontext: Uuid,
    pub label: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    #[error("invalid channel id, expected the id channel_join returned")]
    InvalidId,
    #[error("room name is required and must be 1-64 bytes without control characters")]
    InvalidRoomName,
    #[error("invalid user id in direct message join, expected another user's uuid")]
    InvalidDirectTarget,
    #[error("invalid channel type, use 1 (room), 2 (direct message) or 3 (group)")]
    InvalidType,
}

impl ChannelKey {
    pub fn room(name: &str) -> Result<ChannelKey, ChannelError> {
        if name.is_empty() || name.len() > MAX_ROOM_NAME || name.chars().any(char::is_control) {
            return Err(ChannelError::InvalidRoomName);
        }
        Ok(ChannelKey {
            mode: MODE_ROOM,
            subject: Uuid::nil(),
            subcontext: Uuid::nil(),
            label: name.to_owned(),
        })
    }

    /// The conversation of two users, the same whoever opens it.
    pub fn direct(me: Uuid, other: Uuid) -> Result<ChannelKey, ChannelError> {
        if other.is_nil() {
            return Err(ChannelError::InvalidDirectTarget);
        }
        // Nakama orders the two ids as strings, which for hyphenated
        // lower-case uuids is the same as ordering the bytes.
        let (subject, subcontext) = if other > me { (me, other) } else { (other, me) };
        Ok(ChannelKey {
            mode: MODE_DIRECT,
            subject,
            subcontext,
            label: String::new(),
        })
    }

    pub fn group(group: Uuid) -> ChannelKey {
        ChannelKey {
            mode: MODE_GROUP,
            subject: group,
            subcontext: Uuid::nil(),
            label: String::new(),
        }
    }

    /// Parses Nakama's channel id.
    pub fn parse(id: &str) -> Result<ChannelKey, ChannelError> {
        let mut parts = id.splitn(4, '.');
        let (Some(mode), Some(subject), Some(subcontext), Some(label)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(ChannelError::InvalidId);
        };
        let uuid = |s: &str| -> Result<Uuid, ChannelError> {
            if s.is_empty() {
                Ok(Uuid::nil())
            } else {
                Uuid::parse_str(s).map_err(|_| ChannelError::InvalidId)
            }
        };
        match mode {
            "2" if subject.is_empty() && subcontext.is_empty() => {
                if label.is_empty() || label.len() > MAX_ROOM_NAME {
                    return Err(ChannelError::InvalidId);
                }
                Ok(ChannelKey {
                    mode: MODE_ROOM,
                    subject: Uuid::nil(),
                    subcontext: Uuid::nil(),
                    label: label.to_owned(),
                })
            }
            "3" if subcontext.is_empty() && label.is_empty() => {
                Ok(ChannelKey::group(uuid(subject)?))
            }
            "4" if label.is_empty() => Ok(ChannelKey {
                mode: MODE_DIRECT,
                subject: uuid(subject)?,
                subcontext: uuid(subcontext)?,
                label: String::new(),
            }),
            _ => Err(ChannelError::InvalidId),
        }
    }

    /// Nakama's channel id: nil uuids are written as empty.
    pub fn id(&self) -> String {
        let part = |u: Uuid| {
            if u.is_nil() {
                String::new()
            } else {
                u.to_string()
            }
        };
        format!(
            "{}.{}.{}.{}",
            self.mode,
            part(self.subject),
            part(self.subcontext),
            self.label
        )
    }

    /// Whether `user` may read this channel's history, as far as the id
    /// tells: a group channel needs a membership look-up, so it says no.
    pub fn readable_by(&self, user: Uuid) -> bool {
        match self.mode {
            MODE_DIRECT => self.subject == user || self.subcontext == user,
            MODE_GROUP => false,
            _ => true,
        }
    }
}

/// A chat message as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelMessage {
    pub id: Uuid,
    pub channel: ChannelKey,
    pub code: i32,
    pub sender_id: Uuid,
    pub username: String,
    /// A JSON object.
    pub content: String,
    /// Microseconds since the UNIX epoch.
    pub create_time_us: i64,
    pub update_time_us: i64,
}

/// Where a history page starts: strictly after (or before) this message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageBound {
    pub create_time_us: i64,
    pub id: Uuid,
}

/// Whether `content` is a JSON object, as chat messages must be.
pub fn is_json_object(content: &str) -> bool {
    content.trim_start().starts_with('{')
        && serde_json::from_str::<serde_json::Value>(content).is_ok_and(|v| v.is_object())
}

/// Microseconds since the UNIX epoch (the crate's one clock).
pub use crate::unix_now_us as now_us;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_ids_are_nakamas() {
        assert_eq!(ChannelKey::room("lobby").unwrap().id(), "2...lobby");
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let dm = ChannelKey::direct(b, a).unwrap();
        assert_eq!(dm, ChannelKey::direct(a, b).unwrap());
        assert_eq!(dm.id(), format!("4.{a}.{b}."));
        assert_eq!(ChannelKey::group(a).id(), format!("3.{a}.."));
        for key in [ChannelKey::room("a.b.c").unwrap(), dm, ChannelKey::group(a)] {
            assert_eq!(ChannelKey::parse(&key.id()).unwrap(), key);
        }
    }

    #[test]
    fn bad_ids_and_names_are_refused() {
        for id in [
            "",
            "2",
            "2..",
            "5...x",
            "2.x..room",
            "4.nope..",
            "3.a.b.",
            "2...",
        ] {
            assert_eq!(ChannelKey::parse(id), Err(ChannelError::InvalidId), "{id}");
        }
        assert!(ChannelKey::room("").is_err());
        assert!(ChannelKey::room(&"x".repeat(65)).is_err());
        assert!(ChannelKey::room("a\nb").is_err());
        assert!(ChannelKey::direct(Uuid::from_u128(1), Uuid::nil()).is_err());
    }

    #[test]
    fn content_must_be_a_json_object() {
        assert!(is_json_object(r#"{"a":1}"#));
        assert!(!is_json_object("[1]"));
        assert!(!is_json_object("hello"));
        assert!(!is_json_object(""));
    }
}
