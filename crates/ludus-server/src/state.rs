//! Shared state handed to every request handler.

use std::sync::Arc;

use ludus_core::accounts::AccountService;
use ludus_core::leaderboard_service::LeaderboardService;
use ludus_core::social_service::SocialService;
use ludus_core::storage_service::StorageService;

use crate::config::Config;

/// Cheap to clone: everything lives behind one `Arc` each.
#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    pub accounts: Arc<AccountService>,
    /// Storage objects, wallets and the ledger.
    pub storage: Arc<StorageService>,
    /// Friends and groups.
    pub social: Arc<SocialService>,
    pub leaderboards: Arc<LeaderboardService>,
    /// Realtime sockets (`/ws`).
    pub sockets: Arc<crate::socket::Sockets>,
    /// Lua and native modules: RPCs and hooks (`state.runtime.rpc(ctx, id, payload)`).
    pub runtime: Arc<ludus_runtime::Runtime>,
}
