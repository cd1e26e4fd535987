//! [`Runtime`]: the one interface the transports call. It holds the native
//! module, the Lua runtime and the JS runtime and dispatches RPCs and hooks
//! by name; a native registration wins over a Lua one with the same name, as
//! Go plugins win over Lua in Nakama. A JS registration shares its name with
//! no other: one that does is refused at start, naming both.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use ludus_core::Code;
use ludus_realtime::hooks::MESSAGE_NAMES;
use ludus_realtime::matches::HandlerFactory;
use ludus_realtime::{Before, ModuleFuture, Modules, RtCode, RtError, SessionHandle};
use serde_json::Value;

use crate::context::{CallContext, ExecutionMode};
use crate::error::{LoadError, RuntimeError};
use crate::events::{Event, EventKind, EventQueue, Queued};
use crate::js::{JsRuntime, JsShared};
use crate::localcache::LocalCache;
use crate::lua::{LuaRuntime, LuaShared};
use crate::native::{Handlers, NativeCall, NativeModule, ScriptMatches, ScriptSet, TournamentHook};
use crate::services::RuntimeServices;
use crate::settings::RuntimeSettings;

/// Prefix of realtime hook names, so `channeljoin` (realtime) and REST names
/// never clash.
const RT_PREFIX: &str = "rt.";

pub struct Runtime {
    settings: RuntimeSettings,
    native: NativeModule,
    lua: Option<LuaRuntime>,
    js: Option<JsRuntime>,
    /// Match handlers by name: native registrations, then Lua modules.
    handlers: Handlers,
    /// Socket messages with a realtime before / after hook, looked up once
    /// (registrations never change after start-up).
    rt_before: HashSet<&'static str>,
    rt_after: HashSet<&'static str>,
    /// The event queue and, until `start_events` takes it, its receiver.
    events: EventQueue,
    event_rx: std::sync::Mutex<Option<tokio::sync::mpsc::Receiver<Queued>>>,
    /// The script runtimes `handlers` reaches weakly, kept alive here.
    script_matches: Vec<Arc<dyn ScriptMatches>>,
    /// Before and after hooks that ran (REST and realtime): Nakama's
    /// `overall_before_*` and `overall_after_*`.
    hook_stats: HookStats,
}

/// What the metrics read of the runtime's hooks.
#[derive(Debug, Default)]
pub struct HookStats {
    pub before: ludus_core::metrics::RequestStats,
    pub after: ludus_core::metrics::RequestStats,
}

/// What the modules registered, for the console's `GetRuntime`.
#[derive(Debug, Clone, Default)]
pub struct RuntimeInfo {
    pub native_rpcs: Vec<String>,
    pub lua_rpcs: Vec<String>,
    pub js_rpcs: Vec<String>,
    /// Lua module files, in load order.
    pub lua_modules: Vec<String>,
    /// The JavaScript entry module, when one is loaded.
    pub js_modules: Vec<String>,
    /// `before/<api>` and `after/<api>` of every language, sorted.
    pub hooks: Vec<String>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("native", &self.native)
            .field("lua_modules", &self.lua.as_ref().map(|l| l.module_count()))
            .finish()
    }
}

impl Runtime {
    /// Loads the Lua modules (a syntax or start-up error stops here, naming
    /// file and line) and takes the native module's registrations.
    pub async fn start(
        settings: RuntimeSettings,
        services: Arc<dyn RuntimeServices>,
        native: NativeModule,
    ) -> Result<Runtime, LoadError> {
        for spec in &native.storage_indexes {
            services.storage_index_register(spec.clone()).map_err(|e| {
                LoadError::Setup(format!(
                    "native storage index {:?}: {}",
                    spec.name, e.message
                ))
            })?;
        }
        let native_matches = Arc::new(native.matches.clone());
        let (lua_settings, lua_services, lua_native) =
            (settings.clone(), services.clone(), native_matches.clone());
        let handle = tokio::runtime::Handle::current();
        let js_handle = handle.clone();
        let cache = Arc::new(LocalCache::default());
        let lua_cache = cache.clone();
        let (events, event_rx) = EventQueue::new(settings.event_queue_size);
        let lua_events = events.clone();
        let scripts = ScriptSet::default();
        let lua_scripts = scripts.clone();
        let (shared, lua) = tokio::task::spawn_blocking(move || {
            let sources = Arc::new(crate::lua::discover(&lua_settings.path)?);
            let shared = Arc::new(LuaShared {
                settings: lua_settings,
                services: lua_services,
                cache: lua_cache,
                handle,
                sources,
                native_matches: lua_native,
                scripts: lua_scripts,
                run_once: Default::default(),
                events: lua_events,
            });
            LuaRuntime::start(shared.clone()).map(|lua| (shared, lua))
        })
        .await
        .map_err(|e| LoadError::Setup(format!("module loading was interrupted: {e}")))??;
        let handlers = Handlers {
            services,
            events: events.clone(),
            native: native_matches,
            scripts,
        };
        let js = match JsShared::entrypoint_of(&settings) {
            None => None,
            Some(entrypoint) => {
                let js_shared = Arc::new(JsShared {
                    settings: settings.clone(),
                    services: handlers.services.clone(),
                    cache,
                    events: events.clone(),
                    handle: js_handle,
                    entrypoint,
                    shutdown: Arc::default(),
                    handlers: handlers.clone(),
                    indexes_declared: Default::default(),
                });
                let js = tokio::task::spawn_blocking(move || JsRuntime::start(js_shared))
                    .await
                    .map_err(|e| {
                        LoadError::Setup(format!("js module loading was interrupted: {e}"))
                    })??;
                refuse_shared_ids(&js, &native, lua.as_ref())?;
                Some(js)
            }
        };
        if !native.rpcs.is_empty() || !native.before.is_empty() || !native.after.is_empty() {
            tracing::info!(
                rpcs = native.rpcs.len(),
                before_hooks = native.before.len(),
                after_hooks = native.after.len(),
                "native module registered"
            );
        }
        let mut script_matches: Vec<Arc<dyn ScriptMatches>> = Vec::new();
        if lua.is_some() {
            script_matches.push(shared);
        }
        if let Some(js) = &js {
            script_matches.push(js.matches().clone());
        }
        handlers.scripts.fill(&script_matches);
        let mut runtime =
            Runtime::assemble(settings, native, lua, js, handlers, (events, event_rx));
        runtime.script_matches = script_matches;
        Ok(runtime)
    }

