//! Accounts, users and sessions of Nakama's JS `nk`: `accountGetId`,
//! `accountsGetId`, `accountUpdateId`, `accountDeleteId`, `usersGetId`,
//! `usersGetUsername`, `usersGetRandom`, `usersGetFriendStatus`,
//! `usersBanId`, `usersUnbanId`, `accountExportId`, `accountImportId`,
//! `sessionDisconnect` and `sessionLogout`, over the same
//! `RuntimeServices` calls as the Lua ones.

use std::sync::Arc;

use ludus_core::Code;
use ludus_core::model::AccountUpdate;
use rquickjs::{Ctx, Object};
use serde_json::{Value as Json, json};

use super::nk_common::{
    Args, NkError, NkResult, account_json, answer, arg, define, json_text, nothing, parsed, served,
    user_json, uuids_of,
};
use super::shared::JsShared;

pub(super) fn install<'js>(
    ctx: &Ctx<'js>,
    nk: &Object<'js>,
    shared: &Arc<JsShared>,
) -> rquickjs::Result<()> {
    define(ctx, nk, shared, "accountGetId", |s, a| {
        let user = a.uuid(0, "user id")?;
        let services = s.services.clone();
        let account = served(s, "error getting account", async move {
            services.account(user).await
        })?;
        answer(account_json(&account))
    })?;
    define(ctx, nk, shared, "accountsGetId", |s, a| {
        let ids = uuids_of(a.get(0), "user id")?;
        let services = s.services.clone();
        let accounts = served(s, "failed to get accounts", async move {
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                match services.account(id).await {
                    Ok(account) => out.push(account_json(&account)),
                    // Unknown ids are left out, as Nakama does.
                    Err(e) if e.code == Code::NotFound => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(out)
        })?;
        answer(Json::Array(accounts))
    })?;
    define(ctx, nk, shared, "accountUpdateId", |s, a| {
        let user = a.uuid(0, "user id")?;
        let text = |i: usize, what: &str| -> Result<Option<String>, _> {
            Ok(Some(a.string(i, what)?).filter(|v| !v.is_empty()))
        };
        let update = AccountUpdate {
            username: text(1, "username")?,
            display_name: text(2, "display name")?,
            timezone: text(3, "timezone")?,
            location: text(4, "location")?,
            lang_tag: text(5, "lang tag")?,
            avatar_url: text(6, "avatar url")?,
            metadata: json_text(a.get(7), "metadata")?,
        };
        if update.is_empty() {
            return nothing();
        }
        update.check().map_err(|e| arg(e.message))?;
        let services = s.services.clone();
        served(s, "error while trying to update user", async move {
            services.update_account(user, update).await
        })?;
        nothing()
    })?;
    define(ctx, nk, shared, "accountExportId", |s, a| {
        let user = a.uuid(0, "user id")?;
        let services = s.services.clone();
        let export = served(s, "error exporting account", async move {
            services.account_export(user).await
        })?;
        answer(Json::String(export))
    })?;
    define(ctx, nk, shared, "accountImportId", |s, a| {
        let data = a.string(0, "data")?;
        let into = match a.get(1) {
            Json::Null => None,
            _ => Some(a.uuid(1, "user id")?),
        };
        let services = s.services.clone();
        let account = served(s, "error importing account", async move {
            services.account_import(data, into).await
        })?;
        answer(account_json(&account))
    })?;
    define(ctx, nk, shared, "accountDeleteId", |s, a| {
        // `recorded` (Nakama's tombstone row) has no counterpart: Ludus
        // keeps no tombstones.
        let user = a.uuid(0, "user id")?;
        let services = s.services.clone();
        served(s, "error while trying to delete account", async move {
            services.account_delete(user).await
        })?;
        nothing()
    })?;
    define(ctx, nk, shared, "usersGetId", |s, a| {
        let ids = uuids_of(a.get(0), "user id")?;
        let ids = ids.iter().map(ToString::to_string).collect();
        users(s, ids, Vec::new())
    })?;
    define(ctx, nk, shared, "usersGetUsername", |s, a| {
        let names = a.strings(0, "usernames")?;
        users(s, Vec::new(), names)
    })?;
    define(ctx, nk, shared, "usersGetRandom", |s, a| {
        let count = a.int_or(0, 0, "count")?;
        if !(0..=1000).contains(&count) {
            return Err(arg("count must be 0-1000"));
        }
        let services = s.services.clone();
        let users = served(s, "failed to get users", async move {
            services.users_random(count as usize).await
        })?;
        answer(Json::Array(users.iter().map(user_json).collect()))
    })?;
    define(ctx, nk, shared, "usersGetFriendStatus", |s, a| {
        let user = a.uuid(0, "user id")?;
        let others = uuids_of(a.get(1), "user id")?;
        let services = s.services.clone();
        let friends = served(s, "failed to get user friends status", async move {
            services.social()?.friend_status(user, &others).await
        })?;
        let out = friends
            .iter()
            .map(|f| {
                json!({
                    "user": user_json(&f.user),
                    "state": f.state as i64,
                    "updateTime": f.update_time,
                    "metadata": parsed(&f.metadata),
                })
            })
            .collect();
        answer(Json::Array(out))
    })?;
    for (name, ban) in [("usersBanId", true), ("usersUnbanId", false)] {
        define(ctx, nk, shared, name, move |s, a: &Args| {
            let ids = uuids_of(a.get(0), "user id")?;
            if ids.is_empty() {
                return nothing();
            }
            let services = s.services.clone();
            let what = if ban {
                "failed to ban users"
            } else {
                "failed to unban users"
            };
            served(s, what, async move {
                if ban {
                    services.users_ban(ids).await
                } else {
                    services.users_unban(ids).await
                }
            })?;
            nothing()
        })?;
    }
    define(ctx, nk, shared, "sessionDisconnect", |s, a| {
        // Nakama's JS messages.
        let session = a
            .uuid(0, "session id")
            .map_err(|_| arg("expects a valid session id"))?;
        let reason = a.int_or(1, 0, "reason")?;
        if !(0..=4).contains(&reason) {
            return Err(arg("invalid disconnect reason, must be a value 0-4"));
        }
        s.services
            .session_disconnect(session, reason as i32)
            .map_err(|e| NkError::Server(format!("failed to disconnect: {}", e.message)))?;
        nothing()
    })?;
    define(ctx, nk, shared, "sessionLogout", |s, a| {
        let user = a.uuid(0, "user id")?;
        let token = a.string(1, "token")?;
        let refresh = a.string(2, "refresh token")?;
        let services = s.services.clone();
        served(s, "failed to logout", async move {
            services.session_logout(user, token, refresh).await
        })?;
        nothing()
    })?;
    Ok(())
}

fn users(s: &JsShared, ids: Vec<String>, names: Vec<String>) -> NkResult {
    if ids.is_empty() && names.is_empty() {
        return answer(json!([]));
    }
    let services = s.services.clone();
    let users = served(s, "failed to get users", async move {
        services.users(ids, names).await
    })?;
    answer(Json::Array(users.iter().map(user_json).collect()))
}
