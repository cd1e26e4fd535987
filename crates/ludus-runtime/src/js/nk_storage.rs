//! Storage and wallets of Nakama's JS `nk`: `storageRead`, `storageWrite`,
//! `storageDelete`, `storageList`, `storageIndexList`, `storageWriteRetry`,
//! `walletsUpdate`,
//! `walletLedgerList`, `walletLedgerUpdate` and `multiUpdate`, with
//! Nakama's camelCase request and result objects. They act as the server
//! (permissions are not checked; a missing `userId` is the system user),
//! through the same `RuntimeServices` calls as Lua's.

use std::sync::Arc;

use ludus_core::model::AccountUpdate;
use ludus_core::multi_update::MultiUpdate;
use ludus_core::storage::{
    Access, ObjectId, ReadPermission, Rejection, SYSTEM_USER_ID, StorageAck, StorageDelete,
    StorageWrite, VersionCheck, WritePermission,
};
use ludus_core::wallet::{LedgerEntry, Wallet, WalletUpdate, WalletUpdateResult};
use rquickjs::function::Opt;
use rquickjs::{Ctx, Function, Object, Value};
use serde_json::{Map, Value as Json, json};
use uuid::Uuid;

use super::nk_common::{
    NkError, answer, arg, define, field, int_of, json_of, json_text, nothing, parsed, served,
    storage_object_json, string_of, throw, to_js,
};
use super::shared::JsShared;

