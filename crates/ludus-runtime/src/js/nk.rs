//! The `nk` object JS callbacks get: Nakama's JS names. The pure functions
//! (ids, encodings, hashes, cron, time), the node-local cache the Lua
//! modules share and `walletUpdate` are here; every other group is a
//! `nk_<area>.rs` file installed below with one line, each a function of
//! JSON arguments over `RuntimeServices` (`nk_common.rs`). The context's
//! thread waits for a server call's answer (see `pool.rs` for why that
//! never holds a thread another call needs).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use md5::Md5;
use rquickjs::function::Opt;
use rquickjs::{ArrayBuffer, Ctx, Exception, Function, Object, Value};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::nk_common::{bytes_of, to_js};
use super::shared::JsShared;

/// Makes a context's `nk`, frozen so no call can change what a later call
/// of the same context finds there.
pub(super) fn nk<'js>(ctx: &Ctx<'js>, shared: &Arc<JsShared>) -> rquickjs::Result<Object<'js>> {
    let nk = Object::new(ctx.clone())?;
    let f = |nk: &Object<'js>, name: &str, func: Function<'js>| nk.set(name, func);
    f(
        &nk,
        "uuidv4",
        Function::new(ctx.clone(), || Uuid::new_v4().to_string())?,
    )?;
    for (name, url) in [("base64Encode", false), ("base64UrlEncode", true)] {
        f(
            &nk,
            name,
            Function::new(
                ctx.clone(),
                move |ctx: Ctx<'js>, input: Value<'js>, padding: Opt<bool>| {
                    let bytes = bytes_of(&ctx, name, input)?;
                    let engine = match (url, padding.0.unwrap_or(true)) {
                        (false, true) => &STANDARD,
                        (false, false) => &STANDARD_NO_PAD,
                        (true, true) => &URL_SAFE,
                        (true, false) => &URL_SAFE_NO_PAD,
                    };
                    Ok::<_, rquickjs::Error>(engine.encode(bytes))
                },
            )?,
        )?;
    }
    for (name, url) in [("base64Decode", false), ("base64UrlDecode", true)] {
        f(
            &nk,
            name,
            Function::new(
                ctx.clone(),
                move |ctx: Ctx<'js>, input: String, padding: Opt<bool>| {
                    let engine = match (url, padding.0.unwrap_or(true)) {
                        (false, true) => &STANDARD,
                        (false, false) => &STANDARD_NO_PAD,
                        (true, true) => &URL_SAFE,
                        (true, false) => &URL_SAFE_NO_PAD,
                    };
                    let out = engine.decode(input.as_bytes()).map_err(|e| {
                    Exception::throw_type(&ctx, &format!("{name}: not a valid base64 string ({e}); check the padding argument"))
                })?;
                    ArrayBuffer::new(ctx.clone(), out)
                },
            )?,
        )?;
    }
    f(
        &nk,
        "base16Encode",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, input: Value<'js>| {
            Ok::<_, rquickjs::Error>(hex(&bytes_of(&ctx, "base16Encode", input)?))
        })?,
    )?;
    f(
        &nk,
        "base16Decode",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, input: String| {
            let Some(out) = unhex(input.as_bytes()) else {
                return Err(Exception::throw_type(
                    &ctx,
                    "base16Decode: not a valid base16 string; pass pairs of hex digits",
                ));
            };
            ArrayBuffer::new(ctx.clone(), out)
        })?,
    )?;
    f(
        &nk,
        "sha256Hash",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, input: Value<'js>| {
            Ok::<_, rquickjs::Error>(hex(&Sha256::digest(bytes_of(&ctx, "sha256Hash", input)?)))
        })?,
    )?;
    f(
        &nk,
        "md5Hash",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, input: Value<'js>| {
            Ok::<_, rquickjs::Error>(hex(&Md5::digest(bytes_of(&ctx, "md5Hash", input)?)))
        })?,
    )?;
    f(
        &nk,
        "binaryToString",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, input: Value<'js>| {
            let Some(buffer) = ArrayBuffer::from_value(input) else {
                return Err(Exception::throw_type(
                    &ctx,
                    "binaryToString expects an ArrayBuffer",
                ));
            };
            let bytes = buffer.as_bytes().unwrap_or_default();
            Ok(String::from_utf8_lossy(bytes).into_owned())
        })?,
    )?;
    f(
        &nk,
        "stringToBinary",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, input: String| {
            ArrayBuffer::new(ctx.clone(), input.into_bytes())
        })?,
    )?;
    f(
        &nk,
        "cronNext",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, expr: String, ts: f64| {
            let schedule = ludus_core::schedule::Schedule::parse(&expr).map_err(|e| {
                Exception::throw_type(
                    &ctx,
                    &format!("cronNext expects a valid cron string: {}", e.message),
                )
            })?;
            Ok::<_, rquickjs::Error>(schedule.next_after(ts as i64).map(|t| t as f64))
        })?,
    )?;
    f(
        &nk,
        "time",
        Function::new(ctx.clone(), || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_millis() as f64)
        })?,
    )?;
    cache(ctx, &nk, shared)?;
    wallet(ctx, &nk, shared)?;
    super::nk_account::install(ctx, &nk, shared)?;
    super::nk_auth::install(ctx, &nk, shared)?;
    super::nk_storage::install(ctx, &nk, shared)?;
    super::nk_realtime::install(ctx, &nk, shared)?;
    super::nk_social::install(ctx, &nk, shared)?;
    super::nk_util::install(ctx, &nk, shared)?;
    super::nk_leaderboard::install(ctx, &nk, shared)?;
    super::nk_purchase::install(ctx, &nk, shared)?;
    super::nk_match::install(ctx, &nk, shared)?;
    let freeze: Function = ctx.eval("Object.freeze")?;
    freeze.call::<_, ()>((nk.clone(),))?;
    Ok(nk)
}

