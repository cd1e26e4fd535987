//! The utilities of Nakama's JS `nk`: signing and encryption (`jwtGenerate`,
//! `aes128|256Encrypt|Decrypt`, `hmacSha256Hash`, `rsaSha256Hash`,
//! `bcryptHash|Compare`, `secureRandomBytes`), `sqlExec|Query`,
//! `httpRequest` (through the injected `HttpClient`), `fileRead` (only below
//! `runtime.path`), `metrics*`, `event`, `cronPrev`, `localcacheClear` and
//! `getSatori` (a client whose every call says Satori is not configured).
//! The computations are `crate::nk_pure`'s, shared with the Lua runtime.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use ludus_core::schedule::Schedule;
use ludus_core::store::{SqlRow, SqlValue};
use rquickjs::function::Rest;
use rquickjs::{ArrayBuffer, Ctx, Exception, Function, Object, Value};
use serde_json::{Map, Value as Json, json};
use sha2::Sha256;

use super::nk_common::{Args, NkError, answer, arg, bytes_of, define, nothing, served, string_of};
use super::shared::JsShared;
use crate::nk_pure;
use crate::services::HttpRequest;

/// Highest bcrypt cost `bcryptCompare` verifies (each step doubles the
/// work, in code no budget can interrupt), as Lua's.
const MAX_BCRYPT_COST: u32 = 14;

/// The Satori client's methods (Nakama's JS names).
const SATORI_METHODS: [&str; 14] = [
    "authenticate",
    "identityDelete",
    "propertiesGet",
    "propertiesUpdate",
    "eventsPublish",
    "serverEventsPublish",
    "experimentsList",
    "flagsList",
    "flagsOverridesList",
    "liveEventsList",
    "liveEventJoin",
    "messagesList",
    "messageUpdate",
    "messageDelete",
];

pub(super) fn install<'js>(
    ctx: &Ctx<'js>,
    nk: &Object<'js>,
    shared: &Arc<JsShared>,
) -> rquickjs::Result<()> {
    crypto(ctx, nk, shared)?;
    binary(ctx, nk)?;
    server(ctx, nk, shared)?;
    observe(ctx, nk, shared)
}

fn crypto<'js>(ctx: &Ctx<'js>, nk: &Object<'js>, shared: &Arc<JsShared>) -> rquickjs::Result<()> {
    define(ctx, nk, shared, "jwtGenerate", |_, a| {
        let algo = a.string(0, "algorithm")?;
        let key = a.string(1, "signing key")?;
        if key.is_empty() {
            return Err(arg("signing key cannot be empty"));
        }
        let claims = match a.get(2) {
            c @ Json::Object(_) => c,
            _ => return Err(arg("claims must be an object")),
        };
        let token = nk_pure::jwt_sign(&algo, &key, claims).map_err(NkError::Server)?;
        answer(token.into())
    })?;
    for (name, key_len, encrypt) in [
        ("aes128Encrypt", 16, true),
        ("aes128Decrypt", 16, false),
        ("aes256Encrypt", 32, true),
        ("aes256Decrypt", 32, false),
    ] {
        // Nakama's: the ciphertext is base64 text, the clear text a string.
        define(ctx, nk, shared, name, move |_, a: &Args| {
            let input = a.string(0, "input")?;
            let key = a.string(1, "key")?;
            if key.len() != key_len {
                return Err(NkError::Server(format!("expects key {key_len} bytes long")));
            }
            if encrypt {
                let sealed = nk_pure::aes_encrypt(input.as_bytes(), key.as_bytes());
                return answer(STANDARD.encode(sealed).into());
            }
            let sealed = STANDARD
                .decode(input.as_bytes())
                .map_err(|e| NkError::Server(format!("error decoding cipher text: {e}")))?;
            let clear = nk_pure::aes_decrypt(&sealed, key.as_bytes()).map_err(NkError::Server)?;
            answer(String::from_utf8_lossy(&clear).into_owned().into())
        })?;
    }
    define(ctx, nk, shared, "bcryptHash", |_, a| {
        let input = a.string(0, "input")?;
        let hash = bcrypt::hash(input.as_bytes(), bcrypt::DEFAULT_COST)
            .map_err(|e| NkError::Server(format!("error hashing input: {e}")))?;
        answer(hash.into())
    })?;
    define(ctx, nk, shared, "bcryptCompare", |_, a| {
        let hash = a.string(0, "hash")?;
        if hash.is_empty() {
            return Err(arg("hash cannot be empty"));
        }
        let plaintext = a.string(1, "plaintext")?;
        if plaintext.is_empty() {
            return Err(arg("plaintext cannot be empty"));
        }
        // The cost comes from the hash: a module-made `$2b$31$…` would hold
        // the context for hours.
        let cost = hash.split('$').nth(2).and_then(|c| c.parse::<u32>().ok());
        if cost.is_some_and(|c| c > MAX_BCRYPT_COST) {
            return Err(NkError::Server(format!(
                "the hash's cost is above {MAX_BCRYPT_COST}, the most a module may verify"
            )));
        }
        answer(
            bcrypt::verify(plaintext.as_bytes(), &hash)
                .unwrap_or(false)
                .into(),
        )
    })?;
    Ok(())
}

