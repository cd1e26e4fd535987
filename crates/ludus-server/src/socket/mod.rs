//! The `/ws` endpoint: checks the format and the session token before the
//! upgrade (400 and 401 as Nakama), enforces the per-node connection limit,
//! configures the WebSocket (read limit, small buffers, bounded write
//! buffer) and hands the socket to [`connection`].
//!
//! [`Sockets`] (in `sockets.rs`) is the realtime state shared with the rest
//! of the server, and [`MatchRuntime`] the threads authoritative matches run
//! on.

mod connection;
mod sockets;

pub(crate) use sockets::{MatchRuntime, Sockets};

use axum::extract::State;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use ludus_core::Code;
use ludus_realtime::{Connect, Format};
use uuid::Uuid;

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
