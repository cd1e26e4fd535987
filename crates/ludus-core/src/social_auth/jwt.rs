//! RS256 ID tokens (Apple, Google, Facebook Limited Login): a JSON Web Key
//! Set parsed into RSA keys, and a token's signature and claims checked
//! against one of them. Pure code: the keys come from the caller.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rsa::{BigUint, Pkcs1v15Sign, RsaPublicKey};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

/// The RSA keys of a JWKS document, by key id.
pub fn parse_jwks(body: &[u8]) -> Result<Vec<(String, RsaPublicKey)>, String> {
    let doc: Value = serde_json::from_slice(body).map_err(|_| "keys are not json".to_owned())?;
    let Some(keys) = doc.get("keys").and_then(Value::as_array) else {
        return Err("keys document has no \"keys\" list".into());
    };
    let mut out = Vec::new();
    for key in keys {
        let field = |name: &str| key.get(name).and_then(Value::as_str);
        if field("kty") != Some("RSA") {
            continue;
        }
        let (Some(kid), Some(n), Some(e)) = (field("kid"), field("n"), field("e")) else {
            continue;
        };
        let (Ok(n), Ok(e)) = (URL_SAFE_NO_PAD.decode(n), URL_SAFE_NO_PAD.decode(e)) else {
            continue;
        };
        if let Ok(public) =
            RsaPublicKey::new(BigUint::from_bytes_be(&n), BigUint::from_bytes_be(&e))
        {
            out.push((kid.to_owned(), public));
        }
    }
    if out.is_empty() {
        return Err("keys document holds no usable rsa key".into());
    }
    Ok(out)
}

/// Why an ID token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    #[error("token is malformed")]
    Malformed,
    #[error("token algorithm {0:?} is not RS256")]
    Algorithm(String),
    #[error("token names no key id")]
    NoKeyId,
    #[error("token signature is invalid")]
    Signature,
    #[error("token issuer {0:?} is not expected")]
    Issuer(String),
    #[error("token audience is not this game's")]
    Audience,
    #[error("token has expired")]
    Expired,
    #[error("token has no subject")]
    NoSubject,
}

/// The key id of a token's header, after checking that it is RS256.
pub fn key_id(token: &str) -> Result<String, JwtError> {
    let header = token.split('.').next().ok_or(JwtError::Malformed)?;
    let header: Value = decode_json(header)?;
    match header.get("alg").and_then(Value::as_str) {
        Some("RS256") => {}
        other => return Err(JwtError::Algorithm(other.unwrap_or("").to_owned())),
    }
    header
        .get("kid")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or(JwtError::NoKeyId)
}

/// What a token's claims must say.
pub struct Expected<'a> {
    pub issuers: &'a [&'a str],
    /// Empty: the audience is not checked.
    pub audiences: &'a [String],
    /// UNIX seconds.
    pub now: i64,
}

/// Checks the signature with `key`, then issuer, audience and expiry
/// (required); answers the claims, whose `sub` is a non-empty string.
pub fn verify(
    token: &str,
    key: &RsaPublicKey,
    expected: &Expected<'_>,
) -> Result<Map<String, Value>, JwtError> {
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(JwtError::Malformed);
    };
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| JwtError::Malformed)?;
    let digest = Sha256::new()
        .chain_update(header.as_bytes())
        .chain_update(b".")
        .chain_update(payload.as_bytes())
        .finalize();
    key.verify(Pkcs1v15Sign::new::<Sha256>(), &digest, &signature)
        .map_err(|_| JwtError::Signature)?;
    let claims: Value = decode_json(payload)?;
    let Value::Object(claims) = claims else {
        return Err(JwtError::Malformed);
    };
    let iss = claims.get("iss").and_then(Value::as_str).unwrap_or("");
    if !expected.issuers.contains(&iss) {
        return Err(JwtError::Issuer(iss.to_owned()));
    }
    if !expected.audiences.is_empty() {
        let matches = |a: &Value| {
            a.as_str()
                .is_some_and(|a| expected.audiences.iter().any(|e| e == a))
        };
        let ok = match claims.get("aud") {
            Some(Value::Array(list)) => list.iter().any(matches),
            Some(one) => matches(one),
            None => false,
        };
        if !ok {
            return Err(JwtError::Audience);
        }
    }
    match claims.get("exp").and_then(Value::as_f64) {
        Some(exp) if exp as i64 > expected.now => {}
        _ => return Err(JwtError::Expired),
    }
    if claims
        .get("sub")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(JwtError::NoSubject);
    }
    Ok(claims)
}

