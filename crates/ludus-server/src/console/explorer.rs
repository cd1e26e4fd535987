//! The API explorer (`/v2/console/api/endpoints*`, `API_EXPLORER`): the
//! registered RPCs, and calling one as a chosen user (or as the server) with
//! the session variables given, as Nakama's `CallRpcEndpoint` does. Calling
//! the client API's other routes (`CallApiEndpoint`) is not served yet.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{get, post};
use ludus_core::console_acl::{Level, Need, Resource};
use ludus_runtime::{CallContext, ExecutionMode};
use serde::{Deserialize, Serialize};

use super::accounts::account_id;
use super::{Body, ConsoleRoutes, ConsoleState};
use crate::error::HttpError;

pub(super) fn routes(r: &mut ConsoleRoutes) {
    let need = |level| Need::Permission(Resource::ApiExplorer, level);
    r.add("/v2/console/api/endpoints", need(Level::Read), get(list));
    r.add(
        "/v2/console/api/endpoints/rpc/{method}",
        need(Level::Write),
        post(call_rpc),
    );
}

/// Nakama's `ApiEndpointDescriptor`.
#[derive(Serialize)]
struct Endpoint {
    method: String,
    body_template: String,
}

/// Nakama's `ApiEndpointList`; `endpoints` (the client API's calls) stays
/// empty until `CallApiEndpoint` is served.
#[derive(Serialize)]
struct EndpointList {
    endpoints: Vec<Endpoint>,
    rpc_endpoints: Vec<Endpoint>,
}

async fn list(State(state): State<ConsoleState>) -> Result<Response, HttpError> {
    Ok(crate::api::json(&EndpointList {
        endpoints: Vec::new(),
        rpc_endpoints: state
            .app
            .runtime
            .rpc_ids()
            .into_iter()
            .map(|method| Endpoint {
                method,
                body_template: String::new(),
            })
            .collect(),
    }))
}

/// Nakama's `CallApiEndpointRequest`; the path names the RPC.
#[derive(Deserialize, Default)]
#[serde(default)]
struct CallBody {
    body: String,
    user_id: String,
    session_vars: BTreeMap<String, String>,
}

/// Nakama's `CallApiEndpointResponse`: the RPC's answer, or its error as
/// `error_message` (still HTTP 200, as Nakama).
#[derive(Serialize)]
struct CallReply {
    body: String,
    error_message: String,
}

/// Calls the RPC as `user_id` (its username and the given session
/// variables in `ctx`), or as the server when no user is given.
async fn call_rpc(
    State(state): State<ConsoleState>,
    Path(method): Path<String>,
    Body(req): Body<CallBody>,
) -> Result<Response, HttpError> {
    let runtime = &state.app.runtime;
    if !runtime.has_rpc(&method) {
        return Err(HttpError::new(
            ludus_core::Code::NotFound,
            format!("no rpc {method:?} is registered, list them at /v2/console/api/endpoints"),
        ));
    }
    let mut ctx = CallContext::new(ExecutionMode::Rpc);
    if !req.user_id.is_empty() {
        let user = account_id(&req.user_id)?;
        let account = state.app.accounts.account(user).await?;
        ctx.user_id = Some(user.to_string());
        ctx.username = account.user.username;
        ctx.vars = req.session_vars;
    } else if !req.session_vars.is_empty() {
        return Err(HttpError::invalid(
            "session_vars need a user_id: the server calls without a session",
        ));
    }
    let reply = match runtime.rpc(ctx, &method, req.body).await {
        Ok(body) => CallReply {
            body,
            error_message: String::new(),
        },
        Err(e) => CallReply {
            body: String::new(),
            error_message: e.message,
        },
    };
    Ok(crate::api::json(&reply))
}
