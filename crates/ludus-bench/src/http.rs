//! A minimal HTTP/1.1 keep-alive client: one connection per virtual user,
//! one request in flight, `Content-Length` or chunked responses. Lean on
//! purpose, so the load generator is never the bottleneck.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use base64::Engine as _;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("connect: {0}")]
    Connect(std::io::Error),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("server closed the connection")]
    Closed,
    #[error("malformed response")]
    Malformed,
    #[error("timeout")]
    Timeout,
}

impl HttpError {
    /// A short label for error counts.
    pub fn kind(&self) -> &'static str {
        match self {
            HttpError::Connect(_) => "connect",
            HttpError::Io(_) => "io",
            HttpError::Closed => "closed",
            HttpError::Malformed => "malformed response",
            HttpError::Timeout => "timeout",
        }
    }
}

#[derive(Debug)]
pub(crate) struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Opens a TCP connection, from `source` when given (to spread ports over
/// several loopback addresses).
pub(crate) async fn connect(
    addr: SocketAddr,
    source: Option<IpAddr>,
) -> Result<TcpStream, HttpError> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
    .map_err(HttpError::Connect)?;
    if let Some(ip) = source {
        socket
            .bind(SocketAddr::new(ip, 0))
            .map_err(HttpError::Connect)?;
    }
    let stream = socket.connect(addr).await.map_err(HttpError::Connect)?;
    stream.set_nodelay(true).map_err(HttpError::Connect)?;
    Ok(stream)
}

pub(crate) struct Conn {
    addr: SocketAddr,
    source: Option<IpAddr>,
    host: String,
    stream: Option<TcpStream>,
    buf: Vec<u8>,
    out: Vec<u8>,
    timeout: Duration,
    /// One timer per connection, pushed forward for each request: extending
    /// a tokio timer is an atomic store, creating one touches the wheel.
    timer: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
    /// Bytes written and read, for the report.
    pub bytes_out: u64,
    pub bytes_in: u64,
}

impl Conn {
    pub(crate) fn new(addr: SocketAddr, source: Option<IpAddr>, timeout: Duration) -> Conn {
        Conn {
            addr,
            source,
            host: addr.to_string(),
            stream: None,
            buf: Vec::with_capacity(4096),
            out: Vec::with_capacity(1024),
            timeout,
            timer: None,
            bytes_out: 0,
            bytes_in: 0,
        }
    }

    /// Sends one request and reads its response, reconnecting first if the
    /// previous connection was closed.
    pub(crate) async fn request(
        &mut self,
        method: &str,
        path: &str,
        auth: Option<&str>,
        body: &[u8],
    ) -> Result<Response, HttpError> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let mut timer = match self.timer.take() {
            Some(mut t) => {
                t.as_mut().reset(deadline);
                t
            }
            None => Box::pin(tokio::time::sleep_until(deadline)),
        };
        let result = tokio::select! {
            biased;
            r = self.exchange(method, path, auth, body) => r,
            _ = timer.as_mut() => Err(HttpError::Timeout),
        };
        self.timer = Some(timer);
        if result.is_err() {
            self.stream = None;
        }
        result
    }

    async fn exchange(
        &mut self,
        method: &str,
        path: &str,
        auth: Option<&str>,
        body: &[u8],
    ) -> Result<Response, HttpError> {
        if self.stream.is_none() {
            self.stream = Some(connect(self.addr, self.source).await?);
            self.buf.clear();
        }
        self.out.clear();
        self.out.extend_from_slice(method.as_bytes());
        self.out.push(b' ');
        self.out.extend_from_slice(path.as_bytes());
        self.out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        self.out.extend_from_slice(self.host.as_bytes());
        if let Some(auth) = auth {
            self.out.extend_from_slice(b"\r\nAuthorization: ");
            self.out.extend_from_slice(auth.as_bytes());
        }
        self.out
            .extend_from_slice(b"\r\nContent-Type: application/json\r\nContent-Length: ");
        self.out
            .extend_from_slice(body.len().to_string().as_bytes());
        self.out.extend_from_slice(b"\r\n\r\n");
        self.out.extend_from_slice(body);
        let stream = self.stream.as_mut().ok_or(HttpError::Closed)?;
        if self.buf.is_empty() {
            // The last response was read whole, so nothing is waiting: drop
            // tokio's stale "readable" mark without a syscall. Otherwise the
            // first read after this request would be an empty one (EAGAIN)
            // every time, a third of the syscalls of a closed-loop request.
            let _ = stream.try_io(tokio::io::Interest::READABLE, || {
                Err::<(), _>(std::io::ErrorKind::WouldBlock.into())
            });
        }
        stream.write_all(&self.out).await?;
        self.bytes_out += self.out.len() as u64;
        let (resp, close) = read_response(stream, &mut self.buf, &mut self.bytes_in).await?;
        if close {
            self.stream = None;
        }
        Ok(resp)
    }
}

