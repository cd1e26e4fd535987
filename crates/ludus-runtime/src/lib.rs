//! The Ludus server runtime: game logic that studios write as Nakama-style
//! Lua modules (run on LuaJIT through `mlua`), as Nakama-style JavaScript
//! bundles (run on QuickJS through `rquickjs`) or as native Rust modules, all
//! behind one [`Runtime`] that the transports call for RPCs and hooks.
//!
//! This crate knows nothing of HTTP routing, WebSockets or SQL: whatever the
//! modules need from the server reaches it through the [`RuntimeServices`]
//! trait, which [`ServerServices`] implements over the account service, the
//! realtime layer and the store; only the server's outgoing HTTP client is
//! injected ([`HttpClient`]). The realtime layer reaches the modules through
//! `ludus_realtime::Modules`, which [`Runtime`] implements.

mod account_import;
mod context;
mod error;
mod events;
mod js;
mod localcache;
mod lua;
mod native;
mod nk_pure;
mod runtime;
mod server_services;
mod services;
mod settings;

pub use context::{CallContext, ExecutionMode, Headers};
pub use error::{LoadError, RuntimeError};
pub use events::Event;
pub use lua::{LuaCheck, UnknownNkReference, check_lua_modules};
pub use ludus_core::Code;
/// The match handler interface, for native match handlers.
pub use ludus_realtime::matches;
pub use native::{
    AfterHook, BeforeHook, MatchFactory, NativeCall, NativeModule, RpcHandler, ShutdownHook,
};
pub use runtime::{HookStats, Runtime, RuntimeInfo};
pub use server_services::ServerServices;
pub use services::{
    Authenticated, HttpClient, HttpFuture, HttpRequest, HttpResponse, RuntimeServices, StreamMeta,
};
pub use settings::RuntimeSettings;
