//! The few realtime envelopes the socket workloads send and read, in both
//! wire formats of `/ws`: JSON text frames (written from the
//! `ludus_proto::realtime` types through their protojson serde, so strings
//! are always escaped; read by scanning for the fields needed, only rare
//! replies go through `serde_json`) and protobuf binary frames.

use base64::Engine as _;
use ludus_proto::prost::Message as _;
use ludus_proto::realtime::{self as rt, envelope::Message as M};

use crate::options::Format;

/// What a workload needs to know about one message from the server.
#[derive(Debug, Default, PartialEq)]
pub struct Incoming {
    /// The cid when it is a number (the workloads' own round trips).
    pub cid: Option<u64>,
    /// The cid is `"j"`, the workloads' join requests.
    pub join_reply: bool,
    /// An `error` envelope's kind, e.g. `server error 3`.
    pub error: Option<String>,
    /// The channel id of a `channel` reply.
    pub channel_id: Option<String>,
    /// The `bench_ts` of a delivered `channel_message`.
    pub delivery_ts: Option<u64>,
    /// Op code and data of a `match_data`.
    pub match_data: Option<(i64, Vec<u8>)>,
}

/// Reads a message; `deep` also looks for channel and match replies (the
/// echo workload's hot path does not need them).
pub fn read(format: Format, body: &[u8], deep: bool) -> Incoming {
    match format {
        Format::Json => read_json(body, deep),
        Format::Protobuf => read_protobuf(body),
    }
}

