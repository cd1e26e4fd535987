//! `GET /v2/channel/{channel_id}?limit=&forward=&cursor=`: a page of a chat
//! channel's stored history.

use axum::extract::{Path, State};
use axum::response::Response;
use ludus_proto::api;

use super::json;
use crate::error::HttpError;
use crate::extract::{QueryParams, Session};
use crate::state::AppState;

pub async fn history(
    State(state): State<AppState>,
    Session(caller): Session,
    Path(channel_id): Path<String>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let limit = match query.get("limit").filter(|l| !l.is_empty()) {
        None => None,
        Some(l) => Some(
            l.parse::<u32>()
                .map_err(|_| HttpError::invalid("invalid limit, it must be between 1 and 100"))?,
        ),
    };
    let forward = query.bool("forward")?.unwrap_or(true);
    let page = ludus_core::chat::channel_history(
        state.accounts.store().as_ref(),
        caller.user_id,
        &channel_id,
        limit,
        forward,
        query.get("cursor"),
    )
    .await?;
    let list = api::ChannelMessageList {
        messages: page
            .messages
            .iter()
            .map(|m| ludus_realtime::chat::message_to_wire(m, true))
            .collect(),
        next_cursor: page.next_cursor.unwrap_or_default(),
        prev_cursor: page.prev_cursor.unwrap_or_default(),
        cacheable_cursor: String::new(),
    };
    Ok(json(&list))
}
