//! `POST /v2/account/session/refresh` and `POST /v2/session/logout`, with the
//! runtime's `sessionrefresh` and `sessionlogout` hooks.

use axum::extract::State;
use axum::response::Response;
use ludus_proto::api;

use super::{empty, json};
use crate::convert;
use crate::error::HttpError;
use crate::extract::{ProtoJson, ServerKey, Session};
use crate::runtime::{self, ClientAddr};
use crate::state::AppState;

pub(super) async fn refresh(
    State(state): State<AppState>,
    _: ServerKey,
    client: ClientAddr,
    ProtoJson(body): ProtoJson<api::SessionRefreshRequest>,
) -> Result<Response, HttpError> {
    const API: &str = "sessionrefresh";
    let req = runtime::before(&state, API, None, client, body).await?;
    let tokens = state
        .accounts
        .refresh(&req.token, req.vars.clone().into_iter().collect())
        .await?;
    let session = convert::session(tokens);
    runtime::after_sign_in(&state, API, client, &session, &req).await;
    Ok(json(&session))
}

pub(super) async fn logout(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    ProtoJson(body): ProtoJson<api::SessionLogoutRequest>,
) -> Result<Response, HttpError> {
    const API: &str = "sessionlogout";
    let req = runtime::before(&state, API, Some(&caller), client, body).await?;
    state
        .accounts
        .logout(&caller, &req.token, &req.refresh_token)
        .await?;
    runtime::after(
        &state,
        API,
        Some(&caller),
        client,
        &serde_json::Value::Null,
        &req,
    )
    .await;
    Ok(empty())
}
