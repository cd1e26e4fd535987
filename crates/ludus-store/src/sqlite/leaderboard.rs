//! The SQL of leaderboards, tournaments and their records on SQLite. A
//! score submission is one write job on the writer thread (one savepoint of
//! the group commit): it reads the owner's record, decides with
//! `ludus_core::leaderboard::apply_write` and writes, and nothing else
//! writes in between, so concurrent increments never lose an update.

use ludus_core::leaderboard::{
    Leaderboard, LeaderboardRecord, Operator, RecordWrite, SortOrder, StoredScore, WriteAction,
    WriteOutcome, WriteRejection, apply_write,
};
use ludus_core::store::{JoinOutcome, RankedScore, ScheduleKind, StoreResult, TournamentJoin};
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension as _, Row, params};
use uuid::Uuid;

use super::queries::{IdText, map_err, uuid_at};

const BOARD_COLUMNS: &str = "id, authoritative, sort_order, operator, reset_schedule, metadata, \
     create_time, category, description, duration, end_time, join_required, max_size, \
     max_num_score, title, start_time, enable_ranks";

const RECORD_COLUMNS: &str = "leaderboard_id, owner_id, username, score, subscore, num_score, \
     max_num_score, metadata, create_time, update_time, expiry_time";

fn bad(idx: usize, what: &str) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(idx, Type::Integer, what.to_owned().into())
}

fn board_from_row(row: &Row<'_>) -> rusqlite::Result<Leaderboard> {
    Ok(Leaderboard {
        id: row.get(0)?,
        authoritative: row.get(1)?,
        sort_order: SortOrder::from_i64(row.get(2)?).ok_or_else(|| bad(2, "sort order"))?,
        operator: Operator::from_i64(row.get(3)?).ok_or_else(|| bad(3, "operator"))?,
        reset_schedule: row.get(4)?,
        metadata: row.get(5)?,
        create_time: row.get(6)?,
        category: row.get(7)?,
        description: row.get(8)?,
        duration: row.get(9)?,
        end_time: row.get(10)?,
        join_required: row.get(11)?,
        max_size: row.get(12)?,
        max_num_score: row.get(13)?,
        title: row.get(14)?,
        start_time: row.get(15)?,
        enable_ranks: row.get(16)?,
    })
}

fn record_from_row(row: &Row<'_>) -> rusqlite::Result<LeaderboardRecord> {
    Ok(LeaderboardRecord {
        leaderboard_id: row.get(0)?,
        owner_id: uuid_at(row, 1)?,
        username: row.get(2)?,
        score: row.get(3)?,
        subscore: row.get(4)?,
        num_score: row.get(5)?,
        max_num_score: row.get(6)?,
        metadata: row.get(7)?,
        create_time: row.get(8)?,
        update_time: row.get(9)?,
        expiry_time: row.get(10)?,
        rank: 0,
    })
}

fn get_board(conn: &Connection, id: &str) -> StoreResult<Option<Leaderboard>> {
    conn.prepare_cached(&format!(
        "SELECT {BOARD_COLUMNS} FROM leaderboard WHERE id = ?1"
    ))
    .map_err(map_err)?
    .query_row([id], board_from_row)
    .optional()
    .map_err(map_err)
}

pub(super) fn create(conn: &Connection, b: &Leaderboard) -> StoreResult<(Leaderboard, bool)> {
    let inserted = conn
        .prepare_cached(
            "INSERT INTO leaderboard (id, authoritative, sort_order, operator, reset_schedule,
                 metadata, create_time, category, description, duration, end_time, join_required,
                 max_size, max_num_score, title, start_time, enable_ranks, reset_fired, end_fired)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?7, ?7)
             ON CONFLICT (id) DO NOTHING",
        )
        .map_err(map_err)?
        .execute(params![
            b.id,
            b.authoritative,
            b.sort_order.as_i64(),
            b.operator.as_i64(),
            b.reset_schedule,
            b.metadata,
            b.create_time,
            b.category,
            b.description,
            b.duration,
            b.end_time,
            b.join_required,
            b.max_size,
            b.max_num_score,
            b.title,
            b.start_time,
            b.enable_ranks,
        ])
        .map_err(map_err)?;
    let stored = get_board(conn, &b.id)?.ok_or(ludus_core::StoreError::NotFound)?;
    Ok((stored, inserted == 1))
}

pub(super) fn delete(conn: &Connection, id: &str) -> StoreResult<bool> {
    conn.prepare_cached("DELETE FROM leaderboard_record WHERE leaderboard_id = ?1")
        .and_then(|mut s| s.execute([id]))
        .map_err(map_err)?;
    let n = conn
        .prepare_cached("DELETE FROM leaderboard WHERE id = ?1")
        .and_then(|mut s| s.execute([id]))
        .map_err(map_err)?;
    Ok(n == 1)
}

