//! Leaderboards and tournaments of Nakama's JS `nk` (`leaderboard*`,
//! `tournament*`), over `ludus_core::leaderboard_service` as Lua's are:
//! modules act as the server, so authoritative boards accept their scores.
//! Results carry Nakama's JS keys (`sortOrder` a number, times in seconds,
//! lists as `{records, ownerRecords, nextCursor, prevCursor, rankCount}`).

use std::sync::Arc;

use ludus_core::leaderboard::{Leaderboard, LeaderboardRecord, Operator, SortOrder};
use ludus_core::leaderboard_service::{
    Board, BoardSpec, Caller, LeaderboardService, RecordList, TournamentView,
};
use rquickjs::{Ctx, Object};
use serde_json::{Value as Json, json};

use super::nk_common::{
    Args, NkError, answer, arg, define, json_text, nothing, parsed, served, strings_of, uuids_of,
};
use super::shared::JsShared;

fn operator_name(op: Operator) -> &'static str {
    match op {
        Operator::Best => "best",
        Operator::Set => "set",
        Operator::Increment => "increment",
        Operator::Decrement => "decrement",
    }
}

fn leaderboard_json(d: &Leaderboard, prev: i64, next: i64) -> Json {
    let mut v = json!({
        "id": d.id,
        "operator": operator_name(d.operator),
        "sortOrder": d.sort_order.as_i64(),
        "metadata": parsed(&d.metadata),
        "createTime": d.create_time,
        "authoritative": d.authoritative,
    });
    if prev != 0 {
        v["prevReset"] = prev.into();
    }
    if next != 0 {
        v["nextReset"] = next.into();
    }
    v
}

fn board_json(board: &Board, now: i64) -> Json {
    let (prev, next) = board.resets(now);
    leaderboard_json(&board.def, prev, next)
}

fn tournament_json(t: &TournamentView) -> Json {
    let d = &t.def;
    let mut v = json!({
        "id": d.id,
        "title": d.title,
        "description": d.description,
        "category": d.category,
        "sortOrder": d.sort_order.as_i64(),
        "size": t.size,
        "maxSize": d.max_size,
        "maxNumScore": d.max_num_score,
        "duration": d.duration,
        "startActive": t.start_active,
        "endActive": t.end_active,
        "canEnter": t.can_enter,
        "metadata": parsed(&d.metadata),
        "createTime": d.create_time,
        "startTime": d.start_time,
        "endTime": (d.end_time != 0).then_some(d.end_time),
        "operator": operator_name(d.operator),
        "joinRequired": d.join_required,
        "authoritative": d.authoritative,
    });
    if t.prev_reset != 0 {
        v["prevReset"] = t.prev_reset.into();
    }
    if t.next_reset != 0 {
        v["nextReset"] = t.next_reset.into();
    }
    v
}

fn record_json(r: &LeaderboardRecord) -> Json {
    json!({
        "leaderboardId": r.leaderboard_id,
        "ownerId": r.owner_id.to_string(),
        "username": r.username.clone().unwrap_or_default(),
        "score": r.score,
        "subscore": r.subscore,
        "numScore": r.num_score,
        "maxNumScore": r.max_num_score,
        "metadata": parsed(&r.metadata),
        "createTime": r.create_time,
        "updateTime": r.update_time,
        "expiryTime": r.expiry_time,
        "rank": r.rank,
    })
}

fn list_json(list: &RecordList, with_owners: bool) -> Json {
    let cursor = |c: &str| (!c.is_empty()).then(|| c.to_owned());
    let mut v = json!({
        "records": list.records.iter().map(record_json).collect::<Vec<_>>(),
        "nextCursor": cursor(&list.next_cursor),
        "prevCursor": cursor(&list.prev_cursor),
        "rankCount": list.rank_count,
    });
    if with_owners {
        v["ownerRecords"] = list.owner_records.iter().map(record_json).collect();
    }
    v
}

fn service(s: &JsShared) -> Result<Arc<LeaderboardService>, NkError> {
    s.services
        .leaderboards()
        .ok_or_else(|| NkError::Server("leaderboards are not available in this runtime".into()))
}

fn id(a: &Args, what: &str) -> Result<String, NkError> {
    a.required(0, &format!("a {what} id string"))
}