    /// A runtime with no modules, for servers and tests that need none.
    pub fn empty(services: Arc<dyn RuntimeServices>) -> Runtime {
        let (events, event_rx) = EventQueue::new(1);
        let handlers = Handlers {
            services,
            events: events.clone(),
            native: Arc::default(),
            scripts: ScriptSet::default(),
        };
        Runtime::assemble(
            RuntimeSettings::default(),
            NativeModule::default(),
            None,
            None,
            handlers,
            (events, event_rx),
        )
    }

    fn assemble(
        settings: RuntimeSettings,
        native: NativeModule,
        lua: Option<LuaRuntime>,
        js: Option<JsRuntime>,
        handlers: Handlers,
        (events, event_rx): (EventQueue, tokio::sync::mpsc::Receiver<Queued>),
    ) -> Runtime {
        let mut runtime = Runtime {
            settings,
            native,
            lua,
            js,
            handlers,
            rt_before: HashSet::new(),
            rt_after: HashSet::new(),
            events,
            event_rx: std::sync::Mutex::new(Some(event_rx)),
            script_matches: Vec::new(),
            hook_stats: HookStats::default(),
        };
        runtime.rt_before = MESSAGE_NAMES
            .iter()
            .copied()
            .filter(|n| runtime.registers_rt_before(n))
            .collect();
        runtime.rt_after = MESSAGE_NAMES
            .iter()
            .copied()
            .filter(|n| runtime.registers_rt_after(n))
            .collect();
        runtime
    }

    pub fn settings(&self) -> &RuntimeSettings {
        &self.settings
    }

    /// What is registered, by language (the console's runtime page).
    pub fn info(&self) -> RuntimeInfo {
        let sorted = |ids: &mut dyn Iterator<Item = &str>| {
            let mut v: Vec<String> = ids.map(str::to_owned).collect();
            v.sort();
            v
        };
        let mut hooks: Vec<String> = self
            .native
            .before
            .keys()
            .map(|k| format!("before/{k}"))
            .chain(self.native.after.keys().map(|k| format!("after/{k}")))
            .collect();
        if let Some(lua) = &self.lua {
            let r = lua.registered();
            hooks.extend(r.before.iter().map(|k| format!("before/{k}")));
            hooks.extend(r.after.iter().map(|k| format!("after/{k}")));
        }
        hooks.sort();
        hooks.dedup();
        RuntimeInfo {
            native_rpcs: sorted(&mut self.native.rpcs.keys().map(String::as_str)),
            lua_rpcs: self
                .lua
                .as_ref()
                .map(|l| l.registered().rpcs.iter().cloned().collect())
                .unwrap_or_default(),
            js_rpcs: self
                .js
                .as_ref()
                .map(|j| sorted(&mut j.rpc_ids()))
                .unwrap_or_default(),
            lua_modules: self
                .lua
                .as_ref()
                .map(|l| l.module_paths().map(str::to_owned).collect())
                .unwrap_or_default(),
            js_modules: self
                .js
                .as_ref()
                .map(|j| vec![j.module().to_owned()])
                .unwrap_or_default(),
            hooks,
        }
    }

    /// Every registered RPC id, lower case.
    pub fn rpc_ids(&self) -> BTreeSet<String> {
        let mut ids: BTreeSet<String> = self.native.rpcs.keys().cloned().collect();
        if let Some(lua) = &self.lua {
            ids.extend(lua.registered().rpcs.iter().cloned());
        }
        if let Some(js) = &self.js {
            ids.extend(js.rpc_ids().map(str::to_owned));
        }
        ids
    }

