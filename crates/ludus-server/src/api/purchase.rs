//! Purchase and subscription validation, `/v2/iap/*`, in Nakama's request
//! and response shapes with its hooks (`validatepurchaseapple`,
//! `validatesubscriptiongoogle`, `listsubscriptions`, `getsubscription`, …).
//! `persist` defaults to true. The checks are ludus-core's
//! `PurchaseService`.

use axum::extract::{Path, State};
use axum::response::Response;
use ludus_core::unix_now_ms;
use ludus_proto::api;

use super::json;
use crate::convert;
use crate::error::HttpError;
use crate::extract::{ProtoJson, Session};
use crate::runtime::{self, ClientAddr};
use crate::state::AppState;

fn persist(value: &Option<ludus_proto::pbjson_types::BoolValue>) -> bool {
    value.as_ref().is_none_or(|v| v.value)
}

fn purchases(validated: &[ludus_core::purchase::Purchase]) -> api::ValidatePurchaseResponse {
    api::ValidatePurchaseResponse {
        validated_purchases: validated.iter().map(convert::purchase).collect(),
    }
}

pub(super) async fn apple(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    ProtoJson(req): ProtoJson<api::ValidatePurchaseAppleRequest>,
) -> Result<Response, HttpError> {
    const API: &str = "validatepurchaseapple";
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let password = state.purchases.settings().apple.shared_password.clone();
    let validated = state
        .purchases
        .validate_apple(
            caller.user_id,
            &req.receipt,
            persist(&req.persist),
            &password,
        )
        .await?;
    let res = purchases(&validated);
    runtime::after(&state, API, Some(&caller), client, &res, &req).await;
    Ok(json(&res))
}

pub(super) async fn google(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    ProtoJson(req): ProtoJson<api::ValidatePurchaseGoogleRequest>,
) -> Result<Response, HttpError> {
    const API: &str = "validatepurchasegoogle";
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let account = state.purchases.google_account()?;
    if req.purchase.is_empty() {
        return Err(ludus_core::ApiError::invalid("purchase cannot be empty").into());
    }
    let validated = state
        .purchases
        .validate_google(
            caller.user_id,
            &req.purchase,
            persist(&req.persist),
            &account,
        )
        .await?;
    let res = purchases(&validated);
    runtime::after(&state, API, Some(&caller), client, &res, &req).await;
    Ok(json(&res))
}

pub(super) async fn huawei(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    ProtoJson(req): ProtoJson<api::ValidatePurchaseHuaweiRequest>,
) -> Result<Response, HttpError> {
    const API: &str = "validatepurchasehuawei";
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let validated = state
        .purchases
        .validate_huawei(
            caller.user_id,
            &req.purchase,
            &req.signature,
            persist(&req.persist),
        )
        .await?;
    let res = purchases(&validated);
    runtime::after(&state, API, Some(&caller), client, &res, &req).await;
    Ok(json(&res))
}

pub(super) async fn samsung(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    ProtoJson(req): ProtoJson<api::ValidatePurchaseSamsungRequest>,
) -> Result<Response, HttpError> {
    const API: &str = "validatepurchasesamsung";
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let validated = state
        .purchases
        .validate_samsung(caller.user_id, &req.purchase_id, persist(&req.persist))
        .await?;
    let res = purchases(&validated);
    runtime::after(&state, API, Some(&caller), client, &res, &req).await;
    Ok(json(&res))
}

pub(super) async fn facebook_instant(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    ProtoJson(req): ProtoJson<api::ValidatePurchaseFacebookInstantRequest>,
) -> Result<Response, HttpError> {
    const API: &str = "validatepurchasefacebookinstant";
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let validated = state
        .purchases
        .validate_facebook_instant(caller.user_id, &req.signed_request, persist(&req.persist))
        .await?;
    let res = purchases(&validated);
    runtime::after(&state, API, Some(&caller), client, &res, &req).await;
    Ok(json(&res))
}

pub(super) async fn subscription_apple(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    ProtoJson(req): ProtoJson<api::ValidateSubscriptionAppleRequest>,
) -> Result<Response, HttpError> {
    const API: &str = "validatesubscriptionapple";
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let password = state.purchases.settings().apple.shared_password.clone();
    let sub = state
        .purchases
        .validate_subscription_apple(
            caller.user_id,
            &req.receipt,
            persist(&req.persist),
            &password,
        )
        .await?;
    let res = api::ValidateSubscriptionResponse {
        validated_subscription: Some(convert::subscription(&sub, unix_now_ms())),
    };
    runtime::after(&state, API, Some(&caller), client, &res, &req).await;
    Ok(json(&res))
}

pub(super) async fn subscription_google(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    ProtoJson(req): ProtoJson<api::ValidateSubscriptionGoogleRequest>,
) -> Result<Response, HttpError> {
    const API: &str = "validatesubscriptiongoogle";
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let account = state.purchases.google_account()?;
    if req.receipt.is_empty() {
        return Err(ludus_core::ApiError::invalid("receipt cannot be empty").into());
    }
    let sub = state
        .purchases
        .validate_subscription_google(
            caller.user_id,
            &req.receipt,
            persist(&req.persist),
            &account,
        )
        .await?;
    let res = api::ValidateSubscriptionResponse {
        validated_subscription: Some(convert::subscription(&sub, unix_now_ms())),
    };
    runtime::after(&state, API, Some(&caller), client, &res, &req).await;
    Ok(json(&res))
}

/// `POST /v2/iap/subscription`: the caller's subscriptions, newest first.
pub(super) async fn list_subscriptions(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    ProtoJson(req): ProtoJson<api::ListSubscriptionsRequest>,
) -> Result<Response, HttpError> {
    const API: &str = "listsubscriptions";
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let limit = match &req.limit {
        None => ludus_core::purchase::DEFAULT_LIST_LIMIT,
        Some(l) => usize::try_from(l.value).unwrap_or(0),
    };
    let page = state
        .purchases
        .subscriptions_list(Some(caller.user_id), limit, &req.cursor)
        .await?;
    let now = unix_now_ms();
    let res = api::SubscriptionList {
        validated_subscriptions: page
            .items
            .iter()
            .map(|s| convert::subscription(s, now))
            .collect(),
        cursor: page.cursor.unwrap_or_default(),
        prev_cursor: String::new(),
    };
    runtime::after(&state, API, Some(&caller), client, &res, &req).await;
    Ok(json(&res))
}

/// `GET /v2/iap/subscription/{product_id}`: the caller's subscription to a
/// product, or 404.
pub(super) async fn get_subscription(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    Path(product_id): Path<String>,
) -> Result<Response, HttpError> {
    const API: &str = "getsubscription";
    let req = api::GetSubscriptionRequest { product_id };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let sub = state
        .purchases
        .subscription_get(caller.user_id, &req.product_id)
        .await?;
    let res = convert::subscription(&sub, unix_now_ms());
    runtime::after(&state, API, Some(&caller), client, &res, &req).await;
    Ok(json(&res))
}
