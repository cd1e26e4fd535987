//! What every group of JS `nk` functions shares: a server function is
//! plain Rust over JSON ([`define`]): its arguments arrive as JSON values
//! ([`Args`]), it answers JSON (or nothing, `undefined`), and its errors are
//! Nakama's two kinds ([`NkError`]). Also the JS objects Nakama builds for
//! users, accounts and storage objects. The `nk_*` files depend on this one
//! and on the runtime's lower layers, never on each other.

use std::future::Future;
use std::sync::Arc;

use ludus_core::ApiError;
use ludus_core::model::{Account, User};
use ludus_core::storage::StorageObject;
use rquickjs::function::Rest;
use rquickjs::{ArrayBuffer, Ctx, Exception, Function, Object, Value};
use serde_json::{Map, Value as Json, json};
use uuid::Uuid;

use super::shared::JsShared;

/// Deepest nesting of arrays and objects an argument may have.
const MAX_DEPTH: usize = 64;

/// A failed `nk` function, as Nakama throws it: a bad argument is a
/// `TypeError`, a refusal of the server an `Error`; neither carries a code,
/// so an uncaught one reaches the client as 13 (Internal), as in Nakama.
#[derive(Debug)]
pub(super) enum NkError {
    Arg(String),
    Server(String),
}

pub(super) type NkResult = Result<Option<Json>, NkError>;

pub(super) fn arg(message: impl Into<String>) -> NkError {
    NkError::Arg(message.into())
}

/// The answer of a function that returns nothing (`undefined`).
pub(super) fn nothing() -> NkResult {
    Ok(None)
}

pub(super) fn answer(v: Json) -> NkResult {
    Ok(Some(v))
}

/// Adds `name` to `nk`: `f` gets the context's shared state and the
/// arguments as JSON; functions passed as arguments read as `null`.
pub(super) fn define<'js, F>(
    ctx: &Ctx<'js>,
    nk: &Object<'js>,
    shared: &Arc<JsShared>,
    name: &'static str,
    f: F,
) -> rquickjs::Result<()>
where
    F: Fn(&JsShared, &Args) -> NkResult + 'static,
{
    let s = shared.clone();
    let func = Function::new(ctx.clone(), move |ctx: Ctx<'js>, rest: Rest<Value<'js>>| {
        let mut args = Vec::with_capacity(rest.0.len());
        for v in rest.0 {
            args.push(json_of(v, 0).map_err(|e| throw(&ctx, name, e))?);
        }
        match f(&s, &Args(args)) {
            Ok(Some(v)) => to_js(&ctx, &v),
            Ok(None) => Ok(Value::new_undefined(ctx.clone())),
            Err(e) => Err(throw(&ctx, name, e)),
        }
    })?;
    nk.set(name, func)
}

/// `e` thrown as Nakama throws it from the function `name`.
pub(super) fn throw(ctx: &Ctx<'_>, name: &str, e: NkError) -> rquickjs::Error {
    match e {
        NkError::Arg(m) => Exception::throw_type(ctx, &format!("{name}: {m}")),
        NkError::Server(m) => Exception::throw_message(ctx, &m),
    }
}

/// A JS value as JSON: `undefined` and functions as `null`, whole numbers
/// as integers, an `ArrayBuffer` as the text its bytes hold.
pub(super) fn json_of(v: Value<'_>, depth: usize) -> Result<Json, NkError> {
    if depth > MAX_DEPTH {
        return Err(arg(format!(
            "an argument nests deeper than {MAX_DEPTH} levels"
        )));
    }
    let bad = |e: rquickjs::Error| arg(format!("unreadable argument: {e}"));
    if v.is_undefined() || v.is_null() || v.is_function() {
        return Ok(Json::Null);
    }
    if let Some(b) = v.as_bool() {
        return Ok(Json::Bool(b));
    }
    if let Some(i) = v.as_int() {
        return Ok(Json::from(i));
    }
    if let Some(f) = v.as_float() {
        if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 {
            return Ok(Json::from(f as i64));
        }
        return Ok(serde_json::Number::from_f64(f).map_or(Json::Null, Json::Number));
    }
    if let Some(s) = v.as_string() {
        return Ok(Json::String(s.to_string().map_err(bad)?));
    }
    if let Some(a) = v.as_array() {
        let mut out = Vec::with_capacity(a.len());
        for item in a.iter::<Value>() {
            out.push(json_of(item.map_err(bad)?, depth + 1)?);
        }
        return Ok(Json::Array(out));
    }
    if let Some(buffer) = ArrayBuffer::from_value(v.clone()) {
        let bytes = buffer.as_bytes().unwrap_or_default();
        return Ok(Json::String(String::from_utf8_lossy(bytes).into_owned()));
    }
    if let Some(o) = v.as_object() {
        let mut out = Map::new();
        for entry in o.props::<String, Value>() {
            let (k, item) = entry.map_err(bad)?;
            if item.is_undefined() || item.is_function() {
                continue;
            }
            out.insert(k, json_of(item, depth + 1)?);
        }
        return Ok(Json::Object(out));
    }
    Ok(Json::Null)
}