    /// Every reference in the Lua modules to an `nk` function this server
    /// does not have, with its file and line; each is also logged as a
    /// warning at start.
    pub fn unknown_nk_references(&self) -> &[crate::UnknownNkReference] {
        self.lua.as_ref().map_or(&[], |l| l.unknown_nk())
    }

    pub fn has_rpc(&self, id: &str) -> bool {
        let id = lowercase(id);
        self.native.rpcs.contains_key(id.as_ref())
            || self
                .lua
                .as_ref()
                .is_some_and(|l| l.registered().rpcs.contains(id.as_ref()))
            || self.has_js(&format!("rpc/{id}"))
    }

    fn has_js(&self, key: &str) -> bool {
        self.js.as_ref().is_some_and(|js| js.has(key))
    }

    /// Runs the RPC `id` (case-insensitive) with `payload`; the transports
    /// (`/v2/rpc/{id}` and the socket's `rpc` envelope) both call this.
    pub async fn rpc(
        &self,
        mut ctx: CallContext,
        id: &str,
        payload: String,
    ) -> Result<String, RuntimeError> {
        if id.is_empty() {
            return Err(RuntimeError::new(
                Code::InvalidArgument,
                "RPC ID must be set",
            ));
        }
        if payload.len() > self.settings.max_payload_bytes {
            return Err(RuntimeError::new(
                Code::InvalidArgument,
                format!(
                    "rpc payload too large: {} bytes, the limit is {} (runtime.max_rpc_payload_bytes)",
                    payload.len(),
                    self.settings.max_payload_bytes
                ),
            ));
        }
        ctx.mode = ExecutionMode::Rpc;
        let id = lowercase(id);
        if let Some(handler) = self.native.rpcs.get(id.as_ref()) {
            return handler(self.native_call(ctx), payload).await;
        }
        let Some(lua) = self
            .lua
            .as_ref()
            .filter(|l| l.registered().rpcs.contains(id.as_ref()))
        else {
            return self.js_rpc(ctx, &id, payload).await;
        };
        // The callback's key, `rpc/<id>`, without the formatter.
        let mut key = String::with_capacity(4 + id.len());
        key.push_str("rpc/");
        key.push_str(&id);
        match lua.call(key, ctx, vec![Value::String(payload)]).await? {
            None => Ok(String::new()),
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(RuntimeError::internal(
                "runtime function returned invalid data: only one return value of type string is allowed",
            )),
        }
    }

    /// An RPC of the JS module, if it registered `id` (lower case).
    async fn js_rpc(
        &self,
        ctx: CallContext,
        id: &str,
        payload: String,
    ) -> Result<String, RuntimeError> {
        let key = format!("rpc/{id}");
        let Some(js) = self.js.as_ref().filter(|js| js.has(&key)) else {
            return Err(RuntimeError::not_found("RPC function not found"));
        };
        match js.call(key, ctx, vec![Value::String(payload)]).await? {
            None => Ok(String::new()),
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(RuntimeError::internal(
                "runtime function returned invalid data: only one return value of type string is allowed",
            )),
        }
    }

    /// Whether a before hook exists for the REST API `api` (Nakama's name in
    /// lower case, e.g. `authenticatedevice`).
    pub fn has_before(&self, api: &str) -> bool {
        self.native.before.contains_key(api)
            || self
                .lua
                .as_ref()
                .is_some_and(|l| l.registered().before.contains(api))
            || self.has_js(&format!("before/{api}"))
    }

    pub fn has_after(&self, api: &str) -> bool {
        self.native.after.contains_key(api)
            || self
                .lua
                .as_ref()
                .is_some_and(|l| l.registered().after.contains(api))
            || self.has_js(&format!("after/{api}"))
    }

    /// Runs the before hook of `api` on `request` (protojson as a JSON
    /// value). `Ok(Some)` carries the request to use, possibly rewritten;
    /// `Ok(None)` means the hook returned nothing: callers with a request
    /// body reject the call, as Nakama does.
    pub async fn before(
        &self,
        mut ctx: CallContext,
        api: &str,
        request: Value,
    ) -> Result<Option<Value>, RuntimeError> {
        ctx.mode = ExecutionMode::Before;
        let started = std::time::Instant::now();
        let done = if let Some(hook) = self.native.before.get(api) {
            hook(self.native_call(ctx), request).await
        } else {
            match &self.lua {
                Some(lua) if lua.registered().before.contains(api) => {
                    lua.call(format!("before/{api}"), ctx, vec![request]).await
                }
                _ => match &self.js {
                    Some(js) if js.has(&format!("before/{api}")) => {
                        js.call(format!("before/{api}"), ctx, vec![js_field_names(request)])
                            .await
                    }
                    // No hook: nothing ran, nothing is counted.
                    _ => return Ok(Some(request)),
                },
            }
        };
        self.hook_stats
            .before
            .record(started.elapsed(), 0, 0, done.is_err());
        done
    }

