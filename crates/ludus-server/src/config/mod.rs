//! Server configuration: a YAML file, then `LUDUS_*` environment variables,
//! then `--section.key value` flags, each overriding the one before.
//!
//! Key names follow Nakama's where Nakama has the key, and a Nakama
//! `config.yml` loads unchanged: a key that Nakama has and Ludus does not
//! support yet is ignored and logged once as a warning naming it
//! (`nakama_config.rs` lists Nakama's keys). A key that neither has, or a
//! value of the wrong type, stops start-up with a message naming the key.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_yaml_ng::{Mapping, Value};

/// The longest `database.ledger_merge_interval_ms`: ledger pages scan every
/// entry that waits for the writer's move.
mod error;
pub mod reference;

pub use error::ConfigError;

const MAX_LEDGER_MERGE_INTERVAL_MS: u64 = 10_000;

/// The longest `database.wal_sync_interval_ms` and
/// `database.checkpoint_interval_ms`.
const MAX_SQLITE_INTERVAL_MS: u64 = 10_000;

/// The whole configuration, every field with a safe default.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Node name, used in logs and later in cluster ids.
    pub name: String,
    /// Folder for the embedded database and modules.
    pub data_dir: PathBuf,
    /// At shutdown, how long authoritative matches may go on after
    /// `match_terminate` (Nakama's key; 0 ends them at once).
    pub shutdown_grace_sec: u64,
    pub logger: LoggerConfig,
    pub session: SessionConfig,
    pub socket: SocketConfig,
    pub database: DatabaseConfig,
    pub runtime: crate::runtime::RuntimeConfig,
    pub party: ludus_realtime::PartySettings,
    pub matchmaker: ludus_realtime::MatchmakerConfig,
    #[serde(rename = "match")]
    pub matches: ludus_realtime::MatchConfig,
    /// Several nodes on one PostgreSQL with Redis as the bus.
    pub cluster: ludus_realtime::cluster::ClusterConfig,
    /// Prometheus metrics (Nakama's `metrics` section).
    pub metrics: MetricsConfig,
    /// Platform sign-in (`social.*`, Nakama's section, plus our base URLs).
    pub social: ludus_core::social_auth::SocialSettings,
    /// The admin console's listener and its root user (Nakama's section).
    pub console: ConsoleConfig,
    /// Multi-factor sign-in of console users (Nakama's top-level `mfa`).
    pub mfa: MfaConfig,
    /// Purchase validation (`iap.*`, Nakama's section, plus our base URLs).
    pub iap: ludus_core::purchase::IapSettings,
    /// Google Play Games sign-in by auth code (Nakama's section).
    pub google_auth: GoogleAuthConfig,
    /// Keys of Nakama's that the file or flags set and Ludus ignores, for
    /// [`Config::warn_ignored_keys`].
    #[serde(skip)]
    pub ignored_keys: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            name: "ludus".into(),
            data_dir: PathBuf::from("./data"),
            shutdown_grace_sec: 0,
            logger: LoggerConfig::default(),
            session: SessionConfig::default(),
            socket: SocketConfig::default(),
            database: DatabaseConfig::default(),
            runtime: crate::runtime::RuntimeConfig::default(),
            party: ludus_realtime::PartySettings::default(),
            matchmaker: ludus_realtime::MatchmakerConfig::default(),
            matches: ludus_realtime::MatchConfig::default(),
            cluster: ludus_realtime::cluster::ClusterConfig::default(),
            metrics: MetricsConfig::default(),
            social: ludus_core::social_auth::SocialSettings::default(),
            console: ConsoleConfig::default(),
            mfa: MfaConfig::default(),
            iap: ludus_core::purchase::IapSettings::default(),
            google_auth: GoogleAuthConfig::default(),
            ignored_keys: Vec::new(),
        }
    }
}

/// Nakama's `google_auth` section.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GoogleAuthConfig {
    /// The text of an OAuth client file from Google's cloud console.
    pub credentials_json: String,
}

/// Nakama's `metrics` section, its keys and defaults.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// Port of the Prometheus exporter (`GET /metrics`) on
    /// `socket.address`; 0 exports nothing.
    pub prometheus_port: u16,
    /// A `namespace` label on every sample when not empty.
    pub namespace: String,
    /// Prefix of every metric name; empty for none.
    pub prefix: String,
    /// Prefix of modules' metrics, below `prefix`; empty for none.
    pub custom_prefix: String,
    /// The most series modules may create; 0 for no limit.
    pub custom_scope_limit: usize,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            prometheus_port: 0,
            namespace: String::new(),
            prefix: "nakama".into(),
            custom_prefix: "custom".into(),
            custom_scope_limit: 10_000,
        }
    }
}

/// Nakama's `console` section (the keys Ludus serves), plus the lockout
/// after failed sign-ins, which Nakama fixes in its code.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConsoleConfig {
    /// Port of the console API; 0 picks a free port.
    pub port: u16,
    /// Interface of the console; empty for `socket.address`.
    pub address: String,
    /// Largest request body of the console.
    pub max_message_size_bytes: usize,
    /// Longest a console request may take before it is answered 504.
    pub read_timeout_ms: u64,
    /// The root console user: an admin no console call can change.
    pub username: String,
    pub password: String,
    /// Lifetime of console session tokens and invitation codes.
    pub token_expiry_sec: i64,
    /// HS256 key of console tokens.
    pub signing_key: String,
    /// Failed sign-ins within `lockout_sec` that lock a console user.
    pub max_failed_sign_ins: u32,
    /// How long a locked console user must wait, and the window failures
    /// are counted in.
    pub lockout_sec: i64,
}

