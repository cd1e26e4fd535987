//! Console users (`/v2/console/user*`): add, list, get, update, delete,
//! password reset, and whether MFA is required or reset, each behind the
//! ACL gate with Nakama's `USER` permissions.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{delete, get, post, put};
use ludus_core::console::ConsoleUser;
use ludus_core::console_acl::{Level, Need, Permissions, Resource};
use serde::{Deserialize, Serialize};

use super::{Body, Caller, ConsoleRoutes, ConsoleState, now_ms};
use crate::error::HttpError;
use crate::extract::QueryParams;

pub(super) fn routes(r: &mut ConsoleRoutes) {
    let user = |level| Need::Permission(Resource::User, level);
    // Nakama asks ACCOUNT write to add a console user; adding one is a
    // change to console users, so Ludus asks USER write.
    r.add("/v2/console/user", user(Level::Write), post(add));
    r.add("/v2/console/user", user(Level::Read), get(list));
    r.add("/v2/console/user", user(Level::Delete), delete(remove));
    // Any signed-in console user may read one user (Nakama: none needed).
    r.add("/v2/console/user/{username}", Need::Session, get(one));
    r.add(
        "/v2/console/user/{username}",
        user(Level::Write),
        put(update),
    );
    r.add(
        "/v2/console/user/{username}/reset/password",
        user(Level::Write),
        post(reset_password),
    );
    r.add(
        "/v2/console/user/{username}/mfa/require",
        user(Level::Write),
        post(require_mfa),
    );
    r.add(
        "/v2/console/user/{username}/mfa/reset",
        user(Level::Write),
        post(reset_mfa),
    );
}

/// Nakama's console `User`, every field written.
#[derive(Serialize)]
pub(super) struct UserJson {
    id: String,
    username: String,
    email: String,
    acl: BTreeMap<String, Permissions>,
    mfa_required: bool,
    mfa_enabled: bool,
    create_time: ludus_proto::Timestamp,
    update_time: ludus_proto::Timestamp,
}

fn user_json(u: ConsoleUser) -> UserJson {
    UserJson {
        id: u.id.to_string(),
        username: u.username,
        email: u.email,
        acl: u.acl.to_map(),
        mfa_required: u.mfa_required,
        mfa_enabled: u.mfa_enabled,
        create_time: crate::convert::timestamp(u.create_time),
        update_time: crate::convert::timestamp(u.update_time),
    }
}

/// Nakama's `AddUserRequest`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AddUserRequest {
    username: String,
    email: String,
    acl: BTreeMap<String, Permissions>,
    mfa_required: bool,
    newsletter_subscription: bool,
}

#[derive(Serialize)]
struct AddUserResponse {
    user: UserJson,
    token: String,
}

async fn add(
    State(state): State<ConsoleState>,
    Caller(caller): Caller,
    Body(req): Body<AddUserRequest>,
) -> Result<Response, HttpError> {
    // Nakama sends the address to its newsletter service; Ludus sends
    // nothing anywhere.
    let _ = req.newsletter_subscription;
    let added = state
        .console
        .add_user(
            &caller,
            &req.username,
            &req.email,
            &req.acl,
            req.mfa_required,
            now_ms(),
        )
        .await?;
    Ok(crate::api::json(&AddUserResponse {
        user: user_json(added.user),
        token: added.code,
    }))
}

#[derive(Serialize)]
struct UserList {
    users: Vec<UserJson>,
}

async fn list(State(state): State<ConsoleState>) -> Result<Response, HttpError> {
    let users = state.console.users().await?;
    Ok(crate::api::json(&UserList {
        users: users.into_iter().map(user_json).collect(),
    }))
}

async fn one(
    State(state): State<ConsoleState>,
    Path(username): Path<String>,
) -> Result<Response, HttpError> {
    let user = state.console.user(&username).await?;
    Ok(crate::api::json(&user_json(user)))
}

/// Nakama's `UpdateUserRequest` (the username is in the path).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct UpdateUserRequest {
    acl: BTreeMap<String, Permissions>,
}

async fn update(
    State(state): State<ConsoleState>,
    Caller(caller): Caller,
    Path(username): Path<String>,
    Body(req): Body<UpdateUserRequest>,
) -> Result<Response, HttpError> {
    let user = state
        .console
        .update_user(&caller, &username, &req.acl, now_ms())
        .await?;
    Ok(crate::api::json(&user_json(user)))
}

/// `DELETE /v2/console/user?username=…`, as Nakama's gateway maps it.
async fn remove(
    State(state): State<ConsoleState>,
    Caller(caller): Caller,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let username = query.get("username").unwrap_or_default();
    state.console.delete_user(&caller, username).await?;
    Ok(crate::api::empty())
}

#[derive(Serialize)]
struct ResetUserResponse {
    code: String,
}

async fn reset_password(
    State(state): State<ConsoleState>,
    Path(username): Path<String>,
) -> Result<Response, HttpError> {
    let code = state.console.reset_password(&username, now_ms()).await?;
    Ok(crate::api::json(&ResetUserResponse { code }))
}

/// Nakama's `RequireUserMfaRequest` (the username is in the path).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RequireMfaRequest {
    required: bool,
}

async fn require_mfa(
    State(state): State<ConsoleState>,
    Path(username): Path<String>,
    Body(req): Body<RequireMfaRequest>,
) -> Result<Response, HttpError> {
    state
        .console
        .require_mfa(&username, req.required, now_ms())
        .await?;
    Ok(crate::api::empty())
}

async fn reset_mfa(
    State(state): State<ConsoleState>,
    Path(username): Path<String>,
) -> Result<Response, HttpError> {
    state.console.reset_mfa(&username, now_ms()).await?;
    Ok(crate::api::empty())
}
