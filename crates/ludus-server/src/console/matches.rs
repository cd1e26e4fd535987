//! Live matches in the console (`/v2/console/match*`, `MATCH` read): the
//! listing with Nakama's filters, and one authoritative match's presences,
//! tick and state as its handler holds it (a Lua match's state table as
//! JSON), read between two of its callbacks through the match registry.

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use ludus_core::console_acl::{Level, Need, Resource};
use ludus_proto::api;
use ludus_proto::realtime::UserPresence;
use ludus_realtime::RtCode;
use ludus_realtime::matches::{ListRequest, MAX_LIST_LIMIT};
use serde::Serialize;

use super::{ConsoleRoutes, ConsoleState};
use crate::error::HttpError;
use crate::extract::QueryParams;

pub(super) fn routes(r: &mut ConsoleRoutes) {
    let need = Need::Permission(Resource::Match, Level::Read);
    r.add("/v2/console/match", need, get(list));
    r.add("/v2/console/match/{id}/state", need, get(state));
}

/// Nakama's `MatchList.Match`: the client API's match and its node.
#[derive(Serialize)]
struct ListedMatch {
    api_match: api::Match,
    node: String,
}

#[derive(Serialize)]
struct MatchList {
    matches: Vec<ListedMatch>,
}

/// The node of a match id `<uuid>.<node>`; empty for a relayed match.
fn node_of(match_id: &str) -> String {
    match_id
        .split_once('.')
        .map(|(_, node)| node.to_owned())
        .unwrap_or_default()
}

fn listed(m: &ludus_realtime::matches::MatchListing) -> ListedMatch {
    ListedMatch {
        node: node_of(&m.match_id),
        api_match: m.to_api(),
    }
}

/// `GET /v2/console/match?limit=&authoritative=&label=&min_size=&max_size=&query=&match_id=`:
/// one match by id, or the listing (100 when no limit is given, as Nakama's
/// console).
async fn list(
    State(state): State<ConsoleState>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let registry = &state.app.sockets.realtime.matches;
    let match_id = query.get("match_id").unwrap_or_default().trim();
    if !match_id.is_empty() {
        let found = registry.get(match_id);
        return Ok(crate::api::json(&MatchList {
            matches: found.iter().map(listed).collect(),
        }));
    }
    let limit = match query.int32("limit")?.map(|l| l.value) {
        None => MAX_LIST_LIMIT,
        Some(l) if (1..=MAX_LIST_LIMIT as i32).contains(&l) => l as usize,
        Some(_) => {
            return Err(HttpError::invalid(format!(
                "limit must be between 1 and {MAX_LIST_LIMIT}"
            )));
        }
    };
    let size = |key: &str| -> Result<Option<usize>, HttpError> {
        match query.int32(key)?.map(|v| v.value) {
            None => Ok(None),
            Some(v) if v >= 0 => Ok(Some(v as usize)),
            Some(_) => Err(HttpError::invalid(format!("{key} must be 0 or above"))),
        }
    };
    let request = ListRequest {
        limit,
        authoritative: query.bool("authoritative")?,
        label: query.get("label").map(str::to_owned),
        min_size: size("min_size")?,
        max_size: size("max_size")?,
        query: query.get("query").map(str::to_owned),
    };
    if let (Some(min), Some(max)) = (request.min_size, request.max_size)
        && min > max
    {
        return Err(HttpError::invalid(
            "max_size must be greater than or equal to min_size",
        ));
    }
    let found = registry
        .list(&request)
        .map_err(|e| HttpError::invalid(e.message))?;
    Ok(crate::api::json(&MatchList {
        matches: found.iter().map(listed).collect(),
    }))
}

/// Nakama's console `MatchState`.
#[derive(Serialize)]
struct MatchState {
    presences: Vec<UserPresence>,
    tick: String,
    state: String,
}

/// `GET /v2/console/match/{id}/state`: 404 for no such match, 400 for an
/// id that is not a match id.
async fn state(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
) -> Result<Response, HttpError> {
    if ludus_realtime::matches::parse_id(&id).is_err() {
        return Err(HttpError::invalid(format!(
            "{id:?} is not a match id, which is <uuid>.<node> (or <uuid>. when relayed)"
        )));
    }
    let registry = &state.app.sockets.realtime.matches;
    let found = registry.state(&id).await.map_err(|e| match e.code {
        RtCode::MatchNotFound => HttpError::new(ludus_core::Code::NotFound, "match not found"),
        RtCode::BadInput => HttpError::invalid(e.message),
        _ => HttpError::new(ludus_core::Code::Internal, e.message),
    })?;
    Ok(crate::api::json(&MatchState {
        presences: found.presences.iter().map(|p| p.to_wire(false)).collect(),
        // An int64, written as a string as protojson writes it.
        tick: found.tick.to_string(),
        state: found.state,
    }))
}
