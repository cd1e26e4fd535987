//! `GET /v2/user?ids=…&usernames=…`: public profiles of other users, with the
//! runtime's `getusers` hooks (request shape `{ids, usernames, facebook_ids}`).

use axum::extract::State;
use axum::response::Response;
use ludus_proto::api;

use super::json;
use crate::convert;
use crate::error::HttpError;
use crate::extract::{QueryParams, Session};
use crate::runtime::{self, ClientAddr};
use crate::state::AppState;

pub(super) async fn get_users(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    query: QueryParams,
) -> Result<Response, HttpError> {
    const API: &str = "getusers";
    let req = api::GetUsersRequest {
        ids: query.all("ids"),
        usernames: query.all("usernames"),
        facebook_ids: query.all("facebook_ids"),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let users = state.accounts.users(&req.ids, &req.usernames).await?;
    let realtime = &state.sockets.realtime;
    let users = api::Users {
        users: users
            .into_iter()
            .map(|mut u| {
                u.online = realtime.status.is_online(u.id);
                convert::user(u)
            })
            .collect(),
    };
    runtime::after(&state, API, Some(&caller), client, &users, &req).await;
    Ok(json(&users))
}
