//! The server side of the runtime: the `runtime.*` config section, start-up
//! of `ludus_runtime::Runtime` with the server's services, and the hooks the
//! REST handlers call. `ludus-runtime` itself knows nothing of axum or SQL.

mod hooks;
mod services;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ludus_core::accounts::AccountService;
use ludus_runtime::{LoadError, NativeModule, Runtime, RuntimeSettings};
use serde::{Deserialize, Serialize};

use crate::config::{Config, ConfigError};

pub use hooks::{ClientAddr, after, before, before_without_body, call_context};
pub use services::{RealtimeSlot, Services};

/// `runtime.*`: where modules live and the limits they run under.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RuntimeConfig {
    /// Folder of Lua modules; empty means `<data_dir>/modules`.
    pub path: String,
    /// Key that lets server-to-server callers use `/v2/rpc` without a session.
    pub http_key: String,
    /// `key=value` pairs modules read as `ctx.env`.
    pub env: Vec<String>,
    /// Lua VMs in the pool; 0 means one per CPU core.
    pub lua_pool_size: usize,
    /// Calls that may wait for a VM when all are busy; more are refused.
    pub lua_pool_queue_size: usize,
    /// Longest a call waits for a VM before it is refused.
    pub lua_pool_timeout_ms: u64,
    /// VM instructions one Lua call may run before it is stopped.
    pub lua_instruction_budget: u64,
    /// Bytes one Lua VM may allocate, its modules included; 0 for no limit.
    pub lua_memory_limit_bytes: usize,
    /// Largest RPC payload accepted, in bytes.
    pub max_rpc_payload_bytes: usize,
    /// Most rows one `nk.sql_query` may return; a query matching more fails.
    pub sql_max_rows: usize,
    /// A PEM file of extra certificate authorities `nk.http_request` trusts
    /// for https, besides the built-in web roots; empty for none.
    pub http_ca_file: String,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        let d = RuntimeSettings::default();
        RuntimeConfig {
            path: String::new(),
            http_key: "defaulthttpkey".into(),
            env: Vec::new(),
            lua_pool_size: 0,
            lua_pool_queue_size: d.pool_queue_size,
            lua_pool_timeout_ms: d.pool_timeout.as_millis() as u64,
            lua_instruction_budget: d.instruction_budget,
            lua_memory_limit_bytes: d.memory_limit_bytes,
            max_rpc_payload_bytes: d.max_payload_bytes,
            sql_max_rows: 10_000,
            http_ca_file: String::new(),
        }
    }
}

impl RuntimeConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, message: &str| {
            Err(ConfigError::BadValue {
                key: key.into(),
                message: message.into(),
            })
        };
        if self.http_key.is_empty() {
            return bad("runtime.http_key", "must not be empty");
        }
        if let Some(pair) = self.env.iter().find(|p| !p.contains('=')) {
            return bad("runtime.env", &format!("`{pair}` must look like key=value"));
        }
        if self.lua_pool_timeout_ms == 0 {
            return bad("runtime.lua_pool_timeout_ms", "must be at least 1");
        }
        if self.lua_instruction_budget < 10_000 {
            return bad("runtime.lua_instruction_budget", "must be at least 10000");
        }
        if self.lua_memory_limit_bytes != 0 && self.lua_memory_limit_bytes < 1 << 20 {
            return bad(
                "runtime.lua_memory_limit_bytes",
                "must be 0 (no limit) or at least 1048576",
            );
        }
        if self.max_rpc_payload_bytes == 0 {
            return bad("runtime.max_rpc_payload_bytes", "must be at least 1");
        }
        if self.sql_max_rows == 0 {
            return bad("runtime.sql_max_rows", "must be at least 1");
        }
        Ok(())
    }

    pub fn module_path(&self, data_dir: &Path) -> PathBuf {
        if self.path.is_empty() {
            data_dir.join("modules")
        } else {
            PathBuf::from(&self.path)
        }
    }

    pub fn env_map(&self) -> BTreeMap<String, String> {
        self.env
            .iter()
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.trim().to_owned(), v.to_owned()))
            .collect()
    }
}

