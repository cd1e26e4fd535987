//! `POST /v2/event`: a client's event for the modules' `register_event`
//! callbacks, queued and answered at once (Nakama's `Event` call). The
//! event is marked `external`, as Nakama marks events clients send.

use axum::extract::State;
use axum::response::Response;
use ludus_proto::api;
use ludus_runtime::{Event, ExecutionMode};

use super::empty;
use crate::error::HttpError;
use crate::extract::{ProtoJson, Session};
use crate::runtime::{self, ClientAddr};
use crate::state::AppState;

/// Longest event name accepted, in bytes.
const MAX_NAME_BYTES: usize = 256;

pub(super) async fn send(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    ProtoJson(body): ProtoJson<api::Event>,
) -> Result<Response, HttpError> {
    const API: &str = "event";
    let req = runtime::before(&state, API, Some(&caller), client, body).await?;
    if req.name.is_empty() || req.name.len() > MAX_NAME_BYTES {
        return Err(HttpError::invalid(
            "event name is required and must be at most 256 bytes",
        ));
    }
    let event = Event {
        name: req.name.clone(),
        properties: req.properties.clone().into_iter().collect(),
        timestamp_ms: req.timestamp.as_ref().map_or(0, |t| {
            t.seconds.saturating_mul(1000) + i64::from(t.nanos / 1_000_000)
        }),
        external: true,
    };
    let ctx = runtime::call_context(ExecutionMode::Event, Some(&caller), client);
    state.runtime.event(ctx, event);
    runtime::after(
        &state,
        API,
        Some(&caller),
        client,
        &serde_json::Value::Null,
        &req,
    )
    .await;
    Ok(empty())
}
