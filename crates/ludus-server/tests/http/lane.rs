//! The HTTP/1.1 lane in front of hyper (`src/lane.rs`), spoken to over raw
//! TCP so each test controls what is on the wire: keep-alive across RPCs
//! and other routes, pipelining, late bodies, `Connection: close`, the
//! requests handed to hyper, and every timeout. SQLite only: the store
//! plays no part.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::rpc::lua_config;
use crate::support::{Backend, TestServer, token};

/// An answer as read off the wire.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|_| panic!("not JSON: {}", self.body))
    }
}

/// One raw connection and the bytes read past the last answer.
struct Wire {
    tcp: TcpStream,
    read: Vec<u8>,
}

impl Wire {
    async fn open(t: &TestServer) -> Wire {
        let tcp = TcpStream::connect(t.base.trim_start_matches("http://"))
            .await
            .unwrap();
        Wire {
            tcp,
            read: Vec::new(),
        }
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.tcp.write_all(bytes).await.unwrap();
    }

    /// Reads one answer (a `content-length` body), failing after 10 s.
    async fn answer(&mut self) -> Answer {
        tokio::time::timeout(Duration::from_secs(10), self.read_answer())
            .await
            .expect("no answer within 10 s")
    }

    async fn read_answer(&mut self) -> Answer {
        let head_end = loop {
            if let Some(i) = self.read.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            self.fill().await;
        };
        let head = String::from_utf8(self.read[..head_end].to_vec()).unwrap();
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap();
        assert!(status_line.starts_with("HTTP/1."), "{status_line}");
        let status = status_line[9..12].parse().unwrap();
        let headers: Vec<(String, String)> = lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (n, v) = l.split_once(':').unwrap();
                (n.to_owned(), v.trim().to_owned())
            })
            .collect();
        let len: usize = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .map_or(0, |(_, v)| v.parse().unwrap());
        while self.read.len() < head_end + len {
            self.fill().await;
        }
        let body = String::from_utf8(self.read[head_end..head_end + len].to_vec()).unwrap();
        self.read.drain(..head_end + len);
        Answer {
            status,
            headers,
            body,
        }
    }

    async fn fill(&mut self) {
        let mut chunk = [0u8; 4096];
        let n = self.tcp.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the server closed the connection mid-answer");
        self.read.extend_from_slice(&chunk[..n]);
    }

    /// Waits up to `within` for the server to close the connection.
    async fn closed(&mut self, within: Duration) -> bool {
        let mut chunk = [0u8; 256];
        matches!(
            tokio::time::timeout(within, self.tcp.read(&mut chunk)).await,
            Ok(Ok(0) | Err(_))
        )
    }
}

