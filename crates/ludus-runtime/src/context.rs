//! The context of one call into a module: who calls, how, and from where.
//! Lua sees it as the `ctx` table with Nakama's field names.

use std::collections::BTreeMap;

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
    pub headers: BTreeMap<String, Vec<String>>,
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