/// A function's arguments; a missing one reads as `null`.
pub(super) struct Args(pub(super) Vec<Json>);

static NULL: Json = Json::Null;

impl Args {
    pub(super) fn get(&self, i: usize) -> &Json {
        self.0.get(i).unwrap_or(&NULL)
    }

    /// A string argument; `null` reads as empty, another type is refused.
    pub(super) fn string(&self, i: usize, what: &str) -> Result<String, NkError> {
        string_of(self.get(i), what)
    }

    /// A string argument that must be given and not be empty.
    pub(super) fn required(&self, i: usize, what: &str) -> Result<String, NkError> {
        let s = self.string(i, what)?;
        if s.is_empty() {
            return Err(arg(format!("expects {what}")));
        }
        Ok(s)
    }

    /// A user id (or another uuid), required.
    pub(super) fn uuid(&self, i: usize, what: &str) -> Result<Uuid, NkError> {
        let s = self.required(i, what)?;
        Uuid::parse_str(&s).map_err(|_| arg(format!("invalid {what}: {s:?} is not a uuid")))
    }

    pub(super) fn bool_or(&self, i: usize, default: bool, what: &str) -> Result<bool, NkError> {
        match self.get(i) {
            Json::Null => Ok(default),
            Json::Bool(b) => Ok(*b),
            _ => Err(arg(format!("expects {what} to be a boolean"))),
        }
    }

    /// A whole number, or `default` when not given.
    pub(super) fn int_or(&self, i: usize, default: i64, what: &str) -> Result<i64, NkError> {
        match self.get(i) {
            Json::Null => Ok(default),
            v => int_of(v, what),
        }
    }

    /// An array of strings; `null` reads as empty.
    pub(super) fn strings(&self, i: usize, what: &str) -> Result<Vec<String>, NkError> {
        strings_of(self.get(i), what)
    }

    /// An object argument (`null` reads as none).
    pub(super) fn object(
        &self,
        i: usize,
        what: &str,
    ) -> Result<Option<&Map<String, Json>>, NkError> {
        match self.get(i) {
            Json::Null => Ok(None),
            Json::Object(o) => Ok(Some(o)),
            _ => Err(arg(format!("expects {what} to be an object"))),
        }
    }
}

pub(super) fn string_of(v: &Json, what: &str) -> Result<String, NkError> {
    match v {
        Json::Null => Ok(String::new()),
        Json::String(s) => Ok(s.clone()),
        _ => Err(arg(format!("expects {what} to be a string"))),
    }
}

pub(super) fn int_of(v: &Json, what: &str) -> Result<i64, NkError> {
    match v {
        Json::Number(n) => n
            .as_i64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.is_finite())
                    .map(|f| f.trunc() as i64)
            })
            .ok_or_else(|| arg(format!("expects {what} to be a whole number"))),
        _ => Err(arg(format!("expects {what} to be a number"))),
    }
}

pub(super) fn strings_of(v: &Json, what: &str) -> Result<Vec<String>, NkError> {
    match v {
        Json::Null => Ok(Vec::new()),
        Json::Array(a) => a.iter().map(|s| string_of(s, what)).collect(),
        _ => Err(arg(format!("expects {what} to be an array of strings"))),
    }
}

/// Each string of an array as a uuid.
pub(super) fn uuids_of(v: &Json, what: &str) -> Result<Vec<Uuid>, NkError> {
    strings_of(v, what)?
        .iter()
        .map(|s| {
            Uuid::parse_str(s).map_err(|_| arg(format!("invalid {what}: {s:?} is not a uuid")))
        })
        .collect()
}

/// A key of an object: `null` when absent.
pub(super) fn field<'a>(o: &'a Map<String, Json>, key: &str) -> &'a Json {
    o.get(key).unwrap_or(&NULL)
}

/// A JSON object argument as stored text; `null` reads as `None`.
pub(super) fn json_text(v: &Json, what: &str) -> Result<Option<String>, NkError> {
    match v {
        Json::Null => Ok(None),
        Json::Object(_) => Ok(Some(v.to_string())),
        _ => Err(arg(format!("expects {what} to be an object"))),
    }
}

