//! Account export and import in the console (Nakama's `ExportAccount`,
//! `ImportAccount` and `ImportAccountFull`), behind `ACCOUNT_EXPORT` read
//! and write: the same export and import as `nk.account_export_id` and
//! `nk.account_import_id`, through the runtime's services, so the console
//! and modules write and read one format.

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use ludus_core::console_acl::{Level, Need, Resource};
use ludus_proto::api;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::accounts::account_id;
use super::{Body, ConsoleRoutes, ConsoleState};
use crate::convert;
use crate::error::HttpError;

pub(super) fn routes(r: &mut ConsoleRoutes) {
    let read = Need::Permission(Resource::AccountExport, Level::Read);
    let write = Need::Permission(Resource::AccountExport, Level::Write);
    r.add("/v2/console/account/{account_id}/export", read, get(export));
    r.add(
        "/v2/console/account/{account_id}/import",
        write,
        put(import),
    );
    r.add("/v2/console/account", write, post(import_full));
}

/// Nakama's `AccountImport`: the export to import (its `id`, when given,
/// comes from the path).
#[derive(Deserialize, Default)]
#[serde(default)]
struct ImportBody {
    data: Option<Value>,
}

/// The export's JSON text, or a 400 when there is none.
fn data_of(body: ImportBody) -> Result<String, HttpError> {
    match body.data {
        Some(Value::Object(o)) => Ok(Value::Object(o).to_string()),
        _ => Err(HttpError::invalid(
            "expects data to be an account export object",
        )),
    }
}

async fn export(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
) -> Result<Response, HttpError> {
    let id = account_id(&id)?;
    let json = state.app.runtime.services().account_export(id).await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], json).into_response())
}

async fn import(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
    Body(body): Body<ImportBody>,
) -> Result<Response, HttpError> {
    let id = account_id(&id)?;
    let data = data_of(body)?;
    state
        .app
        .runtime
        .services()
        .account_import(data, Some(id))
        .await?;
    Ok(crate::api::empty())
}

/// Nakama's console `Account`.
#[derive(Serialize)]
struct ConsoleAccount {
    account: api::Account,
    disable_time: Option<ludus_proto::Timestamp>,
}

async fn import_full(
    State(state): State<ConsoleState>,
    Body(body): Body<ImportBody>,
) -> Result<Response, HttpError> {
    let data = data_of(body)?;
    let account = state
        .app
        .runtime
        .services()
        .account_import(data, None)
        .await?;
    let disable_time = account.disable_time.map(convert::timestamp);
    Ok(crate::api::json(&ConsoleAccount {
        account: convert::account(account),
        disable_time,
    }))
}
