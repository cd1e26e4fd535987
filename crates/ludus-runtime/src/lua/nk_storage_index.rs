//! `nk.register_storage_index`, `nk.register_storage_index_filter` and
//! `nk.storage_index_list`, with Nakama's argument order and result shapes.
//! The indexes themselves are `ludus_core::storage_index`; this file turns
//! Lua arguments into its types, and keeps each filter function in the
//! VM's callbacks for `Runtime`'s `IndexFilter` to call.

use std::sync::Arc;

use ludus_core::storage_index::IndexSpec;
use mlua::{Function, Lua, Table, Value as LuaValue};
use uuid::Uuid;

use super::nk_common::loading_state;
use super::nk_common::{arg_error, objects_table, run};
use super::shared::LuaShared;

/// Prefix of the callback key of an index's filter function.
pub(crate) const FILTER_PREFIX: &str = "storage_index_filter/";

pub(super) fn install(
    lua: &Lua,
    shared: &Arc<LuaShared>,
    callbacks: &Table,
    nk: &Table,
) -> mlua::Result<()> {
    let s = shared.clone();
    nk.set(
        "register_storage_index",
        lua.create_function(
            move |lua,
                  (name, collection, key, fields, sort_fields, max_entries, index_only): (
                String,
                String,
                Option<String>,
                Table,
                Option<Table>,
                i64,
                Option<bool>,
            )| {
                let state = loading_state(lua, "register_storage_index")?;
                // Every VM loads the modules; the index is declared once.
                if !state.first {
                    return Ok(());
                }
                let spec = IndexSpec {
                    name,
                    collection,
                    key: key.unwrap_or_default(),
                    fields: strings(&fields, 4)?,
                    sort_fields: sort_fields
                        .map(|t| strings(&t, 5))
                        .transpose()?
                        .unwrap_or_default(),
                    max_entries: usize::try_from(max_entries).unwrap_or(0),
                    index_only: index_only.unwrap_or(false),
                };
                s.services.storage_index_register(spec).map_err(|e| {
                    mlua::Error::runtime(format!("failed to create storage index: {}", e.message))
                })
            },
        )?,
    )?;
    let callbacks = callbacks.clone();
    nk.set(
        "register_storage_index_filter",
        // Nakama's Lua order is (index name, function); (function, name),
        // as the other registrations, is accepted too.
        lua.create_function(move |lua, (a, b): (LuaValue, LuaValue)| {
            let (name, f) = match (a, b) {
                (LuaValue::String(n), LuaValue::Function(f))
                | (LuaValue::Function(f), LuaValue::String(n)) => (n.to_str()?.to_owned(), f),
                _ => {
                    return Err(mlua::Error::runtime(
                        "register_storage_index_filter: expects an index name and a function",
                    ));
                }
            };
            let state = loading_state(lua, "register_storage_index_filter")?;
            let f: Function = f;
            callbacks.raw_set(format!("{FILTER_PREFIX}{name}"), f)?;
            state.registered.borrow_mut().index_filters.insert(name);
            Ok(())
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "storage_index_list",
        lua.create_function(
            move |lua,
                  (name, query, limit, order, caller_id, cursor): (
                String,
                String,
                Option<i64>,
                Option<Table>,
                Option<String>,
                Option<String>,
            )| {
                let limit = limit.unwrap_or(100);
                if !(1..=ludus_core::storage_index::MAX_LIST_LIMIT as i64).contains(&limit) {
                    return Err(arg_error(3, "invalid limit: expects value 1-10000"));
                }
                let order = order
                    .map(|t| strings(&t, 4))
                    .transpose()?
                    .unwrap_or_default();
                let caller = match caller_id.as_deref().unwrap_or_default() {
                    "" => None,
                    id => Some(Uuid::parse_str(id).map_err(|_| {
                        arg_error(5, "expects caller ID to be empty or a valid identifier")
                    })?),
                };
                let cursor = cursor.unwrap_or_default();
                let page = run(
                    &s,
                    "error in storage index list",
                    s.services.storage_index_list(
                        &name,
                        &query,
                        limit as usize,
                        order,
                        caller,
                        &cursor,
                    ),
                )?;
                let objects = objects_table(lua, &page.objects)?;
                let cursor = match page.cursor {
                    Some(c) => LuaValue::String(lua.create_string(&c)?),
                    None => LuaValue::Nil,
                };
                Ok((objects, cursor))
            },
        )?,
    )?;
    Ok(())
}

/// The strings of an array-like table; anything else is an argument error.
fn strings(t: &Table, arg: usize) -> mlua::Result<Vec<String>> {
    t.sequence_values::<LuaValue>()
        .map(|v| match v? {
            LuaValue::String(s) => Ok(s.to_str()?.to_owned()),
            _ => Err(arg_error(arg, "expects each field to be string")),
        })
        .collect()
}
