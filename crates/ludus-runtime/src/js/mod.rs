//! The JavaScript side of the runtime: Nakama's JS modules (a bundle whose
//! global `InitModule(ctx, logger, nk, initializer)` registers callbacks,
//! as TypeScript against `nakama-runtime` compiles to) on QuickJS, through
//! `rquickjs`. The bundle is `runtime.js_entrypoint` under `runtime.path`
//! (`index.js` when unset); without it there is no JS runtime.
//!
//! Every context evaluates the bundle and runs `InitModule`, so module-level
//! state is private to a context, as it is to a Lua VM; state meant to be
//! shared across calls belongs in `nk.localcache*` (or storage).

mod budget;
mod initializer;
mod logger;
mod matches;
mod nk;
mod nk_account;
mod nk_auth;
mod nk_common;
mod nk_leaderboard;
mod nk_match;
mod nk_purchase;
mod nk_realtime;
mod nk_social;
mod nk_storage;
mod nk_util;
mod pool;
mod shared;
mod vm;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::Value;

pub(crate) use matches::JsMatches;
pub(crate) use nk_purchase::{purchase_json, subscription_json};
pub(crate) use shared::JsShared;

use crate::context::CallContext;
use crate::error::{LoadError, RuntimeError};
use pool::JsPool;
use vm::Keys;

pub(crate) struct JsRuntime {
    pool: JsPool,
    keys: Keys,
    /// The match handlers `InitModule` registered.
    matches: Arc<JsMatches>,
    /// The bundle's file name, for messages.
    module: String,
    shared: Arc<JsShared>,
}

impl JsRuntime {
    /// Loads the bundle into the first context; `None` when there is no
    /// bundle. Blocks until that context has run `InitModule`.
    pub(crate) fn start(shared: Arc<JsShared>) -> Result<JsRuntime, LoadError> {
        let module = shared.entrypoint.display().to_string();
        let (pool, (keys, matches)) = JsPool::start(shared.clone())?;
        shared.indexes_declared.store(true, Ordering::Release);
        let matches = Arc::new(JsMatches::new(shared.clone(), matches));
        tracing::info!(
            module = %module,
            rpcs = keys.iter().filter(|k| k.starts_with("rpc/")).count(),
            hooks = keys.iter().filter(|k| !k.starts_with("rpc/")).count(),
            matches = matches.names().count(),
            max_contexts = shared.settings.js_max_count,
            "js runtime ready"
        );
        Ok(JsRuntime {
            pool,
            keys,
            matches,
            module,
            shared,
        })
    }

    /// Whether the module registered `key` (`rpc/<id>`, `before/<api>`…).
    pub(crate) fn has(&self, key: &str) -> bool {
        self.keys.contains(key)
    }

    /// The RPC ids the module registered, lower case.
    pub(crate) fn rpc_ids(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().filter_map(|k| k.strip_prefix("rpc/"))
    }

    /// The module's match handlers, for `Handlers`.
    pub(crate) fn matches(&self) -> &Arc<JsMatches> {
        &self.matches
    }

    pub(crate) fn module(&self) -> &str {
        &self.module
    }

    pub(crate) async fn call(
        &self,
        key: String,
        ctx: CallContext,
        args: Vec<Value>,
    ) -> Result<Option<Value>, RuntimeError> {
        self.pool.run(key, ctx, args).await
    }

    /// Refuses new calls and stops running ones at their next check.
    /// Contexts alive now.
    pub(crate) fn context_count(&self) -> usize {
        self.pool.context_count()
    }

    pub(crate) fn close(&self) {
        self.pool.close();
        self.shared.shutdown.store(true, Ordering::Relaxed);
    }
}
