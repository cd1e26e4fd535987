//! Native Rust modules: the same registrations as Lua modules (RPCs, before
//! and after hooks, shutdown) made from Rust code compiled into the binary.
//! No dynamic loading: a studio builds its own binary on the `ludus` library.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use ludus_core::ApiError;
use ludus_realtime::matches::{HandlerFactory, MatchHandler};
use serde_json::Value;

use crate::context::{CallContext, ExecutionMode};
use crate::error::RuntimeError;
use crate::services::RuntimeServices;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What a native function is given: the call's context and the server.
#[derive(Clone)]
pub struct NativeCall {
    pub ctx: CallContext,
    pub services: Arc<dyn RuntimeServices>,
    pub(crate) handlers: Handlers,
}

impl NativeCall {
    /// Creates an authoritative match run by the handler `module` (a native
    /// registration or a Lua module), as `nk.match_create` does; answers its
    /// id after `match_init`.
    pub async fn match_create(&self, module: &str, params: Value) -> Result<String, ApiError> {
        let make = self.handlers.factory(module);
        self.services.match_create(module, params, make).await
    }

    /// Queues `event` for the modules' event callbacks, as `nk.event`
    /// does; never waits (a full queue drops it and counts the drop).
    pub fn event(&self, event: crate::events::Event) {
        self.handlers.events.push(crate::events::Queued {
            kind: crate::events::EventKind::Custom,
            ctx: CallContext::new(ExecutionMode::Event),
            event,
        });
    }
}

/// Where match handlers come from: native registrations first, then Lua
/// modules and the JS module's `registerMatch` (each match in a VM or
/// context of its own).
#[derive(Clone)]
pub(crate) struct Handlers {
    pub(crate) services: Arc<dyn RuntimeServices>,
    /// Where [`NativeCall::event`] queues events.
    pub(crate) events: crate::events::EventQueue,
    pub(crate) native: Arc<HashMap<String, MatchFactory>>,
    /// Match handlers written as script modules (Lua or JS), consulted
    /// after the native registrations.
    pub(crate) scripts: ScriptSet,
}

/// The script runtimes that make matches, set once all have loaded. Each
/// runtime reaches the others' handlers through it (a Lua module's
/// `nk.match_create` finds a JS `registerMatch` name and the other way
/// round), which is a cycle: the set holds them weakly, and `Runtime`
/// keeps them alive.
#[derive(Clone, Default)]
pub(crate) struct ScriptSet(Arc<std::sync::OnceLock<Vec<std::sync::Weak<dyn ScriptMatches>>>>);

impl ScriptSet {
    /// Sets the runtimes once; a second call changes nothing.
    pub(crate) fn fill(&self, runtimes: &[Arc<dyn ScriptMatches>]) {
        let _ = self.0.set(runtimes.iter().map(Arc::downgrade).collect());
    }

    fn find(&self, name: &str) -> Option<Arc<dyn ScriptMatches>> {
        self.0
            .get()?
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .find(|s| s.has(name))
    }
}

/// Match handlers that script modules define: the Lua runtime implements
/// it, so [`Handlers`] can make their matches without knowing the runtime
/// behind them (and the runtimes can make native matches in turn).
pub(crate) trait ScriptMatches: Send + Sync {
    /// Whether a module named `name` defines a match handler.
    fn has(&self, name: &str) -> bool;
    /// The factory of a new match run by module `name` (known to [`has`](Self::has)).
    fn factory(self: Arc<Self>, name: &str) -> HandlerFactory;
}

impl Handlers {
    /// The factory of a new match of handler `name`; for an unknown name, one
    /// that fails saying how to register it.
    pub(crate) fn factory(&self, name: &str) -> HandlerFactory {
        if let Some(factory) = self.native.get(name) {
            let (factory, call) = (
                factory.clone(),
                NativeCall {
                    ctx: CallContext::new(ExecutionMode::Match),
                    services: self.services.clone(),
                    handlers: self.clone(),
                },
            );
            return Box::new(move || Ok(factory(call)));
        }
        match self.scripts.find(name) {
            Some(scripts) => scripts.factory(name),
            None => {
                let name = name.to_owned();
                Box::new(move || {
                    Err(format!(
                        "no match handler named {name:?}: register one natively, add {name}.lua under runtime.path or call initializer.registerMatch({name:?}, ...) in the js module"
                    ))
                })
            }
        }
    }

    /// Whether `name` makes a match.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.native.contains_key(name) || self.scripts.find(name).is_some()
    }
}