pub(super) fn install<'js>(
    ctx: &Ctx<'js>,
    nk: &Object<'js>,
    shared: &Arc<JsShared>,
) -> rquickjs::Result<()> {
    define(ctx, nk, shared, "storageRead", |s, a| {
        let ids = each(a.get(0), "keys", object_id)?;
        if ids.is_empty() {
            return answer(json!([]));
        }
        let services = s.services.clone();
        let objects = served(s, "failed to read storage objects", async move {
            services.storage_read(ids).await
        })?;
        answer(Json::Array(
            objects.iter().map(storage_object_json).collect(),
        ))
    })?;
    define(ctx, nk, shared, "storageWrite", |s, a| {
        let writes = each(a.get(0), "data", storage_write)?;
        if writes.is_empty() {
            return answer(json!([]));
        }
        let services = s.services.clone();
        let acks = served(s, "failed to write storage objects", async move {
            services.storage_write(writes).await
        })?;
        answer(acks_json(&acks))
    })?;
    define(ctx, nk, shared, "storageDelete", |s, a| {
        let deletes = each(a.get(0), "object ids", storage_delete)?;
        if deletes.is_empty() {
            return nothing();
        }
        let services = s.services.clone();
        served(s, "failed to remove storage", async move {
            services.storage_delete(deletes).await
        })?;
        nothing()
    })?;
    define(ctx, nk, shared, "storageList", |s, a| {
        let owner = optional_uuid(&a.string(0, "user id")?, "expects empty or valid user id")?;
        let collection = a.string(1, "collection")?;
        let limit = a.int_or(2, 100, "limit")?;
        if limit < 0 {
            return Err(arg("limit must not be negative"));
        }
        let cursor = a.string(3, "cursor")?;
        let caller = optional_uuid(
            &a.string(4, "caller id")?,
            "expects caller id to be valid identifier",
        )?;
        let services = s.services.clone();
        let page = served(s, "failed to list storage objects", async move {
            services
                .storage_list(caller, owner, &collection, limit as usize, &cursor)
                .await
        })?;
        answer(json!({
            "objects": page.objects.iter().map(storage_object_json).collect::<Vec<_>>(),
            "cursor": page.cursor,
        }))
    })?;
    define(ctx, nk, shared, "storageIndexList", |s, a| {
        let name = a.required(0, "index name")?;
        let query = a.string(1, "query")?;
        let limit = a.int_or(2, 100, "limit")?;
        if !(1..=10_000).contains(&limit) {
            return Err(arg("limit must be 1-10000"));
        }
        let order = a
            .strings(3, "order")
            .map_err(|_| arg("expects an array of strings"))?;
        let caller = optional_uuid(
            &a.string(4, "caller id")?,
            "expects caller id to be valid identifier",
        )?;
        let cursor = a.string(5, "cursor")?;
        let services = s.services.clone();
        let page = served(s, "failed to lookup storage index", async move {
            services
                .storage_index_list(&name, &query, limit as usize, order, caller, &cursor)
                .await
        })?;
        answer(json!({
            "objects": page.objects.iter().map(storage_object_json).collect::<Vec<_>>(),
            "cursor": page.cursor,
        }))
    })?;
    define(ctx, nk, shared, "walletsUpdate", |s, a| {
        let updates = each(a.get(0), "updates", wallet_update)?;
        let ledger = a.bool_or(1, false, "update ledger")?;
        let services = s.services.clone();
        let results = served(s, "failed to update user wallet", async move {
            services.wallets_update(updates, ledger).await
        })?;
        answer(wallet_results_json(&results))
    })?;
    define(ctx, nk, shared, "walletLedgerList", |s, a| {
        let user = a.uuid(0, "user id")?;
        let limit = a.int_or(1, 100, "limit")?;
        if !(0..=100).contains(&limit) {
            return Err(arg("expects limit to be 0-100"));
        }
        let cursor = a.string(2, "cursor")?;
        let services = s.services.clone();
        let page = served(s, "failed to retrieve user wallet ledger", async move {
            services
                .wallet_ledger_list(user, limit as usize, &cursor)
                .await
        })?;
        answer(json!({
            "items": page.entries.iter().map(ledger_json).collect::<Vec<_>>(),
            "cursor": page.cursor,
        }))
    })?;
    define(ctx, nk, shared, "walletLedgerUpdate", |s, a| {
        let id = a.uuid(0, "id")?;
        let Some(metadata) = json_text(a.get(1), "metadata")? else {
            return Err(arg("expects metadata object"));
        };
        let services = s.services.clone();
        let entry = served(s, "failed to update user wallet ledger", async move {
            services.wallet_ledger_update(id, &metadata).await
        })?;
        answer(ledger_json(&entry))
    })?;
    write_retry(ctx, nk, shared)?;
    define(ctx, nk, shared, "multiUpdate", |s, a| {
        let mut update = MultiUpdate::new(Access::Server);
        update.accounts = each(a.get(0), "account updates", account_update)?;
        update.writes = each(a.get(1), "storage writes", storage_write)?;
        update.deletes = each(a.get(2), "storage deletes", storage_delete)?;
        update.wallets = each(a.get(3), "wallet updates", wallet_update)?;
        update.update_ledger = a.bool_or(4, false, "update ledger")?;
        let services = s.services.clone();
        let done = served(s, "error running multi update", async move {
            services.multi_update(update).await
        })?;
        answer(json!({
            "storageWriteAcks": acks_json(&done.acks),
            "walletUpdateAcks": wallet_results_json(&done.wallets),
        }))
    })?;
    Ok(())
}

/// Most retries `storageWriteRetry` makes (Nakama's).
const MAX_WRITE_RETRIES: i64 = 10;

