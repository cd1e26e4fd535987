//! The HTTP/1.1 lane: a lean request loop in front of hyper on port 7350.
//!
//! A connection starts in the lane. It parses each request head itself
//! (httparse), reads a `Content-Length` body, and answers:
//! - `GET` and `POST /v2/rpc/{id}` by calling the RPC handler directly
//!   (`api::rpc::call_direct`), adding the two headers the router's layers
//!   add to every answer (CORS and `Cache-Control`) and answering
//!   `504 Gateway Timeout` after `socket.read_timeout_ms` as they do;
//! - `GET`, `POST`, `PUT`, `DELETE` and `OPTIONS` on any other path by
//!   calling the router (with every layer) on the parsed request.
//!
//! Anything else (an upgrade to `/ws`, a chunked or `Expect` body, a body
//! over `socket.max_request_size_bytes`, `HEAD`, HTTP/1.0, a head that is
//! malformed, over 16 KiB or has more than 64 headers) is handed to hyper
//! with the bytes read so far, and hyper serves the connection from then on,
//! answering it exactly as before the lane existed.
//!
//! Why: on a Lua echo RPC hyper's connection machinery, the router and its
//! layers cost a fifth of the server's core (allocations, boxed futures
//! moved around, per-request timers); the lane skips them where a request
//! needs none of what they do. BENCHMARKS.md has the measurement.
//!
//! With debug events on (the per-request access log), the server does not
//! use the lane, so every request gets its log line.

