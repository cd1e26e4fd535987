//! `nk.leaderboard_*` and `nk.tournament_*`: leaderboards and tournaments
//! as Nakama's Lua API has them (argument order, defaults, result tables and
//! multiple returns), over `ludus_core::leaderboard_service`. Modules act as
//! the server, so authoritative boards accept their scores. The tables of
//! boards, tournaments and records are built as JSON values here, once, and
//! also serve the schedule hooks' arguments.

use std::sync::Arc;

use ludus_core::leaderboard::{Leaderboard, LeaderboardRecord, Operator, SortOrder};
use ludus_core::leaderboard_service::{
    Board, BoardSpec, Caller, LeaderboardService, RecordList, TournamentView,
};
use mlua::{Lua, MultiValue, Table, Value as LuaValue};
use serde_json::{Value, json};
use uuid::Uuid;

use super::convert;
use super::nk_common::{arg_error, run, whole_arg};
use super::shared::LuaShared;

fn metadata_value(metadata: &str) -> Value {
    serde_json::from_str(metadata).unwrap_or_else(|_| json!({}))
}

fn operator_name(op: Operator) -> &'static str {
    match op {
        Operator::Best => "best",
        Operator::Set => "set",
        Operator::Increment => "increment",
        Operator::Decrement => "decrement",
    }
}

/// A leaderboard as Nakama's Lua tables show it.
pub(crate) fn leaderboard_json(d: &Leaderboard, prev: i64, next: i64) -> Value {
    let mut v = json!({
        "id": d.id,
        "authoritative": d.authoritative,
        "operator": operator_name(d.operator),
        "sort_order": d.sort_order.as_i64().to_string(),
        "metadata": metadata_value(&d.metadata),
        "create_time": d.create_time,
    });
    if next != 0 {
        v["next_reset"] = json!(next);
    }
    if prev != 0 {
        v["prev_reset"] = json!(prev);
    }
    v
}

fn board_json(board: &Board, now: i64) -> Value {
    let (prev, next) = board.resets(now);
    leaderboard_json(&board.def, prev, next)
}

/// A tournament as Nakama's Lua tables show it.
pub(crate) fn tournament_json(t: &TournamentView) -> Value {
    let d = &t.def;
    let mut v = json!({
        "id": d.id,
        "title": d.title,
        "description": d.description,
        "category": d.category,
        "sort_order": d.sort_order.as_i64().to_string(),
        "size": t.size,
        "max_size": d.max_size,
        "max_num_score": d.max_num_score,
        "duration": d.duration,
        "start_active": t.start_active,
        "end_active": t.end_active,
        "can_enter": t.can_enter,
        "metadata": metadata_value(&d.metadata),
        "create_time": d.create_time,
        "start_time": d.start_time,
        "operator": operator_name(d.operator),
        "join_required": d.join_required,
        "authoritative": d.authoritative,
    });
    if t.next_reset != 0 {
        v["next_reset"] = json!(t.next_reset);
    }
    if t.prev_reset != 0 {
        v["prev_reset"] = json!(t.prev_reset);
    }
    if d.end_time != 0 {
        v["end_time"] = json!(d.end_time);
    }
    v
}

fn record_json(r: &LeaderboardRecord) -> Value {
    let mut v = json!({
        "leaderboard_id": r.leaderboard_id,
        "owner_id": r.owner_id.to_string(),
        "score": r.score,
        "subscore": r.subscore,
        "num_score": r.num_score,
        "max_num_score": r.max_num_score,
        "metadata": metadata_value(&r.metadata),
        "create_time": r.create_time,
        "update_time": r.update_time,
        "rank": r.rank,
    });
    if let Some(u) = &r.username {
        v["username"] = json!(u);
    }
    if r.expiry_time != 0 {
        v["expiry_time"] = json!(r.expiry_time);
    }
    v
}

