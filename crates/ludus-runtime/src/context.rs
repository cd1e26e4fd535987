//! The context of one call into a module: who calls, how, and from where.
//! Lua sees it as the `ctx` table with Nakama's field names.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Why a module function runs; `ctx.execution_mode` carries its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExecutionMode {
    #[default]
    Rpc,
    Before,
    After,
    RunOnce,
    Matchmaker,
    Shutdown,
    /// An authoritative match's callbacks.
    Match,
    /// A storage index filter deciding whether a written object is indexed.
    StorageIndexFilter,
    LeaderboardReset,
    TournamentEnd,
    TournamentReset,
    /// An event callback (`register_event*`).
    Event,
    /// A store's server notification about a purchase or subscription.
    PurchaseNotificationApple,
    SubscriptionNotificationApple,
    PurchaseNotificationGoogle,
    SubscriptionNotificationGoogle,
}

impl ExecutionMode {
    /// Nakama's name for the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionMode::Rpc => "rpc",
            ExecutionMode::Before => "before",
            ExecutionMode::After => "after",
            ExecutionMode::RunOnce => "run_once",
            ExecutionMode::Matchmaker => "matchmaker",
            ExecutionMode::Shutdown => "shutdown",
            ExecutionMode::Match => "match",
            ExecutionMode::StorageIndexFilter => "storage_index_filter",
            ExecutionMode::LeaderboardReset => "leaderboard_reset",
            ExecutionMode::TournamentEnd => "tournament_end",
            ExecutionMode::TournamentReset => "tournament_reset",
            ExecutionMode::Event => "event",
            ExecutionMode::PurchaseNotificationApple => "purchase_notification_apple",
            ExecutionMode::SubscriptionNotificationApple => "subscription_notification_apple",
            ExecutionMode::PurchaseNotificationGoogle => "purchase_notification_google",
            ExecutionMode::SubscriptionNotificationGoogle => "subscription_notification_google",
        }
    }
}

/// Everything a transport knows about a call; empty strings mean unknown.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    pub mode: ExecutionMode,
    /// The caller when the call carries a session; `None` for `http_key` calls.
    pub user_id: Option<String>,
    pub username: String,
    pub vars: BTreeMap<String, String>,
    /// Expiry of the caller's session token, UNIX seconds.
    pub session_expiry: i64,
    /// Set for calls arriving on a socket.
    pub session_id: Option<String>,
    pub lang: String,
    pub headers: Headers,
    pub query_params: BTreeMap<String, Vec<String>>,
    pub client_ip: String,
    pub client_port: String,
}

impl CallContext {
    pub fn new(mode: ExecutionMode) -> Self {
        CallContext {
            mode,
            ..Default::default()
        }
    }
}

/// A request's headers as modules see them: `{name = [value, …]}`, names in
/// the form Nakama's modules see (`X-Custom-Header`), each value of a
/// repeated header kept. A transport may hand over its own header map with
/// the way to walk it ([`Headers::lazy`]); it is grouped only when a module
/// reads `ctx.headers` (a Lua call's `ctx` keeps its pairs packed until
/// then, lua/ctx.rs). Most calls never do, and grouping every request's
/// headers (a string per name and value, a tree and their drop) was 2 to
/// 3 % of a Lua RPC over HTTP (BENCHMARKS.md).
#[derive(Clone, Default)]
pub struct Headers(Source);

/// Calls its argument with each header's name (as the transport has it,
/// lower case) and value bytes, in order.
type Visit = dyn Fn(&mut dyn FnMut(&str, &[u8])) + Send + Sync;

/// Appends a header's name, in the form modules see, to a buffer.
pub(crate) type WriteName<'a> = dyn Fn(&mut Vec<u8>) + 'a;

#[derive(Clone, Default)]
enum Source {
    #[default]
    Empty,
    Grouped(BTreeMap<String, Vec<String>>),
    Lazy(Arc<Visit>),
}

impl Headers {
    /// A transport's headers, which `visit` walks (each name as the
    /// transport has it, lower case, with its value's bytes), grouped only
    /// when a module first reads them: names take Nakama's form
    /// (`X-Custom-Header`), values their text, bytes that are not UTF-8
    /// replaced.
    pub fn lazy(visit: impl Fn(&mut dyn FnMut(&str, &[u8])) + Send + Sync + 'static) -> Self {
        Headers(Source::Lazy(Arc::new(visit)))
    }