use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::response::Parts;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, Uri, header};
use axum::response::Response;
use bytes::{Buf as _, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;
use tower::Service as _;

use crate::runtime::ClientAddr;

use crate::state::AppState;

/// Most header lines the lane parses; a request with more goes to hyper.
const MAX_HEADERS: usize = 64;
/// Longest head the lane waits for; a longer one goes to hyper.
const MAX_HEAD: usize = 16 * 1024;
const RPC_PATH: &str = "/v2/rpc/";

pub(crate) struct Lane {
    app: Router,
    state: AppState,
    /// `socket.max_request_size_bytes`: a longer body goes to hyper, which
    /// answers it 413 as before.
    body_limit: usize,
    /// `socket.read_timeout_ms`, the router's timeout for a request.
    timeout: Duration,
    /// `socket.handshake_timeout_ms`: longest wait for a whole head.
    head_timeout: Duration,
}

/// How the lane left a connection.
pub(crate) enum Left {
    Closed,
    /// A request the lane does not serve: hyper serves the connection from
    /// these bytes on.
    HandOver(Bytes),
}

/// A request head the lane serves.
struct Head {
    method: Method,
    route: Route,
    headers: HeaderMap,
    body_len: usize,
    /// `Connection: close`: answer, then close.
    close: bool,
}

enum Route {
    Rpc { id: String, query: String },
    Router(Uri),
}

enum Answer {
    Ready(Response),
    /// The client closed before its whole body came.
    Gone,
    /// The body did not come within the request timeout.
    BodyTimedOut,
}

enum Parsed {
    Complete(Head, usize),
    Partial,
    HandOver,
}

impl Lane {
    pub(crate) fn new(app: Router, state: AppState) -> Lane {
        let socket = &state.config.socket;
        Lane {
            body_limit: socket.max_request_size_bytes,
            timeout: Duration::from_millis(socket.read_timeout_ms),
            head_timeout: Duration::from_millis(socket.handshake_timeout_ms),
            app,
            state,
        }
    }

    /// Serves requests on `tcp` until the client closes, `stop` turns true
    /// between requests, a head does not come whole in time, or a request
    /// needs hyper.
    pub(crate) async fn serve(
        &self,
        tcp: &mut TcpStream,
        remote: SocketAddr,
        stop: &mut watch::Receiver<bool>,
    ) -> Left {
        let mut buf = BytesMut::with_capacity(4096);
        let mut out = Vec::with_capacity(1024);
        let mut app = self.app.clone();
        // One timer for the connection's life, moved to each wait's
        // deadline: moving a registered timer later is one atomic update,
        // where a timer per wait is a registration and a removal in the
        // runtime's wheel, under its lock, per request.
        let timer = tokio::time::sleep_until(Instant::now() + self.head_timeout);
        tokio::pin!(timer);
        loop {
            // Stopping: the request answered last was the connection's last
            // (as hyper's graceful shutdown does).
            if *stop.borrow() {
                return Left::Closed;
            }
            let mut armed = false;
            let (head, head_len) = loop {
                match parse(&buf, self.body_limit) {
                    Parsed::Complete(head, len) => break (head, len),
                    Parsed::HandOver => return Left::HandOver(buf.freeze()),
                    Parsed::Partial => {}
                }
                if !armed {
                    timer.as_mut().reset(Instant::now() + self.head_timeout);
                    armed = true;
                }
                if buf.capacity() - buf.len() < 1024 {
                    buf.reserve(4096);
                }
                let idle = buf.is_empty();
                let read = tokio::select! {
                    read = tcp.read_buf(&mut buf) => read,
                    () = timer.as_mut() => return Left::Closed,
                    () = stopped(stop), if idle => return Left::Closed,
                };
                if !matches!(read, Ok(n) if n > 0) {
                    return Left::Closed;
                }
            };
            buf.advance(head_len);
            let close = head.close;
            let answer = self.answer(tcp, &mut buf, &mut app, head, remote, timer.as_mut());
            let res = match answer.await {
                Answer::Ready(res) => res,
                Answer::Gone => return Left::Closed,
                Answer::BodyTimedOut => {
                    // 504 as the router's timeout answers, and the
                    // connection closes (the rest of the body is unread).
                    let (parts, _) = with_layers(timed_out()).into_parts();
                    write_response(&mut out, parts, Bytes::new(), true);
                    let _ = tcp.write_all(&out).await;
                    return Left::Closed;
                }
            };
            let (parts, body) = res.into_parts();
            let Ok(body) = axum::body::to_bytes(body, usize::MAX).await else {
                return Left::Closed;
            };
            write_response(&mut out, parts, body, close);
            if tcp.write_all(&out).await.is_err() || close {
                return Left::Closed;
            }
        }
    }

    /// Reads the body of `head` and answers the request.
    async fn answer(
        &self,
        tcp: &mut TcpStream,
        buf: &mut BytesMut,
        app: &mut Router,
        head: Head,
        remote: SocketAddr,
        mut timer: Pin<&mut tokio::time::Sleep>,
    ) -> Answer {
        // The request timeout counts from the whole head, as the router's
        // layer counts from the request.
        timer.as_mut().reset(Instant::now() + self.timeout);
        if buf.len() < head.body_len {
            buf.reserve(head.body_len - buf.len());
            let read = async {
                while buf.len() < head.body_len {
                    if tcp.read_buf(buf).await? == 0 {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                }
                Ok::<(), io::Error>(())
            };
            tokio::select! {
                read = read => {
                    if read.is_err() {
                        return Answer::Gone;
                    }
                }
                () = timer.as_mut() => return Answer::BodyTimedOut,
            }
        }
        let body = buf.split_to(head.body_len).freeze();
        match head.route {
            Route::Rpc { id, query } => {
                let recorded = self.state.metrics.as_ref().map(|m| {
                    (
                        m,
                        m.rpc_slot(&id),
                        body.len() as u64,
                        std::time::Instant::now(),
                    )
                });
                let call = crate::api::rpc::call_direct(
                    &self.state,
                    &id,
                    &head.method,
                    ClientAddr(Some(remote)),
                    &query,
                    head.headers,
                    body,
                );
                let res = tokio::select! {
                    res = call => res,
                    () = timer.as_mut() => timed_out(),
                };
                if let Some((metrics, slot, recv, start)) = recorded {
                    use crate::metrics::layer::{answer_code, response_bytes};
                    let sent = response_bytes(&res);
                    metrics.record(slot, start.elapsed(), recv, sent, answer_code(&res));
                }
                Answer::Ready(with_layers(res))
            }
            Route::Router(uri) => {
                let mut req = Request::new(Body::from(body));
                *req.method_mut() = head.method;
                *req.uri_mut() = uri;
                *req.headers_mut() = head.headers;
                req.extensions_mut().insert(ConnectInfo(remote));
                Answer::Ready(app.call(req).await.unwrap_or_else(|e| match e {}))
            }
        }
    }
}

/// Parses the head at the start of `buf`, if it is one the lane serves.
fn parse(buf: &[u8], body_limit: usize) -> Parsed {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut slots);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => return Parsed::Partial,
        _ => return Parsed::HandOver,
    };
    match head(&req, body_limit) {
        Some(head) => Parsed::Complete(head, len),
        None => Parsed::HandOver,
    }
}

