//! The console's audit log: what the gate records of every console call
//! that changed something (and of every export), and its two readers,
//! `GET /v2/console/audit/log` (`AUDIT_LOG` read; Nakama's filters by
//! console username, resource, action and time, newest first, with next
//! and previous cursors) and `GET /v2/console/audit/log/users` (the console
//! usernames to filter by; a session is enough, as in Nakama).
//!
//! An entry is written once the call has succeeded, in a write of its own
//! after the change's transaction: the calls reach many services, and a
//! change that succeeded is never undone for want of its entry (a failed
//! write is logged at error level, with the entry's content).

use axum::extract::State;
use axum::http::Method;
use axum::response::Response;
use axum::routing::get;
use ludus_core::console_acl::{Level, Need, RESOURCES, Resource};
use ludus_core::console_ops::{
    AuditAction, AuditEntry, AuditFilter, AuditQuery, decode_cursor, page,
};
use ludus_core::console_service::ConsoleCaller;
use serde::Serialize;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::{ConsoleRoutes, ConsoleState};
use crate::error::HttpError;
use crate::extract::QueryParams;

/// Nakama's default and largest page of the audit log.
const DEFAULT_LIMIT: i32 = 20;
const MAX_LIMIT: i32 = 100;

pub(super) fn routes(r: &mut ConsoleRoutes) {
    r.add(
        "/v2/console/audit/log",
        Need::Permission(Resource::AuditLog, Level::Read),
        get(list),
    );
    r.add("/v2/console/audit/log/users", Need::Session, get(users));
}

/// What one console call is, for the log: its action, or `None` when it
/// changes nothing (reads other than exports, sign-in).
fn action_of(method: &Method, route: &str) -> Option<AuditAction> {
    let create = [
        "/v2/console/user",
        "/v2/console/notification",
        "/v2/console/leaderboard",
        "/v2/console/acl/template",
    ];
    Some(match *method {
        Method::GET if route.ends_with("/export") => AuditAction::Export,
        Method::GET | Method::HEAD | Method::OPTIONS => return None,
        Method::DELETE => AuditAction::Delete,
        _ if route.starts_with("/v2/console/api/endpoints") => AuditAction::Invoke,
        _ if route.ends_with("/import") || route.contains("/import/") => AuditAction::Import,
        // ImportAccountFull.
        Method::POST if route == "/v2/console/account" => AuditAction::Import,
        Method::POST if create.contains(&route) => AuditAction::Create,
        _ => AuditAction::Update,
    })
}

/// Request fields never written to the log.
const SECRETS: [&str; 4] = ["password", "code", "mfa_code", "token"];

/// A JSON body with its secrets replaced, or the body's size when it is
/// not JSON.
fn redacted(body: &[u8]) -> Value {
    fn scrub(v: &mut Value) {
        match v {
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    if SECRETS.contains(&k.as_str()) {
                        *v = Value::String("<redacted>".into());
                    } else {
                        scrub(v);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(scrub),
            // A JSON body inside a string (the API explorer's `body`, an
            // `AuthenticateEmail` with its password) is scrubbed too.
            Value::String(text) if text.trim_start().starts_with('{') => {
                if let Ok(mut inner @ Value::Object(_)) = serde_json::from_str::<Value>(text) {
                    scrub(&mut inner);
                    *text = inner.to_string();
                }
            }
            _ => {}
        }
    }
    if body.is_empty() {
        return Value::Null;
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(mut v) => {
            scrub(&mut v);
            v
        }
        Err(_) => json!({ "bytes": body.len() }),
    }
}

/// What the gate hands over of one call that succeeded.
pub(super) struct Call<'a> {
    pub caller: &'a ConsoleCaller,
    pub need: Need,
    pub method: &'a Method,
    /// The route as registered (`/v2/console/account/{account_id}`).
    pub route: &'a str,
    /// The path as requested, and its query.
    pub path: &'a str,
    pub query: Option<&'a str>,
    pub body: &'a [u8],
}

