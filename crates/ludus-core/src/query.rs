//! The query language of match listing, the matchmaker and storage search
//! indexes: the subset of
//! Nakama's query strings (Bleve/Bluge syntax) that its users write against
//! JSON documents, evaluated directly on a `serde_json::Value` instead of a
//! search index.
//!
//! ```text
//! +label.mode:ranked -label.region:asia label.skill:>=10^2 properties.name:"two words"
//! ```
//!
//! - `+field:value` must match, `-field:value` must not, a term without a
//!   prefix should match;
//! - values: a word (exact, case-sensitive, as Nakama's keyword analyzer),
//!   a quoted phrase (exact), a number (equal as a number, or as the same
//!   text), `true`/`false` (also Bluge's `T`/`F`), a wildcard word with `*`
//!   and `?`, or a numeric range `>5`, `>=5`, `<5`, `<=5`;
//! - `term^2` multiplies a term's score; `*` alone, or an empty query,
//!   matches everything.
//!
//! Field paths are dotted into the document (`label.mode` is
//! `doc["label"]["mode"]`); an array anywhere on the path matches when any
//! of its elements does, as Bluge indexes every element under the same path.
//!
//! Clauses combine as Bluge's boolean query: every must clause has to
//! match and no must-not clause may; should clauses add to the score, and
//! when there is no must clause at least one of them has to match. A query
//! of only must-not clauses matches every other document. The score is the
//! sum of the boosts of the matched must and should clauses (Nakama scores
//! every term with a constant 1 times its boost).
//!
//! Unlike Nakama, a term without a field (`europe`), a fuzzy term (`~`), a
//! regular expression (`/re/`) and a date range are parse errors that say
//! so; in Nakama they parse but never match anything useful.

use serde_json::Value;

/// Longest query, in bytes.
pub const MAX_QUERY_BYTES: usize = 4096;
/// Most terms in one query.
pub const MAX_QUERY_TERMS: usize = 64;

/// A query that failed to parse: where, and what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("query parse error at {position}: {message}")]
pub struct QueryError {
    /// Byte offset in the query text.
    pub position: usize,
    pub message: String,
}

fn err<T>(position: usize, message: impl Into<String>) -> Result<T, QueryError> {
    Err(QueryError {
        position,
        message: message.into(),
    })
}

/// A parsed query, ready to score documents.
#[derive(Debug, Clone)]
pub struct Query {
    match_all: bool,
    must: Vec<Term>,
    should: Vec<Term>,
    must_not: Vec<Term>,
}

#[derive(Debug, Clone)]
struct Term {
    /// The dotted field, split; empty for a bare `*`.
    path: Vec<Box<str>>,
    test: Test,
    boost: f64,
}

#[derive(Debug, Clone)]
enum Test {
    /// Any document (a bare `*` term).
    Any,
    /// Exact text; `true`/`T` and `false`/`F` also match JSON booleans.
    Text(String),
    /// A number: equal as a number, or the same text.
    Number { text: String, value: f64 },
    /// A word with `*` (any run) and `?` (one character).
    Wildcard(String),
    /// A numeric range; `None` is unbounded.
    Range {
        min: Option<(f64, bool)>,
        max: Option<(f64, bool)>,
    },
}

impl Query {
    /// Parses a query string; empty or `*` matches everything.
    pub fn parse(text: &str) -> Result<Query, QueryError> {
        if text.len() > MAX_QUERY_BYTES {
            return err(
                MAX_QUERY_BYTES,
                format!(
                    "query is {} bytes long, the most is {MAX_QUERY_BYTES}",
                    text.len()
                ),
            );
        }
        let trimmed = text.trim();
        if trimmed.is_empty() || trimmed == "*" {
            return Ok(Query::match_all());
        }
        let tokens = lex(text)?;
        Parser {
            tokens,
            at: 0,
            end: text.len(),
        }
        .parse()
    }

