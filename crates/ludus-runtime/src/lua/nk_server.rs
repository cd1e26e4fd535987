//! `nk` functions that call into the server through `RuntimeServices`:
//! sign-in, tokens, accounts, linking, users and outgoing HTTP. Lua runs on a blocking
//! thread, so each call drives the async service with the runtime's handle.
//! Realtime functions live in `nk_realtime.rs`, SQL in `nk_sql.rs`.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use ludus_core::ApiError;
use ludus_core::accounts::Credential;
use ludus_core::model::{Account, AccountUpdate, Identity, User};
use mlua::{Lua, Table, Value as LuaValue};
use uuid::Uuid;

use super::convert;
use super::nk_common::{
    api_error, awaited, block_on, fill_user, json_table, server_function, user_table,
};
use super::nk_common::{arg_error, served};
use super::shared::LuaShared;
use crate::services::HttpRequest;

pub(super) fn install(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    let s = shared.clone();
    nk.set(
        "authenticate_device",
        lua.create_function(
            move |_, (id, username, create): (String, Option<String>, Option<bool>)| {
                authenticate(&s, Credential::Device { id }, username, create)
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "authenticate_custom",
        lua.create_function(
            move |_, (id, username, create): (String, Option<String>, Option<bool>)| {
                authenticate(&s, Credential::Custom { id }, username, create)
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "authenticate_email",
        lua.create_function(
            move |_,
                  (email, password, username, create): (
                Option<String>,
                String,
                Option<String>,
                Option<bool>,
            )| {
                let credential = Credential::Email {
                    email: email.unwrap_or_default(),
                    password,
                };
                authenticate(&s, credential, username, create)
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "authenticate_token_generate",
        lua.create_function(
            move |lua,
                  (user_id, username, exp, vars): (String, String, Option<i64>, Option<Table>)| {
                let uid = parse_uuid(&user_id)?;
                let mut var_map = BTreeMap::new();
                if let Some(vars) = vars {
                    for pair in vars.pairs::<String, String>() {
                        let (k, v) = pair?;
                        var_map.insert(k, v);
                    }
                }
                let (token, exp) = s
                    .services
                    .generate_token(uid, &username, exp.unwrap_or(0), var_map)
                    .map_err(api_error)?;
                Ok((lua.create_string(token)?, exp))
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "account_get_id",
        server_function(lua, shared, move |lua, user_id: String| {
            let s = s.clone();
            async move {
                let uid = parse_uuid(&user_id)?;
                let account = awaited(s.services.account(uid)).await?;
                account_table(&lua, &account)
            }
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "account_import_id",
        server_function(
            lua,
            shared,
            move |lua, (data, user_id): (String, Option<String>)| {
                let s = s.clone();
                async move {
                    let into = match user_id.as_deref().unwrap_or_default() {
                        "" => None,
                        id => Some(Uuid::parse_str(id).map_err(|_| {
                            arg_error(2, "expects user ID to be a valid identifier")
                        })?),
                    };
                    let account = served(
                        "error importing account",
                        s.services.account_import(data, into),
                    )
                    .await?;
                    account_table(&lua, &account)
                }
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "accounts_get_id",
        lua.create_function(move |lua, ids: Vec<String>| {
            let out = lua.create_table()?;
            for id in ids {
                let uid = parse_uuid(&id)?;
                match s.wait(s.services.account(uid)) {
                    Ok(account) => out.raw_push(account_table(lua, &account)?)?,
                    // Unknown ids are left out, as Nakama does.
                    Err(e) if e.code == ludus_core::Code::NotFound => {}
                    Err(e) => return Err(api_error(e)),
                }
            }
            Ok(out)
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "account_update_id",
        lua.create_function(
            move |lua,
                  (
                user_id,
                metadata,
                username,
                display_name,
                timezone,
                location,
                lang_tag,
                avatar_url,
            ): AccountUpdateArgs| {
                let uid = parse_uuid(&user_id)?;
                let metadata = match metadata {
                    Some(t) => Some(convert::json_text(lua, &LuaValue::Table(t))?),
                    None => None,
                };
                let non_empty = |v: Option<String>| v.filter(|v| !v.is_empty());
                let update = AccountUpdate {
                    username: non_empty(username),
                    display_name: non_empty(display_name),
                    avatar_url: non_empty(avatar_url),
                    lang_tag: non_empty(lang_tag),
                    location: non_empty(location),
                    timezone: non_empty(timezone),
                    metadata,
                };
                if update.is_empty() {
                    return Ok(());
                }
                block_on(&s, s.services.update_account(uid, update))
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "users_get_id",
        lua.create_function(
            move |lua, (ids, _facebook_ids): (Option<Vec<String>>, LuaValue)| {
                let ids = ids.unwrap_or_default();
                for id in &ids {
                    parse_uuid(id)?;
                }
                let users = block_on(&s, s.services.users(ids, Vec::new()))?;
                users_table(lua, &users)
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "users_get_username",
        lua.create_function(move |lua, names: Option<Vec<String>>| {
            let users = block_on(&s, s.services.users(Vec::new(), names.unwrap_or_default()))?;
            users_table(lua, &users)
        })?,
    )?;
    for (name, ban) in [("users_ban_id", true), ("users_unban_id", false)] {
        let s = shared.clone();
        nk.set(
            name,
            lua.create_function(move |_, ids: LuaValue| {
                let ids = user_id_list(ids)?;
                if ids.is_empty() {
                    return Ok(());
                }
                if ban {
                    block_on(&s, s.services.users_ban(ids))
                } else {
                    block_on(&s, s.services.users_unban(ids))
                }
            })?,
        )?;
    }
    install_links(lua, shared, nk)?;
    let s = shared.clone();
    nk.set(
        "http_request",
        server_function(lua, shared, move |lua, args: HttpRequestArgs| {
            let s = s.clone();
            async move {
                let (url, method, headers, body, timeout_ms) = args;
                let method = method.to_ascii_uppercase();
                if !["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"].contains(&method.as_str()) {
                    return Err(mlua::Error::runtime(
                        "http_request: expects method to be one of: 'get', 'post', 'put', 'patch', 'delete', 'head'",
                    ));
                }
                let mut header_list = Vec::new();
                if let Some(headers) = headers {
                    for pair in headers.pairs::<String, String>() {
                        let (k, v) = pair.map_err(|_| {
                            mlua::Error::runtime("http_request: header names and values must be strings")
                        })?;
                        header_list.push((k, v));
                    }
                }
                let timeout = match timeout_ms {
                    Some(ms) if ms > 0 => Duration::from_millis(ms as u64),
                    _ => Duration::from_secs(5),
                };
                let request = HttpRequest {
                    url,
                    method,
                    headers: header_list,
                    body: body.map(|b| b.as_bytes().to_vec()).unwrap_or_default(),
                    timeout,
                };
                let response = awaited(s.services.http_request(request)).await?;
                let headers = lua.create_table()?;
                for (name, values) in &response.headers {
                    if let Some(first) = values.first() {
                        headers.raw_set(crate::nk_pure::canonical_header(name), first.as_str())?;
                    }
                }
                Ok((response.status, headers, lua.create_string(&response.body)?))
            }
        })?,
    )?;
    Ok(())
}

/// `nk.http_request(url, method, headers, body, timeout_ms)`.
type HttpRequestArgs = (
    String,
    String,
    Option<Table>,
    Option<mlua::LuaString>,
    Option<i64>,
);

/// `nk.link_device|email|custom(user_id, id…)` and
/// `nk.unlink_device|email|custom(user_id, id)`, with Nakama's argument
/// shapes: every id is required to link and to unlink a device; unlinking
/// an email or custom id without one unlinks whichever is linked.
fn install_links(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    let link = |credential: fn(String, Option<String>) -> Credential| {
        let s = shared.clone();
        lua.create_function(
            move |_, (user_id, id, password): (String, String, Option<String>)| {
                let uid = parse_uuid(&user_id)?;
                if id.is_empty() {
                    return Err(mlua::Error::runtime("expects an identifier to link"));
                }
                let linked = s.services.link(uid, credential(id, password));
                block_on(&s, prefixed("error linking", linked))
            },
        )
    };
    nk.set("link_device", link(|id, _| Credential::Device { id })?)?;
    nk.set("link_custom", link(|id, _| Credential::Custom { id })?)?;
    nk.set(
        "link_email",
        link(|email, password| Credential::Email {
            email,
            password: password.unwrap_or_default(),
        })?,
    )?;
    let unlink = |identity: fn(String) -> Identity, required: bool| {
        let s = shared.clone();
        lua.create_function(move |_, (user_id, id): (String, Option<String>)| {
            let uid = parse_uuid(&user_id)?;
            let id = id.unwrap_or_default();
            if required && id.is_empty() {
                return Err(mlua::Error::runtime("expects a device id to unlink"));
            }
            let unlinked = s.services.unlink(uid, identity(id));
            block_on(&s, prefixed("error unlinking", unlinked))
        })
    };
    nk.set("unlink_device", unlink(Identity::Device, true)?)?;
    nk.set("unlink_custom", unlink(Identity::Custom, false)?)?;
    nk.set("unlink_email", unlink(Identity::Email, false)?)?;
    Ok(())
}

/// Nakama's Lua errors for linking start with what failed.
pub(super) async fn prefixed(
    what: &str,
    call: impl Future<Output = Result<(), ApiError>>,
) -> Result<(), ApiError> {
    call.await
        .map_err(|e| ApiError::new(e.code, format!("{what}: {}", e.message)))
}

/// `nk.account_update_id(user_id, metadata, username, display_name,
/// timezone, location, lang_tag, avatar_url)`.
type AccountUpdateArgs = (
    String,
    Option<Table>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

pub(super) fn authenticate(
    shared: &LuaShared,
    credential: Credential,
    username: Option<String>,
    create: Option<bool>,
) -> mlua::Result<(String, String, bool)> {
    let auth = block_on(
        shared,
        shared.services.authenticate(
            credential,
            username.unwrap_or_default(),
            create.unwrap_or(true),
        ),
    )?;
    Ok((auth.user_id, auth.username, auth.created))
}

pub(super) fn parse_uuid(id: &str) -> mlua::Result<Uuid> {
    Uuid::parse_str(id).map_err(|_| {
        mlua::Error::runtime(format!(
            "expects user id to be a valid identifier, got {id:?}"
        ))
    })
}

/// The user ids of `nk.users_ban_id` and `nk.users_unban_id`, refused with
/// Nakama's messages.
fn user_id_list(ids: LuaValue) -> mlua::Result<Vec<Uuid>> {
    let LuaValue::Table(t) = ids else {
        return Err(arg_error(1, "invalid user id list"));
    };
    let mut out = Vec::new();
    for v in t.sequence_values::<LuaValue>() {
        let id = match v? {
            LuaValue::String(s) if !s.as_bytes().is_empty() => s.to_str()?.to_owned(),
            _ => return Err(arg_error(1, "each user id must be a string")),
        };
        out.push(
            Uuid::parse_str(&id)
                .map_err(|_| arg_error(1, "each user id must be a valid id string"))?,
        );
    }
    Ok(out)
}

fn users_table(lua: &Lua, users: &[User]) -> mlua::Result<Table> {
    let out = lua.create_table_with_capacity(users.len(), 0)?;
    for user in users {
        out.raw_push(user_table(lua, user)?)?;
    }
    Ok(out)
}

/// Nakama's account table: the user's fields at the top level and again
/// under `user`, then wallet, email, devices, custom id and times.
fn account_table(lua: &Lua, account: &Account) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, 25)?;
    fill_user(lua, &t, &account.user)?;
    t.raw_set("user", user_table(lua, &account.user)?)?;
    t.raw_set("wallet", json_table(lua, &account.wallet)?)?;
    if let Some(email) = &account.email {
        t.raw_set("email", email.as_str())?;
    }
    if !account.devices.is_empty() {
        let devices = lua.create_table_with_capacity(account.devices.len(), 0)?;
        for id in &account.devices {
            let d = lua.create_table_with_capacity(0, 1)?;
            d.raw_set("id", id.as_str())?;
            devices.raw_push(d)?;
        }
        t.raw_set("devices", devices)?;
    }
    if let Some(custom_id) = &account.custom_id {
        t.raw_set("custom_id", custom_id.as_str())?;
    }
    if let Some(v) = account.verify_time {
        t.raw_set("verify_time", v)?;
    }
    if let Some(v) = account.disable_time {
        t.raw_set("disable_time", v)?;
    }
    Ok(t)
}
