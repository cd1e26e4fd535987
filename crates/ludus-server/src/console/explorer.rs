//! The API explorer (`/v2/console/api/endpoints*`, `API_EXPLORER`): the
//! client API's calls with body templates and the registered RPCs; calling
//! an RPC as a chosen user (or as the server) with the session variables
//! given (`CallRpcEndpoint`), and calling any client API method by its gRPC
//! name as a chosen user (`CallApiEndpoint`). The latter is the REST
//! request of that method (the gRPC bridge's mapping) sent through the
//! client API's own router in process, with a session token made for the
//! user (the server key for `Authenticate*`), so hooks, checks and answers
//! are those of the real call.

use std::collections::BTreeMap;

use axum::body::Body as HttpBody;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderValue, Request, header};
use axum::response::Response;
use axum::routing::{get, post};
use base64::Engine as _;
use http_body_util::BodyExt as _;
use ludus_core::console_acl::{Level, Need, Resource};
use ludus_runtime::{CallContext, ExecutionMode};
use serde::{Deserialize, Serialize};
use tower::ServiceExt as _;

use super::accounts::account_id;
use super::{Body, ConsoleRoutes, ConsoleState};
use crate::error::HttpError;
use crate::grpc::bridge;
use crate::grpc::methods::{self, Method};

pub(super) fn routes(r: &mut ConsoleRoutes) {
    let need = |level| Need::Permission(Resource::ApiExplorer, level);
    r.add("/v2/console/api/endpoints", need(Level::Read), get(list));
    r.add(
        "/v2/console/api/endpoints/rpc/{method}",
        need(Level::Write),
        post(call_rpc),
    );
    r.add(
        "/v2/console/api/endpoints/{method}",
        need(Level::Write),
        post(call_api),
    );
}

/// The client API's methods the explorer offers: every one Ludus serves
/// but `Healthcheck` and `RpcFunc` (RPCs are listed on their own), as
/// Nakama's.
fn explorable(name: &str) -> Option<&'static Method> {
    methods::find(name).filter(|m| !matches!(m.name, "Healthcheck" | "RpcFunc"))
}

/// Nakama's `ApiEndpointDescriptor`.
#[derive(Serialize)]
struct Endpoint {
    method: String,
    body_template: String,
}

/// Nakama's `ApiEndpointList`, each list by name.
#[derive(Serialize)]
struct EndpointList {
    endpoints: Vec<Endpoint>,
    rpc_endpoints: Vec<Endpoint>,
}

async fn list(State(state): State<ConsoleState>) -> Result<Response, HttpError> {
    let mut endpoints: Vec<Endpoint> = methods::METHODS
        .iter()
        .filter(|m| explorable(m.name).is_some())
        .map(|m| Endpoint {
            method: m.name.to_owned(),
            body_template: super::body_templates::template(m.request_name()),
        })
        .collect();
    endpoints.sort_by(|a, b| a.method.cmp(&b.method));
    // A set: already by name.
    let rpc_ids = state.app.runtime.rpc_ids();
    Ok(crate::api::json(&EndpointList {
        endpoints,
        rpc_endpoints: rpc_ids
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

/// Calls a client API method as `user_id` (a session made for it, with the
/// session variables given), or without a session for `Authenticate*`.
/// The call's answer is `body` (the REST API's JSON), its error
/// `error_message`, both with HTTP 200 as Nakama answers them.
async fn call_api(
    State(state): State<ConsoleState>,
    Path(name): Path<String>,
    Body(req): Body<CallBody>,
) -> Result<Response, HttpError> {
    let Some(method) = explorable(&name) else {
        return Err(HttpError::new(
            ludus_core::Code::NotFound,
            format!("no client API method {name:?}, list them at /v2/console/api/endpoints"),
        ));
    };
    let fields = match (method.request_name(), req.body.trim()) {
        ("Empty", "") => serde_json::Value::Object(Default::default()),
        ("Empty", _) => {
            return Err(HttpError::invalid(format!(
                "{name} takes no request body, send an empty body"
            )));
        }
        (_, "") => (method.read_json)(b"{}").map_err(|e| bad_body(&name, &e))?,
        (_, body) => (method.read_json)(body.as_bytes()).map_err(|e| bad_body(&name, &e))?,
    };
    let authorization = match name.starts_with("Authenticate") {
        true => {
            let key = &state.app.config.socket.server_key;
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{key}:"))
            )
        }
        false if req.user_id.is_empty() => {
            return Err(HttpError::invalid(
                "user_id is required: client API calls are made as that user",
            ));
        }
        false => {
            let user = account_id(&req.user_id)?;
            let account = state.app.accounts.account(user).await?;
            let (token, _) = state.app.accounts.generate_token(
                user,
                &account.user.username,
                0,
                req.session_vars,
            );
            format!("Bearer {token}")
        }
    };
    let rest = bridge::rest_request_of(method, fields)
        .map_err(|(_, message)| HttpError::invalid(message))?;
    let mut request = Request::builder()
        .method(rest.method)
        .uri(rest.path_and_query.as_str())
        .header(header::AUTHORIZATION, authorization)
        .body(rest.body.map_or_else(HttpBody::empty, HttpBody::from))
        .map_err(|_| HttpError::invalid("the request fields do not make a valid route"))?;
    request.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    request
        .extensions_mut()
        .insert(ConnectInfo(std::net::SocketAddr::from(([127, 0, 0, 1], 0))));
    let Ok(answer) = state.client_api.clone().oneshot(request).await;
    let status = answer.status();
    let bytes = answer
        .into_body()
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let reply = match status.is_success() {
        true => CallReply {
            body: text,
            error_message: String::new(),
        },
        false => CallReply {
            body: String::new(),
            error_message: serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(str::to_owned))
                .unwrap_or(text),
        },
    };
    Ok(crate::api::json(&reply))
}

fn bad_body(name: &str, e: &ludus_proto::JsonError) -> HttpError {
    HttpError::invalid(format!(
        "the body is not a {name} request: {e}; start from the method's body_template"
    ))
}
