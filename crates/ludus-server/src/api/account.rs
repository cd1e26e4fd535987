//! `GET`, `PUT` and `DELETE /v2/account`: the caller's own account, with the
//! runtime's `getaccount`, `updateaccount` and `deleteaccount` hooks.

use axum::extract::State;
use axum::response::Response;
use ludus_core::model::AccountUpdate;
use ludus_proto::api;

use super::{empty, json};
use crate::convert;
use crate::error::HttpError;
use crate::extract::{ProtoJson, Session};
use crate::runtime::{self, ClientAddr};
use crate::state::AppState;

pub(super) async fn get(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
) -> Result<Response, HttpError> {
    const API: &str = "getaccount";
    runtime::before_without_body(&state, API, Some(&caller), client).await?;
    let mut account = state.accounts.account(caller.user_id).await?;
    account.user.online = state.sockets.realtime.status.is_online(account.user.id);
    let account = convert::account(account);
    runtime::after(
        &state,
        API,
        Some(&caller),
        client,
        &account,
        &serde_json::Value::Null,
    )
    .await;
    Ok(json(&account))
}

pub(super) async fn update(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    ProtoJson(body): ProtoJson<api::UpdateAccountRequest>,
) -> Result<Response, HttpError> {
    const API: &str = "updateaccount";
    let req = runtime::before(&state, API, Some(&caller), client, body).await?;
    let update = AccountUpdate {
        username: req.username.clone().map(|v| v.value),
        display_name: req.display_name.clone().map(|v| v.value),
        avatar_url: req.avatar_url.clone().map(|v| v.value),
        lang_tag: req.lang_tag.clone().map(|v| v.value),
        location: req.location.clone().map(|v| v.value),
        timezone: req.timezone.clone().map(|v| v.value),
        metadata: None,
    };
    state
        .accounts
        .update_account(caller.user_id, update)
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

pub(super) async fn delete(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
) -> Result<Response, HttpError> {
    const API: &str = "deleteaccount";
    runtime::before_without_body(&state, API, Some(&caller), client).await?;
    state.accounts.delete_account(caller.user_id).await?;
    // The store removed the user's leaderboard records with the account.
    state.leaderboards.forget_owner(caller.user_id);
    runtime::after(
        &state,
        API,
        Some(&caller),
        client,
        &serde_json::Value::Null,
        &serde_json::Value::Null,
    )
    .await;
    Ok(empty())
}
