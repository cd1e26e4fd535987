//! `nk.purchase_*`, `nk.purchases_list`, `nk.subscription_*` and
//! `nk.subscriptions_list`: purchase and subscription validation with
//! Nakama's arguments (including its per-call overrides of the Apple shared
//! password and the Google service account) and result tables (store and
//! environment by name, times in UNIX seconds). The checks are the server's
//! `PurchaseService`, as for REST.

use std::sync::Arc;

use ludus_core::ApiError;
use ludus_core::purchase::{GoogleAccount, Purchase, Subscription};
use mlua::{Lua, Table, Value as LuaValue};
use uuid::Uuid;

use super::nk_common::{api_error, arg_error, served, server_function, whole_arg};
use super::shared::LuaShared;

/// Most rows `nk.purchases_list` and `nk.subscriptions_list` answer at once
/// (Nakama's).
const MAX_LIST: i64 = 100;

fn user_arg(id: &str, arg: usize) -> mlua::Result<Uuid> {
    if id.is_empty() {
        return Err(arg_error(arg, "expects user id"));
    }
    Uuid::parse_str(id).map_err(|_| arg_error(arg, "invalid user id"))
}

fn required(value: &str, arg: usize, message: &str) -> mlua::Result<()> {
    if value.is_empty() {
        return Err(arg_error(arg, message));
    }
    Ok(())
}

fn seconds(ms: i64) -> i64 {
    ms.div_euclid(1000)
}

fn purchase_table(lua: &Lua, p: &Purchase) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, 11)?;
    let user = if p.user_id.is_nil() {
        String::new()
    } else {
        p.user_id.to_string()
    };
    t.raw_set("user_id", user)?;
    t.raw_set("product_id", p.product_id.as_str())?;
    t.raw_set("transaction_id", p.transaction_id.as_str())?;
    t.raw_set("store", p.store.name())?;
    t.raw_set("provider_response", p.raw_response.as_str())?;
    t.raw_set("purchase_time", seconds(p.purchase_time_ms))?;
    // Create and update times are unset for purchases not persisted.
    for (key, ms) in [
        ("create_time", p.create_time_ms),
        ("update_time", p.update_time_ms),
        ("refund_time", p.refund_time_ms),
    ] {
        if ms != 0 {
            t.raw_set(key, seconds(ms))?;
        }
    }
    t.raw_set("environment", p.environment.name())?;
    t.raw_set("seen_before", p.seen_before)?;
    Ok(t)
}

fn subscription_table(lua: &Lua, s: &Subscription) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, 13)?;
    let user = if s.user_id.is_nil() {
        String::new()
    } else {
        s.user_id.to_string()
    };
    t.raw_set("user_id", user)?;
    t.raw_set("product_id", s.product_id.as_str())?;
    t.raw_set(
        "original_transaction_id",
        s.original_transaction_id.as_str(),
    )?;
    t.raw_set("store", s.store.name())?;
    t.raw_set("purchase_time", seconds(s.purchase_time_ms))?;
    for (key, ms) in [
        ("create_time", s.create_time_ms),
        ("update_time", s.update_time_ms),
        ("refund_time", s.refund_time_ms),
    ] {
        if ms != 0 {
            t.raw_set(key, seconds(ms))?;
        }
    }
    t.raw_set("environment", s.environment.name())?;
    t.raw_set("expiry_time", seconds(s.expire_time_ms))?;
    t.raw_set("active", s.active(ludus_core::unix_now_ms()))?;
    t.raw_set("provider_response", s.raw_response.as_str())?;
    t.raw_set("provider_notification", s.raw_notification.as_str())?;
    Ok(t)
}

fn validation_table(lua: &Lua, purchases: &[Purchase]) -> mlua::Result<Table> {
    let list = lua.create_table_with_capacity(purchases.len(), 0)?;
    for p in purchases {
        list.raw_push(purchase_table(lua, p)?)?;
    }
    let t = lua.create_table_with_capacity(0, 1)?;
    t.raw_set("validated_purchases", list)?;
    Ok(t)
}

fn subscription_validation_table(lua: &Lua, s: &Subscription) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(0, 1)?;
    t.raw_set("validated_subscription", subscription_table(lua, s)?)?;
    Ok(t)
}

fn not_configured(store: &str) -> mlua::Error {
    mlua::Error::runtime(format!("{store} iap is not configured"))
}