/// The functions whose bytes are not text: they take strings or
/// `ArrayBuffer`s and answer `ArrayBuffer`s.
fn binary<'js>(ctx: &Ctx<'js>, nk: &Object<'js>) -> rquickjs::Result<()> {
    nk.set(
        "hmacSha256Hash",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, input: Value<'js>, key: Value<'js>| {
                let input = bytes_of(&ctx, "hmacSha256Hash", input)?;
                let key = bytes_of(&ctx, "hmacSha256Hash", key)?;
                if key.is_empty() {
                    return Err(Exception::throw_type(
                        &ctx,
                        "hmacSha256Hash: key cannot be empty",
                    ));
                }
                let mut mac = Hmac::<Sha256>::new_from_slice(&key).map_err(|e| {
                    Exception::throw_message(&ctx, &format!("error creating hash: {e}"))
                })?;
                mac.update(&input);
                ArrayBuffer::new(ctx.clone(), mac.finalize().into_bytes().to_vec())
            },
        )?,
    )?;
    // Nakama answers the signature's raw bytes as a string, which a JS
    // string cannot hold intact; an ArrayBuffer can (and `base64Encode`
    // takes one).
    nk.set(
        "rsaSha256Hash",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, input: Value<'js>, key: Value<'js>| {
                let input = bytes_of(&ctx, "rsaSha256Hash", input)?;
                let key = bytes_of(&ctx, "rsaSha256Hash", key)?;
                if key.is_empty() {
                    return Err(Exception::throw_type(
                        &ctx,
                        "rsaSha256Hash: key cannot be empty",
                    ));
                }
                let pem = String::from_utf8_lossy(&key);
                let signature = nk_pure::rsa_sha256(&input, &pem)
                    .map_err(|e| Exception::throw_message(&ctx, &e))?;
                ArrayBuffer::new(ctx.clone(), signature)
            },
        )?,
    )?;
    nk.set(
        "secureRandomBytes",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, count: Value<'js>| {
            let n = count.as_number().filter(|n| n.fract() == 0.0);
            let Some(n) = n.filter(|n| (1.0..=1000.0).contains(n)) else {
                return Err(Exception::throw_type(
                    &ctx,
                    "secureRandomBytes: count must be 1-1000",
                ));
            };
            let mut bytes = vec![0u8; n as usize];
            rand::fill(&mut bytes[..]);
            ArrayBuffer::new(ctx.clone(), bytes)
        })?,
    )?;
    // `getSatori()` answers a client, as Nakama does, so a module that takes
    // it at load time still loads; each of its calls fails, saying why.
    nk.set(
        "getSatori",
        Function::new(ctx.clone(), |ctx: Ctx<'js>| {
            let client = Object::new(ctx.clone())?;
            for name in SATORI_METHODS {
                let f = Function::new(ctx.clone(), |ctx: Ctx<'js>, _: Rest<Value<'js>>| {
                    Err::<(), _>(Exception::throw_message(
                        &ctx,
                        nk_pure::SATORI_NOT_CONFIGURED,
                    ))
                })?;
                client.set(name, f)?;
            }
            Ok::<_, rquickjs::Error>(client)
        })?,
    )?;
    Ok(())
}

fn sql_params(a: &Args) -> Result<Vec<SqlValue>, NkError> {
    let items = match a.get(1) {
        Json::Null => return Ok(Vec::new()),
        Json::Array(items) => items,
        _ => return Err(arg("expects array of query params")),
    };
    Ok(items
        .iter()
        .map(|v| match v {
            Json::Null => SqlValue::Null,
            Json::Bool(b) => SqlValue::Bool(*b),
            Json::Number(n) => match n.as_i64() {
                Some(i) => SqlValue::Int(i),
                None => SqlValue::Float(n.as_f64().unwrap_or_default()),
            },
            Json::String(s) => SqlValue::Text(s.clone()),
            other => SqlValue::Text(other.to_string()),
        })
        .collect())
}

