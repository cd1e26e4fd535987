//! Session tokens: HS256 JWTs with Nakama's claims (`tid`, `uid`, `usn`, `vrs`,
//! `exp`, `iat`). Access and refresh tokens share the format and differ only
//! by signing key, so a token signed with one key never verifies with the other.
//!
//! Only `HS256` is accepted; `alg: none` and every other algorithm are refused
//! before the signature is looked at.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use uuid::Uuid;

type HmacSha256 = Hmac<Sha256>;

/// `{"alg":"HS256","typ":"JWT"}`, base64url-encoded once.
const HEADER_B64: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenKind {
    Access,
    Refresh,
}

impl TokenKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenKind::Access => "access",
            TokenKind::Refresh => "refresh",
        }
    }
    pub fn parse(s: &str) -> Option<TokenKind> {
        match s {
            "access" => Some(TokenKind::Access),
            "refresh" => Some(TokenKind::Refresh),
            _ => None,
        }
    }
}

/// The claims Nakama's clients decode from a session token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SessionClaims {
    #[serde(rename = "tid", default, skip_serializing_if = "String::is_empty")]
    pub token_id: String,
    #[serde(rename = "uid", default, skip_serializing_if = "String::is_empty")]
    pub user_id: String,
    #[serde(rename = "usn", default, skip_serializing_if = "String::is_empty")]
    pub username: String,
    #[serde(rename = "vrs", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vars: BTreeMap<String, String>,
    #[serde(rename = "exp", default)]
    pub expires_at: i64,
    #[serde(rename = "iat", default)]
    pub issued_at: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("token is malformed")]
    Malformed,
    #[error("token algorithm is not HS256")]
    UnsupportedAlgorithm,
    #[error("token signature is invalid")]
    BadSignature,
    #[error("token has expired")]
    Expired,
}

/// An authenticated caller, decoded from a valid, unrevoked access token.
#[derive(Debug, Clone)]
pub struct Caller {
    pub user_id: Uuid,
    pub claims: SessionClaims,
}

/// Signs claims into a compact JWT.
pub fn sign(key: &[u8], claims: &SessionClaims) -> String {
    sign_claims(key, claims)
}

/// Signs any claims into a compact HS256 JWT (e.g. the matchmaker's match
/// token, `{"mid", "exp"}`).
pub fn sign_claims<T: Serialize>(key: &[u8], claims: &T) -> String {
    let payload = serde_json::to_vec(claims).expect("claims always serialize");
    let mut token = String::with_capacity(HEADER_B64.len() + payload.len() * 4 / 3 + 48);
    token.push_str(HEADER_B64);
    token.push('.');
    URL_SAFE_NO_PAD.encode_string(&payload, &mut token);
    let mut mac = HmacSha256::new_from_slice(key).expect("hmac takes any key length");
    mac.update(token.as_bytes());
    let signature = mac.finalize().into_bytes();
    token.push('.');
    URL_SAFE_NO_PAD.encode_string(signature, &mut token);
    token
}

#[derive(Deserialize)]
struct Header<'a> {
    #[serde(borrow)]
    alg: std::borrow::Cow<'a, str>,
}

/// Checks algorithm, signature and expiry (`exp` must be after `now`).
pub fn verify(key: &[u8], token: &str, now: i64) -> Result<SessionClaims, TokenError> {
    let claims = verify_signature(key, token)?;
    if claims.expires_at <= now {
        return Err(TokenError::Expired);
    }
    Ok(claims)
}

/// Checks algorithm and signature only, for tokens whose expiry does not matter.
pub fn verify_signature(key: &[u8], token: &str) -> Result<SessionClaims, TokenError> {
    verify_claims(key, token)
}

/// Checks algorithm and signature of a token with any claims and decodes
/// them; the caller checks expiry.
pub fn verify_claims<T: serde::de::DeserializeOwned>(
    key: &[u8],
    token: &str,
) -> Result<T, TokenError> {
    if token.len() > 8192 {
        return Err(TokenError::Malformed);
    }
    let mut parts = token.splitn(3, '.');
    let (Some(header), Some(payload), Some(signature)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(TokenError::Malformed);
    };
    if signature.contains('.') {
        return Err(TokenError::Malformed);
    }
    if header != HEADER_B64 {
        let raw = URL_SAFE_NO_PAD
            .decode(header)
            .map_err(|_| TokenError::Malformed)?;
        let parsed: Header<'_> = serde_json::from_slice(&raw).map_err(|_| TokenError::Malformed)?;
        if parsed.alg != "HS256" {
            return Err(TokenError::UnsupportedAlgorithm);
        }
    }
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| TokenError::Malformed)?;
    let mut mac = HmacSha256::new_from_slice(key).expect("hmac takes any key length");
    mac.update(&token.as_bytes()[..header.len() + 1 + payload.len()]);
    mac.verify_slice(&signature)
        .map_err(|_| TokenError::BadSignature)?;
    let raw = URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|_| TokenError::Malformed)?;
    serde_json::from_slice(&raw).map_err(|_| TokenError::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> SessionClaims {
        SessionClaims {
            token_id: "t1".into(),
            user_id: "3f2b0d7e-0c4a-4a53-9d8c-5a0f0e4f2a11".into(),
            username: "alice".into(),
            vars: BTreeMap::from([("k".into(), "v".into())]),
            expires_at: 2_000,
            issued_at: 1_000,
        }
    }

    #[test]
    fn signed_token_verifies_with_same_key_only() {
        let token = sign(b"key-a", &claims());
        assert_eq!(verify(b"key-a", &token, 1_500).unwrap(), claims());
        assert_eq!(
            verify(b"key-b", &token, 1_500),
            Err(TokenError::BadSignature)
        );
    }

    #[test]
    fn expiry_is_enforced() {
        let token = sign(b"k", &claims());
        assert_eq!(verify(b"k", &token, 2_000), Err(TokenError::Expired));
        assert!(verify_signature(b"k", &token).is_ok());
    }

    #[test]
    fn alg_none_is_refused() {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims()).unwrap());
        let token = format!("{header}.{payload}.");
        assert_eq!(
            verify(b"k", &token, 1_500),
            Err(TokenError::UnsupportedAlgorithm)
        );
    }

    #[test]
    fn tampered_payload_is_refused() {
        let token = sign(b"k", &claims());
        let mut parts: Vec<&str> = token.split('.').collect();
        let mut forged = claims();
        forged.user_id = "00000000-0000-0000-0000-000000000000".into();
        let forged = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).unwrap());
        parts[1] = &forged;
        assert_eq!(
            verify(b"k", &parts.join("."), 1_500),
            Err(TokenError::BadSignature)
        );
    }

    #[test]
    fn garbage_is_malformed() {
        for t in ["", "a", "a.b", "a.b.c.d", "!!.??.**"] {
            assert_eq!(verify(b"k", t, 0), Err(TokenError::Malformed), "{t}");
        }
    }

    #[test]
    fn claims_use_nakama_names_and_omit_empty_vars() {
        let mut c = claims();
        c.vars.clear();
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(
            json,
            r#"{"tid":"t1","uid":"3f2b0d7e-0c4a-4a53-9d8c-5a0f0e4f2a11","usn":"alice","exp":2000,"iat":1000}"#
        );
    }

    proptest::proptest! {
        #[test]
        fn verify_never_panics(s in ".{0,300}") {
            let _ = verify(b"k", &s, 0);
        }
    }
}