/// Waits for a server call on this context's thread; its error message is
/// prefixed with what failed, as Nakama's are.
pub(super) fn served<T: Send + 'static>(
    shared: &JsShared,
    what: &str,
    call: impl Future<Output = Result<T, ApiError>> + Send + 'static,
) -> Result<T, NkError> {
    shared
        .wait(call)
        .map_err(NkError::Server)?
        .map_err(|e| NkError::Server(format!("{what}: {}", e.message)))
}

/// Stored JSON text as a value (`{}` when empty).
pub(super) fn parsed(text: &str) -> Json {
    if text.is_empty() {
        return json!({});
    }
    serde_json::from_str(text).unwrap_or(Json::Null)
}

/// Nakama's `nkruntime.User`: camelCase keys, times in UNIX seconds, the
/// platform ids only when set.
pub(super) fn user_json(user: &User) -> Json {
    let mut o = Map::new();
    o.insert("userId".into(), user.id.to_string().into());
    o.insert("username".into(), user.username.clone().into());
    o.insert("displayName".into(), user.display_name.clone().into());
    o.insert("avatarUrl".into(), user.avatar_url.clone().into());
    o.insert("langTag".into(), user.lang_tag.clone().into());
    o.insert("location".into(), user.location.clone().into());
    o.insert("timezone".into(), user.timezone.clone().into());
    for (key, value) in [
        ("appleId", &user.apple_id),
        ("facebookId", &user.facebook_id),
        ("facebookInstantGameId", &user.facebook_instant_game_id),
        ("googleId", &user.google_id),
        ("gamecenterId", &user.gamecenter_id),
        ("steamId", &user.steam_id),
    ] {
        if !value.is_empty() {
            o.insert(key.into(), value.clone().into());
        }
    }
    o.insert("online".into(), user.online.into());
    o.insert("edgeCount".into(), user.edge_count.into());
    o.insert("createTime".into(), user.create_time.into());
    o.insert("updateTime".into(), user.update_time.into());
    o.insert("metadata".into(), parsed(&user.metadata));
    Json::Object(o)
}

/// Nakama's `nkruntime.Account`: `user`, `wallet`, then what is set of
/// email, devices, custom id and times.
pub(super) fn account_json(account: &Account) -> Json {
    let mut o = Map::new();
    o.insert("user".into(), user_json(&account.user));
    o.insert("wallet".into(), parsed(&account.wallet));
    if let Some(email) = &account.email {
        o.insert("email".into(), email.clone().into());
    }
    if !account.devices.is_empty() {
        let devices = account.devices.iter().map(|d| json!({ "id": d })).collect();
        o.insert("devices".into(), Json::Array(devices));
    }
    if let Some(id) = &account.custom_id {
        o.insert("customId".into(), id.clone().into());
    }
    if let Some(t) = account.verify_time {
        o.insert("verifyTime".into(), t.into());
    }
    if let Some(t) = account.disable_time {
        o.insert("disableTime".into(), t.into());
    }
    Json::Object(o)
}

/// Nakama's `nkruntime.StorageObject`.
pub(super) fn storage_object_json(o: &StorageObject) -> Json {
    json!({
        "key": o.key,
        "collection": o.collection,
        "userId": o.user_id.to_string(),
        "version": o.version,
        "permissionRead": o.read.as_i64(),
        "permissionWrite": o.write.as_i64(),
        "createTime": o.create_time,
        "updateTime": o.update_time,
        "value": parsed(&o.value),
    })
}

/// A JSON value as a JS value.
pub(super) fn to_js<'js>(ctx: &Ctx<'js>, v: &serde_json::Value) -> rquickjs::Result<Value<'js>> {
    match v {
        serde_json::Value::String(s) => {
            rquickjs::String::from_str(ctx.clone(), s).map(|s| s.into_value())
        }
        other => ctx.json_parse(other.to_string()),
    }
}

/// The bytes of a string or an `ArrayBuffer` argument.
pub(super) fn bytes_of<'js>(
    ctx: &Ctx<'js>,
    what: &str,
    v: Value<'js>,
) -> rquickjs::Result<Vec<u8>> {
    if let Some(s) = v.as_string() {
        return Ok(s.to_string()?.into_bytes());
    }
    if let Some(buffer) = ArrayBuffer::from_value(v) {
        return Ok(buffer.as_bytes().unwrap_or_default().to_vec());
    }
    Err(Exception::throw_type(
        ctx,
        &format!("{what} expects a string or an ArrayBuffer"),
    ))
}