async fn fill(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    bytes_in: &mut u64,
) -> Result<(), HttpError> {
    // `read_buf` fills spare capacity without zeroing it first.
    if buf.capacity() - buf.len() < 4096 {
        buf.reserve(8192);
    }
    let n = stream.read_buf(buf).await?;
    if n == 0 {
        return Err(HttpError::Closed);
    }
    *bytes_in += n as u64;
    Ok(())
}

/// Reads one response from the buffer and stream; leaves any following bytes
/// in the buffer. Returns the response and whether the server will close.
async fn read_response(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    bytes_in: &mut u64,
) -> Result<(Response, bool), HttpError> {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut parsed = httparse::Response::new(&mut headers);
        match parsed.parse(buf).map_err(|_| HttpError::Malformed)? {
            httparse::Status::Partial => {
                if buf.len() > 64 * 1024 {
                    return Err(HttpError::Malformed);
                }
                fill(stream, buf, bytes_in).await?;
            }
            httparse::Status::Complete(head_len) => {
                let status = parsed.code.ok_or(HttpError::Malformed)?;
                let mut length = None;
                let mut chunked = false;
                let mut close = false;
                for h in parsed.headers.iter() {
                    if h.name.eq_ignore_ascii_case("content-length") {
                        length = std::str::from_utf8(h.value)
                            .ok()
                            .and_then(|v| v.trim().parse::<usize>().ok());
                    } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                        chunked = h.value.eq_ignore_ascii_case(b"chunked");
                    } else if h.name.eq_ignore_ascii_case("connection") {
                        close = h.value.eq_ignore_ascii_case(b"close");
                    }
                }
                let body = if chunked {
                    buf.drain(..head_len);
                    read_chunked(stream, buf, bytes_in).await?
                } else {
                    let end = head_len + length.unwrap_or(0);
                    while buf.len() < end {
                        fill(stream, buf, bytes_in).await?;
                    }
                    let body = buf[head_len..end].to_vec();
                    // The usual case, one response per read: no bytes to move.
                    if buf.len() == end {
                        buf.clear();
                    } else {
                        buf.drain(..end);
                    }
                    body
                };
                return Ok((Response { status, body }, close));
            }
        }
    }
}

async fn read_chunked(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    bytes_in: &mut u64,
) -> Result<Vec<u8>, HttpError> {
    let mut body = Vec::new();
    loop {
        let line_end = loop {
            if let Some(i) = buf.windows(2).position(|w| w == b"\r\n") {
                break i;
            }
            fill(stream, buf, bytes_in).await?;
        };
        let size_text = std::str::from_utf8(&buf[..line_end]).map_err(|_| HttpError::Malformed)?;
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| HttpError::Malformed)?;
        buf.drain(..line_end + 2);
        while buf.len() < size + 2 {
            fill(stream, buf, bytes_in).await?;
        }
        body.extend_from_slice(&buf[..size]);
        buf.drain(..size + 2);
        if size == 0 {
            return Ok(body);
        }
    }
}

pub(crate) fn basic(key: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{key}:"))
    )
}

/// The user id (`uid` claim) of a `Bearer <jwt>` session, empty if none.
pub(crate) fn token_user_id(bearer: &str) -> String {
    let payload = bearer
        .strip_prefix("Bearer ")
        .and_then(|t| t.split('.').nth(1))
        .and_then(|p| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(p.trim_end_matches('='))
                .ok()
        })
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
    payload
        .and_then(|v| v["uid"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_id_comes_from_the_token() {
        let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(r#"{"uid":"abc"}"#);
        assert_eq!(token_user_id(&format!("Bearer h.{claims}.s")), "abc");
        assert_eq!(token_user_id(""), "");
    }
}