fn sort_order(a: &Args, i: usize) -> Result<SortOrder, NkError> {
    let s = a.string(i, "sort order")?;
    SortOrder::parse(if s.is_empty() { "desc" } else { &s })
        .map_err(|_| arg("expects sort order to be 'asc' or 'desc'"))
}

fn operator(a: &Args, i: usize) -> Result<Operator, NkError> {
    let s = a.string(i, "operator")?;
    Operator::parse(if s.is_empty() { "best" } else { &s })
        .map_err(|_| arg("expects operator to be 'best', 'set', 'decr' or 'incr'"))
}

fn nonneg(a: &Args, i: usize, message: &str) -> Result<i64, NkError> {
    match a.int_or(i, 0, message)? {
        n if n < 0 => Err(arg(message)),
        n => Ok(n),
    }
}

pub(super) fn install<'js>(
    ctx: &Ctx<'js>,
    nk: &Object<'js>,
    shared: &Arc<JsShared>,
) -> rquickjs::Result<()> {
    leaderboards(ctx, nk, shared)?;
    tournaments(ctx, nk, shared)?;
    records(ctx, nk, shared, false)?;
    records(ctx, nk, shared, true)
}

fn leaderboards<'js>(
    ctx: &Ctx<'js>,
    nk: &Object<'js>,
    shared: &Arc<JsShared>,
) -> rquickjs::Result<()> {
    define(ctx, nk, shared, "leaderboardCreate", |s, a| {
        let mut spec = BoardSpec::leaderboard(&id(a, "leaderboard")?);
        spec.authoritative = a.bool_or(1, false, "authoritative")?;
        spec.sort_order = sort_order(a, 2)?;
        spec.operator = operator(a, 3)?;
        spec.reset_schedule = a.string(4, "reset schedule")?;
        spec.metadata = json_text(a.get(5), "metadata")?.unwrap_or_default();
        spec.enable_ranks = a.bool_or(6, false, "enable ranks")?;
        let lb = service(s)?;
        served(s, "error creating leaderboard", async move {
            lb.create(spec).await.map(drop)
        })?;
        nothing()
    })?;
    define(ctx, nk, shared, "leaderboardDelete", |s, a| {
        let id = id(a, "leaderboard")?;
        let lb = service(s)?;
        served(s, "error deleting leaderboard", async move {
            lb.delete(&id, false).await
        })?;
        nothing()
    })?;
    define(ctx, nk, shared, "leaderboardList", |s, a| {
        let limit = a.int_or(0, 10, "limit")?;
        if !(1..=100).contains(&limit) {
            return Err(arg("limit must be 1-100"));
        }
        let cursor = a.string(1, "cursor")?;
        let (boards, next) = service(s)?
            .leaderboard_list(limit as usize, &cursor)
            .map_err(|_| arg("expects cursor to be valid when provided"))?;
        let now = ludus_core::unix_now();
        answer(json!({
            "leaderboards": boards.iter().map(|b| board_json(b, now)).collect::<Vec<_>>(),
            "cursor": (!next.is_empty()).then_some(next),
        }))
    })?;
    define(ctx, nk, shared, "leaderboardsGetId", |s, a| {
        let ids = strings_of(a.get(0), "leaderboard ids")?;
        let now = ludus_core::unix_now();
        let boards = service(s)?.leaderboards_get(&ids);
        answer(boards.iter().map(|b| board_json(b, now)).collect())
    })?;
    define(
        ctx,
        nk,
        shared,
        "leaderboardRecordsListCursorFromRank",
        |s, a| {
            let id = id(a, "leaderboard")?;
            let rank = a.int_or(1, 0, "rank")?;
            if rank < 1 {
                return Err(arg("invalid rank - must be > 1"));
            }
            let expiry = nonneg(a, 2, "invalid expiry")?;
            let lb = service(s)?;
            let cursor = served(s, "error listing leaderboard records", async move {
                lb.cursor_from_rank(&id, rank as u64, expiry).await
            })?;
            answer(cursor.into())
        },
    )?;
    // Nakama registers `tournamentsRanksDisable`; its type definitions
    // declare `tournamentRanksDisable`. Both are here.
    for (name, tournament) in [
        ("leaderboardRanksDisable", false),
        ("tournamentRanksDisable", true),
        ("tournamentsRanksDisable", true),
    ] {
        define(ctx, nk, shared, name, move |s, a: &Args| {
            let what = if tournament {
                "tournament"
            } else {
                "leaderboard"
            };
            let id = id(a, what)?;
            let lb = service(s)?;
            served(s, &format!("error disabling {what} ranks"), async move {
                lb.rank_disable(&id, tournament).await
            })?;
            nothing()
        })?;
    }
    Ok(())
}

