//! What both runtimes' `nk` compute without the server, written once for
//! the Lua and the JS bindings: AES (Nakama's CFB with the IV in front),
//! JWT signing (HS256, RS256), RSA-SHA256 signatures, Go's header names,
//! the checks of a notification, and the rule that keeps `file_read` under
//! `runtime.path`. Errors are Nakama's
//! messages without the calling function's name; each binding adds it.

use std::path::{Component, Path, PathBuf};

use aes::cipher::{AsyncStreamCipher, KeyIvInit};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

const AES_BLOCK: usize = 16;

/// What every call of the Satori client (`get_satori`, `getSatori`)
/// answers: Ludus has no Satori client.
pub(crate) const SATORI_NOT_CONFIGURED: &str = "satori is not configured: this server has no satori client, so remove the module's satori calls";

/// Largest file `file_read` reads (bigger ones are refused, not cut).
pub(crate) const MAX_FILE_BYTES: u64 = 16 << 20;

/// AES in CFB mode with a random IV in front of the ciphertext; the key is
/// 16 (AES-128) or 32 bytes (AES-256). Like Nakama, the input is padded
/// with spaces to a multiple of 4 bytes first.
pub(crate) fn aes_encrypt(input: &[u8], key: &[u8]) -> Vec<u8> {
    let mut data = input.to_vec();
    let pad = (4 - data.len() % 4) % 4;
    data.extend(std::iter::repeat_n(b' ', pad));
    let mut iv = [0u8; AES_BLOCK];
    rand::fill(&mut iv);
    match key.len() {
        16 => cfb_mode::Encryptor::<aes::Aes128>::new(key.into(), (&iv).into()).encrypt(&mut data),
        _ => cfb_mode::Encryptor::<aes::Aes256>::new(key.into(), (&iv).into()).encrypt(&mut data),
    }
    let mut out = iv.to_vec();
    out.extend(data);
    out
}

/// The inverse of [`aes_encrypt`].
pub(crate) fn aes_decrypt(input: &[u8], key: &[u8]) -> Result<Vec<u8>, String> {
    if input.len() < AES_BLOCK {
        return Err("aes decrypt: input too short".into());
    }
    let (iv, rest) = input.split_at(AES_BLOCK);
    let mut data = rest.to_vec();
    match key.len() {
        16 => cfb_mode::Decryptor::<aes::Aes128>::new(key.into(), iv.into()).decrypt(&mut data),
        _ => cfb_mode::Decryptor::<aes::Aes256>::new(key.into(), iv.into()).decrypt(&mut data),
    }
    Ok(data)
}

/// A JWT of `claims` signed with HS256 (`key` the secret) or RS256 (`key`
/// an RSA private key in PEM).
pub(crate) fn jwt_sign(
    algo: &str,
    key: &str,
    claims: &serde_json::Value,
) -> Result<String, String> {
    let header: &[u8] = match algo {
        "HS256" => br#"{"alg":"HS256","typ":"JWT"}"#,
        "RS256" => br#"{"alg":"RS256","typ":"JWT"}"#,
        _ => {
            return Err(format!(
                "unsupported algo type {algo:?} - only allowed 'HS256', 'RS256'"
            ));
        }
    };
    if key.is_empty() {
        return Err("expects a signing key".into());
    }
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(claims).map_err(|e| e.to_string())?);
    let signing_input = format!("{}.{payload}", URL_SAFE_NO_PAD.encode(header));
    let sig = if algo == "RS256" {
        rs256_sign(key, signing_input.as_bytes())?
    } else {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(key.as_bytes()).map_err(|e| format!("bad key: {e}"))?;
        mac.update(signing_input.as_bytes());
        mac.finalize().into_bytes().to_vec()
    };
    Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig)))
}

/// RSASSA-PKCS1-v1_5 with SHA-256 over `message`, with a PEM private key
/// (PKCS#8 `PRIVATE KEY` as Nakama reads it, or PKCS#1 `RSA PRIVATE KEY`).
fn rs256_sign(pem: &str, message: &[u8]) -> Result<Vec<u8>, String> {
    use rsa::pkcs1::DecodeRsaPrivateKey as _;
    use rsa::pkcs8::DecodePrivateKey as _;
    use rsa::signature::{RandomizedSigner as _, SignatureEncoding as _};

    let bad = |why: String| {
        format!(
            "could not parse private key: {why}; RS256 expects an RSA private key \
             in PEM (-----BEGIN PRIVATE KEY----- or -----BEGIN RSA PRIVATE KEY-----)"
        )
    };
    let pem = pem.trim();
    let key = if pem.starts_with("-----BEGIN PRIVATE KEY-----") {
        rsa::RsaPrivateKey::from_pkcs8_pem(pem).map_err(|e| bad(e.to_string()))?
    } else if pem.starts_with("-----BEGIN RSA PRIVATE KEY-----") {
        rsa::RsaPrivateKey::from_pkcs1_pem(pem).map_err(|e| bad(e.to_string()))?
    } else {
        return Err(bad("no valid PEM block found".into()));
    };
    let signer = rsa::pkcs1v15::SigningKey::<Sha256>::new(key);
    // Randomized only in its blinding (against timing attacks); the
    // signature itself is deterministic, as PKCS#1 v1.5 is.
    let signature = signer
        .try_sign_with_rng(&mut rsa::rand_core::OsRng, message)
        .map_err(|e| format!("failed to sign token: {e}"))?;
    Ok(signature.to_vec())
}

