//! The one seam between the realtime layer and the server's module runtime:
//! [`Modules`] is everything socket messages and the matchmaker ask of Lua
//! and native modules (RPCs, before and after hooks, the matchmaker's
//! matched hook). `ludus_runtime::Runtime` implements it; [`NoModules`] is a
//! server without modules.
//!
//! The runtime's own calls into the realtime layer go the other way, through
//! `Arc<Realtime>`, so nothing here is set after construction: the server
//! builds the realtime layer, then the runtime over it, and hands the
//! runtime to the calls that need it.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use crate::error::{RtCode, RtError};
use crate::hooks::Before;
use crate::registry::SessionHandle;

/// What a [`Modules`] call answers with; it may borrow the modules.
pub type ModuleFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The module runtime as the realtime layer calls it. `name` is Nakama's
/// lower-case message name without underscores, e.g. `channelmessagesend`
/// (see [`crate::hooks::MESSAGE_NAMES`]).
pub trait Modules: Send + Sync + 'static {
    /// Runs the RPC `id` for the socket's `rpc` envelope, with the
    /// session's context; an unknown id answers `RUNTIME_FUNCTION_NOT_FOUND`.
    fn rpc(
        &self,
        session: &SessionHandle,
        id: String,
        payload: String,
    ) -> ModuleFuture<'_, Result<String, RtError>>;

    /// Whether a before hook is registered for the message `name`.
    fn has_rt_before(&self, name: &str) -> bool;

    /// Whether an after hook is registered for the message `name`.
    fn has_rt_after(&self, name: &str) -> bool;

    /// Runs the before hook on the envelope in its JSON form (Nakama's hooks
    /// see the whole envelope, `cid` included).
    fn rt_before(
        &self,
        session: &SessionHandle,
        name: &'static str,
        envelope: Value,
    ) -> ModuleFuture<'_, Before>;

    /// Runs after the reply was queued; failures are only logged.
    fn rt_after(
        &self,
        session: &SessionHandle,
        name: &'static str,
        request: Value,
        response: Value,
    ) -> ModuleFuture<'_, ()>;

    /// `register_matchmaker_matched`: `entries` is the list Nakama's Lua
    /// runtime passes (each with `presence` {user_id, session_id, username,
    /// node}, `properties`, and `party_id` when in a party); a match id
    /// answer replaces the token. `Ok(None)` when no hook is registered.
    fn matchmaker_matched(
        &self,
        entries: Value,
    ) -> ModuleFuture<'_, Result<Option<String>, String>>;
}

/// A server that runs no modules: no hooks, and every RPC is unknown.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoModules;

impl Modules for NoModules {
    fn rpc(
        &self,
        _session: &SessionHandle,
        id: String,
        _payload: String,
    ) -> ModuleFuture<'_, Result<String, RtError>> {
        Box::pin(async move {
            Err(RtError::new(
                RtCode::RuntimeFunctionNotFound,
                format!("rpc function {id:?} not found: this server runs no modules"),
            ))
        })
    }

    fn has_rt_before(&self, _name: &str) -> bool {
        false
    }

    fn has_rt_after(&self, _name: &str) -> bool {
        false
    }

    fn rt_before(
        &self,
        _session: &SessionHandle,
        _name: &'static str,
        envelope: Value,
    ) -> ModuleFuture<'_, Before> {
        Box::pin(async move { Before::Continue(envelope) })
    }

    fn rt_after(
        &self,
        _session: &SessionHandle,
        _name: &'static str,
        _request: Value,
        _response: Value,
    ) -> ModuleFuture<'_, ()> {
        Box::pin(async {})
    }

    fn matchmaker_matched(
        &self,
        _entries: Value,
    ) -> ModuleFuture<'_, Result<Option<String>, String>> {
        Box::pin(async { Ok(None) })
    }
}
