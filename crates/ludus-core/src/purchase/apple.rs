//! Apple's `verifyReceipt` answer: its status, environment and the in-app
//! purchases and auto-renewable subscriptions it lists, read as Nakama reads
//! them (consumables and non-consumables have no `expires_date_ms`).

use std::collections::HashSet;

use serde_json::Value;
use uuid::Uuid;

use super::model::{Purchase, StoreEnvironment, StoreProvider, Subscription};
use crate::error::{ApiError, Code};

/// Apple's status for a valid receipt.
pub const STATUS_VALID: i64 = 0;
/// A sandbox receipt sent to production: ask the sandbox instead.
pub const STATUS_SANDBOX_RECEIPT: i64 = 21007;

/// What `verifyReceipt` answered.
#[derive(Debug, Clone)]
pub struct AppleAnswer {
    pub status: i64,
    pub retryable: bool,
    pub environment: StoreEnvironment,
    body: Value,
}

impl AppleAnswer {
    pub fn parse(body: &[u8]) -> Result<AppleAnswer, ApiError> {
        let body: Value = serde_json::from_slice(body).map_err(|_| {
            ApiError::new(
                Code::Unavailable,
                "apple answered something that is not json; try again later",
            )
        })?;
        let status = body.get("status").and_then(Value::as_i64).unwrap_or(-1);
        let retryable = body
            .get("is-retryable")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let environment = match body.get("environment").and_then(Value::as_str) {
            Some("Sandbox") => StoreEnvironment::Sandbox,
            _ => StoreEnvironment::Production,
        };
        Ok(AppleAnswer {
            status,
            retryable,
            environment,
            body,
        })
    }

    /// Refuses a receipt Apple did not accept, as Nakama does: retryable
    /// answers are `Unavailable`, the rest `FailedPrecondition`.
    pub fn check_valid(&self) -> Result<(), ApiError> {
        if self.status == STATUS_VALID {
            return Ok(());
        }
        if self.retryable {
            return Err(ApiError::new(
                Code::Unavailable,
                "apple iap verification is currently unavailable; try again later",
            ));
        }
        Err(ApiError::new(
            Code::FailedPrecondition,
            format!("invalid receipt, apple status: {}", self.status),
        ))
    }

    fn entries(&self) -> impl Iterator<Item = &Value> {
        let in_app = self
            .body
            .pointer("/receipt/in_app")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        let latest = self
            .body
            .get("latest_receipt_info")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        in_app.chain(latest)
    }

    /// The one-off purchases of the receipt (its `in_app` list, then
    /// `latest_receipt_info`), each transaction once. A receipt with only
    /// subscriptions is refused: the caller wants the subscription call.
    pub fn purchases(&self, user: Uuid, raw: &str) -> Result<Vec<Purchase>, ApiError> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        let mut entries = 0;
        for entry in self.entries() {
            entries += 1;
            if !text(entry, "expires_date_ms").is_empty() {
                continue;
            }
            let transaction_id = text(entry, "transaction_id");
            if transaction_id.is_empty() || !seen.insert(transaction_id.to_owned()) {
                continue;
            }
            out.push(Purchase {
                user_id: user,
                store: StoreProvider::AppleAppStore,
                product_id: text(entry, "product_id").to_owned(),
                transaction_id: transaction_id.to_owned(),
                raw_response: raw.to_owned(),
                purchase_time_ms: millis(entry, "purchase_date_ms")?,
                create_time_ms: 0,
                update_time_ms: 0,
                refund_time_ms: millis_or_zero(entry, "cancellation_date_ms"),
                environment: self.environment,
                seen_before: false,
            });
        }
        if out.is_empty() && entries > 0 {
            return Err(ApiError::new(
                Code::FailedPrecondition,
                "subscription receipt: validate it with the subscription call instead",
            ));
        }
        Ok(out)
    }

    /// The subscriptions of `latest_receipt_info`, latest expiry first, each
    /// original transaction once (its latest renewal). A
    /// receipt without one is refused: the caller wants the purchase call.
    pub fn subscriptions(&self, user: Uuid, raw: &str) -> Result<Vec<Subscription>, ApiError> {
        let mut out = Vec::new();
        let latest = self
            .body
            .get("latest_receipt_info")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for entry in latest {
            if text(entry, "expires_date_ms").is_empty() {
                continue;
            }
            out.push(Subscription {
                user_id: user,
                store: StoreProvider::AppleAppStore,
                product_id: text(entry, "product_id").to_owned(),
                original_transaction_id: text(entry, "original_transaction_id").to_owned(),
                raw_response: raw.to_owned(),
                raw_notification: String::new(),
                purchase_time_ms: millis(entry, "original_purchase_date_ms")?,
                create_time_ms: 0,
                update_time_ms: 0,
                expire_time_ms: millis(entry, "expires_date_ms")?,
                refund_time_ms: millis_or_zero(entry, "cancellation_date_ms"),
                environment: self.environment,
            });
        }
        if out.is_empty() {
            return Err(ApiError::new(
                Code::FailedPrecondition,
                "purchase receipt: validate it with the purchase call instead",
            ));
        }
        out.sort_by_key(|s| std::cmp::Reverse(s.expire_time_ms));
        // Each renewal is an entry of its own: keep a subscription's latest,
        // so an older renewal never overwrites the stored expiry.
        let mut seen = HashSet::new();
        out.retain(|s| seen.insert(s.original_transaction_id.clone()));
        Ok(out)
    }
}

