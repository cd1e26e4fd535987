//! The `nk` table modules get from `require("nakama")`: registrations,
//! context and configuration, logging, the local cache, time and ids. The
//! codecs live in `nk_codec.rs` and the calls into the server in
//! `nk_server.rs`. Names, argument order and results follow Nakama's Lua API.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use chrono::{TimeZone, Utc};
use mlua::{Function, Lua, Table, Value as LuaValue};

use super::call_state::{CallState, Registered};
use super::convert;
use super::ctx::context_table;
use super::nk_common::loading_state;
use super::shared::LuaShared;
use super::{nk_codec, nk_match, nk_realtime, nk_server, nk_sql};
use crate::context::{CallContext, ExecutionMode};
use ludus_core::schedule::Schedule;

/// Builds `nk` for one VM. `get_context` (which `vm.rs` wraps) and
/// `get_config` are made at once; every other function is made on first
/// use, with the rest of its group (the registrations, the logger, the
/// small helpers, then one group per `nk_*.rs` file), by the `nk` table's
/// `__index`. A match VM that calls five `nk` functions thus holds a few
/// groups instead of some 150 closures (see [`LAZY_GROUPS`]).
pub(super) fn install(
    lua: &Lua,
    shared: &Arc<LuaShared>,
    callbacks: &Table,
) -> mlua::Result<Table> {
    let nk = lua.create_table()?;
    install_context(lua, shared, &nk)?;
    install_print(lua)?;
    install_lazy_groups(lua, shared, callbacks, &nk)?;
    Ok(nk)
}

/// Makes the functions of one group into `nk`.
/// Sets the flag of a callback that was registered.
type MarkRegistered = fn(&mut Registered);

type Group = fn(&Lua, &Arc<LuaShared>, &Table, &Table) -> mlua::Result<()>;

/// The groups made on first use, by index.
const LAZY_GROUPS: [Group; 18] = [
    |lua, shared, callbacks, nk| install_registrations(lua, shared, callbacks, nk),
    |lua, _, _, nk| install_logger(lua, nk),
    |lua, shared, _, nk| install_misc(lua, shared, nk),
    |lua, _, _, nk| nk_codec::install(lua, nk),
    |lua, shared, _, nk| nk_server::install(lua, shared, nk),
    |lua, shared, _, nk| nk_realtime::install(lua, shared, nk),
    |lua, shared, _, nk| nk_sql::install(lua, shared, nk),
    |lua, shared, _, nk| super::nk_storage::install(lua, shared, nk),
    |lua, shared, _, nk| super::nk_social::install(lua, shared, nk),
    |lua, shared, _, nk| super::nk_leaderboard::install(lua, shared, nk),
    |lua, shared, callbacks, nk| super::nk_storage_index::install(lua, shared, callbacks, nk),
    |lua, shared, _, nk| super::nk_party::install(lua, shared, nk),
    |lua, shared, _, nk| nk_match::install(lua, shared, nk),
    |lua, shared, _, nk| super::nk_util::install(lua, shared, nk),
    |lua, shared, _, nk| super::nk_account::install(lua, shared, nk),
    |lua, shared, _, nk| super::nk_inbox::install(lua, shared, nk),
    |lua, shared, _, nk| super::nk_social_auth::install(lua, shared, nk),
    |lua, shared, _, nk| super::nk_purchase::install(lua, shared, nk),
];

// `install_lazy_groups` keeps one bit per group in a `u32`.
const _: () = assert!(LAZY_GROUPS.len() <= 32);

/// Which group makes each lazy function: the same for every VM of the
/// process, so the first VM finds it by making every group once.
static GROUP_OF: OnceLock<HashMap<String, usize>> = OnceLock::new();

/// Whether `nk` has a function called `name`: known once the first VM was
/// made (which fills [`GROUP_OF`]).
pub(super) fn has_function(name: &str) -> bool {
    matches!(name, "get_context" | "get_config")
        || GROUP_OF.get().is_some_and(|index| index.contains_key(name))
}

