//! `nk.account_delete_id` and `nk.session_logout`: an account's end and its
//! sessions', as the server, with Nakama's arguments and messages. Both go
//! through `AccountService` (`RuntimeServices::account_delete` and
//! `session_logout`), so a logout here is stored and reaches every node as
//! the client's own does.

use std::sync::Arc;

use mlua::{Lua, Table};
use uuid::Uuid;

use super::nk_common::{arg_error, served, server_function};
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
    Ok(())
}