/// Nakama's top-level `mfa` section: console users' multi-factor sign-in.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MfaConfig {
    /// The 32-byte AES-256 key MFA secrets are stored under.
    pub storage_encryption_key: String,
    /// Whether the root console user must sign in with MFA too.
    pub admin_account_enabled: bool,
}

impl Default for MfaConfig {
    fn default() -> Self {
        MfaConfig {
            storage_encryption_key: "the-key-has-to-be-32-bytes-long!".into(),
            admin_account_enabled: false,
        }
    }
}

/// Nakama's insecure defaults of the console's root user and key.
pub const DEFAULT_CONSOLE_PASSWORD: &str = "password";
pub const DEFAULT_CONSOLE_SIGNING_KEY: &str = "defaultsigningkey";

impl Default for ConsoleConfig {
    fn default() -> Self {
        ConsoleConfig {
            port: 7351,
            address: String::new(),
            max_message_size_bytes: 4_194_304,
            read_timeout_ms: 10_000,
            username: "admin".into(),
            password: DEFAULT_CONSOLE_PASSWORD.into(),
            token_expiry_sec: 86_400,
            signing_key: DEFAULT_CONSOLE_SIGNING_KEY.into(),
            max_failed_sign_ins: 5,
            lockout_sec: 60,
        }
    }
}

impl ConsoleConfig {
    /// The interface the console listens on.
    pub fn address<'a>(&'a self, socket: &'a SocketConfig) -> &'a str {
        match self.address.is_empty() {
            true => &socket.address,
            false => &self.address,
        }
    }

