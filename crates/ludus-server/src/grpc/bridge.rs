//! Turns a gRPC call into the REST request that serves the same call, and
//! the REST answer back into the gRPC response or status, the way Nakama's
//! REST gateway maps the two the other way round: path fields fill the
//! route's `{field}`s, the body field (or the rest of the message) is the
//! JSON body, and every other field is a query parameter.

use axum::http::StatusCode;
use serde_json::{Map, Value};

use super::methods::{Body, Method, Verb};

/// A gRPC status code (`google.rpc.Code`).
pub(crate) type Code = u16;
pub(crate) const INVALID_ARGUMENT: Code = 3;
pub(crate) const INTERNAL: Code = 13;

/// The REST request for one gRPC call.
#[derive(Debug)]
pub(crate) struct RestRequest {
    pub method: axum::http::Method,
    /// Path and query, percent-encoded.
    pub path_and_query: String,
    /// The JSON body, if the route takes one.
    pub body: Option<Vec<u8>>,
}

/// Builds the REST request of `method` from its protobuf request message.
pub(crate) fn rest_request(method: &Method, message: &[u8]) -> Result<RestRequest, (Code, String)> {
    let value = (method.decode)(message).map_err(|e| (INVALID_ARGUMENT, e.to_string()))?;
    rest_request_of(method, value)
}

/// Builds the REST request of `method` from its request message as
/// protojson (the console's API explorer has it so).
pub(crate) fn rest_request_of(
    method: &Method,
    value: Value,
) -> Result<RestRequest, (Code, String)> {
    let mut fields = match value {
        Value::Object(fields) => fields,
        _ => Map::new(),
    };
    let template = method
        .paths
        .iter()
        .find(|path| params(path).all(|name| is_set(fields.get(name))))
        .copied();
    // REST has no route for an empty path segment; say which field is missing
    // rather than answer "no such path".
    let Some(template) = template else {
        let shortest = method.paths.last().copied().unwrap_or("/");
        let missing = params(shortest).find(|name| !is_set(fields.get(*name)));
        return Err((
            INVALID_ARGUMENT,
            format!("{} must be set", missing.unwrap_or("a path field")),
        ));
    };
    let mut path = String::with_capacity(template.len() + 32);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}').map_or(rest.len(), |i| open + i);
        path.push_str(&rest[..open]);
        let value = fields.remove(&rest[open + 1..close]);
        push_encoded(&mut path, &scalar(value.as_ref()).unwrap_or_default());
        rest = rest.get(close + 1..).unwrap_or("");
    }
    path.push_str(rest);

    let body = match method.body {
        Body::None => None,
        Body::All => Some(Value::Object(std::mem::take(&mut fields))),
        Body::Field(name) => Some(
            fields
                .remove(name)
                .unwrap_or_else(|| Value::Object(Map::new())),
        ),
        Body::StringField(name) => Some(
            fields
                .remove(name)
                .unwrap_or_else(|| Value::String(String::new())),
        ),
    };
    let mut query = String::new();
    for (name, value) in &fields {
        push_query(&mut query, name, value);
    }
    if !query.is_empty() {
        path.push('?');
        path.push_str(&query);
    }
    let verb = match method.verb {
        Verb::Get => axum::http::Method::GET,
        Verb::Post => axum::http::Method::POST,
        Verb::Put => axum::http::Method::PUT,
        Verb::Delete => axum::http::Method::DELETE,
    };
    let body = body
        .map(|b| serde_json::to_vec(&b))
        .transpose()
        .map_err(|e| (INTERNAL, e.to_string()))?;
    Ok(RestRequest {
        method: verb,
        path_and_query: path,
        body,
    })
}

/// The gRPC outcome of a REST answer: the encoded response message, or a
/// status code and message.
pub(crate) fn grpc_answer(
    method: &Method,
    status: StatusCode,
    body: &[u8],
) -> Result<Vec<u8>, (Code, String)> {
    if status.is_success() {
        return (method.encode)(body)
            .map_err(|e| (INTERNAL, format!("cannot encode the answer: {e}")));
    }
    // Every error the API writes is `{"code": N, "message": "..."}` with the
    // gRPC code; anything else (a layer's plain answer) maps by HTTP status.
    let parsed: Option<(Code, String)> = serde_json::from_slice::<Value>(body).ok().and_then(|v| {
        let code = v.get("code")?.as_u64()?;
        let message = v.get("message").and_then(Value::as_str).unwrap_or_default();
        Some((u16::try_from(code).ok()?, message.to_owned()))
    });
    Err(parsed.unwrap_or_else(|| {
        let message = String::from_utf8_lossy(body).trim().to_owned();
        (code_of_status(status), message)
    }))
}

