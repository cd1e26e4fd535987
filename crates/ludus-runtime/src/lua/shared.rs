//! What every VM of the pool shares: settings, the server's services, the
//! local cache, a handle to the async runtime for calls into the server, and
//! what match VMs are made from (the modules' sources, and the native match
//! handlers `nk.match_create` may name).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::localcache::LocalCache;
use crate::native::{Handlers, MatchFactory, ScriptSet};
use crate::services::RuntimeServices;
use crate::settings::RuntimeSettings;

use super::modules::ModuleSource;

pub(crate) struct LuaShared {
    pub settings: RuntimeSettings,
    pub services: Arc<dyn RuntimeServices>,
    pub cache: Arc<LocalCache>,
    /// VMs run on blocking threads; server calls are driven with `block_on`.
    pub handle: tokio::runtime::Handle,
    /// Every module under `runtime.path`, as loaded at start.
    pub sources: Arc<Vec<ModuleSource>>,
    /// Native match handlers by name (a native registration wins over a Lua
    /// module of the same name).
    pub native_matches: Arc<HashMap<String, MatchFactory>>,
    /// The script runtimes' match handlers (this one's and the JS
    /// module's), so `nk.match_create` reaches either.
    pub scripts: ScriptSet,
    /// Set by the first `nk.run_once` call; later calls do nothing.
    pub run_once: AtomicBool,
    /// Where `nk.event` queues events for the event callbacks.
    pub events: crate::events::EventQueue,
}

impl LuaShared {
    /// Waits for a server call from Lua, ending the wait at the running
    /// call's deadline (see [`LuaShared::block`]).
    pub(crate) fn wait<T>(
        &self,
        fut: impl std::future::Future<Output = Result<T, ludus_core::ApiError>>,
    ) -> Result<T, ludus_core::ApiError> {
        self.block(super::call_state::within_deadline(fut))
    }

    /// Drives `fut` to its end on this thread: how `nk` functions wait on
    /// async work when they cannot yield (the waiting half of
    /// `nk_common::server_function`, and every function that only waits).
    /// Pool VM threads are not the runtime's, so the handle drives the
    /// future there; a match callback runs on a worker of the match runtime,
    /// where blocking is only allowed after stepping off the worker first.
    pub(crate) fn block<F: std::future::Future>(&self, fut: F) -> F::Output {
        if super::call_state::in_match_callback() {
            return tokio::task::block_in_place(|| self.handle.block_on(fut));
        }
        self.handle.block_on(fut)
    }

    /// Where `nk.match_create` finds handlers: native ones, then modules.
    pub(crate) fn handlers(self: &Arc<Self>) -> Handlers {
        Handlers {
            services: self.services.clone(),
            events: self.events.clone(),
            native: self.native_matches.clone(),
            scripts: self.scripts.clone(),
        }
    }
}
