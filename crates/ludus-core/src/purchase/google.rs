//! Google Play: the receipt a client sends (the purchase JSON, bare or in
//! Unity's `{"json": …}` wrapper), the RS256 assertion a service account
//! signs to get an OAuth2 access token, and the Android Publisher answers
//! for one-off products and for subscriptions (v2).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rsa::pkcs8::DecodePrivateKey as _;
use rsa::{Pkcs1v15Sign, RsaPrivateKey};
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use uuid::Uuid;

use super::model::{Purchase, StoreEnvironment, StoreProvider, Subscription};
use crate::error::{ApiError, Code};

/// The scope a service account asks for.
pub const SCOPE: &str = "https://www.googleapis.com/auth/androidpublisher";

/// What the client's receipt says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoogleReceipt {
    pub package_name: String,
    pub product_id: String,
    pub purchase_token: String,
    pub purchase_state: i64,
    pub purchase_time_ms: i64,
}

impl GoogleReceipt {
    pub fn parse(receipt: &str) -> Result<GoogleReceipt, ApiError> {
        let malformed = || {
            ApiError::invalid(
                "google receipt is malformed: send the purchase json (packageName, productId, purchaseToken)",
            )
        };
        let outer: Value = serde_json::from_str(receipt).map_err(|_| malformed())?;
        let inner = match outer.get("json").and_then(Value::as_str) {
            Some(json) => serde_json::from_str(json).map_err(|_| malformed())?,
            None => outer,
        };
        let text = |field: &str| {
            inner
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let receipt = GoogleReceipt {
            package_name: text("packageName"),
            product_id: text("productId"),
            purchase_token: text("purchaseToken"),
            purchase_state: inner
                .get("purchaseState")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            purchase_time_ms: inner
                .get("purchaseTime")
                .and_then(Value::as_i64)
                .unwrap_or(0),
        };
        // These go into a URL path: refuse anything that could leave it.
        let safe = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-:".contains(&b))
        };
        if !safe(&receipt.package_name) || !safe(&receipt.purchase_token) {
            return Err(malformed());
        }
        if !receipt.product_id.is_empty() && !safe(&receipt.product_id) {
            return Err(malformed());
        }
        Ok(receipt)
    }
}

/// The signed JWT a service account exchanges for an access token
/// (`aud` is the token endpoint it is sent to).
pub fn assertion(
    client_email: &str,
    private_key_pem: &str,
    token_url: &str,
    now: i64,
) -> Result<String, ApiError> {
    let key = RsaPrivateKey::from_pkcs8_pem(private_key_pem.trim()).map_err(|_| {
        ApiError::new(
            Code::FailedPrecondition,
            "iap.google.private_key is not a pkcs8 pem rsa private key; copy private_key from the service account's json key",
        )
    })?;
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256","typ":"JWT"}"#);
    let claims = URL_SAFE_NO_PAD.encode(
        serde_json::json!({
            "iss": client_email,
            "scope": SCOPE,
            "aud": token_url,
            "iat": now,
            "exp": now + 3_600,
        })
        .to_string(),
    );
    let input = format!("{header}.{claims}");
    let digest = Sha256::digest(input.as_bytes());
    let signature = key
        .sign(Pkcs1v15Sign::new::<Sha256>(), &digest)
        .map_err(|_| ApiError::new(Code::Internal, "cannot sign the google assertion"))?;
    Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
}

/// The access token and its lifetime in seconds from a token answer.
pub fn access_token(body: &[u8]) -> Option<(String, i64)> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let token = v.get("access_token")?.as_str()?.to_owned();
    let expires_in = v.get("expires_in").and_then(Value::as_i64).unwrap_or(3_600);
    Some((token, expires_in))
}

/// A one-off purchase from the receipt and `purchases.products.get`'s
/// answer: sandbox when the answer's `purchaseType` is 0 (test), refused
/// when the receipt or the answer says cancelled or pending.
pub fn purchase(receipt: &GoogleReceipt, answer: &[u8], user: Uuid) -> Result<Purchase, ApiError> {
    let v: Value = serde_json::from_slice(answer).map_err(|_| {
        ApiError::new(
            Code::Unavailable,
            "google play answered something that is not json; try again later",
        )
    })?;
    let state = v
        .get("purchaseState")
        .and_then(Value::as_i64)
        .unwrap_or(receipt.purchase_state);
    for state in [receipt.purchase_state, state] {
        if state != 0 {
            return Err(ApiError::new(
                Code::FailedPrecondition,
                format!("invalid receipt, purchase state: {state} (cancelled or pending)"),
            ));
        }
    }
    let environment = match v.get("purchaseType").and_then(Value::as_i64) {
        Some(0) => StoreEnvironment::Sandbox,
        _ => StoreEnvironment::Production,
    };
    Ok(Purchase {
        user_id: user,
        store: StoreProvider::GooglePlayStore,
        product_id: receipt.product_id.clone(),
        transaction_id: receipt.purchase_token.clone(),
        raw_response: String::from_utf8_lossy(answer).into_owned(),
        purchase_time_ms: receipt.purchase_time_ms,
        create_time_ms: 0,
        update_time_ms: 0,
        refund_time_ms: 0,
        environment,
        seen_before: false,
    })
}

