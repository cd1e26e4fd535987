//! Apple's signed data (JWS): App Store Server Notifications v2 and
//! StoreKit 2 transactions. A JWS carries its certificate chain in the
//! header's `x5c` (leaf, intermediate, root); it is trusted when the leaf
//! chains through the intermediate to a root the server trusts (Apple Root
//! CA - G3 unless `iap.apple.root_ca` names another) and the leaf's P-256
//! key signed `header.payload` (ES256). The rules are Nakama's
//! `iap.ValidateAppleJwsSignature`: at least three certificates, the third
//! only parsed, the chain checked as for a TLS server (an extended key
//! usage, when present, must allow it) at the current time.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, UnixTime};
use serde_json::Value;

/// Apple Root CA - G3, the root of every App Store signature.
pub const APPLE_ROOT_CA_G3: &str = "-----BEGIN CERTIFICATE-----
MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwS
QXBwbGUgUm9vdCBDQSAtIEczMSYwJAYDVQQLDB1BcHBsZSBDZXJ0aWZpY2F0aW9u
IEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcN
MTQwNDMwMTgxOTA2WhcNMzkwNDMwMTgxOTA2WjBnMRswGQYDVQQDDBJBcHBsZSBS
b290IENBIC0gRzMxJjAkBgNVBAsMHUFwcGxlIENlcnRpZmljYXRpb24gQXV0aG9y
aXR5MRMwEQYDVQQKDApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqGSM49
AgEGBSuBBAAiA2IABJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWmBSp3ZHtf
TjjTuxxEtX/1H7YyYl3J6YRbTzBPEVoA/VhYDKX1DyxNB0cTddqXl5dvMVztK517
IDvYuVTZXpmkOlEKMaNCMEAwHQYDVR0OBBYEFLuw3qFYM4iapIqZ3r6966/ayySr
MA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gA
MGUCMQCD6cHEFl4aXTQY2e3v9GwOAEZLuN+yRhHFD/3meoyhpmvOwgPUnPWTxnS4
at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkLF1vLUagM
6BgD56KyKA==
-----END CERTIFICATE-----
";

/// Why a JWS is not trusted (or not a JWS at all).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwsError {
    #[error("not a jws: expected three dot-separated parts")]
    Format,
    #[error("the jws header is not base64url json")]
    Header,
    #[error("the jws header's x5c must hold at least 3 certificates")]
    ShortChain,
    #[error("a certificate of the jws header's x5c is not base64 der")]
    Certificate,
    #[error("the jws certificate chain does not lead to a trusted root: {0}")]
    Chain(String),
    #[error("the jws signature does not match its leaf certificate's key")]
    Signature,
    #[error("the jws payload is not base64url json")]
    Payload,
}

/// The roots an Apple JWS must chain to.
#[derive(Debug, Clone)]
pub struct AppleRoots {
    certs: Vec<CertificateDer<'static>>,
}

impl AppleRoots {
    /// Every certificate of `pem`; empty text is Apple Root CA - G3.
    pub fn from_pem(pem: &str) -> Result<AppleRoots, String> {
        let pem = if pem.trim().is_empty() {
            APPLE_ROOT_CA_G3
        } else {
            pem
        };
        let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("not pem certificates: {e}"))?;
        if certs.is_empty() {
            return Err("holds no pem certificate".into());
        }
        for c in &certs {
            webpki::anchor_from_trusted_cert(c)
                .map_err(|e| format!("not a ca certificate: {e}"))?;
        }
        Ok(AppleRoots { certs })
    }

    /// Apple Root CA - G3.
    pub fn apple() -> AppleRoots {
        AppleRoots::from_pem("").expect("apple's root certificate parses")
    }
}