fn decode_json(part: &str) -> Result<Value, JwtError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| JwtError::Malformed)?;
    serde_json::from_slice(&bytes).map_err(|_| JwtError::Malformed)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rsa::RsaPrivateKey;
    use rsa::traits::PublicKeyParts as _;

    pub(crate) fn sign(key: &RsaPrivateKey, kid: &str, claims: &Value) -> String {
        let header = URL_SAFE_NO_PAD.encode(format!(r#"{{"alg":"RS256","kid":"{kid}"}}"#));
        let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
        let digest = Sha256::digest(format!("{header}.{payload}"));
        let signature = key.sign(Pkcs1v15Sign::new::<Sha256>(), &digest).unwrap();
        format!("{header}.{payload}.{}", URL_SAFE_NO_PAD.encode(signature))
    }

    pub(crate) fn jwks(kid: &str, key: &RsaPrivateKey) -> String {
        serde_json::json!({"keys": [{
            "kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
            "n": URL_SAFE_NO_PAD.encode(key.n().to_bytes_be()),
            "e": URL_SAFE_NO_PAD.encode(key.e().to_bytes_be()),
        }]})
        .to_string()
    }

    #[test]
    fn tokens_are_checked_against_real_keys() {
        let mut rng = rand_core_rng();
        let key = RsaPrivateKey::new(&mut rng, 2048).unwrap();
        let other = RsaPrivateKey::new(&mut rng, 2048).unwrap();
        let keys = parse_jwks(jwks("k1", &key).as_bytes()).unwrap();
        assert_eq!(keys[0].0, "k1");
        let public = &keys[0].1;
        let audiences = ["com.game".to_owned()];
        let expected = Expected {
            issuers: &["https://appleid.apple.com"],
            audiences: &audiences,
            now: 1_000,
        };
        let claims = |iss: &str, aud: &str, exp: i64| serde_json::json!({"iss": iss, "aud": aud, "exp": exp, "sub": "001.abc"});
        let good = sign(
            &key,
            "k1",
            &claims("https://appleid.apple.com", "com.game", 2_000),
        );
        assert_eq!(key_id(&good).unwrap(), "k1");
        assert_eq!(verify(&good, public, &expected).unwrap()["sub"], "001.abc");
        let forged = sign(
            &other,
            "k1",
            &claims("https://appleid.apple.com", "com.game", 2_000),
        );
        assert_eq!(verify(&forged, public, &expected), Err(JwtError::Signature));
        let expired = sign(
            &key,
            "k1",
            &claims("https://appleid.apple.com", "com.game", 999),
        );
        assert_eq!(verify(&expired, public, &expected), Err(JwtError::Expired));
        let audience = sign(
            &key,
            "k1",
            &claims("https://appleid.apple.com", "com.x", 2_000),
        );
        assert_eq!(
            verify(&audience, public, &expected),
            Err(JwtError::Audience)
        );
        let issuer = sign(&key, "k1", &claims("https://evil", "com.game", 2_000));
        assert!(matches!(
            verify(&issuer, public, &expected),
            Err(JwtError::Issuer(_))
        ));
        let hs = format!(
            "{}.e30.",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"HS256","kid":"k1"}"#)
        );
        assert_eq!(key_id(&hs), Err(JwtError::Algorithm("HS256".into())));
        assert_eq!(verify("a.b", public, &expected), Err(JwtError::Malformed));
        assert!(parse_jwks(b"{}").is_err());
        assert!(parse_jwks(b"<html>").is_err());
    }

    pub(crate) fn rand_core_rng() -> impl rsa::rand_core::CryptoRngCore {
        rsa::rand_core::OsRng
    }
}