    /// The query that matches every document with score 1.
    /// Whether scores differ between matching documents (the query has
    /// should clauses); without, every match scores the same and a listing
    /// can stop at its limit.
    pub fn ranks(&self) -> bool {
        !self.should.is_empty()
    }

    pub fn match_all() -> Query {
        Query {
            match_all: true,
            must: Vec::new(),
            should: Vec::new(),
            must_not: Vec::new(),
        }
    }

    /// `Some(score)` when `doc` matches (higher = better), `None` otherwise.
    pub fn score(&self, doc: &Value) -> Option<f64> {
        if self.match_all {
            return Some(1.0);
        }
        if self.must_not.iter().any(|t| t.matches(doc)) {
            return None;
        }
        let mut score = 0.0;
        for t in &self.must {
            if !t.matches(doc) {
                return None;
            }
            score += t.boost;
        }
        let mut any_should = false;
        for t in &self.should {
            if t.matches(doc) {
                any_should = true;
                score += t.boost;
            }
        }
        if self.must.is_empty() {
            if self.should.is_empty() {
                // Only must-not clauses: everything else matches, score 1.
                return Some(1.0);
            }
            if !any_should {
                return None;
            }
        }
        Some(score)
    }

    /// True when `doc` matches.
    pub fn matches(&self, doc: &Value) -> bool {
        self.score(doc).is_some()
    }
}

impl Term {
    fn matches(&self, doc: &Value) -> bool {
        if let Test::Any = self.test {
            return true;
        }
        any_leaf(doc, &self.path, &mut |v| self.test.accepts(v))
    }
}

impl Test {
    fn accepts(&self, v: &Value) -> bool {
        match (self, v) {
            (Test::Any, _) => true,
            (Test::Text(t), Value::String(s)) => t == s,
            (Test::Text(t), Value::Bool(b)) => {
                if *b {
                    t == "true" || t == "T"
                } else {
                    t == "false" || t == "F"
                }
            }
            (Test::Number { text, .. }, Value::String(s)) => text == s,
            (Test::Number { value, .. }, Value::Number(n)) => n.as_f64() == Some(*value),
            (Test::Wildcard(p), Value::String(s)) => {
                // Bytes when both are ASCII (no allocation), else characters.
                if p.is_ascii() && s.is_ascii() {
                    glob(p.as_bytes(), s.as_bytes(), b'*', b'?')
                } else {
                    let (p, s): (Vec<char>, Vec<char>) = (p.chars().collect(), s.chars().collect());
                    glob(&p, &s, '*', '?')
                }
            }
            (Test::Range { min, max }, Value::Number(n)) => {
                let Some(x) = n.as_f64() else { return false };
                let above = match min {
                    None => true,
                    Some((m, true)) => x >= *m,
                    Some((m, false)) => x > *m,
                };
                let below = match max {
                    None => true,
                    Some((m, true)) => x <= *m,
                    Some((m, false)) => x < *m,
                };
                above && below
            }
            _ => false,
        }
    }
}

/// Calls `f` on every value at `path` (arrays on the way and at the end
/// are flattened) until it answers true.
fn any_leaf(v: &Value, path: &[Box<str>], f: &mut dyn FnMut(&Value) -> bool) -> bool {
    match v {
        Value::Array(items) => items.iter().any(|item| any_leaf(item, path, f)),
        _ => match path.split_first() {
            None => f(v),
            Some((key, rest)) => match v {
                Value::Object(map) => map
                    .get(&**key)
                    .is_some_and(|child| any_leaf(child, rest, f)),
                _ => false,
            },
        },
    }
}

/// `any` (`*`) matches any run of characters, `one` (`?`) exactly one.
fn glob<T: Copy + PartialEq>(pattern: &[T], text: &[T], any: T, one: T) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == one || pattern[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == any {
            star = Some((p, t));
            p += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|c| *c == any)
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Str(String),
    Phrase(String),
    Num(String),
    Plus,
    Minus,
    Colon,
    Greater,
    Less,
    Equal,
    Boost(String),
    Tilde,
}