fn group_index(
    lua: &Lua,
    shared: &Arc<LuaShared>,
    callbacks: &Table,
) -> mlua::Result<&'static HashMap<String, usize>> {
    if let Some(index) = GROUP_OF.get() {
        return Ok(index);
    }
    let mut index = HashMap::new();
    for (i, group) in LAZY_GROUPS.iter().enumerate() {
        let scratch = lua.create_table()?;
        group(lua, shared, callbacks, &scratch)?;
        for pair in scratch.pairs::<String, LuaValue>() {
            index.insert(pair?.0, i);
        }
    }
    Ok(GROUP_OF.get_or_init(|| index))
}

/// Gives `nk` the metatable that makes a lazy group when one of its names
/// is first read, and registers with the sandbox the function that makes
/// every group, which `pairs`, `next` and `rawget` call first.
fn install_lazy_groups(
    lua: &Lua,
    shared: &Arc<LuaShared>,
    callbacks: &Table,
    nk: &Table,
) -> mlua::Result<()> {
    let index = group_index(lua, shared, callbacks)?;
    // Groups made so far, one bit each; `make` adds a group's functions to
    // `target` (`nk`, or the hidden contents of the frozen `nk`) without
    // replacing a name a module set while loading.
    let made = Arc::new(AtomicU32::new(0));
    let make = {
        let (shared, callbacks) = (shared.clone(), callbacks.clone());
        move |lua: &Lua, target: &Table, i: usize| -> mlua::Result<()> {
            if made.load(Ordering::Relaxed) & (1 << i) != 0 {
                return Ok(());
            }
            // Marked made only once whole: a group that failed half-way
            // (out of memory) is made again by the next read.
            let fresh = lua.create_table()?;
            LAZY_GROUPS[i](lua, &shared, &callbacks, &fresh)?;
            for pair in fresh.pairs::<LuaValue, LuaValue>() {
                let (k, v) = pair?;
                if target.raw_get::<LuaValue>(&k)?.is_nil() {
                    target.raw_set(k, v)?;
                }
            }
            made.fetch_or(1 << i, Ordering::Relaxed);
            Ok(())
        }
    };
    let make = Arc::new(make);
    let make_one = make.clone();
    let index_fn = lua.create_function(move |lua, (target, key): (Table, LuaValue)| {
        let LuaValue::String(name) = &key else {
            return Ok(LuaValue::Nil);
        };
        let Some(&i) = name.to_str().ok().and_then(|n| index.get(&*n)) else {
            return Ok(LuaValue::Nil);
        };
        make_one(lua, &target, i)?;
        target.raw_get(key)
    })?;
    let complete = lua.create_function(move |lua, target: Table| {
        (0..LAZY_GROUPS.len()).try_for_each(|i| make(lua, &target, i))
    })?;
    let mt = lua.create_table()?;
    mt.raw_set("__index", index_fn)?;
    nk.set_metatable(Some(mt))?;
    super::lazy::make_lazy(lua, nk, complete)
}

