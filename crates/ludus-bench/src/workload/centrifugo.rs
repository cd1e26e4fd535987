//! Centrifugo's client protocol (v2, JSON over `/connection/websocket`), for
//! `ludus bench fanout --protocol centrifugo`: the same fan-out workload
//! measured against Centrifugo in the same run as Ludus, so the server's CPU
//! per delivery can be set side by side with one load client for both.
//!
//! Commands are JSON objects with an `id`; replies carry it back. The server
//! may pack several replies and pushes into one frame, one per line, and
//! sends `{}` as a ping that the client answers with `{}`. Only what the
//! workload needs is read, by scanning, as `envelope` does for Nakama's.

use crate::workload::envelope::number_after;

/// The WebSocket path of Centrifugo's bidirectional JSON transport.
pub const PATH: &str = "/connection/websocket";
/// Command ids the workload waits for.
pub const CONNECT_ID: u64 = 1;
pub const SUBSCRIBE_ID: u64 = 2;

/// A `connect` command without a token (Centrifugo's `client.insecure` or
/// anonymous connections).
pub fn connect() -> Vec<u8> {
    format!(r#"{{"id":{CONNECT_ID},"connect":{{"name":"ludus-bench"}}}}"#).into_bytes()
}

/// A `subscribe` command to `channel`.
pub fn subscribe(channel: &str) -> Vec<u8> {
    format!(r#"{{"id":{SUBSCRIBE_ID},"subscribe":{{"channel":"{channel}"}}}}"#).into_bytes()
}

/// A client `publish` into `channel` whose data carries the send time.
pub fn publish(id: u64, channel: &str, ts: u64) -> Vec<u8> {
    format!(r#"{{"id":{id},"publish":{{"channel":"{channel}","data":{{"bench_ts":{ts}}}}}}}"#)
        .into_bytes()
}

/// The pong that answers a server ping.
pub const PONG: &[u8] = b"{}";

/// What one line (one reply or push) of a frame says.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Line {
    /// The reply's command id.
    pub id: Option<u64>,
    /// An error reply's kind, e.g. `server error 103`.
    pub error: Option<String>,
    /// The `bench_ts` of a delivered publication.
    pub delivery_ts: Option<u64>,
    /// The line is a server ping (`{}`).
    pub ping: bool,
}

/// The lines of a frame, read.
pub fn read(frame: &[u8]) -> impl Iterator<Item = Line> + '_ {
    frame
        .split(|&b| b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .map(read_line)
}

fn read_line(line: &[u8]) -> Line {
    let trimmed = line.trim_ascii();
    if trimmed == b"{}" {
        return Line {
            ping: true,
            ..Line::default()
        };
    }
    // A push has no id; a reply starts with it (Centrifugo writes `id`
    // first), so only the head is looked at to keep a publication's data
    // from being taken for it.
    let head = &trimmed[..trimmed.len().min(16)];
    let id = if head.starts_with(br#"{"id":"#) {
        number_after(head, br#""id":"#)
    } else {
        None
    };
    let error = if contains(trimmed, br#""error":{"#) {
        let code = number_after(trimmed, br#""code":"#).unwrap_or(0);
        Some(format!("server error {code}"))
    } else {
        None
    };
    let delivery_ts = if id.is_none() && contains(trimmed, br#""push":"#) {
        number_after(trimmed, b"bench_ts")
    } else {
        None
    };
    Line {
        id,
        error,
        delivery_ts,
        ping: false,
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_of_several_lines_is_read_line_by_line() {
        let frame = b"{\"id\":2,\"subscribe\":{}}\n{\"push\":{\"channel\":\"r\",\"pub\":{\"data\":{\"bench_ts\":42}}}}\n{}";
        let lines: Vec<Line> = read(frame).collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0].id, Some(2));
        assert_eq!(lines[0].delivery_ts, None);
        assert_eq!(lines[1].id, None);
        assert_eq!(lines[1].delivery_ts, Some(42));
        assert!(lines[2].ping);
    }

    #[test]
    fn an_error_reply_names_its_code() {
        let line = read(br#"{"id":1,"error":{"code":103,"message":"permission denied"}}"#)
            .next()
            .unwrap();
        assert_eq!(line.id, Some(1));
        assert_eq!(line.error.as_deref(), Some("server error 103"));
    }

    #[test]
    fn commands_are_json() {
        for cmd in [connect(), subscribe("room-1"), publish(7, "room-1", 99)] {
            serde_json::from_slice::<serde_json::Value>(&cmd).expect("valid JSON");
        }
        let p: serde_json::Value = serde_json::from_slice(&publish(7, "r", 99)).unwrap();
        assert_eq!(p["publish"]["data"]["bench_ts"], 99);
    }
}