/// Loads the modules and registers the native module; a module that fails
/// to load stops start-up.
pub async fn start(
    config: &Config,
    accounts: Arc<AccountService>,
    sockets: RealtimeSlot,
    native: NativeModule,
) -> Result<Runtime, LoadError> {
    let rc = &config.runtime;
    let settings = RuntimeSettings {
        path: rc.module_path(&config.data_dir),
        node: config.name.clone(),
        env: rc.env_map(),
        pool_size: match rc.lua_pool_size {
            0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
            n => n,
        },
        pool_queue_size: rc.lua_pool_queue_size,
        pool_timeout: Duration::from_millis(rc.lua_pool_timeout_ms),
        instruction_budget: rc.lua_instruction_budget,
        memory_limit_bytes: rc.lua_memory_limit_bytes,
        max_payload_bytes: rc.max_rpc_payload_bytes,
        config: config_view(config),
    };
    let services = Services::new(accounts, sockets, rc).map_err(LoadError::Setup)?;
    Runtime::start(settings, Arc::new(services), native).await
}

/// Realtime error codes of a failed socket RPC, as Nakama answers them.
pub const RT_FUNCTION_NOT_FOUND: i32 = 6;
pub const RT_FUNCTION_EXCEPTION: i32 = 7;

/// The socket's `rpc` envelope: runs RPC `id` for the socket's user and
/// answers the payload, or a realtime error code (6: no such function, 7: it
/// failed) with the message, for an `error` envelope with the request's `cid`.
pub async fn socket_rpc(
    runtime: &Runtime,
    caller: &ludus_core::accounts::Caller,
    session_id: &str,
    client: Option<std::net::SocketAddr>,
    id: &str,
    payload: String,
) -> Result<String, (i32, String)> {
    if !runtime.has_rpc(id) {
        return Err((RT_FUNCTION_NOT_FOUND, "RPC function not found".into()));
    }
    let mut ctx = call_context(
        ludus_runtime::ExecutionMode::Rpc,
        Some(caller),
        ClientAddr(client),
    );
    ctx.session_id = Some(session_id.to_owned());
    runtime
        .rpc(ctx, id, payload)
        .await
        .map_err(|e| (RT_FUNCTION_EXCEPTION, e.message))
}