    /// Runs the after hook of `api` with the response and the request.
    pub async fn after(
        &self,
        mut ctx: CallContext,
        api: &str,
        response: Value,
        request: Value,
    ) -> Result<(), RuntimeError> {
        ctx.mode = ExecutionMode::After;
        let started = std::time::Instant::now();
        let done = if let Some(hook) = self.native.after.get(api) {
            hook(self.native_call(ctx), response, request).await
        } else {
            match &self.lua {
                Some(lua) if lua.registered().after.contains(api) => lua
                    .call(format!("after/{api}"), ctx, vec![response, request])
                    .await
                    .map(|_| ()),
                _ => match &self.js {
                    Some(js) if js.has(&format!("after/{api}")) => js
                        .call(
                            format!("after/{api}"),
                            ctx,
                            vec![js_field_names(response), js_field_names(request)],
                        )
                        .await
                        .map(|_| ()),
                    _ => return Ok(()),
                },
            }
        };
        self.hook_stats
            .after
            .record(started.elapsed(), 0, 0, done.is_err());
        done
    }

    /// Realtime hooks: `name` is the envelope's message name, e.g.
    /// `channeljoin`; hooks registered with `register_rt_before`.
    fn registers_rt_before(&self, name: &str) -> bool {
        self.has_before(&format!("{RT_PREFIX}{name}"))
    }

    fn registers_rt_after(&self, name: &str) -> bool {
        self.has_after(&format!("{RT_PREFIX}{name}"))
    }

    pub async fn rt_before(
        &self,
        ctx: CallContext,
        name: &str,
        envelope: Value,
    ) -> Result<Option<Value>, RuntimeError> {
        self.before(ctx, &format!("{RT_PREFIX}{name}"), envelope)
            .await
    }

    pub async fn rt_after(
        &self,
        ctx: CallContext,
        name: &str,
        response: Value,
        request: Value,
    ) -> Result<(), RuntimeError> {
        self.after(ctx, &format!("{RT_PREFIX}{name}"), response, request)
            .await
    }

    /// Calls `register_matchmaker_matched` (Lua) or
    /// `registerMatchmakerMatched` (JS) with the matched entries; answers the
    /// match id the module returned, if any.
    pub async fn matchmaker_matched(&self, entries: Value) -> Result<Option<String>, RuntimeError> {
        if let Some(hook) = &self.native.matchmaker_matched {
            let call = self.native_call(CallContext::new(ExecutionMode::Matchmaker));
            return Ok(hook(call, entries).await?.filter(|id| !id.is_empty()));
        }
        let ctx = CallContext::new(ExecutionMode::Matchmaker);
        let key = "matchmaker_matched";
        let answer = match &self.lua {
            Some(lua) if lua.registered().matchmaker_matched => {
                lua.call(key.into(), ctx, vec![entries]).await?
            }
            _ => match &self.js {
                Some(js) if js.has(key) => {
                    js.call(key.into(), ctx, vec![js_matched_entries(entries)])
                        .await?
                }
                _ => return Ok(None),
            },
        };
        match answer {
            Some(Value::String(s)) if !s.is_empty() => Ok(Some(s)),
            _ => Ok(None),
        }
    }

    /// Starts the tasks that deliver queued events to the modules' event
    /// callbacks (`runtime.event_queue_workers`); a second call does nothing.
    /// They hold the runtime weakly and end when it is gone.
    pub fn start_events(self: &Arc<Self>) {
        let Some(rx) = self.event_rx.lock().ok().and_then(|mut rx| rx.take()) else {
            return;
        };
        let rx = Arc::new(tokio::sync::Mutex::new(rx));
        for _ in 0..self.settings.event_queue_workers.max(1) {
            let rx = rx.clone();
            let runtime = Arc::downgrade(self);
            tokio::spawn(async move {
                loop {
                    let Some(queued) = rx.lock().await.recv().await else {
                        return;
                    };
                    let Some(runtime) = runtime.upgrade() else {
                        return;
                    };
                    runtime.deliver(queued).await;
                }
            });
        }
    }

    /// Queues an event for `register_event` (`nk.event` from native modules,
    /// `POST /v2/event`); dropped, logged and counted when the queue is full.
    pub fn event(&self, ctx: CallContext, event: Event) {
        if self.has_event_callback(EventKind::Custom) {
            self.events.push(Queued {
                kind: EventKind::Custom,
                ctx,
                event,
            });
        }
    }

    /// Queues a session's start or end for `register_event_session_start` or
    /// `_end`; costs nothing (`ctx` is not even made) when no module
    /// registered one.
    pub fn session_event(&self, start: bool, ctx: impl FnOnce() -> CallContext) {
        let (kind, name) = match start {
            true => (EventKind::SessionStart, "session_start"),
            false => (EventKind::SessionEnd, "session_end"),
        };
        if self.has_event_callback(kind) {
            self.events.push(Queued {
                kind,
                ctx: ctx(),
                event: Event {
                    name: name.to_owned(),
                    ..Event::default()
                },
            });
        }
    }