pub(super) fn load(conn: &Connection) -> StoreResult<Vec<Leaderboard>> {
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {BOARD_COLUMNS} FROM leaderboard ORDER BY id"
        ))
        .map_err(map_err)?;
    let rows = stmt.query_map([], board_from_row).map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}

pub(super) fn set_ranks(conn: &Connection, id: &str, enable: bool) -> StoreResult<bool> {
    let n = conn
        .prepare_cached("UPDATE leaderboard SET enable_ranks = ?2 WHERE id = ?1")
        .and_then(|mut s| s.execute(params![id, enable]))
        .map_err(map_err)?;
    Ok(n == 1)
}

pub(super) fn scores(conn: &Connection, id: &str, expiry: i64) -> StoreResult<Vec<RankedScore>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT owner_id, score, subscore, num_score FROM leaderboard_record
              WHERE leaderboard_id = ?1 AND expiry_time = ?2",
        )
        .map_err(map_err)?;
    let rows = stmt
        .query_map(params![id, expiry], |row| {
            Ok(RankedScore {
                owner: uuid_at(row, 0)?,
                score: row.get(1)?,
                subscore: row.get(2)?,
                num_score: row.get(3)?,
            })
        })
        .map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}

fn record(
    conn: &Connection,
    id: &str,
    expiry: i64,
    owner: Uuid,
) -> StoreResult<Option<LeaderboardRecord>> {
    conn.prepare_cached(&format!(
        "SELECT {RECORD_COLUMNS} FROM leaderboard_record
          WHERE leaderboard_id = ?1 AND expiry_time = ?2 AND owner_id = ?3"
    ))
    .map_err(map_err)?
    .query_row(params![id, expiry, IdText::new(owner)], record_from_row)
    .optional()
    .map_err(map_err)
}

pub(super) fn records_get(
    conn: &Connection,
    id: &str,
    expiry: i64,
    owners: &[Uuid],
) -> StoreResult<Vec<LeaderboardRecord>> {
    // One statement for any number of owners: their ids as one JSON array,
    // each looked up through the primary key.
    let ids = serde_json::to_string(&owners.iter().map(Uuid::to_string).collect::<Vec<_>>())
        .map_err(|e| ludus_core::StoreError::Backend(e.to_string()))?;
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {RECORD_COLUMNS} FROM leaderboard_record
              WHERE leaderboard_id = ?1 AND expiry_time = ?2
                AND owner_id IN (SELECT value FROM json_each(?3))"
        ))
        .map_err(map_err)?;
    let rows = stmt
        .query_map(params![id, expiry, ids], record_from_row)
        .map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}

pub(super) fn records_of_owner(
    conn: &Connection,
    owner: Uuid,
    limit: usize,
) -> StoreResult<Vec<LeaderboardRecord>> {
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {RECORD_COLUMNS} FROM leaderboard_record WHERE owner_id = ?1
              ORDER BY create_time, leaderboard_id, expiry_time LIMIT +?2"
        ))
        .map_err(map_err)?;
    let rows = stmt
        .query_map(
            params![IdText::new(owner), i64::try_from(limit).unwrap_or(i64::MAX)],
            record_from_row,
        )
        .map_err(map_err)?;
    rows.collect::<Result<_, _>>().map_err(map_err)
}

/// Counts a new record of a tournament period against its max size; false
/// when the period is full.
fn grow_size(conn: &Connection, id: &str, expiry: i64, max_size: u32) -> StoreResult<bool> {
    let n = conn
        .prepare_cached(
            "UPDATE leaderboard
                SET size = CASE WHEN size_expiry = ?2 THEN size + 1 ELSE 1 END, size_expiry = ?2
              WHERE id = ?1 AND (size_expiry <> ?2 OR size < ?3)",
        )
        .and_then(|mut s| s.execute(params![id, expiry, max_size]))
        .map_err(map_err)?;
    Ok(n == 1)
}

