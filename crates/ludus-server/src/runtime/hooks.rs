//! Before and after hooks around the REST handlers, with Nakama's rules: a
//! before hook sees the request as protojson and may return it changed, or
//! return nothing to reject the call (404); an error it raises answers the
//! call with its code. After hooks see the response and the request; their
//! errors are logged and never change the response.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};

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
        let mut id = [0u8; uuid::fmt::Hyphenated::LENGTH];
        ctx.user_id = Some(caller.user_id.hyphenated().encode_lower(&mut id).to_owned());
        ctx.username = caller.claims.username.clone();
        ctx.vars = caller.claims.vars.clone();
        ctx.session_expiry = caller.claims.expires_at;
    }
    if let Some(addr) = client.0 {
        ctx.client_ip = ip_text(addr.ip());
        ctx.client_port = String::with_capacity(5);
        push_decimal(&mut ctx.client_port, u32::from(addr.port()));
    }
    ctx
}

/// An address as `Display` writes it, an IPv4 one without the formatter
/// (whose padding support made it about 1,600 instructions, 1.4 % of a
/// wallet RPC: BENCHMARKS.md, "Request text without the formatter").
fn ip_text(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => {
            let mut out = String::with_capacity(15);
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    out.push('.');
                }
                push_decimal(&mut out, u32::from(octet));
            }
            out
        }
        IpAddr::V6(v6) => v6.to_string(),
    }
}

/// Appends `n` to `out` in decimal.
fn push_decimal(out: &mut String, n: u32) {
    let mut buf = [0u8; 20];
    out.push_str(crate::digits::decimal_digits(u64::from(n), &mut buf));
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

/// Runs the after hook of a sign-in or a session refresh with the signed-in
/// user's `ctx` (user id, username, vars, expiry), as Nakama runs it.
pub async fn after_sign_in<Req: Serialize>(
    state: &AppState,
    api: &str,
    client: ClientAddr,
    session: &ludus_proto::api::Session,
    req: &Req,
) {
    if !state.runtime.has_after(api) {
        return;
    }
    let caller = state.accounts.verify_access(&session.token).ok();
    after(state, api, caller.as_ref(), client, session, req).await;
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    /// The addresses and ports a `ctx` shows read as `Display` writes them.
    #[test]
    fn addresses_read_as_display_writes_them() {
        let v4 = [
            Ipv4Addr::new(0, 0, 0, 0),
            Ipv4Addr::new(127, 0, 0, 1),
            Ipv4Addr::new(10, 9, 100, 255),
            Ipv4Addr::new(255, 255, 255, 255),
            Ipv4Addr::new(1, 20, 3, 199),
        ];
        for ip in v4 {
            assert_eq!(ip_text(IpAddr::V4(ip)), ip.to_string());
        }
        for ip in [
            Ipv6Addr::LOCALHOST,
            "2001:db8::8a2e:370:7334".parse().unwrap(),
        ] {
            assert_eq!(ip_text(IpAddr::V6(ip)), ip.to_string());
        }
        for n in [0u32, 7, 10, 99, 100, 8080, 65535, u32::MAX] {
            let mut out = String::new();
            push_decimal(&mut out, n);
            assert_eq!(out, n.to_string());
        }
        let mut out = "port ".to_owned();
        push_decimal(&mut out, 42);
        assert_eq!(out, "port 42");
    }

    /// A caller's `ctx` holds its id, the client's address and port as text.
    #[test]
    fn call_context_writes_the_caller_and_the_client() {
        let caller = Caller {
            user_id: uuid::Uuid::parse_str("0195ab3c-7d2e-7f00-8a1b-00c0ffee0042").unwrap(),
            claims: ludus_core::token::SessionClaims {
                username: "player".to_owned(),
                ..Default::default()
            },
        };
        let addr: SocketAddr = "192.168.7.31:50123".parse().unwrap();
        let ctx = call_context(ExecutionMode::Rpc, Some(&caller), ClientAddr(Some(addr)));
        assert_eq!(
            ctx.user_id.as_deref(),
            Some("0195ab3c-7d2e-7f00-8a1b-00c0ffee0042")
        );
        assert_eq!(ctx.username, "player");
        assert_eq!(ctx.client_ip, "192.168.7.31");
        assert_eq!(ctx.client_port, "50123");
        let anonymous = call_context(ExecutionMode::Rpc, None, ClientAddr(None));
        assert_eq!(anonymous.user_id, None);
        assert_eq!(anonymous.client_ip, "");
        assert_eq!(anonymous.client_port, "");
    }
}