    /// Counts and timings of the hooks that ran.
    pub fn hook_stats(&self) -> &HookStats {
        &self.hook_stats
    }

    /// Lua VMs of the call pool and JS contexts alive now (Nakama's
    /// `lua_runtimes` and `javascript_runtimes`).
    pub fn pool_sizes(&self) -> (usize, usize) {
        (
            self.lua.as_ref().map_or(0, LuaRuntime::vm_count),
            self.js.as_ref().map_or(0, JsRuntime::context_count),
        )
    }

    /// Events dropped because the queue was full.
    pub fn events_dropped(&self) -> u64 {
        self.events.dropped()
    }

    fn has_event_callback(&self, kind: EventKind) -> bool {
        !self.native_event_hooks(kind).is_empty()
            || self.lua_has_event(kind)
            || self.has_js(event_key(kind))
    }

    fn native_event_hooks(&self, kind: EventKind) -> &[crate::native::EventHook] {
        match kind {
            EventKind::Custom => &self.native.events,
            EventKind::SessionStart => &self.native.session_start,
            EventKind::SessionEnd => &self.native.session_end,
        }
    }

    fn lua_has_event(&self, kind: EventKind) -> bool {
        self.lua.as_ref().is_some_and(|lua| {
            let reg = lua.registered();
            match kind {
                EventKind::Custom => reg.event,
                EventKind::SessionStart => reg.event_session_start,
                EventKind::SessionEnd => reg.event_session_end,
            }
        })
    }

    /// Hands an event to the native hooks, then to the Lua and the JS
    /// callback of its kind, each that registered one.
    async fn deliver(&self, queued: Queued) {
        let key = event_key(queued.kind);
        let mut ctx = queued.ctx;
        ctx.mode = ExecutionMode::Event;
        for hook in self.native_event_hooks(queued.kind) {
            hook(self.native_call(ctx.clone()), queued.event.clone()).await;
        }
        let event = queued.event.to_value();
        if let Some(lua) = self
            .lua
            .as_ref()
            .filter(|_| self.lua_has_event(queued.kind))
            && let Err(e) = lua.call(key.into(), ctx.clone(), vec![event.clone()]).await
        {
            tracing::warn!(callback = key, error = %e, "lua event callback failed");
        }
        if let Some(js) = self.js.as_ref().filter(|js| js.has(key))
            && let Err(e) = js.call(key.into(), ctx, vec![event]).await
        {
            tracing::warn!(callback = key, error = %e, "js event callback failed");
        }
    }

    /// Runs the shutdown hooks (native, Lua, JS), then refuses further
    /// module calls.
    pub async fn shutdown(&self) {
        for hook in &self.native.shutdown {
            hook(self.native_call(CallContext::new(ExecutionMode::Shutdown))).await;
        }
        if let Some(lua) = &self.lua {
            if lua.registered().shutdown {
                let ctx = CallContext::new(ExecutionMode::Shutdown);
                if let Err(e) = lua.call("shutdown".into(), ctx, Vec::new()).await {
                    tracing::error!(error = %e, "lua shutdown function failed");
                }
            }
            lua.close();
        }
        if let Some(js) = &self.js {
            if js.has("shutdown") {
                let ctx = CallContext::new(ExecutionMode::Shutdown);
                if let Err(e) = js.call("shutdown".into(), ctx, Vec::new()).await {
                    tracing::error!(error = %e, "js shutdown function failed");
                }
            }
            js.close();
        }
    }

    /// Names a match can be created with: native registrations and Lua
    /// modules.
    pub fn has_match_handler(&self, name: &str) -> bool {
        self.handlers.has(name)
    }

    /// What makes a new match of handler `name` (for
    /// `RuntimeServices::match_create`); an unknown name fails when the
    /// match starts, saying how to register it.
    pub fn match_handler(&self, name: &str) -> HandlerFactory {
        self.handlers.factory(name)
    }

    /// What modules reach the server through.
    pub fn services(&self) -> &Arc<dyn RuntimeServices> {
        &self.handlers.services
    }

