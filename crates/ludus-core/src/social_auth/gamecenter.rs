//! Game Center identity verification: the public key URL a client sends is
//! checked (https, a path, a host under `.apple.com`, as Nakama checks it)
//! before anything is fetched from it, and the signature over player id,
//! bundle id, timestamp (big-endian u64) and salt is checked with the RSA key
//! of the certificate found there. Pure code: the certificate comes from the
//! caller.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rsa::pkcs8::DecodePublicKey as _;
use rsa::{Pkcs1v15Sign, RsaPublicKey};
use sha2::{Digest as _, Sha256};

/// What a client sends to prove a Game Center identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameCenterProof {
    pub player_id: String,
    pub bundle_id: String,
    /// Milliseconds since the UNIX epoch, as Game Center gives it.
    pub timestamp_ms: i64,
    /// Base64.
    pub salt: String,
    /// Base64.
    pub signature: String,
    pub public_key_url: String,
}

/// The path of `url` when it is an https URL on a host under `.apple.com`
/// with a path; anything else is refused before any request is made.
pub fn check_key_url(url: &str) -> Result<&str, String> {
    let Some(rest) = url.strip_prefix("https://") else {
        return Err("public key url must be https".into());
    };
    let (authority, path) = match rest.find(['/', '?', '#']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    // No user info (`https://apple.com@evil.example/`), and the port is no
    // part of the host.
    if authority.contains('@') {
        return Err("public key url must not carry user info".into());
    }
    let host = authority.split(':').next().unwrap_or("");
    if !host.to_ascii_lowercase().ends_with(".apple.com") {
        return Err("public key url must be on an apple.com host".into());
    }
    if !path.starts_with('/') || path == "/" || path.starts_with("/?") || path.starts_with("/#") {
        return Err("public key url has no path".into());
    }
    Ok(path)
}

/// The RSA key of a certificate, DER or PEM.
pub fn certificate_key(body: &[u8]) -> Result<RsaPublicKey, String> {
    let der = match std::str::from_utf8(body) {
        Ok(text) if text.contains("-----BEGIN CERTIFICATE-----") => {
            let inner: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
            STANDARD
                .decode(inner.trim())
                .map_err(|_| "public key certificate is not valid pem".to_owned())?
        }
        _ => body.to_vec(),
    };
    let spki = subject_public_key_info(&der).ok_or("public key certificate is not x.509")?;
    RsaPublicKey::from_public_key_der(spki)
        .map_err(|_| "public key certificate holds no rsa key".to_owned())
}

/// Checks the proof's signature with `key`.
pub fn verify(proof: &GameCenterProof, key: &RsaPublicKey) -> Result<(), String> {
    let salt = STANDARD
        .decode(&proof.salt)
        .map_err(|_| "salt is not base64".to_owned())?;
    let signature = STANDARD
        .decode(&proof.signature)
        .map_err(|_| "signature is not base64".to_owned())?;
    let digest = Sha256::new()
        .chain_update(proof.player_id.as_bytes())
        .chain_update(proof.bundle_id.as_bytes())
        .chain_update((proof.timestamp_ms as u64).to_be_bytes())
        .chain_update(&salt)
        .finalize();
    key.verify(Pkcs1v15Sign::new::<Sha256>(), &digest, &signature)
        .map_err(|_| "signature mismatch".to_owned())
}

/// One DER element: (tag, content, what follows it).
fn element(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |a, &b| (a << 8) | b as usize);
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// The whole SubjectPublicKeyInfo element of an X.509 certificate:
/// Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version
/// (optional), serial, signature, issuer, validity, subject, spki, … } … }.
fn subject_public_key_info(cert: &[u8]) -> Option<&[u8]> {
    let (0x30, certificate, _) = element(cert)? else {
        return None;
    };
    let (0x30, tbs, _) = element(certificate)? else {
        return None;
    };
    let mut rest = tbs;
    if rest.first() == Some(&0xa0) {
        rest = element(rest)?.2;
    }
    for _ in 0..5 {
        rest = element(rest)?.2; // serial, signature, issuer, validity, subject
    }
    let (tag, _, after) = element(rest)?;
    (tag == 0x30).then(|| &rest[..rest.len() - after.len()])
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsa::RsaPrivateKey;
    use rsa::pkcs8::EncodePublicKey as _;

    /// A certificate-shaped DER around `spki`: enough structure for the walk
    /// (the signature over it is not what Game Center checks).
    pub(crate) fn fake_certificate(spki: &[u8]) -> Vec<u8> {
        fn wrap(tag: u8, content: &[u8]) -> Vec<u8> {
            let mut out = vec![tag];
            let len = content.len();
            if len < 0x80 {
                out.push(len as u8);
            } else {
                out.extend([0x82, (len >> 8) as u8, len as u8]);
            }
            out.extend_from_slice(content);
            out
        }
        let mut tbs = wrap(0xa0, &wrap(0x02, &[2]));
        tbs.extend(wrap(0x02, &[1])); // serial
        tbs.extend(wrap(0x30, &[])); // signature algorithm
        tbs.extend(wrap(0x30, &[])); // issuer
        tbs.extend(wrap(0x30, &[])); // validity
        tbs.extend(wrap(0x30, &[])); // subject
        tbs.extend_from_slice(spki);
        let mut cert = wrap(0x30, &tbs);
        cert.extend(wrap(0x30, &[]));
        cert.extend(wrap(0x03, &[0]));
        wrap(0x30, &cert)
    }

    #[test]
    fn signatures_are_checked_with_the_certificates_key() {
        let mut rng = rsa::rand_core::OsRng;
        let key = RsaPrivateKey::new(&mut rng, 2048).unwrap();
        let spki = key.to_public_key().to_public_key_der().unwrap();
        let cert = fake_certificate(spki.as_bytes());
        let public = certificate_key(&cert).unwrap();
        let pem = format!(
            "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
            STANDARD.encode(&cert)
        );
        assert_eq!(certificate_key(pem.as_bytes()).unwrap(), public);
        let mut proof = GameCenterProof {
            player_id: "G:1234".into(),
            bundle_id: "com.game".into(),
            timestamp_ms: 1_700_000_000_000,
            salt: STANDARD.encode(b"salty"),
            signature: String::new(),
            public_key_url: "https://static.gc.apple.com/public-key/gc-prod-9.cer".into(),
        };
        let mut payload = b"G:1234com.game".to_vec();
        payload.extend(1_700_000_000_000u64.to_be_bytes());
        payload.extend(b"salty");
        let sig = key
            .sign(Pkcs1v15Sign::new::<Sha256>(), &Sha256::digest(&payload))
            .unwrap();
        proof.signature = STANDARD.encode(sig);
        assert_eq!(verify(&proof, &public), Ok(()));
        proof.player_id = "G:9999".into();
        assert!(verify(&proof, &public).is_err());
        assert!(certificate_key(b"garbage").is_err());
    }

    #[test]
    fn only_https_urls_on_apple_hosts_are_fetched() {
        let ok = "https://static.gc.apple.com/public-key/gc-prod-9.cer";
        assert_eq!(check_key_url(ok), Ok("/public-key/gc-prod-9.cer"));
        for bad in [
            "http://static.gc.apple.com/k.cer",
            "https://evil.example.com/k.cer",
            "https://apple.com.evil.example/k.cer",
            "https://static.gc.apple.com@evil.example/k.cer",
            "https://static.gc.apple.com/",
            "https://static.gc.apple.com",
            "https://127.0.0.1/k.cer",
            "file:///etc/passwd",
        ] {
            assert!(check_key_url(bad).is_err(), "{bad} must be refused");
        }
    }
}