/// `localcacheGet(key, default?)`, `localcachePut(key, value, ttlSeconds?)`
/// and `localcacheDelete(key)`: strings, numbers and booleans, as Nakama.
fn cache<'js>(ctx: &Ctx<'js>, nk: &Object<'js>, shared: &Arc<JsShared>) -> rquickjs::Result<()> {
    let s = shared.clone();
    nk.set(
        "localcacheGet",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, key: String, default: Opt<Value<'js>>| {
                if key.is_empty() {
                    return Err(Exception::throw_type(
                        &ctx,
                        "localcacheGet expects a non-empty key string",
                    ));
                }
                match s.cache.get(&key) {
                    Some(v) => to_js(&ctx, &v),
                    None => Ok(default
                        .0
                        .unwrap_or_else(|| Value::new_undefined(ctx.clone()))),
                }
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "localcachePut",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, key: String, value: Value<'js>, ttl: Opt<f64>| {
                if key.is_empty() {
                    return Err(Exception::throw_type(
                        &ctx,
                        "localcachePut expects a non-empty key string",
                    ));
                }
                let stored = if let Some(s) = value.as_string() {
                    serde_json::Value::String(s.to_string()?)
                } else if let Some(b) = value.as_bool() {
                    serde_json::Value::Bool(b)
                } else if let Some(n) = value.as_number() {
                    serde_json::Number::from_f64(n)
                        .map_or(serde_json::Value::Null, serde_json::Value::Number)
                } else {
                    return Err(Exception::throw_type(
                        &ctx,
                        "localcachePut: unsupported value type, store a string, number or boolean",
                    ));
                };
                let ttl = ttl.0.unwrap_or(0.0);
                if ttl < 0.0 || !ttl.is_finite() {
                    return Err(Exception::throw_type(
                        &ctx,
                        "localcachePut: ttl must be 0 or more seconds",
                    ));
                }
                s.cache
                    .put(key, stored, Duration::from_secs_f64(ttl))
                    .map_err(|e| Exception::throw_internal(&ctx, &e.to_string()))
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "localcacheDelete",
        Function::new(ctx.clone(), move |ctx: Ctx<'js>, key: String| {
            if key.is_empty() {
                return Err(Exception::throw_type(
                    &ctx,
                    "localcacheDelete expects a non-empty key string",
                ));
            }
            s.cache.delete(&key);
            Ok(())
        })?,
    )?;
    Ok(())
}

/// `walletUpdate(userId, changeset, metadata?, updateLedger?)`, answering
/// `{userId, updated, previous}` as Nakama.
fn wallet<'js>(ctx: &Ctx<'js>, nk: &Object<'js>, shared: &Arc<JsShared>) -> rquickjs::Result<()> {
    let s = shared.clone();
    nk.set(
        "walletUpdate",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>,
                  user: Value<'js>,
                  changeset: Value<'js>,
                  metadata: Opt<Value<'js>>,
                  ledger: Opt<bool>| {
                let user_id = user
                    .as_string()
                    .and_then(|s| s.to_string().ok())
                    .and_then(|s| Uuid::parse_str(&s).ok())
                    .ok_or_else(|| {
                        Exception::throw_type(&ctx, "walletUpdate expects a valid user id")
                    })?;
                let Some(changes) = changeset.as_object() else {
                    return Err(Exception::throw_type(
                        &ctx,
                        "walletUpdate expects a changeset object",
                    ));
                };
                let mut set = std::collections::BTreeMap::new();
                for entry in changes.props::<String, Value>() {
                    let (k, v) = entry?;
                    let n = v
                        .as_number()
                        .filter(|n| n.fract() == 0.0 && n.abs() < 9.0e15);
                    let Some(n) = n else {
                        return Err(Exception::throw_type(
                            &ctx,
                            "walletUpdate expects changeset values to be whole numbers",
                        ));
                    };
                    set.insert(k, n as i64);
                }
                let metadata = match metadata.0.filter(|m| !m.is_undefined() && !m.is_null()) {
                    None => "{}".to_owned(),
                    Some(m) if m.is_object() && !m.is_array() => ctx
                        .json_stringify(m)?
                        .map(|s| s.to_string())
                        .transpose()?
                        .unwrap_or_else(|| "{}".to_owned()),
                    Some(_) => {
                        return Err(Exception::throw_type(
                            &ctx,
                            "walletUpdate expects metadata to be a key value object",
                        ));
                    }
                };
                let update = ludus_core::wallet::WalletUpdate {
                    user_id,
                    changeset: set.into_iter().collect(),
                    metadata,
                };
                let services = s.services.clone();
                let result = s
                    .wait(async move {
                        services
                            .wallets_update(vec![update], ledger.0.unwrap_or(false))
                            .await
                    })
                    .map_err(|e| Exception::throw_internal(&ctx, &e))?
                    .map_err(|e| {
                        Exception::throw_internal(
                            &ctx,
                            &format!("failed to update user wallet: {}", e.message),
                        )
                    })?;
                let Some(r) = result.into_iter().next() else {
                    return Err(Exception::throw_type(&ctx, "walletUpdate: user not found"));
                };
                let answer = serde_json::json!({
                    "userId": r.user_id.to_string(),
                    "updated": r.updated,
                    "previous": r.previous,
                });
                to_js(&ctx, &answer)
            },
        )?,
    )?;
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

fn unhex(text: &[u8]) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    text.chunks(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}
