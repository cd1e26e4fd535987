//! Protojson written straight from domain records, for answers large enough
//! that building the wire types first costs more than reading the rows: the
//! 1,000-friend list (`GET /v2/friend`) is about 400 KB of JSON, and going
//! through `ludus_proto::api` spent an allocation on every id and timestamp
//! and escaped every byte twice over.
//!
//! The bytes are exactly those the generated serde of the wire type writes
//! for the value `convert.rs` would build (field order, zero values left
//! out, wrapper fields always written, serde_json's string escapes,
//! timestamps as RFC 3339 with `Z`); the tests hold the two together. Only
//! whole-second timestamps are written here, which is all the domain
//! records carry.

use ludus_core::friend::{FriendPage, FriendRef, FriendSink};
use ludus_core::model::UserRef;
use uuid::Uuid;

/// Seconds of 0001-01-01T00:00:00Z, the earliest instant protojson writes.
const MIN_SECONDS: i64 = -62_135_596_800;
/// Seconds of 9999-12-31T23:59:59Z, the latest instant protojson writes.
const MAX_SECONDS: i64 = 253_402_300_799;

/// A record protojson cannot write: a time outside years 1 to 9999. The
/// wire types' serde refuses the same values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("timestamp {0}s is outside 0001-01-01 to 9999-12-31")]
pub(crate) struct OutOfRange(i64);

/// `FriendList` of `page`, as `api::FriendList` of `convert::friend_list`
/// writes it.
pub(crate) fn friend_list(page: &FriendPage) -> Result<Vec<u8>, OutOfRange> {
    let mut list = FriendListWriter::new(page.friends.len());
    for f in &page.friends {
        list.push(&f.view());
    }
    list.finish(page.cursor.as_deref())
}

/// A `FriendList` written friend by friend as the store reads them (the
/// [`FriendSink`] of `GET /v2/friend`), then closed with the page's cursor
/// by [`Self::finish`]: the same bytes as [`friend_list`] of the page.
pub(crate) struct FriendListWriter {
    w: Writer,
    friends: usize,
    /// The first time that could not be written, which fails the answer.
    error: Option<OutOfRange>,
}

impl FriendListWriter {
    /// Room for `expected` friends (each about 400 bytes, plus its strings
    /// beyond the usual), so a whole list is written without regrowing.
    pub(crate) fn new(expected: usize) -> Self {
        FriendListWriter {
            w: Writer::with_capacity(32 + expected * 448),
            friends: 0,
            error: None,
        }
    }

    fn friend(&mut self, f: &FriendRef<'_>) -> Result<(), OutOfRange> {
        let out = &mut self.w.out;
        if self.friends == 0 {
            out.extend_from_slice(b"{\"friends\":[");
        } else {
            out.push(b',');
        }
        self.friends += 1;
        let mut friend = Obj::open(&mut self.w);
        friend.key(key!("user"));
        user(friend.w, &f.user)?;
        // `state` is an `Int32Value`: present, so written even when 0.
        friend.key(key!("state"));
        write_int(&mut friend.w.out, f.state.as_i64());
        friend.timestamp(key!("update_time"), f.update_time)?;
        friend.str(key!("metadata"), f.metadata);
        friend.close();
        Ok(())
    }

    /// The whole answer: the friends pushed, then `cursor`.
    pub(crate) fn finish(mut self, cursor: Option<&str>) -> Result<Vec<u8>, OutOfRange> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let out = &mut self.w.out;
        if self.friends == 0 {
            out.push(b'{');
        } else {
            out.push(b']');
        }
        let mut list = Obj {
            w: &mut self.w,
            empty: self.friends == 0,
        };
        list.str(key!("cursor"), cursor.unwrap_or_default());
        list.close();
        Ok(self.w.out)
    }
}

impl FriendSink for FriendListWriter {
    fn push(&mut self, friend: &FriendRef<'_>) {
        if self.error.is_none() {
            self.error = self.friend(friend).err();
        }
    }
}

