//! Friends over REST, with Nakama's paths, shapes and hooks: `GET /v2/friend`
//! (`listfriends`), `POST /v2/friend` (`addfriends`), `DELETE /v2/friend`
//! (`deletefriends`), `POST /v2/friend/block` (`blockfriends`) and
//! `GET /v2/friend/friends` (`listfriendsoffriends`). Ids and usernames come
//! as repeated query parameters, as grpc-gateway reads them; each handler
//! delegates to `SocialService` on behalf of the caller.

use axum::extract::State;
use axum::response::Response;
use ludus_core::friend;
use ludus_proto::api;
use ludus_proto::pbjson_types::Int32Value;

use super::{empty, encoded_json, json};
use crate::convert;
use crate::error::HttpError;
use crate::extract::{QueryParams, Session};
use crate::runtime::{self, ClientAddr};
use crate::state::AppState;
use crate::wire_json::{self, FriendListWriter};

pub(super) async fn list(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    query: QueryParams,
) -> Result<Response, HttpError> {
    const API: &str = "listfriends";
    let req = api::ListFriendsRequest {
        limit: query.int32("limit")?,
        state: query.int32("state")?,
        cursor: query.get("cursor").unwrap_or_default().to_owned(),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let limit = req.limit.as_ref().map(|l| l.value);
    let filter = req.state.as_ref().map(|s| s.value);
    if !state.runtime.has_after(API) {
        // Written from the store's rows as they are read (a whole list is
        // 1,000 users): no friend is ever owned.
        let expected = limit.map_or(friend::MAX_LIST_LIMIT, |l| {
            usize::try_from(l).map_or(1, |l| l.clamp(1, friend::MAX_LIST_LIMIT))
        });
        let (list, cursor) = state
            .social
            .list_friends_into(
                caller.user_id,
                limit,
                filter,
                &req.cursor,
                FriendListWriter::new(expected),
            )
            .await?;
        return Ok(encoded_json(list.finish(cursor.as_deref())));
    }
    // An after hook sees the wire types, so the page is owned first.
    let page = state
        .social
        .list_friends(caller.user_id, limit, filter, &req.cursor)
        .await?;
    let body = wire_json::friend_list(&page);
    let list = convert::friend_list(page);
    runtime::after(&state, API, Some(&caller), client, &list, &req).await;
    Ok(encoded_json(body))
}

pub(super) async fn add(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    query: QueryParams,
) -> Result<Response, HttpError> {
    const API: &str = "addfriends";
    let req = api::AddFriendsRequest {
        ids: query.all("ids"),
        usernames: query.all("usernames"),
        metadata: query.get("metadata").unwrap_or_default().to_owned(),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    state
        .social
        .add_friends(
            caller.user_id,
            &caller.claims.username,
            &req.ids,
            &req.usernames,
            Some(req.metadata.as_str()),
        )
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
    query: QueryParams,
) -> Result<Response, HttpError> {
    const API: &str = "deletefriends";
    let req = api::DeleteFriendsRequest {
        ids: query.all("ids"),
        usernames: query.all("usernames"),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    state
        .social
        .delete_friends(
            caller.user_id,
            &caller.claims.username,
            &req.ids,
            &req.usernames,
        )
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

pub(super) async fn block(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    query: QueryParams,
) -> Result<Response, HttpError> {
    const API: &str = "blockfriends";
    let req = api::BlockFriendsRequest {
        ids: query.all("ids"),
        usernames: query.all("usernames"),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    state
        .social
        .block_friends(caller.user_id, &req.ids, &req.usernames)
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

pub(super) async fn friends_of_friends(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    query: QueryParams,
) -> Result<Response, HttpError> {
    const API: &str = "listfriendsoffriends";
    let req = api::ListFriendsOfFriendsRequest {
        limit: query.int32("limit")?,
        cursor: query.get("cursor").unwrap_or_default().to_owned(),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let page = state
        .social
        .friends_of_friends(
            caller.user_id,
            req.limit.as_ref().map(|l: &Int32Value| l.value),
            ludus_core::friend::MAX_FOF_LIMIT,
            &req.cursor,
        )
        .await?;
    let list = api::FriendsOfFriendsList {
        friends_of_friends: page
            .friends_of_friends
            .into_iter()
            .map(|f| api::friends_of_friends_list::FriendOfFriend {
                referrer: f.referrer.to_string(),
                user: Some(convert::user(f.user)),
            })
            .collect(),
        cursor: page.cursor.unwrap_or_default(),
    };
    runtime::after(&state, API, Some(&caller), client, &list, &req).await;
    Ok(json(&list))
}
