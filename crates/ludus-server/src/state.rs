//! Shared state handed to every request handler.

use std::sync::Arc;

use ludus_core::accounts::AccountService;
use ludus_core::leaderboard_service::LeaderboardService;
use ludus_core::social_service::SocialService;
use ludus_core::storage_service::StorageService;

use crate::config::Config;

/// Handed to every handler: axum clones the state for each request it
/// routes, so it is one `Arc` (one reference count to bump and drop per
/// request, not one per service; the drop alone was 0.7 % of a storage
/// request's samples). Fields are reached through `Deref`.
#[derive(Clone)]
pub struct AppState(Arc<Services>);

impl AppState {
    pub fn new(services: Services) -> Self {
        AppState(Arc::new(services))
    }
}

impl std::ops::Deref for AppState {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.0
    }
}

/// What [`AppState`] holds, each service behind an `Arc` of its own so
/// background tasks can keep just the one they need.
pub struct Services {
    pub config: Arc<Config>,
    pub accounts: Arc<AccountService>,
    /// Storage objects, wallets and the ledger.
    pub storage: Arc<StorageService>,
    /// Friends and groups.
    pub social: Arc<SocialService>,
    pub leaderboards: Arc<LeaderboardService>,
    /// In-app purchases and subscriptions.
    pub purchases: Arc<ludus_core::purchase::PurchaseService>,
    /// Realtime sockets (`/ws`).
    pub sockets: Arc<crate::socket::Sockets>,
    /// Lua and native modules: RPCs and hooks (`state.runtime.rpc(ctx, id, payload)`).
    pub runtime: Arc<ludus_runtime::Runtime>,
    /// The cluster bus (`LocalBus` on one node): the console's wipes tell
    /// the other nodes through it.
    pub bus: Arc<dyn ludus_realtime::Bus>,
    /// What requests and sockets record, when `metrics.prometheus_port`
    /// exports it; `None` records nothing.
    pub metrics: Option<Arc<crate::metrics::ServerMetrics>>,
}