/// What `nk.get_config()` shows: the sections and keys Nakama's
/// `getConfig` exposes (`runtime_lua_nakama.go`), in its shape. Nakama
/// hands modules the keys themselves (server, session, HTTP and provider
/// keys): modules are the server's own code. Sections Ludus has no
/// settings for yet are there with Nakama's empty values, so modules that
/// read them find what they would on a Nakama without them configured.
fn config_view(config: &Config) -> serde_json::Value {
    serde_json::json!({
        "name": config.name,
        "shutdown_grace_sec": config.shutdown_grace_sec,
        "logger": { "level": config.logger.level },
        "session": {
            "encryption_key": config.session.encryption_key,
            "token_expiry_sec": config.session.token_expiry_sec,
            "refresh_encryption_key": config.session.refresh_encryption_key,
            "refresh_token_expiry_sec": config.session.refresh_token_expiry_sec,
            "single_socket": config.session.single_socket,
            "single_match": false,
            "single_party": config.session.single_party,
            "single_session": false,
        },
        "socket": {
            "server_key": config.socket.server_key,
            "port": config.socket.port,
            "address": config.socket.address,
            "protocol": "tcp",
        },
        "social": {
            "steam": { "publisher_key": "", "app_id": 0 },
            "facebook_instant_game": { "app_secret": "" },
            "facebook_limited_login": { "app_id": "" },
            "apple": { "bundle_id": "" },
        },
        "runtime": {
            "env": config.runtime.env,
            "http_key": config.runtime.http_key,
        },
        "iap": {
            "apple": { "shared_password": "", "notifications_endpoint_id": "" },
            "google": {
                "client_email": "",
                "private_key": "",
                "notifications_endpoint_id": "",
            },
            "huawei": { "public_key": "", "client_id": "", "client_secret": "" },
            "facebook_instant": { "app_secret": "" },
            "samsung": { "package_name": "" },
        },
        "google_auth": { "credentials_json": "" },
        "satori": { "url": "", "api_key_name": "", "api_key": "", "signing_key": "" },
    })
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    use crate::config::test_flags as flags;

    #[test]
    fn defaults_match_nakama() {
        let c = Config::load(None, [], &[]).unwrap();
        assert_eq!(c.runtime.http_key, "defaulthttpkey");
        assert_eq!(
            c.runtime.module_path(std::path::Path::new("/d")),
            std::path::PathBuf::from("/d/modules")
        );
    }

    #[test]
    fn runtime_keys_from_flags() {
        let c = Config::load(
            None,
            [],
            &flags(&[
                ("runtime.env", "region=eu,mode=a=b"),
                ("runtime.path", "/srv/modules"),
                ("runtime.lua_pool_size", "3"),
            ]),
        )
        .unwrap();
        let env = c.runtime.env_map();
        assert_eq!(env.get("region").map(String::as_str), Some("eu"));
        assert_eq!(env.get("mode").map(String::as_str), Some("a=b"));
        assert_eq!(c.runtime.lua_pool_size, 3);
        assert_eq!(
            c.runtime.module_path(std::path::Path::new("/d")),
            std::path::PathBuf::from("/srv/modules")
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn socket_rpc_answers_payloads_and_realtime_codes() {
        use std::sync::Arc;

        use ludus_core::accounts::{AccountService, AuthRequest, Credential};

        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::load(None, [], &[]).unwrap();
        config.data_dir = dir.path().to_path_buf();
        config.runtime.path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lua").into();
        config.runtime.lua_pool_size = 1;
        let store = ludus_store::open("", &config.data_dir, config.store_options())
            .await
            .unwrap();
        let accounts = Arc::new(
            AccountService::new(store, config.session_settings())
                .await
                .unwrap(),
        );
        let runtime = super::start(
            &config,
            accounts.clone(),
            Default::default(),
            Default::default(),
        )
        .await
        .unwrap();
        let tokens = accounts
            .authenticate(AuthRequest {
                credential: Credential::Device {
                    id: "socket-device-0001".into(),
                },
                username: String::new(),
                create: true,
                vars: Default::default(),
            })
            .await
            .unwrap();
        let caller = accounts.verify_access(&tokens.token).unwrap();

        let out = super::socket_rpc(&runtime, &caller, "sid-1", None, "ctx", "p".into())
            .await
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["session_id"], "sid-1");
        assert_eq!(v["user_id"], caller.user_id.to_string().as_str());
        assert_eq!(v["payload"], "p");
        let err = super::socket_rpc(&runtime, &caller, "sid-1", None, "missing", String::new())
            .await
            .unwrap_err();
        assert_eq!(err.0, super::RT_FUNCTION_NOT_FOUND);
        let err = super::socket_rpc(&runtime, &caller, "sid-1", None, "denied", String::new())
            .await
            .unwrap_err();
        assert_eq!(err, (super::RT_FUNCTION_EXCEPTION, "nope".to_string()));
        runtime.shutdown().await;
        accounts.store().close().await;
    }

    /// Regression: `nk.get_config()` lacked most of Nakama's sections and
    /// keys (`shutdown_grace_sec`, `session.single_*`, `socket.protocol`,
    /// `social`, `iap`, `google_auth`, `satori`).
    #[test]
    fn get_config_has_nakamas_shape() {
        let c = Config::load(None, [], &flags(&[("shutdown_grace_sec", "7")])).unwrap();
        let view = super::config_view(&c);
        let keys = |v: &serde_json::Value| {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        assert_eq!(
            keys(&view),
            [
                "google_auth",
                "iap",
                "logger",
                "name",
                "runtime",
                "satori",
                "session",
                "shutdown_grace_sec",
                "social",
                "socket",
            ]
        );
        assert_eq!(view["shutdown_grace_sec"], 7);
        assert_eq!(
            keys(&view["session"]),
            [
                "encryption_key",
                "refresh_encryption_key",
                "refresh_token_expiry_sec",
                "single_match",
                "single_party",
                "single_session",
                "single_socket",
                "token_expiry_sec",
            ]
        );
        assert_eq!(
            keys(&view["socket"]),
            ["address", "port", "protocol", "server_key"]
        );
        assert_eq!(
            keys(&view["social"]),
            [
                "apple",
                "facebook_instant_game",
                "facebook_limited_login",
                "steam"
            ]
        );
        assert_eq!(
            keys(&view["iap"]),
            ["apple", "facebook_instant", "google", "huawei", "samsung"]
        );
        assert_eq!(view["runtime"]["http_key"], "defaulthttpkey");
    }

    #[test]
    fn bad_runtime_values_are_named() {
        let err = Config::load(None, [], &flags(&[("runtime.env", "novalue")])).unwrap_err();
        assert!(err.to_string().contains("runtime.env"), "{err}");
        let err = Config::load(None, [], &flags(&[("runtime.http_key", "")])).unwrap_err();
        assert!(err.to_string().contains("runtime.http_key"), "{err}");
        let err =
            Config::load(None, [], &flags(&[("runtime.lua_instruction_budget", "5")])).unwrap_err();
        assert!(err.to_string().contains("lua_instruction_budget"), "{err}");
    }
}
