//! Purchases and subscriptions of Nakama's JS `nk` (`purchaseValidate*`,
//! `purchaseGetByTransactionId`, `purchasesList`, `subscriptionValidate*`,
//! `subscriptionGetByProductId`, `subscriptionsList`), with Nakama's
//! per-call overrides of the Apple shared password and the Google service
//! account. The checks are the server's `PurchaseService`, as for REST and
//! Lua; results carry Nakama's JS keys (store and environment by name,
//! times in UNIX seconds).

use std::sync::Arc;

use ludus_core::purchase::{GoogleAccount, Purchase, PurchaseService, Subscription};
use rquickjs::{Ctx, Object};
use serde_json::{Map, Value as Json, json};
use uuid::Uuid;

use super::nk_common::{Args, NkError, NkResult, answer, arg, define, served};
use super::shared::JsShared;

/// Most rows `purchasesList` and `subscriptionsList` answer at once
/// (Nakama's).
const MAX_LIST: i64 = 100;

fn seconds(ms: i64) -> i64 {
    ms.div_euclid(1000)
}

fn user_text(id: Uuid) -> String {
    if id.is_nil() {
        String::new()
    } else {
        id.to_string()
    }
}

/// Create, update and refund times, each only when set.
fn times(o: &mut Map<String, Json>, create: i64, update: i64, refund: i64) {
    for (key, ms) in [
        ("createTime", create),
        ("updateTime", update),
        ("refundTime", refund),
    ] {
        if ms != 0 {
            o.insert(key.into(), seconds(ms).into());
        }
    }
}

pub(crate) fn purchase_json(p: &Purchase) -> Json {
    let mut o = Map::new();
    o.insert("userId".into(), user_text(p.user_id).into());
    o.insert("productId".into(), p.product_id.clone().into());
    o.insert("transactionId".into(), p.transaction_id.clone().into());
    o.insert("store".into(), p.store.name().into());
    o.insert("providerResponse".into(), p.raw_response.clone().into());
    o.insert("purchaseTime".into(), seconds(p.purchase_time_ms).into());
    times(&mut o, p.create_time_ms, p.update_time_ms, p.refund_time_ms);
    o.insert("environment".into(), p.environment.name().into());
    o.insert("seenBefore".into(), p.seen_before.into());
    Json::Object(o)
}

pub(crate) fn subscription_json(s: &Subscription) -> Json {
    let mut o = Map::new();
    o.insert("userId".into(), user_text(s.user_id).into());
    o.insert("productId".into(), s.product_id.clone().into());
    o.insert(
        "originalTransactionId".into(),
        s.original_transaction_id.clone().into(),
    );
    o.insert("store".into(), s.store.name().into());
    o.insert("purchaseTime".into(), seconds(s.purchase_time_ms).into());
    o.insert("expiryTime".into(), seconds(s.expire_time_ms).into());
    times(&mut o, s.create_time_ms, s.update_time_ms, s.refund_time_ms);
    o.insert("environment".into(), s.environment.name().into());
    o.insert("active".into(), s.active(ludus_core::unix_now_ms()).into());
    o.insert("providerResponse".into(), s.raw_response.clone().into());
    o.insert(
        "providerNotification".into(),
        s.raw_notification.clone().into(),
    );
    Json::Object(o)
}

fn not_configured(store: &str) -> NkError {
    NkError::Server(format!("{store} iap is not configured"))
}

fn service(s: &JsShared) -> Result<&PurchaseService, NkError> {
    s.services
        .purchases()
        .map_err(|e| NkError::Server(e.message.into_owned()))
}

/// The Apple shared password: the override when given, else the
/// configured one.
fn apple_password(s: &JsShared, a: &Args, i: usize) -> Result<String, NkError> {
    let given = a.string(i, "password override")?;
    let password = if given.is_empty() {
        service(s)?.settings().apple.shared_password.clone()
    } else {
        given
    };
    if password.is_empty() {
        return Err(not_configured("apple"));
    }
    Ok(password)
}

