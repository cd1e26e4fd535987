//! How the runtime is set up: the `runtime.*` settings that `ludus-server`
//! fills from its configuration, read by every part of the runtime.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

/// How the runtime is set up; `ludus-server` fills it from `runtime.*`.
#[derive(Debug, Clone)]
pub struct RuntimeSettings {
    /// Folder searched for `*.lua` modules.
    pub path: PathBuf,
    /// Node name, `ctx.node`.
    pub node: String,
    /// `ctx.env`.
    pub env: BTreeMap<String, String>,
    /// Lua VM threads.
    pub pool_size: usize,
    /// Most Lua VMs one VM thread runs; it switches to another VM's call
    /// while one waits on the server, making VMs as needed.
    pub vms_per_thread: usize,
    /// Calls that may wait for a VM when all are busy.
    pub pool_queue_size: usize,
    /// Longest a call waits for a VM before it is refused.
    pub pool_timeout: Duration,
    /// VM instructions one call may run.
    pub instruction_budget: u64,
    /// Bytes one VM may allocate, modules included; 0 for no limit.
    pub memory_limit_bytes: usize,
    /// Wall-clock time one Lua call (RPC, hook, module loading) may run.
    pub call_timeout: Duration,
    /// Percent of its tick interval one Lua match callback may run.
    pub match_timeout_percent: u32,
    /// Globals and the standard library are read-only once modules loaded.
    pub read_only_globals: bool,
    /// Largest RPC payload accepted, in bytes.
    pub max_payload_bytes: usize,
    /// What `nk.get_config()` answers.
    pub config: Value,
    /// The JS bundle under `path`; empty means `index.js`, as Nakama.
    pub js_entrypoint: String,
    /// Most JS contexts (each on a thread of its own), made as calls need.
    pub js_max_count: usize,
    /// Bytes one JS context may allocate, its bundle included; 0 for no limit.
    pub js_memory_limit_bytes: usize,
    /// Wall-clock time one JS call (RPC, hook, `InitModule`) may run.
    pub js_call_timeout: Duration,
    /// Events waiting for the event callbacks; more are dropped.
    pub event_queue_size: usize,
    /// Tasks delivering events to the callbacks.
    pub event_queue_workers: usize,
}

impl Default for RuntimeSettings {
    fn default() -> Self {
        RuntimeSettings {
            path: PathBuf::from("./data/modules"),
            node: "ludus".into(),
            env: BTreeMap::new(),
            pool_size: std::thread::available_parallelism().map_or(2, |n| n.get()),
            vms_per_thread: 32,
            pool_queue_size: 256,
            pool_timeout: Duration::from_secs(2),
            instruction_budget: 100_000_000,
            memory_limit_bytes: 64 << 20,
            call_timeout: Duration::from_secs(5),
            match_timeout_percent: 50,
            read_only_globals: true,
            max_payload_bytes: 262_144,
            config: Value::Object(Default::default()),
            js_entrypoint: String::new(),
            js_max_count: 32,
            js_memory_limit_bytes: 64 << 20,
            js_call_timeout: Duration::from_secs(5),
            event_queue_size: 65_536,
            event_queue_workers: 8,
        }
    }
}
