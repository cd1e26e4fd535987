//! Console sign-in (with its MFA step), MFA setup, sign-out and password
//! setting (`/v2/console/authenticate*`): the only console calls without
//! the ACL gate, since their callers have no session yet (or hand it, or a
//! setup token, in the body).

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use ludus_core::console_service::SignedIn;
use serde::{Deserialize, Serialize};

use super::{Body, ConsoleState, now_ms};
use crate::error::HttpError;

pub(super) fn public_routes() -> Router<ConsoleState> {
    Router::new()
        .route("/v2/console/authenticate", post(authenticate))
        .route("/v2/console/authenticate/logout", post(logout))
        .route("/v2/console/authenticate/mfa", post(mfa_setup))
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
/// gateway emits unpopulated fields. When MFA must be set up, `token` is
/// empty and `mfa_code` is the setup token.
#[derive(Serialize)]
struct ConsoleSession {
    token: String,
    mfa_code: Option<String>,
}

async fn authenticate(
    State(state): State<ConsoleState>,
    Body(req): Body<AuthenticateRequest>,
) -> Result<Response, HttpError> {
    if req.username.is_empty() || req.password.is_empty() {
        return Err(HttpError::invalid(
            "username and password are required to sign in to the console",
        ));
    }
    let signed_in = state
        .console
        .authenticate(&req.username, &req.password, &req.mfa, now_ms())
        .await?;
    Ok(crate::api::json(&match signed_in {
        SignedIn::Session(token) => ConsoleSession {
            token,
            mfa_code: None,
        },
        SignedIn::MfaSetup(code) => ConsoleSession {
            token: String::new(),
            mfa_code: Some(code),
        },
    }))
}

/// Nakama's `AuthenticateMFASetupRequest`: the setup token a sign-in
/// answered, and a first code from the authenticator app.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct MfaSetupRequest {
    mfa: String,
    code: String,
}

/// Nakama's `AuthenticateMFASetupResponse`.
#[derive(Serialize)]
struct MfaSetupResponse {
    recovery_codes: Vec<String>,
}

async fn mfa_setup(
    State(state): State<ConsoleState>,
    Body(req): Body<MfaSetupRequest>,
) -> Result<Response, HttpError> {
    if req.mfa.is_empty() || req.code.is_empty() {
        return Err(HttpError::invalid(
            "mfa (the setup token a sign-in answered) and code (from the authenticator app) are required",
        ));
    }
    let recovery_codes = state
        .console
        .mfa_setup(&req.mfa, &req.code, now_ms())
        .await?;
    Ok(crate::api::json(&MfaSetupResponse { recovery_codes }))
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