fn read_json(body: &[u8], deep: bool) -> Incoming {
    let mut inc = Incoming {
        cid: cid_of(body),
        error: server_error(body),
        ..Incoming::default()
    };
    if !deep {
        return inc;
    }
    inc.join_reply = find(body, br#""cid":"j""#).is_some();
    if find(body, b"\"channel_message\":").is_some() {
        inc.delivery_ts = number_after(body, b"bench_ts");
    } else if inc.join_reply && find(body, b"\"channel\":").is_some() {
        let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        inc.channel_id = v["channel"]["id"].as_str().map(str::to_owned);
    } else if find(body, b"\"match_data\":").is_some() {
        let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        let data = &v["match_data"];
        let op = match &data["op_code"] {
            serde_json::Value::String(s) => s.parse::<i64>().unwrap_or(0),
            other => other.as_i64().unwrap_or(0),
        };
        let bytes = data["data"]
            .as_str()
            .and_then(|d| base64::engine::general_purpose::STANDARD.decode(d).ok())
            .unwrap_or_default();
        inc.match_data = Some((op, bytes));
    }
    inc
}

fn read_protobuf(body: &[u8]) -> Incoming {
    let Ok(env) = rt::Envelope::decode(body) else {
        return Incoming {
            error: Some("undecodable protobuf".into()),
            ..Incoming::default()
        };
    };
    let mut inc = Incoming {
        cid: env.cid.parse().ok(),
        join_reply: env.cid == "j",
        ..Incoming::default()
    };
    match env.message {
        Some(M::Error(e)) => inc.error = Some(format!("server error {}", e.code)),
        Some(M::Channel(c)) => inc.channel_id = Some(c.id),
        Some(M::ChannelMessage(m)) => {
            inc.delivery_ts = number_after(m.content.as_bytes(), b"bench_ts")
        }
        Some(M::MatchData(d)) => inc.match_data = Some((d.op_code, d.data.to_vec())),
        _ => {}
    }
    inc
}

/// Builds outgoing envelopes into a reusable buffer.
pub struct Writer {
    pub format: Format,
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn new(format: Format) -> Writer {
        Writer {
            format,
            buf: Vec::with_capacity(256),
        }
    }

    /// Encodes one envelope in the writer's format: protobuf, or protojson
    /// through `ludus_proto`'s serde, so every string is escaped as it must be.
    fn envelope(&mut self, cid: &str, message: M) -> &[u8] {
        let env = rt::Envelope {
            cid: cid.to_owned(),
            message: Some(message),
        };
        self.buf.clear();
        match self.format {
            // Encoding into a Vec cannot run out of room.
            Format::Protobuf => {
                let _ = env.encode(&mut self.buf);
            }
            // Serializing generated messages into a Vec cannot fail.
            Format::Json => {
                let _ = serde_json::to_writer(&mut self.buf, &env);
            }
        }
        &self.buf
    }

    /// `ping` with a numeric cid.
    pub fn ping(&mut self, cid: u64) -> &[u8] {
        self.envelope(&cid.to_string(), M::Ping(rt::Ping {}))
    }

    /// A socket `rpc` call; `payload` is the function's input (a JSON text).
    pub fn rpc(&mut self, cid: u64, id: &str, payload: &str) -> &[u8] {
        let rpc = ludus_proto::api::Rpc {
            id: id.to_owned(),
            payload: payload.to_owned(),
            http_key: String::new(),
        };
        self.envelope(&cid.to_string(), M::Rpc(rpc))
    }

    /// Joins a chat room, not persisted and hidden (no presence events), cid `j`.
    pub fn channel_join(&mut self, room: &str) -> &[u8] {
        let join = rt::ChannelJoin {
            target: room.to_owned(),
            r#type: 1,
            persistence: Some(ludus_proto::pbjson_types::BoolValue { value: false }),
            hidden: Some(ludus_proto::pbjson_types::BoolValue { value: true }),
        };
        self.envelope("j", M::ChannelJoin(join))
    }

    /// A chat message whose content carries the send time.
    pub fn channel_message(&mut self, channel_id: &str, ts: u64) -> &[u8] {
        let send = rt::ChannelMessageSend {
            channel_id: channel_id.to_owned(),
            content: format!(r#"{{"bench_ts":{ts}}}"#),
        };
        self.envelope("", M::ChannelMessageSend(send))
    }

    /// Joins a match by id, cid `j`.
    pub fn match_join(&mut self, match_id: &str) -> &[u8] {
        let join = rt::MatchJoin {
            metadata: Default::default(),
            id: Some(rt::match_join::Id::MatchId(match_id.to_owned())),
        };
        self.envelope("j", M::MatchJoin(join))
    }

    /// Match data with an op code.
    pub fn match_data(&mut self, match_id: &str, op: i64, data: &[u8]) -> &[u8] {
        let send = rt::MatchDataSend {
            match_id: match_id.to_owned(),
            op_code: op,
            data: data.to_vec().into(),
            presences: Vec::new(),
            reliable: true,
        };
        self.envelope("", M::MatchDataSend(send))
    }
}

/// The kind of an `error` envelope, or `None` for any other message.
pub fn server_error(body: &[u8]) -> Option<String> {
    let at = find(body, b"\"error\":{")?;
    let code = number_after(&body[at..], b"\"code\":").unwrap_or(0);
    Some(format!("server error {code}"))
}

/// The numeric cid of a JSON envelope (the workloads' own cids are numbers).
pub fn cid_of(body: &[u8]) -> Option<u64> {
    let at = find(body, b"\"cid\":\"")? + 7;
    let digits = body[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || body.get(at + digits) != Some(&b'"') {
        return None;
    }
    std::str::from_utf8(&body[at..at + digits])
        .ok()?
        .parse()
        .ok()
}

/// The first run of digits after `key` (skipping quotes, colons, escapes).
pub fn number_after(body: &[u8], key: &[u8]) -> Option<u64> {
    let at = find(body, key)? + key.len();
    let rest = &body[at..];
    let skip = rest
        .iter()
        .take(4)
        .take_while(|b| matches!(b, b'"' | b':' | b'\\' | b' ' | b'='))
        .count();
    let digits = rest[skip..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if digits == 0 {
        return None;
    }
    std::str::from_utf8(&rest[skip..skip + digits])
        .ok()?
        .parse()
        .ok()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scanners_read_the_fields_the_workloads_need() {
        assert_eq!(cid_of(br#"{"cid":"42","pong":{}}"#), Some(42));
        assert_eq!(cid_of(br#"{"cid":"j","channel":{}}"#), None);
        assert_eq!(cid_of(br#"{"pong":{}}"#), None);
        let msg = br#"{"channel_message":{"content":"{\"bench_ts\":123456}"}}"#;
        assert_eq!(number_after(msg, b"bench_ts"), Some(123456));
        assert_eq!(number_after(b"t=77;xxxx", b"t="), Some(77));
        assert_eq!(
            server_error(br#"{"cid":"3","error":{"code":3,"message":"bad"}}"#).as_deref(),
            Some("server error 3")
        );
        assert_eq!(server_error(br#"{"cid":"3","pong":{}}"#), None);
    }

    #[test]
    fn json_replies_read_alike_in_both_formats() {
        // What the server would send, in JSON and in protobuf.
        let cases: Vec<(&[u8], rt::Envelope)> = vec![
            (
                br#"{"cid":"7","pong":{}}"#,
                rt::Envelope {
                    cid: "7".into(),
                    message: Some(M::Pong(rt::Pong {})),
                },
            ),
            (
                br#"{"cid":"j","channel":{"id":"2...room"}}"#,
                rt::Envelope {
                    cid: "j".into(),
                    message: Some(M::Channel(rt::Channel {
                        id: "2...room".into(),
                        ..Default::default()
                    })),
                },
            ),
            (
                br#"{"channel_message":{"content":"{\"bench_ts\":99}"}}"#,
                rt::Envelope {
                    cid: String::new(),
                    message: Some(M::ChannelMessage(ludus_proto::api::ChannelMessage {
                        content: r#"{"bench_ts":99}"#.into(),
                        ..Default::default()
                    })),
                },
            ),
            (
                br#"{"match_data":{"match_id":"m","op_code":"1","data":"dD01Ow=="}}"#,
                rt::Envelope {
                    cid: String::new(),
                    message: Some(M::MatchData(rt::MatchData {
                        match_id: "m".into(),
                        op_code: 1,
                        data: b"t=5;".to_vec().into(),
                        ..Default::default()
                    })),
                },
            ),
            (
                br#"{"cid":"3","error":{"code":5,"message":"x"}}"#,
                rt::Envelope {
                    cid: "3".into(),
                    message: Some(M::Error(rt::Error {
                        code: 5,
                        message: "x".into(),
                        ..Default::default()
                    })),
                },
            ),
        ];
        for (json, env) in cases {
            let a = read(Format::Json, json, true);
            let b = read(Format::Protobuf, &env.encode_to_vec(), true);
            assert_eq!(a, b, "{}", String::from_utf8_lossy(json));
        }
    }

    /// Regression: the JSON writers were `format!` strings, so an RPC id,
    /// room or match id with a quote or backslash broke the envelope.
    #[test]
    fn strings_that_need_escaping_round_trip_through_the_decoders() {
        let odd = "a\"b\\c\n\u{1}é";
        for format in [Format::Json, Format::Protobuf] {
            let mut w = Writer::new(format);
            let decode = |bytes: &[u8]| match format {
                Format::Json => ludus_proto::from_json::<rt::Envelope>(bytes).unwrap(),
                Format::Protobuf => rt::Envelope::decode(bytes).unwrap(),
            };
            let env = decode(w.rpc(7, odd, odd));
            assert_eq!(env.cid, "7");
            assert!(
                matches!(env.message, Some(M::Rpc(ref r)) if r.id == odd && r.payload == odd),
                "{format:?}"
            );
            let env = decode(w.channel_join(odd));
            assert!(matches!(env.message, Some(M::ChannelJoin(ref j)) if j.target == odd));
            let env = decode(w.channel_message(odd, 9));
            assert!(
                matches!(env.message, Some(M::ChannelMessageSend(ref m)) if m.channel_id == odd)
            );
            let env = decode(w.match_join(odd));
            assert!(matches!(
                env.message,
                Some(M::MatchJoin(rt::MatchJoin { id: Some(rt::match_join::Id::MatchId(ref id)), .. })) if id == odd
            ));
            let env = decode(w.match_data(odd, 2, b"\"\x00"));
            assert!(matches!(
                env.message,
                Some(M::MatchDataSend(ref d)) if d.match_id == odd && d.op_code == 2 && &d.data[..] == b"\"\x00"
            ));
        }
    }

    #[test]
    fn writers_produce_envelopes_the_server_can_read() {
        let mut w = Writer::new(Format::Json);
        let ping: serde_json::Value = serde_json::from_slice(w.ping(12)).unwrap();
        assert_eq!(ping["cid"], "12");
        let rpc: serde_json::Value =
            serde_json::from_slice(w.rpc(3, "echo", r#"{"ts":1}"#)).unwrap();
        assert_eq!(rpc["rpc"]["payload"], r#"{"ts":1}"#);
        let join: serde_json::Value = serde_json::from_slice(w.channel_join("r")).unwrap();
        assert_eq!(join["channel_join"]["hidden"], true);
        let send: serde_json::Value = serde_json::from_slice(w.channel_message("c", 42)).unwrap();
        assert_eq!(
            send["channel_message_send"]["content"],
            r#"{"bench_ts":42}"#
        );
        let data: serde_json::Value =
            serde_json::from_slice(w.match_data("m", 2, b"t=5;")).unwrap();
        assert_eq!(data["match_data_send"]["data"], "dD01Ow==");

        let mut w = Writer::new(Format::Protobuf);
        let env = rt::Envelope::decode(w.match_join("m.node")).unwrap();
        assert_eq!(env.cid, "j");
        assert!(matches!(
            env.message,
            Some(M::MatchJoin(rt::MatchJoin { id: Some(rt::match_join::Id::MatchId(ref id)), .. })) if id == "m.node"
        ));
        let env = rt::Envelope::decode(w.channel_message("c", 42)).unwrap();
        assert!(
            matches!(env.message, Some(M::ChannelMessageSend(ref m)) if m.content == r#"{"bench_ts":42}"#)
        );
    }
}