/// The Google service account: the overrides when given, else the
/// configured one.
fn google_account(s: &JsShared, a: &Args, i: usize) -> Result<GoogleAccount, NkError> {
    let configured = service(s)?.google_account().ok();
    let email = Some(a.string(i, "client email override")?)
        .filter(|e| !e.is_empty())
        .or_else(|| configured.as_ref().map(|c| c.client_email.clone()))
        .unwrap_or_default();
    let key = Some(a.string(i + 1, "private key override")?)
        .filter(|k| !k.is_empty())
        .or_else(|| configured.as_ref().map(|c| c.private_key.clone()))
        .unwrap_or_default();
    if email.is_empty() || key.is_empty() {
        return Err(not_configured("google"));
    }
    Ok(GoogleAccount {
        client_email: email,
        private_key: key,
    })
}

fn validated(purchases: &[Purchase]) -> NkResult {
    answer(json!({
        "validatedPurchases": purchases.iter().map(purchase_json).collect::<Vec<_>>(),
    }))
}

/// The listing functions' `(userId?, limit?, cursor?)`.
fn list_args(a: &Args) -> Result<(Option<Uuid>, usize, String), NkError> {
    let user = match a.string(0, "user id")?.as_str() {
        "" => None,
        u => Some(Uuid::parse_str(u).map_err(|_| arg("expects a valid user ID"))?),
    };
    let limit = a.int_or(1, MAX_LIST, "limit")?;
    if !(1..=MAX_LIST).contains(&limit) {
        return Err(arg("limit must be 1-100"));
    }
    Ok((user, limit as usize, a.string(2, "cursor")?))
}

pub(super) fn install<'js>(
    ctx: &Ctx<'js>,
    nk: &Object<'js>,
    shared: &Arc<JsShared>,
) -> rquickjs::Result<()> {
    purchases(ctx, nk, shared)?;
    subscriptions(ctx, nk, shared)
}

fn purchases<'js>(
    ctx: &Ctx<'js>,
    nk: &Object<'js>,
    shared: &Arc<JsShared>,
) -> rquickjs::Result<()> {
    define(ctx, nk, shared, "purchaseValidateApple", |s, a| {
        let user = a.uuid(0, "user id")?;
        let receipt = a.required(1, "receipt")?;
        let persist = a.bool_or(2, true, "persist")?;
        let password = apple_password(s, a, 3)?;
        let services = s.services.clone();
        let list = served(s, "error validating apple receipt", async move {
            services
                .purchases()?
                .validate_apple(user, &receipt, persist, &password)
                .await
        })?;
        validated(&list)
    })?;
    define(ctx, nk, shared, "purchaseValidateGoogle", |s, a| {
        let user = a.uuid(0, "user id")?;
        let receipt = a.required(1, "receipt")?;
        let persist = a.bool_or(2, true, "persist")?;
        let account = google_account(s, a, 3)?;
        let services = s.services.clone();
        let list = served(s, "error validating google receipt", async move {
            services
                .purchases()?
                .validate_google(user, &receipt, persist, &account)
                .await
        })?;
        validated(&list)
    })?;
    define(ctx, nk, shared, "purchaseValidateHuawei", |s, a| {
        let user = a.uuid(0, "user id")?;
        let receipt = a.required(1, "receipt")?;
        let signature = a.required(2, "signature")?;
        let persist = a.bool_or(3, true, "persist")?;
        let services = s.services.clone();
        let list = served(s, "error validating huawei receipt", async move {
            services
                .purchases()?
                .validate_huawei(user, &receipt, &signature, persist)
                .await
        })?;
        validated(&list)
    })?;
    define(
        ctx,
        nk,
        shared,
        "purchaseValidateFacebookInstant",
        |s, a| {
            let user = a.uuid(0, "user id")?;
            let signed = a.required(1, "signedRequest")?;
            let persist = a.bool_or(2, true, "persist")?;
            let services = s.services.clone();
            let list = served(s, "error validating facebook instant receipt", async move {
                services
                    .purchases()?
                    .validate_facebook_instant(user, &signed, persist)
                    .await
            })?;
            validated(&list)
        },
    )?;
    define(ctx, nk, shared, "purchaseValidateSamsung", |_, a| {
        a.uuid(0, "user id")?;
        a.required(1, "purchaseId")?;
        Err(NkError::Server(
            "error validating samsung receipt: samsung galaxy store validation is not available in this server yet"
                .into(),
        ))
    })?;
    define(ctx, nk, shared, "purchaseGetByTransactionId", |s, a| {
        let id = a.required(0, "a transaction id string")?;
        let services = s.services.clone();
        let found = served(s, "error retrieving purchase", async move {
            services.purchases()?.purchase_get(&id).await
        })?;
        answer(found.as_ref().map_or(Json::Null, purchase_json))
    })?;
    define(ctx, nk, shared, "purchasesList", |s, a| {
        let (user, limit, cursor) = list_args(a)?;
        let services = s.services.clone();
        let page = served(s, "error retrieving purchases", async move {
            services
                .purchases()?
                .purchases_list(user, limit, &cursor)
                .await
        })?;
        answer(json!({
            "validatedPurchases": page.items.iter().map(purchase_json).collect::<Vec<_>>(),
            "cursor": page.cursor,
            "prevCursor": Json::Null,
        }))
    })?;
    Ok(())
}

