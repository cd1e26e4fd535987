//! What every JS context of the runtime shares: the settings, the server
//! behind `RuntimeServices`, the node-local cache, the event queue, the
//! async runtime that server calls run on, the stop raised at shutdown, and
//! the match handlers `nk.matchCreate` reaches.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::localcache::LocalCache;
use crate::native::Handlers;
use crate::services::RuntimeServices;
use crate::settings::RuntimeSettings;

pub(crate) struct JsShared {
    pub(crate) settings: RuntimeSettings,
    pub(crate) services: Arc<dyn RuntimeServices>,
    pub(crate) cache: Arc<LocalCache>,
    /// Where `nk.event` queues events for the event callbacks.
    pub(crate) events: crate::events::EventQueue,
    pub(crate) handle: tokio::runtime::Handle,
    /// The bundle every context evaluates (`runtime.js_entrypoint`).
    pub(crate) entrypoint: PathBuf,
    /// Raised at shutdown: every running call stops at its next check.
    pub(crate) shutdown: Arc<AtomicBool>,
    /// Set once the first context ran `InitModule`: later contexts declare
    /// no storage index again.
    pub(crate) indexes_declared: AtomicBool,
    /// Where `nk.matchCreate` finds handlers: native, Lua or JS.
    pub(crate) handlers: Handlers,
}

impl JsShared {
    /// Runs a server call on the async runtime and waits for its answer on
    /// this (a context's) thread; a server that shuts down meanwhile answers
    /// an error rather than a panic.
    pub(crate) fn wait<T: Send + 'static>(
        &self,
        call: impl std::future::Future<Output = T> + Send + 'static,
    ) -> Result<T, String> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.handle.spawn(async move {
            let _ = tx.send(call.await);
        });
        rx.blocking_recv()
            .map_err(|_| "the server is shutting down; retry on another node".to_owned())
    }

    /// The bundle `settings` name: `runtime.js_entrypoint` under
    /// `runtime.path` (`index.js` when unset, as Nakama), if it exists.
    pub(crate) fn entrypoint_of(settings: &RuntimeSettings) -> Option<PathBuf> {
        let name = if settings.js_entrypoint.is_empty() {
            "index.js"
        } else {
            settings.js_entrypoint.as_str()
        };
        let path = settings.path.join(name);
        path.is_file().then_some(path)
    }
}
