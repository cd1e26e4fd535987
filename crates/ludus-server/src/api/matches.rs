//! `GET /v2/match?limit=&authoritative=&label=&min_size=&max_size=&query=`:
//! live matches, with the runtime's `listmatches` hooks.

use axum::extract::State;
use axum::response::Response;
use ludus_proto::api;
use ludus_proto::pbjson_types::{BoolValue, Int32Value, StringValue};
use ludus_realtime::matches::{ListRequest, MAX_LIST_LIMIT};

use super::json;
use crate::error::HttpError;
use crate::extract::{QueryParams, Session};
use crate::runtime::{self, ClientAddr};
use crate::state::AppState;

pub(super) async fn list(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    query: QueryParams,
) -> Result<Response, HttpError> {
    const API: &str = "listmatches";
    let int = |key: &str| -> Result<Option<Int32Value>, HttpError> {
        match query.get(key).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v
                .parse::<i32>()
                .map(|value| Some(Int32Value { value }))
                .map_err(|_| HttpError::invalid(format!("invalid {key}, it must be a number"))),
        }
    };
    let string = |key: &str| {
        query.get(key).map(|v| StringValue {
            value: v.to_owned(),
        })
    };
    let req = api::ListMatchesRequest {
        limit: int("limit")?,
        authoritative: query
            .bool("authoritative")?
            .map(|value| BoolValue { value }),
        label: string("label"),
        min_size: int("min_size")?,
        max_size: int("max_size")?,
        query: string("query"),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    // Nakama lists 10 matches when the client names no limit.
    let limit = req.limit.as_ref().map_or(10, |l| l.value);
    if !(1..=MAX_LIST_LIMIT as i32).contains(&limit) {
        return Err(HttpError::invalid(format!(
            "invalid limit, it must be between 1 and {MAX_LIST_LIMIT}"
        )));
    }
    let size = |v: &Option<Int32Value>| -> Result<Option<usize>, HttpError> {
        match v {
            None => Ok(None),
            Some(v) if v.value >= 0 => Ok(Some(v.value as usize)),
            Some(_) => Err(HttpError::invalid("match sizes must not be negative")),
        }
    };
    let request = ListRequest {
        limit: limit as usize,
        authoritative: req.authoritative.as_ref().map(|b| b.value),
        label: req.label.as_ref().map(|l| l.value.clone()),
        min_size: size(&req.min_size)?,
        max_size: size(&req.max_size)?,
        query: req.query.as_ref().map(|q| q.value.clone()),
    };
    let found = state
        .sockets
        .realtime
        .matches
        .list(&request)
        .map_err(|e| HttpError::invalid(e.message))?;
    let list = api::MatchList {
        matches: found.iter().map(|m| m.to_api()).collect(),
    };
    runtime::after(&state, API, Some(&caller), client, &list, &req).await;
    Ok(json(&list))
}
