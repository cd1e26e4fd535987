//! The configuration reference: what every key means, and the Markdown page
//! (`docs/configuration.md`) made from it with each key's default read from
//! [`Config::default`], so the page and the code never disagree.
//! `ludus help --markdown` prints the page; a test fails when the file in the
//! repository is not what it prints, and another when a key has no meaning
//! here or a meaning names no key.

use std::fmt::Write as _;

use super::Config;
use crate::nakama_config::NAKAMA_KEYS;

/// Every key's meaning, in the order of the reference.
const MEANINGS: &[(&str, &str)] = &[
    ("name", "node name, shown in logs"),
    ("data_dir", "folder of the embedded database"),
    ("logger.level", "`debug`, `info`, `warn` or `error`"),
    ("logger.format", "`text` or `json`"),
    (
        "logger.stdout",
        "log to standard output (as well as to `logger.file` when set)",
    ),
    (
        "logger.file",
        "also log to this file, appended to; empty for none",
    ),
    (
        "logger.rotation",
        "rotate `logger.file` past `logger.max_size`: it is renamed `name-<UTC time>.ext` and a new one begun, as Nakama's",
    ),
    (
        "logger.max_size",
        "megabytes of `logger.file` before it is rotated",
    ),
    (
        "logger.max_age",
        "days a rotated file is kept; `0` for any age",
    ),
    ("logger.max_backups", "rotated files kept; `0` for all"),
    ("logger.compress", "gzip rotated files"),
    (
        "session.encryption_key",
        "HS256 key of session tokens (change it in production)",
    ),
    (
        "session.refresh_encryption_key",
        "HS256 key of refresh tokens; must differ from the session key",
    ),
    ("session.token_expiry_sec", "session token lifetime"),
    ("session.refresh_token_expiry_sec", "refresh token lifetime"),
    (
        "session.bcrypt_cost",
        "bcrypt work factor for new passwords",
    ),
    (
        "session.sign_in_free_failures",
        "Ludus only: failed password or platform sign-ins in a row an account (email or username) or a source address may have before it is refused with 429 / code 8 for a back-off; `0` turns the throttle off. Successful sign-ins are never slowed",
    ),
    (
        "session.sign_in_backoff_ms",
        "Ludus only: the first back-off after the free failures, in milliseconds; each further failure doubles it",
    ),
    (
        "session.sign_in_max_backoff_ms",
        "Ludus only: the longest back-off, in milliseconds; a key quiet for twice this long starts afresh",
    ),
    (
        "session.sign_in_max_tracked",
        "Ludus only: most accounts and addresses the throttle remembers (the one idle longest is forgotten first)",
    ),
    (
        "session.token_cache_size",
        "access tokens a node remembers as verified, so a client's requests skip the signature check (expiry and logouts are still checked on every request); `0` turns it off",
    ),
    (
        "session.single_socket",
        "a user's new socket closes that user's older sockets",
    ),
    (
        "session.single_party",
        "a socket that joins a party leaves its other parties (its pending join requests stay); needs `session.single_socket`",
    ),
    (
        "socket.server_key",
        "the key clients send (HTTP Basic user) to sign in",
    ),
    (
        "socket.address",
        "interface to listen on (`0.0.0.0` for all)",
    ),
    ("socket.port", "port of the API"),
    (
        "socket.max_request_size_bytes",
        "largest request body, after gzip decompression; larger gets 413",
    ),
    (
        "socket.read_timeout_ms",
        "longest a request may run before it is answered 504",
    ),
    (
        "socket.handshake_timeout_ms",
        "a connection that sends no complete request head for this long (after connecting, or idle between keep-alive requests) is closed",
    ),
    (
        "socket.max_message_size_bytes",
        "largest message a client may send on `/ws`; larger closes the socket",
    ),
    (
        "socket.ping_period_ms",
        "how often the server pings each socket (WebSocket ping frame)",
    ),
    (
        "socket.pong_wait_ms",
        "a socket silent for this long (no frame, no pong) is closed; must exceed `ping_period_ms`",
    ),
    (
        "socket.outgoing_queue_size",
        "messages queued per socket; a client that falls further behind is closed, others are not slowed",
    ),
    (
        "socket.write_wait_ms",
        "longest one write to a socket may take before it is closed",
    ),
    (
        "socket.ws_idle_timeout_ms",
        "close a socket that sent no message for this long even though it answers pings; `0` never",
    ),
    (
        "socket.max_connections",
        "most open sockets on this node; more upgrades get 503; `0` no limit",
    ),
    (
        "socket.max_pending_requests",
        "requests one socket may have waiting behind the one being served (served in order; pushes, pings and pongs keep flowing meanwhile); more are refused with an `error` envelope",
    ),
    (
        "socket.grpc",
        "serve Nakama's gRPC API (`nakama.api.Nakama`, cleartext HTTP/2) on `socket.port - 1`, as Nakama does; on an ephemeral port when `socket.port` is `0`",
    ),
    (
        "database.address",
        "empty: SQLite in `data_dir`; else a PostgreSQL address",
    ),
    (
        "database.max_open_conns",
        "PostgreSQL connections in all (SQLite: most reader connections); of these, half and at most four serve only the batched sign-in look-ups by device or custom id, on sessions that keep one generic plan per statement and use index scans only (so those look-ups are never planned afresh while the tables grow), and the rest everything else; at `1`, one of each",
    ),
    (
        "database.conn_max_lifetime_ms",
        "a connection older than this is replaced; `0` keeps it",
    ),
    (
        "database.acquire_timeout_ms",
        "longest wait for a free connection before answering 503",
    ),
    (
        "database.register_in_flight",
        "PostgreSQL: sign-up batches committing at once (at most half the pool); while they commit the next batch gathers, so fewer means larger batches",
    ),
    (
        "database.batches_in_flight",
        "PostgreSQL: batches of single-wallet updates, of single-object storage writes and of storage reads by id running at once, each kind (at most half the pool); while they run the next batch gathers, so fewer means larger batches and less of PostgreSQL's time per change",
    ),
    (
        "database.profile_cache_entries",
        "PostgreSQL: listed users' profiles (friends, group members) kept in memory, each checked against its row's version on every listing (so never stale, on any node); once most are found current, those listings read only the edges from PostgreSQL; a profile over 2 KB of text is never kept (so at most about 25 MB at the default); `0` turns it off",
    ),
    (
        "database.analyze_interval_ms",
        "PostgreSQL: how often tables still under 100,000 rows are checked and analyzed once their live rows grew (or shrank) by half since their last statistics (updates alone never count), so plans PostgreSQL made while they were empty (a foreign-key check that scans `users` whole) do not last until autovacuum's next visit, up to a minute on a new database; `0` leaves statistics to autovacuum alone",
    ),
    (
        "database.ledger_merge_interval_ms",
        "SQLite: least time between the writer's moves of new ledger entries into the indexed ledger table (each user's index page then takes all its new entries at once); `0` moves after every commit; longer writes fewer WAL pages per wallet update but makes callers wait longer behind a move and ledger pages scan more waiting entries (0 to 10000)",
    ),
    (
        "database.wal_sync_interval_ms",
        "SQLite: commits do not wait for the disk (`synchronous=NORMAL`); a thread of the writer's syncs the write-ahead log at most this long after a commit, so a power loss or kernel crash can take at most about this much of the latest commits (a crash of the process alone takes none) (1 to 10000)",
    ),
    (
        "database.checkpoint_interval_ms",
        "SQLite: least time between two checkpoints, which copy the write-ahead log into the database file; between them the log is only synced, and a page the writer keeps changing is copied once a checkpoint rather than once a sync; at or below `wal_sync_interval_ms` every sync is a checkpoint (1 to 10000)",
    ),
    (
        "metrics.prometheus_port",
        "port of the Prometheus exporter (`GET /metrics`, on `socket.address`); 0 turns it off. See docs/operations.md",
    ),
    (
        "metrics.namespace",
        "when set, a `namespace` label with this value on every sample",
    ),
    (
        "metrics.prefix",
        "prefix of every metric name (`nakama_overall_count`); empty for none",
    ),
    (
        "metrics.custom_prefix",
        "prefix of modules' own metrics (`nk.metrics_*`), below `metrics.prefix`; empty for none",
    ),
    (
        "metrics.custom_scope_limit",
        "the most series modules may create; past it a new name or tag set is refused, counted (`metrics_collection_errors_count{err=\"scope_limit\"}`) and logged; 0 means no limit",
    ),
    (
        "console.port",
        "port of the admin console API ([operations.md](operations.md)); `0` picks a free port",
    ),
    (
        "console.address",
        "interface of the console; empty for `socket.address`",
    ),
    (
        "console.max_message_size_bytes",
        "largest console request body; larger gets 413",
    ),
    (
        "console.read_timeout_ms",
        "longest a console request may run before it is answered 504",
    ),
    (
        "console.username",
        "the root console user, an admin no console call can change or delete",
    ),
    (
        "console.password",
        "the root console user's password; Nakama's default `password` is refused unless the console listens on a loopback interface (change it in production)",
    ),
    (
        "console.token_expiry_sec",
        "lifetime of console session tokens and of invitation and password reset codes",
    ),
    (
        "console.signing_key",
        "HS256 key of console tokens; Nakama's default is refused unless the console listens on a loopback interface (change it in production)",
    ),
    (
        "console.max_failed_sign_ins",
        "failed console sign-ins within `console.lockout_sec` that lock the console user (Nakama: 5)",
    ),
    (
        "console.lockout_sec",
        "how long a locked console user waits, and the window its failed sign-ins are counted in (Nakama: 60)",
    ),
    (
        "mfa.storage_encryption_key",
        "32-byte key (AES-256-GCM) console users' MFA secrets and recovery codes are stored under; the default is Nakama's public one (change it in production, before anyone sets MFA up: secrets stored under another key no longer open)",
    ),
    (
        "mfa.admin_account_enabled",
        "the root console user (`console.username`) must sign in with MFA too: its first sign-in answers the setup token",
    ),
    (
        "cluster.redis",
        "Redis addresses of the cluster bus (repeat the flag or give a comma list); several are shards, each stream on the one a consistent hash of its key picks; empty: a single node. A cluster needs PostgreSQL (on SQLite it is refused at start) and a unique `name` per node",
    ),
    (
        "cluster.lease_ms",
        "a node that stops renewing its lease for this long is gone: every other node drops its presences and tells its own sessions they left (at least three `cluster.heartbeat_ms`)",
    ),
    (
        "cluster.heartbeat_ms",
        "how often a node renews its lease (at least 50)",
    ),
    (
        "cluster.queue_size",
        "changes waiting for one Redis shard; past it changes are dropped and the node's presences rewritten once the queue drains, so a slow Redis never stalls a socket (at least 64)",
    ),
    (
        "runtime.path",
        "folder of Lua modules; empty means `<data_dir>/modules`",
    ),
    (
        "runtime.http_key",
        "key for server-to-server `/v2/rpc` calls (`?http_key=` or HTTP Basic user); change it in production",
    ),
    (
        "runtime.env",
        "`key=value` pairs modules read as `ctx.env` (flag: `--runtime.env a=1,b=2`)",
    ),
    (
        "runtime.lua_pool_size",
        "Lua VM threads; `0` means one per CPU core",
    ),
    (
        "runtime.lua_vms_per_thread",
        "most Lua VMs one VM thread runs (1 to 1024; 0 for the store's default: 16 on SQLite, 40 on PostgreSQL, whose round trips are longer): while a call waits on the server (`nk.storage_*`, `nk.wallet*`, `nk.multi_update`, `nk.account_get_id`, `nk.http_request`) its thread runs another VM's call, so one thread keeps that many server calls in flight; VMs beyond the first are made when needed, each holding the modules once (about 0.5 MB with `bench/modules`), so under load the VMs can take `lua_pool_size` × this × one VM's heap: lower it for large modules, or bound each VM with `runtime.lua_memory_limit_bytes`",
    ),
    (
        "runtime.lua_pool_queue_size",
        "calls that may wait for a busy pool (Lua, and JS apart); more are answered 429 at once",
    ),
    (
        "runtime.lua_pool_timeout_ms",
        "longest a call waits for a VM (or a JS context) before it is answered 429 (waiting calls are checked every quarter of it, so the answer comes within 1.25 times this)",
    ),
    (
        "runtime.lua_instruction_budget",
        "Lua instructions one call may run; past it the call fails with 429",
    ),
    (
        "runtime.lua_memory_limit_bytes",
        "bytes one VM may allocate (its modules included); past it the call fails with 429; `0` no limit",
    ),
    (
        "runtime.lua_call_timeout_ms",
        "wall-clock time one Lua call (RPC, hook, matchmaker, shutdown hook, a module's loading) may run, pattern matching and server calls included; past it the call fails with 504 (10 to 60000); also the longest one module SQL statement runs on SQLite",
    ),
    (
        "runtime.lua_match_timeout_percent",
        "percent of its tick interval one Lua match callback may run (at least 50 ms; `match_init` has `runtime.lua_call_timeout_ms`); past it the callback fails and its match ends",
    ),
    (
        "runtime.read_only_globals",
        "globals, the standard library, `nakama` and `package` are read-only while calls run (Nakama's key); module state is set up while modules load, in the modules' own tables",
    ),
    (
        "runtime.max_rpc_payload_bytes",
        "largest RPC payload; larger is answered 400",
    ),
    (
        "runtime.sql_max_rows",
        "most rows one `nk.sql_query` may return; a query matching more fails (add a `LIMIT`) instead of being cut short",
    ),
    (
        "runtime.http_ca_file",
        "PEM file of extra certificate authorities `nk.http_request` trusts for `https://`, besides the built-in Mozilla roots; unreadable or empty stops start-up",
    ),
    (
        "runtime.js_entrypoint",
        "the JavaScript bundle under `runtime.path` whose `InitModule` registers the JS module's callbacks (Nakama's key); empty means `index.js`; no such file, no JS runtime",
    ),
    (
        "runtime.js_max_count",
        "most JS contexts (1 to 1024), each on a thread of its own and each holding the bundle once, made as calls need them; a JS call waiting on the server keeps its context, so this bounds the JS calls in flight (Nakama's key); the queue and its wait are `runtime.lua_pool_queue_size` and `runtime.lua_pool_timeout_ms`",
    ),
    (
        "runtime.js_memory_limit_bytes",
        "bytes one JS context may allocate (its bundle included); past it the call fails with 429 and the context is made anew; `0` no limit",
    ),
    (
        "runtime.js_call_timeout_ms",
        "wall-clock time one JS call (RPC, hook, `InitModule`) may run, server calls included; past it the call fails with 504 (10 to 60000)",
    ),
    (
        "runtime.event_queue_size",
        "events (`nk.event`, `POST /v2/event`, session start and end) waiting for the modules' event callbacks; one that finds the queue full is dropped and logged, and the caller never waits",
    ),
    (
        "runtime.event_queue_workers",
        "tasks delivering queued events to the event callbacks",
    ),
    (
        "social.apple.bundle_id",
        "the app's bundle id: Apple ID tokens must name it as their audience; empty turns Apple sign-in off",
    ),
    (
        "social.apple.base_url",
        "Ludus only, for tests and proxies: where Apple's keys are fetched (`{base_url}/auth/keys`); empty is `https://appleid.apple.com`",
    ),
    (
        "social.google.client_ids",
        "Ludus only: OAuth client ids a Google ID token must name as its audience; empty accepts any, as Nakama does",
    ),
    (
        "social.google.base_url",
        "Ludus only, for tests and proxies: where Google's keys are fetched (`{base_url}/oauth2/v3/certs`); empty is `https://www.googleapis.com`",
    ),
    (
        "google_auth.credentials_json",
        "the text of a Google OAuth client file (the JSON that Google's cloud console downloads: a `web` or `installed` object with `client_id`, `client_secret`, `token_uri`, `redirect_uris`): Google sign-in then also takes a Play Games server auth code, traded at `token_uri` for an access token and checked at `{social.google.base_url}/games/v1/players/me`, as Nakama does; empty turns that path off; redacted in the console",
    ),
    (
        "social.facebook.base_url",
        "Ludus only, for tests and proxies: the Graph API (`{base_url}/v22.0/me`, `/v22.0/me/friends`); empty is `https://graph.facebook.com`",
    ),
    (
        "social.facebook_limited_login.app_id",
        "the Facebook app id Limited Login tokens must name as their audience; empty accepts any, as Nakama does",
    ),
    (
        "social.facebook_limited_login.base_url",
        "Ludus only, for tests and proxies: where Limited Login keys are fetched; empty is `https://limited.facebook.com`",
    ),
    (
        "social.facebook_instant_game.app_secret",
        "the app secret that signs Facebook Instant Games player info; empty turns that sign-in off",
    ),
    (
        "social.gamecenter.max_age_sec",
        "Ludus only: oldest Game Center signature accepted, in seconds either side of now; `0` accepts any age, as Nakama does",
    ),
    (
        "social.gamecenter.base_url",
        "Ludus only, for tests and proxies: fetch the checked Game Center key URL's path from here instead of Apple's host; empty fetches the URL itself",
    ),
    ("social.steam.publisher_key", "Steam Web API publisher key"),
    (
        "social.steam.app_id",
        "Steam app id; with the publisher key it turns Steam sign-in on",
    ),
    (
        "social.steam.base_url",
        "Ludus only, for tests and proxies: Steam's partner Web API; empty is `https://partner.steam-api.com`",
    ),
    (
        "social.timeout_ms",
        "Ludus only: longest wait for a platform's answer (keys, Graph API, Steam) before sign-in fails",
    ),
    (
        "social.max_imported_friends",
        "Ludus only: most friends one Facebook or Steam friend import reads from the platform (Graph API pages are followed until then); the rest are not imported",
    ),
    (
        "iap.apple.shared_password",
        "the app's App Store shared secret, sent with every receipt to `verifyReceipt`; empty turns Apple validation off",
    ),
    (
        "iap.apple.base_url",
        "Ludus only, for tests and proxies: Apple's production receipt service (`{base_url}/verifyReceipt`); empty is `https://buy.itunes.apple.com`",
    ),
    (
        "iap.apple.sandbox_base_url",
        "Ludus only, for tests and proxies: where a sandbox receipt is sent again (status 21007); empty is `https://sandbox.itunes.apple.com`",
    ),
    (
        "iap.apple.notifications_endpoint_id",
        "when set, App Store Server Notifications (v2) are received on the console port at `/v2/console/apple/notifications/{id}` (and `/v2/console/apple/subscriptions/{id}`); keep it secret, it is the only guard",
    ),
    (
        "iap.apple.root_ca",
        "Ludus only, for tests: PEM certificates that Apple's signed notifications and StoreKit 2 transactions must chain to; empty is Apple Root CA - G3",
    ),
    (
        "iap.google.client_email",
        "the Google service account that reads purchases (`client_email` of its JSON key); with the private key it turns Google validation on",
    ),
    (
        "iap.google.private_key",
        "the service account's PKCS#8 PEM private key (`private_key` of its JSON key), which signs its OAuth2 assertion",
    ),
    (
        "iap.google.base_url",
        "Ludus only, for tests and proxies: the Android Publisher API; empty is `https://androidpublisher.googleapis.com`",
    ),
    (
        "iap.google.oauth_base_url",
        "Ludus only, for tests and proxies: Google's token endpoint (`{oauth_base_url}/o/oauth2/token`); empty is `https://accounts.google.com`",
    ),
    (
        "iap.google.notifications_endpoint_id",
        "when set, Google Play Real-time Developer Notifications (Pub/Sub push) are received on the console port at `/v2/console/google/notifications/{id}` (and `/v2/console/google/subscriptions/{id}`); each is looked up with Google through the service account",
    ),
    (
        "iap.huawei.public_key",
        "the app's IAP public key from AppGallery Connect (base64 DER), which checks each purchase's signature locally",
    ),
    (
        "iap.huawei.client_id",
        "the app's OAuth client id for Huawei's order service",
    ),
    (
        "iap.huawei.client_secret",
        "the app's OAuth client secret; with the id and public key it turns Huawei validation on",
    ),
    (
        "iap.huawei.base_url",
        "Ludus only, for tests and proxies: Huawei's order service; empty picks Huawei's site by the purchase's account flag",
    ),
    (
        "iap.huawei.oauth_base_url",
        "Ludus only, for tests and proxies: Huawei's token endpoint (`{oauth_base_url}/oauth2/v3/token`); empty is `https://oauth-login.cloud.huawei.com`",
    ),
    (
        "iap.facebook_instant.app_secret",
        "the app secret that signs Facebook Instant Games payments; empty turns that validation off",
    ),
    (
        "iap.samsung.package_name",
        "when set, a Samsung Galaxy Store receipt must name this package; Samsung's receipt service needs no credentials",
    ),
    (
        "iap.samsung.base_url",
        "Ludus only, for tests and proxies: Samsung's receipt service (`{base_url}/iap/v6/receipt`); empty is `https://iap.samsungapps.com`",
    ),
    (
        "iap.timeout_ms",
        "Ludus only: longest wait for a store's answer (receipt check or token) before validation fails with 503",
    ),
    (
        "iap.max_list_limit",
        "Ludus only: most rows one purchase or subscription listing may ask for",
    ),
    (
        "party.max_size",
        "largest party; `party_create` asking for more is refused, `max_size` 0 gets this size; also bounds each party's pending join requests",
    ),
    (
        "party.max_per_session",
        "most parties one socket may be in or have asked to join at once",
    ),
    (
        "matchmaker.interval_sec",
        "seconds between matchmaking runs",
    ),
    (
        "matchmaker.max_tickets",
        "matchmaker tickets one session (or party) may hold at once",
    ),
    (
        "matchmaker.max_intervals",
        "runs a ticket waits for a group of its `max_count` before it accepts any size from its `min_count`",
    ),
    (
        "matchmaker.rev_precision",
        "mutual matching: a candidate's query must also match the searcher",
    ),
    (
        "shutdown_grace_sec",
        "at shutdown, how long authoritative matches go on after `match_terminate`",
    ),
    (
        "match.input_queue_size",
        "data messages waiting for a match's next tick; more are refused with an `error`",
    ),
    (
        "match.call_queue_size",
        "join attempts and signals waiting for a busy match; more are refused",
    ),
    (
        "match.deferred_queue_size",
        "deferred broadcasts one tick may queue",
    ),
    (
        "match.join_marker_deadline_ms",
        "an accepted join that does not complete in this time is dropped",
    ),
    (
        "match.max_empty_sec",
        "end an authoritative match empty for this long; `0` never",
    ),
    (
        "match.max_matches",
        "most live authoritative matches on this node",
    ),
    (
        "match.call_timeout_ms",
        "longest a join or signal waits for a busy match",
    ),
    (
        "match.executor_threads",
        "threads that run match handlers (their own, apart from socket I/O); `0` one per core",
    ),
    (
        "match.spread_ticks",
        "start each match's ticks at a phase of its own (one of ten, from its id; the first tick comes within one period of the match's start), so matches created together do not all tick in the same millisecond; `false` ticks every match one period after it starts, as Nakama does",
    ),
];

