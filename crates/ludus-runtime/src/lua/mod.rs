//! The Lua side of the runtime: modules found under `runtime.path`, loaded
//! into every VM of a pool, and calls dispatched to the callbacks they
//! registered.
//!
//! Module-level tables are isolated per VM: each VM runs every module, so a
//! module that writes to its own tables changes only that VM's copy. State
//! meant to be shared across calls belongs in `nk.localcache_*` (or storage),
//! as in Nakama.

mod convert;
mod matches;
mod modules;
mod nk;
mod nk_codec;
mod nk_match;
mod nk_party;
mod nk_realtime;
mod nk_server;
mod nk_sql;
mod nk_storage;
mod pool;
mod shared;
mod vm;

use std::sync::Arc;

use serde_json::Value;

pub(crate) use shared::LuaShared;
pub(crate) use vm::Registered;

use crate::context::CallContext;
use crate::error::{LoadError, RuntimeError};
use pool::VmPool;
use vm::Vm;

pub struct LuaRuntime {
    pool: VmPool,
    registered: Registered,
    shared: Arc<LuaShared>,
    sources: Arc<Vec<modules::ModuleSource>>,
}

impl LuaRuntime {
    /// Reads the modules and builds the pool; `None` when there are none.
    /// Runs on a blocking thread: loading executes module code.
    pub fn start(shared: Arc<LuaShared>) -> Result<Option<LuaRuntime>, LoadError> {
        let modules = Arc::new(modules::discover(&shared.settings.path)?);
        if modules.is_empty() {
            tracing::info!(path = %shared.settings.path.display(), "no lua modules found");
            return Ok(None);
        }
        let size = shared.settings.pool_size.max(1);
        let (first, registered) = Vm::new(shared.clone(), &modules, true)?;
        let mut vms = Vec::with_capacity(size);
        vms.push(first);
        for _ in 1..size {
            vms.push(Vm::new(shared.clone(), &modules, false)?.0);
        }
        for module in modules.iter() {
            tracing::info!(module = %module.name, path = %module.display_path, "lua module loaded");
        }
        tracing::info!(
            vms = size,
            rpcs = registered.rpcs.len(),
            before_hooks = registered.before.len(),
            after_hooks = registered.after.len(),
            "lua runtime ready"
        );
        let rebuild_shared = shared.clone();
        let rebuild_modules = modules.clone();
        let pool = VmPool::new(
            vms,
            shared.settings.pool_queue_size,
            shared.settings.pool_timeout,
            Box::new(move || Vm::new(rebuild_shared.clone(), &rebuild_modules, false).map(|v| v.0)),
        );
        Ok(Some(LuaRuntime {
            pool,
            registered,
            shared,
            sources: modules,
        }))
    }

    pub fn registered(&self) -> &Registered {
        &self.registered
    }

    pub fn module_count(&self) -> usize {
        self.sources.len()
    }

    /// Whether a module of this name exists (a match handler candidate).
    pub fn has_module(&self, name: &str) -> bool {
        self.sources.iter().any(|m| m.name == name)
    }

    /// A match handler running module `name` in a VM of its own.
    pub fn create_match(
        &self,
        name: &str,
    ) -> Result<Box<dyn ludus_realtime::matches::MatchHandler>, String> {
        matches::LuaMatch::new(self.shared.clone(), &self.sources, name)
            .map(|m| Box::new(m) as Box<dyn ludus_realtime::matches::MatchHandler>)
    }

    /// Calls the callback stored under `key` (`rpc/<id>`, `before/<api>`…).
    pub async fn call(
        &self,
        key: String,
        ctx: CallContext,
        args: Vec<Value>,
    ) -> Result<Option<Value>, RuntimeError> {
        self.pool.run(move |vm| vm.call(&key, &ctx, args)).await
    }

    pub fn close(&self) {
        self.pool.close();
    }
}