impl std::fmt::Debug for NativeCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeCall")
            .field("ctx", &self.ctx)
            .finish()
    }
}

/// An RPC: takes the payload string, answers a payload string.
pub type RpcHandler =
    Arc<dyn Fn(NativeCall, String) -> BoxFuture<Result<String, RuntimeError>> + Send + Sync>;
/// A before hook: gets the request (protojson as a JSON value) and returns it,
/// changed or not, or `None` to reject the call.
pub type BeforeHook =
    Arc<dyn Fn(NativeCall, Value) -> BoxFuture<Result<Option<Value>, RuntimeError>> + Send + Sync>;
/// An after hook: sees the response and the request; its errors are logged.
pub type AfterHook =
    Arc<dyn Fn(NativeCall, Value, Value) -> BoxFuture<Result<(), RuntimeError>> + Send + Sync>;
pub type ShutdownHook = Arc<dyn Fn(NativeCall) -> BoxFuture<()> + Send + Sync>;
/// `register_leaderboard_reset`: the board and the reset time.
pub(crate) type LeaderboardResetHook = Arc<
    dyn Fn(NativeCall, ludus_core::leaderboard::Leaderboard, i64) -> BoxFuture<()> + Send + Sync,
>;
/// `register_tournament_end` / `register_tournament_reset`: the tournament,
/// the end of its active part and its reset (expiry) time.
pub(crate) type TournamentHook = Arc<
    dyn Fn(NativeCall, ludus_core::leaderboard_service::TournamentView, i64, i64) -> BoxFuture<()>
        + Send
        + Sync,
>;
/// `event`, `event_session_start`, `event_session_end`: the event (its
/// `ctx` is the caller's, or the session's).
pub(crate) type EventHook =
    Arc<dyn Fn(NativeCall, crate::events::Event) -> BoxFuture<()> + Send + Sync>;
/// `matchmaker_matched`: the matched entries (Nakama's shape, as the Lua
/// callback gets them); answers the id of a match to send the players to,
/// or `None` for a token they join a relayed match with.
pub(crate) type MatchedHook =
    Arc<dyn Fn(NativeCall, Value) -> BoxFuture<Result<Option<String>, RuntimeError>> + Send + Sync>;
/// A store's server notification (`registerPurchaseNotificationApple` and
/// its three siblings): the stored purchase or subscription it changed,
/// Nakama's notification type and the store's payload. An error is logged.
pub(crate) type StoreNotificationHook = Arc<
    dyn Fn(
            NativeCall,
            ludus_core::purchase::notification::StoreNotification,
        ) -> BoxFuture<Result<(), RuntimeError>>
        + Send
        + Sync,
>;
/// Makes the handler of one new authoritative match.
pub type MatchFactory = Arc<dyn Fn(NativeCall) -> Box<dyn MatchHandler> + Send + Sync>;

/// Decides whether a written object goes into a storage index (true) or
/// stays out of it (false).
pub(crate) type IndexFilterFn =
    Arc<dyn Fn(&ludus_core::storage::StorageObject) -> bool + Send + Sync>;

/// Registrations of a native module. Names are matched case-insensitively,
/// as Nakama does: `rpc("Echo", …)` answers `/v2/rpc/echo`.
#[derive(Clone, Default)]
pub struct NativeModule {
    pub(crate) rpcs: HashMap<String, RpcHandler>,
    pub(crate) before: HashMap<String, BeforeHook>,
    pub(crate) after: HashMap<String, AfterHook>,
    pub(crate) shutdown: Vec<ShutdownHook>,
    pub(crate) matches: HashMap<String, MatchFactory>,
    pub(crate) storage_indexes: Vec<ludus_core::storage_index::IndexSpec>,
    pub(crate) index_filters: HashMap<String, IndexFilterFn>,
    pub(crate) leaderboard_reset: Vec<LeaderboardResetHook>,
    pub(crate) tournament_end: Vec<TournamentHook>,
    pub(crate) tournament_reset: Vec<TournamentHook>,
    pub(crate) events: Vec<EventHook>,
    pub(crate) session_start: Vec<EventHook>,
    pub(crate) session_end: Vec<EventHook>,
    pub(crate) matchmaker_matched: Option<MatchedHook>,
    /// Keyed by the callback's key (`purchase_notification_apple`, …).
    pub(crate) store_notifications: HashMap<&'static str, StoreNotificationHook>,
}

impl std::fmt::Debug for NativeModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeModule")
            .field("rpcs", &self.rpcs.keys().collect::<Vec<_>>())
            .field("before", &self.before.keys().collect::<Vec<_>>())
            .field("after", &self.after.keys().collect::<Vec<_>>())
            .field("matches", &self.matches.keys().collect::<Vec<_>>())
            .field("storage_indexes", &self.storage_indexes)
            .finish()
    }
}

