//! Any bytes on a `format=protobuf` socket: the decoder returns an envelope
//! or an error and never panics; a decoded envelope encodes again and decodes
//! to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ludus_realtime::codec::{Format, decode, encode};

fuzz_target!(|data: &[u8]| {
    if let Ok(envelope) = decode(Format::Protobuf, data) {
        let bytes = encode(Format::Protobuf, &envelope).expect("protobuf always encodes");
        assert_eq!(
            decode(Format::Protobuf, &bytes).ok(),
            Some(envelope.clone())
        );
        let _ = encode(Format::Json, &envelope);
    }
});