/// Checks `jws` as Nakama does and answers its payload, parsed.
pub fn verify(jws: &str, roots: &AppleRoots, now_sec: u64) -> Result<Value, JwsError> {
    let parts: Vec<&str> = jws.split('.').collect();
    let [header, payload, signature] = parts[..] else {
        return Err(JwsError::Format);
    };
    let header_json: Value = URL_SAFE_NO_PAD
        .decode(header)
        .ok()
        .and_then(|h| serde_json::from_slice(&h).ok())
        .ok_or(JwsError::Header)?;
    let x5c = header_json
        .get("x5c")
        .and_then(Value::as_array)
        .ok_or(JwsError::ShortChain)?;
    if x5c.len() < 3 {
        return Err(JwsError::ShortChain);
    }
    let certs = x5c
        .iter()
        .map(|c| {
            c.as_str()
                .and_then(|c| STANDARD.decode(c).ok())
                .map(CertificateDer::from)
                .ok_or(JwsError::Certificate)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let leaf = webpki::EndEntityCert::try_from(&certs[0]).map_err(|_| JwsError::Certificate)?;
    // Nakama parses the third certificate but trusts only its own roots.
    webpki::anchor_from_trusted_cert(&certs[2]).map_err(|_| JwsError::Certificate)?;
    let anchors = roots
        .certs
        .iter()
        .filter_map(|c| webpki::anchor_from_trusted_cert(c).ok())
        .collect::<Vec<_>>();
    let algs = [
        webpki::ring::ECDSA_P256_SHA256,
        webpki::ring::ECDSA_P256_SHA384,
        webpki::ring::ECDSA_P384_SHA256,
        webpki::ring::ECDSA_P384_SHA384,
        webpki::ring::RSA_PKCS1_2048_8192_SHA256,
        webpki::ring::RSA_PKCS1_2048_8192_SHA384,
    ];
    let time = UnixTime::since_unix_epoch(std::time::Duration::from_secs(now_sec));
    leaf.verify_for_usage(
        &algs,
        &anchors,
        &certs[1..2],
        time,
        webpki::KeyUsage::server_auth(),
        None,
        None,
    )
    .map_err(|e| JwsError::Chain(format!("{e:?}")))?;
    let raw = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| JwsError::Signature)?;
    if raw.len() != 64 {
        return Err(JwsError::Signature);
    }
    let der = ecdsa_der(&raw[..32], &raw[32..]);
    leaf.verify_signature(
        webpki::ring::ECDSA_P256_SHA256,
        format!("{header}.{payload}").as_bytes(),
        &der,
    )
    .map_err(|_| JwsError::Signature)?;
    decode_payload(payload)
}

/// The payload of a JWS that is part of an already verified one (Apple's
/// `signedTransactionInfo` and `signedRenewalInfo` inside a notification),
/// read without checking its own signature, as Nakama does.
pub fn payload_of(jws: &str) -> Result<Value, JwsError> {
    let mut parts = jws.split('.');
    let (Some(_), Some(payload), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(JwsError::Format);
    };
    decode_payload(payload)
}

fn decode_payload(payload: &str) -> Result<Value, JwsError> {
    // Apple encodes base64url; Nakama decodes standard base64 without
    // padding, which reads the same text whenever it has no '-' or '_'.
    let bytes = URL_SAFE_NO_PAD
        .decode(payload)
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(payload))
        .map_err(|_| JwsError::Payload)?;
    serde_json::from_slice(&bytes).map_err(|_| JwsError::Payload)
}

