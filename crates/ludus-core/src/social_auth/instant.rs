//! Facebook Instant Games: `signature.payload` signed player info, checked
//! locally with HMAC-SHA256 and the app secret (no request to Facebook).

use base64::Engine as _;
use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use hmac::{Hmac, Mac as _};
use serde_json::Value;
use sha2::Sha256;

/// The player id of signed player info whose signature holds.
pub fn player_id(signed_player_info: &str, app_secret: &str) -> Result<String, String> {
    let Some((signature, payload)) = signed_player_info.split_once('.') else {
        return Err("signed player info is malformed".into());
    };
    let decode = |s: &str| {
        URL_SAFE_NO_PAD
            .decode(s.trim_end_matches('='))
            .or_else(|_| URL_SAFE.decode(s))
    };
    let body = decode(payload).map_err(|_| "signed player info is malformed".to_owned())?;
    let claims: Value =
        serde_json::from_slice(&body).map_err(|_| "signed player info is malformed".to_owned())?;
    match claims.get("algorithm").and_then(Value::as_str) {
        Some("HMAC-SHA256" | "HS256") => {}
        _ => return Err("signed player info uses an unknown algorithm".into()),
    }
    let signature = decode(signature).map_err(|_| "signature is not base64".to_owned())?;
    let mut mac = Hmac::<Sha256>::new_from_slice(app_secret.as_bytes())
        .map_err(|_| "app secret is unusable".to_owned())?;
    mac.update(payload.as_bytes());
    mac.verify_slice(&signature)
        .map_err(|_| "signature mismatch".to_owned())?;
    match claims.get("player_id").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => Ok(id.to_owned()),
        _ => Err("signed player info has no player id".into()),
    }
}

/// Signs player info as Facebook does (for tests and stand-ins).
pub fn sign_player_info(player_id: &str, issued_at: i64, app_secret: &str) -> String {
    let payload = URL_SAFE_NO_PAD.encode(
        serde_json::json!({
            "algorithm": "HMAC-SHA256",
            "issued_at": issued_at,
            "player_id": player_id,
            "request_payload": "",
        })
        .to_string(),
    );
    let mut mac = Hmac::<Sha256>::new_from_slice(app_secret.as_bytes()).expect("any key size");
    mac.update(payload.as_bytes());
    let signature = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    format!("{signature}.{payload}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_app_secret_decides() {
        let info = sign_player_info("1234", 1_700_000_000, "secret");
        assert_eq!(player_id(&info, "secret").unwrap(), "1234");
        assert!(player_id(&info, "other").is_err());
        assert!(player_id("nodot", "secret").is_err());
        let (_, payload) = info.split_once('.').unwrap();
        assert!(player_id(&format!("AAAA.{payload}"), "secret").is_err());
    }
}