/// Characters a backslash may escape (Bleve's reserved set); before any
/// other character the backslash is kept.
const RESERVED: &str = "+-=&|><!(){}[]^\"~*?:\\/ ";

fn escaped(c: char, buf: &mut String) {
    if !RESERVED.contains(c) {
        buf.push('\\');
    }
    buf.push(c);
}

fn lex(text: &str) -> Result<Vec<(usize, Tok)>, QueryError> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let single = match c {
            '+' => Some(Tok::Plus),
            '-' => Some(Tok::Minus),
            ':' => Some(Tok::Colon),
            '>' => Some(Tok::Greater),
            '<' => Some(Tok::Less),
            '=' => Some(Tok::Equal),
            _ => None,
        };
        if let Some(tok) = single {
            chars.next();
            out.push((start, tok));
            continue;
        }
        match c {
            '"' => {
                chars.next();
                let mut buf = String::new();
                let mut closed = false;
                while let Some((_, c)) = chars.next() {
                    match c {
                        '"' => {
                            closed = true;
                            break;
                        }
                        '\\' => match chars.next() {
                            Some((_, e)) => escaped(e, &mut buf),
                            None => break,
                        },
                        c => buf.push(c),
                    }
                }
                if !closed {
                    return err(start, "unterminated quote: close the phrase with `\"`");
                }
                out.push((start, Tok::Phrase(buf)));
            }
            '^' | '~' => {
                chars.next();
                let mut buf = String::new();
                while let Some(&(_, c)) = chars.peek() {
                    if c.is_whitespace() {
                        break;
                    }
                    chars.next();
                    if c == '\\' {
                        match chars.next() {
                            Some((_, e)) => escaped(e, &mut buf),
                            None => break,
                        }
                    } else {
                        buf.push(c);
                    }
                }
                if c == '~' {
                    out.push((start, Tok::Tilde));
                } else {
                    if buf.is_empty() {
                        buf.push('1');
                    }
                    out.push((start, Tok::Boost(buf)));
                }
            }
            _ => {
                // A word: a number while it is digits with at most one dot.
                let mut buf = String::new();
                let mut number = true;
                let mut seen_dot = false;
                while let Some(&(_, c)) = chars.peek() {
                    if c.is_whitespace() || c == ':' || c == '^' || c == '~' {
                        break;
                    }
                    chars.next();
                    if c == '\\' {
                        number = false;
                        match chars.next() {
                            Some((_, e)) => escaped(e, &mut buf),
                            None => buf.push('\\'),
                        }
                        continue;
                    }
                    if c.is_ascii_digit() {
                    } else if c == '.' && !seen_dot && !buf.is_empty() {
                        seen_dot = true;
                    } else {
                        number = false;
                    }
                    buf.push(c);
                }
                let starts_with_digit = buf.starts_with(|c: char| c.is_ascii_digit());
                if number && starts_with_digit {
                    out.push((start, Tok::Num(buf)));
                } else {
                    out.push((start, Tok::Str(buf)));
                }
            }
        }
    }
    Ok(out)
}

#[derive(Clone, Copy)]
enum Occur {
    Must,
    Should,
    MustNot,
}

