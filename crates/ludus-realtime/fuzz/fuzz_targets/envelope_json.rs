//! Any bytes on a `format=json` socket: the decoder returns an envelope or an
//! error and never panics; a decoded envelope encodes again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ludus_realtime::codec::{Format, decode, encode};

fuzz_target!(|data: &[u8]| {
    if let Ok(envelope) = decode(Format::Json, data) {
        let _ = encode(Format::Json, &envelope);
        let _ = encode(Format::Protobuf, &envelope);
    }
});
