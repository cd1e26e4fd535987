//! The SQL of leaderboards, tournaments and their records on PostgreSQL. A
//! score submission locks the owner's record (`SELECT … FOR UPDATE`),
//! decides with `ludus_core::leaderboard::apply_write` and writes, in one
//! transaction, so concurrent increments queue on the row instead of
//! losing updates; a record inserted meanwhile (the insert finds a
//! conflict) retries the whole transaction.

use ludus_core::StoreError;
use ludus_core::leaderboard::{
    Leaderboard, LeaderboardRecord, Operator, RecordWrite, SortOrder, StoredScore, WriteAction,
    WriteOutcome, WriteRejection, apply_write,
};
use ludus_core::store::{JoinOutcome, RankedScore, ScheduleKind, TournamentJoin};
use tokio_postgres::{GenericClient, Row};
use uuid::Uuid;

use super::errors::Failure;
use super::statements::{Statements, Stmt};

pub(super) const BOARD_SELECT: &str = "SELECT id::text, authoritative, sort_order, operator, \
     reset_schedule, metadata::text, create_time, category, description, duration, end_time, \
     join_required, max_size, max_num_score, title, start_time, enable_ranks FROM leaderboard";

const RECORD_SELECT: &str = "SELECT leaderboard_id::text, owner_id, username, score, subscore, \
     num_score, max_num_score, metadata::text, create_time, update_time, expiry_time \
     FROM leaderboard_record";

fn corrupt(what: &str) -> Failure {
    Failure::Fatal(StoreError::Backend(format!(
        "stored leaderboard has a bad {what}"
    )))
}

fn u32_at(row: &Row, idx: usize) -> Result<u32, Failure> {
    let v: i64 = row.try_get(idx)?;
    u32::try_from(v).map_err(|_| corrupt("count"))
}

pub(super) fn board_from_row(row: &Row) -> Result<Leaderboard, Failure> {
    Ok(Leaderboard {
        id: row.try_get(0)?,
        authoritative: row.try_get(1)?,
        sort_order: SortOrder::from_i64(row.try_get(2)?).ok_or_else(|| corrupt("sort order"))?,
        operator: Operator::from_i64(row.try_get(3)?).ok_or_else(|| corrupt("operator"))?,
        reset_schedule: row.try_get(4)?,
        metadata: row.try_get(5)?,
        create_time: row.try_get(6)?,
        category: u32_at(row, 7)?,
        description: row.try_get(8)?,
        duration: u32_at(row, 9)?,
        end_time: row.try_get(10)?,
        join_required: row.try_get(11)?,
        max_size: u32_at(row, 12)?,
        max_num_score: u32_at(row, 13)?,
        title: row.try_get(14)?,
        start_time: row.try_get(15)?,
        enable_ranks: row.try_get(16)?,
    })
}

pub(super) fn record_from_row(row: &Row) -> Result<LeaderboardRecord, Failure> {
    let num_score: i64 = row.try_get(5)?;
    Ok(LeaderboardRecord {
        leaderboard_id: row.try_get(0)?,
        owner_id: row.try_get(1)?,
        username: row.try_get(2)?,
        score: row.try_get(3)?,
        subscore: row.try_get(4)?,
        num_score: i32::try_from(num_score).map_err(|_| corrupt("num_score"))?,
        max_num_score: u32_at(row, 6)?,
        metadata: row.try_get(7)?,
        create_time: row.try_get(8)?,
        update_time: row.try_get(9)?,
        expiry_time: row.try_get(10)?,
        rank: 0,
    })
}

pub(super) async fn create(
    c: &impl GenericClient,
    b: &Leaderboard,
) -> Result<(Leaderboard, bool), Failure> {
    let inserted = c
        .execute(
            "INSERT INTO leaderboard (id, authoritative, sort_order, operator, reset_schedule,
                 metadata, create_time, category, description, duration, end_time, join_required,
                 max_size, max_num_score, title, start_time, enable_ranks, reset_fired, end_fired)
             VALUES ($1, $2, $3, $4, $5, $6::text::jsonb, $7, $8, $9, $10, $11, $12, $13, $14, $15,
                     $16, $17, $7, $7)
             ON CONFLICT (id) DO NOTHING",
            &[
                &b.id,
                &b.authoritative,
                &b.sort_order.as_i64(),
                &b.operator.as_i64(),
                &b.reset_schedule,
                &b.metadata,
                &b.create_time,
                &(b.category as i64),
                &b.description,
                &(b.duration as i64),
                &b.end_time,
                &b.join_required,
                &(b.max_size as i64),
                &(b.max_num_score as i64),
                &b.title,
                &b.start_time,
                &b.enable_ranks,
            ],
        )
        .await?;
    let row = c
        .query_one(&format!("{BOARD_SELECT} WHERE id = $1"), &[&b.id])
        .await?;
    Ok((board_from_row(&row)?, inserted == 1))
}

pub(super) async fn load(c: &impl GenericClient) -> Result<Vec<Leaderboard>, Failure> {
    let rows = c.query(&format!("{BOARD_SELECT} ORDER BY id"), &[]).await?;
    rows.iter().map(board_from_row).collect()
}

pub(super) async fn scores(
    c: &impl GenericClient,
    id: &str,
    expiry: i64,
) -> Result<Vec<RankedScore>, Failure> {
    let rows = c
        .query(
            "SELECT owner_id, score, subscore, num_score FROM leaderboard_record
              WHERE leaderboard_id = $1 AND expiry_time = $2",
            &[&id, &expiry],
        )
        .await?;
    rows.iter()
        .map(|r| {
            let num_score: i64 = r.try_get(3)?;
            Ok(RankedScore {
                owner: r.try_get(0)?,
                score: r.try_get(1)?,
                subscore: r.try_get(2)?,
                num_score: num_score as i32,
            })
        })
        .collect()
}

