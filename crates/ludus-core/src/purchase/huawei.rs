//! Huawei AppGallery: the purchase data a client sends with its signature,
//! checked locally (RSA PKCS#1 v1.5 with SHA-256 under the app's public key,
//! base64 DER as AppGallery Connect shows it), and the order service's
//! answer to `purchases/tokens/verify`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rsa::pkcs8::DecodePublicKey as _;
use rsa::{Pkcs1v15Sign, RsaPublicKey};
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use uuid::Uuid;

use super::model::{Purchase, StoreEnvironment, StoreProvider};
use crate::error::{ApiError, Code};

/// What the client's purchase data says, once its signature holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HuaweiPurchaseData {
    pub product_id: String,
    pub purchase_token: String,
    pub purchase_time_ms: i64,
    /// 1: the purchase belongs to the Huawei account of a Chinese user and
    /// is verified at the China site.
    pub account_flag: i64,
    /// Present (0) only for sandbox purchases.
    pub sandbox: bool,
}

/// Checks `signature` over `data` with the app's public key, then reads the
/// data.
pub fn verify(
    public_key_b64: &str,
    data: &str,
    signature_b64: &str,
) -> Result<HuaweiPurchaseData, ApiError> {
    let der = STANDARD.decode(public_key_b64.trim()).map_err(|_| {
        ApiError::new(
            Code::FailedPrecondition,
            "iap.huawei.public_key is not base64; copy the public key from appgallery connect",
        )
    })?;
    let key = RsaPublicKey::from_public_key_der(&der).map_err(|_| {
        ApiError::new(
            Code::FailedPrecondition,
            "iap.huawei.public_key is not an rsa public key; copy the public key from appgallery connect",
        )
    })?;
    let signature = STANDARD
        .decode(signature_b64.trim())
        .map_err(|_| ApiError::invalid("huawei purchase signature is not base64"))?;
    key.verify(
        Pkcs1v15Sign::new::<Sha256>(),
        &Sha256::digest(data.as_bytes()),
        &signature,
    )
    .map_err(|_| ApiError::invalid("huawei purchase signature does not match the purchase data"))?;
    let v: Value = serde_json::from_str(data)
        .map_err(|_| ApiError::invalid("huawei purchase data is not json"))?;
    let text = |f: &str| v.get(f).and_then(Value::as_str).unwrap_or("").to_owned();
    let out = HuaweiPurchaseData {
        product_id: text("productId"),
        purchase_token: text("purchaseToken"),
        purchase_time_ms: v.get("purchaseTime").and_then(Value::as_i64).unwrap_or(0),
        account_flag: v.get("accountFlag").and_then(Value::as_i64).unwrap_or(0),
        sandbox: v.get("purchaseType").and_then(Value::as_i64) == Some(0),
    };
    if out.purchase_token.is_empty() || out.product_id.is_empty() {
        return Err(ApiError::invalid(
            "huawei purchase data has no purchaseToken or productId",
        ));
    }
    Ok(out)
}

/// The purchase the order service confirmed: its `responseCode` must be
/// "0"; its `purchaseTokenData` (an object, or JSON text as Huawei sends
/// it) names the product and token.
pub fn purchase(
    data: &HuaweiPurchaseData,
    answer: &[u8],
    user: Uuid,
) -> Result<Purchase, ApiError> {
    let v: Value = serde_json::from_slice(answer).map_err(|_| {
        ApiError::new(
            Code::Unavailable,
            "huawei answered something that is not json; try again later",
        )
    })?;
    let code = match v.get("responseCode") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    if code != "0" {
        return Err(ApiError::new(
            Code::FailedPrecondition,
            format!("invalid receipt, huawei response code: {code}"),
        ));
    }
    let token_data = match v.get("purchaseTokenData") {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::Null),
        Some(other) => other.clone(),
        None => Value::Null,
    };
    let text = |f: &str, fallback: &str| {
        token_data
            .get(f)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .unwrap_or(fallback)
            .to_owned()
    };
    Ok(Purchase {
        user_id: user,
        store: StoreProvider::HuaweiAppGallery,
        product_id: text("productId", &data.product_id),
        transaction_id: text("purchaseToken", &data.purchase_token),
        raw_response: String::from_utf8_lossy(answer).into_owned(),
        purchase_time_ms: data.purchase_time_ms,
        create_time_ms: 0,
        update_time_ms: 0,
        refund_time_ms: 0,
        environment: if data.sandbox {
            StoreEnvironment::Sandbox
        } else {
            StoreEnvironment::Production
        },
        seen_before: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsa::RsaPrivateKey;
    use rsa::pkcs8::EncodePublicKey as _;

    #[test]
    fn the_app_key_decides() {
        let key = RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 1024).unwrap();
        let public = STANDARD.encode(key.to_public_key().to_public_key_der().unwrap().as_bytes());
        let data = r#"{"productId":"gems","purchaseToken":"t1","purchaseTime":9,"purchaseType":0}"#;
        let sign = |d: &str| {
            STANDARD.encode(
                key.sign(Pkcs1v15Sign::new::<Sha256>(), &Sha256::digest(d.as_bytes()))
                    .unwrap(),
            )
        };
        let ok = verify(&public, data, &sign(data)).unwrap();
        assert!(ok.sandbox);
        assert_eq!(ok.purchase_token, "t1");
        let forged = data.replace("gems", "gold");
        let err = verify(&public, &forged, &sign(data)).unwrap_err();
        assert_eq!(err.code, Code::InvalidArgument);
        assert_eq!(
            verify("!!", data, &sign(data)).unwrap_err().code,
            Code::FailedPrecondition
        );

        let p = purchase(
            &ok,
            br#"{"responseCode":"0","purchaseTokenData":"{\"productId\":\"gems\",\"purchaseToken\":\"t1\"}"}"#,
            Uuid::nil(),
        )
        .unwrap();
        assert_eq!(p.environment, StoreEnvironment::Sandbox);
        let err = purchase(&ok, br#"{"responseCode":"5"}"#, Uuid::nil()).unwrap_err();
        assert!(err.message.contains('5'));
    }
}
