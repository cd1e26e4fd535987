//! The realtime state shared with the rest of the server ([`Sockets`]): the
//! `ludus-realtime` layer, the module runtime its messages reach, the live
//! socket count and shutdown; the socket settings read from the config; and
//! [`MatchRuntime`], the threads authoritative matches run on.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use ludus_realtime::liveness::LivenessConfig;
use ludus_realtime::{CloseReason, Realtime, RealtimeConfig};
use ludus_runtime::Runtime;
use tokio::sync::Notify;

use crate::config::Config;

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
    /// The same, as the realtime layer calls it: with the socket's RPCs
    /// recorded when metrics are exported.
    pub(super) socket_modules: Arc<dyn ludus_realtime::Modules>,
    /// Declared after `realtime`, so match tasks stop after it is gone.
    _match_runtime: MatchRuntime,
    pub(super) settings: SocketSettings,
    open: AtomicUsize,
    /// Socket counts and messages, when metrics are exported.
    pub(super) metrics: Option<Arc<crate::metrics::ServerMetrics>>,
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
        metrics: Option<Arc<crate::metrics::ServerMetrics>>,
    ) -> Sockets {
        let socket_modules: Arc<dyn ludus_realtime::Modules> = match &metrics {
            Some(metrics) => Arc::new(crate::metrics::socket_rpc::MeteredModules {
                runtime: modules.clone(),
                metrics: metrics.clone(),
            }),
            None => modules.clone(),
        };
        Sockets {
            realtime,
            modules,
            socket_modules,
            _match_runtime: match_runtime,
            settings: SocketSettings::from_config(config),
            open: AtomicUsize::new(0),
            metrics,
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
    pub(super) fn admit(self: &Arc<Self>) -> Option<OpenSocket> {
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

/// One counted socket; counts itself out when dropped.
pub(super) struct OpenSocket(pub(super) Arc<Sockets>);

impl Drop for OpenSocket {
    fn drop(&mut self) {
        if self.0.open.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.all_closed.notify_waiters();
        }
    }
}