/// The page's text before the table.
const PREAMBLE: &str = "\
# Configuration

<!-- Generated by `ludus help --markdown` from crates/ludus-server/src/config/reference.rs; \
do not edit by hand: change the meanings there and run \
`cargo run -p ludus -- help --markdown > docs/configuration.md`. -->

Settings come from a YAML file (`--config ludus.yml`), then environment
variables (`LUDUS_SECTION_KEY`, e.g. `LUDUS_SOCKET_PORT=7351`), then flags
(`--socket.port 7351` or `--socket.port=7351`), each overriding the one
before. Key names are Nakama's where Nakama has the key. A list key takes a
comma list as a flag or variable (`--runtime.env a=1,b=2`).

**A Nakama config file loads unchanged.** A key that Nakama has and Ludus
does not support yet (listed at the end of this page) is ignored, and logged
once at start-up as a warning naming it; the same goes for such a key given
as a flag. A key that neither Nakama nor Ludus has, or a bad value, stops
start-up with a message naming the key and what it accepts.

`nk.get_config()` answers Nakama's shape (name, logger, session, socket,
social, runtime, iap, google_auth, satori), with Nakama's empty values for
the sections Ludus has no settings for; like Nakama it includes the server,
session and HTTP keys, since modules are the server's own code.

`logger.level: debug` logs one access line per HTTP request (method, path,
status, latency, user id). It costs throughput: every request then takes
hyper and the full router rather than the server's lean HTTP/1.1 lane.

