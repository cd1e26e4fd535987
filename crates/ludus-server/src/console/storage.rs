//! Storage objects in the console (`/v2/console/storage*`): the collection
//! names, list a collection (of one user, when asked), get, write and
//! delete one object,
//! behind Nakama's `STORAGE_DATA` permissions. The console acts as the
//! server: it reads and writes objects whatever their permissions.

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use ludus_core::console_acl::{Level, Need, Resource};
use ludus_core::storage::{
    Access, ObjectId, ReadPermission, StorageDelete, StorageObject, StorageWrite, WritePermission,
};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Body, ConsoleRoutes, ConsoleState};
use crate::convert;
use crate::error::HttpError;
use crate::extract::QueryParams;

/// Objects in one page of `ListStorage`, as Nakama's console lists them.
const PAGE: usize = 100;

pub(super) fn routes(r: &mut ConsoleRoutes) {
    use Level::{Delete, Read, Write};
    let need = |level| Need::Permission(Resource::StorageData, level);
    r.add("/v2/console/storage", need(Read), get(list));
    r.add(
        "/v2/console/storage/collections",
        need(Read),
        get(collections),
    );
    r.add(
        "/v2/console/storage/{collection}/{key}/{user_id}",
        need(Read),
        get(one),
    );
    r.add(
        "/v2/console/storage/{collection}/{key}/{user_id}",
        need(Write),
        axum::routing::put(write),
    );
    r.add(
        "/v2/console/storage/{collection}/{key}/{user_id}",
        need(Delete),
        axum::routing::delete(remove),
    );
    r.add(
        "/v2/console/storage/{collection}/{key}/{user_id}/{version}",
        need(Delete),
        axum::routing::delete(remove_version),
    );
}

/// An owner's id: a uuid, the nil one for objects the system owns.
fn owner(text: &str) -> Result<Uuid, HttpError> {
    Uuid::parse_str(text).map_err(|_| {
        HttpError::invalid(format!(
            "user id {text:?} is not a valid uuid, use 00000000-0000-0000-0000-000000000000 for system objects"
        ))
    })
}

/// Nakama's `StorageCollectionsList`, with Ludus's `next_cursor`.
#[derive(Serialize)]
struct Collections {
    collections: Vec<String>,
    next_cursor: String,
}

/// `GET /v2/console/storage/collections?cursor=…`: the collection names in
/// order, 100 a page (Nakama answers them all from a cache it refreshes).
async fn collections(
    State(state): State<ConsoleState>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let cursor = query.get("cursor").unwrap_or_default();
    let (collections, next) = state.app.storage.collections(cursor, PAGE).await?;
    Ok(crate::api::json(&Collections {
        collections,
        next_cursor: next.unwrap_or_default(),
    }))
}

/// Nakama's console `StorageListObject`: an object without its value.
#[derive(Serialize)]
struct ListObject {
    collection: String,
    key: String,
    user_id: String,
    version: String,
    permission_read: i32,
    permission_write: i32,
    create_time: ludus_proto::Timestamp,
    update_time: ludus_proto::Timestamp,
}

fn list_object(o: StorageObject) -> ListObject {
    ListObject {
        permission_read: o.read.as_i64() as i32,
        permission_write: o.write.as_i64() as i32,
        create_time: convert::timestamp(o.create_time),
        update_time: convert::timestamp(o.update_time),
        collection: o.collection,
        key: o.key,
        user_id: o.user_id.to_string(),
        version: o.version,
    }
}

/// Nakama's console `StorageList`.
#[derive(Serialize)]
struct StorageList {
    objects: Vec<ListObject>,
    total_count: i32,
    next_cursor: String,
}