fn row_json(row: &SqlRow) -> Json {
    let mut o = Map::new();
    for (name, value) in row {
        let v = match value {
            SqlValue::Null => Json::Null,
            SqlValue::Bool(b) => (*b).into(),
            SqlValue::Int(i) => (*i).into(),
            SqlValue::Float(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
            SqlValue::Text(s) => s.clone().into(),
            SqlValue::Bytes(b) => String::from_utf8_lossy(b).into_owned().into(),
        };
        o.insert(name.clone(), v);
    }
    Json::Object(o)
}

fn server<'js>(ctx: &Ctx<'js>, nk: &Object<'js>, shared: &Arc<JsShared>) -> rquickjs::Result<()> {
    define(ctx, nk, shared, "sqlExec", |s, a| {
        let query = a.required(0, "query")?;
        let params = sql_params(a)?;
        let services = s.services.clone();
        let n = served(s, "failed to exec db query", async move {
            services.sql_exec(&query, params).await
        })?;
        answer(json!({ "rowsAffected": n }))
    })?;
    define(ctx, nk, shared, "sqlQuery", |s, a| {
        let query = a.required(0, "query")?;
        let params = sql_params(a)?;
        let services = s.services.clone();
        let rows = served(s, "failed to exec db query", async move {
            services.sql_query(&query, params).await
        })?;
        answer(rows.iter().map(row_json).collect())
    })?;
    define(ctx, nk, shared, "httpRequest", |s, a| {
        let url = a.string(0, "url")?;
        if url.is_empty() {
            return Err(arg("URL string cannot be empty"));
        }
        let method = a.string(1, "method")?.to_ascii_uppercase();
        if !["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"].contains(&method.as_str()) {
            return Err(arg(
                "invalid method must be one of: 'get', 'post', 'put', 'patch', 'delete', 'head'",
            ));
        }
        let mut headers = Vec::new();
        if let Some(o) = a.object(2, "headers")? {
            for (k, v) in o {
                headers.push((k.clone(), string_of(v, "header values")?));
            }
        }
        let body = a.string(3, "body")?.into_bytes();
        let ms = a.int_or(4, 0, "timeout")?;
        let timeout = Duration::from_millis(if ms > 0 { ms as u64 } else { 5_000 });
        let request = HttpRequest {
            url,
            method,
            headers,
            body,
            timeout,
        };
        let services = s.services.clone();
        let response = served(s, "HTTP request error", async move {
            services.http_request(request).await
        })?;
        let headers: BTreeMap<String, Vec<String>> = response
            .headers
            .iter()
            .map(|(k, v)| (nk_pure::canonical_header(k), v.clone()))
            .collect();
        answer(json!({
            "code": response.status,
            "headers": headers,
            "body": String::from_utf8_lossy(&response.body),
        }))
    })?;
    define(ctx, nk, shared, "fileRead", |s, a| {
        let rel = a.required(0, "relative path string")?;
        let bytes = nk_pure::read_module_file(&s.settings.path, &rel).map_err(NkError::Server)?;
        answer(String::from_utf8_lossy(&bytes).into_owned().into())
    })?;
    Ok(())
}

/// `tags` (argument 1) of a metrics call: an object of strings.
fn tags(a: &Args) -> Result<BTreeMap<String, String>, NkError> {
    let mut out = BTreeMap::new();
    if let Some(o) = a.object(1, "tags")? {
        for (k, v) in o {
            out.insert(k.clone(), string_of(v, "tag values")?);
        }
    }
    Ok(out)
}

fn observe<'js>(ctx: &Ctx<'js>, nk: &Object<'js>, shared: &Arc<JsShared>) -> rquickjs::Result<()> {
    define(ctx, nk, shared, "metricsCounterAdd", |s, a| {
        let name = a.required(0, "name")?;
        let delta = a.int_or(2, 0, "delta")?;
        s.services.metrics_counter_add(&name, tags(a)?, delta);
        nothing()
    })?;
    define(ctx, nk, shared, "metricsGaugeSet", |s, a| {
        let name = a.required(0, "name")?;
        let value = match a.get(2) {
            Json::Number(n) => n.as_f64().unwrap_or_default(),
            _ => return Err(arg("expects value to be a number")),
        };
        s.services.metrics_gauge_set(&name, tags(a)?, value);
        nothing()
    })?;
    define(ctx, nk, shared, "metricsTimerRecord", |s, a| {
        let name = a.required(0, "name")?;
        let ns = a.int_or(2, 0, "value")?;
        let elapsed = Duration::from_nanos(ns.max(0) as u64);
        s.services.metrics_timer_record(&name, tags(a)?, elapsed);
        nothing()
    })?;
    define(ctx, nk, shared, "event", |s, a| {
        let name = a.required(0, "event name")?;
        let mut properties = BTreeMap::new();
        if let Some(o) = a.object(1, "properties")? {
            for (k, v) in o {
                properties.insert(k.clone(), string_of(v, "property values")?);
            }
        }
        let timestamp = a.int_or(2, 0, "timestamp")?;
        let external = a.bool_or(3, false, "external")?;
        s.events.push(crate::events::Queued {
            kind: crate::events::EventKind::Custom,
            ctx: crate::context::CallContext::new(crate::context::ExecutionMode::Event),
            event: crate::events::Event {
                name,
                properties,
                timestamp_ms: timestamp.saturating_mul(1000),
                external,
            },
        });
        nothing()
    })?;
    define(ctx, nk, shared, "cronPrev", |_, a| {
        let expr = a.required(0, "cron string")?;
        let ts = a.int_or(1, 0, "timestamp")?;
        if ts == 0 {
            return Err(arg("expects timestamp in seconds"));
        }
        let cron = Schedule::parse(&expr).map_err(|_| arg("expects a valid cron string"))?;
        // Nakama's `Last` answers the last match strictly before `ts`.
        let prev = ts.checked_sub(1).and_then(|t| cron.last_at_or_before(t));
        answer(prev.unwrap_or(0).into())
    })?;
    define(ctx, nk, shared, "localcacheClear", |s, _| {
        s.cache.clear();
        nothing()
    })?;
    Ok(())
}
