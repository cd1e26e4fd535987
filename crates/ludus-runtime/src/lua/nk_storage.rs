//! `nk.storage_read|write|delete|list`, `nk.wallet_update`,
//! `nk.wallets_update`, `nk.wallet_ledger_list|update` and
//! `nk.multi_update`, with Nakama's argument and result shapes. They act as
//! the server (permissions are not checked; a missing user id means the
//! system user) through `RuntimeServices`, which delegates to
//! `ludus_core::storage_service::StorageService`: this file only turns
//! tables into domain values and back.

use std::sync::Arc;
use std::time::Duration;

use ludus_core::model::AccountUpdate;
use ludus_core::multi_update::MultiUpdate;
use ludus_core::storage::{
    Access, ObjectId, ReadPermission, Rejection, SYSTEM_USER_ID, StorageAck, StorageDelete,
    StorageWrite, WritePermission,
};
use ludus_core::wallet::{LedgerEntry, Wallet, WalletUpdate, WalletUpdateResult};
use mlua::{Lua, Table, Value as LuaValue};
use uuid::Uuid;

use super::call_state::within_deadline;
use super::convert;
use super::nk_common::{arg_error, json_value, objects_table};
use super::nk_common::{served, server_function};
use super::shared::LuaShared;

/// Integers above this lose precision as Lua numbers (doubles).
const MAX_EXACT: f64 = 9_007_199_254_740_992.0;

