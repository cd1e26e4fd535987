//! Wire types of the Nakama client API, so that every Nakama client SDK can
//! talk to Ludus unchanged.
//!
//! - [`api`]: package `nakama.api`, the REST/gRPC request and response bodies.
//! - [`realtime`]: package `nakama.realtime`, the socket [`realtime::Envelope`]
//!   and everything it carries.
//!
//! Both are generated at build time from this crate's `proto/*.proto`, which
//! keep Nakama's message names, field names, numbers and types, so the
//! protobuf encoding (through [`prost::Message`]) is Nakama's byte for byte.
//!
//! Every type also implements serde's `Serialize` and `Deserialize` with the
//! JSON mapping Nakama uses (protojson with proto field names and enum
//! numbers): snake_case names, enums as numbers, zero values left out, 64-bit
//! integers as strings, bytes as base64, timestamps as RFC 3339 with `Z`,
//! wrapper types as plain values. Decoding accepts camelCase names, numbers or
//! strings for any integer, and ignores unknown fields. Use [`to_json`] and
//! [`from_json`] rather than `serde_json` directly: [`from_json`] also treats
//! `null` as "not set", as protojson does.
//!
//! The well-known types are those of [`pbjson_types`], except
//! `google.protobuf.Timestamp`, which is [`Timestamp`] (see there why).

mod json;
mod timestamp;

pub use json::{JsonError, from_json, to_json, to_json_string};
pub use pbjson_types;
pub use prost;
pub use timestamp::{Timestamp, TimestampError};

/// Package `nakama.api`: REST and gRPC bodies.
#[allow(clippy::all, clippy::pedantic, rustdoc::all)]
pub mod api {
    include!(concat!(env!("OUT_DIR"), "/nakama.api.rs"));
    include!(concat!(env!("OUT_DIR"), "/nakama.api.serde.rs"));
}

/// Package `nakama.realtime`: the socket envelope and its messages.
#[allow(clippy::all, clippy::pedantic, rustdoc::all)]
pub mod realtime {
    include!(concat!(env!("OUT_DIR"), "/nakama.realtime.rs"));
    include!(concat!(env!("OUT_DIR"), "/nakama.realtime.serde.rs"));
}

/// The encoded `google.protobuf.FileDescriptorSet` of both packages and the
/// well-known types they import, for gRPC reflection and schema checks.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/descriptor.bin"));
