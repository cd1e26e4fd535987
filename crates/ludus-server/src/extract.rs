//! Request extractors: the server key (HTTP Basic), the session (Bearer
//! token), protojson bodies and Nakama-style query parameters. Each turns bad
//! input into an `HttpError` that says what is wrong.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ludus_core::Code;
use ludus_core::accounts::Caller;
use serde::de::DeserializeOwned;
use subtle::ConstantTimeEq as _;

use crate::api::access_log::RequestUser;
use crate::error::HttpError;
use crate::state::AppState;

/// Proof that the request carried the server key as its Basic user name.
#[derive(Debug)]
pub(crate) struct ServerKey;

impl FromRequestParts<AppState> for ServerKey {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, HttpError> {
        let Some(value) = parts.headers.get(header::AUTHORIZATION) else {
            return Err(HttpError::unauthenticated(
                "server key required, send it as the HTTP Basic user name",
            ));
        };
        let user = value
            .to_str()
            .ok()
            .and_then(|v| strip_scheme(v, "Basic"))
            .and_then(|b64| STANDARD.decode(b64.trim()).ok())
            .map(|raw| match raw.iter().position(|b| *b == b':') {
                Some(i) => raw[..i].to_vec(),
                None => raw,
            })
            .ok_or_else(|| {
                HttpError::unauthenticated(
                    "server key required, send it as the HTTP Basic user name",
                )
            })?;
        if bool::from(user.ct_eq(state.config.socket.server_key.as_bytes())) {
            Ok(ServerKey)
        } else {
            Err(HttpError::unauthenticated("server key invalid"))
        }
    }
}

/// The authenticated user of a request, from `Authorization: Bearer <token>`.
#[derive(Debug)]
pub(crate) struct Session(pub Caller);

impl FromRequestParts<AppState> for Session {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, HttpError> {
        let token = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| strip_scheme(v, "Bearer"))
            .ok_or_else(|| {
                HttpError::unauthenticated(
                    "auth token required, send it as `Authorization: Bearer <token>`",
                )
            })?;
        let caller = state.accounts.verify_access(token.trim())?;
        if let Some(slot) = parts.extensions.get::<RequestUser>() {
            slot.set(caller.user_id);
        }
        Ok(Session(caller))
    }
}

pub(crate) fn strip_scheme<'a>(value: &'a str, scheme: &str) -> Option<&'a str> {
    let (s, rest) = value.split_once(' ')?;
    s.eq_ignore_ascii_case(scheme).then_some(rest)
}

/// A JSON body decoded with Nakama's protojson rules; an empty body is `{}`.
#[derive(Debug)]
pub(crate) struct ProtoJson<T>(pub T);

impl<T: DeserializeOwned + Default> FromRequest<AppState> for ProtoJson<T> {
    type Rejection = HttpError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, HttpError> {
        let limit = state.config.socket.max_request_size_bytes;
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                HttpError::with_status(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    Code::InvalidArgument,
                    format!("request body too large, the limit is {limit} bytes"),
                )
            } else {
                HttpError::invalid(format!("cannot read request body: {rejection}"))
            }
        })?;
        decode_json(&bytes).map(ProtoJson)
    }
}

pub(crate) fn decode_json<T: DeserializeOwned + Default>(bytes: &[u8]) -> Result<T, HttpError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    ludus_proto::from_json(bytes).map_err(|e| {
        let what = if e.is_syntax() || e.is_eof() {
            "malformed JSON body"
        } else {
            "invalid JSON body"
        };
        HttpError::invalid(format!("{what}: {e}"))
    })
}

/// Query parameters in order, repeated keys kept (`?ids=a&ids=b`).
#[derive(Debug, Default)]
pub(crate) struct QueryParams(pub Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for QueryParams {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, HttpError> {
        let q = parts.uri.query().unwrap_or("");
        Ok(QueryParams(
            form_urlencoded::parse(q.as_bytes()).into_owned().collect(),
        ))
    }
}

impl QueryParams {
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn all(&self, key: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// A 32-bit integer parameter (a wrapper field such as `limit` or `state`).
    pub(crate) fn int32(
        &self,
        key: &str,
    ) -> Result<Option<ludus_proto::pbjson_types::Int32Value>, HttpError> {
        match self.get(key) {
            None | Some("") => Ok(None),
            Some(raw) => raw
                .parse::<i32>()
                .map(|value| Some(ludus_proto::pbjson_types::Int32Value { value }))
                .map_err(|_| {
                    HttpError::invalid(format!(
                        "query parameter `{key}` must be a 32-bit integer, got {raw:?}"
                    ))
                }),
        }
    }

    /// A boolean parameter as grpc-gateway reads it (`true`/`false`/`1`/`0`).
    pub(crate) fn bool(&self, key: &str) -> Result<Option<bool>, HttpError> {
        match self.get(key) {
            None | Some("") => Ok(None),
            Some("true" | "1" | "True" | "TRUE") => Ok(Some(true)),
            Some("false" | "0" | "False" | "FALSE") => Ok(Some(false)),
            Some(other) => Err(HttpError::invalid(format!(
                "query parameter `{key}` must be true or false, got {other:?}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use ludus_proto::api;
    use proptest::prelude::*;

    use super::decode_json;

    #[test]
    fn empty_body_is_the_default_message() {
        let d: api::SessionLogoutRequest = decode_json(b"  \n").unwrap();
        assert_eq!(d, api::SessionLogoutRequest::default());
    }

    #[test]
    fn null_members_are_unset() {
        let d: api::AccountDevice = decode_json(br#"{"id":"abc","vars":null}"#).unwrap();
        assert_eq!(d.id, "abc");
        assert!(d.vars.is_empty());
    }

    proptest! {
        // Untrusted bytes never panic a decoder; they decode or give a 400.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = decode_json::<api::AccountDevice>(&bytes);
            let _ = decode_json::<api::AccountEmail>(&bytes);
            let _ = decode_json::<api::UpdateAccountRequest>(&bytes);
            let _ = decode_json::<api::SessionRefreshRequest>(&bytes);
        }

        // JSON-shaped noise, closer to what a fuzzer would find interesting.
        #[test]
        fn json_like_text_never_panics(s in r#"[{}\[\]":,a-z0-9 .\-\\]{0,200}"#) {
            let _ = decode_json::<api::AccountEmail>(s.as_bytes());
            let _ = decode_json::<api::UpdateAccountRequest>(s.as_bytes());
        }

        // Every string survives the trip through a body, escapes included.
        #[test]
        fn fields_round_trip(id in ".{0,64}", key in "[a-z]{1,8}", value in ".{0,32}") {
            let body = serde_json::json!({"id": id, "vars": {key.clone(): value.clone()}});
            let d: api::AccountDevice = decode_json(body.to_string().as_bytes()).unwrap();
            prop_assert_eq!(d.id, id);
            prop_assert_eq!(d.vars.get(&key), Some(&value));
        }
    }
}
