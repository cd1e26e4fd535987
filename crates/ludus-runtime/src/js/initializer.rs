//! The `initializer` that `InitModule` gets: `registerRpc`, `registerMatch`
//! (match handlers by their global function names), the REST
//! `registerBefore*` / `registerAfter*` hooks (Nakama's names, stored under
//! the same lower-case API names as the Lua runtime's hooks), and every
//! other `register*` function of Nakama's that takes one callback.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use rquickjs::{Ctx, Exception, Function, Object, Persistent};

/// Nakama's REST API names that take before and after hooks, as they follow
/// `registerBefore` / `registerAfter`; a hook is stored under the name in
/// lower case (`authenticatedevice`), which is what the server asks for.
const HOOKED_APIS: &[&str] = &[
    "AddFriends",
    "AddGroupUsers",
    "AuthenticateApple",
    "AuthenticateCustom",
    "AuthenticateDevice",
    "AuthenticateEmail",
    "AuthenticateFacebook",
    "AuthenticateFacebookInstantGame",
    "AuthenticateGameCenter",
    "AuthenticateGoogle",
    "AuthenticateSteam",
    "BanGroupUsers",
    "BlockFriends",
    "CreateGroup",
    "DeleteAccount",
    "DeleteFriends",
    "DeleteGroup",
    "DeleteLeaderboardRecord",
    "DeleteNotifications",
    "DeleteStorageObjects",
    "DeleteTournamentRecord",
    "DemoteGroupUsers",
    "Event",
    "GetAccount",
    "GetMatchmakerStats",
    "GetSubscription",
    "GetUsers",
    "ImportFacebookFriends",
    "ImportSteamFriends",
    "JoinGroup",
    "JoinTournament",
    "KickGroupUsers",
    "LeaveGroup",
    "LinkApple",
    "LinkCustom",
    "LinkDevice",
    "LinkEmail",
    "LinkFacebook",
    "LinkFacebookInstantGame",
    "LinkGameCenter",
    "LinkGoogle",
    "LinkSteam",
    "ListChannelMessages",
    "ListFriends",
    "ListFriendsOfFriends",
    "ListGroupUsers",
    "ListGroups",
    "ListLeaderboardRecords",
    "ListLeaderboardRecordsAroundOwner",
    "ListMatches",
    "ListNotifications",
    "ListParties",
    "ListStorageObjects",
    "ListSubscriptions",
    "ListTournamentRecords",
    "ListTournamentRecordsAroundOwner",
    "ListTournaments",
    "ListUserGroups",
    "PromoteGroupUsers",
    "ReadStorageObjects",
    "SessionRefresh",
    "UnlinkApple",
    "UnlinkCustom",
    "UnlinkDevice",
    "UnlinkEmail",
    "UnlinkFacebook",
    "UnlinkFacebookInstantGame",
    "UnlinkGameCenter",
    "UnlinkGoogle",
    "UnlinkSteam",
    "UpdateAccount",
    "UpdateGroup",
    "ValidatePurchaseApple",
    "ValidatePurchaseFacebookInstant",
    "ValidatePurchaseGoogle",
    "ValidatePurchaseHuawei",
    "ValidatePurchaseSamsung",
    "ValidateSubscriptionApple",
    "ValidateSubscriptionGoogle",
    "WriteLeaderboardRecord",
    "WriteStorageObjects",
    "WriteTournamentRecord",
];

/// Registrations of one callback each, and the key it is stored under (the
/// Lua runtime's key for the same callback).
const SINGLE: &[(&str, &str)] = &[
    ("registerShutdown", "shutdown"),
    ("registerMatchmakerMatched", "matchmaker_matched"),
    ("registerLeaderboardReset", "leaderboard_reset"),
    ("registerTournamentEnd", "tournament_end"),
    ("registerTournamentReset", "tournament_reset"),
    ("registerEvent", "event"),
    ("registerEventSessionStart", "event_session_start"),
    ("registerEventSessionEnd", "event_session_end"),
    (
        "registerPurchaseNotificationApple",
        "purchase_notification_apple",
    ),
    (
        "registerSubscriptionNotificationApple",
        "subscription_notification_apple",
    ),
    (
        "registerPurchaseNotificationGoogle",
        "purchase_notification_google",
    ),
    (
        "registerSubscriptionNotificationGoogle",
        "subscription_notification_google",
    ),
];

/// The callbacks one context's `InitModule` registered, by key: `rpc/<id>`,
/// `before/<api>`, `after/<api>` (the keys the Lua runtime uses too).
pub(super) type Callbacks = HashMap<String, Persistent<Function<'static>>>;

