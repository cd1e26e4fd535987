//! `GET /v2/party?limit=&open=&query=&cursor=`: live parties that are not
//! hidden, in creation order, with the runtime's `listparties` hooks.

use axum::extract::State;
use axum::response::Response;
use ludus_proto::api;
use ludus_proto::pbjson_types::{BoolValue, Int32Value, StringValue};

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
    const API: &str = "listparties";
    let present = |key: &str| query.get(key).filter(|v| !v.is_empty());
    let limit = match present("limit") {
        None => None,
        Some(l) => Some(Int32Value {
            value: l.parse().map_err(|_| bad_limit())?,
        }),
    };
    let open = match present("open") {
        None => None,
        Some("true") => Some(BoolValue { value: true }),
        Some("false") => Some(BoolValue { value: false }),
        Some(_) => return Err(HttpError::invalid("invalid open, it must be true or false")),
    };
    let req = api::ListPartiesRequest {
        limit,
        open,
        query: present("query").map(|q| StringValue { value: q.into() }),
        cursor: present("cursor").map(|c| StringValue { value: c.into() }),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let limit = match &req.limit {
        None => 10,
        Some(l) if (1..=100).contains(&l.value) => l.value as usize,
        Some(_) => return Err(bad_limit()),
    };
    let (parties, cursor) = state
        .sockets
        .realtime
        .parties
        .list(
            limit,
            req.open.as_ref().map(|o| o.value),
            false,
            req.query.as_ref().map_or("", |q| q.value.as_str()),
            req.cursor.as_ref().map_or("", |c| c.value.as_str()),
        )
        .map_err(|e| HttpError::invalid(e.message))?;
    let list = api::PartyList {
        parties: parties
            .into_iter()
            .map(|p| api::Party {
                party_id: p.party_id,
                open: p.open,
                hidden: p.hidden,
                max_size: p.max_size as i32,
                label: p.label,
            })
            .collect(),
        cursor: cursor.unwrap_or_default(),
    };
    runtime::after(&state, API, Some(&caller), client, &list, &req).await;
    Ok(json(&list))
}

fn bad_limit() -> HttpError {
    HttpError::invalid("invalid limit, it must be between 1 and 100")
}