";

/// The meaning of `key`, if the reference has one.
pub fn meaning(key: &str) -> Option<&'static str> {
    MEANINGS.iter().find(|(k, _)| *k == key).map(|(_, m)| *m)
}

/// `docs/configuration.md`: the preamble, every key with its default and
/// meaning, and the Nakama keys Ludus accepts and ignores.
pub fn markdown() -> String {
    let defaults: std::collections::BTreeMap<String, String> =
        Config::documented_keys().into_iter().collect();
    let mut out = String::from(PREAMBLE);
    out.push_str("| key | default | meaning |\n|---|---|---|\n");
    for (key, meaning) in MEANINGS {
        let default = match defaults.get(*key).map(String::as_str) {
            None | Some("") => "empty".to_owned(),
            Some(d) => format!("`{d}`"),
        };
        let _ = writeln!(out, "| `{key}` | {default} | {meaning} |");
    }
    out.push_str(
        "\n## Nakama keys accepted and ignored\n\n\
         These keys of Nakama 3.40's configuration load without error and are \
         logged once at start-up as ignored:\n\n",
    );
    let ignored: Vec<String> = NAKAMA_KEYS
        .iter()
        .filter(|k| !defaults.contains_key(**k) && **k != "config")
        .map(|k| format!("`{k}`"))
        .collect();
    let mut line = String::new();
    for item in ignored {
        if !line.is_empty() && line.len() + item.len() + 2 > 76 {
            out.push_str(line.trim_end());
            out.push('\n');
            line.clear();
        }
        line.push_str(&item);
        line.push_str(", ");
    }
    out.push_str(line.trim_end().trim_end_matches(','));
    out.push_str(".\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_has_a_meaning_and_every_meaning_a_key() {
        let keys: Vec<String> = Config::documented_keys()
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        let missing: Vec<&String> = keys.iter().filter(|k| meaning(k).is_none()).collect();
        assert!(
            missing.is_empty(),
            "config keys without a meaning in config/reference.rs: {missing:?}"
        );
        let stale: Vec<&str> = MEANINGS
            .iter()
            .map(|(k, _)| *k)
            .filter(|k| !keys.iter().any(|key| key == k))
            .collect();
        assert!(
            stale.is_empty(),
            "meanings of keys the config does not have: {stale:?}"
        );
    }

    #[test]
    fn docs_configuration_md_is_generated_from_the_code() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/configuration.md");
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == markdown(),
            "docs/configuration.md is stale: run `cargo run -p ludus -- help --markdown > docs/configuration.md`"
        );
    }

    #[test]
    fn defaults_come_from_the_config() {
        let page = markdown();
        assert!(page.contains("| `socket.port` | `7350` |"), "{page}");
        assert!(page.contains("| `database.address` | empty |"), "{page}");
        // A Nakama key Ludus ignores is listed; one of Ludus's keys is not.
        let ignored = &page[page.find("## Nakama keys").unwrap()..];
        assert!(ignored.contains("`console.mfa.admin_account_enabled`"));
        assert!(!ignored.contains("`console.port`"));
        assert!(!ignored.contains("`socket.port`"));
    }
}
