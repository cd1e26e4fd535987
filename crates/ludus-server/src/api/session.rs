//! `POST /v2/account/session/refresh` and `POST /v2/session/logout`.

use axum::extract::State;
use axum::response::Response;
use ludus_proto::api;

use super::{empty, json};
use crate::convert;
use crate::error::HttpError;
use crate::extract::{ProtoJson, ServerKey, Session};
use crate::state::AppState;

pub async fn refresh(
    State(state): State<AppState>,
    _: ServerKey,
    ProtoJson(body): ProtoJson<api::SessionRefreshRequest>,
) -> Result<Response, HttpError> {
    let tokens = state
        .accounts
        .refresh(&body.token, body.vars.into_iter().collect())
        .await?;
    Ok(json(&convert::session(tokens)))
}

pub async fn logout(
    State(state): State<AppState>,
    Session(caller): Session,
    ProtoJson(body): ProtoJson<api::SessionLogoutRequest>,
) -> Result<Response, HttpError> {
    state
        .accounts
        .logout(&caller, &body.token, &body.refresh_token)
        .await?;
    Ok(empty())
}
