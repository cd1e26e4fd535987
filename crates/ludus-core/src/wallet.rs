//! Wallets and the wallet ledger: a user's JSON object of whole-number
//! balances, changed only by changesets that never take a balance below
//! zero, each change optionally recorded in the ledger. The arithmetic lives
//! here so both backends apply the same rules inside their transactions.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use uuid::Uuid;

use crate::error::ApiError;
use crate::storage::Rejection;

/// Balances by currency; sorted, so the stored JSON is stable.
pub type Wallet = BTreeMap<String, i64>;

/// Most ledger entries one page may hold (Nakama's bound).
pub const MAX_LEDGER_LIMIT: usize = 100;

/// One user's wallet change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalletUpdate {
    pub user_id: Uuid,
    /// Amounts to add (negative to take away) per currency.
    pub changeset: Wallet,
    /// A JSON object recorded with the ledger entry.
    pub metadata: String,
}

/// A wallet before and after an update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalletUpdateResult {
    pub user_id: Uuid,
    pub updated: Wallet,
    pub previous: Wallet,
}

/// One recorded change of a wallet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerEntry {
    pub id: Uuid,
    pub user_id: Uuid,
    /// The changeset as a JSON object.
    pub changeset: String,
    /// A JSON object.
    pub metadata: String,
    /// Microseconds since the UNIX epoch.
    pub create_time_us: i64,
    pub update_time_us: i64,
}

/// Where a ledger page continues: pages go newest first by (create time, id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerBound {
    pub create_time_us: i64,
    pub id: Uuid,
}

/// A page of ledger entries and the cursor of the next one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LedgerPage {
    pub entries: Vec<LedgerEntry>,
    pub cursor: Option<String>,
}

/// Reads a stored wallet.
pub fn decode(user_id: Uuid, json: &str) -> Result<Wallet, Rejection> {
    serde_json::from_str(json).map_err(|_| Rejection::WalletCorrupt { user_id })
}

/// The JSON a wallet is stored as.
pub fn encode(wallet: &Wallet) -> String {
    serde_json::to_string(wallet).unwrap_or_else(|_| "{}".to_owned())
}

/// Applies a changeset: every balance it touches must stay at or above zero
/// and within `i64`, or nothing changes.
pub fn apply(user_id: Uuid, current: &Wallet, changeset: &Wallet) -> Result<Wallet, Rejection> {
    let mut updated = current.clone();
    for (path, amount) in changeset {
        let now = current.get(path).copied().unwrap_or(0);
        let next = now
            .checked_add(*amount)
            .ok_or_else(|| Rejection::WalletOverflow {
                user_id,
                path: path.clone(),
            })?;
        if next < 0 {
            return Err(Rejection::WalletNegative {
                user_id,
                path: path.clone(),
            });
        }
        updated.insert(path.clone(), next);
    }
    Ok(updated)
}

/// Merges `patch`'s top-level fields into `current` (both JSON objects), as
/// PostgreSQL's `jsonb || jsonb` does.
pub fn merge_metadata(current: &str, patch: &str) -> Result<String, ApiError> {
    let mut base: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(current).unwrap_or_default();
    let patch: serde_json::Map<String, serde_json::Value> = serde_json::from_str(patch)
        .map_err(|_| ApiError::invalid("ledger metadata must be a json object"))?;
    base.extend(patch);
    Ok(serde_json::Value::Object(base).to_string())
}

/// The opaque cursor after `last` in `user`'s ledger; it is refused for
/// another user's ledger.
pub fn cursor_after(user: Uuid, last: &LedgerEntry) -> String {
    URL_SAFE_NO_PAD.encode(format!("1|{user}|{}|{}", last.create_time_us, last.id))
}

/// The bound a cursor made by [`cursor_after`] for `user` stands for.
pub fn resume(user: Uuid, cursor: &str) -> Result<LedgerBound, ApiError> {
    let invalid = || ApiError::invalid("wallet ledger cursor invalid, list again without one");
    let raw = URL_SAFE_NO_PAD
        .decode(cursor.trim_end_matches('='))
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(invalid)?;
    let mut parts = raw.splitn(4, '|');
    if parts.next() != Some("1") {
        return Err(invalid());
    }
    let owner: Uuid = parts
        .next()
        .and_then(|p| p.parse().ok())
        .ok_or_else(invalid)?;
    if owner != user {
        return Err(invalid());
    }
    let create_time_us = parts
        .next()
        .and_then(|p| p.parse().ok())
        .ok_or_else(invalid)?;
    let id = parts
        .next()
        .and_then(|p| p.parse().ok())
        .ok_or_else(invalid)?;
    Ok(LedgerBound { create_time_us, id })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wallet(pairs: &[(&str, i64)]) -> Wallet {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    }

    #[test]
    fn changesets_add_and_refuse_negatives() {
        let user = Uuid::from_u128(1);
        let current = wallet(&[("gold", 10)]);
        assert_eq!(
            apply(user, &current, &wallet(&[("gold", -4), ("gems", 2)])),
            Ok(wallet(&[("gold", 6), ("gems", 2)]))
        );
        assert_eq!(
            apply(user, &current, &wallet(&[("gems", 5), ("gold", -11)])),
            Err(Rejection::WalletNegative {
                user_id: user,
                path: "gold".into()
            })
        );
        assert!(matches!(
            apply(
                user,
                &wallet(&[("gold", i64::MAX)]),
                &wallet(&[("gold", 1)])
            ),
            Err(Rejection::WalletOverflow { .. })
        ));
    }

    #[test]
    fn wallets_round_trip_and_bad_ones_are_reported() {
        let user = Uuid::from_u128(1);
        let w = wallet(&[("b", 2), ("a", 1)]);
        assert_eq!(encode(&w), r#"{"a":1,"b":2}"#);
        assert_eq!(decode(user, &encode(&w)), Ok(w));
        assert!(decode(user, r#"{"a":1.5}"#).is_err());
    }

    #[test]
    fn metadata_merges_top_level_fields() {
        assert_eq!(
            merge_metadata(r#"{"a":1,"b":{"x":1}}"#, r#"{"b":{"y":2},"c":3}"#).unwrap(),
            r#"{"a":1,"b":{"y":2},"c":3}"#
        );
        assert!(merge_metadata("{}", "[1]").is_err());
    }

    #[test]
    fn ledger_cursors_belong_to_their_user() {
        let user = Uuid::from_u128(1);
        let entry = LedgerEntry {
            id: Uuid::from_u128(7),
            user_id: user,
            changeset: "{}".into(),
            metadata: "{}".into(),
            create_time_us: 42,
            update_time_us: 42,
        };
        let cursor = cursor_after(user, &entry);
        assert_eq!(
            resume(user, &cursor).unwrap(),
            LedgerBound {
                create_time_us: 42,
                id: entry.id
            }
        );
        assert!(resume(Uuid::from_u128(2), &cursor).is_err());
        assert!(resume(user, "junk").is_err());
    }
}