    /// Calls the callback registered for a store's notification: the
    /// native one, else the JS one (`registerPurchaseNotificationApple`
    /// and its siblings; Nakama's Lua API has no registration for these).
    /// The JS callback gets Nakama's arguments: `ctx, logger, nk`, the
    /// purchase or subscription, the store's payload (JSON text) and the
    /// notification type's name. `Ok(false)`: none is registered.
    pub async fn store_notification(
        &self,
        n: &ludus_core::purchase::notification::StoreNotification,
    ) -> Result<bool, RuntimeError> {
        use ludus_core::purchase::StoreProvider;
        use ludus_core::purchase::notification::Changed;
        let apple = n.store() == StoreProvider::AppleAppStore;
        let (key, mode, record) = match (&n.change, apple) {
            (Changed::Purchase(p), true) => (
                "purchase_notification_apple",
                ExecutionMode::PurchaseNotificationApple,
                crate::js::purchase_json(p),
            ),
            (Changed::Purchase(p), false) => (
                "purchase_notification_google",
                ExecutionMode::PurchaseNotificationGoogle,
                crate::js::purchase_json(p),
            ),
            (Changed::Subscription(s), true) => (
                "subscription_notification_apple",
                ExecutionMode::SubscriptionNotificationApple,
                crate::js::subscription_json(s),
            ),
            (Changed::Subscription(s), false) => (
                "subscription_notification_google",
                ExecutionMode::SubscriptionNotificationGoogle,
                crate::js::subscription_json(s),
            ),
        };
        if let Some(hook) = self.native.store_notifications.get(key) {
            hook(self.native_call(CallContext::new(mode)), n.clone()).await?;
            return Ok(true);
        }
        let Some(js) = self.js.as_ref().filter(|js| js.has(key)) else {
            return Ok(false);
        };
        let args = vec![
            record,
            Value::from(n.provider_payload.clone()),
            Value::from(n.kind.name()),
        ];
        js.call(key.into(), CallContext::new(mode), args).await?;
        Ok(true)
    }

    fn native_call(&self, ctx: CallContext) -> NativeCall {
        NativeCall {
            ctx,
            services: self.handlers.services.clone(),
            handlers: self.handlers.clone(),
        }
    }
}

/// A socket session as module callbacks see it in `ctx`: user, token
/// variables and expiry, session id, language.
fn session_context(session: &SessionHandle, mode: ExecutionMode) -> CallContext {
    let info = session.info();
    let mut ctx = CallContext::new(mode);
    ctx.user_id = Some(info.user_id.to_string());
    ctx.username = info.username.to_string();
    ctx.vars = info.vars.clone();
    ctx.session_expiry = info.expiry;
    ctx.session_id = Some(info.id.to_string());
    ctx.lang = info.lang.to_string();
    ctx
}

impl Runtime {
    /// The socket's `rpc` envelope from `session`: `Runtime::rpc` in the
    /// session's context. The error keeps the module's gRPC code (the
    /// metrics count it); the socket answers it as an `RtError`.
    pub fn session_rpc(
        &self,
        session: &SessionHandle,
        id: String,
        payload: String,
    ) -> impl Future<Output = Result<String, RuntimeError>> + Send + '_ {
        let ctx = session_context(session, ExecutionMode::Rpc);
        async move { Runtime::rpc(self, ctx, &id, payload).await }
    }
}

/// A failed socket RPC is `RUNTIME_FUNCTION_EXCEPTION` whatever the
/// module's code, as in Nakama.
impl From<RuntimeError> for RtError {
    fn from(e: RuntimeError) -> RtError {
        RtError::new(RtCode::RuntimeFunctionException, e.message)
    }
}

/// The realtime layer reaches modules through this: the socket's `rpc`
/// envelope (the same `Runtime::rpc` as `/v2/rpc/{id}`), realtime before and
/// after hooks, and `register_matchmaker_matched`.
impl Modules for Runtime {
    fn rpc(
        &self,
        session: &SessionHandle,
        id: String,
        payload: String,
    ) -> ModuleFuture<'_, Result<String, RtError>> {
        if !self.has_rpc(&id) {
            return Box::pin(std::future::ready(Err(RtError::new(
                RtCode::RuntimeFunctionNotFound,
                format!("rpc function {id:?} not found: no module registers it"),
            ))));
        }
        let call = self.session_rpc(session, id, payload);
        Box::pin(async move { call.await.map_err(RtError::from) })
    }

    fn has_rt_before(&self, name: &str) -> bool {
        self.rt_before.contains(name)
    }

    fn has_rt_after(&self, name: &str) -> bool {
        self.rt_after.contains(name)
    }

    fn rt_before(
        &self,
        session: &SessionHandle,
        name: &'static str,
        envelope: Value,
    ) -> ModuleFuture<'_, Before> {
        let ctx = session_context(session, ExecutionMode::Before);
        Box::pin(async move {
            match Runtime::rt_before(self, ctx, name, envelope).await {
                Ok(Some(v)) => Before::Continue(v),
                Ok(None) => Before::Reject,
                Err(e) => Before::Failed(e.message),
            }
        })
    }

    fn rt_after(
        &self,
        session: &SessionHandle,
        name: &'static str,
        request: Value,
        response: Value,
    ) -> ModuleFuture<'_, ()> {
        let ctx = session_context(session, ExecutionMode::After);
        let session_id = session.id();
        Box::pin(async move {
            if let Err(e) = Runtime::rt_after(self, ctx, name, response, request).await {
                tracing::warn!(%session_id, hook = name, error = %e.message, "realtime after hook failed");
            }
        })
    }

    fn matchmaker_matched(
        &self,
        entries: Value,
    ) -> ModuleFuture<'_, Result<Option<String>, String>> {
        Box::pin(async move {
            Runtime::matchmaker_matched(self, entries)
                .await
                .map_err(|e| e.message)
        })
    }
}