fn text<'a>(entry: &'a Value, field: &str) -> &'a str {
    entry.get(field).and_then(Value::as_str).unwrap_or("")
}

fn millis(entry: &Value, field: &str) -> Result<i64, ApiError> {
    text(entry, field).parse().map_err(|_| {
        ApiError::new(
            Code::FailedPrecondition,
            format!("apple's answer has no usable {field}; the receipt cannot be read"),
        )
    })
}

fn millis_or_zero(entry: &Value, field: &str) -> i64 {
    text(entry, field).parse().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(body: serde_json::Value) -> AppleAnswer {
        AppleAnswer::parse(body.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn purchases_skip_subscriptions_and_repeats() {
        let a = answer(serde_json::json!({
            "status": 0, "environment": "Sandbox",
            "receipt": {"in_app": [
                {"transaction_id": "1", "product_id": "gems", "purchase_date_ms": "1000"},
                {"transaction_id": "2", "product_id": "vip", "purchase_date_ms": "1000",
                 "expires_date_ms": "9000"}
            ]},
            "latest_receipt_info": [
                {"transaction_id": "1", "product_id": "gems", "purchase_date_ms": "1000"},
                {"transaction_id": "3", "product_id": "coins", "purchase_date_ms": "2000",
                 "cancellation_date_ms": "2500"}
            ]
        }));
        a.check_valid().unwrap();
        let p = a.purchases(Uuid::nil(), "{}").unwrap();
        let ids: Vec<_> = p.iter().map(|p| p.transaction_id.as_str()).collect();
        assert_eq!(ids, ["1", "3"]);
        assert_eq!(p[0].environment, StoreEnvironment::Sandbox);
        assert_eq!(p[1].refund_time_ms, 2500);
    }

    #[test]
    fn subscriptions_come_latest_expiry_first() {
        let a = answer(serde_json::json!({
            "status": 0, "environment": "Production",
            "latest_receipt_info": [
                {"original_transaction_id": "o1", "product_id": "m",
                 "original_purchase_date_ms": "10", "expires_date_ms": "100"},
                {"original_transaction_id": "o1", "product_id": "m",
                 "original_purchase_date_ms": "10", "expires_date_ms": "200"}
            ]
        }));
        let s = a.subscriptions(Uuid::nil(), "{}").unwrap();
        assert_eq!(s.len(), 1, "one subscription, at its latest renewal");
        assert_eq!(s[0].expire_time_ms, 200);
        let err = a.purchases(Uuid::nil(), "{}").unwrap_err();
        assert_eq!(err.code, Code::FailedPrecondition);
    }

    #[test]
    fn refused_receipts_name_the_status() {
        let a = answer(serde_json::json!({"status": 21003}));
        let err = a.check_valid().unwrap_err();
        assert_eq!(err.code, Code::FailedPrecondition);
        assert!(err.message.contains("21003"));
        let a = answer(serde_json::json!({"status": 21100, "is-retryable": true}));
        assert_eq!(a.check_valid().unwrap_err().code, Code::Unavailable);
        assert!(AppleAnswer::parse(b"<html>").is_err());
    }
}
