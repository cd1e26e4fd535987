//! The `/ws` endpoint: checks the format and the session token before the
//! upgrade (400 and 401 as Nakama), enforces the per-node connection limit,
//! configures the WebSocket (read limit, small buffers, bounded write
//! buffer) and hands the socket to [`connection`].
//!
//! [`Sockets`] is the realtime state shared with the rest of the server: the
//! `ludus-realtime` layer, the module runtime its messages reach, the live
//! socket count and shutdown. [`MatchRuntime`] is the threads authoritative
//! matches run on.

mod connection;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use ludus_core::Code;
use ludus_realtime::liveness::LivenessConfig;
use ludus_realtime::{CloseReason, Connect, Format, Realtime, RealtimeConfig};
use ludus_runtime::Runtime;
use tokio::sync::Notify;
use uuid::Uuid;

use crate::config::Config;
use crate::error::HttpError;
use crate::extract::QueryParams;
use crate::state::AppState;

/// Bytes tungstenite keeps for reading. Small, because it is allocated
/// eagerly for every socket; a larger message grows it while it arrives.
const READ_BUFFER_BYTES: usize = 512;
/// Frames are coalesced until this many bytes, then written.
const WRITE_BUFFER_BYTES: usize = 4096;
/// Bound of tungstenite's write buffer, which grows only while writes fail.
const MAX_WRITE_BUFFER_BYTES: usize = 1 << 20;

/// Socket settings, read once from the config.
#[derive(Debug, Clone)]
pub(crate) struct SocketSettings {
    pub max_message_size: usize,
    pub liveness: LivenessConfig,
    pub write_wait: Duration,
    pub max_connections: usize,
    pub max_pending_requests: usize,
}

impl SocketSettings {
    fn from_config(c: &Config) -> SocketSettings {
        let s = &c.socket;
        SocketSettings {
            max_message_size: s.max_message_size_bytes,
            liveness: LivenessConfig {
                ping_period: Duration::from_millis(s.ping_period_ms),
                pong_wait: Duration::from_millis(s.pong_wait_ms),
                idle_timeout: (s.ws_idle_timeout_ms > 0)
                    .then(|| Duration::from_millis(s.ws_idle_timeout_ms)),
            },
            write_wait: Duration::from_millis(s.write_wait_ms),
            max_connections: s.max_connections,
            max_pending_requests: s.max_pending_requests,
        }
    }
}

/// The realtime side of the server.
pub struct Sockets {
    pub realtime: Arc<Realtime>,
    /// The module runtime socket messages reach (RPCs, hooks).
    pub modules: Arc<Runtime>,
    /// Declared after `realtime`, so match tasks stop after it is gone.
    _match_runtime: MatchRuntime,
    settings: SocketSettings,
    open: AtomicUsize,
    closing: AtomicBool,
    all_closed: Notify,
}

impl Sockets {
    /// The realtime layer's settings, from `socket.*`, `session.*`,
    /// `party.*`, `matchmaker.*` and `match.*`; its matches run on
    /// `match_runtime`.
    pub fn realtime_config(config: &Config, match_runtime: &MatchRuntime) -> RealtimeConfig {
        RealtimeConfig {
            outgoing_queue_size: config.socket.outgoing_queue_size,
            single_socket: config.session.single_socket,
            node: config.name.clone(),
            party: config.party.clone(),
            single_party: config.session.single_party,
            encryption_key: config.session.encryption_key.clone(),
            matchmaker: config.matchmaker.clone(),
            matches: config.matches.clone(),
            match_spawner: Some(match_runtime.handle()),
        }
    }

    pub fn new(
        config: &Config,
        realtime: Arc<Realtime>,
        modules: Arc<Runtime>,
        match_runtime: MatchRuntime,
    ) -> Sockets {
        Sockets {
            realtime,
            modules,
            _match_runtime: match_runtime,
            settings: SocketSettings::from_config(config),
            open: AtomicUsize::new(0),
            closing: AtomicBool::new(false),
            all_closed: Notify::new(),
        }
    }

