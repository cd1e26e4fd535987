//! Multi-factor sign-in of console users, pure rules: time-based one-time
//! passwords (RFC 6238 over HMAC-SHA1, 30-second steps, 6 digits, one step
//! of drift either way, as Nakama's `dgoogauth` configuration), the secrets
//! and the 16 one-time recovery codes Nakama hands out, the setup token's
//! claims, and sealing what is stored (AES-256-GCM under
//! `mfa.storage_encryption_key`, nonce first, the layout Nakama stores, so
//! a database moved between the two servers reads the same).

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hmac;
use serde::{Deserialize, Serialize};

use crate::urlencode;

/// Steps of 30 seconds; a code of the step before or after also passes
/// (Nakama's window of 3).
const STEP_SEC: i64 = 30;
const WINDOW: i64 = 1;
/// What the authenticator apps show: Nakama's issuer.
const ISSUER: &str = "HeroicLabs";

/// Why a code was not even checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MalformedCode;

/// The claims of the token that sets MFA up (Nakama's `UserMFASetupToken`):
/// the console answers it at sign-in instead of a session, the web console
/// shows `mfa_url` as a QR code, and `AuthenticateMFASetup` hands it back
/// with a first code. `ims` is Ludus's own: when it was issued, in ms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct MfaSetupClaims {
    #[serde(default)]
    pub user_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub user_email: String,
    #[serde(rename = "exp", default)]
    pub expires_at: i64,
    #[serde(rename = "crt", default)]
    pub created_at: i64,
    #[serde(default)]
    pub secret: String,
    #[serde(default)]
    pub mfa_url: String,
    #[serde(default)]
    pub mfa_required: bool,
    #[serde(rename = "ims", default)]
    pub issued_at_ms: i64,
}

/// A new secret: 80 random bits in base32 without padding, as Nakama's.
pub fn new_secret() -> String {
    let bytes: [u8; 10] = rand::random();
    base32(&bytes)
}

/// The `otpauth://` URI of a secret for an authenticator app, query-escaped
/// as Nakama answers it in the setup token.
pub fn provision_url(secret: &str, username: &str) -> String {
    let uri = format!("otpauth://totp/{ISSUER}:{username}?issuer={ISSUER}&secret={secret}");
    urlencode::query_escape(&uri)
}

/// Sixteen recovery codes of 8 digits (10000000-99999998, as Nakama's),
/// each good for one sign-in instead of a time-based code.
pub fn new_recovery_codes() -> Vec<String> {
    use rand::Rng as _;
    let mut rng = rand::rng();
    (0..16)
        .map(|_| rng.random_range(10_000_000u32..99_999_999).to_string())
        .collect()
}

/// Checks a time-based code against a base32 secret at `now` (seconds).
/// A malformed code is an error; a wrong one is `Ok(false)`.
pub fn check_totp(secret: &str, code: &str, now: i64) -> Result<bool, MalformedCode> {
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return Err(MalformedCode);
    }
    let wanted: u32 = code.parse().map_err(|_| MalformedCode)?;
    let Some(key) = unbase32(secret) else {
        return Ok(false);
    };
    let step = now.div_euclid(STEP_SEC);
    Ok((step - WINDOW..=step + WINDOW).any(|s| s >= 0 && totp(&key, s as u64) == wanted))
}

/// A sign-in code: 6 digits are a time-based code, 8 digits (not starting
/// with 0) a recovery code, which is taken out of `recovery` when it
/// matches. Anything else is malformed.
pub fn check_sign_in(
    secret: &str,
    recovery: &mut Vec<String>,
    code: &str,
    now: i64,
) -> Result<bool, MalformedCode> {
    let code = code.trim();
    if code.len() == 8 && code.bytes().all(|b| b.is_ascii_digit()) && !code.starts_with('0') {
        return Ok(match recovery.iter().position(|c| c == code) {
            Some(i) => {
                recovery.remove(i);
                true
            }
            None => false,
        });
    }
    check_totp(secret, code, now)
}

/// The code an authenticator app shows for a base32 secret at `now`
/// (seconds), zero-padded to 6 digits; `None` for a secret that is not
/// base32. For tools and tests that play the app.
pub fn code_at(secret: &str, now: i64) -> Option<String> {
    let key = unbase32(secret)?;
    Some(format!(
        "{:06}",
        totp(&key, now.div_euclid(STEP_SEC) as u64)
    ))
}