/// The head of a parsed request, or `None` for one hyper should serve.
fn head(req: &httparse::Request<'_, '_>, body_limit: usize) -> Option<Head> {
    if req.version != Some(1) {
        return None;
    }
    let method = match req.method? {
        "GET" => Method::GET,
        "POST" => Method::POST,
        "PUT" => Method::PUT,
        "DELETE" => Method::DELETE,
        "OPTIONS" => Method::OPTIONS,
        _ => return None,
    };
    let target = req.path?;
    if !target.starts_with('/') {
        return None;
    }
    let mut headers = HeaderMap::with_capacity(req.headers.len());
    let mut body_len = None;
    let mut close = false;
    let mut encoded = false;
    for h in req.headers.iter() {
        let name = HeaderName::from_bytes(h.name.as_bytes()).ok()?;
        if name == header::TRANSFER_ENCODING || name == header::EXPECT || name == header::UPGRADE {
            return None;
        }
        if name == header::CONTENT_LENGTH {
            if body_len.is_some() {
                return None;
            }
            body_len = Some(content_length(h.value)?);
        } else if name == header::CONNECTION {
            for token in h.value.split(|b| *b == b',') {
                let token = token.trim_ascii();
                if token.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if token.eq_ignore_ascii_case(b"upgrade") {
                    return None;
                }
            }
        } else if name == header::CONTENT_ENCODING {
            encoded = true;
        }
        headers.append(name, HeaderValue::from_bytes(h.value).ok()?);
    }
    let body_len = body_len.unwrap_or(0);
    if body_len > body_limit {
        return None;
    }
    let rpc = (method == Method::GET || method == Method::POST) && !encoded;
    let route = match target.strip_prefix(RPC_PATH).filter(|_| rpc) {
        Some(rest) => {
            let (id, query) = rest.split_once('?').unwrap_or((rest, ""));
            if id.is_empty() || !id.bytes().all(plain_id_byte) {
                // Empty, percent-encoded or with more segments: the router
                // decides (and answers as it always has).
                Route::Router(Uri::try_from(target).ok()?)
            } else {
                Route::Rpc {
                    id: id.to_owned(),
                    query: query.to_owned(),
                }
            }
        }
        None => Route::Router(Uri::try_from(target).ok()?),
    };
    Some(Head {
        method,
        route,
        headers,
        body_len,
        close,
    })
}

/// A byte an RPC id may hold in the lane: the unreserved characters of a
/// URL, which the router's path decoding leaves as they are.
fn plain_id_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~')
}

/// A `Content-Length` value: decimal digits only (anything else goes to
/// hyper, which refuses it).
fn content_length(value: &[u8]) -> Option<usize> {
    if value.is_empty() || value.len() > 19 || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse().ok()
}

/// The answer after the request timeout: an empty 504, as the router's
/// `TimeoutLayer` answers.
fn timed_out() -> Response {
    let mut res = Response::new(Body::empty());
    *res.status_mut() = StatusCode::GATEWAY_TIMEOUT;
    res
}

/// The headers the router's layers add to an answer the lane made itself.
fn with_layers(mut res: Response) -> Response {
    let headers = res.headers_mut();
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static(crate::api::CACHE_CONTROL),
        );
    }
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    res
}

