//! `GET`, `PUT` and `DELETE /v2/account`: the caller's own account.

use axum::extract::State;
use axum::response::Response;
use ludus_core::model::AccountUpdate;
use ludus_proto::api;

use super::{empty, json};
use crate::convert;
use crate::error::HttpError;
use crate::extract::{ProtoJson, Session};
use crate::state::AppState;

pub async fn get(
    State(state): State<AppState>,
    Session(caller): Session,
) -> Result<Response, HttpError> {
    let account = state.accounts.account(caller.user_id).await?;
    Ok(json(&convert::account(account)))
}

pub async fn update(
    State(state): State<AppState>,
    Session(caller): Session,
    ProtoJson(body): ProtoJson<api::UpdateAccountRequest>,
) -> Result<Response, HttpError> {
    let update = AccountUpdate {
        username: body.username.map(|v| v.value),
        display_name: body.display_name.map(|v| v.value),
        avatar_url: body.avatar_url.map(|v| v.value),
        lang_tag: body.lang_tag.map(|v| v.value),
        location: body.location.map(|v| v.value),
        timezone: body.timezone.map(|v| v.value),
        metadata: None,
    };
    state
        .accounts
        .update_account(caller.user_id, update)
        .await?;
    Ok(empty())
}

pub async fn delete(
    State(state): State<AppState>,
    Session(caller): Session,
) -> Result<Response, HttpError> {
    state.accounts.delete_account(caller.user_id).await?;
    Ok(empty())
}
