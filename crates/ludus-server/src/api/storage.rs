//! Storage objects over REST, with Nakama's paths, shapes and hooks:
//! `PUT /v2/storage` (write, `writestorageobjects`), `POST /v2/storage`
//! (read, `readstorageobjects`), `GET /v2/storage/{collection}` and
//! `GET /v2/storage/{collection}/{user_id}` (list, `liststorageobjects`) and
//! `PUT /v2/storage/delete` (`deletestorageobjects`). Each turns the wire
//! request into domain values and delegates to `StorageService`, on behalf
//! of the caller, whose permissions apply.

use axum::extract::{Path, State};
use axum::response::Response;
use ludus_core::storage::{
    self, Access, ObjectId, ReadPermission, StorageDelete, StorageWrite, WritePermission,
};
use ludus_proto::api;

use super::{empty, json};
use crate::convert;
use crate::error::HttpError;
use crate::extract::{ProtoJson, QueryParams, Session};
use crate::runtime::{self, ClientAddr};
use crate::state::AppState;

pub(super) async fn write(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    ProtoJson(body): ProtoJson<api::WriteStorageObjectsRequest>,
) -> Result<Response, HttpError> {
    const API: &str = "writestorageobjects";
    let req = runtime::before(&state, API, Some(&caller), client, body).await?;
    let owner = caller.user_id;
    let writes = req
        .objects
        .iter()
        .map(|o| {
            StorageWrite::new(
                ObjectId::new(&o.collection, &o.key, owner)?,
                o.value.clone(),
                &o.version,
                ReadPermission::parse(o.permission_read.as_ref().map(|p| p.value.into()))?,
                WritePermission::parse(o.permission_write.as_ref().map(|p| p.value.into()))?,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let acks = state.storage.write(Access::User(owner), writes).await?;
    let acks = api::StorageObjectAcks {
        acks: acks.into_iter().map(convert::storage_ack).collect(),
    };
    runtime::after(&state, API, Some(&caller), client, &acks, &req).await;
    Ok(json(&acks))
}

pub(super) async fn read(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    ProtoJson(body): ProtoJson<api::ReadStorageObjectsRequest>,
) -> Result<Response, HttpError> {
    const API: &str = "readstorageobjects";
    let req = runtime::before(&state, API, Some(&caller), client, body).await?;
    let ids = req
        .object_ids
        .iter()
        .map(|id| {
            // No user id reads the server's objects (the system user's).
            let owner = storage::parse_user_id(&id.user_id)?.unwrap_or(storage::SYSTEM_USER_ID);
            ObjectId::new(&id.collection, &id.key, owner)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let objects = state
        .storage
        .read(Access::User(caller.user_id), ids)
        .await?;
    let objects = api::StorageObjects {
        objects: objects.into_iter().map(convert::storage_object).collect(),
    };
    runtime::after(&state, API, Some(&caller), client, &objects, &req).await;
    Ok(json(&objects))
}

pub(super) async fn list(
    state: State<AppState>,
    session: Session,
    client: ClientAddr,
    Path(collection): Path<String>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let user_id = query.get("user_id").unwrap_or_default().to_owned();
    list_objects(state, session, client, collection, user_id, query).await
}

pub(super) async fn list_user(
    state: State<AppState>,
    session: Session,
    client: ClientAddr,
    Path((collection, user_id)): Path<(String, String)>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    list_objects(state, session, client, collection, user_id, query).await
}

async fn list_objects(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    collection: String,
    user_id: String,
    query: QueryParams,
) -> Result<Response, HttpError> {
    const API: &str = "liststorageobjects";
    let limit = match query.get("limit").filter(|l| !l.is_empty()) {
        None => None,
        Some(l) => Some(pbjson_limit(l)?),
    };
    let req = api::ListStorageObjectsRequest {
        user_id,
        collection,
        limit,
        cursor: query.get("cursor").unwrap_or_default().to_owned(),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    // Nakama lists one object when no limit is given.
    let limit = match &req.limit {
        None => 1,
        Some(l) if (1..=storage::MAX_LIST_LIMIT as i32).contains(&l.value) => l.value as usize,
        Some(_) => {
            return Err(HttpError::invalid(format!(
                "invalid limit - limit must be between 1 and {}",
                storage::MAX_LIST_LIMIT
            )));
        }
    };
    // Unlike reads, a listing may name the system user (nil id), as Nakama's.
    let owner = match req.user_id.as_str() {
        "" => None,
        id => Some(uuid::Uuid::parse_str(id).map_err(|_| {
            HttpError::invalid("invalid user id - make sure user id is a valid uuid")
        })?),
    };
    let page = state
        .storage
        .list(
            Access::User(caller.user_id),
            &req.collection,
            owner,
            limit,
            &req.cursor,
        )
        .await?;
    let list = api::StorageObjectList {
        objects: page
            .objects
            .into_iter()
            .map(convert::storage_object)
            .collect(),
        cursor: page.cursor.unwrap_or_default(),
    };
    runtime::after(&state, API, Some(&caller), client, &list, &req).await;
    Ok(json(&list))
}

fn pbjson_limit(raw: &str) -> Result<ludus_proto::pbjson_types::Int32Value, HttpError> {
    raw.parse::<i32>()
        .map(|value| ludus_proto::pbjson_types::Int32Value { value })
        .map_err(|_| {
            HttpError::invalid(format!(
                "invalid limit - limit must be between 1 and {}",
                storage::MAX_LIST_LIMIT
            ))
        })
}

pub(super) async fn delete(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    ProtoJson(body): ProtoJson<api::DeleteStorageObjectsRequest>,
) -> Result<Response, HttpError> {
    const API: &str = "deletestorageobjects";
    let req = runtime::before(&state, API, Some(&caller), client, body).await?;
    let owner = caller.user_id;
    let deletes = req
        .object_ids
        .iter()
        .map(|id| {
            Ok(StorageDelete::new(
                ObjectId::new(&id.collection, &id.key, owner)?,
                &id.version,
            ))
        })
        .collect::<Result<Vec<_>, ludus_core::ApiError>>()?;
    state.storage.delete(Access::User(owner), deletes).await?;
    runtime::after(
        &state,
        API,
        Some(&caller),
        client,
        &serde_json::Value::Null,
        &req,
    )
    .await;
    Ok(empty())
}