fn rpc_request(id: &str, token: &str, payload: &str, extra: &str) -> Vec<u8> {
    let body = Value::String(payload.into()).to_string();
    format!(
        "POST /v2/rpc/{id} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn account_request(token: &str) -> Vec<u8> {
    format!("GET /v2/account HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {token}\r\n\r\n")
        .into_bytes()
}

async fn lua_server(tweak: impl FnOnce(&mut ludus_server::Config)) -> (TestServer, String) {
    let t = TestServer::start_with(Backend::Sqlite, |c| {
        lua_config(c);
        tweak(c);
    })
    .await;
    let session = t.device_session("lane-device-0001").await;
    (t, token(&session))
}

/// One connection carries RPCs (answered by the lane) and other routes
/// (the router behind it) in turn, each answer with the headers every
/// answer carries.
#[tokio::test]
async fn one_connection_carries_rpcs_and_other_routes_in_turn() {
    let (t, token) = lua_server(|_| {}).await;
    let mut wire = Wire::open(&t).await;
    for round in 0..3 {
        let payload = format!("hello {round}");
        wire.send(&rpc_request("echo", &token, &payload, "")).await;
        let a = wire.answer().await;
        assert_eq!(a.status, 200, "{}", a.body);
        assert_eq!(a.json(), json!({ "payload": payload }));
        assert_eq!(a.header("content-type"), Some("application/json"));
        assert_eq!(
            a.header("cache-control"),
            Some("no-store, no-cache, must-revalidate")
        );
        assert_eq!(a.header("access-control-allow-origin"), Some("*"));
        assert!(a.header("date").is_some_and(|d| d.ends_with(" GMT")));
        assert_eq!(a.header("vary"), None);

        wire.send(&account_request(&token)).await;
        let a = wire.answer().await;
        assert_eq!(a.status, 200, "{}", a.body);
        assert!(a.json()["user"]["id"].is_string(), "{}", a.body);
        assert_eq!(a.header("access-control-allow-origin"), Some("*"));
    }
    // Errors of the RPC handler come through the lane as the router's did.
    wire.send(&rpc_request("no_such_rpc", &token, "x", ""))
        .await;
    let a = wire.answer().await;
    assert_eq!(a.status, 404);
    assert_eq!(
        a.json(),
        json!({"code": 5, "message": "RPC function not found", "error": "RPC function not found"})
    );
    wire.send(&rpc_request("echo", "not-a-token", "x", ""))
        .await;
    assert_eq!(wire.answer().await.status, 401);
    // GET with the server key: an empty payload.
    wire.send(b"GET /v2/rpc/echo?http_key=defaulthttpkey HTTP/1.1\r\nHost: test\r\n\r\n")
        .await;
    let a = wire.answer().await;
    assert_eq!((a.status, a.json()), (200, json!({ "payload": "" })));
    // An id the lane leaves to the router (percent-encoded) is still found.
    let body = "\"routed\"";
    wire.send(
        format!(
            "POST /v2/rpc/ec%68o HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {token}\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
    .await;
    let a = wire.answer().await;
    assert_eq!((a.status, a.json()), (200, json!({ "payload": "routed" })));
}

/// Requests written back to back in one write are answered in order.
#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let (t, token) = lua_server(|_| {}).await;
    let mut wire = Wire::open(&t).await;
    let mut all = rpc_request("echo", &token, "first", "");
    all.extend(account_request(&token));
    all.extend(rpc_request("echo", &token, "third", ""));
    wire.send(&all).await;
    assert_eq!(wire.answer().await.json(), json!({ "payload": "first" }));
    assert!(wire.answer().await.json()["user"].is_object());
    assert_eq!(wire.answer().await.json(), json!({ "payload": "third" }));
}

/// A head and body that arrive in pieces, apart in time, make one request.
#[tokio::test]
async fn a_request_sent_in_pieces_is_awaited_whole() {
    let (t, token) = lua_server(|_| {}).await;
    let mut wire = Wire::open(&t).await;
    let request = rpc_request("echo", &token, "slowly", "");
    let head_end = request.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    for piece in [
        &request[..10],
        &request[10..head_end],
        &request[head_end..head_end + 3],
        &request[head_end + 3..],
    ] {
        wire.send(piece).await;
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    assert_eq!(wire.answer().await.json(), json!({ "payload": "slowly" }));
}

/// `Connection: close` is answered with `connection: close`, then closed.
#[tokio::test]
async fn connection_close_is_honoured() {
    let (t, token) = lua_server(|_| {}).await;
    let mut wire = Wire::open(&t).await;
    wire.send(&rpc_request("echo", &token, "bye", "Connection: close\r\n"))
        .await;
    let a = wire.answer().await;
    assert_eq!(a.json(), json!({ "payload": "bye" }));
    assert_eq!(a.header("connection"), Some("close"));
    assert!(wire.closed(Duration::from_secs(5)).await);
}

/// A chunked body, an HTTP/1.0 request and a `HEAD` are left to hyper,
/// which answers them and keeps serving the connection.
#[tokio::test]
async fn requests_the_lane_does_not_serve_are_answered_by_hyper() {
    let (t, token) = lua_server(|_| {}).await;
    let mut wire = Wire::open(&t).await;
    wire.send(&rpc_request("echo", &token, "in the lane", ""))
        .await;
    assert_eq!(wire.answer().await.status, 200);
    wire.send(
        format!(
            "POST /v2/rpc/echo HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {token}\r\n\
             Transfer-Encoding: chunked\r\n\r\n4\r\n\"chu\r\n5\r\nnked\"\r\n0\r\n\r\n"
        )
        .as_bytes(),
    )
    .await;
    let a = wire.answer().await;
    assert_eq!((a.status, a.json()), (200, json!({ "payload": "chunked" })));
    // The rest of the connection is hyper's.
    wire.send(&rpc_request("echo", &token, "after", "")).await;
    assert_eq!(wire.answer().await.json(), json!({ "payload": "after" }));

    let mut old = Wire::open(&t).await;
    old.send(b"GET /healthcheck HTTP/1.0\r\n\r\n").await;
    let a = old.answer().await;
    assert_eq!((a.status, a.body.as_str()), (200, "{}"));

    let mut head = Wire::open(&t).await;
    head.send(b"HEAD /healthcheck HTTP/1.1\r\nHost: test\r\n\r\n")
        .await;
    let mut chunk = [0u8; 1024];
    let n = head.tcp.read(&mut chunk).await.unwrap();
    let text = String::from_utf8_lossy(&chunk[..n]);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(
        text.ends_with("\r\n\r\n"),
        "a HEAD answer has no body: {text}"
    );
}

/// A body larger than `socket.max_request_size_bytes` is refused 413 with
/// Nakama's message, as before the lane.
#[tokio::test]
async fn an_oversized_rpc_body_is_refused() {
    let (t, token) = lua_server(|c| c.socket.max_request_size_bytes = 2048).await;
    let mut wire = Wire::open(&t).await;
    wire.send(&rpc_request("echo", &token, &"x".repeat(4000), ""))
        .await;
    let a = wire.answer().await;
    assert_eq!(a.status, 413, "{}", a.body);
    assert_eq!(
        a.json()["message"],
        "request body too large, send a smaller payload"
    );
}

/// An RPC still running at `socket.read_timeout_ms` is answered 504, as
/// the router's timeout answers, and the connection goes on.
#[tokio::test]
async fn an_rpc_over_the_request_timeout_is_answered_504() {
    let (t, token) = lua_server(|c| {
        c.socket.read_timeout_ms = 50;
        // The spin runs far past the timeout before its budget ends it.
        c.runtime.lua_instruction_budget = 500_000_000;
    })
    .await;
    let mut wire = Wire::open(&t).await;
    wire.send(&rpc_request("spin", &token, "", "")).await;
    let a = wire.answer().await;
    assert_eq!((a.status, a.body.as_str()), (504, ""));
    assert_eq!(a.header("access-control-allow-origin"), Some("*"));
    wire.send(&rpc_request("echo", &token, "still here", ""))
        .await;
    assert_eq!(
        wire.answer().await.json(),
        json!({ "payload": "still here" })
    );
}

/// A body that stops short is answered 504 after the request timeout and
/// the connection is closed; a head that stops short is closed after the
/// handshake timeout with no answer.
#[tokio::test]
async fn requests_that_stop_short_are_closed() {
    let (t, token) = lua_server(|c| {
        c.socket.read_timeout_ms = 200;
        c.socket.handshake_timeout_ms = 300;
    })
    .await;
    let mut short_body = Wire::open(&t).await;
    let request = rpc_request("echo", &token, "0123456789", "");
    short_body.send(&request[..request.len() - 4]).await;
    let a = short_body.answer().await;
    assert_eq!(a.status, 504);
    assert_eq!(a.header("connection"), Some("close"));
    assert!(short_body.closed(Duration::from_secs(5)).await);

    let mut short_head = Wire::open(&t).await;
    let started = Instant::now();
    short_head
        .send(b"POST /v2/rpc/echo HTTP/1.1\r\nHost: test\r\n")
        .await;
    assert!(short_head.closed(Duration::from_secs(5)).await);
    assert!(short_head.read.is_empty());
    assert!(started.elapsed() >= Duration::from_millis(250));
}

/// The connection's one timer follows each wait: a client that keeps
/// sending is never closed, however long the connection lives, and once it
/// falls silent it is closed after the handshake timeout, even when the
/// request timeout before it was longer (the deadline moves earlier).
#[tokio::test]
async fn the_connection_timer_follows_each_wait() {
    let (t, token) = lua_server(|c| {
        c.socket.read_timeout_ms = 3_000;
        c.socket.handshake_timeout_ms = 300;
    })
    .await;
    let mut wire = Wire::open(&t).await;
    let started = Instant::now();
    let mut sent = 0;
    let mut answered = Instant::now();
    // Well past the handshake timeout in all, each gap well inside it.
    while started.elapsed() < Duration::from_millis(900) {
        wire.send(&rpc_request("echo", &token, "again", "")).await;
        assert_eq!(wire.answer().await.json(), json!({ "payload": "again" }));
        answered = Instant::now();
        sent += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(sent >= 5, "{sent}");
    // The wait for the next head started with the last answer.
    assert!(wire.closed(Duration::from_secs(5)).await);
    let waited = answered.elapsed();
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_millis(2_500),
        "closed after {waited:?}, not after the 300-ms handshake timeout"
    );
}

/// A graceful stop closes a connection idle between requests, and the
/// server comes back on the same database.
#[tokio::test]
async fn a_stop_closes_idle_connections() {
    let (mut t, token) = lua_server(|_| {}).await;
    let mut wire = Wire::open(&t).await;
    wire.send(&rpc_request("echo", &token, "before", "")).await;
    assert_eq!(wire.answer().await.status, 200);
    tokio::time::timeout(Duration::from_secs(10), t.restart())
        .await
        .expect("the stop must not wait on an idle connection");
    assert!(wire.closed(Duration::from_secs(5)).await);
    let mut again = Wire::open(&t).await;
    again.send(&rpc_request("echo", &token, "after", "")).await;
    assert_eq!(again.answer().await.json(), json!({ "payload": "after" }));
}