/// `api::User` of `convert::user`.
fn user(w: &mut Writer, u: &UserRef<'_>) -> Result<(), OutOfRange> {
    let mut o = Obj::open(w);
    o.uuid(key!("id"), u.id);
    o.str(key!("username"), u.username);
    o.str(key!("display_name"), u.display_name);
    o.str(key!("avatar_url"), u.avatar_url);
    o.str(key!("lang_tag"), u.lang_tag);
    o.str(key!("location"), u.location);
    o.str(key!("timezone"), u.timezone);
    o.str(key!("metadata"), u.metadata);
    o.str(key!("facebook_id"), u.facebook_id);
    o.str(key!("google_id"), u.google_id);
    o.str(key!("gamecenter_id"), u.gamecenter_id);
    o.str(key!("steam_id"), u.steam_id);
    if u.online {
        o.key(key!("online"));
        o.w.out.extend_from_slice(b"true");
    }
    if u.edge_count != 0 {
        o.key(key!("edge_count"));
        write_int(&mut o.w.out, u.edge_count.into());
    }
    o.timestamp(key!("create_time"), u.create_time)?;
    o.timestamp(key!("update_time"), u.update_time)?;
    o.str(key!("facebook_instant_game_id"), u.facebook_instant_game_id);
    o.str(key!("apple_id"), u.apple_id);
    o.close();
    Ok(())
}

/// The answer being written, and the last timestamp and its date: a
/// listing's times mostly fall on a few days, often on the same second
/// (a user's creation and last update, users made together), so the
/// calendar arithmetic runs once per day and the clock's once per second
/// rather than three times per row.
struct Writer {
    out: Vec<u8>,
    last_day: Option<(i64, [u8; 10])>,
    last_time: Option<(i64, [u8; 22])>,
}

impl Writer {
    fn with_capacity(bytes: usize) -> Self {
        Writer {
            out: Vec::with_capacity(bytes),
            last_day: None,
            last_time: None,
        }
    }

    /// `"YYYY-MM-DDTHH:MM:SSZ"` of whole seconds since the epoch, as
    /// protojson writes a timestamp without a fraction.
    fn timestamp(&mut self, unix_seconds: i64) -> Result<(), OutOfRange> {
        let text = match self.last_time {
            Some((last, text)) if last == unix_seconds => text,
            _ => {
                let text = self.timestamp_text(unix_seconds)?;
                self.last_time = Some((unix_seconds, text));
                text
            }
        };
        self.out.extend_from_slice(&text);
        Ok(())
    }

    /// What [`Self::timestamp`] writes, quotes included.
    fn timestamp_text(&mut self, unix_seconds: i64) -> Result<[u8; 22], OutOfRange> {
        if !(MIN_SECONDS..=MAX_SECONDS).contains(&unix_seconds) {
            return Err(OutOfRange(unix_seconds));
        }
        let day = unix_seconds.div_euclid(86_400);
        let date = match self.last_day {
            Some((last, date)) if last == day => date,
            _ => {
                let date = date_text(day);
                self.last_day = Some((day, date));
                date
            }
        };
        let second = unix_seconds.rem_euclid(86_400);
        let mut text = *b"\"0000-00-00T00:00:00Z\"";
        text[1..11].copy_from_slice(&date);
        text[12..14].copy_from_slice(&two_digits(second / 3600));
        text[15..17].copy_from_slice(&two_digits(second / 60 % 60));
        text[18..20].copy_from_slice(&two_digits(second % 60));
        Ok(text)
    }
}

/// `"name":`, a field's name as written, made once at compile time. Names
/// are proto field names, which need no escapes.
macro_rules! key {
    ($name:literal) => {
        concat!("\"", $name, "\":")
    };
}
use key;

/// One JSON object being written: puts the commas between its fields.
struct Obj<'a> {
    w: &'a mut Writer,
    empty: bool,
}

impl<'a> Obj<'a> {
    fn open(w: &'a mut Writer) -> Self {
        w.out.push(b'{');
        Obj { w, empty: true }
    }

    /// A field's name as [`key!`] writes it, after a comma unless it is
    /// the first field.
    fn key(&mut self, quoted: &str) {
        let out = &mut self.w.out;
        if !self.empty {
            out.push(b',');
        }
        self.empty = false;
        out.extend_from_slice(quoted.as_bytes());
    }

    /// A string field, left out when empty (proto3's zero value).
    fn str(&mut self, quoted: &str, value: &str) {
        if !value.is_empty() {
            self.key(quoted);
            write_str(&mut self.w.out, value);
        }
    }