    /// The headers, grouped now if they were not yet.
    pub fn grouped(&self) -> Cow<'_, BTreeMap<String, Vec<String>>> {
        match &self.0 {
            Source::Empty => Cow::Owned(BTreeMap::new()),
            Source::Grouped(map) => Cow::Borrowed(map),
            Source::Lazy(visit) => {
                let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
                visit(&mut |name, value| {
                    map.entry(canonical_header(name))
                        .or_default()
                        .push(header_text(value));
                });
                Cow::Owned(map)
            }
        }
    }

    /// Calls `f` with each header's name, in the form [`grouped`] gives
    /// it, and value bytes, in order; `f` gets a name as a writer of its
    /// bytes, so a transport's names take their form without a string each.
    ///
    /// [`grouped`]: Headers::grouped
    pub(crate) fn each(&self, f: &mut dyn FnMut(&WriteName<'_>, &[u8])) {
        match &self.0 {
            Source::Empty => {}
            Source::Grouped(map) => {
                for (name, values) in map {
                    for value in values {
                        f(
                            &|out| out.extend_from_slice(name.as_bytes()),
                            value.as_bytes(),
                        );
                    }
                }
            }
            Source::Lazy(visit) => {
                visit(&mut |name, value| f(&|out| write_canonical(name, out), value))
            }
        }
    }

    /// Adds a header's values (after any it has), grouping the headers first.
    pub fn insert(&mut self, name: String, values: Vec<String>) {
        let mut map = self.grouped().into_owned();
        map.entry(name).or_default().extend(values);
        self.0 = Source::Grouped(map);
    }
}

/// `x-custom-header` → `X-Custom-Header`, the form Nakama's modules see:
/// the first letter and each letter after a `-` upper-cased.
pub(crate) fn canonical_header(name: &str) -> String {
    let mut out = Vec::with_capacity(name.len());
    write_canonical(name, &mut out);
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Appends `name` in [`canonical_header`]'s form (ASCII letters change, so
/// the bytes stay UTF-8 if they were).
fn write_canonical(name: &str, out: &mut Vec<u8>) {
    let mut start = true;
    for &b in name.as_bytes() {
        out.push(if start { b.to_ascii_uppercase() } else { b });
        start = b == b'-';
    }
}

/// A header's value as modules see it: its text, with any bytes that are
/// not UTF-8 replaced (checked whole first: the lossy walk cost more).
pub(crate) fn header_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

impl From<BTreeMap<String, Vec<String>>> for Headers {
    fn from(map: BTreeMap<String, Vec<String>>) -> Self {
        Headers(Source::Grouped(map))
    }
}

impl std::fmt::Debug for Headers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.grouped().iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_group_when_read_and_take_inserts() {
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = calls.clone();
        let mut h = Headers::lazy(move |visit| {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            visit("accept", b"a");
        });
        assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 0);
        assert_eq!(h.grouped()["Accept"], ["a"]);
        h.insert("Accept".into(), vec!["b".into()]);
        h.insert("X-New".into(), vec![]);
        assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 2);
        let grouped = h.grouped();
        assert_eq!(grouped["Accept"], ["a", "b"]);
        assert!(grouped["X-New"].is_empty());
        assert!(Headers::default().grouped().is_empty());
        assert_eq!(format!("{h:?}"), r#"{"Accept": ["a", "b"], "X-New": []}"#);
    }

    /// `each` gives the names and values `grouped` has, from either source,
    /// values that are not UTF-8 as their bytes.
    #[test]
    fn each_gives_what_grouped_has() {
        let lazy = Headers::lazy(|visit| {
            visit("x-custom-header", b"one");
            visit("accept", b"\xffa");
            visit("x-custom-header", b"two");
        });
        // Each pair `each` gives, the name written out.
        let pairs = |h: &Headers| {
            let mut seen = Vec::new();
            h.each(&mut |name, value| {
                let mut n = Vec::new();
                name(&mut n);
                seen.push((String::from_utf8(n).unwrap(), value.to_vec()));
            });
            seen
        };
        assert_eq!(
            pairs(&lazy),
            [
                ("X-Custom-Header".to_owned(), b"one".to_vec()),
                ("Accept".to_owned(), b"\xffa".to_vec()),
                ("X-Custom-Header".to_owned(), b"two".to_vec()),
            ]
        );
        let grouped = lazy.grouped();
        assert_eq!(grouped["X-Custom-Header"], ["one", "two"]);
        assert_eq!(grouped["Accept"], ["\u{fffd}a"]);

        let given = Headers::from(BTreeMap::from([(
            "x-as-given".to_owned(),
            vec!["v".to_owned(), String::new()],
        )]));
        assert_eq!(
            pairs(&given),
            [
                ("x-as-given".to_owned(), b"v".to_vec()),
                ("x-as-given".to_owned(), Vec::new()),
            ]
        );
    }

    #[test]
    fn header_names_take_nakamas_form() {
        for (name, want) in [
            ("x-custom-header", "X-Custom-Header"),
            ("content-type", "Content-Type"),
            ("host", "Host"),
            ("x--double", "X--Double"),
            ("-lead", "-Lead"),
            ("trail-", "Trail-"),
            ("x-1st", "X-1st"),
            ("", ""),
        ] {
            assert_eq!(canonical_header(name), want, "{name}");
        }
    }
}
