//! Chat history in the console (`GET /v2/console/channel`,
//! `CHANNEL_MESSAGE` read): a room's, a group's or two players' messages,
//! newest first, read as the server (no membership needed), in the client
//! API's `ChannelMessageList`.

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use ludus_core::chat::ChannelKey;
use ludus_core::console_acl::{Level, Need, Resource};
use ludus_proto::api;
use uuid::Uuid;

use super::{ConsoleRoutes, ConsoleState};
use crate::error::HttpError;
use crate::extract::QueryParams;

/// Messages in one page, Nakama's largest channel page.
const PAGE: u32 = 100;

pub(super) fn routes(r: &mut ConsoleRoutes) {
    r.add(
        "/v2/console/channel",
        Need::Permission(Resource::ChannelMessage, Level::Read),
        get(list),
    );
}

fn uuid_of(query: &QueryParams, key: &str) -> Result<Uuid, HttpError> {
    let text = query.get(key).unwrap_or_default();
    Uuid::parse_str(text)
        .map_err(|_| HttpError::invalid(format!("{key} {text:?} is not a valid uuid")))
}

/// Nakama's `ListChannelMessagesRequest.Type`, by number or name.
fn channel(query: &QueryParams) -> Result<ChannelKey, HttpError> {
    let bad = |e: ludus_core::chat::ChannelError| HttpError::invalid(e.to_string());
    match query.get("type").unwrap_or_default() {
        "2" | "ROOM" => ChannelKey::room(query.get("label").unwrap_or_default()).map_err(bad),
        "3" | "GROUP" => Ok(ChannelKey::group(uuid_of(query, "group_id")?)),
        "4" | "DIRECT" => ChannelKey::direct(
            uuid_of(query, "user_id_one")?,
            uuid_of(query, "user_id_two")?,
        )
        .map_err(bad),
        other => Err(HttpError::invalid(format!(
            "channel type {other:?} is not one of 2 (ROOM, with label), 3 (GROUP, with group_id) or 4 (DIRECT, with user_id_one and user_id_two)"
        ))),
    }
}

async fn list(
    State(state): State<ConsoleState>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let key = channel(&query)?;
    let page = ludus_core::chat_service::channel_history(
        state.app.accounts.store().as_ref(),
        None,
        &key.id(),
        Some(PAGE),
        false,
        query.get("cursor"),
    )
    .await?;
    Ok(crate::api::json(&api::ChannelMessageList {
        messages: page
            .messages
            .iter()
            .map(|m| ludus_realtime::chat::message_to_wire(m, true))
            .collect(),
        next_cursor: page.next_cursor.unwrap_or_default(),
        prev_cursor: page.prev_cursor.unwrap_or_default(),
        cacheable_cursor: page.cacheable_cursor.unwrap_or_default(),
    }))
}
