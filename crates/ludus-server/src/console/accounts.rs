//! Game accounts in the console (`/v2/console/account*`): list with a
//! filter, get, ban and unban, delete, and a user's friends (one can be
//! removed) and groups,
//! each behind the ACL gate with Nakama's `ACCOUNT*` permissions, over the
//! same services as the client API.

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{delete, get, post};
use ludus_core::console_acl::{Level, Need, Resource};
use ludus_proto::api;
use serde::Serialize;
use uuid::Uuid;

use super::{ConsoleRoutes, ConsoleState};
use crate::convert;
use crate::error::HttpError;
use crate::extract::QueryParams;

/// Accounts in one page of `ListAccounts`, as Nakama lists them.
const PAGE: usize = 100;

pub(super) fn routes(r: &mut ConsoleRoutes) {
    use Level::{Delete, Read, Write};
    use Resource::{Account, AccountFriends, AccountGroups};
    let need = Need::Permission;
    r.add("/v2/console/account", need(Account, Read), get(list));
    r.add(
        "/v2/console/account/{account_id}",
        need(Account, Read),
        get(one),
    );
    r.add(
        "/v2/console/account/{account_id}",
        need(Account, Delete),
        delete(remove),
    );
    r.add(
        "/v2/console/account/{account_id}/ban",
        need(Account, Write),
        post(ban),
    );
    r.add(
        "/v2/console/account/{account_id}/unban",
        need(Account, Write),
        post(unban),
    );
    r.add(
        "/v2/console/account/{account_id}/friend",
        need(AccountFriends, Read),
        get(friends),
    );
    r.add(
        "/v2/console/account/{account_id}/friend/{friend_id}",
        need(AccountFriends, Delete),
        delete(remove_friend),
    );
    r.add(
        "/v2/console/account/{account_id}/group",
        need(AccountGroups, Read),
        get(groups),
    );
}

/// A game account's id from the path: a valid uuid, not the system user.
pub(super) fn account_id(text: &str) -> Result<Uuid, HttpError> {
    match Uuid::parse_str(text) {
        Ok(id) if !id.is_nil() => Ok(id),
        Ok(_) => Err(HttpError::invalid(
            "the system user is not an account, use another user id",
        )),
        Err(_) => Err(HttpError::invalid(format!(
            "user id {text:?} is not a valid uuid"
        ))),
    }
}

/// Nakama's console `AccountList`.
#[derive(Serialize)]
struct AccountList {
    users: Vec<api::User>,
    total_count: i32,
    next_cursor: String,
}

/// `GET /v2/console/account?filter=…&cursor=…`: a user id or an exact
/// username as the filter, else every account in id order, 100 a page.
async fn list(
    State(state): State<ConsoleState>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let filter = query.get("filter").unwrap_or_default().trim();
    let accounts = &state.app.accounts;
    if !filter.is_empty() {
        let filter = [filter.to_owned()];
        let found = match Uuid::parse_str(&filter[0]) {
            Ok(_) => accounts.users(&filter, &[]).await?,
            Err(_) => accounts.users(&[], &filter).await?,
        };
        return Ok(crate::api::json(&AccountList {
            total_count: found.len() as i32,
            users: found.into_iter().map(convert::user).collect(),
            next_cursor: String::new(),
        }));
    }
    let after = match query.get("cursor").unwrap_or_default() {
        "" => Uuid::nil(),
        cursor => Uuid::parse_str(cursor)
            .map_err(|_| HttpError::invalid("cursor is invalid, list again without one"))?,
    };
    let mut page = accounts.users_page(after, PAGE + 1).await?;
    let next_cursor = match page.len() > PAGE {
        true => {
            page.truncate(PAGE);
            page.last().map(|u| u.id.to_string()).unwrap_or_default()
        }
        false => String::new(),
    };
    Ok(crate::api::json(&AccountList {
        total_count: page.len() as i32,
        users: page.into_iter().map(convert::user).collect(),
        next_cursor,
    }))
}

/// Nakama's console `Account`: the account and when it was banned.
#[derive(Serialize)]
struct ConsoleAccount {
    account: api::Account,
    disable_time: Option<ludus_proto::Timestamp>,
}

async fn one(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
) -> Result<Response, HttpError> {
    let id = account_id(&id)?;
    let mut account = state.app.accounts.account(id).await?;
    account.user.online = state.app.sockets.realtime.status.is_online(id);
    let disable_time = account.disable_time.map(convert::timestamp);
    Ok(crate::api::json(&ConsoleAccount {
        account: convert::account(account),
        disable_time,
    }))
}

/// Deletes an account and ends its sessions, as the account's own delete
/// does.
async fn remove(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
) -> Result<Response, HttpError> {
    let id = account_id(&id)?;
    state.app.accounts.account(id).await?;
    state.app.accounts.delete_account(id).await?;
    state.app.leaderboards.forget_owner(id);
    state.app.sockets.realtime.hub().close_banned(&[id]);
    Ok(crate::api::empty())
}

/// Bans an account: it cannot sign in, its tokens are revoked and its
/// sockets closed, on every node.
async fn ban(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
) -> Result<Response, HttpError> {
    let id = account_id(&id)?;
    state.app.accounts.account(id).await?;
    state.app.accounts.ban_users(&[id]).await?;
    state.app.sockets.realtime.hub().close_banned(&[id]);
    Ok(crate::api::empty())
}

async fn unban(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
) -> Result<Response, HttpError> {
    let id = account_id(&id)?;
    state.app.accounts.account(id).await?;
    state.app.accounts.unban_users(&[id]).await?;
    Ok(crate::api::empty())
}

async fn friends(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let id = account_id(&id)?;
    state.app.accounts.account(id).await?;
    let cursor = query.get("cursor").unwrap_or_default();
    let page = state
        .app
        .social
        .list_friends(id, None, query.int32("state")?.map(|s| s.value), cursor)
        .await?;
    Ok(crate::api::json(&convert::friend_list(page)))
}

async fn groups(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let id = account_id(&id)?;
    state.app.accounts.account(id).await?;
    let cursor = query.get("cursor").unwrap_or_default();
    let page = state
        .app
        .social
        .list_user_groups(id, None, query.int32("state")?.map(|s| s.value), cursor)
        .await?;
    Ok(crate::api::json(&convert::user_group_list(page)))
}

/// Removes a friendship (or an invite or block) between the account and
/// another user, on both sides, as the account's own delete does.
async fn remove_friend(
    State(state): State<ConsoleState>,
    Path((id, friend)): Path<(String, String)>,
) -> Result<Response, HttpError> {
    let id = account_id(&id)?;
    let friend = account_id(&friend)?;
    let account = state.app.accounts.account(id).await?;
    state
        .app
        .social
        .delete_friends(id, &account.user.username, &[friend.to_string()], &[])
        .await?;
    Ok(crate::api::empty())
}
