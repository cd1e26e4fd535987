//! `POST /v2/account/authenticate/{device,email,custom}`: sign in, registering
//! the account when `?create=` allows (the default).

use axum::extract::State;
use axum::response::Response;
use ludus_core::accounts::{AuthRequest, Credential};
use ludus_proto::api;

use super::json;
use crate::convert;
use crate::error::HttpError;
use crate::extract::{ProtoJson, QueryParams, ServerKey};
use crate::state::AppState;

pub async fn device(
    State(state): State<AppState>,
    _: ServerKey,
    query: QueryParams,
    ProtoJson(body): ProtoJson<api::AccountDevice>,
) -> Result<Response, HttpError> {
    let credential = Credential::Device { id: body.id };
    authenticate(&state, &query, credential, body.vars.into_iter().collect()).await
}

pub async fn custom(
    State(state): State<AppState>,
    _: ServerKey,
    query: QueryParams,
    ProtoJson(body): ProtoJson<api::AccountCustom>,
) -> Result<Response, HttpError> {
    let credential = Credential::Custom { id: body.id };
    authenticate(&state, &query, credential, body.vars.into_iter().collect()).await
}

pub async fn email(
    State(state): State<AppState>,
    _: ServerKey,
    query: QueryParams,
    ProtoJson(body): ProtoJson<api::AccountEmail>,
) -> Result<Response, HttpError> {
    if body.email.is_empty() && body.password.is_empty() {
        return Err(HttpError::invalid(
            "email address and password are required",
        ));
    }
    let credential = Credential::Email {
        email: body.email,
        password: body.password,
    };
    authenticate(&state, &query, credential, body.vars.into_iter().collect()).await
}

async fn authenticate(
    state: &AppState,
    query: &QueryParams,
    credential: Credential,
    vars: std::collections::BTreeMap<String, String>,
) -> Result<Response, HttpError> {
    let req = AuthRequest {
        credential,
        username: query.get("username").unwrap_or_default().to_owned(),
        create: query.bool("create")?.unwrap_or(true),
        vars,
    };
    let tokens = state.accounts.authenticate(req).await?;
    Ok(json(&convert::session(tokens)))
}
