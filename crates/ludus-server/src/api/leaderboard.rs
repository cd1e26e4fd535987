//! Leaderboards and tournaments over REST, with Nakama's paths, shapes,
//! defaults and hooks. Leaderboards: `GET /v2/leaderboard/{id}` (list,
//! `listleaderboardrecords`), `POST` (write, `writeleaderboardrecord`),
//! `DELETE` (own record, `deleteleaderboardrecord`) and
//! `GET /v2/leaderboard/{id}/owner/{owner_id}`
//! (`listleaderboardrecordsaroundowner`). Tournaments: `GET /v2/tournament`
//! (`listtournaments`), `GET`, `POST|PUT` and `DELETE /v2/tournament/{id}`
//! (`listtournamentrecords`, `writetournamentrecord`,
//! `deletetournamentrecord`), `POST /v2/tournament/{id}/join`
//! (`jointournament`) and `GET /v2/tournament/{id}/owner/{owner_id}`
//! (`listtournamentrecordsaroundowner`). Each delegates to
//! `LeaderboardService` on behalf of the caller.

use axum::extract::{Path, State};
use axum::response::Response;
use ludus_core::leaderboard::Operator;
use ludus_core::leaderboard_service::Caller;
use ludus_proto::api;
use ludus_proto::pbjson_types::{Int32Value, Int64Value, UInt32Value};
use uuid::Uuid;

use super::{empty, json};
use crate::convert;
use crate::error::HttpError;
use crate::extract::{ProtoJson, QueryParams, Session};
use crate::runtime::{self, ClientAddr};
use crate::state::AppState;

fn parse<T: std::str::FromStr>(query: &QueryParams, key: &str) -> Result<Option<T>, HttpError> {
    match query.get(key).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => v
            .parse()
            .map(Some)
            .map_err(|_| HttpError::invalid(format!("invalid {key}: {v:?} is not a number"))),
    }
}

fn owner_ids(ids: &[String]) -> Result<Vec<Uuid>, HttpError> {
    ids.iter()
        .map(|id| {
            Uuid::parse_str(id).map_err(|_| HttpError::invalid("one or more owner ids are invalid"))
        })
        .collect()
}

/// Nakama's listing limit: 1 to 1000; absent means one record unless only
/// owners are asked for.
fn list_limit(
    limit: Option<&Int32Value>,
    owners: usize,
    cursor: &str,
) -> Result<Option<usize>, HttpError> {
    match limit {
        Some(l) if (1..=1000).contains(&l.value) => Ok(Some(l.value as usize)),
        Some(_) => Err(HttpError::invalid(
            "invalid limit - limit must be between 1 and 1000",
        )),
        None if owners == 0 || !cursor.is_empty() => Ok(Some(1)),
        None => Ok(None),
    }
}

/// Nakama's tournament listing limit (`api_tournament.go`): 1 to 100;
/// absent means 10, or only the owners' records when owners and a cursor
/// are both given.
fn tournament_list_limit(
    limit: Option<&Int32Value>,
    owners: usize,
    cursor: &str,
) -> Result<Option<usize>, HttpError> {
    match limit {
        Some(l) if (1..=100).contains(&l.value) => Ok(Some(l.value as usize)),
        Some(_) => Err(HttpError::invalid(
            "invalid limit - limit must be between 1 and 100",
        )),
        None if owners == 0 || cursor.is_empty() => Ok(Some(10)),
        None => Ok(None),
    }
}

/// Nakama's tournament haystack limit: 1 to 100, absent means 100.
fn tournament_around_limit(limit: Option<&UInt32Value>) -> Result<usize, HttpError> {
    match limit {
        None => Ok(100),
        Some(_) => around_limit(limit),
    }
}

fn around_limit(limit: Option<&UInt32Value>) -> Result<usize, HttpError> {
    match limit {
        None => Ok(1),
        Some(l) if (1..=100).contains(&l.value) => Ok(l.value as usize),
        Some(_) => Err(HttpError::invalid(
            "invalid limit - limit must be between 1 and 100",
        )),
    }
}

fn check_id(id: &str, what: &str) -> Result<(), HttpError> {
    if id.is_empty() {
        return Err(HttpError::invalid(format!("invalid {what} id")));
    }
    Ok(())
}

fn parse_owner(id: &str) -> Result<Uuid, HttpError> {
    if id.is_empty() {
        return Err(HttpError::invalid(
            "owner id must be provided for a haystack query",
        ));
    }
    Uuid::parse_str(id).map_err(|_| HttpError::invalid("invalid owner id provided"))
}

fn expiry(v: Option<&Int64Value>) -> Result<i64, HttpError> {
    match v.map(|e| e.value) {
        Some(e) if e < 0 => Err(HttpError::invalid("expiry time must be >= 0")),
        Some(e) => Ok(e),
        None => Ok(0),
    }
}