    /// The keys still at Nakama's public defaults.
    pub fn insecure_defaults(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.password == DEFAULT_CONSOLE_PASSWORD {
            out.push("console.password");
        }
        if self.signing_key == DEFAULT_CONSOLE_SIGNING_KEY {
            out.push("console.signing_key");
        }
        out
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoggerConfig {
    /// `debug`, `info`, `warn` or `error`.
    pub level: String,
    /// `text` for people, `json` for log collectors.
    pub format: String,
    /// Log to standard output (as well as to `file` when set).
    pub stdout: bool,
    /// Log to this file too (appended to, created when missing).
    pub file: String,
    /// Rotate `file` past `max_size` megabytes.
    pub rotation: bool,
    pub max_size: u64,
    /// Days a rotated file is kept; 0 for any age.
    pub max_age: u64,
    /// Rotated files kept; 0 for all.
    pub max_backups: usize,
    /// Gzip rotated files.
    pub compress: bool,
}

impl Default for LoggerConfig {
    fn default() -> Self {
        LoggerConfig {
            level: "info".into(),
            format: "text".into(),
            stdout: true,
            file: String::new(),
            rotation: false,
            max_size: 100,
            max_age: 0,
            max_backups: 0,
            compress: false,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SessionConfig {
    pub encryption_key: String,
    pub refresh_encryption_key: String,
    pub token_expiry_sec: i64,
    pub refresh_token_expiry_sec: i64,
    /// bcrypt work factor for new passwords (4-31; Nakama uses 10).
    pub bcrypt_cost: u32,
    /// Most access tokens a node remembers as verified, so a client's
    /// requests skip the signature check (0 turns it off).
    pub token_cache_size: usize,
    /// A new socket of a user closes that user's older sockets.
    pub single_socket: bool,
    /// A session that joins a party leaves its other parties (needs
    /// `single_socket`, as in Nakama).
    pub single_party: bool,
    /// Failed sign-ins an account or address may have in a row before it
    /// backs off (0: no throttle).
    pub sign_in_free_failures: u32,
    pub sign_in_backoff_ms: u64,
    pub sign_in_max_backoff_ms: u64,
    pub sign_in_max_tracked: usize,
}

impl Default for SessionConfig {
    fn default() -> Self {
        let d = ludus_core::accounts::SessionSettings::default();
        SessionConfig {
            encryption_key: d.encryption_key,
            refresh_encryption_key: d.refresh_encryption_key,
            token_expiry_sec: d.token_expiry_sec,
            refresh_token_expiry_sec: d.refresh_token_expiry_sec,
            bcrypt_cost: d.bcrypt_cost,
            token_cache_size: d.token_cache_size,
            single_socket: false,
            single_party: false,
            sign_in_free_failures: d.throttle.free_failures,
            sign_in_backoff_ms: d.throttle.backoff_ms,
            sign_in_max_backoff_ms: d.throttle.max_backoff_ms,
            sign_in_max_tracked: d.throttle.max_tracked,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SocketConfig {
    /// Shared secret clients send as the Basic user name to sign in.
    pub server_key: String,
    /// Interface to listen on.
    pub address: String,
    pub port: u16,
    /// Largest HTTP request body accepted, after decompression.
    pub max_request_size_bytes: usize,
    /// Longest a request may take before it is answered with an error.
    pub read_timeout_ms: u64,
    /// A connection that sends no complete request head for this long (after
    /// connecting, or idle between keep-alive requests) is closed.
    pub handshake_timeout_ms: u64,
    /// Largest WebSocket message a client may send; a larger one closes the socket.
    pub max_message_size_bytes: usize,
    /// How often the server pings each socket.
    pub ping_period_ms: u64,
    /// A socket from which nothing arrives for this long is closed.
    pub pong_wait_ms: u64,
    /// Most messages queued for one socket; a client that falls further behind is closed.
    pub outgoing_queue_size: usize,
    /// Longest one write to a socket may take before the socket is closed.
    pub write_wait_ms: u64,
    /// Close a socket that sent no message for this long even if it answers pings; 0 never.
    pub ws_idle_timeout_ms: u64,
    /// Most open sockets on this node; further upgrades get 503. 0 for no limit.
    pub max_connections: usize,
    /// Requests one socket may have waiting behind the one being served;
    /// more are refused with an `error` envelope. The socket keeps writing
    /// pushes and reading pongs while requests wait.
    pub max_pending_requests: usize,
    /// Serve Nakama's gRPC API on `port - 1`, as Nakama does.
    pub grpc: bool,
}

impl Default for SocketConfig {
    fn default() -> Self {
        SocketConfig {
            server_key: "defaultkey".into(),
            address: "127.0.0.1".into(),
            port: 7350,
            max_request_size_bytes: 262_144,
            read_timeout_ms: 10_000,
            handshake_timeout_ms: 10_000,
            max_message_size_bytes: 4096,
            ping_period_ms: 15_000,
            pong_wait_ms: 25_000,
            outgoing_queue_size: 64,
            write_wait_ms: 5_000,
            ws_idle_timeout_ms: 0,
            max_connections: 200_000,
            max_pending_requests: 16,
            grpc: true,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseConfig {
    /// Empty for the embedded SQLite database in `data_dir`; otherwise a
    /// PostgreSQL URL or Nakama's `user:password@host:port/dbname`.
    #[serde(deserialize_with = "one_or_many")]
    pub address: Vec<String>,
    /// Most open connections (PostgreSQL pool size; SQLite readers).
    pub max_open_conns: usize,
    /// A connection older than this is replaced; 0 keeps connections forever.
    pub conn_max_lifetime_ms: u64,
    /// How long a request waits for a free connection before it fails with
    /// 503 instead of hanging.
    pub acquire_timeout_ms: u64,
    /// PostgreSQL: registration batches that may commit at once.
    pub register_in_flight: usize,
    /// PostgreSQL: batches of single-wallet updates, of single-object
    /// storage writes and of storage reads by id that may run at once, each.
    pub batches_in_flight: usize,
    /// PostgreSQL: listed users' profiles cached in memory (checked against the
    /// row's version on every listing); 0 turns the cache off.
    pub profile_cache_entries: usize,
    /// PostgreSQL: how often tables still under 100,000 rows are checked and
    /// analyzed once their live rows grew or shrank by half; 0 leaves
    /// statistics to autovacuum.
    pub analyze_interval_ms: u64,
    /// SQLite: least time between moves of new ledger entries into the
    /// indexed ledger table; 0 moves them after every commit.
    pub ledger_merge_interval_ms: u64,
    /// SQLite: least time between two syncs of the WAL, the most recent
    /// commits a power loss can take.
    pub wal_sync_interval_ms: u64,
    /// SQLite: least time between two checkpoints (copies of the WAL into
    /// the database file).
    pub checkpoint_interval_ms: u64,
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        let d = ludus_store::StoreOptions::default();
        DatabaseConfig {
            address: Vec::new(),
            max_open_conns: d.max_open_conns,
            conn_max_lifetime_ms: d.conn_max_lifetime_ms,
            acquire_timeout_ms: d.acquire_timeout_ms,
            register_in_flight: d.register_in_flight,
            batches_in_flight: d.batches_in_flight,
            profile_cache_entries: d.profile_cache_entries,
            analyze_interval_ms: d.analyze_interval_ms,
            ledger_merge_interval_ms: d.ledger_merge_interval_ms,
            wal_sync_interval_ms: d.wal_sync_interval_ms,
            checkpoint_interval_ms: d.checkpoint_interval_ms,
        }
    }
}

impl DatabaseConfig {
    pub fn address(&self) -> &str {
        self.address.first().map(String::as_str).unwrap_or("")
    }
}

/// Nakama lists database addresses; a single string is accepted too.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) if s.is_empty() => Vec::new(),
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

impl Config {
    pub fn store_options(&self) -> ludus_store::StoreOptions {
        ludus_store::StoreOptions {
            max_open_conns: self.database.max_open_conns,
            conn_max_lifetime_ms: self.database.conn_max_lifetime_ms,
            acquire_timeout_ms: self.database.acquire_timeout_ms,
            module_sql_timeout_ms: self.runtime.lua_call_timeout_ms,
            register_in_flight: self.database.register_in_flight,
            batches_in_flight: self.database.batches_in_flight,
            profile_cache_entries: self.database.profile_cache_entries,
            analyze_interval_ms: self.database.analyze_interval_ms,
            ledger_merge_interval_ms: self.database.ledger_merge_interval_ms,
            wal_sync_interval_ms: self.database.wal_sync_interval_ms,
            checkpoint_interval_ms: self.database.checkpoint_interval_ms,
        }
    }

    /// Builds the configuration from an optional file, the environment and flags.
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
        flags: &[(String, String)],
    ) -> Result<Config, ConfigError> {
        let defaults = serde_yaml_ng::to_value(Config::default()).expect("defaults serialize");
        let mut tree = match file {
            Some(path) => read_file(path)?,
            None => Value::Mapping(Mapping::new()),
        };
        let mut ignored = drop_nakama_only(&mut tree, &defaults)?;
        let known = leaf_keys(&defaults);
        for (name, value) in env {
            let Some(rest) = name.strip_prefix("LUDUS_") else {
                continue;
            };
            // Only variables naming a known key count; others belong to someone else.
            if let Some(key) = known.iter().find(|k| env_name(k) == rest) {
                set_key(&mut tree, &defaults, key, &value)?;
            }
        }
        // `--cluster.redis` repeats: its values add up to one list.
        let redis: Vec<&str> = flags
            .iter()
            .filter(|(k, _)| k == "cluster.redis")
            .map(|(_, v)| v.as_str())
            .collect();
        let joined = [("cluster.redis".to_owned(), redis.join(","))];
        let flags = flags
            .iter()
            .filter(|(k, _)| k != "cluster.redis")
            .chain(joined.iter().filter(|_| !redis.is_empty()));
        for (key, value) in flags {
            if lookup(&defaults, key).is_none() && crate::nakama_config::is_key(key) {
                ignored.push(key.clone());
                continue;
            }
            set_key(&mut tree, &defaults, key, value)?;
        }
        let mut config: Config = serde_path_to_error::deserialize(tree).map_err(|e| {
            let key = e.path().to_string();
            let message = e.into_inner().to_string();
            match message.strip_prefix("unknown field `") {
                Some(rest) => {
                    let field = rest.split('`').next().unwrap_or_default();
                    let prefix = key
                        .rsplit_once('.')
                        .map(|(p, _)| format!("{p}."))
                        .unwrap_or_default();
                    ConfigError::UnknownKey(format!("{prefix}{field}"))
                }
                None => ConfigError::BadValue { key, message },
            }
        })?;
        config.validate()?;
        ignored.sort();
        ignored.dedup();
        config.ignored_keys = ignored;
        Ok(config)
    }

    /// `social` with Play Games' OAuth client from `google_auth` added:
    /// what the sign-in verifier is built from.
    pub fn social_settings(&self) -> ludus_core::social_auth::SocialSettings {
        let mut social = self.social.clone();
        social.google_play = self.google_play_client().ok().flatten();
        social
    }

    fn google_play_client(
        &self,
    ) -> Result<Option<ludus_core::social_auth::GooglePlayClient>, String> {
        ludus_core::social_auth::GooglePlayClient::from_credentials_json(
            &self.google_auth.credentials_json,
        )
    }

    /// Logs, once each, the keys of Nakama's that were set and are ignored.
    pub fn warn_ignored_keys(&self) {
        for key in &self.ignored_keys {
            tracing::warn!(
                key = %key,
                "config key of nakama's is not supported by ludus yet and is ignored"
            );
        }
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, message: &str| {
            Err(ConfigError::BadValue {
                key: key.into(),
                message: message.into(),
            })
        };
        if !["debug", "info", "warn", "error", "trace"].contains(&self.logger.level.as_str()) {
            return bad("logger.level", "must be one of debug, info, warn, error");
        }
        if !["text", "json"].contains(&self.logger.format.as_str()) {
            return bad("logger.format", "must be text or json");
        }
        if self.logger.rotation && self.logger.max_size == 0 {
            return bad(
                "logger.max_size",
                "must be at least 1 (megabytes) with logger.rotation",
            );
        }
        if let Err(e) = self.google_play_client() {
            return bad("google_auth.credentials_json", &e);
        }
        if self.session.encryption_key.is_empty() {
            return bad("session.encryption_key", "must not be empty");
        }
        if self.session.refresh_encryption_key.is_empty() {
            return bad("session.refresh_encryption_key", "must not be empty");
        }
        if self.session.encryption_key == self.session.refresh_encryption_key {
            return bad(
                "session.refresh_encryption_key",
                "must differ from session.encryption_key, or refresh tokens would work as session tokens",
            );
        }
        self.validate_console()?;
        if self.mfa.storage_encryption_key.len() != 32 {
            return bad(
                "mfa.storage_encryption_key",
                "must be exactly 32 bytes (an AES-256 key)",
            );
        }
        if let Err(why) =
            ludus_core::purchase::apple_jws::AppleRoots::from_pem(&self.iap.apple.root_ca)
        {
            return bad("iap.apple.root_ca", &why);
        }
        if self.session.token_expiry_sec <= 0 {
            return bad("session.token_expiry_sec", "must be at least 1");
        }
        if self.session.refresh_token_expiry_sec <= 0 {
            return bad("session.refresh_token_expiry_sec", "must be at least 1");
        }
        if !(4..=31).contains(&self.session.bcrypt_cost) {
            return bad("session.bcrypt_cost", "must be between 4 and 31");
        }
        if self.socket.server_key.is_empty() {
            return bad("socket.server_key", "must not be empty");
        }
        if self.socket.address.parse::<std::net::IpAddr>().is_err() {
            return bad(
                "socket.address",
                "must be an IP address such as 127.0.0.1 or 0.0.0.0",
            );
        }
        if self.socket.max_request_size_bytes < 1024 {
            return bad("socket.max_request_size_bytes", "must be at least 1024");
        }
        if self.socket.read_timeout_ms == 0 {
            return bad("socket.read_timeout_ms", "must be at least 1");
        }
        if self.socket.handshake_timeout_ms == 0 {
            return bad("socket.handshake_timeout_ms", "must be at least 1");
        }
        if self.socket.max_message_size_bytes < 64 {
            return bad("socket.max_message_size_bytes", "must be at least 64");
        }
        if self.socket.ping_period_ms == 0 {
            return bad("socket.ping_period_ms", "must be at least 1");
        }
        if self.socket.pong_wait_ms <= self.socket.ping_period_ms {
            return bad(
                "socket.pong_wait_ms",
                "must be greater than socket.ping_period_ms, or live clients are dropped between pings",
            );
        }
        if self.socket.max_pending_requests == 0 {
            return bad("socket.max_pending_requests", "must be at least 1");
        }
        if self.socket.outgoing_queue_size == 0 {
            return bad("socket.outgoing_queue_size", "must be at least 1");
        }
        if self.socket.write_wait_ms == 0 {
            return bad("socket.write_wait_ms", "must be at least 1");
        }
        if self.database.max_open_conns == 0 {
            return bad("database.max_open_conns", "must be at least 1");
        }
        if self.database.ledger_merge_interval_ms > MAX_LEDGER_MERGE_INTERVAL_MS {
            return bad(
                "database.ledger_merge_interval_ms",
                "must be at most 10000: ledger pages scan every entry that waits for a move",
            );
        }
        for (key, value) in [
            (
                "database.wal_sync_interval_ms",
                self.database.wal_sync_interval_ms,
            ),
            (
                "database.checkpoint_interval_ms",
                self.database.checkpoint_interval_ms,
            ),
        ] {
            if !(1..=MAX_SQLITE_INTERVAL_MS).contains(&value) {
                return bad(key, "must be from 1 to 10000");
            }
        }
        self.runtime.validate()?;
        if !(1..=i32::MAX as usize).contains(&self.party.max_size) {
            return bad("party.max_size", "must be at least 1");
        }
        if self.session.single_party && !self.session.single_socket {
            return bad(
                "session.single_party",
                "needs session.single_socket: a user's other sockets could keep other parties",
            );
        }
        if self.party.max_per_session == 0 {
            return bad("party.max_per_session", "must be at least 1");
        }
        crate::matchmaker::validate(&self.matchmaker)?;
        if self.database.acquire_timeout_ms == 0 {
            return bad("database.acquire_timeout_ms", "must be at least 1");
        }
        if self.database.register_in_flight == 0 {
            return bad("database.register_in_flight", "must be at least 1");
        }
        if self.database.batches_in_flight == 0 {
            return bad("database.batches_in_flight", "must be at least 1");
        }
        if let Err((key, message)) = self.matches.check() {
            return bad(key, message);
        }
        if let Err((key, message)) = self.cluster.check() {
            return bad(key, &message);
        }
        if self.cluster.enabled() && self.database.address().is_empty() {
            return bad(
                "cluster.redis",
                "a cluster needs PostgreSQL (database.address): every node must share one database, and SQLite is one node's file",
            );
        }
        Ok(())
    }

    /// Every key with its default, for `ludus help`.
    pub fn documented_keys() -> Vec<(String, String)> {
        let defaults = serde_yaml_ng::to_value(Config::default()).expect("defaults serialize");
        leaf_keys(&defaults)
            .into_iter()
            .map(|k| {
                let v = lookup(&defaults, &k).map(render).unwrap_or_default();
                (k, v)
            })
            .collect()
    }

    /// The console's rules. The default password is refused on an interface
    /// other hosts reach (CVE-2022-2321 is a Nakama console signed into with
    /// its defaults); on a loopback interface start-up warns.
    fn validate_console(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, message: String| {
            Err(ConfigError::BadValue {
                key: key.into(),
                message,
            })
        };
        let c = &self.console;
        if ludus_core::console::username(&c.username).is_err() {
            return bad(
                "console.username",
                "must be 3-20 letters, digits, `_` or `.`, starting and ending with a letter or digit".into(),
            );
        }
        if c.password.is_empty() {
            return bad("console.password", "must not be empty".into());
        }
        if c.signing_key.is_empty() {
            return bad("console.signing_key", "must not be empty".into());
        }
        if c.token_expiry_sec <= 0 {
            return bad("console.token_expiry_sec", "must be at least 1".into());
        }
        if c.max_failed_sign_ins == 0 {
            return bad("console.max_failed_sign_ins", "must be at least 1".into());
        }
        if c.lockout_sec <= 0 {
            return bad("console.lockout_sec", "must be at least 1".into());
        }
        if c.max_message_size_bytes == 0 {
            return bad(
                "console.max_message_size_bytes",
                "must be at least 1".into(),
            );
        }
        if c.read_timeout_ms == 0 {
            return bad("console.read_timeout_ms", "must be at least 1".into());
        }
        let address = c.address(&self.socket);
        let loopback = address
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
            || address == "localhost";
        if !loopback && let Some(key) = c.insecure_defaults().first() {
            return bad(
                key,
                format!(
                    "is Nakama's public default while the console listens on {address}: set your own, or listen on 127.0.0.1"
                ),
            );
        }
        Ok(())
    }

    pub fn console_settings(&self) -> ludus_core::console_service::ConsoleSettings {
        ludus_core::console_service::ConsoleSettings {
            username: self.console.username.clone(),
            password: self.console.password.clone(),
            signing_key: self.console.signing_key.clone(),
            token_expiry_sec: self.console.token_expiry_sec,
            bcrypt_cost: self.session.bcrypt_cost,
            max_failed_sign_ins: self.console.max_failed_sign_ins,
            lockout_sec: self.console.lockout_sec,
            mfa_key: self
                .mfa
                .storage_encryption_key
                .as_bytes()
                .try_into()
                .unwrap_or([0; 32]),
            mfa_admin: self.mfa.admin_account_enabled,
        }
    }

    pub fn session_settings(&self) -> ludus_core::accounts::SessionSettings {
        ludus_core::accounts::SessionSettings {
            encryption_key: self.session.encryption_key.clone(),
            refresh_encryption_key: self.session.refresh_encryption_key.clone(),
            token_expiry_sec: self.session.token_expiry_sec,
            refresh_token_expiry_sec: self.session.refresh_token_expiry_sec,
            bcrypt_cost: self.session.bcrypt_cost,
            token_cache_size: self.session.token_cache_size,
            throttle: ludus_core::sign_in_throttle::ThrottleSettings {
                free_failures: self.session.sign_in_free_failures,
                backoff_ms: self.session.sign_in_backoff_ms,
                max_backoff_ms: self.session.sign_in_max_backoff_ms,
                max_tracked: self.session.sign_in_max_tracked,
            },
        }
    }
}

/// Splits `--section.key value` / `--section.key=value` pairs; `--config` is the caller's.
pub fn parse_flags(args: &[String]) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let Some(flag) = arg.strip_prefix("--") else {
            return Err(ConfigError::BadArgument(arg.clone()));
        };
        match flag.split_once('=') {
            Some((k, v)) => out.push((k.to_owned(), v.to_owned())),
            None => {
                let value = it
                    .next()
                    .ok_or_else(|| ConfigError::MissingValue(arg.clone()))?;
                out.push((flag.to_owned(), value.clone()));
            }
        }
    }
    Ok(out)
}

fn read_file(path: &Path) -> Result<Value, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.into(),
        source,
    })?;
    let value: Value = serde_yaml_ng::from_str(&text).map_err(|source| ConfigError::Yaml {
        path: path.into(),
        source,
    })?;
    match value {
        Value::Null => Ok(Value::Mapping(Mapping::new())),
        Value::Mapping(_) => Ok(value),
        _ => Err(ConfigError::NotAMapping(path.into())),
    }
}

/// Removes from the file's tree the keys that Nakama has and Ludus does not
/// (whole sections such as `console` included), and answers their paths.
/// A key that neither has inside such a section is named at once; any
/// other stays for deserialization to accept or name as unknown.
fn drop_nakama_only(tree: &mut Value, defaults: &Value) -> Result<Vec<String>, ConfigError> {
    fn walk(
        node: &mut Mapping,
        prefix: &str,
        defaults: &Value,
        out: &mut Vec<String>,
    ) -> Result<(), ConfigError> {
        let names: Vec<Value> = node.keys().cloned().collect();
        for name in names {
            let Some(text) = name.as_str() else { continue };
            let path = if prefix.is_empty() {
                text.to_owned()
            } else {
                format!("{prefix}.{text}")
            };
            let ours = lookup(defaults, &path).map(Value::is_mapping);
            let nakama_section = crate::nakama_config::is_section(&path);
            let Some(value) = node.get_mut(&name) else {
                continue;
            };
            match ours {
                // One of Ludus's keys.
                Some(false) => {}
                // One of Ludus's sections, maybe holding keys of Nakama's.
                Some(true) => {
                    if let Some(section) = value.as_mapping_mut() {
                        walk(section, &path, defaults, out)?;
                    }
                }
                None if crate::nakama_config::is_key(&path) => {
                    node.remove(&name);
                    out.push(path);
                }
                None if nakama_section => {
                    if let Some(section) = value.as_mapping_mut() {
                        walk(section, &path, defaults, out)?;
                        // What is left is a key neither server has.
                        if let Some(left) = section.keys().next() {
                            let left = left.as_str().unwrap_or_default();
                            return Err(ConfigError::UnknownKey(format!("{path}.{left}")));
                        }
                        node.remove(&name);
                    } else if value.is_null() {
                        node.remove(&name);
                    }
                }
                None => {}
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    if let Some(root) = tree.as_mapping_mut() {
        walk(root, "", defaults, &mut out)?;
    }
    Ok(out)
}

fn env_name(key: &str) -> String {
    key.to_ascii_uppercase().replace('.', "_")
}

fn leaf_keys(v: &Value) -> Vec<String> {
    fn walk(v: &Value, prefix: &str, out: &mut Vec<String>) {
        match v {
            Value::Mapping(m) => {
                for (k, child) in m {
                    let k = k.as_str().unwrap_or_default();
                    let path = if prefix.is_empty() {
                        k.to_owned()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(child, &path, out);
                }
            }
            _ => out.push(prefix.to_owned()),
        }
    }
    let mut out = Vec::new();
    walk(v, "", &mut out);
    out
}

fn lookup<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    key.split('.').try_fold(v, |node, part| node.get(part))
}

fn render(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Sequence(items) => items.iter().map(render).collect::<Vec<_>>().join(","),
        other => serde_yaml_ng::to_string(other)
            .unwrap_or_default()
            .trim()
            .to_owned(),
    }
}

/// Sets one dotted key from a string, typed like the key's default value.
fn set_key(tree: &mut Value, defaults: &Value, key: &str, raw: &str) -> Result<(), ConfigError> {
    let default = lookup(defaults, key)
        .filter(|v| !v.is_mapping())
        .ok_or_else(|| ConfigError::UnknownKey(key.to_owned()))?;
    let bad = |what: &str| ConfigError::BadValue {
        key: key.to_owned(),
        message: format!("`{raw}` is not {what}"),
    };
    let value = match default {
        Value::Bool(_) => Value::Bool(match raw {
            "true" | "1" | "yes" => true,
            "false" | "0" | "no" => false,
            _ => return Err(bad("true or false")),
        }),
        Value::Number(n) if n.is_f64() => {
            Value::Number(raw.parse::<f64>().map_err(|_| bad("a number"))?.into())
        }
        Value::Number(_) => Value::Number(
            raw.parse::<i64>()
                .map_err(|_| bad("a whole number"))?
                .into(),
        ),
        Value::Sequence(_) => Value::Sequence(
            raw.split(',')
                .filter(|s| !s.is_empty())
                .map(|s| Value::String(s.trim().to_owned()))
                .collect(),
        ),
        _ => Value::String(raw.to_owned()),
    };
    let mut node = tree;
    let parts: Vec<&str> = key.split('.').collect();
    for part in &parts[..parts.len() - 1] {
        let map = node.as_mapping_mut().ok_or_else(|| ConfigError::BadValue {
            key: key.to_owned(),
            message: "section is not a mapping".into(),
        })?;
        node = map
            .entry(Value::String((*part).to_owned()))
            .or_insert_with(|| Value::Mapping(Mapping::new()));
    }
    let map = node.as_mapping_mut().ok_or_else(|| ConfigError::BadValue {
        key: key.to_owned(),
        message: "section is not a mapping".into(),
    })?;
    map.insert(Value::String(parts[parts.len() - 1].to_owned()), value);
    Ok(())
}

/// `--key value` pairs as `Config::load` takes them, for tests.
#[cfg(test)]
pub(crate) fn test_flags(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::test_flags as flags;

    #[test]
    fn defaults_match_nakama() {
        let c = Config::load(None, [], &[]).unwrap();
        assert_eq!(c.socket.port, 7350);
        assert_eq!(c.socket.server_key, "defaultkey");
        assert_eq!(c.session.token_expiry_sec, 60);
        assert_eq!(c.session.refresh_token_expiry_sec, 3600);
        assert_eq!(c.socket.max_request_size_bytes, 262_144);
        assert_eq!(c.database.address(), "");
    }

    #[test]
    fn file_then_env_then_flags() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.yml");
        std::fs::write(
            &path,
            "socket:\n  port: 1000\n  server_key: fromfile\nsession:\n  token_expiry_sec: 5\n",
        )
        .unwrap();
        let env = vec![
            ("LUDUS_SOCKET_PORT".to_string(), "2000".to_string()),
            ("LUDUS_SOMETHING_ELSE".to_string(), "ignored".to_string()),
        ];
        let c = Config::load(
            Some(&path),
            env,
            &flags(&[("socket.port", "3000"), ("socket.server_key", "12345")]),
        )
        .unwrap();
        assert_eq!(c.socket.port, 3000);
        assert_eq!(
            c.socket.server_key, "12345",
            "a numeric-looking key stays a string"
        );
        assert_eq!(c.session.token_expiry_sec, 5);
    }

    #[test]
    fn database_address_takes_a_string_or_a_list() {
        let c = Config::load(
            None,
            [],
            &flags(&[("database.address", "postgres://u@h/db")]),
        )
        .unwrap();
        assert_eq!(c.database.address(), "postgres://u@h/db");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.yml");
        std::fs::write(&path, "database:\n  address:\n    - root@localhost:26257\n").unwrap();
        let c = Config::load(Some(&path), [], &[]).unwrap();
        assert_eq!(c.database.address(), "root@localhost:26257");
    }

    #[test]
    fn unknown_keys_are_named() {
        let err = Config::load(None, [], &flags(&[("socket.prot", "1")])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown config key `socket.prot`; run `ludus help` for the list of keys"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.yml");
        std::fs::write(&path, "session:\n  token_expiry: 5\n").unwrap();
        let err = Config::load(Some(&path), [], &[]).unwrap_err();
        assert!(err.to_string().contains("`session.token_expiry`"), "{err}");
    }

    /// A config file written for Nakama: keys Ludus lacks are ignored and
    /// listed, Ludus's own keys among them still apply.
    #[test]
    fn nakama_config_files_load_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nakama.yml");
        std::fs::write(
            &path,
            "name: nakama1\n\
             config: [a.yml]\n\
             logger:\n  stdout: true\n  level: debug\n\
             socket:\n  port: 7777\n  protocol: tcp\n  response_headers: [\"X-A=1\"]\n\
             console:\n  port: 7351\n  mfa:\n    admin_account_enabled: false\n\
             metrics:\n\
             social:\n  steam:\n    app_id: 5\n\
             satori: {}\n",
        )
        .unwrap();
        let c = Config::load(
            Some(&path),
            [],
            &flags(&[("leaderboard.callback_queue_size", "9")]),
        )
        .unwrap();
        assert_eq!((c.name.as_str(), c.socket.port), ("nakama1", 7777));
        assert_eq!(c.logger.level, "debug");
        assert_eq!(
            c.ignored_keys,
            [
                "config",
                "console.mfa.admin_account_enabled",
                "leaderboard.callback_queue_size",
                "socket.protocol",
                "socket.response_headers",
            ]
        );
        // A key neither server has still stops start-up, inside a Nakama
        // section or out of one.
        for (yaml, key) in [
            ("console:\n  prot: 1\n", "console.prot"),
            ("social:\n  steam:\n    app: 1\n", "social.steam.app"),
            ("nothing: 1\n", "nothing"),
            ("socket:\n  prot: 1\n", "socket.prot"),
        ] {
            std::fs::write(&path, yaml).unwrap();
            let err = Config::load(Some(&path), [], &[]).unwrap_err();
            assert!(
                matches!(err, ConfigError::UnknownKey(ref k) if k == key),
                "{yaml}: {err}"
            );
        }
        let err = Config::load(None, [], &flags(&[("console.prot", "1")])).unwrap_err();
        assert!(err.to_string().contains("`console.prot`"), "{err}");
    }

    #[test]
    fn bad_values_are_named() {
        let err = Config::load(None, [], &flags(&[("socket.port", "abc")])).unwrap_err();
        assert!(
            err.to_string().starts_with("config key `socket.port`"),
            "{err}"
        );
        let err = Config::load(None, [], &flags(&[("socket.port", "70000")])).unwrap_err();
        assert!(err.to_string().contains("socket.port"), "{err}");
        let err = Config::load(None, [], &flags(&[("session.token_expiry_sec", "0")])).unwrap_err();
        assert!(
            err.to_string().contains("session.token_expiry_sec"),
            "{err}"
        );
        let err = Config::load(
            None,
            [],
            &flags(&[
                ("session.encryption_key", "same"),
                ("session.refresh_encryption_key", "same"),
            ]),
        )
        .unwrap_err();
        assert!(err.to_string().contains("refresh_encryption_key"), "{err}");
        for key in ["database.register_in_flight", "database.batches_in_flight"] {
            let err = Config::load(None, [], &flags(&[(key, "0")])).unwrap_err();
            assert!(err.to_string().contains(key), "{err}");
        }
        let ok = Config::load(None, [], &flags(&[("database.register_in_flight", "3")])).unwrap();
        assert_eq!(ok.store_options().register_in_flight, 3);
        assert_eq!(ok.store_options().batches_in_flight, 1);
        let two = Config::load(None, [], &flags(&[("database.batches_in_flight", "2")])).unwrap();
        assert_eq!(two.store_options().batches_in_flight, 2);
        assert_eq!(ok.store_options().profile_cache_entries, 10_000);
        let off =
            Config::load(None, [], &flags(&[("database.profile_cache_entries", "0")])).unwrap();
        assert_eq!(off.store_options().profile_cache_entries, 0);
        assert_eq!(ok.store_options().analyze_interval_ms, 1_000);
        let off = Config::load(None, [], &flags(&[("database.analyze_interval_ms", "0")])).unwrap();
        assert_eq!(off.store_options().analyze_interval_ms, 0);
        assert_eq!(ok.store_options().ledger_merge_interval_ms, 50);
        let every = Config::load(
            None,
            [],
            &flags(&[("database.ledger_merge_interval_ms", "0")]),
        )
        .unwrap();
        assert_eq!(every.store_options().ledger_merge_interval_ms, 0);
        let err = Config::load(
            None,
            [],
            &flags(&[("database.ledger_merge_interval_ms", "10001")]),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("database.ledger_merge_interval_ms"),
            "{err}"
        );
        assert_eq!(ok.store_options().wal_sync_interval_ms, 10);
        assert_eq!(ok.store_options().checkpoint_interval_ms, 100);
        let set = Config::load(
            None,
            [],
            &flags(&[
                ("database.wal_sync_interval_ms", "5"),
                ("database.checkpoint_interval_ms", "1000"),
            ]),
        )
        .unwrap();
        assert_eq!(set.store_options().wal_sync_interval_ms, 5);
        assert_eq!(set.store_options().checkpoint_interval_ms, 1000);
        for (key, value) in [
            ("database.wal_sync_interval_ms", "0"),
            ("database.checkpoint_interval_ms", "10001"),
        ] {
            let err = Config::load(None, [], &flags(&[(key, value)])).unwrap_err();
            assert!(err.to_string().contains(key), "{err}");
        }
    }

    /// `match.*` is the match engine's own `MatchConfig`: zero values the
    /// engine cannot run with are refused, never clamped.
    #[test]
    fn match_settings_are_the_engines_own_and_checked() {
        for key in [
            "match.input_queue_size",
            "match.call_queue_size",
            "match.call_timeout_ms",
            "match.join_marker_deadline_ms",
            "match.max_matches",
        ] {
            let err = Config::load(None, [], &flags(&[(key, "0")])).unwrap_err();
            assert!(err.to_string().contains(key), "{key}: {err}");
        }
        let c = Config::load(
            None,
            [],
            &flags(&[
                ("match.max_empty_sec", "30"),
                ("match.call_timeout_ms", "250"),
            ]),
        )
        .unwrap();
        assert_eq!(c.matches.max_empty_sec, 30);
        assert_eq!(c.matches.call_timeout_ms, 250);
        assert_eq!(c.matches.input_queue_size, 128);
    }

    #[test]
    fn party_limits_are_checked_and_reach_the_realtime_layer() {
        for key in ["party.max_size", "party.max_per_session"] {
            let err = Config::load(None, [], &flags(&[(key, "0")])).unwrap_err();
            assert!(err.to_string().contains(key), "{err}");
        }
        let c = Config::load(None, [], &flags(&[("party.max_size", "8")])).unwrap();
        assert_eq!(c.party.max_size, 8);
        assert_eq!(c.party.max_per_session, 32);
        assert!(!c.session.single_party);
        let err = Config::load(None, [], &flags(&[("session.single_party", "true")])).unwrap_err();
        assert!(err.to_string().contains("session.single_socket"), "{err}");
        let c = Config::load(
            None,
            [],
            &flags(&[
                ("session.single_party", "true"),
                ("session.single_socket", "true"),
            ]),
        )
        .unwrap();
        assert!(c.session.single_party);
    }

    #[test]
    fn flag_parsing() {
        let args: Vec<String> = ["--a.b", "1", "--c.d=2"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            parse_flags(&args).unwrap(),
            flags(&[("a.b", "1"), ("c.d", "2")])
        );
        assert!(matches!(
            parse_flags(&["--a.b".to_string()]),
            Err(ConfigError::MissingValue(_))
        ));
        assert!(matches!(
            parse_flags(&["x".to_string()]),
            Err(ConfigError::BadArgument(_))
        ));
    }

    #[test]
    fn cluster_redis_repeats_and_needs_postgres() {
        let c = Config::load(
            None,
            [],
            &flags(&[
                ("database.address", "postgres://u@h/db"),
                ("cluster.redis", "redis://127.0.0.1:1"),
                ("cluster.redis", "redis://127.0.0.1:2,redis://127.0.0.1:3"),
            ]),
        )
        .unwrap();
        assert_eq!(
            c.cluster.redis,
            [
                "redis://127.0.0.1:1",
                "redis://127.0.0.1:2",
                "redis://127.0.0.1:3"
            ]
        );
        let err = Config::load(
            None,
            [],
            &flags(&[("cluster.redis", "redis://127.0.0.1:1")]),
        )
        .unwrap_err();
        assert!(err.to_string().contains("needs PostgreSQL"), "{err}");
        let err = Config::load(
            None,
            [],
            &flags(&[
                ("database.address", "postgres://u@h/db"),
                ("cluster.redis", "http://x"),
            ]),
        )
        .unwrap_err();
        assert!(err.to_string().contains("cluster.redis"), "{err}");
    }
}
