//! The one rule for JSON and names that clients and modules store: what
//! every reader (REST, the socket, Lua, native modules) and both databases
//! accept, checked at each door where such a value enters storage (storage
//! objects, account, group, friend, wallet, ledger and leaderboard record
//! metadata, chat and notification content, wallet changesets).
//!
//! Plain JSON allows more than the readers do: nesting without bound (the
//! Lua runtime converts 64 levels), lone surrogate escapes and `\u0000`
//! (PostgreSQL's `jsonb` refuses both; Rust strings cannot hold the first),
//! numbers beyond a 64-bit float (serde_json refuses them, `jsonb` refuses
//! exponents past 16,383) and NUL in names (PostgreSQL text cannot hold it).
//! A value that passes here reads back equal everywhere; one that does not is
//! refused at the write with `InvalidArgument`, naming the problem and where
//! it is, as a path like `$.items[3].name`.
//!
//! The check scans the text once, allocating nothing unless it fails, and
//! keeps the text as given (a storage object's version is the hash of its
//! bytes).

use crate::error::ApiError;

/// Deepest nesting stored: the root value is level 1, so a value is refused
/// when something sits at level 65. The Lua runtime converts one level more.
pub const MAX_DEPTH: usize = 64;

/// Longest number literal stored. Any 64-bit float is written in 24
/// characters; long literals carry digits no reader keeps, and PostgreSQL
/// refuses those with more than 16,383 digits after the point.
pub const MAX_NUMBER_LEN: usize = 100;

/// Largest exponent written (`1e400`, `0e-400`), whatever the digits before
/// it: PostgreSQL refuses `0e-99999`, though it is a plain zero.
pub const MAX_EXPONENT: u32 = 400;

/// Longest path quoted in an error.
const MAX_PATH_SHOWN: usize = 200;

/// Checks `text` is JSON every reader accepts and that its root is an
/// object, as Nakama requires of every stored document. `what` names the
/// value in the error ("value", "group metadata", ...).
pub fn check_object(text: &str, what: &str) -> Result<(), ApiError> {
    let first = text.trim_start_matches([' ', '\t', '\n', '\r']).as_bytes();
    if first.first() != Some(&b'{') {
        return Err(ApiError::invalid(format!("{what} must be a json object")));
    }
    scan(text).map_err(|fault| fault.into_error(what, "must be a json object"))
}

/// Checks `text` is JSON every reader accepts, whatever its root.
pub fn check_value(text: &str, what: &str) -> Result<(), ApiError> {
    scan(text).map_err(|fault| fault.into_error(what, "is not valid json"))
}

fn scan(text: &str) -> Result<(), Fault<'_>> {
    let mut scan = Scanner {
        bytes: text.as_bytes(),
        text,
        pos: 0,
    };
    scan.value(1).and_then(|()| {
        scan.skip_space();
        if scan.pos == scan.bytes.len() {
            Ok(())
        } else {
            Err(Fault::new(Problem::Syntax(
                "unexpected text after the value",
            )))
        }
    })
}

/// Checks a stored name (collection, key, leaderboard id, changeset key):
/// no NUL character, and at most `max_chars` characters.
pub fn check_name(name: &str, what: &str, max_chars: usize) -> Result<(), ApiError> {
    if name.contains('\0') {
        return Err(ApiError::invalid(format!(
            "{what} must not contain a NUL character: remove it"
        )));
    }
    if name.chars().count() > max_chars {
        return Err(ApiError::invalid(format!(
            "{what} must be at most {max_chars} characters"
        )));
    }
    Ok(())
}

/// What is wrong with a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Problem {
    Syntax(&'static str),
    TooDeep,
    LoneSurrogate,
    NulInString,
    NulInKey,
    NumberOutOfRange,
    NumberTooLong,
}

/// One step of the path to a value.
#[derive(Debug, Clone, Copy)]
enum Step<'a> {
    /// An object member, by its key as written (escapes left as they are).
    Key(&'a str),
    Index(usize),
}