/// The entry for a successful call, or `None` when it is not logged.
pub(super) fn entry(call: &Call<'_>, now_us: i64) -> Option<AuditEntry> {
    let action = action_of(call.method, call.route)?;
    let resource = match call.need {
        Need::Permission(resource, _) => resource,
        // Calls open to every session change the caller's own console user.
        Need::Session => Resource::User,
    };
    let verb = match action {
        AuditAction::Create => "created",
        AuditAction::Update => "updated",
        AuditAction::Delete => "deleted",
        AuditAction::Invoke => "invoked",
        AuditAction::Import => "imported",
        AuditAction::Export => "exported",
    };
    let mut metadata = Map::new();
    metadata.insert("method".into(), call.method.as_str().into());
    metadata.insert("path".into(), call.path.into());
    if let Some(query) = call.query.filter(|q| !q.is_empty()) {
        metadata.insert("query".into(), query.into());
    }
    let body = redacted(call.body);
    if !body.is_null() {
        metadata.insert("body".into(), body);
    }
    Some(AuditEntry {
        id: Uuid::now_v7(),
        create_time_us: now_us,
        console_user_id: call.caller.id,
        console_username: call.caller.username.clone(),
        email: call.caller.email.clone(),
        resource: resource as i32,
        action: action as i32,
        message: format!(
            "{} {verb}: {} {}",
            RESOURCES[resource as usize]
                .to_lowercase()
                .replace('_', " "),
            call.method,
            call.path
        ),
        metadata: Value::Object(metadata).to_string(),
    })
}

/// Writes `entry`; a failure is logged, never answered (the change is done).
pub(super) async fn record(state: &ConsoleState, entry: AuditEntry) {
    if let Err(error) = state.app.accounts.store().audit_add(&entry).await {
        tracing::error!(
            %error,
            console_user = %entry.console_username,
            message = %entry.message,
            metadata = %entry.metadata,
            "cannot write the console audit log entry of a change that was made"
        );
    }
}

/// Nakama's `AuditLogList.AuditLog`.
#[derive(Serialize)]
struct Item {
    id: String,
    timestamp: ludus_proto::Timestamp,
    user_id: String,
    username: String,
    email: String,
    resource: i32,
    action: i32,
    message: String,
    metadata: String,
}

#[derive(Serialize)]
struct AuditLogList {
    entries: Vec<Item>,
    next_cursor: String,
    prev_cursor: String,
}

/// A time filter: RFC 3339, in microseconds.
fn time_param(query: &QueryParams, key: &str) -> Result<Option<i64>, HttpError> {
    match query.get(key).unwrap_or_default() {
        "" => Ok(None),
        text => {
            let t = ludus_proto::Timestamp::parse_rfc3339(text).map_err(|_| {
                HttpError::invalid(format!(
                    "{key} {text:?} is not an RFC 3339 time such as 2024-05-01T00:00:00Z"
                ))
            })?;
            Ok(Some(t.seconds * 1_000_000 + i64::from(t.nanos) / 1_000))
        }
    }
}

/// Nakama's `AuditLogAction`, by number or name.
fn action_param(query: &QueryParams) -> Result<i32, HttpError> {
    const NAMES: [&str; 7] = [
        "UNKNOWN", "CREATE", "UPDATE", "DELETE", "INVOKE", "IMPORT", "EXPORT",
    ];
    let text = query.get("action").unwrap_or_default();
    if text.is_empty() {
        return Ok(0);
    }
    let number = text
        .parse::<i32>()
        .ok()
        .or_else(|| NAMES.iter().position(|n| *n == text).map(|i| i as i32));
    match number {
        Some(n @ 0..=6) => Ok(n),
        _ => Err(HttpError::invalid(format!(
            "action {text:?} is not one of 0-6 or {}",
            NAMES.join(", ")
        ))),
    }
}

/// Nakama's `AclResources`, by number or name.
fn resource_param(query: &QueryParams) -> Result<Option<i32>, HttpError> {
    let text = query.get("resource").unwrap_or_default();
    if text.is_empty() {
        return Ok(None);
    }
    let number = text
        .parse::<i32>()
        .ok()
        .or_else(|| RESOURCES.iter().position(|n| *n == text).map(|i| i as i32));
    match number {
        Some(n) if (0..RESOURCES.len() as i32).contains(&n) => Ok(Some(n)),
        _ => Err(HttpError::invalid(format!(
            "resource {text:?} is not a console resource number (0-{}) or name such as ACCOUNT",
            RESOURCES.len() - 1
        ))),
    }
}

