//! `GET /v2/notification?limit=&cacheable_cursor=` and
//! `DELETE /v2/notification?ids=…`: the caller's stored notifications, with
//! the runtime's `listnotifications` and `deletenotifications` hooks.

use axum::extract::State;
use axum::response::Response;
use ludus_proto::api;
use ludus_proto::pbjson_types::Int32Value;

use super::{empty, json};
use crate::error::HttpError;
use crate::extract::{QueryParams, Session};
use crate::runtime::{self, ClientAddr};
use crate::state::AppState;

pub(super) async fn list(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    query: QueryParams,
) -> Result<Response, HttpError> {
    const API: &str = "listnotifications";
    let limit = match query.get("limit").filter(|l| !l.is_empty()) {
        None => None,
        Some(l) => Some(Int32Value {
            value: l.parse().map_err(|_| bad_limit())?,
        }),
    };
    let req = api::ListNotificationsRequest {
        limit,
        cacheable_cursor: query.get("cacheable_cursor").unwrap_or_default().to_owned(),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let limit = match &req.limit {
        None => None,
        Some(l) => Some(u32::try_from(l.value).map_err(|_| bad_limit())?),
    };
    let page = ludus_core::notification_service::list(
        state.accounts.store().as_ref(),
        caller.user_id,
        limit,
        Some(req.cacheable_cursor.as_str()),
    )
    .await?;
    let list = api::NotificationList {
        notifications: page
            .notifications
            .iter()
            .map(ludus_realtime::wire::notification_to_wire)
            .collect(),
        cacheable_cursor: page.cursor.unwrap_or_default(),
    };
    runtime::after(&state, API, Some(&caller), client, &list, &req).await;
    Ok(json(&list))
}

pub(super) async fn delete(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    query: QueryParams,
) -> Result<Response, HttpError> {
    const API: &str = "deletenotifications";
    let req = api::DeleteNotificationsRequest {
        ids: query.all("ids"),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    ludus_core::notification_service::delete(
        state.accounts.store().as_ref(),
        caller.user_id,
        &req.ids,
    )
    .await?;
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

fn bad_limit() -> HttpError {
    HttpError::invalid("invalid limit, it must be between 1 and 100")
}
