//! `nk.http_request` over https: a local TLS server with a certificate
//! issued by a throwaway authority made here, trusted through
//! `runtime.http_ca_file`; refused without it; a bad CA file stops start-up.

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::rpc::lua_config;
use crate::support::{Backend, TestServer, assert_error};

/// A test authority (PEM) and a TLS acceptor for 127.0.0.1 signed by it.
fn authority_and_acceptor() -> (String, tokio_rustls::TlsAcceptor) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "ludus test authority");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(leaf.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
        )
        .unwrap();
    (
        ca_cert.pem(),
        tokio_rustls::TlsAcceptor::from(Arc::new(config)),
    )
}

/// Serves `hello` over TLS to every connection; returns its address.
async fn tls_upstream(acceptor: tokio_rustls::TlsAcceptor) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                // A client that does not trust us aborts the handshake: nothing to serve.
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = vec![0u8; 4096];
                let _ = tls.read(&mut buf).await;
                let _ = tls
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
                    .await;
                let _ = tls.shutdown().await;
            });
        }
    });
    addr
}

async fn fetch(s: &TestServer, url: &str) -> crate::support::Reply {
    s.raw(
        s.http
            .post(s.url("/v2/rpc/fetch?http_key=defaulthttpkey"))
            .body(Value::String(url.to_owned()).to_string()),
    )
    .await
}

#[tokio::test]
async fn https_request_trusts_runtime_http_ca_file() {
    let (ca_pem, acceptor) = authority_and_acceptor();
    let addr = tls_upstream(acceptor).await;
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca_pem).unwrap();
    let url = format!("https://{addr}/path");

    let trusting = TestServer::start_with(Backend::Sqlite, |c| {
        lua_config(c);
        c.runtime.http_ca_file = ca_file.display().to_string();
    })
    .await;
    let r = fetch(&trusting, &url).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let v: Value = serde_json::from_str(r.body["payload"].as_str().unwrap()).unwrap();
    assert_eq!(
        v,
        json!({"code": 200, "body": "hello", "content_type": "text/plain"})
    );

    // The built-in roots alone do not know the test authority.
    let default_roots = TestServer::start_with(Backend::Sqlite, lua_config).await;
    let r = fetch(&default_roots, &url).await;
    let message = assert_error(&r, 500, 13);
    assert!(message.contains("certificate"), "{message}");
}

#[tokio::test]
async fn bad_http_ca_file_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let not_pem = dir.path().join("not.pem");
    std::fs::write(&not_pem, "just text\n").unwrap();
    for (path, expected) in [
        (dir.path().join("missing.pem"), "cannot read it"),
        (not_pem, "holds no certificate"),
    ] {
        let mut config = ludus_server::Config {
            data_dir: dir.path().join("data"),
            ..ludus_server::Config::default()
        };
        config.socket.port = 0;
        config.console.port = 0;
        config.runtime.http_ca_file = path.display().to_string();
        let error = match ludus_server::start(config).await {
            Ok(_) => panic!("a server started with http_ca_file {}", path.display()),
            Err(e) => e.to_string(),
        };
        assert!(
            error.contains("runtime.http_ca_file") && error.contains(expected),
            "{error}"
        );
    }
}
