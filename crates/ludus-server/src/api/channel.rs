//! `GET /v2/channel/{channel_id}?limit=&forward=&cursor=`: a page of a chat
//! channel's stored history, with the runtime's `listchannelmessages` hooks.

use axum::extract::{Path, State};
use axum::response::Response;
use ludus_proto::api;
use ludus_proto::pbjson_types::{BoolValue, Int32Value};

use super::json;
use crate::error::HttpError;
use crate::extract::{QueryParams, Session};
use crate::runtime::{self, ClientAddr};
use crate::state::AppState;

pub(super) async fn history(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    Path(channel_id): Path<String>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    const API: &str = "listchannelmessages";
    let limit = match query.get("limit").filter(|l| !l.is_empty()) {
        None => None,
        Some(l) => Some(Int32Value {
            value: l
                .parse()
                .map_err(|_| HttpError::invalid("invalid limit, it must be between 1 and 100"))?,
        }),
    };
    let req = api::ListChannelMessagesRequest {
        channel_id,
        limit,
        forward: query.bool("forward")?.map(|value| BoolValue { value }),
        cursor: query.get("cursor").unwrap_or_default().to_owned(),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let limit = match &req.limit {
        None => None,
        Some(l) => Some(
            u32::try_from(l.value)
                .map_err(|_| HttpError::invalid("invalid limit, it must be between 1 and 100"))?,
        ),
    };
    let page = ludus_core::chat_service::channel_history(
        state.accounts.store().as_ref(),
        Some(caller.user_id),
        &req.channel_id,
        limit,
        req.forward.as_ref().is_none_or(|f| f.value),
        Some(req.cursor.as_str()),
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
        cacheable_cursor: page.cacheable_cursor.unwrap_or_default(),
    };
    runtime::after(&state, API, Some(&caller), client, &list, &req).await;
    Ok(json(&list))
}
