//! The server's outgoing HTTP client for `nk.http_request`, injected into
//! the runtime as its `HttpClient`: http and https (rustls with the `ring`
//! provider, Mozilla's roots from `webpki-roots` plus any authorities in
//! `runtime.http_ca_file`); it follows no redirects, and every request has
//! the caller's timeout and a bounded response body, whatever the scheme.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use ludus_core::{ApiError, Code};
use ludus_runtime::{HttpClient, HttpFuture, HttpRequest, HttpResponse};

use super::RuntimeConfig;

/// Largest response body `nk.http_request` reads.
const MAX_HTTP_RESPONSE_BYTES: usize = 16 << 20;

type HttpsClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// hyper's client over rustls.
pub struct HyperClient {
    client: HttpsClient,
}

impl HyperClient {
    /// Fails (with a message naming the key) when `runtime.http_ca_file`
    /// cannot be read or holds no certificate.
    pub fn new(config: &RuntimeConfig) -> Result<HyperClient, String> {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.enforce_http(false);
        let tls = tls_config(&config.http_ca_file)?;
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(connector);
        Ok(HyperClient {
            client: Client::builder(TokioExecutor::new()).build(https),
        })
    }
}

impl HttpClient for HyperClient {
    fn request(&self, request: HttpRequest) -> HttpFuture {
        Box::pin(exchange(self.client.clone(), request))
    }
}

/// The client's TLS settings: Mozilla's roots plus the authorities in
/// `ca_file` (PEM), if one is named.
fn tls_config(ca_file: &str) -> Result<rustls::ClientConfig, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject as _;

    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if !ca_file.is_empty() {
        let bad = |why: String| format!("runtime.http_ca_file {ca_file:?}: {why}");
        let pem = std::fs::read(ca_file).map_err(|e| bad(format!("cannot read it: {e}")))?;
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| bad(format!("not a PEM certificate file: {e}")))?;
            roots.add(cert).map_err(|e| {
                bad(format!(
                    "a certificate in it is not a usable authority: {e}"
                ))
            })?;
            added += 1;
        }
        if added == 0 {
            return Err(bad(
                "holds no certificate; give a PEM file with one or more BEGIN CERTIFICATE blocks"
                    .into(),
            ));
        }
        tracing::info!(
            ca_file,
            certificates = added,
            "extra certificate authorities for nk.http_request"
        );
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map(|b| b.with_root_certificates(roots).with_no_client_auth())
        .map_err(|e| format!("cannot set up tls for nk.http_request: {e}"))
}

async fn exchange(client: HttpsClient, request: HttpRequest) -> Result<HttpResponse, ApiError> {
    let failed = |what: &str, e: &dyn std::error::Error| {
        // hyper's errors say little at the top ("client error (Connect)"):
        // the cause (refused, certificate unknown…) is in the chain.
        let mut message = format!("http request error: {what}: {e}");
        let mut cause = e.source();
        while let Some(c) = cause {
            message.push_str(&format!(": {c}"));
            cause = c.source();
        }
        ApiError::new(Code::Internal, message)
    };
    let mut builder = hyper::Request::builder()
        .method(request.method.as_str())
        .uri(request.url.as_str());
    for (name, value) in &request.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let req = builder
        .body(Full::new(Bytes::from(request.body)))
        .map_err(|e| failed("bad request", &e))?;
    let answer = async {
        let res = client
            .request(req)
            .await
            .map_err(|e| failed("cannot connect or send", &e))?;
        let status = res.status().as_u16();
        let mut headers: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, value) in res.headers() {
            headers
                .entry(name.as_str().to_owned())
                .or_default()
                .push(String::from_utf8_lossy(value.as_bytes()).into_owned());
        }
        let body = Limited::new(res.into_body(), MAX_HTTP_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|e| failed("cannot read response body", &*e))?
            .to_bytes()
            .to_vec();
        Ok(HttpResponse {
            status,
            headers,
            body,
        })
    };
    match tokio::time::timeout(request.timeout, answer).await {
        Ok(r) => r,
        Err(_) => Err(ApiError::new(
            Code::DeadlineExceeded,
            format!(
                "http request error: no answer within {} ms",
                request.timeout.as_millis()
            ),
        )),
    }
}

/// Platform sign-in's requests (Apple's and Google's keys, Steam, …) and
/// purchase validation's go through the same client, with the same limits.
#[async_trait::async_trait]
impl ludus_core::social_auth::SocialHttp for HyperClient {
    async fn get(&self, url: &str, timeout: std::time::Duration) -> Result<(u16, Vec<u8>), String> {
        let request = HttpRequest {
            method: "GET".into(),
            url: url.to_owned(),
            headers: Vec::new(),
            body: Vec::new(),
            timeout,
        };
        exchange(self.client.clone(), request)
            .await
            .map(|r| (r.status, r.body))
            .map_err(|e| e.message.into_owned())
    }

    async fn send(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
        timeout: std::time::Duration,
    ) -> Result<(u16, Vec<u8>), String> {
        let request = HttpRequest {
            method: method.to_owned(),
            url: url.to_owned(),
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            body,
            timeout,
        };
        exchange(self.client.clone(), request)
            .await
            .map(|r| (r.status, r.body))
            .map_err(|e| e.message.into_owned())
    }
}