struct Parser {
    tokens: Vec<(usize, Tok)>,
    at: usize,
    end: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.at).map(|(_, t)| t)
    }

    fn pos(&self) -> usize {
        self.tokens.get(self.at).map_or(self.end, |(p, _)| *p)
    }

    fn next(&mut self) -> Option<(usize, Tok)> {
        let t = self.tokens.get(self.at).cloned();
        if t.is_some() {
            self.at += 1;
        }
        t
    }

    fn parse(mut self) -> Result<Query, QueryError> {
        let mut q = Query {
            match_all: false,
            must: Vec::new(),
            should: Vec::new(),
            must_not: Vec::new(),
        };
        let mut terms = 0;
        while self.peek().is_some() {
            let start = self.pos();
            terms += 1;
            if terms > MAX_QUERY_TERMS {
                return err(
                    start,
                    format!("too many terms, a query may have at most {MAX_QUERY_TERMS}"),
                );
            }
            let occur = match self.peek() {
                Some(Tok::Plus) => {
                    self.next();
                    Occur::Must
                }
                Some(Tok::Minus) => {
                    self.next();
                    Occur::MustNot
                }
                _ => Occur::Should,
            };
            let mut term = self.term()?;
            if let Some(Tok::Boost(_)) = self.peek() {
                let Some((at, Tok::Boost(b))) = self.next() else {
                    unreachable!("peeked a boost")
                };
                match b.parse::<f64>() {
                    Ok(v) if v.is_finite() => term.boost = v,
                    _ => return err(at, format!("invalid boost `^{b}`: write a number, e.g. ^2")),
                }
            }
            match occur {
                Occur::Must => q.must.push(term),
                Occur::Should => q.should.push(term),
                Occur::MustNot => q.must_not.push(term),
            }
        }
        Ok(q)
    }

    fn term(&mut self) -> Result<Term, QueryError> {
        let at = self.pos();
        let field = match self.next() {
            Some((_, Tok::Str(s))) if s == "*" && self.peek() != Some(&Tok::Colon) => {
                return Ok(Term {
                    path: Vec::new(),
                    test: Test::Any,
                    boost: 1.0,
                });
            }
            Some((_, Tok::Str(s))) => s,
            Some((_, Tok::Num(s) | Tok::Phrase(s))) => {
                return err(
                    at,
                    format!("`{s}` has no field: write field:value, e.g. label.mode:{s:?}"),
                );
            }
            Some((_, Tok::Boost(_))) => return err(at, "a boost `^` must follow a term"),
            Some((_, Tok::Tilde)) => return err(at, "fuzzy terms (`~`) are not supported"),
            Some(_) => return err(at, "expected a term such as +label.mode:ranked"),
            None => return err(at, "expected a term after the prefix"),
        };
        match self.peek() {
            Some(Tok::Colon) => {
                self.next();
            }
            Some(Tok::Tilde) => return err(self.pos(), "fuzzy terms (`~`) are not supported"),
            _ => {
                return err(
                    at,
                    format!("`{field}` has no field: write field:value, e.g. label.mode:{field}"),
                );
            }
        }
        if field.is_empty() || field.split('.').any(str::is_empty) {
            return err(
                at,
                format!("invalid field name `{field}`: write dotted names like label.mode"),
            );
        }
        let path: Vec<Box<str>> = field.split('.').map(Box::from).collect();
        let value_at = self.pos();
        let missing = || format!("expected a value after `{field}:`");
        let test = match self.next() {
            None => return err(value_at, missing()),
            Some((_, Tok::Str(s))) => {
                if self.peek() == Some(&Tok::Tilde) {
                    return err(self.pos(), "fuzzy terms (`~`) are not supported");
                }
                if s.len() > 1 && s.starts_with('/') && s.ends_with('/') {
                    return err(value_at, "regular expressions are not supported");
                }
                if s.contains(['*', '?']) {
                    Test::Wildcard(s)
                } else {
                    Test::Text(s)
                }
            }
            Some((_, Tok::Phrase(s))) => Test::Text(s),
            Some((_, Tok::Num(s))) => number(value_at, s, false)?,
            Some((_, Tok::Minus)) => match self.next() {
                Some((_, Tok::Num(s))) => number(value_at, s, true)?,
                _ => {
                    return err(value_at, format!("expected a number after `{field}:-`"));
                }
            },
            Some((_, op @ (Tok::Greater | Tok::Less))) => {
                let inclusive = if self.peek() == Some(&Tok::Equal) {
                    self.next();
                    true
                } else {
                    false
                };
                let num_at = self.pos();
                let negative = if self.peek() == Some(&Tok::Minus) {
                    self.next();
                    true
                } else {
                    false
                };
                let bound = match self.next() {
                    Some((_, Tok::Num(s))) => parse_f64(num_at, &s, negative)?,
                    Some((_, Tok::Phrase(_))) => {
                        return err(num_at, "date ranges are not supported, compare numbers");
                    }
                    _ => {
                        return err(
                            num_at,
                            format!("expected a number in the range after `{field}:`"),
                        );
                    }
                };
                if op == Tok::Greater {
                    Test::Range {
                        min: Some((bound, inclusive)),
                        max: None,
                    }
                } else {
                    Test::Range {
                        min: None,
                        max: Some((bound, inclusive)),
                    }
                }
            }
            Some(_) => return err(value_at, missing()),
        };
        Ok(Term {
            path,
            test,
            boost: 1.0,
        })
    }
}

