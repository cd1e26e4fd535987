//! Groups over REST, with Nakama's paths, shapes and hooks: `POST /v2/group`
//! (`creategroup`), `GET /v2/group` (`listgroups`), `PUT|DELETE
//! /v2/group/{id}` (`updategroup`, `deletegroup`), `POST
//! /v2/group/{id}/join|leave|add|kick|ban|promote|demote` (`joingroup` …
//! `demotegroupusers`, user ids as repeated `user_ids` query parameters),
//! `GET /v2/group/{id}/user` (`listgroupusers`) and `GET
//! /v2/user/{id}/group` (`listusergroups`). Each delegates to
//! `SocialService` on behalf of the caller, whose role in the group decides.

use axum::extract::{Path, State};
use axum::response::Response;
use ludus_core::group::GroupUpdate;
use ludus_core::social_service::{NewGroup, parse_group_id};
use ludus_proto::api;
use uuid::Uuid;

use super::{empty, json};
use crate::convert;
use crate::error::HttpError;
use crate::extract::{ProtoJson, QueryParams, Session};
use crate::runtime::{self, ClientAddr};
use crate::state::AppState;

pub(super) async fn create(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    ProtoJson(body): ProtoJson<api::CreateGroupRequest>,
) -> Result<Response, HttpError> {
    const API: &str = "creategroup";
    let req = runtime::before(&state, API, Some(&caller), client, body).await?;
    let group = state
        .social
        .create_group(
            caller.user_id,
            caller.user_id,
            NewGroup {
                name: req.name.clone(),
                description: req.description.clone(),
                avatar_url: req.avatar_url.clone(),
                lang_tag: req.lang_tag.clone(),
                metadata: String::new(),
                open: req.open,
                max_count: Some(req.max_count),
            },
        )
        .await?;
    let group = convert::group(group);
    runtime::after(&state, API, Some(&caller), client, &group, &req).await;
    Ok(json(&group))
}

