//! `google.protobuf.Timestamp` in protojson form: RFC 3339, UTC, `Z`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ludus_proto::prost::Message as _;
use ludus_proto::{Timestamp, TimestampError, from_json, to_json_string};

#[test]
fn writes_z_with_0_3_6_or_9_fraction_digits() {
    let cases = [
        (1_704_164_645, 0, "2024-01-02T03:04:05Z"),
        (1_704_164_645, 120_000_000, "2024-01-02T03:04:05.120Z"),
        (1_704_164_645, 1_000, "2024-01-02T03:04:05.000001Z"),
        (1_704_164_645, 7, "2024-01-02T03:04:05.000000007Z"),
        (0, 0, "1970-01-01T00:00:00Z"),
        (-1, 500_000_000, "1969-12-31T23:59:59.500Z"),
    ];
    for (seconds, nanos, text) in cases {
        let timestamp = Timestamp { seconds, nanos };
        assert_eq!(timestamp.to_rfc3339().unwrap(), text);
        assert_eq!(to_json_string(&timestamp).unwrap(), format!("\"{text}\""));
        assert_eq!(Timestamp::parse_rfc3339(text).unwrap(), timestamp);
    }
}

#[test]
fn pbjson_types_timestamp_still_writes_an_offset_instead_of_z() {
    // Why this crate has its own Timestamp: when this starts failing,
    // pbjson-types writes protojson's form and ours could go.
    let theirs = ludus_proto::pbjson_types::Timestamp {
        seconds: 1_704_164_645,
        nanos: 0,
    };
    assert_eq!(
        serde_json::to_string(&theirs).unwrap(),
        r#""2024-01-02T03:04:05+00:00""#
    );
}

#[test]
fn reads_any_utc_offset() {
    let parsed: Timestamp = from_json(br#""2024-01-02T04:04:05.5+01:00""#).unwrap();
    assert_eq!(
        parsed,
        Timestamp {
            seconds: 1_704_164_645,
            nanos: 500_000_000
        }
    );
}

#[test]
fn rejects_what_protojson_rejects() {
    assert!(matches!(
        Timestamp::from_unix_seconds(253_402_300_800).to_rfc3339(),
        Err(TimestampError::OutOfRange { .. })
    ));
    let negative_nanos = Timestamp {
        seconds: 0,
        nanos: -1,
    };
    assert!(to_json_string(&negative_nanos).is_err());
    assert!(Timestamp::parse_rfc3339("2024-01-02").is_err());
    assert!(from_json::<Timestamp>(b"1704164645").is_err());
}

#[test]
fn converts_from_unix_time_and_system_time() {
    assert_eq!(
        Timestamp::from_unix_millis(-1),
        Timestamp {
            seconds: -1,
            nanos: 999_000_000
        }
    );
    assert_eq!(Timestamp::from_unix_millis(1_500).unix_millis(), 1_500);

    let before_epoch = UNIX_EPOCH - Duration::from_millis(1_500);
    let timestamp = Timestamp::from(before_epoch);
    assert_eq!(timestamp, Timestamp::from_unix_millis(-1_500));
    assert_eq!(SystemTime::try_from(timestamp).unwrap(), before_epoch);

    let now = SystemTime::now();
    assert_eq!(SystemTime::try_from(Timestamp::from(now)).unwrap(), now);
}

#[test]
fn protobuf_bytes_match_the_well_known_type() {
    let ours = Timestamp {
        seconds: 1_704_164_645,
        nanos: 7,
    };
    let theirs = ludus_proto::pbjson_types::Timestamp::from(ours);
    assert_eq!(ours.encode_to_vec(), theirs.encode_to_vec());
    assert_eq!(Timestamp::from(theirs), ours);
}
