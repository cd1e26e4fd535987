//! A minimal WebSocket client (RFC 6455) over a tokio TCP stream: the
//! upgrade handshake with `Sec-WebSocket-Key`, masked client frames, text and
//! binary messages, ping/pong and close. Lean on purpose, like `http.rs`.
//!
//! Both directions are cancel-safe, so a caller may race [`WsConn::recv`]
//! against a timer in `tokio::select!`: reads land in the connection's own
//! buffer, and writes advance a cursor kept in the connection, one `write`
//! call at a time. Pongs to the server's pings are queued by `recv` and
//! written before it next waits for the network.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use base64::Engine as _;
use sha1::{Digest, Sha1};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::http::{HttpError, connect as tcp_connect};

/// The GUID of RFC 6455 section 1.3, hashed with the key into the accept header.
const ACCEPT_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/// Largest message accepted from the server; larger ones are a protocol error.
const MAX_MESSAGE: usize = 16 << 20;

#[derive(Debug, thiserror::Error)]
pub enum WsError {
    #[error("connection refused")]
    Refused,
    #[error("connect: {0}")]
    Connect(std::io::Error),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("upgrade refused with status {0}")]
    Status(u16),
    #[error("bad upgrade response: {0}")]
    Handshake(&'static str),
    #[error("server closed the socket (code {0})")]
    ClosedByServer(u16),
    #[error("server dropped the connection")]
    Eof,
    #[error("protocol error: {0}")]
    Protocol(&'static str),
    #[error("timeout")]
    Timeout,
}

impl WsError {
    /// A short label for error counts.
    pub fn kind(&self) -> String {
        match self {
            WsError::Refused => "refused".into(),
            WsError::Connect(e) if e.raw_os_error() == Some(99) => {
                "no free source port (add --sources)".into()
            }
            WsError::Connect(_) => "connect".into(),
            WsError::Io(_) => "io".into(),
            WsError::Status(401) => "socket 401 (bad token or key)".into(),
            WsError::Status(s) => format!("socket status {s}"),
            WsError::Handshake(_) => "bad handshake".into(),
            WsError::ClosedByServer(code) => format!("closed by server ({code})"),
            WsError::Eof => "closed by server (no close frame)".into(),
            WsError::Protocol(what) => format!("protocol ({what})"),
            WsError::Timeout => "timeout".into(),
        }
    }
}

impl From<HttpError> for WsError {
    fn from(e: HttpError) -> Self {
        match e {
            HttpError::Connect(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                WsError::Refused
            }
            HttpError::Connect(io) => WsError::Connect(io),
            HttpError::Io(io) => WsError::Io(io),
            HttpError::Closed => WsError::Eof,
            HttpError::Malformed => WsError::Handshake("malformed"),
            HttpError::Timeout => WsError::Timeout,
        }
    }
}

/// What `recv` returns: where the message's payload is (read it with
/// [`WsConn::payload`] before the next call).
#[derive(Debug, Clone, Copy)]
pub struct Msg {
    pub text: bool,
    start: usize,
    end: usize,
}

pub struct WsConn {
    stream: TcpStream,
    /// Bytes read and not yet consumed start at `rpos`.
    buf: Vec<u8>,
    rpos: usize,
    /// Bytes queued for writing; `wpos` of them are written.
    out: Vec<u8>,
    wpos: usize,
    /// A fragmented message being assembled, with its opcode.
    frag: Option<(u8, Vec<u8>)>,
    /// The last whole message assembled from fragments.
    whole: Vec<u8>,
    mask_seed: u32,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

/// Opens a socket to `path` (with its query) on `addr`, from `source` when
/// given, within `timeout`.
pub async fn connect(
    addr: SocketAddr,
    source: Option<IpAddr>,
    path: &str,
    timeout: Duration,
) -> Result<WsConn, WsError> {
    match tokio::time::timeout(timeout, handshake(addr, source, path)).await {
        Ok(r) => r,
        Err(_) => Err(WsError::Timeout),
    }
}

async fn handshake(
    addr: SocketAddr,
    source: Option<IpAddr>,
    path: &str,
) -> Result<WsConn, WsError> {
    let mut stream = tcp_connect(addr, source).await?;
    let seed = seed_from(&stream);
    let mut key_bytes = [0u8; 16];
    let mut s = seed;
    for b in key_bytes.iter_mut() {
        s = xorshift(s);
        *b = s as u8;
    }
    let key = base64::engine::general_purpose::STANDARD.encode(key_bytes);
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await?;
    let mut buf = Vec::with_capacity(1024);
    let mut bytes_in = 0u64;
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut headers);
        match resp
            .parse(&buf)
            .map_err(|_| WsError::Handshake("malformed"))?
        {
            httparse::Status::Partial => {
                if buf.len() > 16 * 1024 {
                    return Err(WsError::Handshake("headers too long"));
                }
                let start = buf.len();
                buf.resize(start + 2048, 0);
                let n = stream.read(&mut buf[start..]).await?;
                buf.truncate(start + n);
                if n == 0 {
                    return Err(WsError::Eof);
                }
                bytes_in += n as u64;
            }
            httparse::Status::Complete(head) => {
                let status = resp.code.unwrap_or(0);
                if status != 101 {
                    return Err(WsError::Status(status));
                }
                let expected = accept_of(&key);
                let accept = resp
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("sec-websocket-accept"))
                    .map(|h| h.value);
                if accept != Some(expected.as_bytes()) {
                    return Err(WsError::Handshake("wrong Sec-WebSocket-Accept"));
                }
                buf.drain(..head);
                return Ok(WsConn {
                    stream,
                    buf,
                    rpos: 0,
                    out: Vec::with_capacity(256),
                    wpos: 0,
                    frag: None,
                    whole: Vec::new(),
                    mask_seed: xorshift(seed ^ 0x9e37_79b9),
                    bytes_in,
                    bytes_out: request.len() as u64,
                });
            }
        }
    }
}

