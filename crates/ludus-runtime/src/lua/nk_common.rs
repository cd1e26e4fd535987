//! Helpers every group of `nk` functions shares: argument errors, server
//! calls that park or wait within the call's budget, and the Lua tables of
//! JSON values, users and storage objects. The `nk_*` files depend on this
//! one and on the runtime's lower layers, never on each other.

use std::future::Future;
use std::sync::Arc;

use ludus_core::ApiError;
use ludus_core::model::User;
use ludus_core::storage::StorageObject;
use mlua::{Lua, Table, Value as LuaValue};

use super::call_state::{CallState, DUAL, park, unlimited, within_deadline, within_limit};
use super::convert;
use super::shared::LuaShared;

/// Makes a server-call `nk` function of `f`, which checks its arguments,
/// awaits the server ([`served`]) and builds its results. In a pool VM it is
/// `dual`'s pair (see `vm.rs`): in the coroutine of a pool call it parks
/// the call ([`park`]) and yields while the server
/// works, so its VM thread runs other calls meanwhile; anywhere else it
/// waits as [`block_on`] does. A match VM has only the waiting one.
pub(super) fn server_function<A, R, F, Fut>(
    lua: &Lua,
    shared: &Arc<LuaShared>,
    f: F,
) -> mlua::Result<mlua::Function>
where
    A: mlua::FromLuaMulti + 'static,
    R: mlua::IntoLuaMulti + 'static,
    F: Fn(Lua, A) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = mlua::Result<R>> + Send + 'static,
{
    let waiting = f.clone();
    let s = shared.clone();
    let wait = lua.create_function(move |lua, args: A| {
        s.block(unguarded(lua.clone(), waiting(lua.clone(), args)))
    })?;
    match lua.named_registry_value::<Option<mlua::Function>>(DUAL)? {
        Some(dual) => {
            let start = lua.create_function(move |lua, args: A| {
                let call = unguarded(lua.clone(), f(lua.clone(), args));
                let owner = lua.clone();
                park(
                    lua,
                    Box::pin(async move {
                        let results = call.await?;
                        unlimited(&owner, || results.into_lua_multi(&owner))
                    }),
                )
            })?;
            dual.call((wait, start))
        }
        None => Ok(wait),
    }
}

/// Runs a server function's future with the VM's memory limit lifted while
/// it is polled ([`unlimited`]), then holds what
/// it built to the limit: over it (after a collection), the call fails with
/// the memory error and its results are dropped.
///
/// The futures of [`server_function`] read their arguments with raw access
/// and `convert::from_lua` and build their results from the server's
/// answer: no module code runs while they are polled, and what they build
/// is bounded by data the server already holds. Unguarded, their dozens of
/// small allocations make no protected call and no garbage closures each
/// (the wallet update: +4 %, see BENCHMARKS.md).
async fn unguarded<T>(lua: Lua, call: impl Future<Output = mlua::Result<T>>) -> mlua::Result<T> {
    let mut call = std::pin::pin!(call);
    let out = std::future::poll_fn(|cx| unlimited(&lua, || call.as_mut().poll(cx))).await?;
    within_limit(&lua)?;
    Ok(out)
}

/// Awaits a server call within the running Lua call's deadline; its error
/// message reaches Lua as it is (the yielding form of [`block_on`]).
pub(super) async fn awaited<T>(call: impl Future<Output = Result<T, ApiError>>) -> mlua::Result<T> {
    within_deadline(call).await.map_err(api_error)
}

/// Awaits a server call within the running Lua call's deadline; its error
/// message is prefixed as Nakama's are.
pub(super) async fn served<T>(
    what: &str,
    call: impl Future<Output = Result<T, ApiError>>,
) -> mlua::Result<T> {
    within_deadline(call)
        .await
        .map_err(|e| mlua::Error::runtime(format!("{what}: {}", e.message)))
}

/// Waits for a server call (the waiting form of [`awaited`]).
pub(super) fn block_on<T>(
    shared: &LuaShared,
    fut: impl Future<Output = Result<T, ApiError>>,
) -> mlua::Result<T> {
    shared.block(awaited(fut))
}

pub(super) fn api_error(e: ApiError) -> mlua::Error {
    mlua::Error::runtime(e.message)
}

pub(super) fn json_table(lua: &Lua, json: &str) -> mlua::Result<LuaValue> {
    let value: serde_json::Value = serde_json::from_str(if json.is_empty() { "{}" } else { json })
        .map_err(|e| mlua::Error::runtime(format!("stored JSON is invalid: {e}")))?;
    convert::to_lua(lua, &value)
}

