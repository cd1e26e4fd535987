//! Console sign-in, sign-out and password setting
//! (`/v2/console/authenticate*`): the only console calls without the ACL
//! gate, since their callers have no session yet (or hand it in the body).

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use serde::{Deserialize, Serialize};

use super::{Body, ConsoleState, now_ms};
use crate::error::HttpError;

pub(super) fn public_routes() -> Router<ConsoleState> {
    Router::new()
        .route("/v2/console/authenticate", post(authenticate))
        .route("/v2/console/authenticate/logout", post(logout))
        .route(
            "/v2/console/authenticate/password_change",
            post(password_change),
        )
}

/// Nakama's `AuthenticateRequest`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AuthenticateRequest {
    username: String,
    password: String,
    mfa: String,
}

/// Nakama's `ConsoleSession`; every field is written, as Nakama's console
/// gateway emits unpopulated fields.
#[derive(Serialize)]
struct ConsoleSession {
    token: String,
    mfa_code: Option<String>,
}

async fn authenticate(
    State(state): State<ConsoleState>,
    Body(req): Body<AuthenticateRequest>,
) -> Result<Response, HttpError> {
    let _ = req.mfa;
    if req.username.is_empty() || req.password.is_empty() {
        return Err(HttpError::invalid(
            "username and password are required to sign in to the console",
        ));
    }
    let token = state
        .console
        .authenticate(&req.username, &req.password, now_ms())
        .await?;
    Ok(crate::api::json(&ConsoleSession {
        token,
        mfa_code: None,
    }))
}

/// Nakama's `AuthenticateLogoutRequest`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct LogoutRequest {
    token: String,
}

async fn logout(
    State(state): State<ConsoleState>,
    Body(req): Body<LogoutRequest>,
) -> Result<Response, HttpError> {
    state.console.sign_out(&req.token, now_ms()).await?;
    Ok(crate::api::empty())
}

/// Nakama's `AuthenticatePasswordChangeRequest`: the invitation or reset
/// code and the new password.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PasswordChangeRequest {
    code: String,
    password: String,
}

async fn password_change(
    State(state): State<ConsoleState>,
    Body(req): Body<PasswordChangeRequest>,
) -> Result<Response, HttpError> {
    if req.code.is_empty() {
        return Err(HttpError::invalid(
            "code is required, use the one the console user was invited or reset with",
        ));
    }
    state
        .console
        .change_password(&req.code, &req.password, now_ms())
        .await?;
    Ok(crate::api::empty())
}
