//! Purchases and subscriptions in the console (`IN_APP_PURCHASE` read):
//! every player's stored purchases and subscriptions, newest first (of one
//! player with `user_id`), one purchase by transaction id and one
//! subscription by original transaction id, in the client API's shapes.

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use ludus_core::console_acl::{Level, Need, Resource};
use ludus_core::unix_now_ms;
use ludus_proto::api;
use uuid::Uuid;

use super::{ConsoleRoutes, ConsoleState};
use crate::convert;
use crate::error::HttpError;
use crate::extract::QueryParams;

pub(super) fn routes(r: &mut ConsoleRoutes) {
    let need = Need::Permission(Resource::InAppPurchase, Level::Read);
    r.add("/v2/console/purchase", need, get(list_purchases));
    r.add(
        "/v2/console/iap/purchase/{transaction_id}",
        need,
        get(one_purchase),
    );
    r.add("/v2/console/subscription", need, get(list_subscriptions));
    r.add(
        "/v2/console/iap/subscription/{original_transaction_id}",
        need,
        get(one_subscription),
    );
}

/// `user_id` (optional) and `limit` (1-100, 100 when absent) of a listing.
fn filter(query: &QueryParams) -> Result<(Option<Uuid>, usize), HttpError> {
    let user = match query.get("user_id").unwrap_or_default() {
        "" => None,
        text => Some(
            Uuid::parse_str(text)
                .map_err(|_| HttpError::invalid(format!("user id {text:?} is not a valid uuid")))?,
        ),
    };
    let limit = match query.int32("limit")?.map(|l| l.value) {
        None => 100,
        Some(l @ 1..=100) => l as usize,
        Some(_) => return Err(HttpError::invalid("limit must be between 1 and 100")),
    };
    Ok((user, limit))
}

async fn list_purchases(
    State(state): State<ConsoleState>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let (user, limit) = filter(&query)?;
    let cursor = query.get("cursor").unwrap_or_default();
    let page = state
        .app
        .purchases
        .purchases_list(user, limit, cursor)
        .await?;
    Ok(crate::api::json(&api::PurchaseList {
        validated_purchases: page.items.iter().map(convert::purchase).collect(),
        cursor: page.cursor.unwrap_or_default(),
        prev_cursor: String::new(),
    }))
}

async fn one_purchase(
    State(state): State<ConsoleState>,
    Path(transaction_id): Path<String>,
) -> Result<Response, HttpError> {
    let found = state
        .app
        .purchases
        .purchase_get(&transaction_id)
        .await?
        .ok_or_else(|| HttpError::new(ludus_core::Code::NotFound, "purchase not found"))?;
    Ok(crate::api::json(&convert::purchase(&found)))
}

async fn one_subscription(
    State(state): State<ConsoleState>,
    Path(original_transaction_id): Path<String>,
) -> Result<Response, HttpError> {
    let found = state
        .app
        .accounts
        .store()
        .subscription_by_transaction(&original_transaction_id)
        .await
        .map_err(ludus_core::ApiError::from)?
        .ok_or_else(|| HttpError::new(ludus_core::Code::NotFound, "subscription not found"))?;
    Ok(crate::api::json(&convert::subscription(
        &found,
        unix_now_ms(),
    )))
}

async fn list_subscriptions(
    State(state): State<ConsoleState>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let (user, limit) = filter(&query)?;
    let cursor = query.get("cursor").unwrap_or_default();
    let page = state
        .app
        .purchases
        .subscriptions_list(user, limit, cursor)
        .await?;
    let now = unix_now_ms();
    Ok(crate::api::json(&api::SubscriptionList {
        validated_subscriptions: page
            .items
            .iter()
            .map(|s| convert::subscription(s, now))
            .collect(),
        cursor: page.cursor.unwrap_or_default(),
        prev_cursor: String::new(),
    }))
}