fn install_registrations(
    lua: &Lua,
    shared: &Arc<LuaShared>,
    callbacks: &Table,
    nk: &Table,
) -> mlua::Result<()> {
    // (Lua name, callback key prefix)
    let named = [
        ("register_rpc", "rpc/"),
        ("register_req_before", "before/"),
        ("register_req_after", "after/"),
        ("register_rt_before", "before/rt."),
        ("register_rt_after", "after/rt."),
    ];
    for (fn_name, prefix) in named {
        let callbacks = callbacks.clone();
        let f = lua.create_function(move |lua, (f, id): (Function, String)| {
            if id.is_empty() {
                return Err(mlua::Error::runtime(format!(
                    "{fn_name}: expects a name as the second argument"
                )));
            }
            let state = loading_state(lua, fn_name)?;
            let id = id.to_ascii_lowercase();
            let key = format!("{prefix}{id}");
            callbacks.raw_set(key.as_str(), f)?;
            let mut reg = state.registered.borrow_mut();
            let name = key
                .split_once('/')
                .map(|(_, n)| n.to_owned())
                .unwrap_or_default();
            match prefix {
                "rpc/" => reg.rpcs.insert(name),
                p if p.starts_with("before/") => reg.before.insert(name),
                _ => reg.after.insert(name),
            };
            Ok(())
        })?;
        nk.set(fn_name, f)?;
    }
    // Callbacks a module registers one of each: the function, its key in
    // the callbacks table, and the flag the runtime checks before calling.
    let single: [(&str, &str, MarkRegistered); 8] = [
        ("register_matchmaker_matched", "matchmaker_matched", |r| {
            r.matchmaker_matched = true;
        }),
        ("register_shutdown", "shutdown", |r| r.shutdown = true),
        ("register_event", "event", |r| r.event = true),
        ("register_event_session_start", "event_session_start", |r| {
            r.event_session_start = true;
        }),
        ("register_event_session_end", "event_session_end", |r| {
            r.event_session_end = true;
        }),
        ("register_leaderboard_reset", "leaderboard_reset", |r| {
            r.leaderboard_reset = true;
        }),
        ("register_tournament_reset", "tournament_reset", |r| {
            r.tournament_reset = true;
        }),
        ("register_tournament_end", "tournament_end", |r| {
            r.tournament_end = true;
        }),
    ];
    for (fn_name, key, mark) in single {
        let callbacks = callbacks.clone();
        nk.set(
            fn_name,
            lua.create_function(move |lua, f: Function| {
                let state = loading_state(lua, fn_name)?;
                callbacks.raw_set(key, f)?;
                mark(&mut state.registered.borrow_mut());
                Ok(())
            })?,
        )?;
    }
    let shared_ro = shared.clone();
    nk.set(
        "run_once",
        lua.create_function(move |lua, f: Function| {
            let first = lua
                .app_data_ref::<CallState>()
                .is_some_and(|s| s.first && s.loading.get());
            // Only the first call of the node runs, as Nakama's `sync.Once`.
            if !first
                || shared_ro
                    .run_once
                    .swap(true, std::sync::atomic::Ordering::AcqRel)
            {
                return Ok(());
            }
            let ctx = context_table(lua, &shared_ro, &CallContext::new(ExecutionMode::RunOnce))?;
            f.call::<()>(ctx)
                .map_err(|e| mlua::Error::runtime(format!("error in run_once function: {e}")))
        })?,
    )?;
    Ok(())
}