    /// An id as its lower-case hyphenated text.
    fn uuid(&mut self, quoted: &str, id: Uuid) {
        self.key(quoted);
        let mut text = [0u8; 36];
        id.hyphenated().encode_lower(&mut text);
        let out = &mut self.w.out;
        out.push(b'"');
        out.extend_from_slice(&text);
        out.push(b'"');
    }

    /// A `Timestamp` field that is set: whole seconds since the epoch.
    fn timestamp(&mut self, quoted: &str, unix_seconds: i64) -> Result<(), OutOfRange> {
        self.key(quoted);
        self.w.timestamp(unix_seconds)
    }

    fn close(self) {
        self.w.out.push(b'}');
    }
}

/// What serde_json writes for each byte of a string: 0 for the byte itself,
/// else the letter of its short escape, or `u` for `\u00XX`.
const ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

/// `value` as a JSON string with serde_json's escapes: `"`, `\` and the
/// control characters; everything else (UTF-8 included) as it is.
fn write_str(out: &mut Vec<u8>, value: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = value.as_bytes();
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape = ESCAPE[b as usize];
        if escape == 0 {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        match escape {
            b'u' => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 0xf) as usize],
            ]),
            letter => out.extend_from_slice(&[b'\\', letter]),
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// A JSON number (32-bit proto integers are numbers; 64-bit ones would be
/// strings, and none is written here).
fn write_int(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    let mut digits = [0u8; 20];
    out.extend_from_slice(crate::digits::decimal_digits(n.unsigned_abs(), &mut digits).as_bytes());
}

fn two_digits(n: i64) -> [u8; 2] {
    [b'0' + (n / 10) as u8, b'0' + (n % 10) as u8]
}

/// `YYYY-MM-DD` of a day counted from 1970-01-01 (years 1 to 9999).
fn date_text(day: i64) -> [u8; 10] {
    let (year, month, day) = civil_from_days(day);
    let mut text = *b"0000-00-00";
    text[0..2].copy_from_slice(&two_digits(year / 100));
    text[2..4].copy_from_slice(&two_digits(year % 100));
    text[5..7].copy_from_slice(&two_digits(month));
    text[8..10].copy_from_slice(&two_digits(day));
    text
}