/// The listing functions' `(user_id, limit, cursor)`.
fn list_args(
    user: Option<String>,
    limit: LuaValue,
    cursor: Option<String>,
) -> mlua::Result<(Option<Uuid>, usize, String)> {
    let user = match user.as_deref() {
        None | Some("") => None,
        Some(u) => Some(Uuid::parse_str(u).map_err(|_| arg_error(1, "expects a valid user ID"))?),
    };
    let limit = match limit {
        LuaValue::Nil => MAX_LIST,
        v => whole_arg(&v, 2, "expects a limit 1-100")?,
    };
    if !(1..=MAX_LIST).contains(&limit) {
        return Err(arg_error(2, "expects a limit 1-100"));
    }
    Ok((user, limit as usize, cursor.unwrap_or_default()))
}

fn cursor_value(lua: &Lua, cursor: Option<String>) -> mlua::Result<LuaValue> {
    match cursor {
        Some(c) => Ok(LuaValue::String(lua.create_string(c)?)),
        None => Ok(LuaValue::Nil),
    }
}

/// The Google service account of a call: the overrides when given, else
/// the configured one.
fn google_account(
    configured: Result<GoogleAccount, ApiError>,
    email: Option<String>,
    key: Option<String>,
) -> mlua::Result<GoogleAccount> {
    let configured = configured.ok();
    let email = email
        .filter(|e| !e.is_empty())
        .or_else(|| configured.as_ref().map(|c| c.client_email.clone()))
        .unwrap_or_default();
    let key = key
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

type AppleArgs = (String, String, Option<bool>, Option<String>);
type GoogleArgs = (String, String, Option<bool>, Option<String>, Option<String>);

pub(super) fn install(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    let s = shared.clone();
    nk.set(
        "purchase_validate_apple",
        server_function(
            lua,
            shared,
            move |lua, (user_id, receipt, persist, password): AppleArgs| {
                let s = s.clone();
                async move {
                    let user = user_arg(&user_id, 1)?;
                    required(&receipt, 2, "expects receipt")?;
                    let service = s.services.purchases().map_err(api_error)?;
                    let password = password
                        .filter(|p| !p.is_empty())
                        .unwrap_or_else(|| service.settings().apple.shared_password.clone());
                    if password.is_empty() {
                        return Err(not_configured("apple"));
                    }
                    let validated = served(
                        "error validating apple receipt",
                        service.validate_apple(user, &receipt, persist.unwrap_or(true), &password),
                    )
                    .await?;
                    validation_table(&lua, &validated)
                }
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "purchase_validate_google",
        server_function(
            lua,
            shared,
            move |lua, (user_id, receipt, persist, email, key): GoogleArgs| {
                let s = s.clone();
                async move {
                    let user = user_arg(&user_id, 1)?;
                    required(&receipt, 2, "expects receipt")?;
                    let service = s.services.purchases().map_err(api_error)?;
                    let account = google_account(service.google_account(), email, key)?;
                    let validated = served(
                        "error validating google receipt",
                        service.validate_google(user, &receipt, persist.unwrap_or(true), &account),
                    )
                    .await?;
                    validation_table(&lua, &validated)
                }
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "purchase_validate_huawei",
        server_function(
            lua,
            shared,
            move |lua,
                  (user_id, signature, receipt, persist): (
                String,
                String,
                String,
                Option<bool>,
            )| {
                let s = s.clone();
                async move {
                    let user = user_arg(&user_id, 1)?;
                    required(&signature, 2, "expects signature")?;
                    required(&receipt, 3, "expects receipt")?;
                    let service = s.services.purchases().map_err(api_error)?;
                    let validated = served(
                        "error validating huawei receipt",
                        service.validate_huawei(
                            user,
                            &receipt,
                            &signature,
                            persist.unwrap_or(true),
                        ),
                    )
                    .await?;
                    validation_table(&lua, &validated)
                }
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "purchase_validate_facebook_instant",
        server_function(
            lua,
            shared,
            move |lua, (user_id, signed, persist): (String, String, Option<bool>)| {
                let s = s.clone();
                async move {
                    let user = user_arg(&user_id, 1)?;
                    required(&signed, 2, "expects signedRequest")?;
                    let service = s.services.purchases().map_err(api_error)?;
                    let validated = served(
                        "error validating facebook instant receipt",
                        service.validate_facebook_instant(user, &signed, persist.unwrap_or(true)),
                    )
                    .await?;
                    validation_table(&lua, &validated)
                }
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "purchase_validate_samsung",
        server_function(
            lua,
            shared,
            move |lua, (user_id, purchase_id, persist): (String, String, Option<bool>)| {
                let s = s.clone();
                async move {
                    let user = user_arg(&user_id, 1)?;
                    required(&purchase_id, 2, "expects purchaseId")?;
                    let service = s.services.purchases().map_err(api_error)?;
                    let validated = served(
                        "error validating samsung receipt",
                        service.validate_samsung(user, &purchase_id, persist.unwrap_or(true)),
                    )
                    .await?;
                    validation_table(&lua, &validated)
                }
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "purchase_get_by_transaction_id",
        server_function(lua, shared, move |lua, transaction_id: String| {
            let s = s.clone();
            async move {
                required(&transaction_id, 1, "expects a transaction ID string")?;
                let service = s.services.purchases().map_err(api_error)?;
                let found = served(
                    "error retrieving purchase",
                    service.purchase_get(&transaction_id),
                )
                .await?;
                match found {
                    Some(p) => Ok(LuaValue::Table(purchase_table(&lua, &p)?)),
                    None => Ok(LuaValue::Nil),
                }
            }
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "purchases_list",
        server_function(
            lua,
            shared,
            move |lua, (user, limit, cursor): (Option<String>, LuaValue, Option<String>)| {
                let s = s.clone();
                async move {
                    let (user, limit, cursor) = list_args(user, limit, cursor)?;
                    let service = s.services.purchases().map_err(api_error)?;
                    let page = served(
                        "error retrieving purchases",
                        service.purchases_list(user, limit, &cursor),
                    )
                    .await?;
                    let list = lua.create_table_with_capacity(page.items.len(), 0)?;
                    for p in &page.items {
                        list.raw_push(purchase_table(&lua, p)?)?;
                    }
                    Ok((list, cursor_value(&lua, page.cursor)?, LuaValue::Nil))
                }
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "subscription_validate_apple",
        server_function(
            lua,
            shared,
            move |lua, (user_id, receipt, persist, password): AppleArgs| {
                let s = s.clone();
                async move {
                    let user = user_arg(&user_id, 1)?;
                    required(&receipt, 2, "expects receipt")?;
                    let service = s.services.purchases().map_err(api_error)?;
                    let password = password
                        .filter(|p| !p.is_empty())
                        .unwrap_or_else(|| service.settings().apple.shared_password.clone());
                    if password.is_empty() {
                        return Err(not_configured("apple"));
                    }
                    let sub = served(
                        "error validating apple receipt",
                        service.validate_subscription_apple(
                            user,
                            &receipt,
                            persist.unwrap_or(true),
                            &password,
                        ),
                    )
                    .await?;
                    subscription_validation_table(&lua, &sub)
                }
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "subscription_validate_google",
        server_function(
            lua,
            shared,
            move |lua, (user_id, receipt, persist, email, key): GoogleArgs| {
                let s = s.clone();
                async move {
                    let user = user_arg(&user_id, 1)?;
                    required(&receipt, 2, "expects receipt")?;
                    let service = s.services.purchases().map_err(api_error)?;
                    let account = google_account(service.google_account(), email, key)?;
                    let sub = served(
                        "error validating google receipt",
                        service.validate_subscription_google(
                            user,
                            &receipt,
                            persist.unwrap_or(true),
                            &account,
                        ),
                    )
                    .await?;
                    subscription_validation_table(&lua, &sub)
                }
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "subscription_get_by_product_id",
        server_function(
            lua,
            shared,
            move |lua, (user_id, product_id): (String, String)| {
                let s = s.clone();
                async move {
                    let user = user_arg(&user_id, 1)?;
                    required(&product_id, 2, "expects a product ID string")?;
                    let service = s.services.purchases().map_err(api_error)?;
                    let sub = served(
                        "error retrieving subscription",
                        service.subscription_get(user, &product_id),
                    )
                    .await?;
                    subscription_table(&lua, &sub)
                }
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "subscriptions_list",
        server_function(
            lua,
            shared,
            move |lua, (user, limit, cursor): (Option<String>, LuaValue, Option<String>)| {
                let s = s.clone();
                async move {
                    let (user, limit, cursor) = list_args(user, limit, cursor)?;
                    let service = s.services.purchases().map_err(api_error)?;
                    let page = served(
                        "error retrieving subscriptions",
                        service.subscriptions_list(user, limit, &cursor),
                    )
                    .await?;
                    let list = lua.create_table_with_capacity(page.items.len(), 0)?;
                    for sub in &page.items {
                        list.raw_push(subscription_table(&lua, sub)?)?;
                    }
                    Ok((list, cursor_value(&lua, page.cursor)?, LuaValue::Nil))
                }
            },
        )?,
    )?;
    Ok(())
}
