//! ACL templates (`/v2/console/acl/template*`): named sets of console
//! permissions the web console starts a new console user from. Adding and
//! changing one needs `ACL_TEMPLATE` write, deleting one `ACL_TEMPLATE`
//! delete; listing them any console session (what Nakama's ACL means to
//! allow: its entry is misspelt, so there only admins list them).

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{delete, get, post, put};
use ludus_core::console_acl::{Acl, Level, Need, Permissions, Resource};
use ludus_core::console_records::{self, AclTemplate};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Body, ConsoleRoutes, ConsoleState};
use crate::error::HttpError;

pub(super) fn routes(r: &mut ConsoleRoutes) {
    let need = |level| Need::Permission(Resource::AclTemplate, level);
    r.add("/v2/console/acl/template", need(Level::Write), post(add));
    r.add("/v2/console/acl/template", Need::Session, get(list));
    r.add(
        "/v2/console/acl/template/{id}",
        need(Level::Write),
        put(update),
    );
    r.add(
        "/v2/console/acl/template/{id}",
        need(Level::Delete),
        delete(remove),
    );
}

/// Nakama's `AclTemplate`, every field written.
#[derive(Serialize)]
struct TemplateJson {
    id: String,
    name: String,
    description: String,
    acl: BTreeMap<String, Permissions>,
    create_time: ludus_proto::Timestamp,
    update_time: ludus_proto::Timestamp,
}

fn template_json(t: AclTemplate) -> TemplateJson {
    TemplateJson {
        id: t.id.to_string(),
        name: t.name,
        description: t.description,
        acl: t.acl.to_map(),
        create_time: crate::convert::timestamp(t.create_time),
        update_time: crate::convert::timestamp(t.update_time),
    }
}

/// Nakama's `AddAclTemplateRequest`, and `UpdateAclTemplateRequest` with
/// the id in the path.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct TemplateRequest {
    name: String,
    description: String,
    acl: BTreeMap<String, Permissions>,
}

/// The checked template of a request, stamped `now`.
fn template(id: Uuid, req: TemplateRequest, now: i64) -> Result<AclTemplate, HttpError> {
    console_records::template_text(&req.name, &req.description)?;
    let acl = Acl::from_map(&req.acl).map_err(|name| {
        HttpError::invalid(format!(
            "unknown acl resource `{name}`, use one of Nakama's console resources such as ACCOUNT or USER"
        ))
    })?;
    Ok(AclTemplate {
        id,
        name: req.name.trim().to_owned(),
        description: req.description,
        acl,
        create_time: now,
        update_time: now,
    })
}

fn api(e: ludus_core::StoreError) -> HttpError {
    ludus_core::ApiError::from(e).into()
}

fn template_id(text: &str) -> Result<Uuid, HttpError> {
    Uuid::parse_str(text)
        .map_err(|_| HttpError::invalid(format!("acl template id {text:?} is not a valid uuid")))
}

fn not_found() -> HttpError {
    HttpError::new(ludus_core::Code::NotFound, "acl template not found")
}

async fn add(
    State(state): State<ConsoleState>,
    Body(req): Body<TemplateRequest>,
) -> Result<Response, HttpError> {
    let t = template(ludus_core::new_row_id(), req, ludus_core::unix_now())?;
    let added = state
        .app
        .accounts
        .store()
        .acl_template_add(&t)
        .await
        .map_err(api)?;
    Ok(crate::api::json(&template_json(added)))
}

async fn update(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
    Body(req): Body<TemplateRequest>,
) -> Result<Response, HttpError> {
    let id = template_id(&id)?;
    let t = template(id, req, ludus_core::unix_now())?;
    let updated = state
        .app
        .accounts
        .store()
        .acl_template_update(&t)
        .await
        .map_err(api)?
        .ok_or_else(not_found)?;
    Ok(crate::api::json(&template_json(updated)))
}

/// Nakama's `AclTemplateList`.
#[derive(Serialize)]
struct TemplateList {
    templates: Vec<TemplateJson>,
}

async fn list(State(state): State<ConsoleState>) -> Result<Response, HttpError> {
    let templates = state
        .app
        .accounts
        .store()
        .acl_templates()
        .await
        .map_err(api)?;
    Ok(crate::api::json(&TemplateList {
        templates: templates.into_iter().map(template_json).collect(),
    }))
}

async fn remove(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
) -> Result<Response, HttpError> {
    let id = template_id(&id)?;
    match state
        .app
        .accounts
        .store()
        .acl_template_delete(id)
        .await
        .map_err(api)?
    {
        true => Ok(crate::api::empty()),
        false => Err(not_found()),
    }
}