fn records_table(lua: &Lua, records: &[LeaderboardRecord]) -> mlua::Result<LuaValue> {
    convert::to_lua(
        lua,
        &Value::Array(records.iter().map(record_json).collect()),
    )
}

fn cursor_value(lua: &Lua, cursor: &str) -> mlua::Result<LuaValue> {
    if cursor.is_empty() {
        Ok(LuaValue::Nil)
    } else {
        Ok(LuaValue::String(lua.create_string(cursor)?))
    }
}

/// `records, owner_records, next_cursor, prev_cursor, rank_count` (without
/// owner records for haystacks), as Nakama returns them.
fn list_returns(lua: &Lua, list: &RecordList, with_owners: bool) -> mlua::Result<MultiValue> {
    let mut out = vec![records_table(lua, &list.records)?];
    if with_owners {
        out.push(records_table(lua, &list.owner_records)?);
    }
    out.push(cursor_value(lua, &list.next_cursor)?);
    out.push(cursor_value(lua, &list.prev_cursor)?);
    out.push(LuaValue::Number(list.rank_count as f64));
    Ok(MultiValue::from_vec(out))
}

fn service(shared: &LuaShared) -> mlua::Result<Arc<LeaderboardService>> {
    shared
        .services
        .leaderboards()
        .ok_or_else(|| mlua::Error::runtime("leaderboards are not available in this runtime"))
}

fn id_arg(id: Option<String>, what: &str) -> mlua::Result<String> {
    match id {
        Some(id) if !id.is_empty() => Ok(id),
        _ => Err(arg_error(1, &format!("expects a {what} ID string"))),
    }
}

fn uuid_arg(id: Option<String>, arg: usize, message: &str) -> mlua::Result<Uuid> {
    id.as_deref()
        .and_then(|s| Uuid::parse_str(s).ok())
        .ok_or_else(|| arg_error(arg, message))
}

fn owners_arg(owners: Option<Table>) -> mlua::Result<Vec<Uuid>> {
    let Some(owners) = owners else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for v in owners.sequence_values::<LuaValue>() {
        let LuaValue::String(s) = v? else {
            return Err(arg_error(2, "expects each owner ID to be string"));
        };
        let s = s.to_str()?;
        out.push(
            Uuid::parse_str(&s)
                .map_err(|_| arg_error(2, "expects each owner ID to be a valid identifier"))?,
        );
    }
    Ok(out)
}

fn ids_arg(ids: Option<Table>, what: &str) -> mlua::Result<Vec<String>> {
    let Some(ids) = ids else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for v in ids.sequence_values::<LuaValue>() {
        let LuaValue::String(s) = v? else {
            return Err(arg_error(1, &format!("each {what} id must be a string")));
        };
        out.push(s.to_str()?.to_owned());
    }
    Ok(out)
}

fn metadata_arg(lua: &Lua, t: Option<Table>, arg: usize) -> mlua::Result<String> {
    match t {
        None => Ok(String::new()),
        Some(t) => convert::json_text(lua, &LuaValue::Table(t))
            .map_err(|e| arg_error(arg, &format!("error encoding metadata: {e}"))),
    }
}

fn sort_arg(s: Option<String>, arg: usize) -> mlua::Result<SortOrder> {
    SortOrder::parse(s.as_deref().unwrap_or("desc"))
        .map_err(|_| arg_error(arg, "expects sort order to be 'asc' or 'desc'"))
}

fn operator_arg(s: Option<String>, arg: usize) -> mlua::Result<Operator> {
    Operator::parse(s.as_deref().unwrap_or("best")).map_err(|_| {
        arg_error(
            arg,
            "expects operator to be 'best', 'set', 'decr' or 'incr'",
        )
    })
}

fn override_arg(s: Option<String>, arg: usize) -> mlua::Result<Option<Operator>> {
    let s = s.unwrap_or_default().to_ascii_lowercase();
    if s.is_empty() || s == "no_override" {
        return Ok(None);
    }
    Operator::parse(&s)
        .map(Some)
        .map_err(|_| arg_error(arg, "invalid operator"))
}

