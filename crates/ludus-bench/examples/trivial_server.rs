//! A trivial server for measuring `ludus bench`'s own ceiling: it does as
//! little as a server can, so the load generator is what runs out first.
//!
//! - HTTP/1.1 keep-alive: every request gets `200` with a small JSON body;
//!   `POST /v2/account/authenticate/device` answers `{"token":"trivial"}` so
//!   the socket workloads can sign in.
//! - `GET /ws…` upgrades to a WebSocket that answers each text message
//!   carrying a `cid` with `{"cid":"…","pong":{}}` (or the `rpc` echoed back),
//!   and answers pings.
//!
//! One thread, so it can be pinned to one core:
//!
//!   taskset -c 1 target/release/examples/trivial_server 127.0.0.1:7399
//!
//! `--close-after-ms N` closes every socket (code 1001) N ms after it opened,
//! to see how the tool reports a server that drops sockets.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr = args
        .first()
        .cloned()
        .unwrap_or_else(|| "127.0.0.1:7399".into());
    let close_after = args
        .iter()
        .position(|a| a == "--close-after-ms")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse::<u64>().ok())
        .map(Duration::from_millis);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(async move {
        let listener = TcpListener::bind(&addr)
            .await
            .unwrap_or_else(|e| panic!("cannot listen on {addr}: {e}"));
        eprintln!("trivial server on {}", listener.local_addr().unwrap());
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let _ = serve(stream, close_after).await;
            });
        }
    });
}

const OK_BODY: &[u8] = b"{}";
const TOKEN_BODY: &[u8] = br#"{"token":"trivial"}"#;

async fn serve(mut stream: TcpStream, close_after: Option<Duration>) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let mut out: Vec<u8> = Vec::with_capacity(8192);
    let mut rpos = 0;
    loop {
        // Answer every whole request in the buffer, then write once.
        loop {
            let data = &buf[rpos..];
            let Some(head_end) = data.windows(4).position(|w| w == b"\r\n\r\n") else {
                break;
            };
            let head = &data[..head_end];
            let body_len = header(head, b"content-length")
                .and_then(|v| std::str::from_utf8(v).ok()?.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if data.len() < head_end + 4 + body_len {
                break;
            }
            if head.starts_with(b"GET /ws") {
                let key = header(head, b"sec-websocket-key").unwrap_or_default();
                let accept = ludus_bench::ws::accept_of(std::str::from_utf8(key).unwrap_or(""));
                let resp = format!(
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
                );
                stream.write_all(&out).await?;
                stream.write_all(resp.as_bytes()).await?;
                let rest = data[head_end + 4..].to_vec();
                return websocket(stream, rest, close_after).await;
            }
            let body = if head.starts_with(b"POST /v2/account/authenticate") {
                TOKEN_BODY
            } else {
                OK_BODY
            };
            out.extend_from_slice(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ",
            );
            out.extend_from_slice(body.len().to_string().as_bytes());
            out.extend_from_slice(b"\r\n\r\n");
            out.extend_from_slice(body);
            rpos += head_end + 4 + body_len;
        }
        if !out.is_empty() {
            stream.write_all(&out).await?;
            out.clear();
        }
        buf.drain(..rpos);
        rpos = 0;
        let start = buf.len();
        buf.resize(start + 8192, 0);
        let n = stream.read(&mut buf[start..]).await?;
        buf.truncate(start + n);
        if n == 0 {
            return Ok(());
        }
    }
}

fn header<'a>(head: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    head.split(|&b| b == b'\n').find_map(|line| {
        let colon = line.iter().position(|&b| b == b':')?;
        line[..colon].eq_ignore_ascii_case(name).then(|| {
            let v = &line[colon + 1..];
            let v = v.strip_suffix(b"\r").unwrap_or(v);
            v.trim_ascii()
        })
    })
}

/// Appends one unmasked server frame.
fn frame(out: &mut Vec<u8>, opcode: u8, payload: &[u8]) {
    out.push(0x80 | opcode);
    let len = payload.len();
    if len < 126 {
        out.push(len as u8);
    } else if len <= u16::MAX as usize {
        out.push(126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(payload);
}

async fn websocket(
    mut stream: TcpStream,
    mut buf: Vec<u8>,
    close_after: Option<Duration>,
) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(8192);
    let mut msg = Vec::with_capacity(256);
    let close_at = close_after.map(|d| tokio::time::Instant::now() + d);
    loop {
        let mut at = 0;
        // Answer every whole frame in the buffer, then write once.
        loop {
            let data = &mut buf[at..];
            if data.len() < 2 {
                break;
            }
            let opcode = data[0] & 0x0f;
            let (len, mut hdr) = match data[1] & 0x7f {
                126 if data.len() >= 4 => (u16::from_be_bytes([data[2], data[3]]) as usize, 4),
                127 if data.len() >= 10 => {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&data[2..10]);
                    (u64::from_be_bytes(b) as usize, 10)
                }
                126 | 127 => break,
                n => (n as usize, 2),
            };
            let masked = data[1] & 0x80 != 0;
            let mask_at = hdr;
            if masked {
                hdr += 4;
            }
            if data.len() < hdr + len {
                break;
            }
            if masked {
                let mask = [
                    data[mask_at],
                    data[mask_at + 1],
                    data[mask_at + 2],
                    data[mask_at + 3],
                ];
                for (i, b) in data[hdr..hdr + len].iter_mut().enumerate() {
                    *b ^= mask[i & 3];
                }
            }
            let payload = &data[hdr..hdr + len];
            match opcode {
                0x1 | 0x2 => reply(&mut out, &mut msg, payload),
                0x8 => {
                    frame(&mut out, 0x8, &1000u16.to_be_bytes());
                    stream.write_all(&out).await?;
                    return Ok(());
                }
                0x9 => frame(&mut out, 0xA, payload),
                _ => {}
            }
            at += hdr + len;
        }
        if !out.is_empty() {
            stream.write_all(&out).await?;
            out.clear();
        }
        buf.drain(..at);
        let start = buf.len();
        buf.resize(start + 8192, 0);
        let read = stream.read(&mut buf[start..]);
        let n = match close_at {
            Some(when) => match tokio::time::timeout_at(when, read).await {
                Ok(r) => r?,
                Err(_) => {
                    frame(&mut out, 0x8, &1001u16.to_be_bytes());
                    stream.write_all(&out).await?;
                    return Ok(());
                }
            },
            None => read.await?,
        };
        buf.truncate(start + n);
        if n == 0 {
            return Ok(());
        }
    }
}

/// `{"cid":"N",…}` → `{"cid":"N","pong":{}}`, or the `rpc` part echoed.
fn reply(out: &mut Vec<u8>, msg: &mut Vec<u8>, payload: &[u8]) {
    let Some(at) = payload.windows(7).position(|w| w == b"\"cid\":\"") else {
        return;
    };
    let cid_start = at + 7;
    let Some(len) = payload[cid_start..].iter().position(|&b| b == b'"') else {
        return;
    };
    let cid = &payload[cid_start..cid_start + len];
    msg.clear();
    msg.extend_from_slice(b"{\"cid\":\"");
    msg.extend_from_slice(cid);
    if let Some(rpc) = payload.windows(6).position(|w| w == b"\"rpc\":") {
        msg.extend_from_slice(b"\",");
        msg.extend_from_slice(&payload[rpc..]);
    } else {
        msg.extend_from_slice(b"\",\"pong\":{}}");
    }
    frame(out, 0x1, msg);
}