/// The proleptic Gregorian (year, month, day) of a day counted from
/// 1970-01-01, by eras of 400 years (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    // Months counted from March, so February's leap day comes last.
    let march_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * march_month + 2) / 5 + 1;
    let month = if march_month < 10 {
        march_month + 3
    } else {
        march_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use ludus_core::friend::{Friend, FriendState};
    use ludus_core::model::User;
    use ludus_proto::Timestamp;

    use super::*;

    /// One timestamp through a fresh writer, without its quotes.
    fn rfc3339(unix_seconds: i64) -> Result<String, OutOfRange> {
        let mut w = Writer::with_capacity(32);
        w.timestamp(unix_seconds)?;
        Ok(String::from_utf8(w.out[1..w.out.len() - 1].to_vec()).unwrap())
    }

    /// What the handler answered before this module: the wire type, built
    /// by `convert`, through its generated serde.
    fn through_wire_types(page: &FriendPage) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(&crate::convert::friend_list(page.clone()))
    }

    /// A small deterministic generator (xorshift), so failures reproduce.
    struct Gen(u64);

    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        /// Empty half the time, else a mix of plain text, characters that
        /// need escapes, and multi-byte UTF-8.
        fn text(&mut self) -> String {
            const PIECES: &[&str] = &[
                "a",
                "Zed",
                " ",
                "\"",
                "\\",
                "/",
                "\n",
                "\r",
                "\t",
                "\u{8}",
                "\u{c}",
                "\u{0}",
                "\u{1f}",
                "\u{7f}",
                "é",
                "日本",
                "🎲",
                "{\"k\":[1,2]}",
                "<tag>",
                "'",
            ];
            if self.below(2) == 0 {
                return String::new();
            }
            (0..self.below(6) + 1)
                .map(|_| PIECES[self.below(PIECES.len() as u64) as usize])
                .collect()
        }

        fn time(&mut self) -> i64 {
            MIN_SECONDS + (self.next() % (MAX_SECONDS - MIN_SECONDS + 1) as u64) as i64
        }

        fn user(&mut self) -> User {
            // Often the same second twice, as a user never updated.
            let create_time = self.time();
            let update_time = match self.below(2) {
                0 => create_time,
                _ => self.time(),
            };
            User {
                id: Uuid::from_u64_pair(self.next(), self.next()),
                username: self.text(),
                display_name: self.text(),
                avatar_url: self.text(),
                lang_tag: self.text(),
                location: self.text(),
                timezone: self.text(),
                metadata: self.text(),
                facebook_id: self.text(),
                google_id: self.text(),
                gamecenter_id: self.text(),
                steam_id: self.text(),
                facebook_instant_game_id: self.text(),
                apple_id: self.text(),
                edge_count: match self.below(4) {
                    0 => 0,
                    1 => i32::MAX,
                    2 => i32::MIN,
                    _ => self.next() as i32,
                },
                online: self.below(2) == 0,
                create_time,
                update_time,
            }
        }

        fn page(&mut self, friends: usize) -> FriendPage {
            FriendPage {
                friends: (0..friends)
                    .map(|_| Friend {
                        user: self.user(),
                        state: FriendState::from_i64(self.below(4) as i64).unwrap(),
                        update_time: self.time(),
                        metadata: self.text(),
                        position: self.next() as i64,
                    })
                    .collect(),
                cursor: match self.below(3) {
                    0 => None,
                    1 => Some(String::new()),
                    _ => Some(self.text()),
                },
            }
        }
    }

    #[test]
    fn friend_lists_match_the_wire_types_byte_for_byte() {
        let mut g = Gen(0x5eed_cafe_f00d_d00d);
        for case in 0..2000 {
            let page = g.page(case % 5);
            let ours = friend_list(&page).unwrap();
            let theirs = through_wire_types(&page).unwrap();
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                String::from_utf8(theirs).unwrap(),
                "case {case}: {page:?}"
            );
        }
    }

    #[test]
    fn an_empty_list_is_an_empty_object() {
        assert_eq!(friend_list(&FriendPage::default()).unwrap(), b"{}");
    }

    #[test]
    fn every_control_character_escapes_as_serde_json_does() {
        let all: String = (0u8..0x80).map(char::from).collect();
        let mut ours = Vec::new();
        write_str(&mut ours, &all);
        assert_eq!(ours, serde_json::to_vec(&all).unwrap());
    }

    #[test]
    fn timestamps_match_protojson_at_the_edges_and_between() {
        let mut g = Gen(42);
        let edges = [
            MIN_SECONDS,
            MIN_SECONDS + 86_399,
            -1,
            0,
            951_782_400,   // 2000-02-29
            4_107_542_400, // 2100-03-01
            MAX_SECONDS - 86_400,
            MAX_SECONDS,
        ];
        // One writer throughout too, so the cached day and second are
        // checked against times before, after and on them (each time
        // twice: the second one comes from the cache).
        let mut w = Writer::with_capacity(0);
        let near = (0..2000).map(|i| 1_700_000_000 + i * 977);
        for s in edges
            .into_iter()
            .chain((0..20_000).map(|_| g.time()))
            .chain(near)
        {
            let theirs = Timestamp::from_unix_seconds(s).to_rfc3339().unwrap();
            assert_eq!(rfc3339(s).unwrap(), theirs, "{s}");
            for _ in 0..2 {
                w.out.clear();
                w.timestamp(s).unwrap();
                assert_eq!(w.out, format!("\"{theirs}\"").into_bytes(), "{s}");
            }
        }
    }

    #[test]
    fn times_outside_protojson_fail_as_the_wire_types_do() {
        for s in [MIN_SECONDS - 1, MAX_SECONDS + 1, i64::MIN, i64::MAX] {
            assert_eq!(rfc3339(s), Err(OutOfRange(s)));
            assert!(Timestamp::from_unix_seconds(s).to_rfc3339().is_err());
            let mut page = Gen(7).page(1);
            page.friends[0].user.create_time = s;
            assert!(friend_list(&page).is_err());
            assert!(through_wire_types(&page).is_err());
        }
    }
}
