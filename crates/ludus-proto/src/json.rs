//! Entry points for the JSON encoding Nakama clients speak (REST bodies and
//! `format=json` sockets).
//!
//! The generated serde impls already follow protojson with proto field names,
//! enum numbers and unpopulated fields left out. What they lack is protojson's
//! rule that `null` means "not set" for every field: serde rejects `null` for a
//! string, number, bool, list or map. [`from_json`] adds that rule, so decode
//! client JSON with it rather than with `serde_json` directly.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Error from encoding or decoding JSON.
pub type JsonError = serde_json::Error;

/// Encodes `value` as compact JSON.
///
/// Fails only for values protojson cannot write either: a [`crate::Timestamp`]
/// outside years 1 to 9999, or an enum field holding a number its enum lacks.
pub fn to_json<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, JsonError> {
    serde_json::to_vec(value)
}

/// Encodes `value` as compact JSON text, e.g. for a WebSocket text frame.
///
/// Fails in the same cases as [`to_json`].
pub fn to_json_string<T: Serialize + ?Sized>(value: &T) -> Result<String, JsonError> {
    serde_json::to_string(value)
}

/// Decodes JSON into `T`, ignoring unknown fields and treating a `null`
/// member as absent.
///
/// Input without a `null` member takes a single direct pass. Only when that
/// pass fails and the text contains `null` is it decoded again through a
/// [`Value`] with null members removed, so the common case pays nothing for
/// the rule. A `null` inside a list stays an error, as in protojson.
pub fn from_json<T: DeserializeOwned>(json: &[u8]) -> Result<T, JsonError> {
    let direct_err = match serde_json::from_slice(json) {
        Ok(decoded) => return Ok(decoded),
        Err(err) => err,
    };
    if !json.windows(4).any(|window| window == b"null") {
        return Err(direct_err);
    }
    let Ok(mut value) = serde_json::from_slice::<Value>(json) else {
        // Not even well-formed JSON: the first error has the better position.
        return Err(direct_err);
    };
    remove_null_members(&mut value);
    T::deserialize(value)
}

/// Removes every object member whose value is `null`, at any depth.
fn remove_null_members(value: &mut Value) {
    match value {
        Value::Object(members) => {
            members.retain(|_, member| !member.is_null());
            members.values_mut().for_each(remove_null_members);
        }
        Value::Array(items) => items.iter_mut().for_each(remove_null_members),
        _ => {}
    }
}