/// The Lua modules' storage index filters (`nk.register_storage_index_filter`):
/// each is called with the written object as Nakama passes it and must
/// answer a boolean.
#[async_trait::async_trait]
impl ludus_core::storage_index::IndexFilter for Runtime {
    fn has_filter(&self, index: &str) -> bool {
        self.native.index_filters.contains_key(index)
            || self
                .lua
                .as_ref()
                .is_some_and(|l| l.registered().index_filters.contains(index))
            || self.has_js(&format!("{}{index}", crate::lua::FILTER_PREFIX))
    }

    async fn keep(
        &self,
        index: &str,
        object: &ludus_core::storage::StorageObject,
    ) -> Result<bool, ludus_core::ApiError> {
        if let Some(filter) = self.native.index_filters.get(index) {
            return Ok(filter(object));
        }
        if !self.has_filter(index) {
            return Ok(true);
        }
        let value: Value = serde_json::from_str(&object.value).unwrap_or(Value::Null);
        let write = serde_json::json!({
            "key": object.key,
            "collection": object.collection,
            "user_id": object.user_id.to_string(),
            "version": object.version,
            "permission_read": object.read.as_i64(),
            "permission_write": object.write.as_i64(),
            "value": value,
        });
        let ctx = CallContext::new(ExecutionMode::StorageIndexFilter);
        let key = format!("{}{index}", crate::lua::FILTER_PREFIX);
        let answer = match self
            .lua
            .as_ref()
            .filter(|l| l.registered().index_filters.contains(index))
        {
            Some(lua) => lua.call(key, ctx, vec![write]).await,
            None => match &self.js {
                Some(js) => js.call(key, ctx, vec![camel_keys(write)]).await,
                None => return Ok(true),
            },
        };
        match answer {
            Ok(Some(Value::Bool(keep))) => Ok(keep),
            Ok(_) => Err(ludus_core::ApiError::new(
                Code::Internal,
                format!(
                    "storage index filter of {index:?} must return true or false (to index the object or not)"
                ),
            )),
            Err(e) => Err(ludus_core::ApiError::new(e.code, e.message)),
        }
    }
}

/// Modules' schedule hooks: `register_leaderboard_reset`,
/// `register_tournament_end` and `register_tournament_reset`, called with
/// Nakama's arguments (`ctx, leaderboard, reset` and `ctx, tournament, end,
/// reset`). A failing hook is logged; the period still counts as fired.
#[async_trait::async_trait]
impl ludus_core::leaderboard_service::ScheduleHooks for Runtime {
    async fn leaderboard_reset(&self, board: &ludus_core::leaderboard::Leaderboard, reset: i64) {
        let next = board
            .reset_schedule
            .as_deref()
            .and_then(|s| ludus_core::schedule::Schedule::parse(s).ok())
            .and_then(|s| s.next_after(reset))
            .unwrap_or(0);
        for hook in &self.native.leaderboard_reset {
            hook(
                self.native_call(CallContext::new(ExecutionMode::LeaderboardReset)),
                board.clone(),
                reset,
            )
            .await;
        }
        let value = crate::lua::nk_leaderboard::leaderboard_json(board, reset, next);
        self.schedule_call(
            "leaderboard_reset",
            ExecutionMode::LeaderboardReset,
            vec![value, Value::from(reset)],
        )
        .await;
    }

    async fn tournament_end(
        &self,
        t: &ludus_core::leaderboard_service::TournamentView,
        end: i64,
        reset: i64,
    ) {
        let hooks = &self.native.tournament_end;
        self.tournament_hook(
            hooks,
            "tournament_end",
            ExecutionMode::TournamentEnd,
            t,
            end,
            reset,
        )
        .await;
    }

    async fn tournament_reset(
        &self,
        t: &ludus_core::leaderboard_service::TournamentView,
        end: i64,
        reset: i64,
    ) {
        let hooks = &self.native.tournament_reset;
        self.tournament_hook(
            hooks,
            "tournament_reset",
            ExecutionMode::TournamentReset,
            t,
            end,
            reset,
        )
        .await;
    }
}

impl Runtime {
    /// A tournament's end or reset: the native hooks, then the Lua one
    /// registered under `key`.
    async fn tournament_hook(
        &self,
        hooks: &[TournamentHook],
        key: &str,
        mode: ExecutionMode,
        t: &ludus_core::leaderboard_service::TournamentView,
        end: i64,
        reset: i64,
    ) {
        for hook in hooks {
            hook(
                self.native_call(CallContext::new(mode)),
                t.clone(),
                end,
                reset,
            )
            .await;
        }
        let value = crate::lua::nk_leaderboard::tournament_json(t);
        self.schedule_call(key, mode, vec![value, Value::from(end), Value::from(reset)])
            .await;
    }

