//! The Ludus server runtime: game logic that studios write as Nakama-style
//! Lua modules (run on LuaJIT through `mlua`) or as native Rust modules, both
//! behind one [`Runtime`] that the transports call for RPCs and hooks.
//!
//! This crate knows nothing of HTTP routing, WebSockets or SQL: whatever the
//! modules need from the server (sign-in, accounts, outgoing HTTP…) reaches it
//! through the [`RuntimeServices`] trait, which `ludus-server` implements.

mod context;
mod cron;
mod error;
mod localcache;
mod lua;
mod native;
mod runtime;
mod services;

pub use context::{CallContext, ExecutionMode};
pub use error::{LoadError, RuntimeError};
pub use ludus_core::Code;
/// The match handler interface, for native match handlers.
pub use ludus_realtime::matches;
pub use native::{
    AfterHook, BeforeHook, MatchFactory, NativeCall, NativeModule, RpcHandler, ShutdownHook,
};
pub use runtime::{Runtime, RuntimeSettings};
pub use services::PartyListing;
pub use services::{
    Authenticated, ChannelMessageSent, HttpRequest, HttpResponse, RuntimeServices, StreamKey,
    StreamMeta, StreamPresence,
};
