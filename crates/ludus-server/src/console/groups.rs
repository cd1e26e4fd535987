//! Groups in the console (`/v2/console/group*`): list, get, edit, delete,
//! members, an export of the group with all its members, and adding, promoting, demoting and removing members, behind
//! Nakama's `GROUP` permissions (adding members: `ACCOUNT_GROUPS` write, as
//! Nakama). The console acts as the server: no member role is needed.

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{delete, get, post};
use ludus_core::console_acl::{Level, Need, Resource};
use ludus_core::group::GroupUpdate;
use ludus_proto::api;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::accounts::account_id;
use super::{Body, ConsoleRoutes, ConsoleState};
use crate::convert;
use crate::error::HttpError;
use crate::extract::QueryParams;

/// Groups in one page of `ListGroups`, as Nakama's console lists them.
const PAGE: i32 = 100;

pub(super) fn routes(r: &mut ConsoleRoutes) {
    use Level::{Delete, Read, Write};
    let group = |level| Need::Permission(Resource::Group, level);
    r.add("/v2/console/group", group(Read), get(list));
    r.add("/v2/console/group/{group_id}", group(Read), get(one));
    r.add("/v2/console/group/{group_id}", group(Write), post(update));
    r.add(
        "/v2/console/group/{group_id}",
        group(Delete),
        delete(remove),
    );
    r.add(
        "/v2/console/group/{group_id}/export",
        group(Read),
        get(export),
    );
    r.add(
        "/v2/console/group/{group_id}/member",
        group(Read),
        get(members),
    );
    r.add(
        "/v2/console/group/{group_id}/add",
        Need::Permission(Resource::AccountGroups, Write),
        post(add),
    );
    r.add(
        "/v2/console/group/{group_id}/account/{id}/promote",
        group(Write),
        post(promote),
    );
    r.add(
        "/v2/console/group/{group_id}/account/{id}/demote",
        group(Write),
        post(demote),
    );
    r.add(
        "/v2/console/account/{account_id}/group/{group_id}",
        group(Delete),
        delete(remove_member),
    );
}

fn group_id(text: &str) -> Result<Uuid, HttpError> {
    Uuid::parse_str(text)
        .map_err(|_| HttpError::invalid(format!("group id {text:?} is not a valid uuid")))
}

/// The group, or 404.
async fn find(state: &ConsoleState, id: Uuid) -> Result<ludus_core::group::Group, HttpError> {
    state
        .app
        .social
        .get_groups(&[id])
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| HttpError::new(ludus_core::Code::NotFound, "group not found"))
}

/// Nakama's console `GroupList`.
#[derive(Serialize)]
struct GroupList {
    groups: Vec<api::Group>,
    total_count: i32,
    next_cursor: String,
}

/// `GET /v2/console/group?filter=…&cursor=…`: groups whose name starts
/// with the filter (a group id finds that group), 100 a page.
async fn list(
    State(state): State<ConsoleState>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let filter = query.get("filter").unwrap_or_default().trim();
    if let Ok(id) = Uuid::parse_str(filter) {
        let found = state.app.social.get_groups(&[id]).await?;
        return Ok(crate::api::json(&GroupList {
            total_count: found.len() as i32,
            groups: found.into_iter().map(convert::group).collect(),
            next_cursor: String::new(),
        }));
    }
    let cursor = query.get("cursor").unwrap_or_default();
    // The store matches a name exactly, or as a prefix ending in `%`.
    let prefix = match filter {
        "" => String::new(),
        f if f.ends_with('%') => f.to_owned(),
        f => format!("{f}%"),
    };
    let page = state
        .app
        .social
        .list_groups(&prefix, "", None, None, Some(PAGE), cursor)
        .await?;
    Ok(crate::api::json(&GroupList {
        total_count: page.groups.len() as i32,
        groups: page.groups.into_iter().map(convert::group).collect(),
        next_cursor: page.cursor.unwrap_or_default(),
    }))
}

async fn one(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
) -> Result<Response, HttpError> {
    let group = find(&state, group_id(&id)?).await?;
    Ok(crate::api::json(&convert::group(group)))
}

/// Nakama's `UpdateGroupRequest`; absent fields stay as they are.
#[derive(Deserialize, Default)]
#[serde(default)]
struct UpdateBody {
    name: Option<String>,
    description: Option<String>,
    lang_tag: Option<String>,
    metadata: Option<String>,
    avatar_url: Option<String>,
    open: Option<bool>,
    max_count: Option<i32>,
}

