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
/// the way to group it ([`Headers::lazy`]); it is grouped only when a module
/// reads `ctx.headers`. Most calls never do, and grouping every request's
/// headers (a string per name and value, a tree and their drop) was 2 to
/// 3 % of a Lua RPC over HTTP (BENCHMARKS.md).
#[derive(Clone, Default)]
pub struct Headers(Source);

#[derive(Clone, Default)]
enum Source {
    #[default]
    Empty,
    Grouped(BTreeMap<String, Vec<String>>),
    Lazy(Arc<dyn Fn() -> BTreeMap<String, Vec<String>> + Send + Sync>),
}

impl Headers {
    /// Headers grouped by `group` when a module first reads them.
    pub fn lazy(group: impl Fn() -> BTreeMap<String, Vec<String>> + Send + Sync + 'static) -> Self {
        Headers(Source::Lazy(Arc::new(group)))
    }

    /// The headers, grouped now if they were not yet.
    pub fn grouped(&self) -> Cow<'_, BTreeMap<String, Vec<String>>> {
        match &self.0 {
            Source::Empty => Cow::Owned(BTreeMap::new()),
            Source::Grouped(map) => Cow::Borrowed(map),
            Source::Lazy(group) => Cow::Owned(group()),
        }
    }

    /// Adds a header's values (after any it has), grouping the headers first.
    pub fn insert(&mut self, name: String, values: Vec<String>) {
        let mut map = self.grouped().into_owned();
        map.entry(name).or_default().extend(values);
        self.0 = Source::Grouped(map);
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
        let mut h = Headers::lazy(move || {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            BTreeMap::from([("Accept".to_owned(), vec!["a".to_owned()])])
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
}