impl NativeModule {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn rpc<F, Fut>(mut self, id: &str, handler: F) -> Self
    where
        F: Fn(NativeCall, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, RuntimeError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        self.rpcs.insert(
            id.to_ascii_lowercase(),
            Arc::new(move |call, payload| Box::pin(handler(call, payload))),
        );
        self
    }

    /// `api` is Nakama's API name, e.g. `authenticatedevice` or `getaccount`.
    pub fn before<F, Fut>(mut self, api: &str, hook: F) -> Self
    where
        F: Fn(NativeCall, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Option<Value>, RuntimeError>> + Send + 'static,
    {
        let hook = Arc::new(hook);
        self.before.insert(
            api.to_ascii_lowercase(),
            Arc::new(move |call, req| Box::pin(hook(call, req))),
        );
        self
    }

    /// `api` as for [`NativeModule::before`]; the hook gets `(response, request)`.
    pub fn after<F, Fut>(mut self, api: &str, hook: F) -> Self
    where
        F: Fn(NativeCall, Value, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), RuntimeError>> + Send + 'static,
    {
        let hook = Arc::new(hook);
        self.after.insert(
            api.to_ascii_lowercase(),
            Arc::new(move |call, res, req| Box::pin(hook(call, res, req))),
        );
        self
    }

    pub fn shutdown<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(NativeCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let hook = Arc::new(hook);
        self.shutdown
            .push(Arc::new(move |call| Box::pin(hook(call))));
        self
    }

    /// Called with each event (`nk.event`, [`NativeCall::event`],
    /// `POST /v2/event`), off the sender's path, as `register_event`.
    pub fn event<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(NativeCall, crate::events::Event) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let hook = Arc::new(hook);
        self.events
            .push(Arc::new(move |call, event| Box::pin(hook(call, event))));
        self
    }