fn parse_f64(at: usize, s: &str, negative: bool) -> Result<f64, QueryError> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(if negative { -v } else { v }),
        _ => err(at, format!("invalid number `{s}`")),
    }
}

fn number(at: usize, s: String, negative: bool) -> Result<Test, QueryError> {
    let value = parse_f64(at, &s, negative)?;
    let text = if negative { format!("-{s}") } else { s };
    Ok(Test::Number { text, value })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn doc() -> Value {
        json!({
            "label": {
                "mode": "ranked",
                "region": "europe",
                "skill": 12.5,
                "open": true,
                "closed": false,
                "name": "two words",
                "tags": ["fast", "night"],
                "levels": [3, 7],
                "players": [{"name": "ann"}, {"name": "bob"}],
                "count": "5"
            }
        })
    }

    fn score(q: &str) -> Option<f64> {
        Query::parse(q).unwrap().score(&doc())
    }

    fn parse_err(q: &str) -> QueryError {
        Query::parse(q).unwrap_err()
    }

    #[test]
    fn empty_and_star_match_everything() {
        for q in ["", "   ", "*", " * "] {
            assert_eq!(score(q), Some(1.0), "{q:?}");
            assert_eq!(Query::parse(q).unwrap().score(&json!(null)), Some(1.0));
        }
        assert_eq!(Query::match_all().score(&json!({})), Some(1.0));
    }

    #[test]
    fn must_terms_all_have_to_match() {
        assert_eq!(score("+label.mode:ranked"), Some(1.0));
        assert_eq!(score("+label.mode:ranked +label.region:europe"), Some(2.0));
        assert_eq!(score("+label.mode:ranked +label.region:asia"), None);
        assert_eq!(score("+label.mode:Ranked"), None, "case-sensitive");
        assert_eq!(score("+label.missing:x"), None);
        assert_eq!(score("+label:ranked"), None, "an object is not a value");
    }

    #[test]
    fn must_not_terms_exclude() {
        assert_eq!(score("+label.mode:ranked -label.region:asia"), Some(1.0));
        assert_eq!(score("+label.mode:ranked -label.region:europe"), None);
        // Only must-not clauses: everything else matches.
        assert_eq!(score("-label.region:asia"), Some(1.0));
        assert_eq!(score("-label.region:europe"), None);
    }

    #[test]
    fn only_should_clauses_rank() {
        assert!(!Query::parse("+label.a:1 -label.b:2").unwrap().ranks());
        assert!(Query::parse("+label.a:1 label.b:2").unwrap().ranks());
        assert!(Query::parse("label.b:2").unwrap().ranks());
        assert!(!Query::match_all().ranks());
    }

    #[test]
    fn should_terms_add_score_or_are_required_alone() {
        // With a must clause, should clauses only add to the score.
        assert_eq!(score("+label.mode:ranked label.region:asia"), Some(1.0));
        assert_eq!(score("+label.mode:ranked label.region:europe"), Some(2.0));
        // Without one, at least one should clause must match.
        assert_eq!(score("label.region:asia label.mode:casual"), None);
        assert_eq!(score("label.region:asia label.mode:ranked"), Some(1.0));
        assert_eq!(score("label.region:europe label.mode:ranked"), Some(2.0));
        assert_eq!(score("label.region:europe -label.mode:ranked"), None);
    }

    #[test]
    fn numbers_match_numbers_and_their_text() {
        assert_eq!(score("+label.skill:12.5"), Some(1.0));
        assert_eq!(score("+label.skill:12"), None);
        assert_eq!(score("+label.count:5"), Some(1.0), "a string \"5\"");
        assert_eq!(score("+label.levels:7"), Some(1.0), "array element");
        let q = Query::parse("+x:-3").unwrap();
        assert!(q.matches(&json!({"x": -3})));
        assert!(q.matches(&json!({"x": "-3"})));
        assert!(!q.matches(&json!({"x": 3})));
    }

    #[test]
    fn numeric_ranges() {
        assert_eq!(score("+label.skill:>12"), Some(1.0));
        assert_eq!(score("+label.skill:>12.5"), None);
        assert_eq!(score("+label.skill:>=12.5"), Some(1.0));
        assert_eq!(score("+label.skill:<12.5"), None);
        assert_eq!(score("+label.skill:<=12.5"), Some(1.0));
        assert_eq!(score("+label.skill:<13 +label.skill:>-1"), Some(2.0));
        assert_eq!(score("+label.skill:>=-20.5"), Some(1.0));
        assert_eq!(
            score("+label.mode:>1"),
            None,
            "strings are not in numeric ranges"
        );
        assert_eq!(score("+label.levels:>5"), Some(1.0), "any element");
        assert_eq!(score("+label.levels:>7"), None);
    }

    #[test]
    fn quoted_phrases_match_exactly() {
        assert_eq!(score("+label.name:\"two words\""), Some(1.0));
        assert_eq!(score("+label.name:\"two\""), None);
        assert_eq!(score("+label.name:two"), None);
        let q = Query::parse(r#"+x:"say \"hi\"""#).unwrap();
        assert!(q.matches(&json!({"x": "say \"hi\""})));
    }

    #[test]
    fn booleans() {
        assert_eq!(score("+label.open:true"), Some(1.0));
        assert_eq!(score("+label.open:T"), Some(1.0));
        assert_eq!(score("+label.open:false"), None);
        assert_eq!(score("+label.closed:false"), Some(1.0));
        assert_eq!(score("+label.closed:F"), Some(1.0));
        assert_eq!(score("-label.open:true"), None);
    }

    #[test]
    fn arrays_match_any_element() {
        assert_eq!(score("+label.tags:night"), Some(1.0));
        assert_eq!(score("+label.tags:day"), None);
        assert_eq!(score("+label.players.name:bob"), Some(1.0));
        assert_eq!(score("-label.players.name:bob"), None);
    }

    #[test]
    fn wildcards() {
        assert_eq!(score("+label.mode:ran*"), Some(1.0));
        assert_eq!(score("+label.mode:r?nked"), Some(1.0));
        assert_eq!(score("+label.mode:*x*"), None);
        assert_eq!(score("+label.missing:*"), None);
        assert_eq!(score("+label.mode:*"), Some(1.0));
        assert!(glob(b"a*c", b"abbc", b'*', b'?'));
        assert!(!glob(b"a*c", b"abb", b'*', b'?'));
        assert!(glob(b"*a?c*", b"xxabcyy", b'*', b'?'));
        let q = Query::parse("+x:h?llo*").unwrap();
        assert!(
            q.matches(&json!({"x": "héllo wörld"})),
            "? is one character"
        );
        assert!(!q.matches(&json!({"x": "hllo"})));
    }

    #[test]
    fn boosts_change_only_the_score() {
        assert_eq!(score("+label.mode:ranked^3"), Some(3.0));
        assert_eq!(
            score("+label.mode:ranked label.region:europe^2.5"),
            Some(3.5)
        );
        assert_eq!(score("+label.mode:ranked label.region:asia^10"), Some(1.0));
        assert_eq!(score("+label.mode:casual^5"), None);
        assert_eq!(score("+label.mode:ranked^"), Some(1.0), "empty boost is 1");
    }

    #[test]
    fn escapes() {
        let q = Query::parse(r"+x:a\:b").unwrap();
        assert!(q.matches(&json!({"x": "a:b"})));
        let q = Query::parse(r"+x:a\ b").unwrap();
        assert!(q.matches(&json!({"x": "a b"})));
        let q = Query::parse(r"+x:\-3").unwrap();
        assert!(q.matches(&json!({"x": "-3"})), "an escaped sign makes text");
        assert!(!q.matches(&json!({"x": -3})));
    }

    #[test]
    fn parse_errors_say_where_and_what() {
        let e = parse_err("+label.mode:");
        assert_eq!(e.position, 12);
        assert_eq!(
            e.to_string(),
            "query parse error at 12: expected a value after `label.mode:`"
        );
        assert_eq!(parse_err("+label.mode:\"open").position, 12);
        assert!(
            parse_err("+label.mode:\"open")
                .message
                .contains("unterminated quote")
        );
        assert!(parse_err("europe").message.contains("has no field"));
        assert!(parse_err("+5").message.contains("has no field"));
        assert!(parse_err("+\"a b\"").message.contains("has no field"));
        assert!(parse_err("+").message.contains("expected a term"));
        assert!(
            parse_err("+label.mode:ranked^x")
                .message
                .contains("invalid boost")
        );
        assert!(parse_err("label.mode:rankd~1").message.contains("fuzzy"));
        assert!(
            parse_err("label.mode:/r.*/")
                .message
                .contains("regular expressions")
        );
        assert!(
            parse_err("label.t:>\"2020-01-01\"")
                .message
                .contains("date ranges")
        );
        assert!(
            parse_err("label.n:>abc")
                .message
                .contains("expected a number")
        );
        assert!(parse_err("label.n:>").message.contains("expected a number"));
        assert!(
            parse_err("label.n:-abc")
                .message
                .contains("expected a number")
        );
        assert!(
            parse_err("label..n:1")
                .message
                .contains("invalid field name")
        );
        assert!(parse_err(":1").message.contains("expected a term"));
        assert!(
            parse_err("a:b:c").message.contains("has no field")
                || parse_err("a:b:c").message.contains("expected")
        );
        assert!(parse_err("^2").message.contains("boost"));
        assert_eq!(parse_err("+a:b -c:").position, 8);
    }

    #[test]
    fn limits_have_clear_errors() {
        let long = format!("+a:{}", "x".repeat(MAX_QUERY_BYTES));
        let e = parse_err(&long);
        assert!(e.message.contains("the most is 4096"), "{e}");
        let many = (0..=MAX_QUERY_TERMS)
            .map(|i| format!("a:{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        let e = parse_err(&many);
        assert!(e.message.contains("too many terms"), "{e}");
        let ok = (0..MAX_QUERY_TERMS)
            .map(|i| format!("a:{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(Query::parse(&ok).is_ok());
    }

    #[test]
    fn query_is_send_sync_clone() {
        fn check<T: Send + Sync + Clone + std::fmt::Debug>() {}
        check::<Query>();
    }

    proptest! {
        #[test]
        fn parse_never_panics(text in "\\PC{0,200}") {
            if let Ok(q) = Query::parse(&text) {
                let _ = q.score(&doc());
            }
        }

        #[test]
        fn parse_never_panics_on_query_like_input(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    "+", "-", ":", ">", "<", "=", "^", "~", "\"", "\\", " ", "*", "?",
                    "label", ".", "mode", "5", "2.5", "true", "x",
                ]),
                0..40,
            )
        ) {
            let text: String = parts.concat();
            if let Ok(q) = Query::parse(&text) {
                let _ = q.score(&doc());
            }
        }
    }
}