pub(super) fn install(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    let s = shared.clone();
    nk.set(
        "storage_read",
        server_function(lua, shared, move |lua, keys: Table| {
            let s = s.clone();
            async move {
                let ids = list(&keys, 1, "expects a valid set of keys", object_id)?;
                if ids.is_empty() {
                    return lua.create_table();
                }
                let objects = served(
                    "failed to read storage objects",
                    s.services.storage_read(ids),
                )
                .await?;
                objects_table(&lua, &objects)
            }
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "storage_write",
        server_function(lua, shared, move |lua, data: Table| {
            let s = s.clone();
            async move {
                let writes = list(&data, 1, "expects a valid set of data", |t| {
                    storage_write(&lua, t, 1)
                })?;
                if writes.is_empty() {
                    return lua.create_table();
                }
                let acks = served(
                    "failed to write storage objects",
                    s.services.storage_write(writes),
                )
                .await?;
                acks_table(&lua, &acks)
            }
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "storage_delete",
        server_function(lua, shared, move |_, keys: Table| {
            let s = s.clone();
            async move {
                let deletes = list(&keys, 1, "expects a valid set of object IDs", |t| {
                    storage_delete(t, 1)
                })?;
                if deletes.is_empty() {
                    return Ok(());
                }
                served(
                    "failed to remove storage",
                    s.services.storage_delete(deletes),
                )
                .await
            }
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "storage_list",
        server_function(lua, shared, move |lua, args: StorageListArgs| {
            let s = s.clone();
            async move {
                let (user_id, collection, limit, cursor, caller_id) = args;
                if limit < 0 {
                    return Err(arg_error(3, "limit must not be negative"));
                }
                let owner = match user_id.as_deref().unwrap_or_default() {
                    "" => None,
                    id => Some(
                        Uuid::parse_str(id)
                            .map_err(|_| arg_error(1, "expects empty or a valid user ID"))?,
                    ),
                };
                let caller = match caller_id.as_deref().unwrap_or_default() {
                    "" => None,
                    id => Some(Uuid::parse_str(id).map_err(|_| {
                        arg_error(5, "expects caller ID to be empty or a valid identifier")
                    })?),
                };
                let collection = collection.unwrap_or_default();
                let cursor = cursor.unwrap_or_default();
                let page = served(
                    "failed to list storage objects",
                    s.services
                        .storage_list(caller, owner, &collection, limit as usize, &cursor),
                )
                .await?;
                let objects = objects_table(&lua, &page.objects)?;
                let cursor = match page.cursor {
                    Some(c) => LuaValue::String(lua.create_string(&c)?),
                    None => LuaValue::Nil,
                };
                Ok((objects, cursor))
            }
        })?,
    )?;
    install_wallets(lua, shared, nk)?;
    install_write_retry(lua, shared, nk)?;
    let s = shared.clone();
    nk.set(
        "multi_update",
        server_function(lua, shared, move |lua, args: MultiUpdateArgs| {
            let s = s.clone();
            async move {
                let (accounts, writes, deletes, wallets, update_ledger) = args;
                let mut update = MultiUpdate::new(Access::Server);
                if let Some(t) = accounts {
                    update.accounts =
                        list(&t, 1, "expects a valid set of account update data", |t| {
                            account_update(&lua, t)
                        })?;
                }
                if let Some(t) = writes {
                    update.writes = list(&t, 2, "expects a valid set of storage data", |t| {
                        storage_write(&lua, t, 2)
                    })?;
                }
                if let Some(t) = deletes {
                    update.deletes = list(&t, 3, "expects a valid set of storage data", |t| {
                        storage_delete(t, 3)
                    })?;
                }
                if let Some(t) = wallets {
                    update.wallets = list(&t, 4, "expects a valid set of updates", |t| {
                        wallet_update(&lua, t, 4)
                    })?;
                }
                update.update_ledger = update_ledger.unwrap_or(false);
                let done = served(
                    "error running multi update",
                    s.services.multi_update(update),
                )
                .await?;
                let acks = if done.acks.is_empty() {
                    LuaValue::Nil
                } else {
                    LuaValue::Table(acks_table(&lua, &done.acks)?)
                };
                let results = if done.wallets.is_empty() {
                    LuaValue::Nil
                } else {
                    LuaValue::Table(wallet_results_table(&lua, &done.wallets)?)
                };
                Ok((acks, results))
            }
        })?,
    )?;
    Ok(())
}

/// `nk.storage_write_retry(keys, update_fn, max_retries)`, as Nakama's:
/// read the objects, let the module's function turn them into writes, and
/// write them; when a version it wrote against changed meanwhile, wait a
/// little and start again, at most `max_retries` more times. The loop is
/// Lua (the module's function runs inside it) over three server calls:
/// the read, a write that answers `nil` on a version conflict, and the
/// wait.
const WRITE_RETRY: &str = r#"
local read, try_write, pause = ...
local type, next, error, floor = type, next, error, math.floor
return function(keys, update, max_retries)
  if type(keys) ~= "table" then error("bad argument #1: expects a valid set of keys", 2) end
  if type(update) ~= "function" then error("bad argument #2: expects a valid update function", 2) end
  if type(max_retries) ~= "number" or max_retries ~= floor(max_retries) then
    error("bad argument #3: expects max retries to be a whole number", 2)
  end
  if max_retries < 0 or max_retries > 10 then
    error("bad argument #3: max retries must be a value between 0 and 10", 2)
  end
  if next(keys) == nil then return {} end
  for attempt = 0, max_retries do
    local writes = update(read(keys))
    if type(writes) ~= "table" then
      error("failed to write storage objects with retry: update function error: expects to return a valid table", 2)
    end
    if next(writes) == nil then return {} end
    local acks = try_write(writes)
    if acks ~= nil then return acks end
    if attempt < max_retries then pause(attempt) end
  end
  error("failed to write storage objects with retry: storage write retries exhausted", 2)
end
"#;

fn install_write_retry(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    let s = shared.clone();
    let read = server_function(lua, shared, move |lua, keys: Table| {
        let s = s.clone();
        async move {
            let ids = list(&keys, 1, "expects a valid set of keys", object_id)?;
            let objects = served(
                "failed to write storage objects with retry",
                s.services.storage_read(ids),
            )
            .await?;
            objects_table(&lua, &objects)
        }
    })?;
    let s = shared.clone();
    let try_write = server_function(lua, shared, move |lua, data: Table| {
        let s = s.clone();
        async move {
            let writes = list(&data, 1, "expects a valid set of data", |t| {
                storage_write(&lua, t, 1)
            })?;
            match within_deadline(s.services.storage_write(writes)).await {
                Ok(acks) => Ok(LuaValue::Table(acks_table(&lua, &acks)?)),
                Err(e) if Rejection::Version.answered(&e) => Ok(LuaValue::Nil),
                Err(e) => Err(mlua::Error::runtime(format!(
                    "failed to write storage objects with retry: {}",
                    e.message
                ))),
            }
        }
    })?;
    let pause = server_function(lua, shared, move |_, attempt: u32| async move {
        // Nakama's back-off: 2^(attempt+1) ms up to 20 ms, plus 0-9 ms.
        let backoff = (2u64 << attempt.min(8)).min(20);
        let jitter = u64::from(Uuid::new_v4().as_bytes()[0] % 10);
        tokio::time::sleep(Duration::from_millis(backoff + jitter)).await;
        Ok(())
    })?;
    let make: mlua::Function = lua
        .load(WRITE_RETRY)
        .set_name("=nk.storage_write_retry")
        .into_function()?;
    nk.set(
        "storage_write_retry",
        make.call::<mlua::Function>((read, try_write, pause))?,
    )
}

/// `nk.storage_list(user_id, collection, limit, cursor, caller_id)`.
type StorageListArgs = (
    Option<String>,
    Option<String>,
    i64,
    Option<String>,
    Option<String>,
);

/// `nk.multi_update(account_updates, storage_writes, storage_deletes,
/// wallet_updates, update_ledger)`.
type MultiUpdateArgs = (
    Option<Table>,
    Option<Table>,
    Option<Table>,
    Option<Table>,
    Option<bool>,
);

/// `nk.wallet_update(user_id, changeset, metadata, update_ledger)`.
type WalletUpdateArgs = (String, Table, Option<Table>, Option<bool>);

fn install_wallets(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    let s = shared.clone();
    nk.set(
        "wallet_update",
        server_function(lua, shared, move |lua, args: WalletUpdateArgs| {
            let s = s.clone();
            async move {
                let (user_id, changeset, metadata, update_ledger) = args;
                let user_id = Uuid::parse_str(&user_id)
                    .map_err(|_| arg_error(1, "expects a valid user id"))?;
                let update = WalletUpdate {
                    user_id,
                    changeset: changeset_of(&changeset, 2)?,
                    metadata: metadata_of(&lua, metadata, 3)?,
                };
                let mut results = served(
                    "failed to update user wallet",
                    s.services
                        .wallets_update(vec![update], update_ledger.unwrap_or(false)),
                )
                .await?;
                let Some(result) = results.pop() else {
                    return Err(mlua::Error::runtime("user not found"));
                };
                Ok((
                    wallet_table(&lua, &result.updated)?,
                    wallet_table(&lua, &result.previous)?,
                ))
            }
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "wallets_update",
        server_function(
            lua,
            shared,
            move |lua, (updates, update_ledger): (Table, Option<bool>)| {
                let s = s.clone();
                async move {
                    let updates = list(&updates, 1, "expects a valid set of updates", |t| {
                        wallet_update(&lua, t, 1)
                    })?;
                    let results = served(
                        "failed to update user wallet",
                        s.services
                            .wallets_update(updates, update_ledger.unwrap_or(false)),
                    )
                    .await?;
                    wallet_results_table(&lua, &results)
                }
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "wallet_ledger_list",
        server_function(
            lua,
            shared,
            move |lua, (user_id, limit, cursor): (String, Option<i64>, Option<String>)| {
                let s = s.clone();
                async move {
                    let user_id = Uuid::parse_str(&user_id)
                        .map_err(|_| arg_error(1, "expects a valid user id"))?;
                    let limit = limit.unwrap_or(100);
                    if !(0..=100).contains(&limit) {
                        return Err(arg_error(2, "expects limit to be 0-100"));
                    }
                    let page = served(
                        "failed to retrieve user wallet ledger",
                        s.services.wallet_ledger_list(
                            user_id,
                            limit as usize,
                            cursor.as_deref().unwrap_or_default(),
                        ),
                    )
                    .await?;
                    let items = lua.create_table_with_capacity(page.entries.len(), 0)?;
                    for entry in &page.entries {
                        items.raw_push(ledger_table(&lua, entry)?)?;
                    }
                    Ok((items, page.cursor.unwrap_or_default()))
                }
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "wallet_ledger_update",
        server_function(lua, shared, move |lua, (id, metadata): (String, Table)| {
            let s = s.clone();
            async move {
                let id = Uuid::parse_str(&id).map_err(|_| arg_error(1, "expects a valid id"))?;
                let metadata = metadata_of(&lua, Some(metadata), 2)?;
                let entry = served(
                    "failed to update user wallet ledger",
                    s.services.wallet_ledger_update(id, &metadata),
                )
                .await?;
                ledger_table(&lua, &entry)
            }
        })?,
    )?;
    Ok(())
}

/// Every table of an array-like table, parsed by `each`.
fn list<T>(
    t: &Table,
    arg: usize,
    message: &str,
    each: impl Fn(&Table) -> mlua::Result<T>,
) -> mlua::Result<Vec<T>> {
    let mut out = Vec::with_capacity(t.raw_len());
    for pair in t.pairs::<LuaValue, LuaValue>() {
        let (_, value) = pair?;
        let LuaValue::Table(item) = value else {
            return Err(arg_error(arg, message));
        };
        out.push(each(&item)?);
    }
    Ok(out)
}

/// A string field, `None` when absent.
fn string_field(t: &Table, name: &str, arg: usize) -> mlua::Result<Option<String>> {
    match t.raw_get::<LuaValue>(name)? {
        LuaValue::Nil => Ok(None),
        LuaValue::String(s) => Ok(Some(s.to_str()?.to_owned())),
        _ => Err(arg_error(arg, &format!("expects {name} to be string"))),
    }
}

/// A required non-empty string field.
fn required(t: &Table, name: &str, arg: usize) -> mlua::Result<String> {
    match string_field(t, name, arg)? {
        None => Err(arg_error(arg, &format!("expects {name} to be supplied"))),
        Some(s) if s.is_empty() => Err(arg_error(
            arg,
            &format!("expects {name} to be a non-empty string"),
        )),
        Some(s) => Ok(s),
    }
}

/// `user_id`: absent or empty means the system user.
fn owner(t: &Table, arg: usize) -> mlua::Result<Uuid> {
    match string_field(t, "user_id", arg)?.as_deref() {
        None | Some("") => Ok(SYSTEM_USER_ID),
        Some(id) => {
            Uuid::parse_str(id).map_err(|_| arg_error(arg, "expects user_id to be a valid ID"))
        }
    }
}

fn object_id_at(t: &Table, arg: usize) -> mlua::Result<ObjectId> {
    let collection = required(t, "collection", arg)?;
    let key = required(t, "key", arg)?;
    ObjectId::new(&collection, &key, owner(t, arg)?).map_err(|e| arg_error(arg, &e.message))
}

fn object_id(t: &Table) -> mlua::Result<ObjectId> {
    object_id_at(t, 1)
}

fn whole_number(value: &LuaValue) -> Option<i64> {
    match value {
        LuaValue::Integer(i) => Some(*i),
        LuaValue::Number(n) if n.fract() == 0.0 && n.abs() <= MAX_EXACT => Some(*n as i64),
        _ => None,
    }
}

fn permission(t: &Table, name: &str, arg: usize) -> mlua::Result<Option<i64>> {
    match t.raw_get::<LuaValue>(name)? {
        LuaValue::Nil => Ok(None),
        v => whole_number(&v)
            .map(Some)
            .ok_or_else(|| arg_error(arg, &format!("expects {name} to be number"))),
    }
}

fn storage_write(lua: &Lua, t: &Table, arg: usize) -> mlua::Result<StorageWrite> {
    let id = object_id_at(t, arg)?;
    let value = match t.raw_get::<LuaValue>("value")? {
        LuaValue::Nil => return Err(arg_error(arg, "expects value to be supplied")),
        v @ LuaValue::Table(_) => convert::json_text(lua, &v)
            .map_err(|e| arg_error(arg, &format!("failed to convert value: {e}")))?,
        _ => return Err(arg_error(arg, "expects value to be table")),
    };
    let version = string_field(t, "version", arg)?.unwrap_or_default();
    let read = ReadPermission::parse(permission(t, "permission_read", arg)?)
        .map_err(|e| arg_error(arg, &e.message))?;
    let write = WritePermission::parse(permission(t, "permission_write", arg)?)
        .map_err(|e| arg_error(arg, &e.message))?;
    StorageWrite::new(id, value, &version, read, write).map_err(|e| arg_error(arg, &e.message))
}

fn storage_delete(t: &Table, arg: usize) -> mlua::Result<StorageDelete> {
    let id = object_id_at(t, arg)?;
    let version = match string_field(t, "version", arg)? {
        Some(v) if v.is_empty() => {
            return Err(arg_error(arg, "expects version to be a non-empty string"));
        }
        v => v.unwrap_or_default(),
    };
    Ok(StorageDelete::new(id, &version))
}

fn changeset_of(t: &Table, arg: usize) -> mlua::Result<Wallet> {
    let mut changeset = Wallet::new();
    for pair in t.pairs::<LuaValue, LuaValue>() {
        let (k, v) = pair?;
        let LuaValue::String(name) = k else {
            return Err(arg_error(arg, "expects a table as changeset value"));
        };
        let amount = whole_number(&v)
            .ok_or_else(|| arg_error(arg, "expects changeset values to be whole numbers"))?;
        changeset.insert(name.to_str()?.to_owned(), amount);
    }
    Ok(changeset)
}

fn metadata_of(lua: &Lua, t: Option<Table>, arg: usize) -> mlua::Result<String> {
    match t {
        None => Ok("{}".to_owned()),
        // The usual `{}`, without a conversion's walks (see
        // `convert::is_plain_empty`).
        Some(t) if convert::is_plain_empty(&t) => Ok("{}".to_owned()),
        Some(t) => {
            let value = convert::json_text(lua, &LuaValue::Table(t))
                .map_err(|e| arg_error(arg, &format!("failed to convert metadata: {e}")))?;
            if !value.starts_with('{') {
                return Err(arg_error(arg, "expects metadata to be a table of fields"));
            }
            Ok(value)
        }
    }
}

fn wallet_update(lua: &Lua, t: &Table, arg: usize) -> mlua::Result<WalletUpdate> {
    let user_id = match string_field(t, "user_id", arg)? {
        None => return Err(arg_error(arg, "expects user_id to be supplied")),
        Some(id) => {
            Uuid::parse_str(&id).map_err(|_| arg_error(arg, "expects user_id to be a valid ID"))?
        }
    };
    let changeset = match t.raw_get::<LuaValue>("changeset")? {
        LuaValue::Table(c) => changeset_of(&c, arg)?,
        LuaValue::Nil => return Err(arg_error(arg, "expects changeset to be supplied")),
        _ => return Err(arg_error(arg, "expects changeset to be table")),
    };
    let metadata = match t.raw_get::<LuaValue>("metadata")? {
        LuaValue::Table(m) => metadata_of(lua, Some(m), arg)?,
        LuaValue::Nil => "{}".to_owned(),
        _ => return Err(arg_error(arg, "expects metadata to be table")),
    };
    Ok(WalletUpdate {
        user_id,
        changeset,
        metadata,
    })
}

fn account_update(lua: &Lua, t: &Table) -> mlua::Result<(Uuid, AccountUpdate)> {
    let user_id = match string_field(t, "user_id", 1)? {
        Some(id) => Uuid::parse_str(&id).map_err(|_| arg_error(1, "expects a valid user ID"))?,
        None => return Err(arg_error(1, "expects a valid user ID")),
    };
    let metadata = match t.raw_get::<LuaValue>("metadata")? {
        LuaValue::Nil => None,
        LuaValue::Table(m) => Some(metadata_of(lua, Some(m), 1)?),
        _ => return Err(arg_error(1, "expects metadata to be table")),
    };
    let text = |name: &str| -> mlua::Result<Option<String>> {
        Ok(string_field(t, name, 1)?.filter(|v| !v.is_empty()))
    };
    Ok((
        user_id,
        AccountUpdate {
            username: text("username")?,
            display_name: text("display_name")?,
            avatar_url: text("avatar_url")?,
            lang_tag: text("lang_tag")?,
            location: text("location")?,
            timezone: text("timezone")?,
            metadata,
        },
    ))
}

fn acks_table(lua: &Lua, acks: &[StorageAck]) -> mlua::Result<Table> {
    let out = lua.create_table_with_capacity(acks.len(), 0)?;
    for a in acks {
        let t = lua.create_table_with_capacity(0, 4)?;
        t.raw_set("key", a.key.as_str())?;
        t.raw_set("collection", a.collection.as_str())?;
        t.raw_set("user_id", a.user_id.to_string())?;
        t.raw_set("version", a.version.as_str())?;
        out.raw_push(t)?;
    }
    Ok(out)
}

fn wallet_table(lua: &Lua, wallet: &Wallet) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, wallet.len())?;
    for (name, amount) in wallet {
        t.raw_set(name.as_str(), *amount as f64)?;
    }
    Ok(t)
}

fn wallet_results_table(lua: &Lua, results: &[WalletUpdateResult]) -> mlua::Result<Table> {
    let out = lua.create_table_with_capacity(results.len(), 0)?;
    for r in results {
        let t = lua.create_table_with_capacity(0, 3)?;
        t.raw_set("user_id", r.user_id.to_string())?;
        t.raw_set("updated", wallet_table(lua, &r.updated)?)?;
        t.raw_set("previous", wallet_table(lua, &r.previous)?)?;
        out.raw_push(t)?;
    }
    Ok(out)
}

fn ledger_table(lua: &Lua, entry: &LedgerEntry) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, 6)?;
    t.raw_set("id", entry.id.to_string())?;
    t.raw_set("user_id", entry.user_id.to_string())?;
    t.raw_set("create_time", entry.create_time_us / 1_000_000)?;
    t.raw_set("update_time", entry.update_time_us / 1_000_000)?;
    t.raw_set("changeset", json_value(lua, &entry.changeset)?)?;
    t.raw_set("metadata", json_value(lua, &entry.metadata)?)?;
    Ok(t)
}
