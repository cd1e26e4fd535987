//! `POST /v2/account/authenticate/{device,email,custom}`: sign in, registering
//! the account when `?create=` allows (the default). Each call runs the
//! runtime's `authenticate*` before and after hooks, on Nakama's request
//! shape (`{account, create, username}`).

use std::collections::BTreeMap;

use axum::extract::State;
use axum::response::Response;
use ludus_core::accounts::{AuthRequest, Credential};
use ludus_proto::api;
use ludus_proto::pbjson_types::BoolValue;

use super::json;
use crate::convert;
use crate::error::HttpError;
use crate::extract::{ProtoJson, QueryParams, ServerKey};
use crate::runtime::{self, ClientAddr};
use crate::state::AppState;

pub(super) async fn device(
    State(state): State<AppState>,
    _: ServerKey,
    client: ClientAddr,
    query: QueryParams,
    ProtoJson(body): ProtoJson<api::AccountDevice>,
) -> Result<Response, HttpError> {
    const API: &str = "authenticatedevice";
    let req = api::AuthenticateDeviceRequest {
        account: Some(body),
        create: create_param(&query)?,
        username: username_param(&query),
    };
    let req = runtime::before(&state, API, None, client, req).await?;
    let account = req.account.clone().unwrap_or_default();
    let credential = Credential::Device { id: account.id };
    let session = authenticate(
        &state,
        client,
        &req.username,
        &req.create,
        credential,
        account.vars,
    )
    .await?;
    runtime::after_sign_in(&state, API, client, &session, &req).await;
    Ok(json(&session))
}

pub(super) async fn custom(
    State(state): State<AppState>,
    _: ServerKey,
    client: ClientAddr,
    query: QueryParams,
    ProtoJson(body): ProtoJson<api::AccountCustom>,
) -> Result<Response, HttpError> {
    const API: &str = "authenticatecustom";
    let req = api::AuthenticateCustomRequest {
        account: Some(body),
        create: create_param(&query)?,
        username: username_param(&query),
    };
    let req = runtime::before(&state, API, None, client, req).await?;
    let account = req.account.clone().unwrap_or_default();
    let credential = Credential::Custom { id: account.id };
    let session = authenticate(
        &state,
        client,
        &req.username,
        &req.create,
        credential,
        account.vars,
    )
    .await?;
    runtime::after_sign_in(&state, API, client, &session, &req).await;
    Ok(json(&session))
}

pub(super) async fn email(
    State(state): State<AppState>,
    _: ServerKey,
    client: ClientAddr,
    query: QueryParams,
    ProtoJson(body): ProtoJson<api::AccountEmail>,
) -> Result<Response, HttpError> {
    const API: &str = "authenticateemail";
    let req = api::AuthenticateEmailRequest {
        account: Some(body),
        create: create_param(&query)?,
        username: username_param(&query),
    };
    let req = runtime::before(&state, API, None, client, req).await?;
    let account = req.account.clone().unwrap_or_default();
    if account.email.is_empty() && account.password.is_empty() {
        return Err(HttpError::invalid(
            "email address and password are required",
        ));
    }
    let credential = Credential::Email {
        email: account.email,
        password: account.password,
    };
    let session = authenticate(
        &state,
        client,
        &req.username,
        &req.create,
        credential,
        account.vars,
    )
    .await?;
    runtime::after_sign_in(&state, API, client, &session, &req).await;
    Ok(json(&session))
}

pub(super) fn create_param(query: &QueryParams) -> Result<Option<BoolValue>, HttpError> {
    Ok(query.bool("create")?.map(|value| BoolValue { value }))
}

pub(super) fn username_param(query: &QueryParams) -> String {
    query.get("username").unwrap_or_default().to_owned()
}

pub(super) async fn authenticate(
    state: &AppState,
    client: ClientAddr,
    username: &str,
    create: &Option<BoolValue>,
    credential: Credential,
    vars: BTreeMap<String, String>,
) -> Result<api::Session, HttpError> {
    let req = AuthRequest {
        credential,
        username: username.to_owned(),
        create: create.as_ref().is_none_or(|c| c.value),
        vars,
        source: client.0.map(|a| a.ip()),
    };
    let tokens = state.accounts.authenticate(req).await?;
    Ok(convert::session(tokens))
}