fn subscriptions<'js>(
    ctx: &Ctx<'js>,
    nk: &Object<'js>,
    shared: &Arc<JsShared>,
) -> rquickjs::Result<()> {
    define(ctx, nk, shared, "subscriptionValidateApple", |s, a| {
        let user = a.uuid(0, "user id")?;
        let receipt = a.required(1, "receipt")?;
        let persist = a.bool_or(2, true, "persist")?;
        let password = apple_password(s, a, 3)?;
        let services = s.services.clone();
        let sub = served(s, "error validating apple receipt", async move {
            services
                .purchases()?
                .validate_subscription_apple(user, &receipt, persist, &password)
                .await
        })?;
        answer(json!({ "validatedSubscription": subscription_json(&sub) }))
    })?;
    define(ctx, nk, shared, "subscriptionValidateGoogle", |s, a| {
        let user = a.uuid(0, "user id")?;
        let receipt = a.required(1, "subscription")?;
        let persist = a.bool_or(2, true, "persist")?;
        let account = google_account(s, a, 3)?;
        let services = s.services.clone();
        let sub = served(s, "error validating google receipt", async move {
            services
                .purchases()?
                .validate_subscription_google(user, &receipt, persist, &account)
                .await
        })?;
        answer(json!({ "validatedSubscription": subscription_json(&sub) }))
    })?;
    define(ctx, nk, shared, "subscriptionGetByProductId", |s, a| {
        let user = a.uuid(0, "user id")?;
        let product = a.required(1, "a product id string")?;
        let services = s.services.clone();
        let sub = served(s, "error retrieving subscription", async move {
            services.purchases()?.subscription_get(user, &product).await
        })?;
        answer(subscription_json(&sub))
    })?;
    define(ctx, nk, shared, "subscriptionsList", |s, a| {
        let (user, limit, cursor) = list_args(a)?;
        let services = s.services.clone();
        let page = served(s, "error retrieving subscriptions", async move {
            services
                .purchases()?
                .subscriptions_list(user, limit, &cursor)
                .await
        })?;
        answer(json!({
            "validatedSubscriptions": page.items.iter().map(subscription_json).collect::<Vec<_>>(),
            "cursor": page.cursor,
            "prevCursor": Json::Null,
        }))
    })?;
    Ok(())
}