/// The 6-digit code of `key` at time step `step` (RFC 6238 / RFC 4226).
pub fn totp(key: &[u8], step: u64) -> u32 {
    let key = hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, key);
    let mac = hmac::sign(&key, &step.to_be_bytes());
    let mac = mac.as_ref();
    let offset = (mac[mac.len() - 1] & 0x0f) as usize;
    let bin = u32::from_be_bytes([
        mac[offset] & 0x7f,
        mac[offset + 1],
        mac[offset + 2],
        mac[offset + 3],
    ]);
    bin % 1_000_000
}

/// Encrypts `plain` under a 32-byte key: a random nonce, then the
/// ciphertext and its tag.
pub fn seal(key: &[u8; 32], plain: &[u8]) -> Vec<u8> {
    let nonce: [u8; NONCE_LEN] = rand::random();
    let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, key).expect("a 32-byte key"));
    let mut data = plain.to_vec();
    key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut data)
        .expect("AES-GCM seals any message this small");
    let mut out = nonce.to_vec();
    out.extend_from_slice(&data);
    out
}

/// Decrypts what [`seal`] made; `None` when the key is another or the
/// bytes were changed.
pub fn open(key: &[u8; 32], sealed: &[u8]) -> Option<Vec<u8>> {
    if sealed.len() < NONCE_LEN {
        return None;
    }
    let (nonce, data) = sealed.split_at(NONCE_LEN);
    let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
    let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, key).ok()?);
    let mut data = data.to_vec();
    let plain = key.open_in_place(nonce, Aad::empty(), &mut data).ok()?;
    Some(plain.to_vec())
}

const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// RFC 4648 base32 without padding.
fn base32(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for &b in bytes {
        buffer = (buffer << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((buffer >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}

/// Reads base32 (padding and case ignored); `None` for other characters.
fn unbase32(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 5 / 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for c in text.trim_end_matches('=').bytes() {
        let value = ALPHABET.iter().position(|&a| a == c.to_ascii_uppercase())? as u32;
        buffer = (buffer << 5) | value;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
        }
        buffer &= (1 << bits) - 1;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238's SHA-1 test vectors (8 digits there; the last 6 here).
    #[test]
    fn rfc_6238_vectors() {
        let key = b"12345678901234567890";
        for (time, code) in [
            (59, 287_082),
            (1_111_111_109, 81_804),
            (1_111_111_111, 50_471),
            (1_234_567_890, 5_924),
            (2_000_000_000, 279_037),
        ] {
            assert_eq!(totp(key, time / 30), code, "at {time}");
        }
    }

    #[test]
    fn codes_pass_within_one_step_of_drift() {
        let secret = base32(b"12345678901234567890");
        assert_eq!(unbase32(&secret).unwrap(), b"12345678901234567890");
        assert_eq!(check_totp(&secret, "287082", 59), Ok(true));
        assert_eq!(check_totp(&secret, "287082", 59 + 30), Ok(true));
        assert_eq!(check_totp(&secret, "287082", 59 + 60), Ok(false));
        assert_eq!(check_totp(&secret, "287083", 59), Ok(false));
        for bad in ["", "12345", "1234567", "12a456"] {
            assert_eq!(check_totp(&secret, bad, 59), Err(MalformedCode), "{bad}");
        }
    }

    #[test]
    fn a_recovery_code_works_once() {
        let secret = new_secret();
        assert_eq!(secret.len(), 16);
        let mut codes = new_recovery_codes();
        assert_eq!(codes.len(), 16);
        let first = codes[0].clone();
        assert_eq!(check_sign_in(&secret, &mut codes, &first, 0), Ok(true));
        assert_eq!(codes.len(), 15);
        assert_eq!(check_sign_in(&secret, &mut codes, &first, 0), Ok(false));
        assert_eq!(
            check_sign_in(&secret, &mut codes, "01234567", 0),
            Err(MalformedCode)
        );
    }

    #[test]
    fn sealed_secrets_open_with_their_key_only() {
        let key = *b"the-key-has-to-be-32-bytes-long!";
        let sealed = seal(&key, b"JBSWY3DPEHPK3PXP");
        assert_eq!(open(&key, &sealed).unwrap(), b"JBSWY3DPEHPK3PXP");
        assert_eq!(open(b"another-key-that-is-32-bytes-lon", &sealed), None);
        let mut changed = sealed.clone();
        *changed.last_mut().unwrap() ^= 1;
        assert_eq!(open(&key, &changed), None);
        assert_eq!(open(&key, &sealed[..5]), None);
    }

    #[test]
    fn provision_url_is_nakamas() {
        assert_eq!(
            provision_url("ABC", "ops"),
            "otpauth%3A%2F%2Ftotp%2FHeroicLabs%3Aops%3Fissuer%3DHeroicLabs%26secret%3DABC"
        );
    }
}