    /// Sockets open now.
    pub fn open_count(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// Refuses new sockets, asks every open one to close, and waits for them
    /// to finish (at most `grace`).
    pub async fn close_all(&self, grace: Duration) {
        self.closing.store(true, Ordering::Release);
        self.realtime.hub().disconnect_all(CloseReason::Shutdown);
        let wait = async {
            loop {
                let notified = self.all_closed.notified();
                if self.open_count() == 0 {
                    return;
                }
                notified.await;
            }
        };
        if tokio::time::timeout(grace, wait).await.is_err() {
            tracing::warn!(
                open = self.open_count(),
                "sockets still open after the grace period"
            );
        }
    }

    /// Counts one socket in; `None` when the node is full or shutting down.
    fn admit(self: &Arc<Self>) -> Option<OpenSocket> {
        if self.closing.load(Ordering::Acquire) {
            return None;
        }
        let before = self.open.fetch_add(1, Ordering::AcqRel);
        let guard = OpenSocket(self.clone());
        let max = self.settings.max_connections;
        if max > 0 && before >= max {
            return None; // the guard counts it out again
        }
        Some(guard)
    }
}

/// One counted socket; counts itself out when dropped.
struct OpenSocket(Arc<Sockets>);

impl Drop for OpenSocket {
    fn drop(&mut self) {
        if self.0.open.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.all_closed.notify_waiters();
        }
    }
}

/// `GET /ws?token=…&format=json|protobuf&status=true|false`.
pub(crate) async fn upgrade(
    State(state): State<AppState>,
    query: QueryParams,
    headers: HeaderMap,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let Some(format) = Format::from_query(query.get("format")) else {
        return HttpError::invalid("invalid format parameter, use format=json or format=protobuf")
            .into_response();
    };
    let token = query
        .get("token")
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .or_else(|| bearer(&headers));
    let Some(token) = token else {
        return HttpError::unauthenticated(
            "auth token required, send it as ?token= or `Authorization: Bearer <token>`",
        )
        .into_response();
    };
    let caller = match state.accounts.verify_access(token.trim()) {
        Ok(c) => c,
        Err(e) => return HttpError::from(e).into_response(),
    };
    let status = match query.bool("status") {
        Ok(s) => s.unwrap_or(false),
        Err(e) => return e.into_response(),
    };
    let ws = match ws {
        Ok(ws) => ws,
        Err(rejection) => {
            return HttpError::invalid(format!("websocket upgrade required on /ws: {rejection}"))
                .into_response();
        }
    };
    let sockets = state.sockets.clone();
    let Some(open) = sockets.admit() else {
        return HttpError::with_status(
            StatusCode::SERVICE_UNAVAILABLE,
            Code::Unavailable,
            "too many open sockets on this server, try again later",
        )
        .into_response();
    };
    let settings = &sockets.settings;
    let connect = Connect {
        session_id: Uuid::new_v4(),
        user_id: caller.user_id,
        username: caller.claims.username,
        format,
        status,
        vars: caller.claims.vars,
        expiry: caller.claims.expires_at,
        lang: query.get("lang").unwrap_or("en").to_owned(),
    };
    // Registered before the 101 answer, so sessions register in the order
    // their upgrades were answered (single_socket closes the older one).
    let session = sockets.realtime.connect(connect);
    let failed = (sockets.clone(), session.clone());
    ws.read_buffer_size(READ_BUFFER_BYTES)
        .write_buffer_size(WRITE_BUFFER_BYTES)
        .max_write_buffer_size(MAX_WRITE_BUFFER_BYTES)
        .max_message_size(settings.max_message_size)
        .max_frame_size(settings.max_message_size)
        .on_failed_upgrade(move |error| {
            tracing::debug!(%error, "websocket upgrade failed");
            failed.0.realtime.disconnect(&failed.1);
        })
        .on_upgrade(move |socket| connection::run(socket, open, session))
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, rest) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("Bearer")
        .then(|| rest.trim().to_owned())
}

/// The threads authoritative matches run on: a runtime of their own, so a
/// slow match handler never holds up socket I/O.
pub struct MatchRuntime(Option<tokio::runtime::Runtime>);

impl MatchRuntime {
    /// `threads` 0: one per core (`match.executor_threads`).
    pub fn start(threads: usize) -> MatchRuntime {
        let threads = if threads == 0 {
            std::thread::available_parallelism().map_or(2, |n| n.get())
        } else {
            threads
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("ludus-match")
            .enable_time()
            .build()
            .expect("cannot start the match threads: the system refused new threads");
        MatchRuntime(Some(runtime))
    }

    fn handle(&self) -> tokio::runtime::Handle {
        self.0
            .as_ref()
            .expect("the match runtime lives as long as the sockets")
            .handle()
            .clone()
    }
}

impl Drop for MatchRuntime {
    fn drop(&mut self) {
        // Dropping a runtime from async code would block; let it go quietly.
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}
