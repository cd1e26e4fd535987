//! The `runtime.*` config section: where modules live and the limits they
//! run under, with its checks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ludus_runtime::RuntimeSettings;
use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

/// `runtime.*`: where modules live and the limits they run under.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RuntimeConfig {
    /// Folder of Lua modules; empty means `<data_dir>/modules`.
    pub path: String,
    /// Key that lets server-to-server callers use `/v2/rpc` without a session.
    pub http_key: String,
    /// `key=value` pairs modules read as `ctx.env`.
    pub env: Vec<String>,
    /// Lua VM threads; 0 means one per CPU core.
    pub lua_pool_size: usize,
    /// Most Lua VMs one VM thread runs: while a call waits on the server
    /// (storage, wallets…) the thread runs another VM's call. Made as needed.
    /// 0 means by the store ([`vms_per_thread_for`]).
    pub lua_vms_per_thread: usize,
    /// Calls that may wait for a VM when all are busy; more are refused.
    pub lua_pool_queue_size: usize,
    /// Longest a call waits for a VM before it is refused.
    pub lua_pool_timeout_ms: u64,
    /// VM instructions one Lua call may run before it is stopped.
    pub lua_instruction_budget: u64,
    /// Bytes one Lua VM may allocate, its modules included; 0 for no limit.
    pub lua_memory_limit_bytes: usize,
    /// Wall-clock milliseconds one Lua call (RPC, hook, module loading) may
    /// run before it is stopped.
    pub lua_call_timeout_ms: u64,
    /// Percent of its tick interval one Lua match callback may run (at
    /// least 50 ms) before it is stopped and its match ends.
    pub lua_match_timeout_percent: u32,
    /// Globals and the standard library are read-only while calls run, as
    /// Nakama's `runtime.read_only_globals`.
    pub read_only_globals: bool,
    /// Largest RPC payload accepted, in bytes.
    pub max_rpc_payload_bytes: usize,
    /// Most rows one `nk.sql_query` may return; a query matching more fails.
    pub sql_max_rows: usize,
    /// A PEM file of extra certificate authorities `nk.http_request` trusts
    /// for https, besides the built-in web roots; empty for none.
    pub http_ca_file: String,
    /// The JS bundle under `path`; empty means `index.js`, as Nakama.
    pub js_entrypoint: String,
    /// Most JS contexts, each on a thread of its own, made as calls need.
    pub js_max_count: usize,
    /// Bytes one JS context may allocate, its bundle included; 0 for no limit.
    pub js_memory_limit_bytes: usize,
    /// Wall-clock milliseconds one JS call may run before it is stopped.
    pub js_call_timeout_ms: u64,
    /// Events waiting for the event callbacks; more are dropped (Nakama's key).
    pub event_queue_size: usize,
    /// Tasks delivering events to the callbacks (Nakama's key).
    pub event_queue_workers: usize,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        let d = RuntimeSettings::default();
        RuntimeConfig {
            path: String::new(),
            http_key: "defaulthttpkey".into(),
            env: Vec::new(),
            lua_pool_size: 0,
            lua_vms_per_thread: 0,
            lua_pool_queue_size: d.pool_queue_size,
            lua_pool_timeout_ms: d.pool_timeout.as_millis() as u64,
            lua_instruction_budget: d.instruction_budget,
            lua_memory_limit_bytes: d.memory_limit_bytes,
            lua_call_timeout_ms: d.call_timeout.as_millis() as u64,
            lua_match_timeout_percent: d.match_timeout_percent,
            read_only_globals: d.read_only_globals,
            max_rpc_payload_bytes: d.max_payload_bytes,
            sql_max_rows: 10_000,
            http_ca_file: String::new(),
            js_entrypoint: String::new(),
            js_max_count: d.js_max_count,
            js_memory_limit_bytes: d.js_memory_limit_bytes,
            js_call_timeout_ms: d.js_call_timeout.as_millis() as u64,
            event_queue_size: d.event_queue_size,
            event_queue_workers: d.event_queue_workers,
        }
    }
}

impl RuntimeConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, message: &str| {
            Err(ConfigError::BadValue {
                key: key.into(),
                message: message.into(),
            })
        };
        if self.http_key.is_empty() {
            return bad("runtime.http_key", "must not be empty");
        }
        if let Some(pair) = self.env.iter().find(|p| !p.contains('=')) {
            return bad("runtime.env", &format!("`{pair}` must look like key=value"));
        }
        if self.lua_vms_per_thread > 1024 {
            return bad(
                "runtime.lua_vms_per_thread",
                "must be between 1 and 1024, or 0 for the store's default",
            );
        }
        if self.lua_pool_timeout_ms == 0 {
            return bad("runtime.lua_pool_timeout_ms", "must be at least 1");
        }
        if self.lua_instruction_budget < 10_000 {
            return bad("runtime.lua_instruction_budget", "must be at least 10000");
        }
        if self.lua_memory_limit_bytes != 0 && self.lua_memory_limit_bytes < 1 << 20 {
            return bad(
                "runtime.lua_memory_limit_bytes",
                "must be 0 (no limit) or at least 1048576",
            );
        }
        if !(10..=60_000).contains(&self.lua_call_timeout_ms) {
            return bad(
                "runtime.lua_call_timeout_ms",
                "must be between 10 and 60000 (shutdown waits for calls up to this long)",
            );
        }
        if !(1..=1000).contains(&self.lua_match_timeout_percent) {
            return bad(
                "runtime.lua_match_timeout_percent",
                "must be between 1 and 1000",
            );
        }
        if self.max_rpc_payload_bytes == 0 {
            return bad("runtime.max_rpc_payload_bytes", "must be at least 1");
        }
        if !(1..=1024).contains(&self.js_max_count) {
            return bad("runtime.js_max_count", "must be between 1 and 1024");
        }
        if self.js_memory_limit_bytes != 0 && self.js_memory_limit_bytes < 1 << 20 {
            return bad(
                "runtime.js_memory_limit_bytes",
                "must be 0 (no limit) or at least 1048576",
            );
        }
        if !(10..=60_000).contains(&self.js_call_timeout_ms) {
            return bad(
                "runtime.js_call_timeout_ms",
                "must be between 10 and 60000 (shutdown waits for calls up to this long)",
            );
        }
        if self.js_entrypoint.contains("..") || Path::new(&self.js_entrypoint).is_absolute() {
            return bad(
                "runtime.js_entrypoint",
                "must be a file name under runtime.path (no `..`, not absolute)",
            );
        }
        if self.event_queue_size == 0 {
            return bad("runtime.event_queue_size", "must be at least 1");
        }
        if !(1..=1024).contains(&self.event_queue_workers) {
            return bad("runtime.event_queue_workers", "must be between 1 and 1024");
        }
        if self.sql_max_rows == 0 {
            return bad("runtime.sql_max_rows", "must be at least 1");
        }
        Ok(())
    }

    pub fn module_path(&self, data_dir: &Path) -> PathBuf {
        if self.path.is_empty() {
            data_dir.join("modules")
        } else {
            PathBuf::from(&self.path)
        }
    }

    pub fn env_map(&self) -> BTreeMap<String, String> {
        self.env
            .iter()
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.trim().to_owned(), v.to_owned()))
            .collect()
    }
}