/// A problem and the path to it, filled in innermost first on the way out.
struct Fault<'a> {
    problem: Problem,
    path: Vec<Step<'a>>,
}

impl<'a> Fault<'a> {
    fn new(problem: Problem) -> Fault<'a> {
        Fault {
            problem,
            path: Vec::new(),
        }
    }

    fn at(mut self, step: Step<'a>) -> Fault<'a> {
        self.path.push(step);
        self
    }

    /// `malformed`: what to say of text that is not JSON at all.
    fn into_error(self, what: &str, malformed: &str) -> ApiError {
        let path = self.path_text();
        let message = match self.problem {
            Problem::Syntax(detail) => {
                format!("{what} {malformed}: {detail} at {path}")
            }
            Problem::TooDeep => format!(
                "{what} is nested deeper than {MAX_DEPTH} levels at {path}: store it with less nesting"
            ),
            Problem::LoneSurrogate => format!(
                "{what} holds a lone surrogate escape (\\ud800-\\udfff without its pair) at {path}: send valid unicode"
            ),
            Problem::NulInString => {
                format!("{what} holds a NUL character (\\u0000) in a string at {path}: remove it")
            }
            Problem::NulInKey => format!(
                "{what} holds a NUL character (\\u0000) in an object key at {path}: remove it"
            ),
            Problem::NumberOutOfRange => format!(
                "{what} holds a number outside the range of a 64-bit float at {path}: send a number between about 1e-308 and 1e308 in size, or 0, with an exponent of at most {MAX_EXPONENT}"
            ),
            Problem::NumberTooLong => format!(
                "{what} holds a number written with more than {MAX_NUMBER_LEN} characters at {path}: write it with fewer digits"
            ),
        };
        ApiError::invalid(message)
    }

    fn path_text(&self) -> String {
        let mut out = String::from("$");
        for step in self.path.iter().rev() {
            match step {
                Step::Index(i) => out.push_str(&format!("[{i}]")),
                Step::Key(k)
                    if !k.is_empty()
                        && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
                {
                    out.push('.');
                    out.push_str(k);
                }
                Step::Key(k) => {
                    out.push_str("[\"");
                    out.push_str(k);
                    out.push_str("\"]");
                }
            }
            if out.len() > MAX_PATH_SHOWN {
                let mut cut = MAX_PATH_SHOWN;
                while !out.is_char_boundary(cut) {
                    cut -= 1;
                }
                out.truncate(cut);
                out.push('…');
                break;
            }
        }
        out
    }
}

struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8, detail: &'static str) -> Result<(), Fault<'a>> {
        self.skip_space();
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(Fault::new(Problem::Syntax(detail)))
        }
    }

    /// A value at nesting `level` (the root is 1).
    fn value(&mut self, level: usize) -> Result<(), Fault<'a>> {
        if level > MAX_DEPTH {
            return Err(Fault::new(Problem::TooDeep));
        }
        self.skip_space();
        match self.peek() {
            Some(b'{') => self.object(level),
            Some(b'[') => self.array(level),
            Some(b'"') => self.string().map(|_| ()).map_err(Fault::new),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.word("true"),
            Some(b'f') => self.word("false"),
            Some(b'n') => self.word("null"),
            Some(_) => Err(Fault::new(Problem::Syntax("expected a value"))),
            None => Err(Fault::new(Problem::Syntax("unexpected end of text"))),
        }
    }

    fn word(&mut self, word: &'static str) -> Result<(), Fault<'a>> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(Fault::new(Problem::Syntax("expected a value")))
        }
    }

    fn object(&mut self, level: usize) -> Result<(), Fault<'a>> {
        self.pos += 1;
        self.skip_space();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.skip_space();
            if self.peek() != Some(b'"') {
                return Err(Fault::new(Problem::Syntax("expected an object key")));
            }
            let key = self.string().map_err(|p| {
                Fault::new(match p {
                    Problem::NulInString => Problem::NulInKey,
                    other => other,
                })
            })?;
            self.expect(b':', "expected ':' after an object key")
                .map_err(|f| f.at(Step::Key(key)))?;
            self.value(level + 1).map_err(|f| f.at(Step::Key(key)))?;
            self.skip_space();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => {
                    return Err(
                        Fault::new(Problem::Syntax("expected ',' or '}'")).at(Step::Key(key))
                    );
                }
            }
        }
    }

    fn array(&mut self, level: usize) -> Result<(), Fault<'a>> {
        self.pos += 1;
        self.skip_space();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        let mut index = 0;
        loop {
            self.value(level + 1)
                .map_err(|f| f.at(Step::Index(index)))?;
            self.skip_space();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => {
                    return Err(
                        Fault::new(Problem::Syntax("expected ',' or ']'")).at(Step::Index(index))
                    );
                }
            }
            index += 1;
        }
    }

    /// A string at the opening quote; returns its text as written.
    fn string(&mut self) -> Result<&'a str, Problem> {
        self.pos += 1;
        let start = self.pos;
        loop {
            match self.peek() {
                None => return Err(Problem::Syntax("unterminated string")),
                Some(b'"') => {
                    let raw = &self.text[start..self.pos];
                    self.pos += 1;
                    return Ok(raw);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    match self.peek() {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                            self.pos += 1
                        }
                        Some(b'u') => {
                            self.pos += 1;
                            self.unicode_escape()?;
                        }
                        _ => return Err(Problem::Syntax("invalid escape in a string")),
                    }
                }
                Some(0x00..=0x1f) => {
                    return Err(Problem::Syntax(
                        "control character in a string (it must be escaped)",
                    ));
                }
                Some(_) => self.pos += 1,
            }
        }
    }

    /// The four hex digits after `\u` (and the low half after a high
    /// surrogate).
    fn unicode_escape(&mut self) -> Result<(), Problem> {
        let unit = self.hex4()?;
        match unit {
            0 => Err(Problem::NulInString),
            0xD800..=0xDBFF => {
                if self.bytes[self.pos..].starts_with(b"\\u") {
                    self.pos += 2;
                    match self.hex4()? {
                        0xDC00..=0xDFFF => Ok(()),
                        _ => Err(Problem::LoneSurrogate),
                    }
                } else {
                    Err(Problem::LoneSurrogate)
                }
            }
            0xDC00..=0xDFFF => Err(Problem::LoneSurrogate),
            _ => Ok(()),
        }
    }

    fn hex4(&mut self) -> Result<u32, Problem> {
        let digits = self
            .bytes
            .get(self.pos..self.pos + 4)
            .ok_or(Problem::Syntax("unterminated unicode escape"))?;
        let mut unit = 0u32;
        for &d in digits {
            let v = (d as char)
                .to_digit(16)
                .ok_or(Problem::Syntax("invalid unicode escape"))?;
            unit = unit * 16 + v;
        }
        self.pos += 4;
        Ok(unit)
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<(), Fault<'a>> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let bad = || Fault::new(Problem::Syntax("malformed number"));
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(bad()),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(bad());
            }
        }
        let mantissa_end = self.pos;
        let mut exponent_too_large = false;
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            let digits_start = self.pos;
            if self.digits() == 0 {
                return Err(bad());
            }
            let written = self.text[digits_start..self.pos].trim_start_matches('0');
            exponent_too_large =
                written.len() > 3 || written.parse::<u32>().unwrap_or(0) > MAX_EXPONENT;
        }
        let literal = &self.text[start..self.pos];
        if literal.len() > MAX_NUMBER_LEN {
            return Err(Fault::new(Problem::NumberTooLong));
        }
        let n: f64 = literal.parse().map_err(|_| bad())?;
        // A literal that is not zero must not round to zero (underflow) or
        // to infinity (overflow).
        let nonzero = self.text[start..mantissa_end]
            .bytes()
            .any(|b| matches!(b, b'1'..=b'9'));
        if exponent_too_large || n.is_infinite() || (n == 0.0 && nonzero) {
            return Err(Fault::new(Problem::NumberOutOfRange));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> String {
        check_value(text, "value").unwrap_err().message.into_owned()
    }

    #[test]
    fn plain_json_passes() {
        for ok in [
            r#"{}"#,
            r#"{"a":[1,-2.5e10,0,0.0,-0,1E+3,true,false,null,"x\"\\\/\b\f\n\r\t\u00e9"]}"#,
            r#" { "k" : { "": [ [] , {} ] } } "#,
            r#"{"emoji":"\ud83d\ude00","raw":"é😀"}"#,
            "1e308",
            "5e-324",
            "-1.7976931348623157e308",
        ] {
            assert!(check_value(ok, "value").is_ok(), "{ok}");
        }
    }

    #[test]
    fn depth_is_bounded_at_64_levels() {
        let nest = |levels: usize| "[".repeat(levels - 1) + "1" + &"]".repeat(levels - 1);
        assert!(check_value(&nest(64), "value").is_ok());
        let message = refused(&nest(65));
        assert!(
            message.contains("nested deeper than 64 levels"),
            "{message}"
        );
        assert!(message.contains("$[0][0]"), "{message}");
    }

    #[test]
    fn surrogates_nul_and_numbers_are_refused_with_their_path() {
        let m = refused(r#"{"a":{"b c":["x","\ud800"]}}"#);
        assert!(m.contains("lone surrogate"), "{m}");
        assert!(
            m.ends_with(r#"at $.a["b c"][1]: send valid unicode"#),
            "{m}"
        );
        assert!(refused(r#"{"a":"\udc00"}"#).contains("lone surrogate"));
        assert!(refused(r#"{"a":"\ud800\u0041"}"#).contains("lone surrogate"));
        assert!(
            refused(r#"{"a":"x\u0000"}"#).contains("NUL character (\\u0000) in a string at $.a")
        );
        assert!(refused(r#"{"a\u0000":1}"#).contains("in an object key"));
        assert!(refused(r#"{"n":1e999999}"#).contains("outside the range"));
        assert!(refused(r#"{"n":-1e309}"#).contains("outside the range"));
        assert!(refused(r#"{"n":1e-400}"#).contains("outside the range"));
        assert!(refused(r#"{"n":0e-99999}"#).contains("outside the range"));
        assert!(check_value(r#"{"n":0e-400}"#, "value").is_ok());
        assert!(check_value(r#"{"n":1.5e-320}"#, "value").is_ok());
        let long = format!(r#"{{"n":1.{}}}"#, "0".repeat(200));
        assert!(refused(&long).contains("more than 100 characters"));
    }

    #[test]
    fn malformed_text_is_refused() {
        for bad in [
            "",
            "{",
            "{\"a\"}",
            "{\"a\":}",
            "[1,]",
            "01",
            "1.",
            "-",
            "\"\t\"",
            "{} x",
            "tru",
            "\"\\x\"",
            "\"\\u12\"",
            "{'a':1}",
        ] {
            assert!(refused(bad).contains("is not valid json"), "{bad:?}");
        }
    }

    #[test]
    fn objects_are_required_where_asked() {
        assert!(check_object(" {\"a\":1}", "group metadata").is_ok());
        let m = check_object("[1]", "group metadata").unwrap_err().message;
        assert_eq!(m, "group metadata must be a json object");
        let m = check_object("{not json", "value").unwrap_err().message;
        assert_eq!(
            m,
            "value must be a json object: expected an object key at $"
        );
    }

    #[test]
    fn names_refuse_nul_and_length() {
        assert!(check_name("saves", "collection", 128).is_ok());
        assert!(check_name("a\0b", "collection", 128).is_err());
        assert!(check_name(&"é".repeat(128), "key", 128).is_ok());
        assert!(check_name(&"é".repeat(129), "key", 128).is_err());
    }

    #[test]
    fn whatever_passes_is_read_by_serde_json() {
        for ok in [r#"{"a":"\ud83d\ude00","b":5e-324,"c":[[[]]]}"#, "-0.0e-5"] {
            check_value(ok, "value").unwrap();
            serde_json::from_str::<serde_json::Value>(ok).unwrap();
        }
    }
}