/// Nakama's match handler keys, in the order `MatchFns` holds them.
pub(super) const MATCH_CALLBACKS: [&str; 7] = [
    "matchInit",
    "matchJoinAttempt",
    "matchJoin",
    "matchLeave",
    "matchLoop",
    "matchTerminate",
    "matchSignal",
];

/// The global names of one match handler's functions, in
/// `MATCH_CALLBACKS` order: a match's context evaluates the bundle and
/// finds them there, as Nakama does (it runs no `InitModule` per match).
pub(super) type MatchFns = [String; 7];

/// The match handlers `InitModule` registered, by name.
pub(super) type Matches = HashMap<String, MatchFns>;

/// Makes the initializer; registrations land in `callbacks`.
pub(super) fn initializer<'js>(
    ctx: &Ctx<'js>,
    callbacks: &Rc<RefCell<Callbacks>>,
    matches: &Rc<RefCell<Matches>>,
    shared: &std::sync::Arc<super::shared::JsShared>,
) -> rquickjs::Result<Object<'js>> {
    let init = Object::new(ctx.clone())?;
    let s = shared.clone();
    init.set(
        "registerStorageIndex",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>,
                  name: String,
                  collection: String,
                  rest: rquickjs::function::Rest<rquickjs::Value<'js>>| {
                // Every context runs InitModule; the index is declared by
                // the first only.
                if s.indexes_declared
                    .load(std::sync::atomic::Ordering::Acquire)
                {
                    return Ok(());
                }
                // key, fields, sortableFields, maxEntries, indexOnly.
                let arg = |i: usize| {
                    rest.0
                        .get(i)
                        .cloned()
                        .filter(|v| !v.is_undefined() && !v.is_null())
                };
                let key = arg(0)
                    .map(|k| k.get::<String>())
                    .transpose()?
                    .unwrap_or_default();
                let fields = arg(1)
                    .map(|f| f.get::<Vec<String>>())
                    .transpose()?
                    .unwrap_or_default();
                let sort_fields = arg(2)
                    .map(|f| f.get::<Vec<String>>())
                    .transpose()?
                    .unwrap_or_default();
                let max_entries = arg(3).and_then(|n| n.as_number()).unwrap_or(-1.0);
                if max_entries.fract() != 0.0 || max_entries < 0.0 {
                    return Err(Exception::throw_type(
                        &ctx,
                        "registerStorageIndex expects maxEntries to be a whole number of 0 or more",
                    ));
                }
                let index_only = arg(4).and_then(|b| b.as_bool()).unwrap_or(false);
                let spec = ludus_core::storage_index::IndexSpec {
                    name,
                    collection,
                    key,
                    fields,
                    sort_fields,
                    max_entries: max_entries as usize,
                    index_only,
                };
                s.services.storage_index_register(spec).map_err(|e| {
                    Exception::throw_internal(
                        &ctx,
                        &format!("failed to create storage index: {}", e.message),
                    )
                })
            },
        )?,
    )?;
    let store = callbacks.clone();
    init.set(
        "registerStorageIndexFilter",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, name: String, f: rquickjs::Value<'js>| {
                register(
                    &ctx,
                    &store,
                    format!("{}{name}", crate::lua::FILTER_PREFIX),
                    "registerStorageIndexFilter",
                    f,
                )
            },
        )?,
    )?;
    let store = matches.clone();
    init.set(
        "registerMatch",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, name: rquickjs::Value<'js>, handlers: rquickjs::Value<'js>| {
                register_match(&ctx, &store, name, handlers)
            },
        )?,
    )?;
    let store = callbacks.clone();
    init.set(
        "registerRpc",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, id: rquickjs::Value<'js>, f: rquickjs::Value<'js>| {
                let Some(id) = id.as_string().map(|s| s.to_string()).transpose()? else {
                    return Err(Exception::throw_type(
                        &ctx,
                        "registerRpc expects an id string as its first argument",
                    ));
                };
                if id.is_empty() {
                    return Err(Exception::throw_type(
                        &ctx,
                        "registerRpc expects a non-empty id",
                    ));
                }
                register(
                    &ctx,
                    &store,
                    format!("rpc/{}", id.to_ascii_lowercase()),
                    "registerRpc",
                    f,
                )
            },
        )?,
    )?;
    for api in HOOKED_APIS {
        for (prefix, kind) in [("registerBefore", "before"), ("registerAfter", "after")] {
            let name = format!("{prefix}{api}");
            let key = format!("{kind}/{}", api.to_ascii_lowercase());
            let store = callbacks.clone();
            let label = name.clone();
            init.set(
                name.as_str(),
                Function::new(
                    ctx.clone(),
                    move |ctx: Ctx<'js>, f: rquickjs::Value<'js>| {
                        register(&ctx, &store, key.clone(), &label, f)
                    },
                )?,
            )?;
        }
    }
    for (name, key) in SINGLE {
        let store = callbacks.clone();
        init.set(
            *name,
            Function::new(
                ctx.clone(),
                move |ctx: Ctx<'js>, f: rquickjs::Value<'js>| {
                    register(&ctx, &store, (*key).to_owned(), name, f)
                },
            )?,
        )?;
    }
    for (name, kind) in [("registerRtBefore", "before"), ("registerRtAfter", "after")] {
        let store = callbacks.clone();
        init.set(
            name,
            Function::new(
                ctx.clone(),
                move |ctx: Ctx<'js>, message: rquickjs::Value<'js>, f: rquickjs::Value<'js>| {
                    // Nakama's names are the envelope's (`ChannelJoin`); the
                    // server asks for them in lower case.
                    let message = message
                        .as_string()
                        .map(|m| m.to_string())
                        .transpose()?
                        .map(|m| m.to_ascii_lowercase())
                        .filter(|m| ludus_realtime::hooks::MESSAGE_NAMES.contains(&m.as_str()));
                    let Some(message) = message else {
                        return Err(Exception::throw_type(
                            &ctx,
                            &format!("{name} expects a realtime message name such as \"ChannelJoin\" or \"MatchDataSend\" as its first argument"),
                        ));
                    };
                    register(&ctx, &store, format!("{kind}/rt.{message}"), name, f)
                },
            )?,
        )?;
    }
    Ok(init)
}

