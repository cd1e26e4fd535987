//! Leaderboards and tournaments in the console (`/v2/console/leaderboard*`):
//! list, get, a board's records, delete a record, delete a board, behind
//! Nakama's `LEADERBOARD` and `LEADERBOARD_RECORD` permissions. The console
//! acts as the server, so authoritative boards are no bar.

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{delete, get};
use ludus_core::console_acl::{Level, Need, Resource};
use ludus_core::leaderboard_service::{Caller, TournamentView};
use serde::Serialize;
use uuid::Uuid;

use super::{ConsoleRoutes, ConsoleState};
use crate::convert;
use crate::error::HttpError;
use crate::extract::QueryParams;

/// Boards in one page of `ListLeaderboards`, as Nakama lists them.
const PAGE: usize = 100;
/// Nakama's bound on a console page of records.
const MAX_RECORDS: i32 = 100;

pub(super) fn routes(r: &mut ConsoleRoutes) {
    use Level::{Delete, Read};
    use Resource::{Leaderboard, LeaderboardRecord};
    let need = Need::Permission;
    r.add(
        "/v2/console/leaderboard",
        need(Leaderboard, Read),
        get(list),
    );
    r.add(
        "/v2/console/leaderboard/{id}",
        need(Leaderboard, Read),
        get(one),
    );
    r.add(
        "/v2/console/leaderboard/{id}",
        need(Leaderboard, Delete),
        delete(remove),
    );
    r.add(
        "/v2/console/leaderboard/{id}/records",
        need(LeaderboardRecord, Read),
        get(records),
    );
    r.add(
        "/v2/console/leaderboard/{id}/owner/{owner_id}",
        need(LeaderboardRecord, Delete),
        delete(remove_record),
    );
}

/// Nakama's console `Leaderboard`: a leaderboard or tournament with its
/// current period.
#[derive(Serialize)]
struct Board {
    id: String,
    title: String,
    description: String,
    category: u32,
    sort_order: u32,
    size: u32,
    max_size: u32,
    max_num_score: u32,
    operator: u32,
    end_active: u32,
    reset_schedule: String,
    metadata: String,
    create_time: ludus_proto::Timestamp,
    start_time: ludus_proto::Timestamp,
    end_time: Option<ludus_proto::Timestamp>,
    duration: u32,
    start_active: u32,
    join_required: bool,
    authoritative: bool,
    tournament: bool,
    prev_reset: u32,
    next_reset: u32,
}

fn board(v: TournamentView) -> Board {
    let d = v.def;
    Board {
        tournament: d.is_tournament(),
        sort_order: d.sort_order.as_i64() as u32,
        operator: d.operator.as_i64() as u32,
        reset_schedule: d.reset_schedule.unwrap_or_default(),
        create_time: convert::timestamp(d.create_time),
        start_time: convert::timestamp(d.start_time),
        end_time: (d.end_time > 0).then(|| convert::timestamp(d.end_time)),
        size: v.size,
        end_active: v.end_active.max(0) as u32,
        start_active: v.start_active.max(0) as u32,
        prev_reset: v.prev_reset.max(0) as u32,
        next_reset: v.next_reset.max(0) as u32,
        id: d.id,
        title: d.title,
        description: d.description,
        category: d.category,
        max_size: d.max_size,
        max_num_score: d.max_num_score,
        metadata: d.metadata,
        duration: d.duration,
        join_required: d.join_required,
        authoritative: d.authoritative,
    }
}

/// Nakama's console `LeaderboardList`.
#[derive(Serialize)]
struct BoardList {
    leaderboards: Vec<Board>,
    total: i32,
    cursor: String,
}

/// `GET /v2/console/leaderboard?cursor=…`: every leaderboard and
/// tournament in id order, 100 a page; the cursor is the last id.
async fn list(
    State(state): State<ConsoleState>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    let service = &state.app.leaderboards;
    let cursor = query.get("cursor").unwrap_or_default();
    let mut views = service.board_views(PAGE + 1, cursor);
    let cursor = match views.len() > PAGE {
        true => {
            views.truncate(PAGE);
            views.last().map(|v| v.def.id.clone()).unwrap_or_default()
        }
        false => String::new(),
    };
    Ok(crate::api::json(&BoardList {
        total: service.board_count() as i32,
        leaderboards: views.into_iter().map(board).collect(),
        cursor,
    }))
}

/// The board named in the path, or 404.
fn find(state: &ConsoleState, id: &str) -> Result<TournamentView, HttpError> {
    if id.is_empty() {
        return Err(HttpError::invalid("a leaderboard id is required"));
    }
    let service = &state.app.leaderboards;
    let found = service
        .get(id)
        .ok_or_else(|| HttpError::new(ludus_core::Code::NotFound, "leaderboard not found"))?;
    Ok(service.tournament_view(&found))
}

async fn one(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
) -> Result<Response, HttpError> {
    Ok(crate::api::json(&board(find(&state, &id)?)))
}

/// Deletes a leaderboard or tournament with its records; deleting one that
/// does not exist succeeds, as in Nakama.
async fn remove(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
) -> Result<Response, HttpError> {
    let Some(found) = state.app.leaderboards.get(&id) else {
        return Ok(crate::api::empty());
    };
    state
        .app
        .leaderboards
        .delete(&id, found.def.is_tournament())
        .await?;
    Ok(crate::api::empty())
}

/// `GET /v2/console/leaderboard/{id}/records?limit=…&cursor=…&owner_ids=…`:
/// a page of the current period's records (1 when no limit is given, as
/// in Nakama) and the records of the owners asked for.
async fn records(
    State(state): State<ConsoleState>,
    Path(id): Path<String>,
    query: QueryParams,
) -> Result<Response, HttpError> {
    find(&state, &id)?;
    let limit = match query.int32("limit")?.map(|l| l.value) {
        None => 1,
        Some(limit @ 1..=MAX_RECORDS) => limit as usize,
        Some(_) => {
            return Err(HttpError::invalid(format!(
                "limit must be between 1 and {MAX_RECORDS}"
            )));
        }
    };
    let owners = query
        .all("owner_ids")
        .iter()
        .map(|o| {
            Uuid::parse_str(o)
                .map_err(|_| HttpError::invalid(format!("owner id {o:?} is not a valid uuid")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let cursor = query.get("cursor").unwrap_or_default();
    let list = state
        .app
        .leaderboards
        .records_list(&id, false, &owners, Some(limit), cursor, 0)
        .await?;
    Ok(crate::api::json(&convert::leaderboard_record_list(list)))
}

/// Deletes an owner's record of the current period, even on an
/// authoritative board.
async fn remove_record(
    State(state): State<ConsoleState>,
    Path((id, owner)): Path<(String, String)>,
) -> Result<Response, HttpError> {
    let board = find(&state, &id)?;
    let owner = Uuid::parse_str(&owner)
        .map_err(|_| HttpError::invalid(format!("owner id {owner:?} is not a valid uuid")))?;
    state
        .app
        .leaderboards
        .delete_record(Caller::Server, &id, board.def.is_tournament(), owner)
        .await?;
    Ok(crate::api::empty())
}
