//! `GET /v2/notification?limit=&cacheable_cursor=` and
//! `DELETE /v2/notification?ids=…`: the caller's stored notifications.

use axum::extract::State;
use axum::response::Response;
use ludus_proto::api;

use super::{empty, json};
use crate::error::HttpError;
use crate::extract::{QueryParams, Session};
use crate::state::AppState;

pub async fn list(
    State(state): State<AppState>,
    Session(caller): Session,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let limit = match query.get("limit").filter(|l| !l.is_empty()) {
        None => None,
        Some(l) => Some(
            l.parse::<u32>()
                .map_err(|_| HttpError::invalid("invalid limit, it must be between 1 and 100"))?,
        ),
    };
    let page = ludus_core::notification::list(
        state.accounts.store().as_ref(),
        caller.user_id,
        limit,
        query.get("cacheable_cursor"),
    )
    .await?;
    let list = api::NotificationList {
        notifications: page
            .notifications
            .iter()
            .map(ludus_realtime::notify::notification_to_wire)
            .collect(),
        cacheable_cursor: page.cursor.unwrap_or_default(),
    };
    Ok(json(&list))
}

pub async fn delete(
    State(state): State<AppState>,
    Session(caller): Session,
    query: QueryParams,
) -> Result<Response, HttpError> {
    ludus_core::notification::delete(
        state.accounts.store().as_ref(),
        caller.user_id,
        &query.all("ids"),
    )
    .await?;
    Ok(empty())
}