fn score_arg(v: Option<i64>, arg: usize, what: &str) -> mlua::Result<i64> {
    match v.unwrap_or(0) {
        n if n < 0 => Err(arg_error(arg, &format!("expects {what} to be >= 0"))),
        n => Ok(n),
    }
}

fn nonneg(v: Option<i64>, arg: usize, message: &str) -> mlua::Result<i64> {
    match v.unwrap_or(0) {
        n if n < 0 => Err(arg_error(arg, message)),
        n => Ok(n),
    }
}

type CreateArgs = (
    Option<String>,
    Option<bool>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<Table>,
    Option<bool>,
);

type TournamentListArgs = (
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<String>,
);

type RecordsListArgs = (
    Option<String>,
    Option<Table>,
    Option<i64>,
    Option<String>,
    Option<i64>,
);

type HaystackArgs = (
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<i64>,
);

type WriteArgs = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<Table>,
    Option<String>,
);

pub(super) fn install(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    install_leaderboards(lua, shared, nk)?;
    install_tournaments(lua, shared, nk)?;
    install_records(lua, shared, nk, false)?;
    install_records(lua, shared, nk, true)
}

fn install_leaderboards(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    let s = shared.clone();
    nk.set(
        "leaderboard_create",
        lua.create_function(
            move |lua,
                  (id, authoritative, sort, operator, reset, metadata, enable_ranks): CreateArgs| {
                let mut spec = BoardSpec::leaderboard(&id_arg(id, "leaderboard")?);
                spec.authoritative = authoritative.unwrap_or(false);
                spec.sort_order = sort_arg(sort, 3)?;
                spec.operator = operator_arg(operator, 4)?;
                spec.reset_schedule = reset.unwrap_or_default();
                spec.metadata = metadata_arg(lua, metadata, 6)?;
                spec.enable_ranks = enable_ranks.unwrap_or(false);
                let lb = service(&s)?;
                run(&s, "error creating leaderboard", async move {
                    lb.create(spec).await.map(drop)
                })
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "leaderboard_delete",
        lua.create_function(move |_, id: Option<String>| {
            let id = id_arg(id, "leaderboard")?;
            let lb = service(&s)?;
            run(&s, "error deleting leaderboard", async move {
                lb.delete(&id, false).await
            })
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "leaderboard_list",
        lua.create_function(move |lua, (limit, cursor): (Option<i64>, Option<String>)| {
            let limit = limit.unwrap_or(10);
            if !(1..=100).contains(&limit) {
                return Err(arg_error(1, "limit must be 1-100"));
            }
            let lb = service(&s)?;
            let (boards, next) = lb
                .leaderboard_list(limit as usize, cursor.as_deref().unwrap_or(""))
                .map_err(|_| arg_error(2, "expects cursor to be valid when provided"))?;
            let now = ludus_core::unix_now();
            let list = Value::Array(boards.iter().map(|b| board_json(b, now)).collect());
            Ok((convert::to_lua(lua, &list)?, cursor_value(lua, &next)?))
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "leaderboards_get_id",
        lua.create_function(move |lua, ids: Option<Table>| {
            let ids = ids_arg(ids, "leaderboard")?;
            let lb = service(&s)?;
            let now = ludus_core::unix_now();
            let list = Value::Array(
                lb.leaderboards_get(&ids)
                    .iter()
                    .map(|b| board_json(b, now))
                    .collect(),
            );
            convert::to_lua(lua, &list)
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "leaderboard_records_list_cursor_from_rank",
        lua.create_function(
            move |_, (id, rank, expiry): (Option<String>, Option<i64>, Option<i64>)| {
                let id = id_arg(id, "leaderboard")?;
                let rank = match rank {
                    Some(r) if r >= 1 => r as u64,
                    _ => return Err(arg_error(2, "invalid rank - must be > 1")),
                };
                let expiry = nonneg(expiry, 3, "invalid expiry")?;
                let lb = service(&s)?;
                run(&s, "error listing leaderboard records", async move {
                    lb.cursor_from_rank(&id, rank, expiry).await
                })
            },
        )?,
    )?;
    for name in ["leaderboard_ranks_disable", "leaderboard_rank_disable"] {
        let s = shared.clone();
        nk.set(
            name,
            lua.create_function(move |_, id: Option<String>| {
                let id = id_arg(id, "leaderboard")?;
                let lb = service(&s)?;
                run(&s, "error disabling leaderboard ranks", async move {
                    lb.rank_disable(&id, false).await
                })
            })?,
        )?;
    }
    Ok(())
}

fn install_tournaments(lua: &Lua, shared: &Arc<LuaShared>, nk: &Table) -> mlua::Result<()> {
    let s = shared.clone();
    nk.set(
        "tournament_create",
        lua.create_function(move |lua, args: MultiValue| {
            let a: Vec<LuaValue> = args.into_iter().collect();
            let at = |i: usize| a.get(i - 1).cloned().unwrap_or(LuaValue::Nil);
            let string = |i: usize| -> mlua::Result<Option<String>> {
                match at(i) {
                    LuaValue::Nil => Ok(None),
                    LuaValue::String(s) => Ok(Some(s.to_str()?.to_owned())),
                    _ => Err(arg_error(i, "expects a string")),
                }
            };
            let int = |i: usize| -> mlua::Result<Option<i64>> {
                match at(i) {
                    LuaValue::Nil => Ok(None),
                    v => whole_arg(&v, i, "expects a number").map(Some),
                }
            };
            let boolean = |i: usize| -> mlua::Result<Option<bool>> {
                match at(i) {
                    LuaValue::Nil => Ok(None),
                    LuaValue::Boolean(b) => Ok(Some(b)),
                    _ => Err(arg_error(i, "expects a boolean")),
                }
            };
            let mut spec = BoardSpec::leaderboard(&id_arg(string(1)?, "tournament")?);
            spec.authoritative = boolean(2)?.unwrap_or(true);
            spec.sort_order = sort_arg(string(3)?, 3)?;
            spec.operator = operator_arg(string(4)?, 4)?;
            let duration = int(5)?.unwrap_or(0);
            if duration <= 0 || duration > u32::MAX as i64 {
                return Err(arg_error(5, "duration must be > 0"));
            }
            spec.duration = duration as u32;
            spec.reset_schedule = string(6)?.unwrap_or_default();
            spec.metadata = match at(7) {
                LuaValue::Table(t) => metadata_arg(lua, Some(t), 7)?,
                _ => String::new(),
            };
            spec.title = string(8)?.unwrap_or_default();
            spec.description = string(9)?.unwrap_or_default();
            let category = int(10)?.unwrap_or(0);
            if !(0..=127).contains(&category) {
                return Err(arg_error(10, "category must be 0-127"));
            }
            spec.category = category as u32;
            spec.start_time = nonneg(int(11)?, 11, "startTime must be >= 0.")?;
            spec.end_time = nonneg(
                int(12)?,
                12,
                "endTime must be > startTime. Use 0 to indicate a tournament that never ends.",
            )?;
            if spec.end_time != 0 && spec.end_time <= spec.start_time {
                return Err(arg_error(
                    12,
                    "endTime must be > startTime. Use 0 to indicate a tournament that never ends.",
                ));
            }
            spec.max_size =
                nonneg(int(13)?, 13, "maxSize must be >= 0")?.min(u32::MAX as i64) as u32;
            spec.max_num_score =
                nonneg(int(14)?, 14, "maxNumScore must be >= 0")?.min(u32::MAX as i64) as u32;
            spec.join_required = boolean(15)?.unwrap_or(false);
            spec.enable_ranks = boolean(16)?.unwrap_or(false);
            let lb = service(&s)?;
            run(&s, "error creating tournament", async move {
                lb.create(spec).await.map(drop)
            })
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "tournament_delete",
        lua.create_function(move |_, id: Option<String>| {
            let id = id_arg(id, "tournament")?;
            let lb = service(&s)?;
            run(&s, "error deleting tournament", async move {
                lb.delete(&id, true).await
            })
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "tournament_add_attempt",
        lua.create_function(
            move |_, (id, owner, count): (Option<String>, Option<String>, Option<i64>)| {
                let id = id_arg(id, "tournament")?;
                let owner = uuid_arg(owner, 2, "expects owner ID to be a valid identifier")?;
                let count = match count {
                    Some(n) if n != 0 => n,
                    _ => return Err(arg_error(3, "expects an attempt count number != 0")),
                };
                let lb = service(&s)?;
                run(&s, "error adding tournament attempts", async move {
                    lb.tournament_add_attempt(&id, owner, count).await
                })
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "tournament_join",
        lua.create_function(
            move |_, (id, owner, username): (Option<String>, Option<String>, Option<String>)| {
                let id = id_arg(id, "tournament")?;
                let owner = uuid_arg(owner, 2, "expects user ID to be a valid identifier")?;
                let username = match username {
                    Some(u) if !u.is_empty() => u,
                    _ => return Err(arg_error(3, "expects a username string")),
                };
                let lb = service(&s)?;
                run(&s, "error joining tournament", async move {
                    lb.tournament_join(&id, owner, &username).await
                })
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "tournaments_get_id",
        lua.create_function(move |lua, ids: Option<Table>| {
            let ids = ids_arg(ids, "tournament")?;
            let lb = service(&s)?;
            let list = Value::Array(
                lb.tournaments_get(&ids)
                    .iter()
                    .map(tournament_json)
                    .collect(),
            );
            convert::to_lua(lua, &list)
        })?,
    )?;
    let s = shared.clone();
    nk.set(
        "tournament_list",
        lua.create_function(
            move |lua,
                  (category_start, category_end, start_time, end_time, limit, cursor): TournamentListArgs| {
                let category_start = category_start.unwrap_or(0);
                if !(0..=127).contains(&category_start) {
                    return Err(arg_error(1, "categoryStart must be 0-127"));
                }
                let category_end = category_end.unwrap_or(0);
                if !(0..=127).contains(&category_end) {
                    return Err(arg_error(2, "categoryEnd must be 0-127"));
                }
                if category_end < category_start {
                    return Err(arg_error(2, "categoryEnd must be >= categoryStart"));
                }
                let time = |t: Option<i64>, arg: usize, name: &str| match t.unwrap_or(-1) {
                    -1 => Ok(None),
                    t if t >= 0 => Ok(Some(t)),
                    _ => Err(arg_error(arg, &format!("{name} must be >= -1"))),
                };
                let start_time = time(start_time, 3, "startTime")?;
                let end_time = time(end_time, 4, "endTime")?;
                let limit = limit.unwrap_or(10);
                if !(1..=100).contains(&limit) {
                    return Err(arg_error(5, "limit must be 1-100"));
                }
                let lb = service(&s)?;
                let (list, next) = lb
                    .tournament_list(
                        category_start as u32,
                        category_end as u32,
                        start_time,
                        end_time,
                        limit as usize,
                        cursor.as_deref().unwrap_or(""),
                    )
                    .map_err(|e| mlua::Error::runtime(format!("error listing tournaments: {e}")))?;
                let list = Value::Array(list.iter().map(tournament_json).collect());
                Ok((convert::to_lua(lua, &list)?, cursor_value(lua, &next)?))
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        "tournament_ranks_disable",
        lua.create_function(move |_, id: Option<String>| {
            let id = id_arg(id, "tournament")?;
            let lb = service(&s)?;
            run(&s, "error disabling tournament ranks", async move {
                lb.rank_disable(&id, true).await
            })
        })?,
    )?;
    Ok(())
}

/// The record functions of leaderboards (`tournament` false) or tournaments.
fn install_records(
    lua: &Lua,
    shared: &Arc<LuaShared>,
    nk: &Table,
    tournament: bool,
) -> mlua::Result<()> {
    let (prefix, what) = if tournament {
        ("tournament", "tournament")
    } else {
        ("leaderboard", "leaderboard")
    };
    let s = shared.clone();
    nk.set(
        format!("{prefix}_records_list"),
        lua.create_function(
            move |lua, (id, owners, limit, cursor, expiry): RecordsListArgs| {
                let id = id_arg(id, what)?;
                let owners = owners_arg(owners)?;
                let limit = limit.unwrap_or(0);
                if !(0..=10_000).contains(&limit) {
                    return Err(arg_error(3, "expects limit to be 0-10000"));
                }
                let limit = (limit != 0).then_some(limit as usize);
                let expiry = nonneg(expiry, 5, "expiry must be >= 0")?;
                let lb = service(&s)?;
                let list = run(&s, &format!("error listing {what} records"), async move {
                    lb.records_list(
                        &id,
                        tournament,
                        &owners,
                        limit,
                        cursor.as_deref().unwrap_or(""),
                        expiry,
                    )
                    .await
                })?;
                list_returns(lua, &list, true)
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        format!("{prefix}_records_haystack"),
        lua.create_function(
            move |lua, (id, owner, limit, cursor, expiry): HaystackArgs| {
                let id = id_arg(id, what)?;
                let owner = uuid_arg(owner, 2, "expects user ID to be a valid identifier")?;
                let limit = limit.unwrap_or(10);
                if !(1..=100).contains(&limit) {
                    return Err(arg_error(3, "limit must be 1-100"));
                }
                let expiry = nonneg(
                    expiry,
                    5,
                    "expiry should be time since epoch in seconds and has to be a positive integer",
                )?;
                let lb = service(&s)?;
                let list = run(&s, &format!("error querying {what} records"), async move {
                    lb.records_around(
                        &id,
                        tournament,
                        owner,
                        limit as usize,
                        cursor.as_deref().unwrap_or(""),
                        expiry,
                    )
                    .await
                })?;
                list_returns(lua, &list, false)
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        format!("{prefix}_record_write"),
        lua.create_function(
            move |lua, (id, owner, username, score, subscore, metadata, op): WriteArgs| {
                let id = id_arg(id, what)?;
                let owner = uuid_arg(owner, 2, "expects owner ID to be a valid identifier")?;
                let score = score_arg(score, 4, "score")?;
                let subscore = score_arg(subscore, 5, "subscore")?;
                let metadata = metadata_arg(lua, metadata, 6)?;
                let op = override_arg(op, 7)?;
                let lb = service(&s)?;
                let record = run(&s, &format!("error writing {what} record"), async move {
                    lb.write(
                        Caller::Server,
                        &id,
                        tournament,
                        owner,
                        username,
                        score,
                        subscore,
                        (!metadata.is_empty()).then_some(metadata),
                        op,
                    )
                    .await
                })?;
                convert::to_lua(lua, &record_json(&record))
            },
        )?,
    )?;
    let s = shared.clone();
    nk.set(
        format!("{prefix}_record_delete"),
        lua.create_function(move |_, (id, owner): (Option<String>, Option<String>)| {
            let id = id_arg(id, what)?;
            let owner = uuid_arg(owner, 2, "expects owner ID to be a valid identifier")?;
            let lb = service(&s)?;
            run(&s, &format!("error deleting {what} record"), async move {
                lb.delete_record(Caller::Server, &id, tournament, owner)
                    .await
            })
        })?,
    )?;
    Ok(())
}
