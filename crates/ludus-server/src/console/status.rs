//! What the console shows of the server itself: node status
//! (`GET /v2/console/status`, any signed-in user), the runtime's
//! registrations (`GET /v2/console/runtime`) and the configuration with
//! its secrets redacted (`GET /v2/console/config`), both behind
//! `CONFIGURATION` read as in Nakama.

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use ludus_core::console_acl::{Level, Need, Resource};
use serde::Serialize;
use serde_json::Value;

use super::{ConsoleRoutes, ConsoleState};
use crate::convert;
use crate::error::HttpError;

/// What a redacted secret reads as, Nakama's `ObfuscationString`.
pub(crate) const REDACTED: &str = "REDACTED";

/// Keys (the last part of a dotted config key) whose values are secrets.
/// Nakama redacts the console's signing key and password, the database
/// password, and the platform secrets; Ludus redacts the session and
/// runtime keys too, which sign or open every player's session.
const SECRET_KEYS: &[&str] = &[
    "signing_key",
    "password",
    "encryption_key",
    "refresh_encryption_key",
    "http_key",
    "credentials_json",
    "private_key",
    "shared_password",
    "client_secret",
    "app_secret",
    "secret",
];

pub(super) fn routes(r: &mut ConsoleRoutes) {
    let configuration = Need::Permission(Resource::Configuration, Level::Read);
    r.add("/v2/console/status", Need::Session, get(status));
    r.add("/v2/console/runtime", configuration, get(runtime));
    r.add("/v2/console/config", configuration, get(config));
}

/// Nakama's `StatusList.Status`; health 0 is `STATUS_HEALTH_OK`.
#[derive(Serialize)]
struct NodeStatus {
    name: String,
    health: i32,
    session_count: i32,
    presence_count: i32,
    match_count: i32,
    goroutine_count: i32,
    avg_latency_ms: f64,
    avg_rate_sec: f64,
    avg_input_kbs: f64,
    avg_output_kbs: f64,
    party_count: i32,
    create_time: ludus_proto::Timestamp,
}

#[derive(Serialize)]
struct StatusList {
    nodes: Vec<NodeStatus>,
    timestamp: ludus_proto::Timestamp,
}

/// Every node's sessions, presences, matches and parties: this node's,
/// then the others of a cluster, each asked over the bus (2 s at most; a
/// node that does not answer is listed with health 1, Nakama's ERROR).
/// Goroutines and the request averages Nakama samples are 0.
async fn status(State(state): State<ConsoleState>) -> Result<Response, HttpError> {
    let realtime = &state.app.sockets.realtime;
    let figures = realtime
        .cluster_figures(std::time::Duration::from_secs(2))
        .await;
    let nodes = figures
        .into_iter()
        .enumerate()
        .map(|(i, f)| {
            let (name, health, f) = match f {
                Ok(f) => (f.name.clone(), 0, Some(f)),
                Err(name) => (name, 1, None),
            };
            let count = |pick: fn(&ludus_realtime::NodeFigures) -> usize| {
                f.as_ref().map_or(0, |f| pick(f) as i32)
            };
            // This node's start is the server's; another's its realtime's.
            let started_ms = match (i, &f) {
                (0, _) => state.started_ms,
                (_, Some(f)) => f.started_ms,
                (_, None) => 0,
            };
            NodeStatus {
                name,
                health,
                session_count: count(|f| f.sessions),
                presence_count: count(|f| f.presences),
                match_count: count(|f| f.matches),
                goroutine_count: 0,
                avg_latency_ms: 0.0,
                avg_rate_sec: 0.0,
                avg_input_kbs: 0.0,
                avg_output_kbs: 0.0,
                party_count: count(|f| f.parties),
                create_time: convert::timestamp(started_ms / 1000),
            }
        })
        .collect();
    Ok(crate::api::json(&StatusList {
        nodes,
        timestamp: convert::timestamp(super::now_ms() / 1000),
    }))
}

/// Nakama's `RuntimeInfo.ModuleInfo`.
#[derive(Serialize)]
struct ModuleInfo {
    path: String,
}