pub(super) async fn records_get(
    c: &impl GenericClient,
    st: &Statements,
    id: &str,
    expiry: i64,
    owners: &[Uuid],
) -> Result<Vec<LeaderboardRecord>, Failure> {
    let rows = c
        .query(st.get(Stmt::RecordsGet), &[&id, &expiry, &owners])
        .await?;
    rows.iter().map(record_from_row).collect()
}

pub(super) async fn records_of_owner(
    c: &impl GenericClient,
    owner: Uuid,
    limit: i64,
) -> Result<Vec<LeaderboardRecord>, Failure> {
    let rows = c
        .query(super::statements::RECORDS_OF_OWNER, &[&owner, &limit])
        .await?;
    rows.iter().map(record_from_row).collect()
}

async fn record(
    c: &impl GenericClient,
    id: &str,
    expiry: i64,
    owner: Uuid,
    lock: bool,
) -> Result<Option<LeaderboardRecord>, Failure> {
    let sql = format!(
        "{RECORD_SELECT} WHERE leaderboard_id = $1 AND expiry_time = $2 AND owner_id = $3{}",
        if lock { " FOR UPDATE" } else { "" }
    );
    let row = c.query_opt(&sql, &[&id, &expiry, &owner]).await?;
    row.as_ref().map(record_from_row).transpose()
}

async fn grow_size(
    c: &impl GenericClient,
    id: &str,
    expiry: i64,
    max_size: u32,
) -> Result<bool, Failure> {
    let n = c
        .execute(
            "UPDATE leaderboard
                SET size = CASE WHEN size_expiry = $2 THEN size + 1 ELSE 1 END, size_expiry = $2
              WHERE id = $1 AND (size_expiry <> $2 OR size < $3)",
            &[&id, &expiry, &(max_size as i64)],
        )
        .await?;
    Ok(n == 1)
}

/// One attempt of a score submission, inside `tx`: three prepared
/// statements (lock, then insert or update returning the row).
pub(super) async fn write(
    tx: &tokio_postgres::Transaction<'_>,
    st: &Statements,
    w: &RecordWrite,
    now: i64,
) -> Result<WriteOutcome, Failure> {
    let existing = tx
        .query_opt(
            st.get(Stmt::RecordLock),
            &[&w.leaderboard_id, &w.expiry_time, &w.owner_id],
        )
        .await?
        .as_ref()
        .map(record_from_row)
        .transpose()?;
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
    let row = match action {
        WriteAction::Unchanged => {
            return Ok(WriteOutcome::Unchanged(
                existing.ok_or(StoreError::NotFound)?,
            ));
        }
        WriteAction::Insert {
            score,
            subscore,
            max_num_score,
        } => {
            if let Some(t) = w.tournament
                && !grow_size(tx, &w.leaderboard_id, w.expiry_time, t.max_size).await?
            {
                return Ok(WriteOutcome::Rejected(WriteRejection::MaxSizeReached));
            }
            tx.query_opt(
                st.get(Stmt::RecordInsert),
                &[
                    &w.leaderboard_id,
                    &w.owner_id,
                    &w.expiry_time,
                    &w.username,
                    &score,
                    &subscore,
                    &(max_num_score as i64),
                    &w.metadata,
                    &now,
                ],
            )
            .await?
            .ok_or_else(|| Failure::Retry("record inserted concurrently".into()))?
        }
        WriteAction::Update { score, subscore } => tx
            .query_opt(
                st.get(Stmt::RecordUpdate),
                &[
                    &w.leaderboard_id,
                    &w.expiry_time,
                    &w.owner_id,
                    &score,
                    &subscore,
                    &w.username,
                    &w.metadata,
                    &now,
                ],
            )
            .await?
            .ok_or(StoreError::NotFound)?,
    };
    Ok(WriteOutcome::Written(record_from_row(&row)?))
}

pub(super) async fn join(
    tx: &tokio_postgres::Transaction<'_>,
    j: &TournamentJoin,
    now: i64,
) -> Result<JoinOutcome, Failure> {
    if record(tx, &j.id, j.expiry, j.owner, true).await?.is_some() {
        return Ok(JoinOutcome::AlreadyJoined);
    }
    if !grow_size(tx, &j.id, j.expiry, j.max_size).await? {
        return Ok(JoinOutcome::Full);
    }
    let n = tx
        .execute(
            "INSERT INTO leaderboard_record (leaderboard_id, owner_id, expiry_time, username,
                 score, subscore, num_score, max_num_score, metadata, create_time, update_time)
             VALUES ($1, $2, $3, $4, 0, 0, 0, $5, '{}', $6, $6)
             ON CONFLICT DO NOTHING",
            &[
                &j.id,
                &j.owner,
                &j.expiry,
                &j.username,
                &(j.max_num_score as i64),
                &now,
            ],
        )
        .await?;
    if n == 0 {
        return Err(Failure::Retry("record inserted concurrently".into()));
    }
    Ok(JoinOutcome::Joined)
}

pub(super) fn schedule_sql(kind: ScheduleKind) -> &'static str {
    match kind {
        ScheduleKind::Reset => {
            "UPDATE leaderboard SET reset_fired = $2 WHERE id = $1 AND reset_fired < $2"
        }
        ScheduleKind::End => {
            "UPDATE leaderboard SET end_fired = $2 WHERE id = $1 AND end_fired < $2"
        }
    }
}