/// ECDSA's fixed-width `r || s` as the DER `SEQUENCE { INTEGER r, INTEGER s }`.
fn ecdsa_der(r: &[u8], s: &[u8]) -> Vec<u8> {
    fn integer(out: &mut Vec<u8>, n: &[u8]) {
        let start = n.iter().position(|b| *b != 0).unwrap_or(n.len() - 1);
        let n = &n[start..];
        out.push(0x02);
        if n[0] & 0x80 != 0 {
            out.push(n.len() as u8 + 1);
            out.push(0);
        } else {
            out.push(n.len() as u8);
        }
        out.extend_from_slice(n);
    }
    let mut body = Vec::with_capacity(72);
    integer(&mut body, r);
    integer(&mut body, s);
    let mut out = Vec::with_capacity(body.len() + 2);
    out.push(0x30);
    out.push(body.len() as u8);
    out.extend(body);
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    use ring::rand::SystemRandom;
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};

    /// A root, an intermediate and a leaf with real P-256 keys, as Apple
    /// signs: the leaf's key signs JWS.
    pub(crate) struct TestChain {
        pub root_pem: String,
        pub x5c: Vec<String>,
        leaf: EcdsaKeyPair,
    }

    impl TestChain {
        pub(crate) fn new() -> TestChain {
            let ca = |name: &str| {
                let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
                p.distinguished_name.push(rcgen::DnType::CommonName, name);
                p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
                p
            };
            let root_key = KeyPair::generate().unwrap();
            let root_params = ca("Test Root");
            let root = root_params.self_signed(&root_key).unwrap();
            let root_issuer = rcgen::Issuer::from_params(&root_params, &root_key);
            let inter_key = KeyPair::generate().unwrap();
            let inter_params = ca("Test Intermediate");
            let inter = inter_params.signed_by(&inter_key, &root_issuer).unwrap();
            let inter_issuer = rcgen::Issuer::from_params(&inter_params, &inter_key);
            let rng = SystemRandom::new();
            let pkcs8 =
                EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
            let leaf_key = KeyPair::try_from(pkcs8.as_ref()).unwrap();
            let mut lp = CertificateParams::new(Vec::<String>::new()).unwrap();
            lp.distinguished_name
                .push(rcgen::DnType::CommonName, "Test Store Signing");
            let leaf_cert = lp.signed_by(&leaf_key, &inter_issuer).unwrap();
            let leaf =
                EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
                    .unwrap();
            TestChain {
                root_pem: root.pem(),
                x5c: [leaf_cert.der(), inter.der(), root.der()]
                    .iter()
                    .map(|d| STANDARD.encode(d))
                    .collect(),
                leaf,
            }
        }

        pub(crate) fn roots(&self) -> AppleRoots {
            AppleRoots::from_pem(&self.root_pem).unwrap()
        }

        /// `payload` signed as Apple signs it.
        pub(crate) fn sign(&self, payload: &Value) -> String {
            let header = serde_json::json!({"alg": "ES256", "x5c": self.x5c});
            let input = format!(
                "{}.{}",
                URL_SAFE_NO_PAD.encode(header.to_string()),
                URL_SAFE_NO_PAD.encode(payload.to_string())
            );
            let sig = self
                .leaf
                .sign(&SystemRandom::new(), input.as_bytes())
                .unwrap();
            format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
        }
    }

    fn now() -> u64 {
        crate::unix_now() as u64
    }

    #[test]
    fn a_jws_signed_through_the_chain_is_trusted() {
        let chain = TestChain::new();
        let jws = chain.sign(&serde_json::json!({"productId": "vip"}));
        let payload = verify(&jws, &chain.roots(), now()).unwrap();
        assert_eq!(payload["productId"], "vip");
        assert_eq!(payload_of(&jws).unwrap()["productId"], "vip");
    }

    #[test]
    fn apples_root_does_not_trust_a_test_chain() {
        let chain = TestChain::new();
        let jws = chain.sign(&serde_json::json!({}));
        let err = verify(&jws, &AppleRoots::apple(), now()).unwrap_err();
        assert!(matches!(err, JwsError::Chain(_)), "{err:?}");
    }

    #[test]
    fn a_changed_payload_or_another_chain_is_refused() {
        let chain = TestChain::new();
        let jws = chain.sign(&serde_json::json!({"price": 1}));
        let parts: Vec<&str> = jws.split('.').collect();
        let forged = format!(
            "{}.{}.{}",
            parts[0],
            URL_SAFE_NO_PAD.encode(r#"{"price":0}"#),
            parts[2]
        );
        assert_eq!(
            verify(&forged, &chain.roots(), now()).unwrap_err(),
            JwsError::Signature
        );
        let other = TestChain::new();
        assert!(matches!(
            verify(&jws, &other.roots(), now()).unwrap_err(),
            JwsError::Chain(_)
        ));
        // A chain that expired long ago (the test certificates are valid
        // from 1975 to 4096, so ask about a time before that).
        assert!(matches!(
            verify(&jws, &chain.roots(), 0).unwrap_err(),
            JwsError::Chain(_)
        ));
    }

    #[test]
    fn malformed_jws_are_named() {
        let roots = AppleRoots::apple();
        assert_eq!(verify("a.b", &roots, 0).unwrap_err(), JwsError::Format);
        assert_eq!(verify("!.b.c", &roots, 0).unwrap_err(), JwsError::Header);
        let short = URL_SAFE_NO_PAD.encode(r#"{"alg":"ES256","x5c":["a","b"]}"#);
        assert_eq!(
            verify(&format!("{short}.e30.x"), &roots, 0).unwrap_err(),
            JwsError::ShortChain
        );
        let junk = URL_SAFE_NO_PAD.encode(r#"{"x5c":["AAAA","AAAA","AAAA"]}"#);
        assert_eq!(
            verify(&format!("{junk}.e30.x"), &roots, 0).unwrap_err(),
            JwsError::Certificate
        );
        assert!(AppleRoots::from_pem("nonsense").is_err());
    }

    #[test]
    fn der_signatures_keep_their_sign() {
        assert_eq!(
            ecdsa_der(&[0, 1], &[0x80]),
            vec![0x30, 7, 2, 1, 1, 2, 2, 0, 0x80]
        );
    }
}