async fn list(
    State(state): State<ConsoleState>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let limit = match query.int32("limit")?.map(|l| l.value) {
        None | Some(0) => DEFAULT_LIMIT,
        Some(l @ 1..=MAX_LIMIT) => l,
        Some(_) => {
            return Err(HttpError::invalid(format!(
                "limit must be between 1 and {MAX_LIMIT}"
            )));
        }
    };
    let filter = AuditFilter {
        username: query.get("username").unwrap_or_default().to_owned(),
        resource: resource_param(&query)?,
        action: action_param(&query)?,
        after_us: time_param(&query, "after")?,
        before_us: time_param(&query, "before")?,
    };
    let position = match query.get("cursor").unwrap_or_default() {
        "" => None,
        text => Some(decode_cursor(text, &filter)?),
    };
    let audit_query = AuditQuery {
        filter,
        position,
        limit: limit as usize,
    };
    let rows = state
        .app
        .accounts
        .store()
        .audit_list(&audit_query)
        .await
        .map_err(ludus_core::ApiError::from)?;
    let page = page(&audit_query, rows);
    Ok(crate::api::json(&AuditLogList {
        entries: page
            .entries
            .into_iter()
            .map(|e| Item {
                id: e.id.to_string(),
                timestamp: ludus_proto::Timestamp {
                    seconds: e.create_time_us.div_euclid(1_000_000),
                    nanos: (e.create_time_us.rem_euclid(1_000_000) * 1_000) as i32,
                },
                user_id: e.console_user_id.to_string(),
                username: e.console_username,
                email: e.email,
                resource: e.resource,
                action: e.action,
                message: e.message,
                metadata: e.metadata,
            })
            .collect(),
        next_cursor: page.next_cursor,
        prev_cursor: page.prev_cursor,
    }))
}

#[derive(Serialize)]
struct UsersList {
    usernames: Vec<String>,
}

/// Every console user's name, the root user's first (its changes are
/// logged under it too).
async fn users(State(state): State<ConsoleState>) -> Result<Response, HttpError> {
    let mut usernames = vec![state.app.config.console.username.clone()];
    usernames.extend(state.console.users().await?.into_iter().map(|u| u.username));
    Ok(crate::api::json(&UsersList { usernames }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_follow_the_method_and_route() {
        let a = |m: Method, r: &str| action_of(&m, r);
        assert_eq!(a(Method::GET, "/v2/console/account"), None);
        assert_eq!(
            a(Method::GET, "/v2/console/group/{group_id}/export"),
            Some(AuditAction::Export)
        );
        assert_eq!(
            a(Method::DELETE, "/v2/console/all"),
            Some(AuditAction::Delete)
        );
        assert_eq!(
            a(Method::POST, "/v2/console/user"),
            Some(AuditAction::Create)
        );
        assert_eq!(
            a(Method::POST, "/v2/console/api/endpoints/rpc/{method}"),
            Some(AuditAction::Invoke)
        );
        assert_eq!(
            a(Method::POST, "/v2/console/account/{account_id}/ban"),
            Some(AuditAction::Update)
        );
        // Nakama's actions for the calls of notes, templates, settings, MFA.
        for (m, route, action) in [
            (
                Method::POST,
                "/v2/console/account/{account_id}/note",
                AuditAction::Update,
            ),
            (
                Method::DELETE,
                "/v2/console/account/{account_id}/note/{note_id}",
                AuditAction::Delete,
            ),
            (
                Method::POST,
                "/v2/console/acl/template",
                AuditAction::Create,
            ),
            (
                Method::PUT,
                "/v2/console/acl/template/{id}",
                AuditAction::Update,
            ),
            (
                Method::POST,
                "/v2/console/setting/{name}",
                AuditAction::Update,
            ),
            (
                Method::POST,
                "/v2/console/user/{username}/mfa/reset",
                AuditAction::Update,
            ),
            (
                Method::POST,
                "/v2/console/api/endpoints/{method}",
                AuditAction::Invoke,
            ),
        ] {
            assert_eq!(a(m, route), Some(action), "{route}");
        }
    }

    #[test]
    fn secrets_never_reach_the_log() {
        let v = redacted(br#"{"username":"ops","password":"hunter2","nested":[{"code":"x"}]}"#);
        let text = v.to_string();
        assert!(
            !text.contains("hunter2") && !text.contains("\"x\""),
            "{text}"
        );
        assert_eq!(v["username"], "ops");
    }

    #[test]
    fn secrets_inside_an_explorer_body_are_scrubbed() {
        let body = br#"{"user_id":"","body":"{\"account\":{\"email\":\"a@b.c\",\"password\":\"hunter2\"}}"}"#;
        let text = redacted(body).to_string();
        assert!(
            !text.contains("hunter2") && text.contains("a@b.c"),
            "{text}"
        );
    }
}