/// `registerMatch(name, handlers)`: every one of Nakama's seven callbacks
/// must be a function declared at the top level of the bundle, since each
/// match's context finds them by their global names (Nakama's rule too).
fn register_match<'js>(
    ctx: &Ctx<'js>,
    store: &Rc<RefCell<Matches>>,
    name: rquickjs::Value<'js>,
    handlers: rquickjs::Value<'js>,
) -> rquickjs::Result<()> {
    let Some(name) = name.as_string().map(|s| s.to_string()).transpose()? else {
        return Err(Exception::throw_type(
            ctx,
            "registerMatch expects a name string as its first argument",
        ));
    };
    if name.is_empty() {
        return Err(Exception::throw_type(
            ctx,
            "registerMatch expects a non-empty name",
        ));
    }
    let Some(handlers) = handlers.as_object() else {
        return Err(Exception::throw_type(
            ctx,
            &format!("registerMatch({name:?}) expects an object of match handler functions"),
        ));
    };
    let globals = ctx.globals();
    let mut fns: MatchFns = Default::default();
    for (slot, key) in fns.iter_mut().zip(MATCH_CALLBACKS) {
        let f: rquickjs::Value = handlers.get(key)?;
        let Some(function) = f.as_function() else {
            return Err(Exception::throw_type(
                ctx,
                &format!("registerMatch({name:?}): {key} is missing or not a function"),
            ));
        };
        let global: String = function.get("name").unwrap_or_default();
        let found: rquickjs::Value = if global.is_empty() {
            rquickjs::Value::new_undefined(ctx.clone())
        } else {
            globals.get(global.as_str())?
        };
        if found != f {
            return Err(Exception::throw_type(
                ctx,
                &format!(
                    "registerMatch({name:?}): {key} must be a function declared at the top level of the bundle (each match's context finds it by its global name, as Nakama does); declare `function {key}(...)` outside InitModule and pass it"
                ),
            ));
        }
        *slot = global;
    }
    let mut matches = store.borrow_mut();
    if matches.contains_key(&name) {
        return Err(Exception::throw_internal(
            ctx,
            &format!(
                "match handler {name:?} is registered twice in the js module; register it once"
            ),
        ));
    }
    matches.insert(name, fns);
    Ok(())
}

fn register<'js>(
    ctx: &Ctx<'js>,
    store: &Rc<RefCell<Callbacks>>,
    key: String,
    what: &str,
    f: rquickjs::Value<'js>,
) -> rquickjs::Result<()> {
    let Some(f) = f.into_function() else {
        return Err(Exception::throw_type(
            ctx,
            &format!("{what} expects a function"),
        ));
    };
    let mut callbacks = store.borrow_mut();
    if callbacks.contains_key(&key) {
        return Err(Exception::throw_internal(
            ctx,
            &format!("{key} is registered twice in the js module; register it once"),
        ));
    }
    callbacks.insert(key, Persistent::save(ctx, f));
    Ok(())
}