/// A subscription from the receipt and `purchases.subscriptionsv2.get`'s
/// answer: the first line item's expiry, sandbox when it is a test
/// purchase, keyed by the linked (original) purchase token when there is
/// one, so an upgrade continues the same subscription.
pub fn subscription(
    receipt: &GoogleReceipt,
    answer: &[u8],
    user: Uuid,
) -> Result<Subscription, ApiError> {
    let v: Value = serde_json::from_slice(answer).map_err(|_| {
        ApiError::new(
            Code::Unavailable,
            "google play answered something that is not json; try again later",
        )
    })?;
    let item = v.pointer("/lineItems/0");
    let expiry = item
        .and_then(|i| i.get("expiryTime"))
        .and_then(Value::as_str)
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.timestamp_millis())
        .ok_or_else(|| {
            ApiError::new(
                Code::FailedPrecondition,
                "google play's answer has no subscription line item with an expiry; is this a one-off purchase?",
            )
        })?;
    let product_id = match item
        .and_then(|i| i.get("productId"))
        .and_then(Value::as_str)
    {
        Some(p) if !p.is_empty() => p.to_owned(),
        _ => receipt.product_id.clone(),
    };
    let environment = if v.get("testPurchase").is_some() {
        StoreEnvironment::Sandbox
    } else {
        StoreEnvironment::Production
    };
    let original = match v.get("linkedPurchaseToken").and_then(Value::as_str) {
        Some(t) if !t.is_empty() => t.to_owned(),
        _ => receipt.purchase_token.clone(),
    };
    Ok(Subscription {
        user_id: user,
        store: StoreProvider::GooglePlayStore,
        product_id,
        original_transaction_id: original,
        raw_response: String::from_utf8_lossy(answer).into_owned(),
        raw_notification: String::new(),
        purchase_time_ms: receipt.purchase_time_ms,
        create_time_ms: 0,
        update_time_ms: 0,
        expire_time_ms: expiry,
        refund_time_ms: 0,
        environment,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsa::pkcs8::EncodePrivateKey as _;
    use rsa::traits::PublicKeyParts as _;

    #[test]
    fn receipts_bare_and_wrapped() {
        let bare = r#"{"packageName":"com.game","productId":"gems","purchaseToken":"tok-1","purchaseTime":5}"#;
        let r = GoogleReceipt::parse(bare).unwrap();
        assert_eq!(r.package_name, "com.game");
        assert_eq!(r.purchase_time_ms, 5);
        let wrapped = serde_json::json!({"json": bare, "signature": "x"}).to_string();
        assert_eq!(GoogleReceipt::parse(&wrapped).unwrap(), r);
        for bad in [
            "not json",
            "{}",
            r#"{"packageName":"a/../b","purchaseToken":"t"}"#,
            r#"{"packageName":"a","purchaseToken":"t?x=1"}"#,
        ] {
            assert_eq!(
                GoogleReceipt::parse(bad).unwrap_err().code,
                Code::InvalidArgument
            );
        }
    }

    #[test]
    fn the_assertion_is_signed_by_the_service_account_key() {
        let key = RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 1024).unwrap();
        let pem = key.to_pkcs8_pem(rsa::pkcs8::LineEnding::LF).unwrap();
        let jwt = assertion("svc@x.iam", &pem, "http://t/token", 100).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        let claims: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["iss"], "svc@x.iam");
        assert_eq!(claims["aud"], "http://t/token");
        assert_eq!(claims["exp"], 3_700);
        let digest = Sha256::digest(format!("{}.{}", parts[0], parts[1]).as_bytes());
        let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        let public = key.to_public_key();
        assert!(public.n().bits() > 0);
        public
            .verify(Pkcs1v15Sign::new::<Sha256>(), &digest, &signature)
            .unwrap();
        let err = assertion("svc", "not a key", "u", 0).unwrap_err();
        assert_eq!(err.code, Code::FailedPrecondition);
    }

    #[test]
    fn answers_decide_state_and_environment() {
        let r = GoogleReceipt::parse(
            r#"{"packageName":"p","productId":"gems","purchaseToken":"t","purchaseTime":7}"#,
        )
        .unwrap();
        let p = purchase(&r, br#"{"purchaseState":0,"purchaseType":0}"#, Uuid::nil()).unwrap();
        assert_eq!(p.environment, StoreEnvironment::Sandbox);
        let p = purchase(&r, br#"{"purchaseState":0}"#, Uuid::nil()).unwrap();
        assert_eq!(p.environment, StoreEnvironment::Production);
        let err = purchase(&r, br#"{"purchaseState":1}"#, Uuid::nil()).unwrap_err();
        assert_eq!(err.code, Code::FailedPrecondition);

        let s = subscription(
            &r,
            br#"{"lineItems":[{"productId":"vip","expiryTime":"2030-01-01T00:00:00Z"}],
                 "testPurchase":{},"linkedPurchaseToken":"first"}"#,
            Uuid::nil(),
        )
        .unwrap();
        assert_eq!(s.product_id, "vip");
        assert_eq!(s.original_transaction_id, "first");
        assert_eq!(s.environment, StoreEnvironment::Sandbox);
        assert_eq!(s.expire_time_ms, 1_893_456_000_000);
        assert!(subscription(&r, b"{}", Uuid::nil()).is_err());
    }
}