/// `Sec-WebSocket-Accept` for a key: base64(SHA-1(key + GUID)).
pub fn accept_of(key: &str) -> String {
    let mut h = Sha1::new();
    h.update(key.as_bytes());
    h.update(ACCEPT_GUID.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(h.finalize())
}

fn seed_from(stream: &TcpStream) -> u32 {
    let port = stream.local_addr().map(|a| a.port()).unwrap_or(1) as u32;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(7);
    (port.wrapping_mul(2_654_435_761) ^ nanos) | 1
}

fn xorshift(mut x: u32) -> u32 {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    x
}

/// Appends one masked client frame to `out`.
pub fn encode_frame(out: &mut Vec<u8>, opcode: u8, payload: &[u8], mask: [u8; 4]) {
    out.push(0x80 | opcode);
    let len = payload.len();
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if len <= u16::MAX as usize {
        out.push(0x80 | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(&mask);
    let start = out.len();
    out.extend_from_slice(payload);
    for (i, b) in out[start..].iter_mut().enumerate() {
        *b ^= mask[i & 3];
    }
}

/// A frame header parsed from the front of a buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub fin: bool,
    pub opcode: u8,
    /// Where the payload is in the buffer.
    pub payload: std::ops::Range<usize>,
    /// The whole frame's length.
    pub len: usize,
}

/// One frame parsed from the front of `buf`, or `None` when the frame is
/// not complete yet.
pub fn parse_frame(buf: &[u8]) -> Result<Option<Frame>, WsError> {
    if buf.len() < 2 {
        return Ok(None);
    }
    let fin = buf[0] & 0x80 != 0;
    if buf[0] & 0x70 != 0 {
        return Err(WsError::Protocol("reserved bits set"));
    }
    let opcode = buf[0] & 0x0f;
    let masked = buf[1] & 0x80 != 0;
    let (len, mut at) = match buf[1] & 0x7f {
        126 => {
            if buf.len() < 4 {
                return Ok(None);
            }
            (u16::from_be_bytes([buf[2], buf[3]]) as usize, 4)
        }
        127 => {
            if buf.len() < 10 {
                return Ok(None);
            }
            let mut b = [0u8; 8];
            b.copy_from_slice(&buf[2..10]);
            (u64::from_be_bytes(b) as usize, 10)
        }
        n => (n as usize, 2),
    };
    if len > MAX_MESSAGE {
        return Err(WsError::Protocol("message too large"));
    }
    if masked {
        // Servers must not mask; refuse rather than guess.
        return Err(WsError::Protocol("masked server frame"));
    }
    if buf.len() < at + len {
        return Ok(None);
    }
    let start = at;
    at += len;
    Ok(Some(Frame {
        fin,
        opcode,
        payload: start..at,
        len: at,
    }))
}

impl WsConn {
    fn next_mask(&mut self) -> [u8; 4] {
        self.mask_seed = xorshift(self.mask_seed);
        self.mask_seed.to_le_bytes()
    }

    /// Queues a text message; it is written by `flush` or the next `recv`.
    pub fn queue_text(&mut self, payload: &[u8]) {
        let mask = self.next_mask();
        encode_frame(&mut self.out, 0x1, payload, mask);
    }

    /// Queues a binary message.
    pub fn queue_binary(&mut self, payload: &[u8]) {
        let mask = self.next_mask();
        encode_frame(&mut self.out, 0x2, payload, mask);
    }

    /// Sends a text message now.
    pub async fn send_text(&mut self, payload: &[u8]) -> Result<(), WsError> {
        self.queue_text(payload);
        self.flush().await
    }

    /// Writes everything queued. Cancel-safe: progress is kept in `self`.
    pub async fn flush(&mut self) -> Result<(), WsError> {
        while self.wpos < self.out.len() {
            let n = self.stream.write(&self.out[self.wpos..]).await?;
            if n == 0 {
                return Err(WsError::Eof);
            }
            self.wpos += n;
            self.bytes_out += n as u64;
        }
        self.out.clear();
        self.wpos = 0;
        Ok(())
    }

    /// Whether a whole frame is already buffered (so `recv` will not wait).
    pub fn has_buffered_frame(&self) -> bool {
        matches!(parse_frame(&self.buf[self.rpos..]), Ok(Some(_)))
    }

    /// The next text or binary message. Answers pings (queued, written
    /// before the next wait), skips pongs, and turns a close frame into
    /// [`WsError::ClosedByServer`]. Writes anything queued before it waits.
    /// Cancel-safe.
    pub async fn recv(&mut self) -> Result<Msg, WsError> {
        loop {
            if let Some(msg) = self.parse_one()? {
                return Ok(msg);
            }
            self.flush().await?;
            if self.rpos > 0 {
                self.buf.drain(..self.rpos);
                self.rpos = 0;
            }
            // `read_buf` only grows the buffer by what it read, so a
            // cancelled read leaves no stray bytes behind.
            if self.buf.capacity() - self.buf.len() < 2048 {
                self.buf.reserve(4096);
            }
            let n = self.stream.read_buf(&mut self.buf).await?;
            if n == 0 {
                return Err(WsError::Eof);
            }
            self.bytes_in += n as u64;
        }
    }

    /// The payload of the message `recv` returned last.
    pub fn payload(&self, m: &Msg) -> &[u8] {
        if m.start == usize::MAX {
            &self.whole
        } else {
            &self.buf[m.start..m.end]
        }
    }

    fn parse_one(&mut self) -> Result<Option<Msg>, WsError> {
        loop {
            let Some(Frame {
                fin,
                opcode,
                payload: range,
                len,
            }) = parse_frame(&self.buf[self.rpos..])?
            else {
                return Ok(None);
            };
            let base = self.rpos;
            self.rpos += len;
            let (start, end) = (base + range.start, base + range.end);
            match opcode {
                0x1 | 0x2 if fin && self.frag.is_none() => {
                    return Ok(Some(Msg {
                        text: opcode == 0x1,
                        start,
                        end,
                    }));
                }
                0x1 | 0x2 => {
                    if self.frag.is_some() {
                        return Err(WsError::Protocol("new message inside a fragmented one"));
                    }
                    self.frag = Some((opcode, self.buf[start..end].to_vec()));
                }
                0x0 => {
                    let Some((op, mut data)) = self.frag.take() else {
                        return Err(WsError::Protocol("continuation without a message"));
                    };
                    data.extend_from_slice(&self.buf[start..end]);
                    if data.len() > MAX_MESSAGE {
                        return Err(WsError::Protocol("message too large"));
                    }
                    if fin {
                        self.whole = data;
                        return Ok(Some(Msg {
                            text: op == 0x1,
                            start: usize::MAX,
                            end: usize::MAX,
                        }));
                    }
                    self.frag = Some((op, data));
                }
                0x8 => {
                    let code = if end - start >= 2 {
                        u16::from_be_bytes([self.buf[start], self.buf[start + 1]])
                    } else {
                        1005
                    };
                    // Echo the close as the protocol asks; the caller stops anyway.
                    let mask = self.next_mask();
                    encode_frame(&mut self.out, 0x8, &code.to_be_bytes(), mask);
                    return Err(WsError::ClosedByServer(code));
                }
                0x9 => {
                    let ping = self.buf[start..end].to_vec();
                    let mask = self.next_mask();
                    encode_frame(&mut self.out, 0xA, &ping, mask);
                }
                0xA => {}
                _ => return Err(WsError::Protocol("unknown opcode")),
            }
        }
    }

    /// Sends a normal close frame and shuts the write side; best effort.
    pub async fn close(&mut self) {
        let mask = self.next_mask();
        encode_frame(&mut self.out, 0x8, &1000u16.to_be_bytes(), mask);
        let _ = tokio::time::timeout(Duration::from_millis(200), self.flush()).await;
        let _ = self.stream.shutdown().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_matches_rfc_example() {
        // RFC 6455 section 1.3.
        assert_eq!(
            accept_of("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn masked_frames_unmask_to_the_payload() {
        for len in [0usize, 5, 125, 126, 300, 70_000] {
            let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut out = Vec::new();
            encode_frame(&mut out, 0x1, &payload, [1, 2, 3, 4]);
            assert_eq!(out[0], 0x81);
            assert!(out[1] & 0x80 != 0, "client frames are masked");
            let header = match len {
                0..=125 => 2,
                126..=65535 => 4,
                _ => 10,
            };
            let mask = &out[header..header + 4];
            let unmasked: Vec<u8> = out[header + 4..]
                .iter()
                .enumerate()
                .map(|(i, b)| b ^ mask[i & 3])
                .collect();
            assert_eq!(unmasked, payload, "length {len}");
        }
    }

    #[test]
    fn server_frames_parse_whole_or_wait() {
        let frame = [0x81, 3, b'a', b'b', b'c', 0x89, 0];
        let f = parse_frame(&frame).unwrap().unwrap();
        assert!(f.fin);
        assert_eq!(f.opcode, 1);
        assert_eq!(&frame[f.payload], b"abc");
        assert_eq!(f.len, 5);
        assert!(parse_frame(&frame[..4]).unwrap().is_none());
        let f = parse_frame(&frame[5..]).unwrap().unwrap();
        assert_eq!((f.opcode, f.len), (9, 2));
        let long = [0x82, 126, 0x01, 0x00];
        assert!(parse_frame(&long).unwrap().is_none(), "256 bytes announced");
        assert!(parse_frame(&[0x81, 0x81, 0, 0, 0, 0, 0]).is_err());
    }
}
