//! `POST /v2/account/link/{device,email,custom}` and
//! `POST /v2/account/unlink/{device,email,custom}`: the caller's sign-in
//! identities, with the runtime's hooks under Nakama's names (`linkdevice`,
//! `unlinkemail`, …). Social providers answer 501 (see `absent.rs`).

use axum::extract::State;
use axum::response::Response;
use ludus_core::ApiError;
use ludus_core::accounts::{Caller, Credential};
use ludus_core::model::Identity;
use ludus_proto::api;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::empty;
use crate::error::HttpError;
use crate::extract::{ProtoJson, Session};
use crate::runtime::{self, ClientAddr};
use crate::state::AppState;

/// Runs `change` between the before and after hooks of `api`, on the
/// request the before hook returned.
pub(super) async fn hooked<T>(
    state: &AppState,
    api: &'static str,
    caller: &Caller,
    client: ClientAddr,
    body: T,
    change: impl AsyncFnOnce(&AppState, &T) -> Result<(), ApiError>,
) -> Result<Response, HttpError>
where
    T: Serialize + DeserializeOwned,
{
    let req = runtime::before(state, api, Some(caller), client, body).await?;
    change(state, &req).await?;
    runtime::after(
        state,
        api,
        Some(caller),
        client,
        &serde_json::Value::Null,
        &req,
    )
    .await;
    Ok(empty())
}

pub(super) async fn link_device(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    ProtoJson(body): ProtoJson<api::AccountDevice>,
) -> Result<Response, HttpError> {
    let user = caller.user_id;
    hooked(
        &state,
        "linkdevice",
        &caller,
        client,
        body,
        async |s, req| {
            let id = req.id.clone();
            s.accounts.link(user, Credential::Device { id }).await
        },
    )
    .await
}

pub(super) async fn link_email(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    ProtoJson(body): ProtoJson<api::AccountEmail>,
) -> Result<Response, HttpError> {
    let user = caller.user_id;
    hooked(
        &state,
        "linkemail",
        &caller,
        client,
        body,
        async |s, req| {
            let credential = Credential::Email {
                email: req.email.clone(),
                password: req.password.clone(),
            };
            s.accounts.link(user, credential).await
        },
    )
    .await
}

pub(super) async fn link_custom(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    ProtoJson(body): ProtoJson<api::AccountCustom>,
) -> Result<Response, HttpError> {
    let user = caller.user_id;
    hooked(
        &state,
        "linkcustom",
        &caller,
        client,
        body,
        async |s, req| {
            let id = req.id.clone();
            s.accounts.link(user, Credential::Custom { id }).await
        },
    )
    .await
}

pub(super) async fn unlink_device(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    ProtoJson(body): ProtoJson<api::AccountDevice>,
) -> Result<Response, HttpError> {
    let user = caller.user_id;
    hooked(
        &state,
        "unlinkdevice",
        &caller,
        client,
        body,
        async |s, req| {
            s.accounts
                .unlink(user, Identity::Device(req.id.clone()))
                .await
        },
    )
    .await
}

pub(super) async fn unlink_email(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    ProtoJson(body): ProtoJson<api::AccountEmail>,
) -> Result<Response, HttpError> {
    let user = caller.user_id;
    hooked(
        &state,
        "unlinkemail",
        &caller,
        client,
        body,
        async |s, req| {
            s.accounts
                .unlink(user, Identity::Email(req.email.clone()))
                .await
        },
    )
    .await
}

pub(super) async fn unlink_custom(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    ProtoJson(body): ProtoJson<api::AccountCustom>,
) -> Result<Response, HttpError> {
    let user = caller.user_id;
    hooked(
        &state,
        "unlinkcustom",
        &caller,
        client,
        body,
        async |s, req| {
            s.accounts
                .unlink(user, Identity::Custom(req.id.clone()))
                .await
        },
    )
    .await
}