pub(super) fn write(conn: &Connection, w: &RecordWrite, now: i64) -> StoreResult<WriteOutcome> {
    let existing = record(conn, &w.leaderboard_id, w.expiry_time, w.owner_id)?;
    let stored = existing.as_ref().map(|r| StoredScore {
        score: r.score,
        subscore: r.subscore,
        num_score: r.num_score,
        max_num_score: r.max_num_score,
    });
    let action = match apply_write(stored, w) {
        Ok(a) => a,
        Err(r) => return Ok(WriteOutcome::Rejected(r)),
    };
    let owner = IdText::new(w.owner_id);
    match action {
        WriteAction::Unchanged => {
            return Ok(WriteOutcome::Unchanged(
                existing.ok_or(ludus_core::StoreError::NotFound)?,
            ));
        }
        WriteAction::Insert {
            score,
            subscore,
            max_num_score,
        } => {
            if let Some(t) = w.tournament
                && !grow_size(conn, &w.leaderboard_id, w.expiry_time, t.max_size)?
            {
                return Ok(WriteOutcome::Rejected(WriteRejection::MaxSizeReached));
            }
            conn.prepare_cached(
                "INSERT INTO leaderboard_record (leaderboard_id, owner_id, expiry_time, username,
                     score, subscore, num_score, max_num_score, metadata, create_time, update_time)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, COALESCE(?8, '{}'), ?9, ?9)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    w.leaderboard_id,
                    owner,
                    w.expiry_time,
                    w.username,
                    score,
                    subscore,
                    max_num_score,
                    w.metadata,
                    now
                ])
            })
            .map_err(map_err)?;
        }
        WriteAction::Update { score, subscore } => {
            conn.prepare_cached(
                "UPDATE leaderboard_record
                    SET score = ?4, subscore = ?5, num_score = num_score + 1,
                        username = COALESCE(?6, username), metadata = COALESCE(?7, metadata),
                        update_time = ?8
                  WHERE leaderboard_id = ?1 AND expiry_time = ?2 AND owner_id = ?3",
            )
            .and_then(|mut s| {
                s.execute(params![
                    w.leaderboard_id,
                    w.expiry_time,
                    owner,
                    score,
                    subscore,
                    w.username,
                    w.metadata,
                    now
                ])
            })
            .map_err(map_err)?;
        }
    }
    let written = record(conn, &w.leaderboard_id, w.expiry_time, w.owner_id)?
        .ok_or(ludus_core::StoreError::NotFound)?;
    Ok(WriteOutcome::Written(written))
}

pub(super) fn delete_record(
    conn: &Connection,
    id: &str,
    owner: Uuid,
    expiry: i64,
) -> StoreResult<bool> {
    let n = conn
        .prepare_cached(
            "DELETE FROM leaderboard_record WHERE leaderboard_id = ?1 AND expiry_time = ?2 AND owner_id = ?3",
        )
        .and_then(|mut s| s.execute(params![id, expiry, IdText::new(owner)]))
        .map_err(map_err)?;
    if n == 1 {
        shrink_size(conn, id, expiry)?;
    }
    Ok(n == 1)
}

/// A deleted tournament record frees its place in the period's `max_size`.
fn shrink_size(conn: &Connection, id: &str, expiry: i64) -> StoreResult<()> {
    conn.prepare_cached(
        "UPDATE leaderboard SET size = size - 1 WHERE id = ?1 AND size_expiry = ?2 AND size > 0",
    )
    .and_then(|mut s| s.execute(params![id, expiry]))
    .map_err(map_err)?;
    Ok(())
}

pub(super) fn join(conn: &Connection, j: &TournamentJoin, now: i64) -> StoreResult<JoinOutcome> {
    if record(conn, &j.id, j.expiry, j.owner)?.is_some() {
        return Ok(JoinOutcome::AlreadyJoined);
    }
    if !grow_size(conn, &j.id, j.expiry, j.max_size)? {
        return Ok(JoinOutcome::Full);
    }
    conn.prepare_cached(
        "INSERT INTO leaderboard_record (leaderboard_id, owner_id, expiry_time, username,
             score, subscore, num_score, max_num_score, metadata, create_time, update_time)
         VALUES (?1, ?2, ?3, ?4, 0, 0, 0, ?5, '{}', ?6, ?6)",
    )
    .and_then(|mut s| {
        s.execute(params![
            j.id,
            IdText::new(j.owner),
            j.expiry,
            j.username,
            j.max_num_score,
            now
        ])
    })
    .map_err(map_err)?;
    Ok(JoinOutcome::Joined)
}

pub(super) fn add_attempt(
    conn: &Connection,
    id: &str,
    owner: Uuid,
    expiry: i64,
    count: i64,
) -> StoreResult<bool> {
    let n = conn
        .prepare_cached(
            "UPDATE leaderboard_record SET max_num_score = MAX(max_num_score + ?4, 1)
              WHERE leaderboard_id = ?1 AND expiry_time = ?2 AND owner_id = ?3",
        )
        .and_then(|mut s| s.execute(params![id, expiry, IdText::new(owner), count]))
        .map_err(map_err)?;
    Ok(n == 1)
}

pub(super) fn schedule_fired(
    conn: &Connection,
    id: &str,
    kind: ScheduleKind,
    period: i64,
) -> StoreResult<bool> {
    let sql = match kind {
        ScheduleKind::Reset => {
            "UPDATE leaderboard SET reset_fired = ?2 WHERE id = ?1 AND reset_fired < ?2"
        }
        ScheduleKind::End => {
            "UPDATE leaderboard SET end_fired = ?2 WHERE id = ?1 AND end_fired < ?2"
        }
    };
    let n = conn
        .prepare_cached(sql)
        .and_then(|mut s| s.execute(params![id, period]))
        .map_err(map_err)?;
    Ok(n == 1)
}
