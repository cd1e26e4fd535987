//! `nk` functions for authoritative matches: `match_create`, `match_get`,
//! `match_list` and `match_signal`, with Nakama's arguments, defaults and
//! result shapes.

use std::sync::Arc;

use ludus_realtime::matches::{ListRequest, MatchListing};
use mlua::{Lua, Table, Value as LuaValue};

use super::convert;
use super::nk_common::{api_error, block_on};
use super::shared::LuaShared;

/// `limit, authoritative, label, min_size, max_size, query`.
type ListArgs = (
    Option<i64>,
    Option<bool>,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<String>,
);

pub(super) fn install(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    let s = shared.clone();
    nk.set(
        "match_create",
        lua.create_function(move |lua, (module, params): (String, LuaValue)| {
            if module.is_empty() {
                return Err(mlua::Error::runtime("match_create: expects a module name"));
            }
            let params = match &params {
                LuaValue::Nil => serde_json::Value::Null,
                v => convert::from_lua(lua, v)
                    .map_err(|e| mlua::Error::runtime(format!("match_create: params: {e}")))?,
            };
            let make = s.handlers().factory(&module);
            block_on(&s, s.services.match_create(&module, params, make))
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "match_get",
        lua.create_function(move |lua, id: String| match s.services.match_get(&id) {
            Some(m) => Ok(LuaValue::Table(match_table(lua, &m)?)),
            None => Ok(LuaValue::Nil),
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "match_list",
        lua.create_function(
            move |lua, (limit, authoritative, label, min_size, max_size, query): ListArgs| {
                let size = |v: Option<i64>| v.map(|n| n.max(0) as usize);
                let request = ListRequest {
                    limit: limit.unwrap_or(1).max(0) as usize,
                    authoritative,
                    label,
                    min_size: size(min_size),
                    max_size: size(max_size),
                    query,
                };
                let found = s.services.match_list(request).map_err(api_error)?;
                let list = lua.create_table_with_capacity(found.len(), 0)?;
                for (i, m) in found.iter().enumerate() {
                    list.raw_set(i + 1, match_table(lua, m)?)?;
                }
                Ok(list)
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "match_signal",
        lua.create_function(move |_, (id, data): (String, Option<String>)| {
            block_on(&s, s.services.match_signal(&id, data.unwrap_or_default()))
        })?,
    )?;
    Ok(())
}

fn match_table(lua: &Lua, m: &MatchListing) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, 6)?;
    t.raw_set("match_id", m.match_id.as_str())?;
    t.raw_set("authoritative", m.authoritative)?;
    if let Some(label) = &m.label {
        t.raw_set("label", label.as_str())?;
    }
    t.raw_set("size", m.size)?;
    t.raw_set("tick_rate", m.tick_rate)?;
    t.raw_set("handler_name", m.handler_name.as_str())?;
    Ok(t)
}
