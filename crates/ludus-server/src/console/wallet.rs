//! A game account's wallet ledger in the console
//! (`GET /v2/console/account/{id}/wallet`, Nakama's `GetWalletLedger`),
//! newest first, behind `ACCOUNT_WALLET` read, and the deletion of one entry
//! (`DeleteWalletLedger`, `ACCOUNT_WALLET` delete). The wallet itself is in
//! the account (`GET /v2/console/account/{id}`).

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{delete, get};
use ludus_core::console_acl::{Level, Need, Resource};
use ludus_core::wallet::LedgerEntry;
use serde::Serialize;

use super::accounts::account_id;
use super::{ConsoleRoutes, ConsoleState};
use crate::convert;
use crate::error::HttpError;
use crate::extract::QueryParams;

/// Nakama's bounds on a ledger page; Ludus takes the largest when the
/// caller sends none, where Nakama refuses the request.
const MAX_LIMIT: i32 = 100;

pub(super) fn routes(r: &mut ConsoleRoutes) {
    r.add(
        "/v2/console/account/{account_id}/wallet",
        Need::Permission(Resource::AccountWallet, Level::Read),
        get(ledger),
    );
    r.add(
        "/v2/console/account/{account_id}/wallet/{wallet_id}",
        Need::Permission(Resource::AccountWallet, Level::Delete),
        delete(remove),
    );
}

/// Deletes one ledger entry of the account; the wallet is not changed, as
/// in Nakama.
async fn remove(
    State(state): State<ConsoleState>,
    Path((id, entry)): Path<(String, String)>,
) -> Result<Response, HttpError> {
    let id = account_id(&id)?;
    let entry = uuid::Uuid::parse_str(&entry).map_err(|_| {
        HttpError::invalid(format!("wallet ledger id {entry:?} is not a valid uuid"))
    })?;
    state.app.storage.wallet_ledger_delete(id, entry).await?;
    Ok(crate::api::empty())
}

/// Nakama's console `WalletLedger`.
#[derive(Serialize)]
struct WalletLedger {
    id: String,
    user_id: String,
    changeset: String,
    metadata: String,
    create_time: ludus_proto::Timestamp,
    update_time: ludus_proto::Timestamp,
}

/// Nakama's console `WalletLedgerList`.
#[derive(Serialize)]
struct WalletLedgerList {
    items: Vec<WalletLedger>,
    next_cursor: String,
    prev_cursor: String,
}

fn item(e: LedgerEntry) -> WalletLedger {
    WalletLedger {
        id: e.id.to_string(),
        user_id: e.user_id.to_string(),
        changeset: e.changeset,
        metadata: e.metadata,
        create_time: convert::timestamp(e.create_time_us / 1_000_000),
        update_time: convert::timestamp(e.update_time_us / 1_000_000),
    }
}

async fn ledger(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let id = account_id(&id)?;
    let limit = match query.int32("limit")?.map(|l| l.value) {
        None => MAX_LIMIT,
        Some(limit @ 1..=MAX_LIMIT) => limit,
        Some(_) => {
            return Err(HttpError::invalid(format!(
                "expects a limit value between 1 and {MAX_LIMIT}"
            )));
        }
    };
    state.app.accounts.account(id).await?;
    let cursor = query.get("cursor").unwrap_or_default();
    let page = state
        .app
        .storage
        .wallet_ledger_list(id, limit as usize, cursor)
        .await?;
    Ok(crate::api::json(&WalletLedgerList {
        items: page.entries.into_iter().map(item).collect(),
        next_cursor: page.cursor.unwrap_or_default(),
        prev_cursor: String::new(),
    }))
}
