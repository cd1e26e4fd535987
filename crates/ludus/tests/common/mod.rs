//! What the binary's tests share: plain HTTP/1.1 requests to a `ludus`
//! process they started.

use std::net::SocketAddr;

use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// One HTTP/1.1 request on a connection of its own, with a JSON body (none
/// for `Value::Null`); `None` when the server is gone.
pub(crate) async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    auth: &str,
    body: &Value,
) -> Option<(u16, Value)> {
    let mut conn = TcpStream::connect(addr).await.ok()?;
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {auth}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes()).await.ok()?;
    conn.write_all(body.as_bytes()).await.ok()?;
    let mut raw = Vec::new();
    conn.read_to_end(&mut raw).await.ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, serde_json::from_str(body).unwrap_or(Value::Null)))
}