    /// Called when a socket session starts (`register_event_session_start`);
    /// `call.ctx` is the session's.
    pub fn event_session_start<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(NativeCall, crate::events::Event) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let hook = Arc::new(hook);
        self.session_start
            .push(Arc::new(move |call, event| Box::pin(hook(call, event))));
        self
    }

    /// Called when a socket session ends (`register_event_session_end`).
    pub fn event_session_end<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(NativeCall, crate::events::Event) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let hook = Arc::new(hook);
        self.session_end
            .push(Arc::new(move |call, event| Box::pin(hook(call, event))));
        self
    }

    /// Decides what the matchmaker's matched players join
    /// (`register_matchmaker_matched`): the id of an authoritative match, or
    /// `None` for a relayed one. A native hook wins over a Lua one.
    pub fn matchmaker_matched<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(NativeCall, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Option<String>, RuntimeError>> + Send + 'static,
    {
        let hook = Arc::new(hook);
        self.matchmaker_matched =
            Some(Arc::new(move |call, entries| Box::pin(hook(call, entries))));
        self
    }

    /// Registers an authoritative match handler under `name`, the name
    /// `nk.match_create` and native code create matches with. `factory` is
    /// called once per match.
    pub fn match_handler<F, H>(mut self, name: &str, factory: F) -> Self
    where
        F: Fn(NativeCall) -> H + Send + Sync + 'static,
        H: MatchHandler,
    {
        self.matches.insert(
            name.to_owned(),
            Arc::new(move |call| Box::new(factory(call)) as Box<dyn MatchHandler>),
        );
        self
    }

    /// Declares a storage search index, as `nk.register_storage_index`; it
    /// is created when the runtime starts.
    pub fn storage_index(mut self, spec: ludus_core::storage_index::IndexSpec) -> Self {
        self.storage_indexes.push(spec);
        self
    }

    /// The filter of storage index `name`, as
    /// `nk.register_storage_index_filter`; it wins over a Lua one.
    pub fn storage_index_filter<F>(mut self, name: &str, filter: F) -> Self
    where
        F: Fn(&ludus_core::storage::StorageObject) -> bool + Send + Sync + 'static,
    {
        self.index_filters.insert(name.to_owned(), Arc::new(filter));
        self
    }

    /// Runs when a leaderboard's reset schedule ends a period, once per
    /// period (as `nk.register_leaderboard_reset`).
    pub fn leaderboard_reset<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(NativeCall, ludus_core::leaderboard::Leaderboard, i64) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let hook = Arc::new(hook);
        self.leaderboard_reset
            .push(Arc::new(move |call, board, reset| {
                Box::pin(hook(call, board, reset))
            }));
        self
    }

    /// Runs when a tournament period's active part ends (as
    /// `nk.register_tournament_end`).
    pub fn tournament_end<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(NativeCall, ludus_core::leaderboard_service::TournamentView, i64, i64) -> Fut
            + Send
            + Sync
            + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let hook = Arc::new(hook);
        self.tournament_end
            .push(Arc::new(move |call, t, end, reset| {
                Box::pin(hook(call, t, end, reset))
            }));
        self
    }

    /// Runs when a tournament period ends and its records expire (as
    /// `nk.register_tournament_reset`).
    pub fn tournament_reset<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(NativeCall, ludus_core::leaderboard_service::TournamentView, i64, i64) -> Fut
            + Send
            + Sync
            + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let hook = Arc::new(hook);
        self.tournament_reset
            .push(Arc::new(move |call, t, end, reset| {
                Box::pin(hook(call, t, end, reset))
            }));
        self
    }

    /// Called when the App Store notifies a refunded one-off purchase
    /// (Nakama's `RegisterPurchaseNotificationApple`).
    pub fn purchase_notification_apple<F, Fut>(self, hook: F) -> Self
    where
        F: Fn(NativeCall, ludus_core::purchase::notification::StoreNotification) -> Fut
            + Send
            + Sync
            + 'static,
        Fut: Future<Output = Result<(), RuntimeError>> + Send + 'static,
    {
        self.store_notification("purchase_notification_apple", hook)
    }

    /// Called when the App Store notifies a subscription's purchase,
    /// renewal, expiry, cancellation or refund
    /// (`RegisterSubscriptionNotificationApple`).
    pub fn subscription_notification_apple<F, Fut>(self, hook: F) -> Self
    where
        F: Fn(NativeCall, ludus_core::purchase::notification::StoreNotification) -> Fut
            + Send
            + Sync
            + 'static,
        Fut: Future<Output = Result<(), RuntimeError>> + Send + 'static,
    {
        self.store_notification("subscription_notification_apple", hook)
    }

    /// Called when Google Play notifies a voided (refunded) purchase
    /// (`RegisterPurchaseNotificationGoogle`).
    pub fn purchase_notification_google<F, Fut>(self, hook: F) -> Self
    where
        F: Fn(NativeCall, ludus_core::purchase::notification::StoreNotification) -> Fut
            + Send
            + Sync
            + 'static,
        Fut: Future<Output = Result<(), RuntimeError>> + Send + 'static,
    {
        self.store_notification("purchase_notification_google", hook)
    }

    /// Called when Google Play notifies a subscription's change
    /// (`RegisterSubscriptionNotificationGoogle`).
    pub fn subscription_notification_google<F, Fut>(self, hook: F) -> Self
    where
        F: Fn(NativeCall, ludus_core::purchase::notification::StoreNotification) -> Fut
            + Send
            + Sync
            + 'static,
        Fut: Future<Output = Result<(), RuntimeError>> + Send + 'static,
    {
        self.store_notification("subscription_notification_google", hook)
    }

    fn store_notification<F, Fut>(mut self, key: &'static str, hook: F) -> Self
    where
        F: Fn(NativeCall, ludus_core::purchase::notification::StoreNotification) -> Fut
            + Send
            + Sync
            + 'static,
        Fut: Future<Output = Result<(), RuntimeError>> + Send + 'static,
    {
        let hook = Arc::new(hook);
        self.store_notifications
            .insert(key, Arc::new(move |call, n| Box::pin(hook(call, n))));
        self
    }

    /// Adds another module's registrations; later ones win on a clash.
    pub fn merge(mut self, other: NativeModule) -> Self {
        self.leaderboard_reset.extend(other.leaderboard_reset);
        self.tournament_end.extend(other.tournament_end);
        self.tournament_reset.extend(other.tournament_reset);
        self.storage_indexes.extend(other.storage_indexes);
        self.index_filters.extend(other.index_filters);
        self.rpcs.extend(other.rpcs);
        self.before.extend(other.before);
        self.after.extend(other.after);
        self.shutdown.extend(other.shutdown);
        self.matches.extend(other.matches);
        self.events.extend(other.events);
        self.session_start.extend(other.session_start);
        self.session_end.extend(other.session_end);
        self.store_notifications.extend(other.store_notifications);
        if other.matchmaker_matched.is_some() {
            self.matchmaker_matched = other.matchmaker_matched;
        }
        self
    }
}
