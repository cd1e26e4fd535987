//! Start-up and shutdown: open the store, load sessions, bind the listener,
//! serve until told to stop, then finish in-flight requests and close the
//! database.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ludus_core::accounts::AccountService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::state::{AppState, Services};

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Store(#[from] ludus_store::OpenError),
    #[error("cannot load sessions from the database: {0}")]
    Sessions(#[from] ludus_core::StoreError),
    #[error(
        "cannot listen on {addr}: {source}; is another server running there? change socket.port or socket.address"
    )]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Runtime(#[from] ludus_runtime::LoadError),
    #[error("cannot fill the storage indexes from the database: {}", .0.message)]
    StorageIndexes(ludus_core::ApiError),
    #[error("cannot load the leaderboards from the database: {}", .0.message)]
    Leaderboards(ludus_core::ApiError),
    #[error("cannot join the cluster: {0}")]
    Cluster(#[from] ludus_realtime::cluster::ClusterError),
}

/// How long shutdown waits for in-flight requests before closing anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// A server that is accepting requests.
pub struct RunningServer {
    local_addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: JoinHandle<std::io::Result<()>>,
    /// The matchmaker's processing loop; ends when `stop` is sent.
    matchmaker: JoinHandle<()>,
    /// Leaderboard resets and tournament ends; ends when `stop` is sent.
    leaderboard_schedules: JoinHandle<()>,
    /// The Prometheus exporter (`metrics.prometheus_port`); ends on `stop`.
    exporter: Option<JoinHandle<()>>,
    /// The gRPC listener (`socket.grpc`) and its address; ends on `stop`.
    grpc: Option<(SocketAddr, JoinHandle<()>)>,
    /// The admin console's listener (`console.port`); ends on `stop`.
    console_addr: SocketAddr,
    console: JoinHandle<()>,
    /// This node's links to the cluster bus (`cluster.redis`), if any.
    cluster: Option<ludus_realtime::cluster::ClusterHandle>,
    state: AppState,
}

/// Opens the store and starts serving; returns once the listener is bound.
pub async fn start(config: Config) -> Result<RunningServer, StartError> {
    start_with(config, ludus_runtime::NativeModule::new()).await
}

/// [`start`] with a native module's RPCs and hooks (see the `ludus` library).
pub async fn start_with(
    config: Config,
    native: ludus_runtime::NativeModule,
) -> Result<RunningServer, StartError> {
    let store = ludus_store::open(
        config.database.address(),
        &config.data_dir,
        config.store_options(),
    )
    .await?;
    tracing::info!(backend = store.backend(), "database ready");
    // A cluster node takes its name first: revocations and the realtime
    // layer go through its bus.
    let mut cluster = match config.cluster.enabled() {
        true => {
            Some(ludus_realtime::cluster::Cluster::connect(&config.cluster, &config.name).await?)
        }
        false => None,
    };
    let bus: Arc<dyn ludus_realtime::Bus> = match &cluster {
        Some(c) => c.bus(),
        None => Arc::new(ludus_realtime::LocalBus),
    };
    let social_http = crate::runtime::HyperClient::new(&config.runtime)
        .map_err(|e| StartError::Runtime(ludus_runtime::LoadError::Setup(e)))?;
    let social_http: Arc<dyn ludus_core::social_auth::SocialHttp> = Arc::new(social_http);
    let social = ludus_core::social_auth::SocialVerifier::new(
        config.social_settings(),
        Some(social_http.clone()),
    );
    // Purchase validation asks the stores through the same client.
    let purchases = Arc::new(ludus_core::purchase::PurchaseService::new(
        config.iap.clone(),
        store.clone(),
        Some(social_http),
    ));
    let mut accounts = AccountService::new(store, config.session_settings())
        .await?
        .with_social(Arc::new(social));
    if cluster.is_some() {
        // Every node checks tokens against its own list: logouts go to all.
        accounts = accounts.with_feed(Arc::new(BusRevocations(bus.clone())));
    }
    let addr = format!("{}:{}", config.socket.address, config.socket.port);
    let listener = TcpListener::bind(&addr)
        .await
        .map_err(|source| StartError::Bind {
            addr: addr.clone(),
            source,
        })?;
    let local_addr = listener
        .local_addr()
        .map_err(|source| StartError::Bind { addr, source })?;
    // Built in dependency order: the realtime layer (its matches on threads
    // of their own), the module runtime over it, then the sockets, which
    // reach the modules through the runtime.
    let accounts = Arc::new(accounts);
    let match_runtime = crate::socket::MatchRuntime::start(config.matches.executor_threads);
    // A cluster node delivers to other nodes through Redis; a single node
    // keeps everything in process.
    let realtime_config = crate::socket::Sockets::realtime_config(&config, &match_runtime);
    let hub = ludus_realtime::Hub::with_bus(
        &realtime_config.node,
        realtime_config.outgoing_queue_size,
        realtime_config.single_socket,
        bus.clone(),
    );
    // Other nodes' broadcasts, applied once every service exists (below).
    let heard = cluster.as_mut().and_then(|c| c.broadcasts());
    let realtime = Arc::new(ludus_realtime::Realtime::with_hub(
        realtime_config,
        accounts.store().clone(),
        Arc::new(hub),
    ));
    let cluster = cluster.map(|c| c.start(realtime.clone()));
    // Friends and groups for REST and modules; online flags, notifications
    // and group chat through the realtime layer.
    let social = Arc::new(ludus_core::social_service::SocialService::new(
        accounts.store().clone(),
        realtime.clone(),
    ));
    // One storage service for REST and modules, its search indexes included.
    let storage = Arc::new(ludus_core::storage_service::StorageService::new(
        accounts.store().clone(),
        ludus_core::storage_service::StorageLimits::default(),
    ));
    // Leaderboards and tournaments, with the rank index of each board's
    // current period built before the first request.
    let leaderboards = Arc::new(ludus_core::leaderboard_service::LeaderboardService::new(
        accounts.store().clone(),
    ));
    leaderboards
        .load()
        .await
        .map_err(StartError::Leaderboards)?;
    // One metrics handle: modules record their own metrics into it.
    let metrics = crate::metrics::ServerMetrics::core(&config);
    let runtime = Arc::new(
        crate::runtime::start(
            &config,
            accounts.clone(),
            storage.clone(),
            social.clone(),
            leaderboards.clone(),
            realtime.clone(),
            purchases.clone(),
            native,
            metrics.clone(),
        )
        .await?,
    );
    runtime.start_events();
    // Modules registered their storage indexes while loading: fill them now,
    // with the modules' filters (held weakly: the runtime holds `storage`).
    let filter: std::sync::Weak<dyn ludus_core::storage_index::IndexFilter> =
        Arc::downgrade(&runtime) as _;
    storage
        .start_indexes(Some(filter))
        .await
        .map_err(StartError::StorageIndexes)?;
    // Metrics know the RPC ids once the modules registered them.
    let metrics = (config.metrics.prometheus_port != 0).then(|| {
        Arc::new(crate::metrics::ServerMetrics::new(
            metrics,
            runtime.rpc_ids(),
        ))
    });
    let sockets = Arc::new(crate::socket::Sockets::new(
        &config,
        realtime,
        runtime.clone(),
        match_runtime,
        metrics.clone(),
    ));
    let state = AppState::new(Services {
        config: Arc::new(config),
        storage,
        social,
        leaderboards,
        purchases,
        accounts,
        sockets,
        runtime,
        bus,
        metrics,
    });
    if let Some(heard) = heard {
        tokio::spawn(apply_broadcasts(state.clone(), heard));
    }
    let app = crate::api::router(state.clone());
    let (stop, stopped) = watch::channel(false);
    let matchmaker = {
        let sockets = state.sockets.clone();
        let stopped = stopped.clone();
        let modules: Arc<dyn ludus_realtime::Modules> = sockets.modules.clone();
        tokio::spawn(async move { sockets.realtime.matchmaker.run(modules, stopped).await })
    };
    let leaderboard_schedules = {
        let hooks: Arc<dyn ludus_core::leaderboard_service::ScheduleHooks> = state.runtime.clone();
        tokio::spawn(
            state
                .leaderboards
                .clone()
                .run_scheduler(hooks, stopped.clone()),
        )
    };
    let exporter = match &state.metrics {
        Some(_) => {
            let addr = format!(
                "{}:{}",
                state.config.socket.address, state.config.metrics.prometheus_port
            );
            let listener = TcpListener::bind(&addr)
                .await
                .map_err(|source| StartError::Bind { addr, source })?;
            tracing::info!(addr = %listener.local_addr().map_or_else(|_| String::new(), |a| a.to_string()), "serving Prometheus metrics");
            Some(tokio::spawn(crate::metrics::exporter::serve(
                listener,
                state.clone(),
                stopped.clone(),
            )))
        }
        None => None,
    };
    let grpc = match state.config.socket.grpc {
        true => {
            // Nakama's layout: gRPC just below the REST port.
            let port = state.config.socket.port.saturating_sub(1);
            let addr = format!("{}:{port}", state.config.socket.address);
            let listener = TcpListener::bind(&addr)
                .await
                .map_err(|source| StartError::Bind { addr, source })?;
            let grpc_addr = listener.local_addr().map_err(|source| StartError::Bind {
                addr: format!("{}:{port}", state.config.socket.address),
                source,
            })?;
            tracing::info!(addr = %grpc_addr, "serving the gRPC API");
            let task = tokio::spawn(crate::grpc::serve(
                listener,
                app.clone(),
                state.config.socket.max_request_size_bytes,
                stopped.clone(),
            ));
            Some((grpc_addr, task))
        }
        false => None,
    };
    let handshake_timeout = Duration::from_millis(state.config.socket.handshake_timeout_ms);
    let (console_addr, console) =
        start_console(&state, app.clone(), handshake_timeout, stopped.clone()).await?;
    // With debug events on, every request goes through the router's access
    // log rather than the lane.
    let lane = (!tracing::enabled!(tracing::Level::DEBUG))
        .then(|| Arc::new(crate::lane::Lane::new(app.clone(), state.clone())));
    let task = tokio::spawn(async move {
        crate::serve::serve(listener, app, lane, handshake_timeout, stopped).await;
        Ok(())
    });
    tracing::info!(%local_addr, node = %state.config.name, "listening for clients");
    Ok(RunningServer {
        local_addr,
        stop,
        task,
        matchmaker,
        leaderboard_schedules,
        exporter,
        grpc,
        console_addr,
        console,
        cluster,
        state,
    })
}

/// Binds the admin console's listener and serves its router there. Nakama's
/// public defaults of the root user are refused by the configuration unless
/// the console listens on a loopback interface; there they are warned about.
async fn start_console(
    state: &AppState,
    client_api: axum::Router,
    handshake_timeout: Duration,
    stopped: watch::Receiver<bool>,
) -> Result<(SocketAddr, JoinHandle<()>), StartError> {
    let config = &state.config.console;
    let addr = format!("{}:{}", config.address(&state.config.socket), config.port);
    let listener = TcpListener::bind(&addr)
        .await
        .map_err(|source| StartError::Bind {
            addr: addr.clone(),
            source,
        })?;
    let local = listener
        .local_addr()
        .map_err(|source| StartError::Bind { addr, source })?;
    for key in config.insecure_defaults() {
        tracing::warn!(
            param = key,
            "INSECURE: the console accepts Nakama's public default for this key; anyone who can reach {local} can sign in as the root console user; set your own before exposing it"
        );
    }
    let service = ludus_core::console_service::ConsoleService::new(
        state.accounts.store().clone(),
        state.config.console_settings(),
    );
    let app = crate::console::router(crate::console::ConsoleState {
        app: state.clone(),
        console: Arc::new(service),
        client_api,
        started_ms: crate::console::now_ms(),
    });
    tracing::info!(addr = %local, "serving the admin console");
    let task = tokio::spawn(crate::serve::serve(
        listener,
        app,
        None,
        handshake_timeout,
        stopped,
    ));
    Ok((local, task))
}

/// This node's revocations, for the other nodes of its cluster.
struct BusRevocations(Arc<dyn ludus_realtime::Bus>);

impl ludus_core::revocation::RevocationFeed for BusRevocations {
    fn revoked(&self, revoked: &ludus_core::revocation::Revoked) {
        self.0.broadcast(revoked.encode().into());
    }
}

/// Applies what other nodes broadcast: revocations, and console wipes
/// (this node drops what its storage indexes and leaderboards hold of the
/// wiped data); when some may have been missed (the bus was down), reads
/// the stored revocations again.
async fn apply_broadcasts(
    state: AppState,
    mut heard: tokio::sync::mpsc::UnboundedReceiver<bytes::Bytes>,
) {
    use ludus_core::revocation::Revoked;
    while let Some(payload) = heard.recv().await {
        if payload.is_empty() {
            if let Err(error) = state.accounts.reload_revocations().await {
                tracing::warn!(%error, "cannot reload revocations after the cluster bus came back");
            }
            continue;
        }
        let text = std::str::from_utf8(&payload).unwrap_or_default();
        if let Some(what) = crate::console::wiped(text) {
            if let Err(error) = crate::console::after_wipe(&state, what).await {
                tracing::warn!(error = %error.message, "cannot drop another node's wiped data from this node");
            }
            continue;
        }
        match Revoked::decode(text) {
            Some(r) => state.accounts.apply_revoked(r),
            None => tracing::warn!("ignoring a broadcast that is neither a revocation nor a wipe"),
        }
    }
}

impl RunningServer {
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Where the gRPC API listens, when `socket.grpc` is on.
    pub fn grpc_addr(&self) -> Option<SocketAddr> {
        self.grpc.as_ref().map(|(addr, _)| *addr)
    }

    /// Where the admin console listens.
    pub fn console_addr(&self) -> SocketAddr {
        self.console_addr
    }

    /// Stops accepting, lets in-flight requests finish (up to a grace period)
    /// and closes the database.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        // The matchmaker loop sees `stop` at once (a run in progress finishes).
        if tokio::time::timeout(SHUTDOWN_GRACE, self.matchmaker)
            .await
            .is_err()
        {
            tracing::warn!("matchmaker still running after the grace period");
        }
        // A schedule hook in progress finishes; no new one starts.
        if tokio::time::timeout(SHUTDOWN_GRACE, self.leaderboard_schedules)
            .await
            .is_err()
        {
            tracing::warn!("leaderboard schedules still running after the grace period");
        }
        if let Some(exporter) = self.exporter {
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, exporter).await;
        }
        if let Some((_, grpc)) = self.grpc {
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, grpc).await;
        }
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, self.console).await;
        // Matches get their match_terminate while their players are still there.
        self.state
            .sockets
            .realtime
            .matches
            .shutdown(Duration::from_secs(self.state.config.shutdown_grace_sec))
            .await;
        // Upgraded sockets outlive their HTTP request: close them explicitly.
        self.state.sockets.close_all(SHUTDOWN_GRACE).await;
        // Their leaves have been queued for the other nodes: send them, then
        // give the node's name back.
        if let Some(cluster) = self.cluster {
            cluster.leave(Duration::from_secs(2)).await;
        }
        let mut task = self.task;
        match tokio::time::timeout(SHUTDOWN_GRACE, &mut task).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => tracing::error!(error = %e, "server stopped with an error"),
            Ok(Err(e)) => tracing::error!(error = %e, "server task failed"),
            Err(_) => {
                tracing::warn!(
                    grace_secs = SHUTDOWN_GRACE.as_secs(),
                    "requests still running after the grace period, closing anyway"
                );
                task.abort();
            }
        }
        // In-flight RPCs have finished: run the modules' shutdown hooks while
        // the store is still open for them.
        self.state.runtime.shutdown().await;
        self.state.accounts.store().close().await;
        tracing::info!("shutdown complete");
    }

    /// Serves until SIGINT or SIGTERM, then shuts down gracefully.
    pub async fn run_until_signal(self) {
        wait_for_signal().await;
        tracing::info!("shutting down: finishing in-flight requests");
        self.shutdown().await;
    }
}

async fn wait_for_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(
            tokio::signal::unix::SignalKind::terminate(),
        ) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch SIGTERM, only SIGINT stops the server");
                let _ = ctrl_c.await;
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