/// The gRPC code for an HTTP status, as gRPC's HTTP mapping gives it.
fn code_of_status(status: StatusCode) -> Code {
    match status.as_u16() {
        400 | 413 | 415 => INVALID_ARGUMENT,
        401 => 16,
        403 => 7,
        404 | 405 => 12,
        409 => 6,
        429 => 8,
        499 => 1,
        501 => 12,
        503 => 14,
        504 => 4,
        _ => 2,
    }
}

/// The `{field}` names of a path template.
fn params(template: &str) -> impl Iterator<Item = &str> {
    template
        .split('{')
        .skip(1)
        .filter_map(|s| s.split('}').next())
}

fn is_set(value: Option<&Value>) -> bool {
    scalar(value).is_some_and(|s| !s.is_empty())
}

/// A path or query value as text; `None` for objects, lists and null.
fn scalar(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Appends `name=value` pairs: one per list item, `name.sub` for a message.
fn push_query(query: &mut String, name: &str, value: &Value) {
    match value {
        Value::Array(items) => items.iter().for_each(|item| push_query(query, name, item)),
        Value::Object(fields) => {
            for (sub, value) in fields {
                push_query(query, &format!("{name}.{sub}"), value);
            }
        }
        Value::Null => {}
        scalar_value => {
            if !query.is_empty() {
                query.push('&');
            }
            push_encoded(query, name);
            query.push('=');
            push_encoded(query, &scalar(Some(scalar_value)).unwrap_or_default());
        }
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn push_encoded(out: &mut String, text: &str) {
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grpc::methods::find;
    use ludus_proto::api;
    use ludus_proto::prost::Message as _;

    fn request(name: &str, message: &impl ludus_proto::prost::Message) -> RestRequest {
        rest_request(find(name).unwrap(), &message.encode_to_vec()).unwrap()
    }

    #[test]
    fn body_field_goes_in_the_body_and_the_rest_in_the_query() {
        let r = request(
            "AuthenticateDevice",
            &api::AuthenticateDeviceRequest {
                account: Some(api::AccountDevice {
                    id: "device-ü 1".into(),
                    vars: Default::default(),
                }),
                create: Some(ludus_proto::pbjson_types::BoolValue { value: true }),
                username: "zoë".into(),
            },
        );
        assert_eq!(r.method, axum::http::Method::POST);
        assert_eq!(
            r.path_and_query,
            "/v2/account/authenticate/device?create=true&username=zo%C3%AB"
        );
        let body: Value = serde_json::from_slice(&r.body.unwrap()).unwrap();
        assert_eq!(body, serde_json::json!({"id": "device-ü 1"}));
    }

    #[test]
    fn path_fields_are_encoded_and_lists_repeat() {
        let r = request(
            "ListLeaderboardRecords",
            &api::ListLeaderboardRecordsRequest {
                leaderboard_id: "a/b c".into(),
                owner_ids: vec!["u1".into(), "u2".into()],
                limit: Some(ludus_proto::pbjson_types::Int32Value { value: 5 }),
                ..Default::default()
            },
        );
        assert_eq!(r.method, axum::http::Method::GET);
        assert_eq!(
            r.path_and_query,
            "/v2/leaderboard/a%2Fb%20c?limit=5&owner_ids=u1&owner_ids=u2"
        );
        assert!(r.body.is_none());
    }

    #[test]
    fn the_most_specific_path_whose_fields_are_set_is_chosen() {
        let with_user = request(
            "ListStorageObjects",
            &api::ListStorageObjectsRequest {
                collection: "saves".into(),
                user_id: "u1".into(),
                ..Default::default()
            },
        );
        assert_eq!(with_user.path_and_query, "/v2/storage/saves/u1");
        let without = request(
            "ListStorageObjects",
            &api::ListStorageObjectsRequest {
                collection: "saves".into(),
                limit: Some(ludus_proto::pbjson_types::Int32Value { value: 3 }),
                ..Default::default()
            },
        );
        assert_eq!(without.path_and_query, "/v2/storage/saves?limit=3");
    }

    #[test]
    fn an_empty_path_field_is_named() {
        let message = api::DeleteGroupRequest::default().encode_to_vec();
        let err = rest_request(find("DeleteGroup").unwrap(), &message).unwrap_err();
        assert_eq!(err, (INVALID_ARGUMENT, "group_id must be set".to_owned()));
    }

    #[test]
    fn rpc_payload_is_a_json_string_body() {
        let r = request(
            "RpcFunc",
            &api::Rpc {
                id: "echo".into(),
                payload: "{\"a\":1}".into(),
                http_key: "k".into(),
            },
        );
        assert_eq!(r.path_and_query, "/v2/rpc/echo?http_key=k");
        assert_eq!(r.body.unwrap(), b"\"{\\\"a\\\":1}\"");
    }

    #[test]
    fn answers_map_to_messages_and_statuses() {
        let method = find("GetAccount").unwrap();
        let bytes = grpc_answer(
            method,
            StatusCode::OK,
            br#"{"wallet":"{}","user":{"id":"u1","username":"ann"}}"#,
        )
        .unwrap();
        let account = api::Account::decode(bytes.as_slice()).unwrap();
        assert_eq!(account.user.unwrap().username, "ann");
        assert_eq!(
            grpc_answer(
                method,
                StatusCode::UNAUTHORIZED,
                br#"{"code":16,"message":"auth token invalid"}"#
            ),
            Err((16, "auth token invalid".to_owned()))
        );
        assert_eq!(
            grpc_answer(method, StatusCode::SERVICE_UNAVAILABLE, b"busy"),
            Err((14, "busy".to_owned()))
        );
    }

    #[test]
    fn every_method_has_a_unique_name_and_a_route_path() {
        let mut names: Vec<_> = crate::grpc::methods::METHODS
            .iter()
            .map(|m| m.name)
            .collect();
        names.sort_unstable();
        let count = names.len();
        names.dedup();
        assert_eq!(names.len(), count, "a method is listed twice");
        for m in crate::grpc::methods::METHODS {
            assert!(m.paths.iter().all(|p| p.starts_with('/')), "{}", m.name);
        }
    }

    /// The per-API metrics name each request by a hand-written matcher
    /// (`api::names`); it must agree with Nakama's bindings for every route
    /// served, and hold a slot for exactly the names it answers.
    #[test]
    fn metric_names_agree_with_the_method_table() {
        use crate::api::absent::ABSENT_ROUTES;
        use crate::api::names::{API_NAMES, Called, api_of};
        use crate::grpc::methods::METHODS;
        let mut wrong = Vec::new();
        let mut answered = Vec::new();
        for m in METHODS {
            let verb = match m.verb {
                Verb::Get => axum::http::Method::GET,
                Verb::Post => axum::http::Method::POST,
                Verb::Put => axum::http::Method::PUT,
                Verb::Delete => axum::http::Method::DELETE,
            };
            for template in m.paths {
                let concrete: String = template
                    .split('/')
                    .map(|seg| if seg.starts_with('{') { "x1" } else { seg })
                    .collect::<Vec<_>>()
                    .join("/");
                let got = api_of(&verb, &concrete);
                if let Some(Called::Api(name)) = got {
                    answered.push(name);
                }
                let absent = ABSENT_ROUTES.iter().any(|(filter, path, _)| {
                    path == template
                        && axum::routing::MethodFilter::try_from(verb.clone())
                            .is_ok_and(|f| filter.or(f) == *filter)
                });
                let want = match m.name {
                    "RpcFunc" => Some(Called::Rpc("x1")),
                    name => Some(Called::Api(name)),
                };
                if !absent && got != want {
                    wrong.push(format!("{verb} {concrete}: {got:?}, want {want:?}"));
                }
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
        answered.sort_unstable();
        answered.dedup();
        let mut names = API_NAMES.to_vec();
        names.sort_unstable();
        assert_eq!(
            answered, names,
            "API_NAMES must be exactly the names answered"
        );
    }
}
