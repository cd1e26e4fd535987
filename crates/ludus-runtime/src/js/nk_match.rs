//! `nk` functions for authoritative matches: `matchCreate`, `matchGet`,
//! `matchList` and `matchSignal`, with Nakama's JS arguments, defaults and
//! result objects. A name reaches a native handler, a Lua module or a JS
//! `registerMatch` alike.

use std::sync::Arc;

use ludus_realtime::matches::{ListRequest, MatchListing};
use rquickjs::function::Opt;
use rquickjs::{Ctx, Exception, Function, Object, Value};

use super::nk_common::to_js;
use super::shared::JsShared;

pub(super) fn install<'js>(
    ctx: &Ctx<'js>,
    nk: &Object<'js>,
    shared: &Arc<JsShared>,
) -> rquickjs::Result<()> {
    let s = shared.clone();
    nk.set(
        "matchCreate",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, module: Value<'js>, params: Opt<Value<'js>>| {
                let module = module
                    .as_string()
                    .map(|m| m.to_string())
                    .transpose()?
                    .filter(|m| !m.is_empty())
                    .ok_or_else(|| {
                        Exception::throw_type(&ctx, "matchCreate expects a module name")
                    })?;
                let params = match params.0.filter(|p| !p.is_undefined() && !p.is_null()) {
                    None => serde_json::Value::Object(Default::default()),
                    Some(p) if p.is_object() && !p.is_array() => json_of(&ctx, p)?,
                    Some(_) => {
                        return Err(Exception::throw_type(
                            &ctx,
                            "matchCreate expects params to be an object",
                        ));
                    }
                };
                let make = s.handlers.factory(&module);
                let services = s.services.clone();
                s.wait(async move { services.match_create(&module, params, make).await })
                    .map_err(|e| Exception::throw_internal(&ctx, &e))?
                    .map_err(|e| {
                        Exception::throw_internal(
                            &ctx,
                            &format!("error creating match: {}", e.message),
                        )
                    })
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "matchGet",
        Function::new(ctx.clone(), move |ctx: Ctx<'js>, id: String| {
            match s.services.match_get(&id) {
                Some(m) => to_js(&ctx, &listing(&m)),
                None => Ok(Value::new_null(ctx.clone())),
            }
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "matchList",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>,
                  limit: Opt<Value<'js>>,
                  authoritative: Opt<Value<'js>>,
                  label: Opt<Value<'js>>,
                  min_size: Opt<Value<'js>>,
                  max_size: Opt<Value<'js>>,
                  query: Opt<Value<'js>>| {
                let given = |v: Opt<Value<'js>>| v.0.filter(|v| !v.is_undefined() && !v.is_null());
                let count = |v: Opt<Value<'js>>, what: &str| -> rquickjs::Result<Option<usize>> {
                    match given(v) {
                        None => Ok(None),
                        Some(v) => v
                            .as_number()
                            .filter(|n| n.fract() == 0.0 && *n >= 0.0)
                            .map(|n| Some(n as usize))
                            .ok_or_else(|| {
                                Exception::throw_type(
                                    &ctx,
                                    &format!(
                                        "matchList expects {what} to be a whole number of 0 or more"
                                    ),
                                )
                            }),
                    }
                };
                let text = |v: Opt<Value<'js>>, what: &str| -> rquickjs::Result<Option<String>> {
                    match given(v) {
                        None => Ok(None),
                        Some(v) => match v.as_string() {
                            Some(s) => s.to_string().map(Some),
                            None => Err(Exception::throw_type(
                                &ctx,
                                &format!("matchList expects {what} to be a string"),
                            )),
                        },
                    }
                };
                let authoritative = match given(authoritative) {
                    None => None,
                    Some(v) => Some(v.as_bool().ok_or_else(|| {
                        Exception::throw_type(
                            &ctx,
                            "matchList expects authoritative to be a boolean",
                        )
                    })?),
                };
                let request = ListRequest {
                    limit: count(limit, "limit")?.unwrap_or(1),
                    authoritative,
                    label: text(label, "label")?,
                    min_size: count(min_size, "minSize")?,
                    max_size: count(max_size, "maxSize")?,
                    query: text(query, "query")?,
                };
                let found = s.services.match_list(request).map_err(|e| {
                    Exception::throw_internal(
                        &ctx,
                        &format!("failed to list matches: {}", e.message),
                    )
                })?;
                to_js(
                    &ctx,
                    &serde_json::Value::Array(found.iter().map(listing).collect()),
                )
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "matchSignal",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, id: String, data: Opt<Value<'js>>| {
                let data = match data.0.filter(|d| !d.is_undefined() && !d.is_null()) {
                    None => String::new(),
                    Some(d) => d
                        .as_string()
                        .map(|s| s.to_string())
                        .transpose()?
                        .ok_or_else(|| {
                            Exception::throw_type(&ctx, "matchSignal expects data to be a string")
                        })?,
                };
                let services = s.services.clone();
                s.wait(async move { services.match_signal(&id, data).await })
                    .map_err(|e| Exception::throw_internal(&ctx, &e))?
                    .map_err(|e| {
                        Exception::throw_internal(
                            &ctx,
                            &format!("failed to signal match: {}", e.message),
                        )
                    })
            },
        )?,
    )?;
    Ok(())
}

/// A match as Nakama's JS API shows it (`label` is null for relayed ones).
fn listing(m: &MatchListing) -> serde_json::Value {
    serde_json::json!({
        "matchId": m.match_id,
        "authoritative": m.authoritative,
        "label": m.label,
        "size": m.size,
        "tickRate": m.tick_rate,
        "handlerName": m.handler_name,
    })
}

fn json_of<'js>(ctx: &Ctx<'js>, v: Value<'js>) -> rquickjs::Result<serde_json::Value> {
    let text = ctx
        .json_stringify(v)?
        .map(|s| s.to_string())
        .transpose()?
        .unwrap_or_else(|| "{}".to_owned());
    serde_json::from_str(&text)
        .map_err(|e| Exception::throw_type(ctx, &format!("matchCreate params: {e}")))
}