pub(super) fn fill_user(lua: &Lua, t: &Table, user: &User) -> mlua::Result<()> {
    t.raw_set("user_id", user.id.to_string())?;
    t.raw_set("username", user.username.as_str())?;
    t.raw_set("display_name", user.display_name.as_str())?;
    t.raw_set("avatar_url", user.avatar_url.as_str())?;
    t.raw_set("lang_tag", user.lang_tag.as_str())?;
    t.raw_set("location", user.location.as_str())?;
    t.raw_set("timezone", user.timezone.as_str())?;
    for (key, value) in [
        ("apple_id", &user.apple_id),
        ("facebook_id", &user.facebook_id),
        ("facebook_instant_game_id", &user.facebook_instant_game_id),
        ("google_id", &user.google_id),
        ("gamecenter_id", &user.gamecenter_id),
        ("steam_id", &user.steam_id),
    ] {
        if !value.is_empty() {
            t.raw_set(key, value.as_str())?;
        }
    }
    t.raw_set("online", user.online)?;
    t.raw_set("edge_count", user.edge_count)?;
    t.raw_set("create_time", user.create_time)?;
    t.raw_set("update_time", user.update_time)?;
    t.raw_set("metadata", json_table(lua, &user.metadata)?)?;
    Ok(())
}

pub(super) fn user_table(lua: &Lua, user: &User) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, 16)?;
    fill_user(lua, &t, user)?;
    Ok(t)
}

pub(super) fn arg_error(arg: usize, message: &str) -> mlua::Error {
    mlua::Error::runtime(format!("bad argument #{arg}: {message}"))
}

/// Waits for a service call, its error message prefixed as Nakama's are
/// (the waiting form of [`served`]).
pub(super) fn run<T>(
    shared: &LuaShared,
    what: &str,
    call: impl Future<Output = Result<T, ApiError>>,
) -> mlua::Result<T> {
    shared.block(served(what, call))
}

pub(super) fn objects_table(lua: &Lua, objects: &[StorageObject]) -> mlua::Result<Table> {
    let out = lua.create_table_with_capacity(objects.len(), 0)?;
    for o in objects {
        let t = lua.create_table_with_capacity(0, 9)?;
        t.raw_set("key", o.key.as_str())?;
        t.raw_set("collection", o.collection.as_str())?;
        t.raw_set("user_id", o.user_id.to_string())?;
        t.raw_set("version", o.version.as_str())?;
        t.raw_set("permission_read", o.read.as_i64())?;
        t.raw_set("permission_write", o.write.as_i64())?;
        t.raw_set("create_time", o.create_time)?;
        t.raw_set("update_time", o.update_time)?;
        t.raw_set("value", json_value(lua, &o.value)?)?;
        out.raw_push(t)?;
    }
    Ok(out)
}

pub(super) fn loading_state<'a>(
    lua: &'a Lua,
    fn_name: &str,
) -> mlua::Result<mlua::AppDataRef<'a, CallState>> {
    let state = lua
        .app_data_ref::<CallState>()
        .ok_or_else(|| mlua::Error::runtime("vm state missing"))?;
    if !state.loading.get() {
        return Err(mlua::Error::runtime(format!(
            "{fn_name} is only allowed while modules load: call it at the top level of a module"
        )));
    }
    Ok(state)
}

pub(super) fn json_value(lua: &Lua, json: &str) -> mlua::Result<LuaValue> {
    let value: serde_json::Value = serde_json::from_str(json)
        .map_err(|e| mlua::Error::runtime(format!("failed to convert value to json: {e}")))?;
    convert::to_lua(lua, &value)
}

/// A whole-number argument as Nakama reads one (gopher-lua's `CheckInt`):
/// a fractional number is truncated toward zero, so `nk.time() / 1000`
/// passes as a time in seconds. Every whole-number argument read by hand
/// goes through here; typed `i64` arguments truncate the same way (mlua on
/// LuaJIT). Not a number, not finite, or past `i64`: `message`.
pub(super) fn whole_arg(value: &LuaValue, arg: usize, message: &str) -> mlua::Result<i64> {
    whole_number(value).ok_or_else(|| arg_error(arg, message))
}

/// 2^63, exactly.
const TWO_POW_63: f64 = (1u64 << 63) as f64;

/// [`whole_arg`] without its error: `None` for anything but a finite number
/// within `i64`.
pub(super) fn whole_number(value: &LuaValue) -> Option<i64> {
    match value {
        LuaValue::Integer(i) => Some(*i),
        // 2^63 is the first f64 past i64::MAX.
        LuaValue::Number(n) if n.is_finite() && n.trunc().abs() < TWO_POW_63 => {
            Some(n.trunc() as i64)
        }
        _ => None,
    }
}