/// Encodes an answer into `out` (cleared first), as hyper would: status
/// line, the answer's headers, `content-length` and `date`.
fn write_response(out: &mut Vec<u8>, parts: Parts, body: Bytes, close: bool) {
    out.clear();
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(parts.status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(
        parts
            .status
            .canonical_reason()
            .unwrap_or("<none>")
            .as_bytes(),
    );
    out.extend_from_slice(b"\r\n");
    for (name, value) in &parts.headers {
        if name == header::CONTENT_LENGTH || name == header::TRANSFER_ENCODING {
            continue;
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let bodiless = parts.status.is_informational()
        || parts.status == StatusCode::NO_CONTENT
        || parts.status == StatusCode::NOT_MODIFIED;
    if !bodiless {
        out.extend_from_slice(b"content-length: ");
        let mut digits = [0u8; 20];
        out.extend_from_slice(
            crate::digits::decimal_digits(body.len() as u64, &mut digits).as_bytes(),
        );
        out.extend_from_slice(b"\r\n");
    }
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    }
    if !parts.headers.contains_key(header::DATE) {
        out.extend_from_slice(b"date: ");
        http_date(out);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    if !bodiless {
        out.extend_from_slice(&body);
    }
}

/// Appends the current `Date` header value, formatted once a second per
/// thread (as hyper caches it).
fn http_date(out: &mut Vec<u8>) {
    thread_local! {
        static CACHED: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
    }
    let now = SystemTime::now();
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    CACHED.with(|cached| {
        let mut cached = cached.borrow_mut();
        if cached.0 != secs {
            *cached = (secs, httpdate::fmt_http_date(now));
        }
        out.extend_from_slice(cached.1.as_bytes());
    });
}

/// A connection handed to hyper: the bytes the lane read first, then the
/// socket.
pub(crate) struct Rewind {
    read: Bytes,
    tcp: TcpStream,
}

impl Rewind {
    pub(crate) fn new(read: Bytes, tcp: TcpStream) -> Rewind {
        Rewind { read, tcp }
    }
}

impl AsyncRead for Rewind {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.read.is_empty() {
            return Pin::new(&mut self.tcp).poll_read(cx, buf);
        }
        let n = self.read.len().min(buf.remaining());
        buf.put_slice(&self.read[..n]);
        self.read.advance(n);
        if self.read.is_empty() {
            // Let the lane's read buffer go: a socket upgraded to `/ws`
            // lives on for hours.
            self.read = Bytes::new();
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Rewind {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}

/// Resolves once `stop` is true or its sender is gone.
pub(crate) async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(raw: &str) -> Parsed {
        parse(raw.as_bytes(), 1024)
    }

    fn served(raw: &str) -> (Head, usize) {
        match parsed(raw) {
            Parsed::Complete(head, len) => (head, len),
            Parsed::Partial => panic!("partial: {raw:?}"),
            Parsed::HandOver => panic!("handed over: {raw:?}"),
        }
    }

    fn handed_over(raw: &str) -> bool {
        matches!(parsed(raw), Parsed::HandOver)
    }

    #[test]
    fn plain_rpc_calls_take_the_direct_route() {
        let raw = "POST /v2/rpc/Echo_1.x?unwrap&a=b HTTP/1.1\r\nHost: h\r\nContent-Length: 12\r\nX-Custom: v\r\n\r\nrest";
        let (head, len) = served(raw);
        assert_eq!(len, raw.len() - 4);
        assert_eq!(head.method, Method::POST);
        assert_eq!(head.body_len, 12);
        assert!(!head.close);
        assert_eq!(head.headers["x-custom"], "v");
        assert_eq!(head.headers.len(), 3);
        match head.route {
            Route::Rpc { id, query } => {
                assert_eq!((id.as_str(), query.as_str()), ("Echo_1.x", "unwrap&a=b"))
            }
            Route::Router(uri) => panic!("routed: {uri}"),
        }
        let (head, _) =
            served("GET /v2/rpc/echo HTTP/1.1\r\nConnection: keep-alive, Close\r\n\r\n");
        assert!(head.close);
        assert_eq!(head.body_len, 0);
        assert!(matches!(head.route, Route::Rpc { .. }));
    }

    #[test]
    fn other_paths_and_unusual_rpc_ids_go_to_the_router() {
        for raw in [
            "GET /v2/account HTTP/1.1\r\n\r\n",
            "PUT /v2/storage HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}",
            "OPTIONS /v2/rpc/echo HTTP/1.1\r\n\r\n",
            "DELETE /v2/rpc/echo HTTP/1.1\r\n\r\n",
            "POST /v2/rpc/ec%68o HTTP/1.1\r\n\r\n",
            "POST /v2/rpc/ HTTP/1.1\r\n\r\n",
            "POST /v2/rpc/a/b HTTP/1.1\r\n\r\n",
            "POST /v2/rpc/echo HTTP/1.1\r\nContent-Encoding: gzip\r\n\r\n",
        ] {
            let (head, _) = served(raw);
            assert!(matches!(head.route, Route::Router(_)), "{raw:?}");
        }
    }

    #[test]
    fn what_needs_hyper_is_handed_over() {
        for raw in [
            "POST /v2/rpc/echo HTTP/1.0\r\n\r\n",
            "HEAD /healthcheck HTTP/1.1\r\n\r\n",
            "PATCH /v2/account HTTP/1.1\r\n\r\n",
            "GET http://host/v2/account HTTP/1.1\r\n\r\n",
            "POST /v2/rpc/echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST /v2/rpc/echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n",
            "GET /ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
            "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n",
            "POST /v2/rpc/echo HTTP/1.1\r\nContent-Length: 1025\r\n\r\n",
            "POST /v2/rpc/echo HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
            "POST /v2/rpc/echo HTTP/1.1\r\nContent-Length: +1\r\n\r\n",
            "POST /v2/rpc/echo HTTP/1.1\r\nContent-Length: \r\n\r\n",
            "GET /v2/account HTTP/1.1\r\nBad Header: x\r\n\r\n",
            "NOT A REQUEST\r\n\r\n",
        ] {
            assert!(handed_over(raw), "{raw:?}");
        }
        let many: String = (0..MAX_HEADERS + 1)
            .map(|i| format!("X-{i}: v\r\n"))
            .collect();
        assert!(handed_over(&format!(
            "GET /v2/account HTTP/1.1\r\n{many}\r\n"
        )));
    }

    #[test]
    fn a_head_is_awaited_until_it_is_whole_or_too_long() {
        assert!(matches!(parsed(""), Parsed::Partial));
        assert!(matches!(
            parsed("POST /v2/rpc/echo HTTP/1.1\r\nHost: h\r\n"),
            Parsed::Partial
        ));
        let long = format!(
            "GET /v2/account HTTP/1.1\r\nX-Long: {}",
            "a".repeat(MAX_HEAD)
        );
        assert!(handed_over(&long));
    }

    proptest::proptest! {
        /// Whatever a client sends, the parse never panics, and a head it
        /// takes ends within what was read.
        #[test]
        fn any_bytes_parse_without_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600)) {
            if let Parsed::Complete(head, len) = parse(&bytes, 1024) {
                proptest::prop_assert!(len <= bytes.len());
                proptest::prop_assert!(head.body_len <= 1024);
            }
        }

        /// Request-shaped text with arbitrary targets and header values.
        #[test]
        fn request_like_text_parses_without_panic(
            method in "(GET|POST|PUT|DELETE|OPTIONS|HEAD)",
            target in "/[a-z0-9/%?&=._~-]{0,40}",
            value in "[ -~]{0,30}",
            length in "[0-9+ -]{0,6}",
        ) {
            let raw = format!("{method} {target} HTTP/1.1\r\nX-A: {value}\r\nContent-Length: {length}\r\n\r\n");
            if let Parsed::Complete(head, len) = parse(raw.as_bytes(), 1024) {
                proptest::prop_assert_eq!(len, raw.len());
                if let Route::Rpc { id, .. } = &head.route {
                    proptest::prop_assert!(!id.is_empty() && id.bytes().all(plain_id_byte));
                }
            }
        }
    }

    #[test]
    fn answers_are_encoded_as_hyper_encodes_them() {
        let mut res = Response::new(Body::empty());
        res.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        res.headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from_static("999"));
        let (parts, _) = with_layers(res).into_parts();
        let mut out = Vec::new();
        write_response(&mut out, parts, Bytes::from_static(b"{\"a\":1}"), true);
        let text = String::from_utf8(out.clone()).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert_eq!(body, "{\"a\":1}");
        let mut lines = head.split("\r\n");
        assert_eq!(lines.next(), Some("HTTP/1.1 200 OK"));
        let mut rest: Vec<&str> = lines.collect();
        let date = rest.iter().position(|l| l.starts_with("date: ")).unwrap();
        assert!(rest.remove(date).ends_with(" GMT"));
        assert_eq!(
            rest,
            [
                "content-type: application/json",
                "cache-control: no-store, no-cache, must-revalidate",
                "access-control-allow-origin: *",
                "content-length: 7",
                "connection: close",
            ]
        );
        let mut res = Response::new(Body::empty());
        *res.status_mut() = StatusCode::NO_CONTENT;
        let (parts, _) = res.into_parts();
        write_response(&mut out, parts, Bytes::new(), false);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("HTTP/1.1 204 No Content\r\ndate: "),
            "{text}"
        );
        assert!(!text.contains("content-length"), "{text}");
    }
}
