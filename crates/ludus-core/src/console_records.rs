//! What the console keeps beside its users, pure rules: notes on game
//! accounts (Nakama's `users_notes`, listed newest first with an opaque
//! cursor), ACL templates (named sets of permissions to start a console
//! user from) and the console's settings (Nakama's `setting` table: names
//! it knows, JSON values). The `Store` persists them; the console's HTTP
//! layer checks its input here.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::console_acl::Acl;
use crate::error::ApiError;

/// A console user's note on a game account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountNote {
    pub id: Uuid,
    pub user_id: Uuid,
    pub note: String,
    /// Microseconds since the epoch.
    pub create_time_us: i64,
    pub update_time_us: i64,
    /// The console users who wrote and last changed it (the root user is
    /// the nil id).
    pub create_id: Uuid,
    pub update_id: Uuid,
}

/// A note to add (`create`) or to change, found by account and id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteWrite {
    pub user_id: Uuid,
    pub id: Uuid,
    pub note: String,
    pub by: Uuid,
    pub now_us: i64,
    pub create: bool,
}

/// Where a listing of an account's notes goes on from: the first note of
/// the next page (newest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotesPosition {
    pub user_id: Uuid,
    pub create_time_us: i64,
    pub id: Uuid,
}

/// A position as its cursor's JSON.
#[derive(Serialize, Deserialize)]
struct CursorJson {
    u: String,
    t: i64,
    i: String,
}

/// Nakama's default and largest page of notes; a limit outside 1-100 is
/// the default, as there.
pub fn notes_limit(asked: i32) -> usize {
    match asked {
        1..=100 => asked as usize,
        _ => 10,
    }
}

/// Nakama's rule: a note is never empty.
pub fn note_text(note: &str) -> Result<(), ApiError> {
    if note.trim().is_empty() {
        return Err(ApiError::invalid("note cannot be empty"));
    }
    Ok(())
}

pub fn encode_notes_cursor(position: &NotesPosition) -> String {
    let cursor = CursorJson {
        u: position.user_id.to_string(),
        t: position.create_time_us,
        i: position.id.to_string(),
    };
    let json = serde_json::to_vec(&cursor).expect("a position always serializes");
    URL_SAFE_NO_PAD.encode(json)
}

/// Reads a cursor of this account's listing.
pub fn decode_notes_cursor(text: &str, user_id: Uuid) -> Result<NotesPosition, ApiError> {
    let bad =
        || ApiError::invalid("cursor is not one this listing answered, start again without it");
    let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| bad())?;
    let cursor: CursorJson = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    let position = NotesPosition {
        user_id: Uuid::parse_str(&cursor.u).map_err(|_| bad())?,
        create_time_us: cursor.t,
        id: Uuid::parse_str(&cursor.i).map_err(|_| bad())?,
    };
    if position.user_id != user_id {
        return Err(ApiError::invalid(
            "cursor belongs to another account's notes",
        ));
    }
    Ok(position)
}

/// A named set of console permissions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclTemplate {
    pub id: Uuid,
    pub name: String,
    pub description: String,
    pub acl: Acl,
    /// Seconds since the epoch.
    pub create_time: i64,
    pub update_time: i64,
}

/// Nakama's columns: a name of 1-64 characters, unique, and a description
/// of at most 64.
pub fn template_text(name: &str, description: &str) -> Result<(), ApiError> {
    if name.trim().is_empty() {
        return Err(ApiError::invalid("name is required"));
    }
    if name.chars().count() > 64 {
        return Err(ApiError::invalid("name must be at most 64 characters"));
    }
    if description.chars().count() > 64 {
        return Err(ApiError::invalid(
            "description must be at most 64 characters",
        ));
    }
    Ok(())
}

/// One console setting: its name, its JSON value as text, when it changed
/// (seconds since the epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleSetting {
    pub name: String,
    pub value: String,
    pub update_time: i64,
}

/// The settings Nakama's console knows (its `allowedSettings`); the
/// migration stores each with its default.
pub const SETTINGS: [&str; 1] = ["utc_toggle"];

/// Checks a setting's new value: a known name and a JSON value, answered
/// compact, as stored.
pub fn setting_value(name: &str, value: &str) -> Result<String, ApiError> {
    if !SETTINGS.contains(&name) {
        return Err(ApiError::invalid(format!(
            "setting {name:?} is not one the console has, use one of: {}",
            SETTINGS.join(", ")
        )));
    }
    let parsed: serde_json::Value = serde_json::from_str(value).map_err(|_| {
        ApiError::invalid("value must be JSON, such as true, 5 or \"text\" with its quotes")
    })?;
    Ok(parsed.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;

    #[test]
    fn cursors_belong_to_their_account() {
        let user = Uuid::new_v4();
        let p = NotesPosition {
            user_id: user,
            create_time_us: 5,
            id: Uuid::new_v4(),
        };
        let text = encode_notes_cursor(&p);
        assert_eq!(decode_notes_cursor(&text, user).unwrap(), p);
        let other = decode_notes_cursor(&text, Uuid::new_v4()).unwrap_err();
        assert_eq!(other.code, Code::InvalidArgument);
        assert!(decode_notes_cursor("!!", user).is_err());
        assert!(decode_notes_cursor("e30", user).is_err());
    }

    #[test]
    fn input_rules() {
        assert_eq!(notes_limit(0), 10);
        assert_eq!(notes_limit(101), 10);
        assert_eq!(notes_limit(7), 7);
        assert!(note_text(" ").is_err());
        assert!(template_text("ops", "").is_ok());
        assert!(template_text("", "").is_err());
        assert!(template_text(&"x".repeat(65), "").is_err());
        assert!(template_text("ops", &"x".repeat(65)).is_err());
        assert_eq!(setting_value("utc_toggle", " true ").unwrap(), "true");
        assert!(setting_value("utc_toggle", "yes").is_err());
        assert!(setting_value("theme", "true").is_err());
    }
}
