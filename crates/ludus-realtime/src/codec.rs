//! The envelope codec: `format=json` sockets carry protojson in text frames,
//! `format=protobuf` sockets carry the protobuf `Envelope` in binary frames.
//!
//! Decoding untrusted bytes never panics (fuzzed in `fuzz/`, and by a
//! proptest in this file). Encoding a push for many recipients happens once
//! per format: [`Encoded`] caches each format's bytes on first use and every
//! recipient shares them.

use std::sync::OnceLock;

use bytes::Bytes;
use ludus_proto::prost::Message as _;
use ludus_proto::realtime::Envelope;

/// The wire format a socket chose with `?format=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    Json,
    Protobuf,
}

impl Format {
    /// Parses the `format` query parameter; empty means JSON, as in Nakama.
    pub fn from_query(value: Option<&str>) -> Option<Format> {
        match value {
            None | Some("") | Some("json") => Some(Format::Json),
            Some("protobuf") => Some(Format::Protobuf),
            Some(_) => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Protobuf => "protobuf",
        }
    }
}

/// Why an incoming frame could not be decoded; each closes the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("malformed JSON envelope")]
    Json,
    #[error("malformed protobuf envelope")]
    Protobuf,
}

/// Decodes one frame's payload in the socket's format.
pub fn decode(format: Format, payload: &[u8]) -> Result<Envelope, DecodeError> {
    match format {
        Format::Json => ludus_proto::from_json(payload).map_err(|_| DecodeError::Json),
        Format::Protobuf => Envelope::decode(payload).map_err(|_| DecodeError::Protobuf),
    }
}

/// Encodes one envelope in `format`. JSON encoding fails only for values
/// protojson cannot express (a timestamp outside years 1-9999).
pub fn encode(format: Format, envelope: &Envelope) -> Option<Bytes> {
    match format {
        Format::Json => match ludus_proto::to_json(envelope) {
            Ok(v) => Some(Bytes::from(v)),
            Err(error) => {
                tracing::error!(%error, "cannot encode envelope as JSON, dropping it");
                None
            }
        },
        Format::Protobuf => Some(Bytes::from(envelope.encode_to_vec())),
    }
}

/// An envelope on its way to many sessions, encoded at most once per format.
#[derive(Debug)]
pub struct Encoded {
    envelope: Envelope,
    json: OnceLock<Option<Bytes>>,
    protobuf: OnceLock<Option<Bytes>>,
}

impl Encoded {
    pub fn new(envelope: Envelope) -> Encoded {
        Encoded {
            envelope,
            json: OnceLock::new(),
            protobuf: OnceLock::new(),
        }
    }

    pub fn envelope(&self) -> &Envelope {
        &self.envelope
    }

    /// The bytes for `format`; the same `Bytes` (shared) for every call.
    pub fn bytes(&self, format: Format) -> Option<Bytes> {
        let cell = match format {
            Format::Json => &self.json,
            Format::Protobuf => &self.protobuf,
        };
        cell.get_or_init(|| encode(format, &self.envelope)).clone()
    }
}

#[cfg(test)]
mod tests {
    use ludus_proto::realtime::envelope::Message;
    use ludus_proto::realtime::{Ping, StatusUpdate};
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn both_formats_round_trip() {
        let env = Envelope {
            cid: "7".into(),
            message: Some(Message::StatusUpdate(StatusUpdate {
                status: Some("busy".to_string().into()),
            })),
        };
        for f in [Format::Json, Format::Protobuf] {
            let bytes = encode(f, &env).unwrap();
            assert_eq!(decode(f, &bytes).unwrap(), env);
        }
    }

    #[test]
    fn json_uses_proto_names() {
        let env = Envelope {
            cid: "1".into(),
            message: Some(Message::Ping(Ping {})),
        };
        assert_eq!(
            &encode(Format::Json, &env).unwrap()[..],
            br#"{"cid":"1","ping":{}}"#
        );
    }

    #[test]
    fn encoded_shares_bytes_across_recipients() {
        let e = Encoded::new(Envelope::default());
        let a = e.bytes(Format::Protobuf).unwrap();
        let b = e.bytes(Format::Protobuf).unwrap();
        // Same allocation, not a copy.
        assert_eq!(a.as_ptr(), b.as_ptr());
    }

    #[test]
    fn format_query() {
        assert_eq!(Format::from_query(None), Some(Format::Json));
        assert_eq!(Format::from_query(Some("protobuf")), Some(Format::Protobuf));
        assert_eq!(Format::from_query(Some("xml")), None);
    }

    proptest! {
        // Untrusted frames decode or fail; they never panic.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..1024)) {
            let _ = decode(Format::Json, &bytes);
            let _ = decode(Format::Protobuf, &bytes);
        }

        #[test]
        fn json_like_text_never_panics(s in r#"[{}\[\]":,a-z_0-9 .\-\\]{0,300}"#) {
            let _ = decode(Format::Json, s.as_bytes());
        }

        #[test]
        fn json_envelope_shapes_never_panic(
            member in "(channel_join|status_follow|status_update|ping|rpc|match_data_send|party_create|channel_message_send)",
            body in r#"[{}\[\]":,a-z_0-9 .\-]{0,80}"#,
        ) {
            let text = format!(r#"{{"cid":"1","{member}":{body}}}"#);
            let _ = decode(Format::Json, text.as_bytes());
        }
    }
}
