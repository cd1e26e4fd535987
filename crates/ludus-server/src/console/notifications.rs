//! A player's stored notifications in the console
//! (`GET /v2/console/notification?user_id=…`, `NOTIFICATION` read), oldest
//! first, in Nakama's console `Notification` shape.

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use ludus_core::console_acl::{Level, Need, Resource};
use ludus_core::notification::Notification;
use serde::Serialize;

use super::accounts::account_id;
use super::{ConsoleRoutes, ConsoleState};
use crate::convert;
use crate::error::HttpError;
use crate::extract::QueryParams;

/// Nakama's bound on a console page of notifications.
const MAX_LIMIT: u32 = 100;

pub(super) fn routes(r: &mut ConsoleRoutes) {
    r.add(
        "/v2/console/notification",
        Need::Permission(Resource::Notification, Level::Read),
        get(list),
    );
}

/// Nakama's console `Notification`.
#[derive(Serialize)]
struct Item {
    id: String,
    subject: String,
    content: String,
    code: i32,
    sender_id: String,
    create_time: ludus_proto::Timestamp,
    persistent: bool,
    user_id: String,
}

fn item(n: &Notification) -> Item {
    Item {
        id: n.id.to_string(),
        subject: n.subject.clone(),
        content: n.content.clone(),
        code: n.code,
        sender_id: n.sender_id.to_string(),
        create_time: convert::timestamp(n.create_time_us / 1_000_000),
        persistent: n.persistent,
        user_id: n.user_id.to_string(),
    }
}

#[derive(Serialize)]
struct NotificationList {
    notifications: Vec<Item>,
    next_cursor: String,
    prev_cursor: String,
}

/// One player's notifications; Ludus needs the `user_id` (Nakama also
/// lists everyone's), `limit` 1-100 (100 when absent).
async fn list(
    State(state): State<ConsoleState>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let user = match query.get("user_id").unwrap_or_default() {
        "" => {
            return Err(HttpError::invalid(
                "user_id is required: notifications are listed one player at a time",
            ));
        }
        text => account_id(text)?,
    };
    let limit = match query.int32("limit")?.map(|l| l.value) {
        None => MAX_LIMIT,
        Some(l) if (1..=MAX_LIMIT as i32).contains(&l) => l as u32,
        Some(_) => {
            return Err(HttpError::invalid(format!(
                "limit must be between 1 and {MAX_LIMIT}"
            )));
        }
    };
    state.app.accounts.account(user).await?;
    let page = ludus_core::notification_service::list_up_to(
        state.app.accounts.store().as_ref(),
        user,
        limit,
        query.get("cursor"),
        MAX_LIMIT,
    )
    .await?;
    // The cursor continues after the last one; a short page is the end.
    let next_cursor = match page.notifications.len() == limit as usize {
        true => page.cursor.unwrap_or_default(),
        false => String::new(),
    };
    Ok(crate::api::json(&NotificationList {
        notifications: page.notifications.iter().map(item).collect(),
        next_cursor,
        prev_cursor: String::new(),
    }))
}