fn install_context(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    // Outside a callback (while modules load, or in a match's callbacks);
    // `vm.rs` wraps it to answer the running callback's `ctx` first.
    let s = shared.clone();
    nk.set(
        "get_context",
        lua.create_function(move |lua, ()| {
            context_table(lua, &s, &CallContext::new(ExecutionMode::RunOnce))
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "get_config",
        lua.create_function(move |lua, ()| convert::to_lua(lua, &s.settings.config))?,
    )?;
    Ok(())
}

fn install_logger(lua: &Lua, nk: &Table) -> mlua::Result<()> {
    macro_rules! logger {
        ($name:literal, $level:ident) => {
            nk.set(
                $name,
                lua.create_function(|_, message: String| {
                    tracing::$level!(target: "ludus::lua", "{message}");
                    Ok(message)
                })?,
            )?;
        };
    }
    logger!("logger_debug", debug);
    logger!("logger_info", info);
    logger!("logger_warn", warn);
    logger!("logger_error", error);
    Ok(())
}

/// `print` goes to the log too, never to the server's stdout.
fn install_print(lua: &Lua) -> mlua::Result<()> {
    lua.globals().set(
        "print",
        lua.create_function(|_, args: mlua::Variadic<LuaValue>| {
            let line = args
                .iter()
                .map(|v| v.to_string().unwrap_or_else(|_| v.type_name().to_owned()))
                .collect::<Vec<_>>()
                .join("\t");
            tracing::info!(target: "ludus::lua", "{line}");
            Ok(())
        })?,
    )?;
    Ok(())
}

fn install_misc(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    nk.set(
        "uuid_v4",
        lua.create_function(|_, ()| Ok(uuid::Uuid::new_v4().to_string()))?,
    )?;
    nk.set(
        "time",
        lua.create_function(|_, t: Option<Table>| {
            let Some(t) = t else {
                return Ok(Utc::now().timestamp_millis() as f64);
            };
            let get = |k: &str, default: i64| -> mlua::Result<i64> {
                Ok(t.get::<Option<i64>>(k)?.unwrap_or(default))
            };
            let (year, month, day) = (get("year", -1)?, get("month", -1)?, get("day", -1)?);
            if year < 0 || month < 0 || day < 0 {
                return Err(mlua::Error::runtime(
                    "nk.time: the table needs year, month and day fields",
                ));
            }
            let dt = Utc
                .with_ymd_and_hms(
                    year as i32,
                    month as u32,
                    day as u32,
                    get("hour", 12)? as u32,
                    get("min", 0)? as u32,
                    get("sec", 0)? as u32,
                )
                .single()
                .ok_or_else(|| mlua::Error::runtime("nk.time: not a valid date and time"))?;
            Ok((dt.timestamp_millis() + get("msec", 0)?) as f64)
        })?,
    )?;
    nk.set(
        "cron_next",
        lua.create_function(|_, (expr, ts): (String, i64)| {
            // The same parser as leaderboard schedules: five fields, UTC.
            let cron = Schedule::parse(&expr).map_err(|e| mlua::Error::runtime(e.message))?;
            if Utc.timestamp_opt(ts, 0).single().is_none() {
                return Err(mlua::Error::runtime(
                    "cron_next: expects a timestamp in seconds",
                ));
            }
            Ok(cron.next_after(ts))
        })?,
    )?;
    let events = shared.events.clone();
    nk.set(
        "event",
        lua.create_function(
            move |lua,
                  (name, properties, timestamp, external): (
                String,
                Option<LuaValue>,
                Option<i64>,
                Option<bool>,
            )| {
                if name.is_empty() {
                    return Err(mlua::Error::runtime("event: name must not be empty"));
                }
                let mut props = std::collections::BTreeMap::new();
                if let Some(table) = properties.filter(|p| !p.is_nil()) {
                    let value = convert::from_lua(lua, &table)?;
                    let Some(map) = value.as_object() else {
                        return Err(mlua::Error::runtime(
                            "event: properties must be a table of strings",
                        ));
                    };
                    for (k, v) in map {
                        let Some(s) = v.as_str() else {
                            return Err(mlua::Error::runtime(format!(
                                "event: property {k} must be a string"
                            )));
                        };
                        props.insert(k.clone(), s.to_owned());
                    }
                }
                events.push(crate::events::Queued {
                    kind: crate::events::EventKind::Custom,
                    ctx: crate::context::CallContext::new(crate::context::ExecutionMode::Event),
                    event: crate::events::Event {
                        name,
                        properties: props,
                        timestamp_ms: timestamp.unwrap_or(0).saturating_mul(1000),
                        external: external.unwrap_or(false),
                    },
                });
                Ok(())
            },
        )?,
    )?;
    let cache = shared.cache.clone();
    nk.set(
        "localcache_get",
        lua.create_function(move |lua, (key, default): (String, LuaValue)| {
            match cache.get(&key) {
                Some(v) => convert::to_lua(lua, &v),
                None => Ok(default),
            }
        })?,
    )?;
    let cache = shared.cache.clone();
    nk.set(
        "localcache_put",
        lua.create_function(
            move |lua, (key, value, ttl): (String, LuaValue, Option<i64>)| {
                let ttl = ttl.unwrap_or(0);
                if ttl < 0 {
                    return Err(mlua::Error::runtime(
                        "localcache_put: ttl must be 0 or more",
                    ));
                }
                let value = convert::from_lua(lua, &value)?;
                cache
                    .put(key, value, Duration::from_secs(ttl as u64))
                    .map_err(mlua::Error::runtime)
            },
        )?,
    )?;
    let cache = shared.cache.clone();
    nk.set(
        "localcache_delete",
        lua.create_function(move |_, key: String| {
            cache.delete(&key);
            Ok(())
        })?,
    )?;
    let cache = shared.cache.clone();
    nk.set(
        "localcache_clear",
        lua.create_function(move |_, ()| {
            cache.clear();
            Ok(())
        })?,
    )?;
    Ok(())
}
