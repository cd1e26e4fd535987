//! `google.protobuf.Timestamp` with the protojson text form Nakama clients see.
//!
//! The generated types use this instead of `pbjson_types::Timestamp` because
//! the latter writes UTC as `+00:00`, while protojson (and so Nakama) writes a
//! `Z` suffix with 0, 3, 6 or 9 fractional digits. The protobuf encoding is
//! the well-known type's: `seconds` = 1, `nanos` = 2.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, SecondsFormat, Utc};

/// Seconds of 0001-01-01T00:00:00Z, the earliest instant protojson accepts.
const MIN_SECONDS: i64 = -62_135_596_800;
/// Seconds of 9999-12-31T23:59:59Z, the latest instant protojson accepts.
const MAX_SECONDS: i64 = 253_402_300_799;
const NANOS_PER_SECOND: i64 = 1_000_000_000;

/// A point in time: seconds and nanoseconds since the Unix epoch, in UTC.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Message)]
pub struct Timestamp {
    /// Whole seconds since 1970-01-01T00:00:00Z.
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    /// Fraction of the second, in `0..1_000_000_000`; never negative.
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

/// Why a [`Timestamp`] has no RFC 3339 form, or a string is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimestampError {
    /// The instant lies outside years 1 to 9999, or `nanos` outside `0..1e9`.
    #[error(
        "timestamp {seconds}s {nanos}ns is outside 0001-01-01 to 9999-12-31 or has nanos outside 0..1e9"
    )]
    OutOfRange { seconds: i64, nanos: i32 },
    /// The text is not an RFC 3339 date-time.
    #[error("timestamp is not RFC 3339 (expected e.g. \"2024-01-02T03:04:05Z\"): {0}")]
    Invalid(chrono::ParseError),
}

impl Timestamp {
    /// The instant `seconds` after the Unix epoch.
    pub const fn from_unix_seconds(seconds: i64) -> Self {
        Self { seconds, nanos: 0 }
    }

    /// The instant `millis` milliseconds after the Unix epoch.
    pub const fn from_unix_millis(millis: i64) -> Self {
        Self {
            seconds: millis.div_euclid(1000),
            // The remainder is in 0..1000, so the product fits an i32.
            nanos: (millis.rem_euclid(1000) * 1_000_000) as i32,
        }
    }

    /// The current time from the system clock.
    pub fn now() -> Self {
        SystemTime::now().into()
    }

    /// Whole seconds since the Unix epoch, rounded towards the past.
    pub const fn unix_seconds(&self) -> i64 {
        self.seconds
    }

    /// Milliseconds since the Unix epoch, rounded towards the past.
    pub const fn unix_millis(&self) -> i64 {
        self.seconds
            .saturating_mul(1000)
            .saturating_add(self.nanos as i64 / 1_000_000)
    }

    /// The protojson text form: RFC 3339 in UTC with a `Z` suffix and 0, 3, 6
    /// or 9 fractional digits, e.g. `2024-01-02T03:04:05.120Z`.
    pub fn to_rfc3339(&self) -> Result<String, TimestampError> {
        Ok(self
            .to_datetime()?
            .to_rfc3339_opts(SecondsFormat::AutoSi, true))
    }

    /// Parses RFC 3339 text with any UTC offset, as protojson does.
    pub fn parse_rfc3339(text: &str) -> Result<Self, TimestampError> {
        let parsed = DateTime::parse_from_rfc3339(text).map_err(TimestampError::Invalid)?;
        let timestamp = Self {
            seconds: parsed.timestamp(),
            // chrono reports a leap second as nanos >= 1e9; protobuf has no
            // leap seconds, so it folds into the last nanosecond of the minute.
            nanos: parsed.timestamp_subsec_nanos().min(999_999_999) as i32,
        };
        timestamp.check_range()?;
        Ok(timestamp)
    }

    fn check_range(&self) -> Result<(), TimestampError> {
        let in_range = (MIN_SECONDS..=MAX_SECONDS).contains(&self.seconds)
            && (0..NANOS_PER_SECOND).contains(&i64::from(self.nanos));
        if in_range {
            Ok(())
        } else {
            Err(TimestampError::OutOfRange {
                seconds: self.seconds,
                nanos: self.nanos,
            })
        }
    }

    fn to_datetime(self) -> Result<DateTime<Utc>, TimestampError> {
        self.check_range()?;
        // In range, so both conversions succeed.
        DateTime::from_timestamp(self.seconds, self.nanos as u32).ok_or(
            TimestampError::OutOfRange {
                seconds: self.seconds,
                nanos: self.nanos,
            },
        )
    }
}

impl From<SystemTime> for Timestamp {
    fn from(time: SystemTime) -> Self {
        match time.duration_since(UNIX_EPOCH) {
            Ok(after) => Self {
                seconds: i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
                nanos: after.subsec_nanos() as i32,
            },
            Err(before) => {
                // Before the epoch: step back whole seconds, then forward by
                // the nanos, which must stay non-negative.
                let before = before.duration();
                let mut seconds = -i64::try_from(before.as_secs()).unwrap_or(i64::MAX);
                let mut nanos = before.subsec_nanos() as i32;
                if nanos > 0 {
                    seconds -= 1;
                    nanos = 1_000_000_000 - nanos;
                }
                Self { seconds, nanos }
            }
        }
    }
}

impl TryFrom<Timestamp> for SystemTime {
    type Error = TimestampError;

    fn try_from(timestamp: Timestamp) -> Result<Self, Self::Error> {
        timestamp.check_range()?;
        let nanos = Duration::from_nanos(timestamp.nanos as u64);
        let seconds = Duration::from_secs(timestamp.seconds.unsigned_abs());
        let time = if timestamp.seconds >= 0 {
            UNIX_EPOCH.checked_add(seconds)
        } else {
            UNIX_EPOCH.checked_sub(seconds)
        };
        time.and_then(|time| time.checked_add(nanos))
            .ok_or(TimestampError::OutOfRange {
                seconds: timestamp.seconds,
                nanos: timestamp.nanos,
            })
    }
}

impl From<pbjson_types::Timestamp> for Timestamp {
    fn from(timestamp: pbjson_types::Timestamp) -> Self {
        Self {
            seconds: timestamp.seconds,
            nanos: timestamp.nanos,
        }
    }
}

impl From<Timestamp> for pbjson_types::Timestamp {
    fn from(timestamp: Timestamp) -> Self {
        Self {
            seconds: timestamp.seconds,
            nanos: timestamp.nanos,
        }
    }
}

impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let text = self.to_rfc3339().map_err(serde::ser::Error::custom)?;
        serializer.serialize_str(&text)
    }
}

impl<'de> serde::Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Rfc3339Visitor;

        impl serde::de::Visitor<'_> for Rfc3339Visitor {
            type Value = Timestamp;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an RFC 3339 date-time string")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Timestamp, E> {
                Timestamp::parse_rfc3339(text).map_err(E::custom)
            }
        }

        deserializer.deserialize_str(Rfc3339Visitor)
    }
}