fn tournaments<'js>(
    ctx: &Ctx<'js>,
    nk: &Object<'js>,
    shared: &Arc<JsShared>,
) -> rquickjs::Result<()> {
    define(ctx, nk, shared, "tournamentCreate", |s, a| {
        let mut spec = BoardSpec::leaderboard(&id(a, "tournament")?);
        spec.authoritative = a.bool_or(1, true, "authoritative")?;
        spec.sort_order = sort_order(a, 2)?;
        spec.operator = operator(a, 3)?;
        let duration = a.int_or(4, 0, "duration")?;
        if duration <= 0 || duration > u32::MAX as i64 {
            return Err(arg("duration must be > 0"));
        }
        spec.duration = duration as u32;
        spec.reset_schedule = a.string(5, "reset schedule")?;
        spec.metadata = json_text(a.get(6), "metadata")?.unwrap_or_default();
        spec.title = a.string(7, "title")?;
        spec.description = a.string(8, "description")?;
        let category = a.int_or(9, 0, "category")?;
        if !(0..=127).contains(&category) {
            return Err(arg("category must be 0-127"));
        }
        spec.category = category as u32;
        spec.start_time = nonneg(a, 10, "startTime must be >= 0.")?;
        let never = "endTime must be > startTime. Use 0 to indicate a tournament that never ends.";
        spec.end_time = nonneg(a, 11, never)?;
        if spec.end_time != 0 && spec.end_time <= spec.start_time {
            return Err(arg(never));
        }
        spec.max_size = nonneg(a, 12, "maxSize must be >= 0")?.min(u32::MAX as i64) as u32;
        spec.max_num_score = nonneg(a, 13, "maxNumScore must be >= 0")?.min(u32::MAX as i64) as u32;
        spec.join_required = a.bool_or(14, false, "join required")?;
        spec.enable_ranks = a.bool_or(15, false, "enable ranks")?;
        let lb = service(s)?;
        served(s, "error creating tournament", async move {
            lb.create(spec).await.map(drop)
        })?;
        nothing()
    })?;
    define(ctx, nk, shared, "tournamentDelete", |s, a| {
        let id = id(a, "tournament")?;
        let lb = service(s)?;
        served(s, "error deleting tournament", async move {
            lb.delete(&id, true).await
        })?;
        nothing()
    })?;
    define(ctx, nk, shared, "tournamentAddAttempt", |s, a| {
        let id = id(a, "tournament")?;
        let owner = a.uuid(1, "owner id")?;
        let count = a.int_or(2, 0, "count")?;
        if count == 0 {
            return Err(arg("expects an attempt count number != 0"));
        }
        let lb = service(s)?;
        served(s, "error adding tournament attempts", async move {
            lb.tournament_add_attempt(&id, owner, count).await
        })?;
        nothing()
    })?;
    define(ctx, nk, shared, "tournamentJoin", |s, a| {
        let id = id(a, "tournament")?;
        let owner = a.uuid(1, "user id")?;
        let username = a.required(2, "a username string")?;
        let lb = service(s)?;
        served(s, "error joining tournament", async move {
            lb.tournament_join(&id, owner, &username).await
        })?;
        nothing()
    })?;
    define(ctx, nk, shared, "tournamentsGetId", |s, a| {
        let ids = strings_of(a.get(0), "tournament ids")?;
        let list = service(s)?.tournaments_get(&ids);
        answer(list.iter().map(tournament_json).collect())
    })?;
    define(ctx, nk, shared, "tournamentList", |s, a| {
        let category_start = a.int_or(0, 0, "categoryStart")?;
        if !(0..=127).contains(&category_start) {
            return Err(arg("categoryStart must be 0-127"));
        }
        let category_end = a.int_or(1, 0, "categoryEnd")?;
        if !(0..=127).contains(&category_end) {
            return Err(arg("categoryEnd must be 0-127"));
        }
        if category_end < category_start {
            return Err(arg("categoryEnd must be >= categoryStart"));
        }
        let time = |i: usize, name: &str| match a.int_or(i, -1, name)? {
            -1 => Ok(None),
            t if t >= 0 => Ok(Some(t)),
            _ => Err(arg(format!("{name} must be >= -1"))),
        };
        let start_time = time(2, "startTime")?;
        let end_time = time(3, "endTime")?;
        let limit = a.int_or(4, 10, "limit")?;
        if !(1..=100).contains(&limit) {
            return Err(arg("limit must be 1-100"));
        }
        let cursor = a.string(5, "cursor")?;
        let (list, next) = service(s)?
            .tournament_list(
                category_start as u32,
                category_end as u32,
                start_time,
                end_time,
                limit as usize,
                &cursor,
            )
            .map_err(|e| NkError::Server(format!("error listing tournaments: {e}")))?;
        answer(json!({
            "tournaments": list.iter().map(tournament_json).collect::<Vec<_>>(),
            "cursor": (!next.is_empty()).then_some(next),
        }))
    })?;
    Ok(())
}

