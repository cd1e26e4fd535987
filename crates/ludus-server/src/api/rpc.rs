//! `POST` and `GET /v2/rpc/{id}`: calls a module's RPC. The caller shows a
//! session token, or the runtime's `http_key` as the `http_key` query
//! parameter or the HTTP Basic user name (server-to-server calls). A POST
//! body is a JSON-encoded string unless `?unwrap` is given, and the answer is
//! `{"payload": "…"}` (raw with `?unwrap`). Errors carry `code`, `message`
//! and `error`, as Nakama's RPC endpoint answers.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::{FromRequest as _, Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ludus_core::Code;
use ludus_core::accounts::Caller;
use ludus_runtime::{ExecutionMode, Headers};
use subtle::ConstantTimeEq as _;

use super::json;
use crate::error::HttpError;
use crate::extract::QueryParams;
use crate::runtime::{ClientAddr, call_context};
use crate::state::AppState;

#[derive(serde::Serialize)]
struct Payload<'a> {
    payload: &'a str,
}

pub(super) async fn call(
    State(state): State<AppState>,
    Path(id): Path<String>,
    method: Method,
    client: ClientAddr,
    query: QueryParams,
    request: Request,
) -> Response {
    // The headers move into the call's context (the `HeaderMap` extractor
    // would clone them); the body is read as the `Bytes` extractor reads it,
    // under the route's body limit.
    let (mut parts, body) = request.into_parts();
    let headers = std::mem::take(&mut parts.headers);
    let body = Bytes::from_request(Request::from_parts(parts, body), &state)
        .await
        .map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                HttpError::with_status(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    Code::InvalidArgument,
                    "request body too large, send a smaller payload",
                )
            } else {
                HttpError::invalid(format!("cannot read request body: {rejection}"))
            }
        });
    answer(run(&state, &id, &method, client, &query, headers, body).await)
}

/// The same call as [`call`] for the HTTP lane (`crate::lane`), which has
/// parsed the request itself: `query` is the raw query string and `body`
/// the whole body, read under the body limit.
pub(crate) async fn call_direct(
    state: &AppState,
    id: &str,
    method: &Method,
    client: ClientAddr,
    query: &str,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let query = QueryParams(
        form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect(),
    );
    answer(run(state, id, method, client, &query, headers, Ok(body)).await)
}

fn answer(result: Result<Response, HttpError>) -> Response {
    match result {
        Ok(response) => response,
        Err(e) => e.with_error_field().into_response(),
    }
}

async fn run(
    state: &AppState,
    id: &str,
    method: &Method,
    client: ClientAddr,
    query: &QueryParams,
    headers: HeaderMap,
    body: Result<Bytes, HttpError>,
) -> Result<Response, HttpError> {
    let caller = authorize(state, query, &headers)?;
    if id.is_empty() {
        return Err(HttpError::invalid("RPC ID must be set"));
    }
    if !state.runtime.has_rpc(id) {
        return Err(HttpError::new(Code::NotFound, "RPC function not found"));
    }
    let unwrap = query.0.iter().any(|(k, _)| k == "unwrap");
    let payload = if method == Method::POST {
        let bytes = body?;
        if bytes.is_empty() {
            String::new()
        } else if unwrap {
            String::from_utf8(bytes.to_vec())
                .map_err(|_| HttpError::invalid("unwrapped rpc payload must be UTF-8 text"))?
        } else {
            serde_json::from_slice::<String>(&bytes).map_err(|_| {
                HttpError::invalid(
                    "rpc body must be a JSON-encoded string, or call with ?unwrap to send it as is",
                )
            })?
        }
    } else {
        String::new()
    };

    let mut ctx = call_context(ExecutionMode::Rpc, caller.as_ref(), client);
    ctx.query_params = grouped(query.0.iter().filter(|(k, _)| k != "http_key").cloned());
    let content_type = unwrap.then(|| {
        headers
            .get(header::CONTENT_TYPE)
            .cloned()
            .unwrap_or_else(|| HeaderValue::from_static("text/plain"))
    });
    ctx.headers = Headers::lazy(move |visit| {
        for (name, value) in &headers {
            visit(name.as_str(), value.as_bytes());
        }
    });
    let result = state.runtime.rpc(ctx, id, payload).await?;
    if let Some(content_type) = content_type {
        let mut res = result.into_response();
        res.headers_mut().insert(header::CONTENT_TYPE, content_type);
        return Ok(res);
    }
    Ok(json(&Payload { payload: &result }))
}

/// The session's user, or `None` for a valid `http_key`; errors otherwise.
fn authorize(
    state: &AppState,
    query: &QueryParams,
    headers: &HeaderMap,
) -> Result<Option<Caller>, HttpError> {
    let http_key = state.config.runtime.http_key.as_bytes();
    if let Some(key) = query.get("http_key").filter(|k| !k.is_empty()) {
        return if bool::from(key.as_bytes().ct_eq(http_key)) {
            Ok(None)
        } else {
            Err(HttpError::unauthenticated("HTTP key invalid"))
        };
    }
    let Some(auth) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return Err(HttpError::unauthenticated(
            "auth token or HTTP key required: send `Authorization: Bearer <token>` or ?http_key=",
        ));
    };
    let (scheme, rest) = auth.split_once(' ').unwrap_or((auth, ""));
    if scheme.eq_ignore_ascii_case("basic") {
        let user = STANDARD
            .decode(rest.trim())
            .ok()
            .map(|raw| match raw.iter().position(|b| *b == b':') {
                Some(i) => raw[..i].to_vec(),
                None => raw,
            })
            .unwrap_or_default();
        return if bool::from(user.ct_eq(http_key)) {
            Ok(None)
        } else {
            Err(HttpError::unauthenticated("HTTP key invalid"))
        };
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(HttpError::unauthenticated("Auth token invalid"));
    }
    state
        .accounts
        .verify_access(rest.trim())
        .map(Some)
        .map_err(|_| HttpError::unauthenticated("Auth token invalid"))
}

fn grouped(pairs: impl Iterator<Item = (String, String)>) -> BTreeMap<String, Vec<String>> {
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (k, v) in pairs {
        map.entry(k).or_default().push(v);
    }
    map
}
