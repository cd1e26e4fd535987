//! Samsung Galaxy Store: what its receipt service (`/iap/v6/receipt`) says
//! about a purchase id, with Nakama's rules: `status` must be `success`,
//! the package name must be the configured one when both are known, an
//! item id is required, and mode `TEST` is the sandbox.

use serde_json::Value;
use uuid::Uuid;

use super::model::{Purchase, StoreEnvironment, StoreProvider};
use crate::error::ApiError;

/// The purchase Samsung's answer `body` confirms for `purchase_id`; a
/// refusal or a malformed answer is `InvalidArgument` naming why.
pub fn purchase(
    body: &[u8],
    purchase_id: &str,
    package_name: &str,
    user: Uuid,
) -> Result<Purchase, ApiError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|_| ApiError::invalid("samsung receipt answer is not json"))?;
    let text = |f: &str| v.get(f).and_then(Value::as_str).unwrap_or("").to_owned();
    let status = text("status");
    if status != "success" {
        let message = match text("errorMessage") {
            m if m.is_empty() => status,
            m => m,
        };
        let code = v.get("errorCode").and_then(Value::as_i64).unwrap_or(0);
        return Err(ApiError::invalid(format!(
            "samsung refused the purchase: {message} (error code {code})"
        )));
    }
    let package = text("packageName");
    if !package_name.is_empty() && !package.is_empty() && package != package_name {
        return Err(ApiError::invalid(format!(
            "samsung purchase is for package {package:?}, not {package_name:?}"
        )));
    }
    let item = text("itemId");
    if item.is_empty() {
        return Err(ApiError::invalid("samsung receipt answer names no item id"));
    }
    Ok(Purchase {
        user_id: user,
        store: StoreProvider::SamsungGalaxyStore,
        product_id: item,
        transaction_id: purchase_id.to_owned(),
        raw_response: String::from_utf8_lossy(body).into_owned(),
        purchase_time_ms: purchase_time_ms(&text("purchaseDate")),
        create_time_ms: 0,
        update_time_ms: 0,
        refund_time_ms: 0,
        environment: if text("mode") == "TEST" {
            StoreEnvironment::Sandbox
        } else {
            StoreEnvironment::Production
        },
        seen_before: false,
    })
}

/// `2006-01-02 15:04:05` (UTC) in milliseconds; 0 when malformed, as
/// Nakama's zero time.
fn purchase_time_ms(date: &str) -> i64 {
    let b = date.as_bytes();
    if b.len() != 19
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b' '
        || b[13] != b':'
        || b[16] != b':'
    {
        return 0;
    }
    let num = |r: std::ops::Range<usize>| date.get(r).and_then(|s| s.parse::<i64>().ok());
    let (Some(y), Some(mo), Some(d), Some(h), Some(mi), Some(s)) = (
        num(0..4),
        num(5..7),
        num(8..10),
        num(11..13),
        num(14..16),
        num(17..19),
    ) else {
        return 0;
    };
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return 0;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    ((days * 86_400) + h * 3_600 + mi * 60 + s) * 1_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_milliseconds() {
        assert_eq!(purchase_time_ms("1970-01-01 00:00:00"), 0);
        assert_eq!(purchase_time_ms("2024-03-01 12:30:05"), 1_709_296_205_000);
        assert_eq!(purchase_time_ms("2024-13-01 00:00:00"), 0);
        assert_eq!(purchase_time_ms("yesterday"), 0);
    }

    #[test]
    fn refusals_and_foreign_packages_are_named() {
        let user = Uuid::nil();
        let refused = br#"{"status":"fail","errorCode":9135,"errorMessage":"not exist order"}"#;
        let e = purchase(refused, "p1", "", user).unwrap_err();
        assert_eq!(
            e.message,
            "samsung refused the purchase: not exist order (error code 9135)"
        );
        let other = br#"{"status":"success","packageName":"com.other","itemId":"gems"}"#;
        let e = purchase(other, "p1", "com.game", user).unwrap_err();
        assert!(e.message.contains("com.other"), "{}", e.message);
        let p = purchase(
            br#"{"status":"success","mode":"TEST","packageName":"com.game","itemId":"gems","purchaseDate":"2024-03-01 12:30:05"}"#,
            "p1",
            "com.game",
            user,
        )
        .unwrap();
        assert_eq!(p.product_id, "gems");
        assert_eq!(p.transaction_id, "p1");
        assert_eq!(p.environment, StoreEnvironment::Sandbox);
        assert_eq!(p.purchase_time_ms, 1_709_296_205_000);
    }
}
