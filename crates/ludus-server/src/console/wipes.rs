//! The console's wipes of game data, each one transaction in the store,
//! behind Nakama's permissions: every account (`DELETE /v2/console/account`,
//! `ALL_ACCOUNTS` delete), every storage object (`DELETE
//! /v2/console/storage`, `ALL_STORAGE` delete), all game data (`DELETE
//! /v2/console/all`, `ALL_DATA` delete) and chat messages by age or id
//! (`DELETE /v2/console/message`, `CHANNEL_MESSAGE` delete). What the
//! server holds in memory of the wiped data (rank indexes, storage search
//! indexes, sockets of deleted accounts, on every node of a cluster) is
//! brought in line afterwards.

use axum::extract::State;
use axum::response::Response;
use axum::routing::delete;
use ludus_core::console_acl::{Level, Need, Resource};
use ludus_core::console_ops::Wipe;
use serde::Serialize;
use uuid::Uuid;

use super::{ConsoleRoutes, ConsoleState};
use crate::error::HttpError;
use crate::extract::QueryParams;

pub(super) fn routes(r: &mut ConsoleRoutes) {
    let need = |resource| Need::Permission(resource, Level::Delete);
    r.add(
        "/v2/console/account",
        need(Resource::AllAccounts),
        delete(all_accounts),
    );
    r.add(
        "/v2/console/storage",
        need(Resource::AllStorage),
        delete(all_storage),
    );
    r.add("/v2/console/all", need(Resource::AllData), delete(all_data));
    r.add(
        "/v2/console/message",
        need(Resource::ChannelMessage),
        delete(messages),
    );
}

async fn all_accounts(State(state): State<ConsoleState>) -> Result<Response, HttpError> {
    wipe(&state, Wipe::Accounts).await
}

async fn all_storage(State(state): State<ConsoleState>) -> Result<Response, HttpError> {
    wipe(&state, Wipe::Storage).await
}

async fn all_data(State(state): State<ConsoleState>) -> Result<Response, HttpError> {
    wipe(&state, Wipe::AllData).await
}

async fn wipe(state: &ConsoleState, what: Wipe) -> Result<Response, HttpError> {
    let app = &state.app;
    let deleted = app
        .accounts
        .store()
        .console_wipe(what)
        .await
        .map_err(ludus_core::ApiError::from)?;
    if what != Wipe::Storage {
        // Every account is gone: their sockets close on every node (the
        // bus tells the others).
        app.sockets.realtime.hub().close_wiped_accounts();
    }
    after_wipe(app, what).await?;
    // The other nodes of a cluster drop it from their own memory too.
    app.bus.broadcast(wipe_broadcast(what).into());
    tracing::warn!(wipe = ?what, deleted, "console wiped game data");
    Ok(crate::api::empty())
}

/// What a node keeps in memory of wiped data goes: the storage indexes'
/// entries, and (but for a storage wipe) the leaderboards and their rank
/// indexes, built again from what the store kept.
pub(crate) async fn after_wipe(
    app: &crate::state::Services,
    what: Wipe,
) -> Result<(), ludus_core::ApiError> {
    let indexes = app.storage.indexes();
    match what {
        Wipe::Storage | Wipe::AllData => indexes.retain(|_| false),
        Wipe::Accounts => indexes.retain(|object| object.user_id.is_nil()),
    }
    if what != Wipe::Storage {
        app.leaderboards.reload().await?;
    }
    Ok(())
}

/// The broadcast that tells the other nodes of a wipe.
fn wipe_broadcast(what: Wipe) -> String {
    let name = match what {
        Wipe::Accounts => "accounts",
        Wipe::Storage => "storage",
        Wipe::AllData => "all",
    };
    format!("wiped|{name}")
}

/// The wipe another node broadcast, if `text` is one.
pub(crate) fn wiped(text: &str) -> Option<Wipe> {
    match text.strip_prefix("wiped|")? {
        "accounts" => Some(Wipe::Accounts),
        "storage" => Some(Wipe::Storage),
        "all" => Some(Wipe::AllData),
        _ => None,
    }
}

/// Nakama's `DeleteChannelMessagesResponse`.
#[derive(Serialize)]
struct Deleted {
    total: String,
}

/// `?before=<RFC 3339 time>` deletes every message created before it,
/// `?ids=…` (repeated) those messages; both in one transaction. Neither
/// deletes nothing, as Nakama.
async fn messages(
    State(state): State<ConsoleState>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let before_us = match query.get("before").unwrap_or_default() {
        "" => None,
        text => {
            let t = ludus_proto::Timestamp::parse_rfc3339(text).map_err(|_| {
                HttpError::invalid(format!(
                    "before {text:?} is not an RFC 3339 time such as 2024-05-01T00:00:00Z"
                ))
            })?;
            Some(t.seconds * 1_000_000 + i64::from(t.nanos) / 1_000)
        }
    };
    let ids = query
        .all("ids")
        .iter()
        .flat_map(|v| v.split(','))
        .filter(|v| !v.is_empty())
        .map(|text| {
            Uuid::parse_str(text)
                .map_err(|_| HttpError::invalid(format!("message id {text:?} is not a valid uuid")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let total = match (before_us, ids.is_empty()) {
        (None, true) => 0,
        _ => state
            .app
            .accounts
            .store()
            .channel_messages_delete(before_us, &ids)
            .await
            .map_err(ludus_core::ApiError::from)?,
    };
    Ok(crate::api::json(&Deleted {
        total: total.to_string(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wipe_broadcasts_read_back_and_are_not_revocations() {
        for what in [Wipe::Accounts, Wipe::Storage, Wipe::AllData] {
            let text = wipe_broadcast(what);
            assert_eq!(wiped(&text), Some(what));
            assert!(ludus_core::revocation::Revoked::decode(&text).is_none());
        }
        assert_eq!(wiped("u|x|1"), None);
        assert_eq!(wiped("wiped|else"), None);
    }
}
