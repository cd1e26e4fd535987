//! Small utilities of `nk` that need no server call: `uuid_bytes_to_string`,
//! `uuid_string_to_bytes`, `secure_random_bytes`, `rsa_sha256_hash`,
//! `cron_prev` and `file_read`, with Nakama's arguments, results and
//! messages. `file_read` reads only below `runtime.path`, which Nakama does
//! not check.

use std::sync::Arc;

use ludus_core::schedule::Schedule;
use mlua::{Lua, LuaString, Table, Value as LuaValue};

use super::call_state::{check_memory, unlimited, within_limit};
use super::nk_common::{arg_error, whole_arg};
use super::shared::LuaShared;

use crate::nk_pure::MAX_FILE_BYTES;

/// The calls of Nakama's Satori client, each of which fails here.
const SATORI_FUNCTIONS: [&str; 14] = [
    "authenticate",
    "identity_delete",
    "properties_get",
    "properties_update",
    "events_publish",
    "server_events_publish",
    "experiments_list",
    "flags_list",
    "flags_overrides_list",
    "live_events_list",
    "live_event_join",
    "messages_list",
    "message_update",
    "message_delete",
];

use crate::nk_pure::SATORI_NOT_CONFIGURED;

/// The tags of an `nk.metrics_*` call (argument 2): nil or a table of
/// strings by string.
fn metric_tags(tags: Option<Table>) -> mlua::Result<std::collections::BTreeMap<String, String>> {
    let mut out = std::collections::BTreeMap::new();
    if let Some(tags) = tags {
        for pair in tags.pairs::<LuaValue, LuaValue>() {
            match pair? {
                (LuaValue::String(k), LuaValue::String(v)) => {
                    out.insert(k.to_str()?.to_owned(), v.to_str()?.to_owned());
                }
                _ => return Err(arg_error(2, "expects tags to be a table of strings")),
            }
        }
    }
    Ok(out)
}

fn install_metrics(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    let s = shared.clone();
    nk.set(
        "metrics_counter_add",
        lua.create_function(
            move |_, (name, tags, delta): (String, Option<Table>, LuaValue)| {
                let delta = whole_arg(&delta, 3, "expects delta to be a whole number")?;
                s.services
                    .metrics_counter_add(&name, metric_tags(tags)?, delta);
                Ok(())
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "metrics_gauge_set",
        lua.create_function(
            move |_, (name, tags, value): (String, Option<Table>, f64)| {
                s.services
                    .metrics_gauge_set(&name, metric_tags(tags)?, value);
                Ok(())
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "metrics_timer_record",
        lua.create_function(
            move |_, (name, tags, ns): (String, Option<Table>, LuaValue)| {
                let ns = whole_arg(&ns, 3, "expects value to be a whole number of nanoseconds")?;
                let elapsed = std::time::Duration::from_nanos(ns.max(0) as u64);
                s.services
                    .metrics_timer_record(&name, metric_tags(tags)?, elapsed);
                Ok(())
            },
        )?,
    )
}

pub(super) fn install(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    install_metrics(lua, shared, nk)?;
    // `nk.get_satori()` answers a client, as Nakama does, so a module that
    // takes it at load time still loads; each of its calls fails, saying why.
    nk.set(
        "get_satori",
        lua.create_function(|lua, ()| {
            let client = lua.create_table_with_capacity(0, SATORI_FUNCTIONS.len())?;
            for name in SATORI_FUNCTIONS {
                client.raw_set(
                    name,
                    lua.create_function(|_, _: mlua::MultiValue| -> mlua::Result<()> {
                        Err(mlua::Error::runtime(SATORI_NOT_CONFIGURED))
                    })?,
                )?;
            }
            Ok(client)
        })?,
    )?;
    nk.set(
        "uuid_bytes_to_string",
        lua.create_function(|_, bytes: LuaString| {
            let bytes = bytes.as_bytes();
            if bytes.is_empty() {
                return Err(arg_error(1, "expects a UUID byte string"));
            }
            let u = uuid::Uuid::from_slice(&bytes)
                .map_err(|_| arg_error(1, "not a valid UUID byte string"))?;
            Ok(u.to_string())
        })?,
    )?;
    nk.set(
        "uuid_string_to_bytes",
        lua.create_function(|lua, text: String| {
            if text.is_empty() {
                return Err(arg_error(1, "expects a UUID string"));
            }
            let u = uuid::Uuid::parse_str(&text)
                .map_err(|_| arg_error(1, "not a valid UUID string"))?;
            lua.create_string(u.as_bytes())
        })?,
    )?;
    nk.set(
        "secure_random_bytes",
        lua.create_function(|lua, count: LuaValue| {
            let count = whole_arg(&count, 1, "expects a number")?;
            if !(1..=1000).contains(&count) {
                return Err(arg_error(1, "count must be 1-1000"));
            }
            let mut bytes = vec![0u8; count as usize];
            rand::fill(&mut bytes[..]);
            lua.create_string(&bytes)
        })?,
    )?;
    nk.set(
        "rsa_sha256_hash",
        lua.create_function(|lua, (input, key): (LuaString, LuaString)| {
            if input.as_bytes().is_empty() {
                return Err(arg_error(1, "expects input string"));
            }
            let key = key.to_str()?.to_owned();
            if key.is_empty() {
                return Err(arg_error(2, "expects key string"));
            }
            let signature = crate::nk_pure::rsa_sha256(&input.as_bytes(), &key)
                .map_err(mlua::Error::runtime)?;
            lua.create_string(&signature)
        })?,
    )?;
    nk.set(
        "cron_prev",
        lua.create_function(|_, (expr, ts): (String, LuaValue)| {
            if expr.is_empty() {
                return Err(arg_error(1, "expects cron string"));
            }
            let ts = whole_arg(&ts, 2, "expects a number")?;
            if ts == 0 {
                return Err(arg_error(1, "expects timestamp in seconds"));
            }
            let cron =
                Schedule::parse(&expr).map_err(|_| arg_error(1, "expects a valid cron string"))?;
            // Nakama's `Last` answers the last match strictly before `ts`.
            Ok(ts
                .checked_sub(1)
                .and_then(|t| cron.last_at_or_before(t))
                .unwrap_or(0))
        })?,
    )?;
    let root = shared.settings.path.clone();
    nk.set(
        "file_read",
        lua.create_function(move |lua, rel: String| {
            if rel.is_empty() {
                return Err(arg_error(1, "expects relative path string"));
            }
            let path = crate::nk_pure::under_root(&root, &rel).ok_or_else(|| {
                mlua::Error::runtime(format!(
                    "failed to open file: {rel}: the path must stay inside runtime.path"
                ))
            })?;
            let len = std::fs::metadata(&path)
                .map_err(|e| mlua::Error::runtime(format!("failed to open file: {e}")))?
                .len();
            if len > MAX_FILE_BYTES {
                return Err(mlua::Error::runtime(format!(
                    "failed to read file: {len} bytes is over the {MAX_FILE_BYTES}-byte limit"
                )));
            }
            check_memory(lua, len as usize)?;
            let bytes = std::fs::read(&path)
                .map_err(|e| mlua::Error::runtime(format!("failed to read file: {e}")))?;
            let s = unlimited(lua, || lua.create_string(&bytes))?;
            within_limit(lua)?;
            Ok(s)
        })?,
    )?;
    Ok(())
}
