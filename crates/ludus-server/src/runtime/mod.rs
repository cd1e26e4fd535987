//! The server side of the runtime: the `runtime.*` config section, start-up
//! of `ludus_runtime::Runtime` over the server's services (with the hyper
//! HTTP client of `http_client.rs` injected), and the hooks the REST handlers
//! call. `ludus-runtime` itself knows nothing of axum or SQL.

mod config;

mod hooks;
mod http_client;

use std::sync::Arc;
use std::time::Duration;

use ludus_core::accounts::AccountService;
use ludus_core::leaderboard_service::LeaderboardService;
use ludus_core::storage_service::StorageService;
use ludus_realtime::Realtime;
use ludus_runtime::{LoadError, NativeModule, Runtime, RuntimeSettings, ServerServices};

use crate::config::Config;

pub use config::RuntimeConfig;
pub use hooks::{ClientAddr, after, after_sign_in, before, before_without_body, call_context};
pub use http_client::HyperClient;

/// VMs per Lua thread when `runtime.lua_vms_per_thread` is 0: what a
/// thread keeps in flight has to cover its calls' wait on the store (calls
/// in flight = rate x wait). PostgreSQL's round trip to another process
/// is the longer wait, so it gets more; past these counts the VMs' heaps
/// cost more in cache misses than they add in flight. PostgreSQL's best
/// count moves with the host: 32 where Ludus's core was the busier one, 40
/// to 48 where PostgreSQL's was; 40 is within the noise of the best on both
/// (BENCHMARKS.md, "40 VMs per thread on PostgreSQL", "32 VMs per thread on
/// PostgreSQL with one batch in flight", and "16 VMs per thread on SQLite").
fn vms_per_thread_for(backend: &str) -> usize {
    match backend {
        "postgres" => 40,
        _ => 16,
    }
}

/// Loads the modules and registers the native module; a module that fails
/// to load stops start-up.
#[expect(
    clippy::too_many_arguments,
    reason = "each service the runtime is built over, once, at start"
)]
pub async fn start(
    config: &Config,
    accounts: Arc<AccountService>,
    storage: Arc<StorageService>,
    social: Arc<ludus_core::social_service::SocialService>,
    leaderboards: Arc<LeaderboardService>,
    realtime: Arc<Realtime>,
    purchases: Arc<ludus_core::purchase::PurchaseService>,
    native: NativeModule,
    metrics: Arc<ludus_core::metrics::Metrics>,
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
        vms_per_thread: match rc.lua_vms_per_thread {
            0 => vms_per_thread_for(accounts.store().backend()),
            n => n,
        },
        pool_queue_size: rc.lua_pool_queue_size,
        pool_timeout: Duration::from_millis(rc.lua_pool_timeout_ms),
        instruction_budget: rc.lua_instruction_budget,
        memory_limit_bytes: rc.lua_memory_limit_bytes,
        call_timeout: Duration::from_millis(rc.lua_call_timeout_ms),
        match_timeout_percent: rc.lua_match_timeout_percent,
        read_only_globals: rc.read_only_globals,
        max_payload_bytes: rc.max_rpc_payload_bytes,
        config: config_view(config),
        js_entrypoint: rc.js_entrypoint.clone(),
        js_max_count: rc.js_max_count,
        js_memory_limit_bytes: rc.js_memory_limit_bytes,
        js_call_timeout: Duration::from_millis(rc.js_call_timeout_ms),
        event_queue_size: rc.event_queue_size,
        event_queue_workers: rc.event_queue_workers,
    };
    let http = HyperClient::new(rc).map_err(LoadError::Setup)?;
    let services = ServerServices::new(
        accounts,
        storage,
        social,
        leaderboards,
        realtime,
        purchases,
        Arc::new(http),
        rc.sql_max_rows,
    )
    .with_metrics(metrics);
    Runtime::start(settings, Arc::new(services), native).await
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
            "apple": {
                "shared_password": config.iap.apple.shared_password,
                "notifications_endpoint_id": config.iap.apple.notifications_endpoint_id,
            },
            "google": {
                "client_email": config.iap.google.client_email,
                "private_key": config.iap.google.private_key,
                "notifications_endpoint_id": config.iap.google.notifications_endpoint_id,
            },
            "huawei": {
                "public_key": config.iap.huawei.public_key,
                "client_id": config.iap.huawei.client_id,
                "client_secret": config.iap.huawei.client_secret,
            },
            "facebook_instant": { "app_secret": config.iap.facebook_instant.app_secret },
            "samsung": { "package_name": "" },
        },
        "google_auth": { "credentials_json": config.google_auth.credentials_json },
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
                ("runtime.lua_vms_per_thread", "5"),
            ]),
        )
        .unwrap();
        let env = c.runtime.env_map();
        assert_eq!(env.get("region").map(String::as_str), Some("eu"));
        assert_eq!(env.get("mode").map(String::as_str), Some("a=b"));
        assert_eq!(c.runtime.lua_pool_size, 3);
        assert_eq!(c.runtime.lua_vms_per_thread, 5);
        assert_eq!(
            Config::default().runtime.lua_vms_per_thread,
            0,
            "by the store"
        );
        assert_eq!(
            (
                super::vms_per_thread_for("sqlite"),
                super::vms_per_thread_for("postgres")
            ),
            (16, 40)
        );
        let auto = Config::load(None, [], &flags(&[("runtime.lua_vms_per_thread", "0")]));
        assert_eq!(auto.unwrap().runtime.lua_vms_per_thread, 0);
        for bad in ["1025", "-1"] {
            let e = Config::load(None, [], &flags(&[("runtime.lua_vms_per_thread", bad)]));
            assert!(
                e.is_err_and(|e| e.to_string().contains("runtime.lua_vms_per_thread")),
                "{bad} was accepted"
            );
        }
        assert_eq!(
            c.runtime.module_path(std::path::Path::new("/d")),
            std::path::PathBuf::from("/srv/modules")
        );
    }

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
        for (key, value) in [
            ("runtime.lua_call_timeout_ms", "5"),
            ("runtime.lua_call_timeout_ms", "600000"),
            ("runtime.lua_match_timeout_percent", "0"),
        ] {
            let err = Config::load(None, [], &flags(&[(key, value)])).unwrap_err();
            assert!(err.to_string().contains(key), "{key}={value}: {err}");
        }
    }

    /// The sandbox's keys reach the runtime's settings (read_only_globals is
    /// on unless turned off, as in Nakama).
    #[test]
    fn sandbox_keys_from_flags() {
        let c = Config::load(None, [], &[]).unwrap();
        assert!(c.runtime.read_only_globals);
        let c = Config::load(
            None,
            [],
            &flags(&[
                ("runtime.read_only_globals", "false"),
                ("runtime.lua_call_timeout_ms", "1500"),
                ("runtime.lua_match_timeout_percent", "80"),
            ]),
        )
        .unwrap();
        assert!(!c.runtime.read_only_globals);
        assert_eq!(c.runtime.lua_call_timeout_ms, 1500);
        assert_eq!(c.runtime.lua_match_timeout_percent, 80);
        assert_eq!(c.store_options().module_sql_timeout_ms, 1500);
    }
}
