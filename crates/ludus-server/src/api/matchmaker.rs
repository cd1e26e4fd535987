//! `GET /v2/matchmaker/stats`: tickets in this node's matchmaker, the
//! oldest ticket's creation time and the last completed matches
//! (Nakama's `MatchmakerStats`), with the runtime's `getmatchmakerstats`
//! hooks. Needs a session, as every Nakama API call.

use axum::extract::State;
use axum::response::Response;

use super::json;
use crate::error::HttpError;
use crate::extract::Session;
use crate::runtime::{self, ClientAddr};
use crate::state::AppState;

pub(super) async fn stats(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
) -> Result<Response, HttpError> {
    const API: &str = "getmatchmakerstats";
    runtime::before_without_body(&state, API, Some(&caller), client).await?;
    let stats = state.sockets.realtime.matchmaker.core().stats();
    runtime::after(
        &state,
        API,
        Some(&caller),
        client,
        &stats,
        &serde_json::Value::Null,
    )
    .await;
    Ok(json(&stats))
}
