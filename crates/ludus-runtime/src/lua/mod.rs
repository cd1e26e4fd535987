//! The Lua side of the runtime: modules found under `runtime.path`, loaded
//! into every VM of a pool, and calls dispatched to the callbacks they
//! registered.
//!
//! Module-level tables are isolated per VM: each VM runs every module, so a
//! module that writes to its own tables changes only that VM's copy. State
//! meant to be shared across calls belongs in `nk.localcache_*` (or storage),
//! as in Nakama.

mod call_state;
mod check;
mod convert;
mod ctx;
mod lazy;
mod matches;
mod modules;
mod nk;
mod nk_account;
mod nk_codec;
mod nk_common;
mod nk_inbox;
pub(crate) mod nk_leaderboard;
mod nk_match;
mod nk_party;
mod nk_purchase;
mod nk_realtime;
mod nk_server;
mod nk_social;
mod nk_social_auth;
mod nk_sql;
mod nk_storage;
mod nk_storage_index;
mod nk_util;
mod pattern;
mod pool;
mod sandbox;
mod shared;
mod unknown_nk;
mod vm;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

pub(crate) use call_state::Registered;
pub use check::{LuaCheck, check_lua_modules};
pub(crate) use modules::discover;
pub(crate) use nk_storage_index::FILTER_PREFIX;
pub(crate) use shared::LuaShared;
pub use unknown_nk::UnknownNkReference;

use crate::context::CallContext;
use crate::error::{LoadError, RuntimeError};
use pool::VmPool;
use vm::Vm;

pub(crate) struct LuaRuntime {
    pool: VmPool,
    registered: Registered,
    sources: Arc<Vec<modules::ModuleSource>>,
    /// References to `nk` functions Ludus does not have, found at start.
    unknown_nk: Vec<UnknownNkReference>,
    /// Raised at shutdown: every call still running in the pool stops.
    interrupt: Arc<AtomicBool>,
}

impl LuaRuntime {
    /// Builds the pool over the modules `shared` holds; `None` when there
    /// are none. Runs on a blocking thread: loading executes module code.
    pub(crate) fn start(shared: Arc<LuaShared>) -> Result<Option<LuaRuntime>, LoadError> {
        let modules = shared.sources.clone();
        if modules.is_empty() {
            tracing::info!(path = %shared.settings.path.display(), "no lua modules found");
            return Ok(None);
        }
        // One VM per thread to start with; each thread makes more as its
        // calls wait on the server.
        let size = shared.settings.pool_size.max(1);
        let interrupt = Arc::new(AtomicBool::new(false));
        let (first, registered) = Vm::new(shared.clone(), &modules, true, interrupt.clone())?;
        let mut vms = Vec::with_capacity(size);
        vms.push(first);
        for _ in 1..size {
            vms.push(Vm::new(shared.clone(), &modules, false, interrupt.clone())?.0);
        }
        for module in modules.iter() {
            tracing::info!(module = %module.name, path = %module.display_path, "lua module loaded");
        }
        // After the first VM, which filled the index of `nk`'s names.
        let unknown_nk = unknown_nk::scan(&modules, nk::has_function);
        for r in &unknown_nk {
            tracing::warn!(
                path = %r.path,
                line = r.line,
                function = %r.name,
                "lua module references nk.{}, which this server does not have: calling it fails",
                r.name
            );
        }
        tracing::info!(
            threads = size,
            vms_per_thread = shared.settings.vms_per_thread,
            rpcs = registered.rpcs.len(),
            before_hooks = registered.before.len(),
            after_hooks = registered.after.len(),
            "lua runtime ready"
        );
        let rebuild_shared = shared.clone();
        let rebuild_modules = modules.clone();
        let rebuild_interrupt = interrupt.clone();
        let pool = VmPool::new(
            vms,
            shared.settings.vms_per_thread,
            shared.settings.pool_queue_size,
            shared.settings.pool_timeout,
            Box::new(move || {
                Vm::new(
                    rebuild_shared.clone(),
                    &rebuild_modules,
                    false,
                    rebuild_interrupt.clone(),
                )
                .map(|v| v.0)
            }),
        );
        Ok(Some(LuaRuntime {
            pool,
            registered,
            sources: modules,
            unknown_nk,
            interrupt,
        }))
    }

    pub(crate) fn registered(&self) -> &Registered {
        &self.registered
    }

    /// References to `nk` functions Ludus does not have, in module and line
    /// order (each was logged as a warning at start).
    pub(crate) fn unknown_nk(&self) -> &[UnknownNkReference] {
        &self.unknown_nk
    }

    /// The loaded modules' files, as error messages name them.
    pub(crate) fn module_paths(&self) -> impl Iterator<Item = &str> {
        self.sources.iter().map(|m| m.display_path.as_str())
    }

    /// Whether a module of that name was loaded (it may make matches).
    pub(crate) fn has_module(&self, name: &str) -> bool {
        self.sources.iter().any(|m| m.name == name)
    }

    pub(crate) fn module_count(&self) -> usize {
        self.sources.len()
    }

    /// Calls the callback stored under `key` (`rpc/<id>`, `before/<api>`…).
    pub(crate) async fn call(
        &self,
        key: String,
        ctx: CallContext,
        args: Vec<Value>,
    ) -> Result<Option<Value>, RuntimeError> {
        self.pool
            .run(move |vm| async move { vm.call(&key, ctx, args).await })
            .await
    }

    /// Refuses new calls and stops those still running (at their next
    /// budget check, within microseconds), so shutdown never waits for a
    /// runaway call.
    /// VMs in the call pool now (matches run VMs of their own).
    pub(crate) fn vm_count(&self) -> usize {
        self.pool.vm_count()
    }

    pub(crate) fn close(&self) {
        self.pool.close();
        self.interrupt.store(true, Ordering::Relaxed);
    }
}
