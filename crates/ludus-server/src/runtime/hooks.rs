//! Before and after hooks around the REST handlers, with Nakama's rules: a
//! before hook sees the request as protojson and may return it changed, or
//! return nothing to reject the call (404); an error it raises answers the
//! call with its code. After hooks see the response and the request; their
//! errors are logged and never change the response.

use std::convert::Infallible;
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use ludus_core::Code;
use ludus_core::accounts::Caller;
use ludus_runtime::{CallContext, ExecutionMode, RuntimeError};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::HttpError;
use crate::state::AppState;

/// The client's address, when the listener records it.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientAddr(pub Option<SocketAddr>);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddr {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Infallible> {
        Ok(ClientAddr(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0),
        ))
    }
}

impl From<RuntimeError> for HttpError {
    fn from(e: RuntimeError) -> Self {
        HttpError::new(e.code, e.message)
    }
}

/// The `ctx` of a call made by `caller` (none for sign-in calls).
pub fn call_context(
    mode: ExecutionMode,
    caller: Option<&Caller>,
    client: ClientAddr,
) -> CallContext {
    let mut ctx = CallContext::new(mode);
    if let Some(caller) = caller {
        ctx.user_id = Some(caller.user_id.to_string());
        ctx.username = caller.claims.username.clone();
        ctx.vars = caller.claims.vars.clone();
        ctx.session_expiry = caller.claims.expires_at;
    }
    if let Some(addr) = client.0 {
        ctx.client_ip = addr.ip().to_string();
        ctx.client_port = addr.port().to_string();
    }
    ctx
}

/// Runs the before hook of `api` on `req`, if one is registered, and answers
/// the request to carry on with.
pub async fn before<T>(
    state: &AppState,
    api: &str,
    caller: Option<&Caller>,
    client: ClientAddr,
    req: T,
) -> Result<T, HttpError>
where
    T: Serialize + DeserializeOwned,
{
    if !state.runtime.has_before(api) {
        return Ok(req);
    }
    let value = serde_json::to_value(&req)
        .map_err(|e| HttpError::new(Code::Internal, format!("cannot run before hook: {e}")))?;
    let ctx = call_context(ExecutionMode::Before, caller, client);
    match state.runtime.before(ctx, api, value).await? {
        None => Err(HttpError::new(
            Code::NotFound,
            "requested resource was not found",
        )),
        Some(changed) => {
            let bytes = serde_json::to_vec(&changed).unwrap_or_default();
            ludus_proto::from_json(&bytes).map_err(|e| {
                tracing::error!(api, error = %e, "before hook returned a request that does not decode");
                HttpError::new(
                    Code::Internal,
                    "could not complete runtime before function: it returned an invalid request",
                )
            })
        }
    }
}

/// A before hook of a call without a request body: it may fail the call but
/// has nothing to rewrite.
pub async fn before_without_body(
    state: &AppState,
    api: &str,
    caller: Option<&Caller>,
    client: ClientAddr,
) -> Result<(), HttpError> {
    if !state.runtime.has_before(api) {
        return Ok(());
    }
    let ctx = call_context(ExecutionMode::Before, caller, client);
    state
        .runtime
        .before(ctx, api, serde_json::Value::Null)
        .await?;
    Ok(())
}

/// Runs the after hook of `api`, if any; failures are logged only.
pub async fn after<Res, Req>(
    state: &AppState,
    api: &str,
    caller: Option<&Caller>,
    client: ClientAddr,
    res: &Res,
    req: &Req,
) where
    Res: Serialize,
    Req: Serialize,
{
    if !state.runtime.has_after(api) {
        return;
    }
    let (Ok(res), Ok(req)) = (serde_json::to_value(res), serde_json::to_value(req)) else {
        tracing::error!(api, "cannot encode request or response for the after hook");
        return;
    };
    let ctx = call_context(ExecutionMode::After, caller, client);
    if let Err(e) = state.runtime.after(ctx, api, res, req).await {
        tracing::warn!(api, code = e.code.as_i32(), error = %e.message, "after hook failed");
    }
}