/// `storageWriteRetry(keys, updateFn, maxRetries)`: reads `keys`, hands the
/// objects to `updateFn`, and writes the objects it answers, each held to
/// the version read (or to not existing, for a key that was absent) unless
/// it names a version of its own; when another write came first, the
/// round runs again, up to `maxRetries` more times.
fn write_retry<'js>(
    ctx: &Ctx<'js>,
    nk: &Object<'js>,
    shared: &Arc<JsShared>,
) -> rquickjs::Result<()> {
    const NAME: &str = "storageWriteRetry";
    let s = shared.clone();
    let f = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, keys: Value<'js>, update: Value<'js>, retries: Opt<Value<'js>>| {
            let fail = |e: NkError| throw(&ctx, NAME, e);
            let keys = json_of(keys, 0).map_err(fail)?;
            let ids = each(&keys, "keys", object_id).map_err(fail)?;
            if ids.is_empty() {
                return to_js(&ctx, &json!([]));
            }
            let Some(update) = update.into_function() else {
                return Err(fail(arg("expects an update function")));
            };
            let retries = match retries.0 {
                None => 0,
                Some(v) => match json_of(v, 0).map_err(fail)? {
                    Json::Null => 0,
                    v => int_of(&v, "max retries").map_err(fail)?,
                },
            };
            if !(0..=MAX_WRITE_RETRIES).contains(&retries) {
                return Err(fail(arg(format!(
                    "max retries must be 0-{MAX_WRITE_RETRIES}"
                ))));
            }
            let conflict = ludus_core::ApiError::from(Rejection::Version).message;
            let mut left = retries;
            loop {
                let (services, read) = (s.services.clone(), ids.clone());
                let objects = served(&s, "failed to read storage objects", async move {
                    services.storage_read(read).await
                })
                .map_err(fail)?;
                let listed = Json::Array(objects.iter().map(storage_object_json).collect());
                let answered: Value = update.call((to_js(&ctx, &listed)?,))?;
                let answered = json_of(answered, 0).map_err(fail)?;
                let mut writes = each(&answered, "writes", storage_write).map_err(fail)?;
                if writes.is_empty() {
                    return to_js(&ctx, &json!([]));
                }
                for w in &mut writes {
                    if w.check != VersionCheck::Any {
                        continue;
                    }
                    if let Some(o) = objects.iter().find(|o| {
                        o.collection == w.id.collection
                            && o.key == w.id.key
                            && o.user_id == w.id.user_id
                    }) {
                        w.check = VersionCheck::IfMatch(o.version.clone());
                    } else if ids.contains(&w.id) {
                        w.check = VersionCheck::IfNotExists;
                    }
                }
                let services = s.services.clone();
                let written = s
                    .wait(async move { services.storage_write(writes).await })
                    .map_err(|e| fail(NkError::Server(e)))?;
                match written {
                    Ok(acks) => return to_js(&ctx, &acks_json(&acks)),
                    Err(e) if e.message == conflict && left > 0 => left -= 1,
                    Err(e) => {
                        return Err(fail(NkError::Server(format!(
                            "failed to write storage objects with retry: {}",
                            e.message
                        ))));
                    }
                }
            }
        },
    )?;
    nk.set(NAME, f)
}

/// Each object of an array (`null`: none), parsed by `f`.
fn each<T>(
    v: &Json,
    what: &str,
    f: impl Fn(&Map<String, Json>) -> Result<T, NkError>,
) -> Result<Vec<T>, NkError> {
    let items = match v {
        Json::Null => return Ok(Vec::new()),
        Json::Array(items) => items,
        _ => return Err(arg(format!("expects an array of {what}"))),
    };
    items
        .iter()
        .map(|item| match item {
            Json::Object(o) => f(o),
            _ => Err(arg(format!("expects each of {what} to be an object"))),
        })
        .collect()
}

fn optional_uuid(s: &str, message: &str) -> Result<Option<Uuid>, NkError> {
    if s.is_empty() {
        return Ok(None);
    }
    Uuid::parse_str(s).map(Some).map_err(|_| arg(message))
}

fn required(o: &Map<String, Json>, key: &str) -> Result<String, NkError> {
    let s = string_of(field(o, key), key)?;
    if s.is_empty() {
        return Err(arg(format!("expects {key} value to be a non-empty string")));
    }
    Ok(s)
}

/// `userId`: absent or empty is the system user.
fn owner(o: &Map<String, Json>) -> Result<Uuid, NkError> {
    match string_of(field(o, "userId"), "userId")?.as_str() {
        "" => Ok(SYSTEM_USER_ID),
        id => Uuid::parse_str(id).map_err(|_| arg("expects userId to be a valid id")),
    }
}

fn object_id(o: &Map<String, Json>) -> Result<ObjectId, NkError> {
    let collection = required(o, "collection")?;
    let key = required(o, "key")?;
    ObjectId::new(&collection, &key, owner(o)?).map_err(|e| arg(e.message))
}