/// The record functions of leaderboards (`tournament` false) or tournaments.
fn records<'js>(
    ctx: &Ctx<'js>,
    nk: &Object<'js>,
    shared: &Arc<JsShared>,
    tournament: bool,
) -> rquickjs::Result<()> {
    let (what, [list, haystack, write, delete]) = if tournament {
        (
            "tournament",
            [
                "tournamentRecordsList",
                "tournamentRecordsHaystack",
                "tournamentRecordWrite",
                "tournamentRecordDelete",
            ],
        )
    } else {
        (
            "leaderboard",
            [
                "leaderboardRecordsList",
                "leaderboardRecordsHaystack",
                "leaderboardRecordWrite",
                "leaderboardRecordDelete",
            ],
        )
    };
    define(ctx, nk, shared, list, move |s, a: &Args| {
        let id = id(a, what)?;
        let owners = uuids_of(a.get(1), "owner id")?;
        let limit = a.int_or(2, 0, "limit")?;
        if !(0..=10_000).contains(&limit) {
            return Err(arg("expects limit to be 0-10000"));
        }
        let limit = (limit != 0).then_some(limit as usize);
        let cursor = a.string(3, "cursor")?;
        let expiry = nonneg(a, 4, "expiry must be >= 0")?;
        let lb = service(s)?;
        let list = served(s, &format!("error listing {what} records"), async move {
            lb.records_list(&id, tournament, &owners, limit, &cursor, expiry)
                .await
        })?;
        answer(list_json(&list, true))
    })?;
    define(ctx, nk, shared, haystack, move |s, a: &Args| {
        let id = id(a, what)?;
        let owner = a.uuid(1, "owner id")?;
        let limit = a.int_or(2, 10, "limit")?;
        if !(1..=100).contains(&limit) {
            return Err(arg("limit must be 1-100"));
        }
        let cursor = a.string(3, "cursor")?;
        let expiry = nonneg(
            a,
            4,
            "expiry should be time since epoch in seconds and has to be a positive integer",
        )?;
        let lb = service(s)?;
        let list = served(s, &format!("error querying {what} records"), async move {
            lb.records_around(&id, tournament, owner, limit as usize, &cursor, expiry)
                .await
        })?;
        answer(list_json(&list, false))
    })?;
    define(ctx, nk, shared, write, move |s, a: &Args| {
        let id = id(a, what)?;
        let owner = a.uuid(1, "owner id")?;
        let username = Some(a.string(2, "username")?).filter(|u| !u.is_empty());
        let score = nonneg(a, 3, "expects score to be >= 0")?;
        let subscore = nonneg(a, 4, "expects subscore to be >= 0")?;
        let metadata = json_text(a.get(5), "metadata")?;
        let op = a.string(6, "operator")?.to_ascii_lowercase();
        let op = match op.as_str() {
            "" | "no_override" => None,
            o => Some(Operator::parse(o).map_err(|_| arg("invalid operator"))?),
        };
        let lb = service(s)?;
        let record = served(s, &format!("error writing {what} record"), async move {
            lb.write(
                Caller::Server,
                &id,
                tournament,
                owner,
                username,
                score,
                subscore,
                metadata,
                op,
            )
            .await
        })?;
        answer(record_json(&record))
    })?;
    define(ctx, nk, shared, delete, move |s, a: &Args| {
        let id = id(a, what)?;
        let owner = a.uuid(1, "owner id")?;
        let lb = service(s)?;
        served(s, &format!("error deleting {what} record"), async move {
            lb.delete_record(Caller::Server, &id, tournament, owner)
                .await
        })?;
        nothing()
    })?;
    Ok(())
}
