//! The console's own settings (`/v2/console/setting*`): Nakama's names
//! (`utc_toggle`, whether the web console shows times in UTC) with JSON
//! values, read one by one (`SETTINGS` read), listed (any console session)
//! and changed (`SETTINGS` write); and the extensions this server has
//! (`/v2/console/extensions`, any session): no Hiro, no Satori.

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{get, post};
use ludus_core::console_acl::{Level, Need, Resource};
use ludus_core::console_records::{self, ConsoleSetting};
use serde::{Deserialize, Serialize};

use super::{Body, ConsoleRoutes, ConsoleState};
use crate::error::HttpError;
use crate::extract::QueryParams;

pub(super) fn routes(r: &mut ConsoleRoutes) {
    let need = |level| Need::Permission(Resource::Settings, level);
    r.add("/v2/console/setting", Need::Session, get(list));
    r.add("/v2/console/setting/{name}", need(Level::Read), get(one));
    r.add(
        "/v2/console/setting/{name}",
        need(Level::Write),
        post(update),
    );
    r.add("/v2/console/extensions", Need::Session, get(extensions));
}

/// Nakama's `Setting`: `update_time_sec` is an int64, so a JSON string.
#[derive(Serialize)]
struct SettingJson {
    name: String,
    value: String,
    update_time_sec: String,
}

fn setting_json(s: ConsoleSetting) -> SettingJson {
    SettingJson {
        name: s.name,
        value: s.value,
        update_time_sec: s.update_time.to_string(),
    }
}

fn api(e: ludus_core::StoreError) -> HttpError {
    ludus_core::ApiError::from(e).into()
}

fn not_found(name: &str) -> HttpError {
    HttpError::new(
        ludus_core::Code::NotFound,
        format!(
            "setting {name:?} not found, the console has: {}",
            console_records::SETTINGS.join(", ")
        ),
    )
}

async fn one(
    State(state): State<ConsoleState>,
    Path(name): Path<String>,
) -> Result<Response, HttpError> {
    let found = state
        .app
        .accounts
        .store()
        .console_settings(std::slice::from_ref(&name))
        .await
        .map_err(api)?;
    match found.into_iter().next() {
        Some(setting) => Ok(crate::api::json(&setting_json(setting))),
        None => Err(not_found(&name)),
    }
}

/// Nakama's `SettingList`; `acl_resources` exists for its API generator
/// and stays empty.
#[derive(Serialize)]
struct SettingList {
    settings: Vec<SettingJson>,
    acl_resources: Vec<i32>,
}

/// `?names=…` (repeated, or comma-separated) picks settings; none lists all.
async fn list(
    State(state): State<ConsoleState>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let names: Vec<String> = query
        .all("names")
        .iter()
        .flat_map(|v| v.split(','))
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .collect();
    let settings = state
        .app
        .accounts
        .store()
        .console_settings(&names)
        .await
        .map_err(api)?;
    Ok(crate::api::json(&SettingList {
        settings: settings.into_iter().map(setting_json).collect(),
        acl_resources: Vec::new(),
    }))
}

/// Nakama's `UpdateSettingRequest` (the name is in the path).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct UpdateRequest {
    value: String,
}

async fn update(
    State(state): State<ConsoleState>,
    Path(name): Path<String>,
    Body(req): Body<UpdateRequest>,
) -> Result<Response, HttpError> {
    let value = console_records::setting_value(&name, &req.value)?;
    let updated = state
        .app
        .accounts
        .store()
        .console_setting_set(&name, &value, ludus_core::unix_now())
        .await
        .map_err(api)?
        .ok_or_else(|| not_found(&name))?;
    Ok(crate::api::json(&setting_json(updated)))
}

/// Nakama's `Extensions` for a server without Hiro or Satori: every field
/// written, `hiro_systems` unset.
#[derive(Serialize)]
struct Extensions {
    hiro: bool,
    hiro_systems: Option<()>,
    satori: bool,
}

async fn extensions() -> Response {
    crate::api::json(&Extensions {
        hiro: false,
        hiro_systems: None,
        satori: false,
    })
}