pub(super) async fn list_records(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    Path(leaderboard_id): Path<String>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    const API: &str = "listleaderboardrecords";
    let req = api::ListLeaderboardRecordsRequest {
        leaderboard_id,
        owner_ids: query.all("owner_ids"),
        limit: parse(&query, "limit")?.map(|value| Int32Value { value }),
        cursor: query.get("cursor").unwrap_or_default().to_owned(),
        expiry: parse(&query, "expiry")?.map(|value| Int64Value { value }),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    check_id(&req.leaderboard_id, "leaderboard")?;
    let owners = owner_ids(&req.owner_ids)?;
    let limit = list_limit(req.limit.as_ref(), owners.len(), &req.cursor)?;
    let list = state
        .leaderboards
        .records_list(
            &req.leaderboard_id,
            false,
            &owners,
            limit,
            &req.cursor,
            expiry(req.expiry.as_ref())?,
        )
        .await?;
    let list = convert::leaderboard_record_list(list);
    runtime::after(&state, API, Some(&caller), client, &list, &req).await;
    Ok(json(&list))
}

pub(super) async fn write_record(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    Path(leaderboard_id): Path<String>,
    ProtoJson(record): ProtoJson<api::write_leaderboard_record_request::LeaderboardRecordWrite>,
) -> Result<Response, HttpError> {
    const API: &str = "writeleaderboardrecord";
    let req = api::WriteLeaderboardRecordRequest {
        leaderboard_id,
        record: Some(record),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    check_id(&req.leaderboard_id, "leaderboard")?;
    let Some(record) = &req.record else {
        return Err(HttpError::invalid(
            "invalid input, record score value is required",
        ));
    };
    let written = state
        .leaderboards
        .write(
            Caller::User(caller.user_id),
            &req.leaderboard_id,
            false,
            caller.user_id,
            Some(caller.claims.username.clone()),
            record.score,
            record.subscore,
            Some(record.metadata.clone()),
            Operator::from_api(record.operator)?,
        )
        .await?;
    let written = convert::leaderboard_record(written);
    runtime::after(&state, API, Some(&caller), client, &written, &req).await;
    Ok(json(&written))
}

pub(super) async fn delete_record(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    Path(leaderboard_id): Path<String>,
) -> Result<Response, HttpError> {
    const API: &str = "deleteleaderboardrecord";
    let req = api::DeleteLeaderboardRecordRequest { leaderboard_id };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    check_id(&req.leaderboard_id, "leaderboard")?;
    state
        .leaderboards
        .delete_record(
            Caller::User(caller.user_id),
            &req.leaderboard_id,
            false,
            caller.user_id,
        )
        .await?;
    runtime::after(
        &state,
        API,
        Some(&caller),
        client,
        &serde_json::Value::Null,
        &req,
    )
    .await;
    Ok(empty())
}

pub(super) async fn list_around_owner(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    Path((leaderboard_id, owner_id)): Path<(String, String)>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    const API: &str = "listleaderboardrecordsaroundowner";
    let req = api::ListLeaderboardRecordsAroundOwnerRequest {
        leaderboard_id,
        limit: parse(&query, "limit")?.map(|value| UInt32Value { value }),
        owner_id,
        expiry: parse(&query, "expiry")?.map(|value| Int64Value { value }),
        cursor: query.get("cursor").unwrap_or_default().to_owned(),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    check_id(&req.leaderboard_id, "leaderboard")?;
    let limit = around_limit(req.limit.as_ref())?;
    let owner = parse_owner(&req.owner_id)?;
    let list = state
        .leaderboards
        .records_around(
            &req.leaderboard_id,
            false,
            owner,
            limit,
            &req.cursor,
            expiry(req.expiry.as_ref())?,
        )
        .await?;
    let list = convert::leaderboard_record_list(list);
    runtime::after(&state, API, Some(&caller), client, &list, &req).await;
    Ok(json(&list))
}

pub(super) async fn list_tournaments(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    query: QueryParams,
) -> Result<Response, HttpError> {
    const API: &str = "listtournaments";
    let u32_param = |key: &str| -> Result<Option<UInt32Value>, HttpError> {
        Ok(parse(&query, key)?.map(|value| UInt32Value { value }))
    };
    let req = api::ListTournamentsRequest {
        category_start: u32_param("category_start")?,
        category_end: u32_param("category_end")?,
        start_time: u32_param("start_time")?,
        end_time: u32_param("end_time")?,
        limit: parse(&query, "limit")?.map(|value| Int32Value { value }),
        cursor: query.get("cursor").unwrap_or_default().to_owned(),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    let limit = match &req.limit {
        None => 100,
        Some(l) if (1..=100).contains(&l.value) => l.value as usize,
        Some(_) => return Err(HttpError::invalid("limit must be between 1 and 100")),
    };
    let (tournaments, cursor) = state.leaderboards.tournament_list(
        req.category_start.as_ref().map_or(0, |v| v.value),
        req.category_end.as_ref().map_or(127, |v| v.value),
        req.start_time.as_ref().map(|v| v.value as i64),
        req.end_time.as_ref().map(|v| v.value as i64),
        limit,
        &req.cursor,
    )?;
    let list = api::TournamentList {
        tournaments: tournaments.into_iter().map(convert::tournament).collect(),
        cursor,
    };
    runtime::after(&state, API, Some(&caller), client, &list, &req).await;
    Ok(json(&list))
}

pub(super) async fn list_tournament_records(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    Path(tournament_id): Path<String>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    const API: &str = "listtournamentrecords";
    let req = api::ListTournamentRecordsRequest {
        tournament_id,
        owner_ids: query.all("owner_ids"),
        limit: parse(&query, "limit")?.map(|value| Int32Value { value }),
        cursor: query.get("cursor").unwrap_or_default().to_owned(),
        expiry: parse(&query, "expiry")?.map(|value| Int64Value { value }),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    check_id(&req.tournament_id, "tournament")?;
    let owners = owner_ids(&req.owner_ids)?;
    let limit = tournament_list_limit(req.limit.as_ref(), owners.len(), &req.cursor)?;
    let list = state
        .leaderboards
        .records_list(
            &req.tournament_id,
            true,
            &owners,
            limit,
            &req.cursor,
            expiry(req.expiry.as_ref())?,
        )
        .await?;
    let list = convert::tournament_record_list(list);
    runtime::after(&state, API, Some(&caller), client, &list, &req).await;
    Ok(json(&list))
}

pub(super) async fn write_tournament_record(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    Path(tournament_id): Path<String>,
    ProtoJson(record): ProtoJson<api::write_tournament_record_request::TournamentRecordWrite>,
) -> Result<Response, HttpError> {
    const API: &str = "writetournamentrecord";
    let req = api::WriteTournamentRecordRequest {
        tournament_id,
        record: Some(record),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    check_id(&req.tournament_id, "tournament")?;
    let Some(record) = &req.record else {
        return Err(HttpError::invalid(
            "invalid input, record score value is required",
        ));
    };
    let written = state
        .leaderboards
        .write(
            Caller::User(caller.user_id),
            &req.tournament_id,
            true,
            caller.user_id,
            Some(caller.claims.username.clone()),
            record.score,
            record.subscore,
            Some(record.metadata.clone()),
            Operator::from_api(record.operator)?,
        )
        .await?;
    let written = convert::leaderboard_record(written);
    runtime::after(&state, API, Some(&caller), client, &written, &req).await;
    Ok(json(&written))
}

pub(super) async fn delete_tournament_record(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    Path(tournament_id): Path<String>,
) -> Result<Response, HttpError> {
    const API: &str = "deletetournamentrecord";
    let req = api::DeleteTournamentRecordRequest { tournament_id };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    check_id(&req.tournament_id, "tournament")?;
    state
        .leaderboards
        .delete_record(
            Caller::User(caller.user_id),
            &req.tournament_id,
            true,
            caller.user_id,
        )
        .await?;
    runtime::after(
        &state,
        API,
        Some(&caller),
        client,
        &serde_json::Value::Null,
        &req,
    )
    .await;
    Ok(empty())
}

pub(super) async fn join_tournament(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    Path(tournament_id): Path<String>,
) -> Result<Response, HttpError> {
    const API: &str = "jointournament";
    let req = api::JoinTournamentRequest { tournament_id };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    check_id(&req.tournament_id, "tournament")?;
    state
        .leaderboards
        .tournament_join(&req.tournament_id, caller.user_id, &caller.claims.username)
        .await?;
    runtime::after(
        &state,
        API,
        Some(&caller),
        client,
        &serde_json::Value::Null,
        &req,
    )
    .await;
    Ok(empty())
}

pub(super) async fn list_tournament_around_owner(
    State(state): State<AppState>,
    Session(caller): Session,
    client: ClientAddr,
    Path((tournament_id, owner_id)): Path<(String, String)>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    const API: &str = "listtournamentrecordsaroundowner";
    let req = api::ListTournamentRecordsAroundOwnerRequest {
        tournament_id,
        limit: parse(&query, "limit")?.map(|value| UInt32Value { value }),
        owner_id,
        expiry: parse(&query, "expiry")?.map(|value| Int64Value { value }),
        cursor: query.get("cursor").unwrap_or_default().to_owned(),
    };
    let req = runtime::before(&state, API, Some(&caller), client, req).await?;
    check_id(&req.tournament_id, "tournament")?;
    let limit = tournament_around_limit(req.limit.as_ref())?;
    let owner = parse_owner(&req.owner_id)?;
    let list = state
        .leaderboards
        .records_around(
            &req.tournament_id,
            true,
            owner,
            limit,
            &req.cursor,
            expiry(req.expiry.as_ref())?,
        )
        .await?;
    let list = convert::tournament_record_list(list);
    runtime::after(&state, API, Some(&caller), client, &list, &req).await;
    Ok(json(&list))
}
