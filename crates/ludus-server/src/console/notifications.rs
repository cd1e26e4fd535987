//! Notifications in the console, in Nakama's console `Notification` shape:
//! a player's stored ones (`GET /v2/console/notification?user_id=…`), oldest
//! first, and one by id (`NOTIFICATION` read); one deleted by id
//! (`NOTIFICATION` delete); and sending one to chosen players or to everyone
//! (`POST /v2/console/notification`, `NOTIFICATION` write).

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{delete, get, post};
use ludus_core::console_acl::{Level, Need, Resource};
use ludus_core::notification::Notification;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::accounts::account_id;
use super::{Body, ConsoleRoutes, ConsoleState};
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
    r.add(
        "/v2/console/notification",
        Need::Permission(Resource::Notification, Level::Write),
        post(send),
    );
    r.add(
        "/v2/console/notification/{id}",
        Need::Permission(Resource::Notification, Level::Read),
        get(one),
    );
    r.add(
        "/v2/console/notification/{id}",
        Need::Permission(Resource::Notification, Level::Delete),
        delete(remove),
    );
}

/// How many players' copies of a notification to everyone are stored per
/// transaction.
const SEND_ALL_PAGE: usize = 1_000;

fn notification_id(text: &str) -> Result<Uuid, HttpError> {
    Uuid::parse_str(text)
        .map_err(|_| HttpError::invalid(format!("notification id {text:?} is not a valid uuid")))
}

async fn one(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
) -> Result<Response, HttpError> {
    let id = notification_id(&id)?;
    let found = state
        .app
        .accounts
        .store()
        .notifications_by_id(None, &[id])
        .await
        .map_err(ludus_core::ApiError::from)?;
    let n = found
        .first()
        .ok_or_else(|| HttpError::new(ludus_core::Code::NotFound, "notification not found"))?;
    Ok(crate::api::json(&item(n)))
}

/// Deletes a stored notification; one that is not there is no error, as
/// in Nakama.
async fn remove(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
) -> Result<Response, HttpError> {
    let id = notification_id(&id)?;
    state
        .app
        .accounts
        .store()
        .delete_notifications_by_id(None, &[id])
        .await
        .map_err(ludus_core::ApiError::from)?;
    Ok(crate::api::empty())
}

/// Nakama's `SendNotificationRequest`.
#[derive(Deserialize, Default)]
#[serde(default)]
struct SendBody {
    user_ids: Vec<String>,
    subject: String,
    content: Option<serde_json::Map<String, serde_json::Value>>,
    code: i32,
    persistent: bool,
    sender_id: String,
}

/// Sends a notification to `user_ids`, or to every player when there are
/// none (stored for each when persistent, in pages of [`SEND_ALL_PAGE`]).
/// Unknown players are refused before anything is sent.
async fn send(
    State(state): State<ConsoleState>,
    Body(body): Body<SendBody>,
) -> Result<Response, HttpError> {
    let sender_id = match body.sender_id.as_str() {
        "" => Uuid::nil(),
        text => Uuid::parse_str(text)
            .map_err(|_| HttpError::invalid(format!("sender id {text:?} is not a valid uuid")))?,
    };
    let recipients = body
        .user_ids
        .iter()
        .map(|text| account_id(text))
        .collect::<Result<Vec<_>, _>>()?;
    let template = Notification {
        id: Uuid::nil(),
        user_id: Uuid::nil(),
        subject: body.subject,
        content: serde_json::Value::Object(body.content.unwrap_or_default()).to_string(),
        code: body.code,
        sender_id,
        create_time_us: ludus_core::unix_now_us(),
        persistent: body.persistent,
    };
    template.check()?;
    let notifier = &state.app.sockets.realtime.notifier;
    if recipients.is_empty() {
        if template.persistent {
            notifier
                .notify_everyone(&template, SEND_ALL_PAGE)
                .await
                .map_err(ludus_core::ApiError::from)?;
        } else {
            notifier.send_to_everyone(&template);
        }
        return Ok(crate::api::empty());
    }
    let found = state.app.accounts.users(&body.user_ids, &[]).await?;
    if let Some(missing) = recipients
        .iter()
        .find(|id| !found.iter().any(|u| u.id == **id))
    {
        return Err(HttpError::new(
            ludus_core::Code::NotFound,
            format!("no player has the user id {missing}, nothing was sent"),
        ));
    }
    let notifications = recipients
        .into_iter()
        .map(|user_id| Notification {
            id: Uuid::new_v4(),
            user_id,
            ..template.clone()
        })
        .collect();
    notifier
        .notify(notifications)
        .await
        .map_err(ludus_core::ApiError::from)?;
    Ok(crate::api::empty())
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
