//! `nk.account_delete_id`, `nk.account_export_id`, `nk.session_logout` and
//! `nk.users_get_random`:
//! accounts as the server, with Nakama's arguments and messages. They go
//! through `AccountService` (`RuntimeServices::account_delete`,
//! `session_logout` and `users_random`), so a logout here is stored and
//! reaches every node as the client's own does.

use std::sync::Arc;

use mlua::{Lua, Table, Value as LuaValue};
use uuid::Uuid;

use super::nk_common::{arg_error, served, server_function, user_table, whole_arg};
use super::shared::LuaShared;

pub(super) fn install(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    let s = shared.clone();
    nk.set(
        "account_delete_id",
        server_function(
            lua,
            shared,
            move |_, (user_id, _recorded): (String, Option<bool>)| {
                let s = s.clone();
                async move {
                    // `recorded` (Nakama's `user_tombstone` row) has no
                    // counterpart: Ludus keeps no tombstones.
                    let user = Uuid::parse_str(&user_id)
                        .map_err(|_| arg_error(1, "expects user ID to be a valid identifier"))?;
                    served(
                        "error while trying to delete account",
                        s.services.account_delete(user),
                    )
                    .await
                }
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "account_export_id",
        server_function(lua, shared, move |_, user_id: String| {
            let s = s.clone();
            async move {
                let user = Uuid::parse_str(&user_id)
                    .map_err(|_| arg_error(1, "expects user ID to be a valid identifier"))?;
                served("error exporting account", s.services.account_export(user)).await
            }
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "session_logout",
        server_function(
            lua,
            shared,
            move |_, (user_id, token, refresh): (String, Option<String>, Option<String>)| {
                let s = s.clone();
                async move {
                    if user_id.is_empty() {
                        return Err(arg_error(1, "expects user id"));
                    }
                    let user = Uuid::parse_str(&user_id)
                        .map_err(|_| arg_error(1, "expects valid user id"))?;
                    served(
                        "failed to logout",
                        s.services.session_logout(
                            user,
                            token.unwrap_or_default(),
                            refresh.unwrap_or_default(),
                        ),
                    )
                    .await
                }
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "users_get_random",
        server_function(lua, shared, move |lua, count: LuaValue| {
            let s = s.clone();
            async move {
                let count = match count {
                    LuaValue::Nil => 0,
                    v => whole_arg(&v, 1, "count must be 0-1000")?,
                };
                if !(0..=1000).contains(&count) {
                    return Err(arg_error(1, "count must be 0-1000"));
                }
                let users = served(
                    "failed to get users",
                    s.services.users_random(count as usize),
                )
                .await?;
                let out = lua.create_table_with_capacity(users.len(), 0)?;
                for u in &users {
                    out.raw_push(user_table(&lua, u)?)?;
                }
                Ok(out)
            }
        })?,
    )?;
    Ok(())
}