/// Nakama's `RuntimeInfo`; native (Rust) registrations stand where Nakama
/// has Go's, and `hooks` (Ludus's own) names every before and after hook.
#[derive(Serialize)]
struct RuntimeInfo {
    lua_rpc_functions: Vec<String>,
    go_rpc_functions: Vec<String>,
    js_rpc_functions: Vec<String>,
    go_modules: Vec<ModuleInfo>,
    lua_modules: Vec<ModuleInfo>,
    js_modules: Vec<ModuleInfo>,
    hooks: Vec<String>,
}

async fn runtime(State(state): State<ConsoleState>) -> Result<Response, HttpError> {
    let info = state.app.runtime.info();
    let modules = |paths: Vec<String>| {
        paths
            .into_iter()
            .map(|path| ModuleInfo { path })
            .collect::<Vec<_>>()
    };
    Ok(crate::api::json(&RuntimeInfo {
        lua_rpc_functions: info.lua_rpcs,
        go_rpc_functions: info.native_rpcs,
        js_rpc_functions: info.js_rpcs,
        go_modules: Vec::new(),
        lua_modules: modules(info.lua_modules),
        js_modules: modules(info.js_modules),
        hooks: info.hooks,
    }))
}

/// Nakama's console `Config`: the configuration as a JSON string.
#[derive(Serialize)]
struct ConfigReply {
    config: String,
    warnings: Vec<Value>,
    server_version: String,
}

async fn config(State(state): State<ConsoleState>) -> Result<Response, HttpError> {
    let mut value = serde_json::to_value(&*state.app.config).map_err(|e| {
        HttpError::new(
            ludus_core::Code::Internal,
            format!("cannot encode the configuration: {e}"),
        )
    })?;
    redact(&mut value);
    Ok(crate::api::json(&ConfigReply {
        config: value.to_string(),
        warnings: Vec::new(),
        server_version: env!("CARGO_PKG_VERSION").to_owned(),
    }))
}

/// Replaces every non-empty secret with [`REDACTED`], and the password in
/// every database and Redis address.
fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if SECRET_KEYS.contains(&key.as_str()) {
                    if v.as_str().is_some_and(|s| !s.is_empty()) {
                        *v = Value::String(REDACTED.to_owned());
                    }
                } else if key == "address" || key == "redis" {
                    redact_addresses(v);
                } else {
                    redact(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

/// `user:password@host` becomes `user:REDACTED@host`.
fn redact_addresses(value: &mut Value) {
    let one = |s: &mut String| {
        let Some(at) = s.rfind('@') else { return };
        let start = s.find("://").map_or(0, |i| i + 3);
        if let Some(colon) = s[start..at].find(':') {
            s.replace_range(start + colon + 1..at, REDACTED);
        }
    };
    match value {
        Value::String(s) => one(s),
        Value::Array(items) => {
            for item in items {
                if let Value::String(s) = item {
                    one(s);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_and_database_passwords_are_redacted() {
        let mut v = serde_json::json!({
            "console": {"signing_key": "k", "password": "p", "port": 7351},
            "session": {"encryption_key": "e", "token_expiry_sec": 60},
            "socket": {"address": "", "server_key": "defaultkey"},
            "database": {"address": ["postgres://root:pw@db:5432/nakama", "root@db2"]},
            "iap": {"apple": {"shared_password": ""}},
        });
        redact(&mut v);
        assert_eq!(v["console"]["signing_key"], REDACTED);
        assert_eq!(v["console"]["password"], REDACTED);
        assert_eq!(v["console"]["port"], 7351);
        assert_eq!(v["session"]["encryption_key"], REDACTED);
        assert_eq!(v["socket"]["server_key"], "defaultkey");
        assert_eq!(
            v["database"]["address"][0],
            "postgres://root:REDACTED@db:5432/nakama"
        );
        assert_eq!(v["database"]["address"][1], "root@db2");
        assert_eq!(
            v["iap"]["apple"]["shared_password"], "",
            "empty stays empty"
        );
    }
}
