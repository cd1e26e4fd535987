//! `GET /v2/user?ids=…&usernames=…`: public profiles of other users.

use axum::extract::State;
use axum::response::Response;
use ludus_proto::api;

use super::json;
use crate::convert;
use crate::error::HttpError;
use crate::extract::{QueryParams, Session};
use crate::state::AppState;

pub async fn get_users(
    State(state): State<AppState>,
    Session(_): Session,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let users = state
        .accounts
        .users(&query.all("ids"), &query.all("usernames"))
        .await?;
    let users = api::Users {
        users: users.into_iter().map(convert::user).collect(),
    };
    Ok(json(&users))
}