pub(super) async fn update(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    Path(group_id): Path<String>,
    ProtoJson(body): ProtoJson<api::UpdateGroupRequest>,
) -> Result<Response, HttpError> {
    const API: &str = "updategroup";
    let req = api::UpdateGroupRequest { group_id, ..body };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let id = parse_group_id(&req.group_id)?;
    let update = GroupUpdate {
        name: req.name.as_ref().map(|v| v.value.clone()),
        description: req.description.as_ref().map(|v| v.value.clone()),
        avatar_url: req.avatar_url.as_ref().map(|v| v.value.clone()),
        lang_tag: req.lang_tag.as_ref().map(|v| v.value.clone()),
        metadata: None,
        open: req.open.as_ref().map(|v| v.value),
        max_count: None,
        creator_id: None,
    };
    state
        .social
        .update_group(Some(caller.user_id), id, update)
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
    Path(group_id): Path<String>,
) -> Result<Response, HttpError> {
    const API: &str = "deletegroup";
    let req = api::DeleteGroupRequest { group_id };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let id = parse_group_id(&req.group_id)?;
    state.social.delete_group(Some(caller.user_id), id).await?;
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

pub(super) async fn join(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    Path(group_id): Path<String>,
) -> Result<Response, HttpError> {
    const API: &str = "joingroup";
    let req = api::JoinGroupRequest { group_id };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let id = parse_group_id(&req.group_id)?;
    state
        .social
        .join_group(caller.user_id, &caller.claims.username, id)
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

pub(super) async fn leave(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    Path(group_id): Path<String>,
) -> Result<Response, HttpError> {
    const API: &str = "leavegroup";
    let req = api::LeaveGroupRequest { group_id };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let id = parse_group_id(&req.group_id)?;
    state.social.leave_group(caller.user_id, id).await?;
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

fn user_ids(ids: &[String]) -> Result<Vec<Uuid>, HttpError> {
    if ids.is_empty() {
        return Err(HttpError::invalid("user_ids must contain at least one id"));
    }
    ids.iter()
        .map(|id| match Uuid::parse_str(id) {
            Ok(u) if !u.is_nil() => Ok(u),
            _ => Err(HttpError::invalid(format!(
                "user id {id:?} is not a valid uuid"
            ))),
        })
        .collect()
}

/// The five member-management calls share one shape: a group id in the
/// path and `user_ids` in the query.
macro_rules! manage_users {
    ($name:ident, $api:literal, $req:ident, $method:ident) => {
        pub(super) async fn $name(
            State(state): State<AppState>,
            Session(caller): Session,
            client: ClientAddr,
            Path(group_id): Path<String>,
            query: QueryParams,
        ) -> Result<Response, HttpError> {
            const API: &str = $api;
            let req = api::$req {
                group_id,
                user_ids: query.all("user_ids"),
            };
            let req = runtime::before(&state, API, Some(&caller), client, req).await?;
            let id = parse_group_id(&req.group_id)?;
            let users = user_ids(&req.user_ids)?;
            state
                .social
                .$method(Some(caller.user_id), id, &users)
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
    };
}

manage_users!(add, "addgroupusers", AddGroupUsersRequest, add_group_users);
manage_users!(
    kick,
    "kickgroupusers",
    KickGroupUsersRequest,
    kick_group_users
);
manage_users!(ban, "bangroupusers", BanGroupUsersRequest, ban_group_users);
manage_users!(
    promote,
    "promotegroupusers",
    PromoteGroupUsersRequest,
    promote_group_users
);
manage_users!(
    demote,
    "demotegroupusers",
    DemoteGroupUsersRequest,
    demote_group_users
);

pub(super) async fn list_users(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    Path(group_id): Path<String>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    const API: &str = "listgroupusers";
    let req = api::ListGroupUsersRequest {
        group_id,
        limit: query.int32("limit")?,
        state: query.int32("state")?,
        cursor: query.get("cursor").unwrap_or_default().to_owned(),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let id = parse_group_id(&req.group_id)?;
    let page = state
        .social
        .list_group_users(
            id,
            req.limit.as_ref().map(|l| l.value),
            ludus_core::group::MAX_LIST_LIMIT,
            req.state.as_ref().map(|s| s.value),
            &req.cursor,
        )
        .await?;
    let list = api::GroupUserList {
        group_users: page
            .users
            .into_iter()
            .map(|u| api::group_user_list::GroupUser {
                user: Some(convert::user(u.user)),
                state: Some(ludus_proto::pbjson_types::Int32Value {
                    value: u.role as i32,
                }),
            })
            .collect(),
        cursor: page.cursor.unwrap_or_default(),
    };
    runtime::after(&state, API, Some(&caller), client, &list, &req).await;
    Ok(json(&list))
}

pub(super) async fn list_user_groups(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    Path(user_id): Path<String>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    const API: &str = "listusergroups";
    let req = api::ListUserGroupsRequest {
        user_id,
        limit: query.int32("limit")?,
        state: query.int32("state")?,
        cursor: query.get("cursor").unwrap_or_default().to_owned(),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let user = Uuid::parse_str(&req.user_id)
        .map_err(|_| HttpError::invalid("user id must be a valid uuid"))?;
    let page = state
        .social
        .list_user_groups(
            user,
            req.limit.as_ref().map(|l| l.value),
            req.state.as_ref().map(|s| s.value),
            &req.cursor,
        )
        .await?;
    let list = convert::user_group_list(page);
    runtime::after(&state, API, Some(&caller), client, &list, &req).await;
    Ok(json(&list))
}

pub(super) async fn list(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    query: QueryParams,
) -> Result<Response, HttpError> {
    const API: &str = "listgroups";
    let req = api::ListGroupsRequest {
        name: query.get("name").unwrap_or_default().to_owned(),
        cursor: query.get("cursor").unwrap_or_default().to_owned(),
        limit: query.int32("limit")?,
        lang_tag: query.get("lang_tag").unwrap_or_default().to_owned(),
        members: query.int32("members")?,
        open: query
            .bool("open")?
            .map(|value| ludus_proto::pbjson_types::BoolValue { value }),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let page = state
        .social
        .list_groups(
            &req.name,
            &req.lang_tag,
            req.members.as_ref().map(|m| m.value),
            req.open.as_ref().map(|o| o.value),
            req.limit.as_ref().map(|l| l.value),
            &req.cursor,
        )
        .await?;
    let list = api::GroupList {
        groups: page.groups.into_iter().map(convert::group).collect(),
        cursor: page.cursor.unwrap_or_default(),
    };
    runtime::after(&state, API, Some(&caller), client, &list, &req).await;
    Ok(json(&list))
}
