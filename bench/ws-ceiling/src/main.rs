//! A bare WebSocket echo server: the ceiling Ludus's socket rows are
//! measured against (BENCHMARKS.md, "Socket echo and Lua RPC over the
//! socket").
//!
//! It serves just enough of Nakama's API for `ludus bench echo` to run
//! unchanged: any `POST` (the sign-in) answers a fixed session, and `/ws`
//! upgrades with the same WebSocket settings as Ludus's socket. Each text
//! frame is answered at once: a `ping` envelope becomes a `pong` with the
//! same `cid` (the bytes copied, the key renamed), anything else (an `rpc`
//! envelope) is sent back unchanged. No parsing, no session, no queue: what
//! is left is the kernel, hyper, tungstenite and tokio.
//!
//! `ws-ceiling [ADDR]` (default 127.0.0.1:7399).

use axum::Router;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// A session token clients accept (an unsigned JWT whose `uid` is "ceiling").
const SESSION: &str =
    r#"{"token":"e30.eyJ1aWQiOiJjZWlsaW5nIn0.c2ln","refresh_token":"e30.e30.c2ln"}"#;

// The same settings as Ludus's socket (crates/ludus-server/src/socket/mod.rs).
const READ_BUFFER_BYTES: usize = 512;
const WRITE_BUFFER_BYTES: usize = 4096;
const MAX_WRITE_BUFFER_BYTES: usize = 1 << 20;
const MAX_MESSAGE_BYTES: usize = 4096;

#[tokio::main]
async fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7399".into());
    let app = Router::new()
        .route("/ws", any(upgrade))
        .route("/healthcheck", get(|| async { "{}" }))
        .fallback(post(|| async {
            ([("content-type", "application/json")], SESSION)
        }));
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .unwrap_or_else(|e| panic!("cannot listen on {addr}: {e}"));
    eprintln!("ws-ceiling listening on {addr}");
    axum::serve(listener, app).await.expect("server stopped");
}

async fn upgrade(ws: WebSocketUpgrade) -> Response {
    ws.read_buffer_size(READ_BUFFER_BYTES)
        .write_buffer_size(WRITE_BUFFER_BYTES)
        .max_write_buffer_size(MAX_WRITE_BUFFER_BYTES)
        .max_message_size(MAX_MESSAGE_BYTES)
        .max_frame_size(MAX_MESSAGE_BYTES)
        .on_upgrade(echo)
        .into_response()
}

async fn echo(mut socket: WebSocket) {
    while let Some(Ok(message)) = socket.recv().await {
        let answer = match message {
            Message::Text(text) => Message::Text(pong(text.as_str()).into()),
            Message::Binary(bytes) => Message::Binary(bytes),
            Message::Close(_) => return,
            Message::Ping(_) | Message::Pong(_) => continue,
        };
        if socket.send(answer).await.is_err() {
            return;
        }
    }
}

/// `{"cid":"7","ping":{}}` becomes `{"cid":"7","pong":{}}`; other text is
/// answered as it came.
fn pong(text: &str) -> String {
    match text.find("\"ping\"") {
        Some(at) => {
            let mut answer = String::with_capacity(text.len());
            answer.push_str(&text[..at]);
            answer.push_str("\"pong\"");
            answer.push_str(&text[at + 6..]);
            answer
        }
        None => text.to_owned(),
    }
}
