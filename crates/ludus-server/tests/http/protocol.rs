//! Wire conventions: error bodies, unknown paths and methods, malformed and
//! oversized bodies, gzip, CORS, the health check and the handshake timeout.

use std::io::Write as _;

use serde_json::json;

use crate::both_backends;
use crate::support::{Backend, TestServer, assert_error};

both_backends!(
    healthcheck_needs_no_auth,
    unknown_path_and_method,
    malformed_and_wrong_bodies,
    oversized_body_is_refused_and_writes_nothing,
    gzip_bodies_are_accepted,
    cors_allows_any_origin,
    every_answer_carries_the_common_headers,
);

async fn healthcheck_needs_no_auth(b: Backend) {
    let t = TestServer::start(b).await;
    let r = t.raw(t.http.get(t.url("/healthcheck"))).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, json!({}));
}

async fn unknown_path_and_method(b: Backend) {
    let t = TestServer::start(b).await;
    let r = t.raw(t.http.get(t.url("/v2/nothing/here"))).await;
    assert_error(&r, 404, 5);
    let r = t
        .raw(t.http.get(t.url("/v2/account/authenticate/device")))
        .await;
    assert_error(&r, 501, 12);
}

async fn malformed_and_wrong_bodies(b: Backend) {
    let t = TestServer::start(b).await;
    let url = t.url("/v2/account/authenticate/device");
    let send = |body: &'static str| {
        t.http
            .post(url.clone())
            .basic_auth("defaultkey", Some(""))
            .header("content-type", "application/json")
            .body(body)
    };
    let r = t.raw(send("{\"id\": ")).await;
    assert!(assert_error(&r, 400, 3).contains("malformed JSON"));
    let r = t.raw(send("[1,2,3]")).await;
    assert_error(&r, 400, 3);
    let r = t.raw(send("{\"id\": 12345678901}")).await;
    assert_error(&r, 400, 3);
    let r = t.raw(send("not json at all")).await;
    assert_error(&r, 400, 3);
    // Unknown fields are ignored, as Nakama's gateway does.
    let r = t
        .raw(send("{\"id\": \"device-unknownf\", \"extra\": true}"))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
}

async fn oversized_body_is_refused_and_writes_nothing(b: Backend) {
    let t = TestServer::start_with(b, |c| c.socket.max_request_size_bytes = 4096).await;
    let padding = "x".repeat(5000);
    let body = json!({"id": "device-oversize", "vars": {"pad": padding}});
    let r = t.post_key("/v2/account/authenticate/device", body).await;
    assert_eq!(r.status, 413, "{}", r.body);
    assert_eq!(r.body["code"], 3);
    let r = t
        .post_key(
            "/v2/account/authenticate/device?create=false",
            json!({"id": "device-oversize"}),
        )
        .await;
    assert_error(&r, 404, 5);
}

async fn gzip_bodies_are_accepted(b: Backend) {
    let t = TestServer::start(b).await;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(br#"{"id":"device-gzipped"}"#).unwrap();
    let gz = enc.finish().unwrap();
    let r = t
        .raw(
            t.http
                .post(t.url("/v2/account/authenticate/device"))
                .basic_auth("defaultkey", Some(""))
                .header("content-encoding", "gzip")
                .header("content-type", "application/json")
                .body(gz),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["created"], true);
}

async fn cors_allows_any_origin(b: Backend) {
    let t = TestServer::start(b).await;
    let res = t
        .http
        .request(reqwest::Method::OPTIONS, t.url("/v2/account"))
        .header("origin", "https://game.example")
        .header("access-control-request-method", "GET")
        .header("access-control-request-headers", "authorization")
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success());
    assert_eq!(res.headers()["access-control-allow-origin"], "*");
    let methods = res.headers()["access-control-allow-methods"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        methods.contains("PUT") && methods.contains("DELETE"),
        "{methods}"
    );
}

/// The middleware wraps every answer, routed or not: an answer, an unknown
/// path and a wrong method all carry the cache and CORS headers, and no
/// `Vary`.
async fn every_answer_carries_the_common_headers(b: Backend) {
    let t = TestServer::start(b).await;
    for (method, path, status) in [
        (reqwest::Method::GET, "/healthcheck", 200),
        (reqwest::Method::GET, "/v2/nothing/here", 404),
        (reqwest::Method::GET, "/v2/account/authenticate/device", 501),
    ] {
        let res = t
            .http
            .request(method, t.url(path))
            .header("origin", "https://game.example")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), status, "{path}");
        assert_eq!(
            res.headers()["cache-control"],
            "no-store, no-cache, must-revalidate",
            "{path}"
        );
        assert_eq!(res.headers()["access-control-allow-origin"], "*", "{path}");
        // The same answer for any origin: nothing for caches to vary on.
        assert!(res.headers().get("vary").is_none(), "{path}");
    }
}

/// A client that connects and never sends a request is closed after
/// `socket.handshake_timeout_ms`; before the timeout existed it held its
/// socket and task forever. Requests on other connections are served
/// meanwhile. SQLite only: the store plays no part.
#[tokio::test]
async fn a_connection_that_sends_no_request_is_closed_after_the_handshake_timeout() {
    use tokio::io::AsyncReadExt as _;

    let t = TestServer::start_with(Backend::Sqlite, |c| c.socket.handshake_timeout_ms = 300).await;
    let addr = t.base.trim_start_matches("http://");
    let mut silent = tokio::net::TcpStream::connect(addr).await.unwrap();
    let started = std::time::Instant::now();
    let r = t.raw(t.http.get(t.url("/healthcheck"))).await;
    assert_eq!(r.status, 200);
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(std::time::Duration::from_secs(5), silent.read(&mut buf))
        .await
        .expect("the server must close a connection that sends nothing");
    // Closed (end of stream or reset), with no response written.
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    let waited = started.elapsed();
    assert!(
        waited >= std::time::Duration::from_millis(250),
        "{waited:?}"
    );
}
