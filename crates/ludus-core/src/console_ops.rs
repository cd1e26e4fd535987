//! The console's operations on the whole game: what a wipe deletes
//! (Nakama's `DeleteAccounts`, `DeleteStorage`, `DeleteAllData`) and the
//! audit log of console changes (an entry, a query, and the opaque cursor
//! of Nakama's `ListAuditLogs`), as pure values the `Store` persists.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::ApiError;

/// What a console wipe deletes, each in one transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wipe {
    /// Every game account but the system user, with everything they own;
    /// groups no account is left to run go with them (`DeleteAccounts`).
    Accounts,
    /// Every storage object, the system user's too (`DeleteStorage`).
    Storage,
    /// All game data: accounts (the system user stays), storage, wallet
    /// ledgers, chat, notifications, friends, groups, leaderboards and
    /// tournaments with their records, purchases and subscriptions
    /// (`DeleteAllData`). Console users and the audit log stay.
    AllData,
}

/// Nakama's `AuditLogAction` numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditAction {
    Create = 1,
    Update = 2,
    Delete = 3,
    Invoke = 4,
    Import = 5,
    Export = 6,
}

/// One entry of the console's audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    pub id: Uuid,
    /// Microseconds since the epoch.
    pub create_time_us: i64,
    pub console_user_id: Uuid,
    pub console_username: String,
    pub email: String,
    /// The resource's place in [`crate::console_acl::RESOURCES`].
    pub resource: i32,
    /// An [`AuditAction`] number.
    pub action: i32,
    /// What was done, in words.
    pub message: String,
    /// The change's details as a JSON object.
    pub metadata: String,
}

/// Which entries to list, newest first; `position` continues a listing.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AuditFilter {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub username: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<i32>,
    /// 0 for any action.
    #[serde(default)]
    pub action: i32,
    /// Only entries after / before these microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_us: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_us: Option<i64>,
}

/// Where a page starts: after the entry at `(time_us, id)`, towards older
/// entries (`older`) or newer ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditPosition {
    pub time_us: i64,
    pub id: Uuid,
    pub older: bool,
}

/// One audit log read: the filter, where to start, and how many entries
/// (the store answers up to `limit + 1`, so the caller sees whether more
/// follow), in the position's direction (newest first without one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditQuery {
    pub filter: AuditFilter,
    pub position: Option<AuditPosition>,
    pub limit: usize,
}

/// The cursor's content: the position and the filter it was made under,
/// so a cursor used with other filters is refused rather than misread.
#[derive(Serialize, Deserialize)]
struct Cursor {
    time_us: i64,
    id: String,
    older: bool,
    filter: AuditFilter,
}

/// An opaque cursor for `position` under `filter`.
pub fn encode_cursor(position: AuditPosition, filter: &AuditFilter) -> String {
    let cursor = Cursor {
        time_us: position.time_us,
        id: position.id.to_string(),
        older: position.older,
        filter: filter.clone(),
    };
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&cursor).unwrap_or_default())
}

/// The position of a cursor made by [`encode_cursor`]; refused when it is
/// not one, or was made under other filters (Nakama refuses both).
pub fn decode_cursor(text: &str, filter: &AuditFilter) -> Result<AuditPosition, ApiError> {
    let invalid = || ApiError::invalid("invalid audit log cursor, list again without one");
    let bytes = URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .map_err(|_| invalid())?;
    let cursor: Cursor = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    if &cursor.filter != filter {
        return Err(ApiError::invalid(
            "the audit log cursor was made with other filters, list again without one",
        ));
    }
    Ok(AuditPosition {
        time_us: cursor.time_us,
        id: Uuid::parse_str(&cursor.id).map_err(|_| invalid())?,
        older: cursor.older,
    })
}

/// A page of entries newest first, with the cursors on either side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditPage {
    pub entries: Vec<AuditEntry>,
    pub next_cursor: String,
    pub prev_cursor: String,
}

/// Makes a page of what the store answered for `query` (up to `limit + 1`
/// rows in the query's direction): newest first, a next cursor when older
/// entries follow, a previous one when newer entries precede.
pub fn page(query: &AuditQuery, mut rows: Vec<AuditEntry>) -> AuditPage {
    let more = rows.len() > query.limit;
    rows.truncate(query.limit);
    let older = query.position.is_none_or(|p| p.older);
    if !older {
        rows.reverse();
    }
    // Older entries follow when this page read towards them and found more,
    // or read back towards newer ones (it started from an older page).
    let has_older = if older {
        more
    } else {
        query.position.is_some()
    };
    let has_newer = if older {
        query.position.is_some()
    } else {
        more
    };
    let at = |e: &AuditEntry, older: bool| {
        encode_cursor(
            AuditPosition {
                time_us: e.create_time_us,
                id: e.id,
                older,
            },
            &query.filter,
        )
    };
    let next_cursor = match rows.last() {
        Some(e) if has_older => at(e, true),
        _ => String::new(),
    };
    let prev_cursor = match rows.first() {
        Some(e) if has_newer => at(e, false),
        _ => String::new(),
    };
    AuditPage {
        entries: rows,
        next_cursor,
        prev_cursor,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(t: i64) -> AuditEntry {
        AuditEntry {
            id: Uuid::from_u128(t as u128),
            create_time_us: t,
            console_user_id: Uuid::nil(),
            console_username: "admin".into(),
            email: String::new(),
            resource: 0,
            action: 3,
            message: String::new(),
            metadata: "{}".into(),
        }
    }

    #[test]
    fn cursor_round_trips_and_refuses_other_filters() {
        let filter = AuditFilter {
            username: "ops".into(),
            ..Default::default()
        };
        let position = AuditPosition {
            time_us: 7,
            id: Uuid::from_u128(9),
            older: true,
        };
        let text = encode_cursor(position, &filter);
        assert_eq!(decode_cursor(&text, &filter).unwrap(), position);
        assert!(decode_cursor(&text, &AuditFilter::default()).is_err());
        assert!(decode_cursor("not a cursor", &filter).is_err());
    }

    #[test]
    fn pages_have_cursors_on_the_sides_that_have_entries() {
        let first = AuditQuery {
            filter: AuditFilter::default(),
            position: None,
            limit: 2,
        };
        let p = page(&first, vec![entry(9), entry(8), entry(7)]);
        assert_eq!(p.entries.len(), 2);
        assert!(p.prev_cursor.is_empty());
        let next = decode_cursor(&p.next_cursor, &first.filter).unwrap();
        assert_eq!((next.time_us, next.older), (8, true));
        // Going back from the second page reads newer entries ascending.
        let back = AuditQuery {
            position: Some(AuditPosition {
                time_us: 7,
                id: Uuid::from_u128(7),
                older: false,
            }),
            ..first.clone()
        };
        let p = page(&back, vec![entry(8), entry(9)]);
        assert_eq!(p.entries[0].create_time_us, 9, "newest first");
        assert!(p.prev_cursor.is_empty(), "nothing newer than 9");
        assert!(!p.next_cursor.is_empty());
    }
}
