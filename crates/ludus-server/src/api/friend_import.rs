//! Platform friend imports: `POST /v2/friend/facebook`
//! (`importfacebookfriends`) and `POST /v2/friend/steam`
//! (`importsteamfriends`), in Nakama's shapes (the account in the body,
//! `reset` in the query) and with its hooks. `SocialService::import_friends`
//! reads the friends from the platform and makes the friendships.

use axum::extract::State;
use axum::response::Response;
use ludus_core::ApiError;
use ludus_core::social_auth::FriendSource;
use ludus_core::token::Caller;
use ludus_proto::api;
use ludus_proto::pbjson_types::BoolValue;

use super::empty;
use crate::error::HttpError;
use crate::extract::{ProtoJson, QueryParams, Session};
use crate::runtime::{self, ClientAddr};
use crate::state::AppState;

fn reset_param(query: &QueryParams) -> Result<Option<BoolValue>, HttpError> {
    Ok(query.bool("reset")?.map(|value| BoolValue { value }))
}

pub(super) async fn facebook(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    query: QueryParams,
    ProtoJson(account): ProtoJson<api::AccountFacebook>,
) -> Result<Response, HttpError> {
    const API: &str = "importfacebookfriends";
    let req = api::ImportFacebookFriendsRequest {
        account: Some(account),
        reset: reset_param(&query)?,
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let token = req
        .account
        .as_ref()
        .map(|a| a.token.clone())
        .unwrap_or_default();
    if token.is_empty() {
        return Err(ApiError::invalid("facebook token is required").into());
    }
    let reset = req.reset.as_ref().is_some_and(|r| r.value);
    import(
        &state,
        API,
        &caller,
        client,
        FriendSource::Facebook { token },
        reset,
        &req,
    )
    .await
}

pub(super) async fn steam(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    query: QueryParams,
    ProtoJson(account): ProtoJson<api::AccountSteam>,
) -> Result<Response, HttpError> {
    const API: &str = "importsteamfriends";
    let req = api::ImportSteamFriendsRequest {
        account: Some(account),
        reset: reset_param(&query)?,
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    // The ticket is checked (configuration first, then the token, as in
    // Nakama) by the verifier before the friend list is read.
    let token = req
        .account
        .as_ref()
        .map(|a| a.token.clone())
        .unwrap_or_default();
    let reset = req.reset.as_ref().is_some_and(|r| r.value);
    import(
        &state,
        API,
        &caller,
        client,
        FriendSource::SteamTicket { token },
        reset,
        &req,
    )
    .await
}

/// What both imports do once the before hook has had the request: read the
/// friends from the platform and befriend them, then the after hook.
async fn import<Req: serde::Serialize>(
    state: &AppState,
    api: &str,
    caller: &Caller,
    client: ClientAddr,
    source: FriendSource,
    reset: bool,
    req: &Req,
) -> Result<Response, HttpError> {
    state
        .social
        .import_friends(
            state.accounts.social(),
            caller.user_id,
            &caller.claims.username,
            &source,
            reset,
        )
        .await?;
    runtime::after(
        state,
        api,
        Some(caller),
        client,
        &serde_json::Value::Null,
        req,
    )
    .await;
    Ok(empty())
}