/// Nakama's `rsa_sha256_hash`: an RSASSA-PKCS1-v1_5 SHA-256 signature with
/// a PKCS#1 (`RSA PRIVATE KEY`) PEM key, raw bytes.
pub(crate) fn rsa_sha256(input: &[u8], pem: &str) -> Result<Vec<u8>, String> {
    use rsa::pkcs1::DecodeRsaPrivateKey as _;
    use rsa::signature::{RandomizedSigner as _, SignatureEncoding as _};
    if !pem.contains("-----BEGIN ") {
        return Err("could not parse private key: no valid blocks found".into());
    }
    let key =
        rsa::RsaPrivateKey::from_pkcs1_pem(pem).map_err(|e| format!("error parsing key: {e}"))?;
    let signer = rsa::pkcs1v15::SigningKey::<Sha256>::new(key);
    let signature = signer
        .try_sign_with_rng(&mut rsa::rand_core::OsRng, input)
        .map_err(|e| format!("error signing input: {e}"))?;
    Ok(signature.to_vec())
}

/// `rel` joined to `root` when it names a file inside `root`: relative,
/// and no `..` climbing above it. Symbolic links inside `runtime.path` are
/// the operator's own and are followed.
pub(crate) fn under_root(root: &Path, rel: &str) -> Option<PathBuf> {
    let rel = Path::new(rel);
    let mut depth = 0usize;
    for part in rel.components() {
        match part {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => depth = depth.checked_sub(1)?,
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(root.join(rel))
}

/// A file under `root` for `file_read`, refused when it climbs out or is
/// over [`MAX_FILE_BYTES`].
pub(crate) fn read_module_file(root: &Path, rel: &str) -> Result<Vec<u8>, String> {
    let path = under_root(root, rel).ok_or_else(|| {
        format!("failed to open file: {rel}: the path must stay inside runtime.path")
    })?;
    let len = std::fs::metadata(&path)
        .map_err(|e| format!("failed to open file: {e}"))?
        .len();
    if len > MAX_FILE_BYTES {
        return Err(format!(
            "failed to read file: {len} bytes is over the {MAX_FILE_BYTES}-byte limit"
        ));
    }
    std::fs::read(&path).map_err(|e| format!("failed to read file: {e}"))
}

/// A notification a module sends, checked as Nakama checks it: a subject,
/// and a code above 0 (lower ones are Nakama's own).
pub(crate) fn notification(
    user_id: uuid::Uuid,
    subject: String,
    content: String,
    code: i64,
    sender_id: uuid::Uuid,
    persistent: bool,
) -> Result<ludus_core::notification::Notification, &'static str> {
    if subject.is_empty() {
        return Err("expects subject to be a non-empty string");
    }
    if code <= 0 || code > i32::MAX as i64 {
        return Err("expects code to be a number above 0, lower ones are reserved");
    }
    Ok(ludus_core::notification::Notification {
        id: ludus_core::new_row_id(),
        user_id,
        subject,
        content,
        code: code as i32,
        sender_id,
        create_time_us: ludus_core::chat::now_us(),
        persistent,
    })
}

/// `content-type` → `Content-Type`, as Go's HTTP client reports names.
pub(crate) fn canonical_header(name: &str) -> String {
    name.split('-')
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(c) => {
                    c.to_ascii_uppercase().to_string() + &chars.as_str().to_ascii_lowercase()
                }
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

#[cfg(test)]
mod tests {
    use super::{aes_decrypt, aes_encrypt, under_root};
    use std::path::Path;

    #[test]
    fn file_read_stays_under_the_root() {
        let root = Path::new("/srv/modules");
        assert_eq!(
            under_root(root, "data/a.json"),
            Some(root.join("data/a.json"))
        );
        assert!(under_root(root, "data/../a.json").is_some());
        assert_eq!(under_root(root, "../secret"), None);
        assert_eq!(under_root(root, "data/../../secret"), None);
        assert_eq!(under_root(root, "/etc/passwd"), None);
    }

    #[test]
    fn aes_round_trips_with_nakamas_space_padding() {
        for key in [&[7u8; 16][..], &[9u8; 32][..]] {
            let sealed = aes_encrypt(b"hello", key);
            assert_eq!(sealed.len(), 16 + 8);
            assert_eq!(aes_decrypt(&sealed, key).unwrap(), b"hello   ");
        }
        assert!(aes_decrypt(b"short", &[7u8; 16]).is_err());
    }
}