async fn update(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
    Body(body): Body<UpdateBody>,
) -> Result<Response, HttpError> {
    let id = group_id(&id)?;
    find(&state, id).await?;
    let update = GroupUpdate {
        name: body.name,
        description: body.description,
        avatar_url: body.avatar_url,
        lang_tag: body.lang_tag,
        metadata: body.metadata,
        open: body.open,
        max_count: body.max_count,
        creator_id: None,
    };
    state.app.social.update_group(None, id, update).await?;
    Ok(crate::api::empty())
}

async fn remove(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
) -> Result<Response, HttpError> {
    let id = group_id(&id)?;
    find(&state, id).await?;
    state.app.social.delete_group(None, id).await?;
    Ok(crate::api::empty())
}

/// Nakama's `GroupExport`: the group and every member.
#[derive(Serialize)]
struct GroupExport {
    group: api::Group,
    members: Vec<api::group_user_list::GroupUser>,
}

fn member(u: ludus_core::group::GroupUser) -> api::group_user_list::GroupUser {
    api::group_user_list::GroupUser {
        user: Some(convert::user(u.user)),
        state: Some(ludus_proto::pbjson_types::Int32Value {
            value: u.role as i32,
        }),
    }
}

/// The group and all its members, read page by page (a group holds at
/// most its `max_count` members).
async fn export(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
) -> Result<Response, HttpError> {
    let id = group_id(&id)?;
    let group = find(&state, id).await?;
    let max = ludus_core::group::MAX_LIST_LIMIT;
    let mut members = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = state
            .app
            .social
            .list_group_users(id, Some(max as i32), max, None, &cursor)
            .await?;
        members.extend(page.users.into_iter().map(member));
        match page.cursor {
            Some(next) if !next.is_empty() => cursor = next,
            _ => break,
        }
    }
    Ok(crate::api::json(&GroupExport {
        group: convert::group(group),
        members,
    }))
}

/// `GET /v2/console/group/{id}/member?cursor=…`: the client API's
/// `GroupUserList`, 100 a page.
async fn members(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let id = group_id(&id)?;
    find(&state, id).await?;
    let max = ludus_core::group::MAX_LIST_LIMIT;
    let page = state
        .app
        .social
        .list_group_users(
            id,
            Some(max as i32),
            max,
            None,
            query.get("cursor").unwrap_or_default(),
        )
        .await?;
    Ok(crate::api::json(&api::GroupUserList {
        group_users: page.users.into_iter().map(member).collect(),
        cursor: page.cursor.unwrap_or_default(),
    }))
}

/// Nakama's `AddGroupUsersRequest`: user ids separated by commas.
#[derive(Deserialize, Default)]
#[serde(default)]
struct AddBody {
    ids: String,
    join_request: bool,
}

async fn add(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
    Body(body): Body<AddBody>,
) -> Result<Response, HttpError> {
    let id = group_id(&id)?;
    if body.join_request {
        return Err(HttpError::invalid(
            "join_request is not supported from the console in this server, add the users as members",
        ));
    }
    let users = body
        .ids
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(account_id)
        .collect::<Result<Vec<_>, _>>()?;
    if users.is_empty() {
        return Err(HttpError::invalid(
            "ids is required: the user ids to add, separated by commas",
        ));
    }
    find(&state, id).await?;
    state.app.social.add_group_users(None, id, &users).await?;
    Ok(crate::api::empty())
}

async fn promote(
    State(state): State<ConsoleState>,
    Path((group, user)): Path<(String, String)>,
) -> Result<Response, HttpError> {
    let (group, user) = (group_id(&group)?, account_id(&user)?);
    find(&state, group).await?;
    state
        .app
        .social
        .promote_group_users(None, group, &[user])
        .await?;
    Ok(crate::api::empty())
}

async fn demote(
    State(state): State<ConsoleState>,
    Path((group, user)): Path<(String, String)>,
) -> Result<Response, HttpError> {
    let (group, user) = (group_id(&group)?, account_id(&user)?);
    find(&state, group).await?;
    state
        .app
        .social
        .demote_group_users(None, group, &[user])
        .await?;
    Ok(crate::api::empty())
}

/// `DELETE /v2/console/account/{account_id}/group/{group_id}`: the user
/// leaves the group (Nakama's `DeleteGroupUser`, a kick by the server).
async fn remove_member(
    State(state): State<ConsoleState>,
    Path((user, group)): Path<(String, String)>,
) -> Result<Response, HttpError> {
    let (user, group) = (account_id(&user)?, group_id(&group)?);
    find(&state, group).await?;
    state
        .app
        .social
        .kick_group_users(None, group, &[user])
        .await?;
    Ok(crate::api::empty())
}
