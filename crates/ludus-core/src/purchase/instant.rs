//! Facebook Instant Games payments: the `signedRequest` of a purchase,
//! `signature.payload` in unpadded base64url, whose HMAC-SHA256 under the
//! app secret is checked locally (no request to Facebook).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac as _};
use serde_json::Value;
use sha2::Sha256;
use uuid::Uuid;

use super::model::{Purchase, StoreEnvironment, StoreProvider};
use crate::error::ApiError;

/// The purchase a signed request vouches for (the purchase token is its
/// transaction id; the payload is kept as the provider response).
pub fn purchase(signed_request: &str, app_secret: &str, user: Uuid) -> Result<Purchase, ApiError> {
    let mut parts = signed_request.split('.');
    let (Some(signature), Some(payload), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err(ApiError::invalid(
            "signed request is malformed: expected signature.payload",
        ));
    };
    let decode = |s: &str| URL_SAFE_NO_PAD.decode(s.trim_end_matches('='));
    let signature = decode(signature)
        .map_err(|_| ApiError::invalid("signed request signature is not base64url"))?;
    let mut mac = Hmac::<Sha256>::new_from_slice(app_secret.as_bytes())
        .map_err(|_| ApiError::invalid("app secret is unusable"))?;
    mac.update(payload.as_bytes());
    mac.verify_slice(&signature)
        .map_err(|_| ApiError::invalid("signed request verification failed"))?;
    let body = decode(payload)
        .map_err(|_| ApiError::invalid("signed request payload is not base64url"))?;
    let v: Value = serde_json::from_slice(&body)
        .map_err(|_| ApiError::invalid("signed request payload is not json"))?;
    let text = |f: &str| v.get(f).and_then(Value::as_str).unwrap_or("").to_owned();
    let token = text("purchase_token");
    if token.is_empty() {
        return Err(ApiError::invalid("signed request names no purchase_token"));
    }
    Ok(Purchase {
        user_id: user,
        store: StoreProvider::FacebookInstantStore,
        product_id: text("product_id"),
        transaction_id: token,
        raw_response: String::from_utf8_lossy(&body).into_owned(),
        purchase_time_ms: v
            .get("purchase_time")
            .and_then(Value::as_f64)
            .map_or(0, |s| (s * 1000.0) as i64),
        create_time_ms: 0,
        update_time_ms: 0,
        refund_time_ms: 0,
        environment: StoreEnvironment::Production,
        seen_before: false,
    })
}

/// Signs a payment payload as Facebook does (for tests and stand-ins).
pub fn sign(payload: &Value, app_secret: &str) -> String {
    let payload = URL_SAFE_NO_PAD.encode(payload.to_string());
    let mut mac = Hmac::<Sha256>::new_from_slice(app_secret.as_bytes()).expect("any key size");
    mac.update(payload.as_bytes());
    format!(
        "{}.{payload}",
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;

    #[test]
    fn the_app_secret_decides() {
        let payload = serde_json::json!({
            "algorithm": "HMAC-SHA256", "product_id": "gems",
            "purchase_token": "pt-1", "purchase_time": 1_700_000_000,
        });
        let signed = sign(&payload, "secret");
        let p = purchase(&signed, "secret", Uuid::nil()).unwrap();
        assert_eq!(p.transaction_id, "pt-1");
        assert_eq!(p.purchase_time_ms, 1_700_000_000_000);
        for bad in [sign(&payload, "other"), "one-part".into(), "a.b.c".into()] {
            assert_eq!(
                purchase(&bad, "secret", Uuid::nil()).unwrap_err().code,
                Code::InvalidArgument
            );
        }
    }
}