    /// The Lua hook registered under `key`, then the JS one (which gets
    /// the leaderboard or tournament under Nakama's camelCase JS keys).
    async fn schedule_call(&self, key: &str, mode: ExecutionMode, mut args: Vec<Value>) {
        let wanted = self.lua.as_ref().filter(|lua| {
            let registered = lua.registered();
            match mode {
                ExecutionMode::LeaderboardReset => registered.leaderboard_reset,
                ExecutionMode::TournamentEnd => registered.tournament_end,
                _ => registered.tournament_reset,
            }
        });
        if let Some(lua) = wanted
            && let Err(e) = lua
                .call(key.into(), CallContext::new(mode), args.clone())
                .await
        {
            tracing::error!(error = %e, hook = key, "lua schedule hook failed");
        }
        if let Some(js) = self.js.as_ref().filter(|js| js.has(key)) {
            if let Some(first) = args.first_mut() {
                *first = camel_keys(std::mem::take(first));
            }
            if let Err(e) = js.call(key.into(), CallContext::new(mode), args).await {
                tracing::error!(error = %e, hook = key, "js schedule hook failed");
            }
        }
    }
}

/// Refuses an RPC or hook the JS module registers under a name the native
/// module or a Lua module registered too: which one a client reaches would
/// otherwise depend on the order of lookups.
fn refuse_shared_ids(
    js: &JsRuntime,
    native: &NativeModule,
    lua: Option<&LuaRuntime>,
) -> Result<(), LoadError> {
    for id in js.rpc_ids() {
        let other = if native.rpcs.contains_key(id) {
            Some("the native module")
        } else if lua.is_some_and(|l| l.registered().rpcs.contains(id)) {
            Some("a lua module")
        } else {
            None
        };
        if let Some(other) = other {
            return Err(LoadError::Setup(format!(
                "rpc id {id:?} is registered twice: by the js module {} and by {other}; rename one of them",
                js.module()
            )));
        }
    }
    for name in js.matches().names() {
        let other = if native.matches.contains_key(name) {
            Some("the native module")
        } else if lua.is_some_and(|l| l.has_module(name)) {
            Some("a lua module of that name")
        } else {
            None
        };
        if let Some(other) = other {
            return Err(LoadError::Setup(format!(
                "match handler {name:?} is registered twice: by the js module {} and by {other}; rename one of them",
                js.module()
            )));
        }
    }
    Ok(())
}

/// The matched entries under Nakama's JS key names: `presence.userId`,
/// `sessionId`, `username`, `node`, `properties`, `partyId`.
fn js_matched_entries(entries: Value) -> Value {
    let Value::Array(entries) = entries else {
        return entries;
    };
    let rename = |o: &mut serde_json::Map<String, Value>, from: &str, to: &str| {
        if let Some(v) = o.remove(from) {
            o.insert(to.to_owned(), v);
        }
    };
    Value::Array(
        entries
            .into_iter()
            .map(|mut e| {
                if let Some(o) = e.as_object_mut() {
                    rename(o, "party_id", "partyId");
                    if let Some(Value::Object(p)) = o.get_mut("presence") {
                        rename(p, "user_id", "userId");
                        rename(p, "session_id", "sessionId");
                    }
                }
                e
            })
            .collect(),
    )
}

/// An object's top-level keys in camelCase (`sort_order` → `sortOrder`),
/// as Nakama's JS API names the fields its Lua API names in snake case.
fn camel_keys(v: Value) -> Value {
    let Value::Object(o) = v else {
        return v;
    };
    Value::Object(o.into_iter().map(|(k, v)| (camel(&k), v)).collect())
}

fn camel(k: &str) -> String {
    let mut out = String::with_capacity(k.len());
    let mut upper = false;
    for c in k.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The proto `map<…>` fields of Nakama's API: their keys are the caller's
/// own, never renamed.
const MAP_FIELDS: &[&str] = &[
    "vars",
    "properties",
    "context",
    "metadata",
    "string_properties",
    "numeric_properties",
];

/// A request, response or envelope (protojson with proto field names) as
/// Nakama's JS runtime hands it to hooks: every field name in lowerCamelCase
/// (`display_name` → `displayName`), at every depth, the keys of map
/// fields kept. What a before hook returns decodes either way.
fn js_field_names(v: Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| {
                    let v = if MAP_FIELDS.contains(&k.as_str()) {
                        v
                    } else {
                        js_field_names(v)
                    };
                    (camel(&k), v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(js_field_names).collect()),
        v => v,
    }
}

/// The callback key of an event kind, the same in Lua and JS.
fn event_key(kind: EventKind) -> &'static str {
    match kind {
        EventKind::Custom => "event",
        EventKind::SessionStart => "event_session_start",
        EventKind::SessionEnd => "event_session_end",
    }
}

/// `id` in lower case (RPC ids are case-insensitive), copied only when it
/// has an upper-case letter.
fn lowercase(id: &str) -> std::borrow::Cow<'_, str> {
    if id.bytes().any(|b| b.is_ascii_uppercase()) {
        std::borrow::Cow::Owned(id.to_ascii_lowercase())
    } else {
        std::borrow::Cow::Borrowed(id)
    }
}
