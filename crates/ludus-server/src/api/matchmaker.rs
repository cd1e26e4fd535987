//! `GET /v2/matchmaker/stats`: tickets in this node's matchmaker, the
//! oldest ticket's creation time and the last completed matches
//! (Nakama's `MatchmakerStats`). Needs a session, as every Nakama API call.

use axum::extract::State;
use axum::response::Response;

use super::json;
use crate::extract::Session;
use crate::state::AppState;

pub async fn stats(State(state): State<AppState>, Session(_caller): Session) -> Response {
    json(&state.sockets.realtime.matchmaker.stats())
}
