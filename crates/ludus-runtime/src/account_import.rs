//! Reading an account export for `nk.account_import_id`: Nakama's console
//! `AccountExport` JSON (what `nk.account_export_id` writes) into an
//! [`AccountImport`], checked as every door that stores an account or an
//! object checks it. Only the account and its storage objects are imported,
//! as Nakama does; the export's other parts are ignored.

use ludus_core::ApiError;
use ludus_core::model::{Account, AccountImport, AccountUpdate, User};
use ludus_core::storage::{ReadPermission, StorageObject, WritePermission};
use ludus_core::stored_json;
use ludus_proto::api;
use serde_json::Value;
use uuid::Uuid;

/// The export in `data`, imported into `into` or as a new account.
pub(crate) fn parse(data: &str, into: Option<Uuid>) -> Result<AccountImport, ApiError> {
    let bad = || ApiError::invalid("expects data to be a valid account export");
    if data.is_empty() {
        return Err(ApiError::invalid("expects data to be present"));
    }
    let export: Value = serde_json::from_str(data).map_err(|_| bad())?;
    let account: api::Account = match export.get("account") {
        Some(a) => ludus_proto::from_json(a.to_string().as_bytes()).map_err(|_| bad())?,
        None => return Err(bad()),
    };
    let objects: Vec<api::StorageObject> = match export.get("objects") {
        None | Some(Value::Null) => Vec::new(),
        Some(o) => ludus_proto::from_json(o.to_string().as_bytes()).map_err(|_| bad())?,
    };
    let u = account.user.unwrap_or_default();
    let id = match into {
        Some(id) => id,
        None => match Uuid::parse_str(&u.id) {
            Ok(id) if !id.is_nil() => id,
            _ => {
                return Err(ApiError::invalid(
                    "expects the export's user id to be a valid identifier, or a user id to import into",
                ));
            }
        },
    };
    let metadata = empty_object(u.metadata);
    let wallet = empty_object(account.wallet);
    stored_json::check_object(&metadata, "metadata")?;
    stored_json::check_object(&wallet, "wallet")?;
    if into.is_none() {
        AccountUpdate {
            username: Some(u.username.clone()),
            display_name: Some(u.display_name.clone()),
            avatar_url: Some(u.avatar_url.clone()),
            lang_tag: Some(u.lang_tag.clone()),
            location: Some(u.location.clone()),
            timezone: Some(u.timezone.clone()),
            metadata: None,
        }
        .check()?;
    }
    let seconds = |t: Option<ludus_proto::Timestamp>| t.map_or(0, |t| t.seconds);
    let now = ludus_core::unix_now();
    let objects = objects
        .into_iter()
        .map(|o| object(o, id))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(AccountImport {
        into,
        account: Account {
            user: User {
                id,
                username: u.username,
                display_name: u.display_name,
                avatar_url: u.avatar_url,
                lang_tag: if u.lang_tag.is_empty() {
                    "en".into()
                } else {
                    u.lang_tag
                },
                location: u.location,
                timezone: u.timezone,
                metadata,
                facebook_id: u.facebook_id,
                google_id: u.google_id,
                gamecenter_id: u.gamecenter_id,
                steam_id: u.steam_id,
                facebook_instant_game_id: u.facebook_instant_game_id,
                apple_id: u.apple_id,
                edge_count: 0,
                online: false,
                create_time: match seconds(u.create_time) {
                    0 => now,
                    t => t,
                },
                update_time: match seconds(u.update_time) {
                    0 => now,
                    t => t,
                },
            },
            wallet,
            email: Some(account.email).filter(|e| !e.is_empty()),
            devices: account.devices.into_iter().map(|d| d.id).collect(),
            custom_id: Some(account.custom_id).filter(|c| !c.is_empty()),
            verify_time: account.verify_time.map(|t| t.seconds),
            disable_time: account.disable_time.map(|t| t.seconds),
        },
        objects,
    })
}

fn empty_object(json: String) -> String {
    if json.trim().is_empty() {
        "{}".into()
    } else {
        json
    }
}

/// One exported object, owned by the account imported.
fn object(o: api::StorageObject, owner: Uuid) -> Result<StorageObject, ApiError> {
    stored_json::check_name(&o.collection, "collection", 128)?;
    stored_json::check_name(&o.key, "key", 128)?;
    if o.collection.is_empty() || o.key.is_empty() {
        return Err(ApiError::invalid(
            "expects every storage object to have a collection and a key",
        ));
    }
    stored_json::check_object(&o.value, "storage object value")?;
    let read = ReadPermission::from_i64(i64::from(o.permission_read))
        .ok_or_else(|| ApiError::invalid("expects permission_read to be 0, 1 or 2"))?;
    let write = WritePermission::from_i64(i64::from(o.permission_write))
        .ok_or_else(|| ApiError::invalid("expects permission_write to be 0 or 1"))?;
    let version = if o.version.is_empty() {
        ludus_core::storage::version_of(&o.value)
    } else {
        o.version
    };
    let now = ludus_core::unix_now();
    Ok(StorageObject {
        collection: o.collection,
        key: o.key,
        user_id: owner,
        value: o.value,
        version,
        read,
        write,
        create_time: o.create_time.map_or(now, |t| t.seconds),
        update_time: o.update_time.map_or(now, |t| t.seconds),
    })
}
