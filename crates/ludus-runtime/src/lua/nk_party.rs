//! `nk` functions over parties: `nk.party_list`. Arguments, defaults and
//! result keys are Nakama's (each party carries its id under Nakama's
//! `match_id` key and under `party_id`).

use std::sync::Arc;

use mlua::{Lua, Table, Value as LuaValue};

use super::shared::LuaShared;

/// Most parties one `nk.party_list` call returns (Nakama's bound).
const MAX_LIST_LIMIT: i64 = 100;

pub(super) fn install(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    let s = shared.clone();
    nk.set(
        "party_list",
        lua.create_function(
            move |lua,
                  (limit, open, show_hidden, query, cursor): (
                Option<i64>,
                LuaValue,
                LuaValue,
                Option<String>,
                Option<String>,
            )| {
                let limit = limit.unwrap_or(10);
                if !(1..=MAX_LIST_LIMIT).contains(&limit) {
                    return Err(mlua::Error::runtime(format!(
                        "expects limit to be 1-{MAX_LIST_LIMIT}"
                    )));
                }
                let open = match open {
                    LuaValue::Nil => None,
                    LuaValue::Boolean(b) => Some(b),
                    _ => return Err(mlua::Error::runtime("expects open true/false or nil")),
                };
                let show_hidden = match show_hidden {
                    LuaValue::Nil => false,
                    LuaValue::Boolean(b) => b,
                    _ => return Err(mlua::Error::runtime("expects show_hidden true/false")),
                };
                let (parties, next) = s
                    .services
                    .party_list(
                        limit as usize,
                        open,
                        show_hidden,
                        query.as_deref().unwrap_or(""),
                        cursor.as_deref().unwrap_or(""),
                    )
                    .map_err(|e| {
                        mlua::Error::runtime(format!("failed to list parties: {}", e.message))
                    })?;
                let list = lua.create_table_with_capacity(parties.len(), 0)?;
                for (i, p) in parties.into_iter().enumerate() {
                    let t = lua.create_table_with_capacity(0, 7)?;
                    t.raw_set("match_id", p.party_id.as_str())?;
                    t.raw_set("party_id", p.party_id)?;
                    t.raw_set("open", p.open)?;
                    t.raw_set("hidden", p.hidden)?;
                    t.raw_set("maxSize", p.max_size)?;
                    t.raw_set("size", p.size)?;
                    t.raw_set("label", p.label)?;
                    list.raw_set(i + 1, t)?;
                }
                Ok((list, next))
            },
        )?,
    )
}