fn permission(o: &Map<String, Json>, key: &str) -> Result<Option<i64>, NkError> {
    match field(o, key) {
        Json::Null => Ok(None),
        v => int_of(v, key).map(Some),
    }
}

fn storage_write(o: &Map<String, Json>) -> Result<StorageWrite, NkError> {
    let id = object_id(o)?;
    let value = match field(o, "value") {
        Json::Null => return Err(arg("expects value to be supplied")),
        v @ Json::Object(_) => v.to_string(),
        _ => return Err(arg("expects value to be an object")),
    };
    let version = string_of(field(o, "version"), "version")?;
    let read =
        ReadPermission::parse(permission(o, "permissionRead")?).map_err(|e| arg(e.message))?;
    let write =
        WritePermission::parse(permission(o, "permissionWrite")?).map_err(|e| arg(e.message))?;
    StorageWrite::new(id, value, &version, read, write).map_err(|e| arg(e.message))
}

fn storage_delete(o: &Map<String, Json>) -> Result<StorageDelete, NkError> {
    let id = object_id(o)?;
    let version = string_of(field(o, "version"), "version")?;
    Ok(StorageDelete::new(id, &version))
}

fn changeset_of(v: &Json) -> Result<Wallet, NkError> {
    let Json::Object(o) = v else {
        return Err(arg("expects changeset to be an object"));
    };
    let mut out = Wallet::new();
    for (k, v) in o {
        let n = match v {
            Json::Number(n) => n.as_i64(),
            _ => None,
        };
        let n = n.ok_or_else(|| arg("expects changeset values to be whole numbers"))?;
        out.insert(k.clone(), n);
    }
    Ok(out)
}

fn wallet_update(o: &Map<String, Json>) -> Result<WalletUpdate, NkError> {
    let user_id = Uuid::parse_str(&string_of(field(o, "userId"), "userId")?)
        .map_err(|_| arg("expects userId to be a valid id"))?;
    let changeset = match field(o, "changeset") {
        Json::Null => return Err(arg("expects changeset to be supplied")),
        v => changeset_of(v)?,
    };
    let metadata = json_text(field(o, "metadata"), "metadata")?.unwrap_or_else(|| "{}".into());
    Ok(WalletUpdate {
        user_id,
        changeset,
        metadata,
    })
}

fn account_update(o: &Map<String, Json>) -> Result<(Uuid, AccountUpdate), NkError> {
    let user_id = Uuid::parse_str(&string_of(field(o, "userId"), "userId")?)
        .map_err(|_| arg("expects a valid user id"))?;
    let text = |key: &str| -> Result<Option<String>, NkError> {
        Ok(Some(string_of(field(o, key), key)?).filter(|v| !v.is_empty()))
    };
    let update = AccountUpdate {
        username: text("username")?,
        display_name: text("displayName")?,
        avatar_url: text("avatarUrl")?,
        lang_tag: text("langTag")?,
        location: text("location")?,
        timezone: text("timezone")?,
        metadata: json_text(field(o, "metadata"), "metadata")?,
    };
    Ok((user_id, update))
}

fn acks_json(acks: &[StorageAck]) -> Json {
    acks.iter()
        .map(|a| {
            json!({
                "key": a.key,
                "collection": a.collection,
                "userId": a.user_id.to_string(),
                "version": a.version,
            })
        })
        .collect()
}

fn wallet_results_json(results: &[WalletUpdateResult]) -> Json {
    results
        .iter()
        .map(|r| {
            json!({
                "userId": r.user_id.to_string(),
                "updated": r.updated,
                "previous": r.previous,
            })
        })
        .collect()
}

/// A ledger item as Nakama's: times in UNIX seconds.
fn ledger_json(e: &LedgerEntry) -> Json {
    json!({
        "id": e.id.to_string(),
        "userId": e.user_id.to_string(),
        "createTime": e.create_time_us / 1_000_000,
        "updateTime": e.update_time_us / 1_000_000,
        "changeset": parsed(&e.changeset),
        "metadata": parsed(&e.metadata),
    })
}