/// `GET /v2/console/storage?collection=…&user_id=…&key=…&cursor=…`: a page
/// of a collection, of one owner when `user_id` is given; with `key` and
/// `user_id` the one object. Ludus needs the collection, which Nakama does
/// not (see docs/differences.md).
async fn list(
    State(state): State<ConsoleState>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let collection = query.get("collection").unwrap_or_default();
    let key = query.get("key").unwrap_or_default();
    let user = match query.get("user_id").unwrap_or_default() {
        "" => None,
        text => Some(owner(text)?),
    };
    if collection.is_empty() {
        return Err(HttpError::invalid(
            "collection is required to list storage, pick one from your game's collections",
        ));
    }
    let storage = &state.app.storage;
    if !key.is_empty() {
        let Some(user) = user else {
            return Err(HttpError::invalid(
                "a key filter needs a user_id too, use the system user's nil uuid for system objects",
            ));
        };
        let id = ObjectId::new(collection, key, user)?;
        let found = storage.read(Access::Server, vec![id]).await?;
        return Ok(crate::api::json(&StorageList {
            total_count: found.len() as i32,
            objects: found.into_iter().map(list_object).collect(),
            next_cursor: String::new(),
        }));
    }
    let cursor = query.get("cursor").unwrap_or_default();
    let page = storage
        .list(Access::Server, collection, user, PAGE, cursor)
        .await?;
    Ok(crate::api::json(&StorageList {
        total_count: page.objects.len() as i32,
        objects: page.objects.into_iter().map(list_object).collect(),
        next_cursor: page.cursor.unwrap_or_default(),
    }))
}

/// `GET /v2/console/storage/{collection}/{key}/{user_id}`: the object with
/// its value, or 404.
async fn one(
    State(state): State<ConsoleState>,
    Path((collection, key, user)): Path<(String, String, String)>,
) -> Result<Response, HttpError> {
    let id = ObjectId::new(&collection, &key, owner(&user)?)?;
    let found = state.app.storage.read(Access::Server, vec![id]).await?;
    let object = found
        .into_iter()
        .next()
        .ok_or_else(|| HttpError::new(ludus_core::Code::NotFound, "storage object not found"))?;
    Ok(crate::api::json(&convert::storage_object(object)))
}

/// Nakama's `WriteStorageObjectRequest` body; the path names the object.
#[derive(Deserialize, Default)]
#[serde(default)]
struct WriteBody {
    value: String,
    version: String,
    permission_read: Option<i64>,
    permission_write: Option<i64>,
}

/// `PUT /v2/console/storage/{collection}/{key}/{user_id}`: writes the
/// object (a version makes the write conditional) and answers its ack.
async fn write(
    State(state): State<ConsoleState>,
    Path((collection, key, user)): Path<(String, String, String)>,
    Body(body): Body<WriteBody>,
) -> Result<Response, HttpError> {
    let id = ObjectId::new(&collection, &key, owner(&user)?)?;
    let read = match body.permission_read {
        None => ReadPermission::OwnerRead,
        Some(n) => ReadPermission::from_i64(n).ok_or_else(|| {
            HttpError::invalid("permission_read must be 0 (no read), 1 (owner) or 2 (public)")
        })?,
    };
    let write = match body.permission_write {
        None => WritePermission::OwnerWrite,
        Some(n) => WritePermission::from_i64(n).ok_or_else(|| {
            HttpError::invalid("permission_write must be 0 (no write) or 1 (owner)")
        })?,
    };
    let object = StorageWrite::new(id, body.value, &body.version, read, write)?;
    let ack = state
        .app
        .storage
        .write(Access::Server, vec![object])
        .await?
        .pop()
        .ok_or_else(|| {
            HttpError::new(ludus_core::Code::Internal, "the write was not acknowledged")
        })?;
    Ok(crate::api::json(&convert::storage_ack(ack)))
}

async fn remove(
    State(state): State<ConsoleState>,
    Path((collection, key, user)): Path<(String, String, String)>,
) -> Result<Response, HttpError> {
    delete_object(&state, &collection, &key, &user, "").await
}

async fn remove_version(
    State(state): State<ConsoleState>,
    Path((collection, key, user, version)): Path<(String, String, String, String)>,
) -> Result<Response, HttpError> {
    delete_object(&state, &collection, &key, &user, &version).await
}

/// Deletes one object; with a version, only if it still has that version.
async fn delete_object(
    state: &ConsoleState,
    collection: &str,
    key: &str,
    user: &str,
    version: &str,
) -> Result<Response, HttpError> {
    let id = ObjectId::new(collection, key, owner(user)?)?;
    state
        .app
        .storage
        .delete(Access::Server, vec![StorageDelete::new(id, version)])
        .await?;
    Ok(crate::api::empty())
}
