//! Leaderboards and tournaments as Nakama defines them: the board's
//! configuration, records, operators, and the one pure function
//! ([`apply_write`]) that decides what a score submission does to the stored
//! record. Both stores call it inside the transaction that writes, so the
//! rules live here once. A tournament is a leaderboard with a duration.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{ApiError, Code};

/// Longest leaderboard id, as Nakama's `VARCHAR(128)`.
pub const MAX_ID_LEN: usize = 128;
/// Nakama's default attempts per owner and period.
pub const DEFAULT_MAX_NUM_SCORE: u32 = 1_000_000;
/// Nakama's default (and largest useful) tournament size.
pub const DEFAULT_MAX_SIZE: u32 = 100_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SortOrder {
    Ascending,
    Descending,
}

impl SortOrder {
    /// Nakama's stored and wire number: ascending 0, descending 1.
    pub fn as_i64(self) -> i64 {
        match self {
            SortOrder::Ascending => 0,
            SortOrder::Descending => 1,
        }
    }
    pub fn from_i64(n: i64) -> Option<SortOrder> {
        match n {
            0 => Some(SortOrder::Ascending),
            1 => Some(SortOrder::Descending),
            _ => None,
        }
    }
    /// `asc`/`ascending` or `desc`/`descending`, as Nakama's runtimes take them.
    pub fn parse(s: &str) -> Result<SortOrder, ApiError> {
        match s {
            "asc" | "ascending" => Ok(SortOrder::Ascending),
            "desc" | "descending" => Ok(SortOrder::Descending),
            _ => Err(ApiError::invalid(format!(
                "invalid sort order {s:?}: use \"asc\" or \"desc\""
            ))),
        }
    }
}

/// How a submitted score combines with the stored one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Operator {
    Best,
    Set,
    Increment,
    Decrement,
}

impl Operator {
    /// Nakama's stored number: best 0, set 1, incr 2, decr 3.
    pub fn as_i64(self) -> i64 {
        match self {
            Operator::Best => 0,
            Operator::Set => 1,
            Operator::Increment => 2,
            Operator::Decrement => 3,
        }
    }
    pub fn from_i64(n: i64) -> Option<Operator> {
        match n {
            0 => Some(Operator::Best),
            1 => Some(Operator::Set),
            2 => Some(Operator::Increment),
            3 => Some(Operator::Decrement),
            _ => None,
        }
    }
    /// The runtimes' names: `best`, `set`, `incr`/`increment`, `decr`/`decrement`.
    pub fn parse(s: &str) -> Result<Operator, ApiError> {
        match s {
            "best" => Ok(Operator::Best),
            "set" => Ok(Operator::Set),
            "incr" | "increment" => Ok(Operator::Increment),
            "decr" | "decrement" => Ok(Operator::Decrement),
            _ => Err(ApiError::invalid(format!(
                "invalid operator {s:?}: use \"best\", \"set\", \"incr\" or \"decr\""
            ))),
        }
    }
    /// The wire enum (`api.Operator`): 0 no override, 1 best, 2 set, 3 incr, 4 decr.
    pub fn from_api(n: i32) -> Result<Option<Operator>, ApiError> {
        match n {
            0 => Ok(None),
            1 => Ok(Some(Operator::Best)),
            2 => Ok(Some(Operator::Set)),
            3 => Ok(Some(Operator::Increment)),
            4 => Ok(Some(Operator::Decrement)),
            _ => Err(ApiError::invalid("invalid operator")),
        }
    }
    pub fn to_api(self) -> i32 {
        self.as_i64() as i32 + 1
    }
}

/// A leaderboard or (with a duration) a tournament. Times in UNIX seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Leaderboard {
    pub id: String,
    pub authoritative: bool,
    pub sort_order: SortOrder,
    pub operator: Operator,
    pub reset_schedule: Option<String>,
    /// A JSON object.
    pub metadata: String,
    pub create_time: i64,
    pub category: u32,
    pub description: String,
    /// Seconds a tournament period is active; 0 for a plain leaderboard.
    pub duration: u32,
    /// 0 for none.
    pub end_time: i64,
    pub join_required: bool,
    pub max_size: u32,
    pub max_num_score: u32,
    pub title: String,
    pub start_time: i64,
    pub enable_ranks: bool,
}

impl Leaderboard {
    pub fn is_tournament(&self) -> bool {
        self.duration > 0
    }

    /// A plain leaderboard with Nakama's defaults for the tournament fields.
    pub fn new(id: &str, now: i64) -> Leaderboard {
        Leaderboard {
            id: id.to_owned(),
            authoritative: false,
            sort_order: SortOrder::Descending,
            operator: Operator::Best,
            reset_schedule: None,
            metadata: "{}".into(),
            create_time: now,
            category: 0,
            description: String::new(),
            duration: 0,
            end_time: 0,
            join_required: false,
            max_size: DEFAULT_MAX_SIZE,
            max_num_score: DEFAULT_MAX_NUM_SCORE,
            title: String::new(),
            start_time: now,
            enable_ranks: true,
        }
    }
}

/// One owner's record in one period (expiry window) of a board.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaderboardRecord {
    pub leaderboard_id: String,
    pub owner_id: Uuid,
    pub username: Option<String>,
    pub score: i64,
    pub subscore: i64,
    /// Accepted submissions; also the record's version for the rank index.
    pub num_score: i32,
    pub max_num_score: u32,
    pub metadata: String,
    pub create_time: i64,
    pub update_time: i64,
    /// 0: never expires.
    pub expiry_time: i64,
    /// Filled from the rank index; 0 when ranks are off.
    pub rank: i64,
}

/// Limits of a tournament submission, checked in the writing transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TournamentLimits {
    pub join_required: bool,
    pub max_num_score: u32,
    pub max_size: u32,
}

/// A score submission, resolved against its board (operator, window).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordWrite {
    pub leaderboard_id: String,
    pub owner_id: Uuid,
    /// `None` keeps the stored username.
    pub username: Option<String>,
    pub score: i64,
    pub subscore: i64,
    /// `None` keeps the stored metadata.
    pub metadata: Option<String>,
    pub operator: Operator,
    pub sort_order: SortOrder,
    pub expiry_time: i64,
    /// `Some` for tournaments.
    pub tournament: Option<TournamentLimits>,
}

/// Why a submission was refused; nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WriteRejection {
    #[error("score or subscore out of range: they must stay between 0 and 2^63-1")]
    ScoreOutOfRange,
    #[error("must join tournament before attempting to write value")]
    JoinRequired,
    #[error("reached allowed max number of score attempts")]
    MaxNumScoreReached,
    #[error("tournament has reached max size")]
    MaxSizeReached,
}

impl From<WriteRejection> for ApiError {
    fn from(r: WriteRejection) -> ApiError {
        let code = match r {
            WriteRejection::ScoreOutOfRange => Code::InvalidArgument,
            _ => Code::FailedPrecondition,
        };
        ApiError::new(code, r.to_string())
    }
}

/// The stored part of a record that a write depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredScore {
    pub score: i64,
    pub subscore: i64,
    pub num_score: i32,
    pub max_num_score: u32,
}

/// What a write does to the row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteAction {
    /// Insert a new row with these values (and a tournament's size grows).
    Insert {
        score: i64,
        subscore: i64,
        max_num_score: u32,
    },
    /// Update the row: new scores, num_score + 1, metadata and username.
    Update { score: i64, subscore: i64 },
    /// Leave the row as it is (a `best` that is not better, a `set` to the
    /// same values, an increment by zero).
    Unchanged,
}

/// The outcome a store reports for a write.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteOutcome {
    /// The row changed (or was created); the record as now stored.
    Written(LeaderboardRecord),
    /// Nothing changed; the record as stored.
    Unchanged(LeaderboardRecord),
    Rejected(WriteRejection),
}

fn in_range(score: i64, subscore: i64) -> Result<(i64, i64), WriteRejection> {
    if score < 0 || subscore < 0 {
        return Err(WriteRejection::ScoreOutOfRange);
    }
    Ok((score, subscore))
}

/// Decides what `w` does given the stored row (Nakama's operator rules).
/// Tournament submissions always count an attempt; leaderboard ones only
/// when they change the row.
pub fn apply_write(
    existing: Option<StoredScore>,
    w: &RecordWrite,
) -> Result<WriteAction, WriteRejection> {
    let Some(e) = existing else {
        if w.tournament.is_some_and(|t| t.join_required) {
            return Err(WriteRejection::JoinRequired);
        }
        let (score, subscore) = match w.operator {
            Operator::Decrement => (0, 0),
            _ => in_range(w.score, w.subscore)?,
        };
        let max_num_score = w
            .tournament
            .map_or(DEFAULT_MAX_NUM_SCORE, |t| t.max_num_score);
        return Ok(WriteAction::Insert {
            score,
            subscore,
            max_num_score,
        });
    };
    if w.tournament.is_some() && e.max_num_score > 0 && e.num_score as i64 >= e.max_num_score as i64
    {
        return Err(WriteRejection::MaxNumScoreReached);
    }
    let best_desc = w.sort_order == SortOrder::Descending;
    let (score, subscore, changes) = match w.operator {
        Operator::Increment => {
            let s = e.score.checked_add(w.score);
            let ss = e.subscore.checked_add(w.subscore);
            let (Some(s), Some(ss)) = (s, ss) else {
                return Err(WriteRejection::ScoreOutOfRange);
            };
            (s, ss, w.score != 0 || w.subscore != 0)
        }
        Operator::Decrement => (
            e.score.saturating_sub(w.score).max(0),
            e.subscore.saturating_sub(w.subscore).max(0),
            w.score != 0 || w.subscore != 0,
        ),
        Operator::Set => (
            w.score,
            w.subscore,
            e.score != w.score || e.subscore != w.subscore,
        ),
        Operator::Best if best_desc => (
            e.score.max(w.score),
            e.subscore.max(w.subscore),
            e.score < w.score || e.subscore < w.subscore,
        ),
        Operator::Best => (
            e.score.min(w.score),
            e.subscore.min(w.subscore),
            e.score > w.score || e.subscore > w.subscore,
        ),
    };
    let (score, subscore) = in_range(score, subscore)?;
    if changes || w.tournament.is_some() {
        Ok(WriteAction::Update { score, subscore })
    } else {
        Ok(WriteAction::Unchanged)
    }
}

/// Checks a board id.
pub fn check_id(id: &str) -> Result<(), ApiError> {
    if id.is_empty() || id.len() > MAX_ID_LEN {
        return Err(ApiError::invalid(
            "invalid leaderboard id: it must be 1 to 128 bytes",
        ));
    }
    crate::stored_json::check_name(id, "leaderboard id", MAX_ID_LEN)
}

/// Checks that metadata is a JSON object; empty means `{}`.
pub fn check_metadata(metadata: &str) -> Result<String, ApiError> {
    if metadata.is_empty() {
        return Ok("{}".into());
    }
    crate::stored_json::check_object(metadata, "metadata value")?;
    Ok(metadata.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(op: Operator, score: i64, subscore: i64) -> RecordWrite {
        RecordWrite {
            leaderboard_id: "b".into(),
            owner_id: Uuid::nil(),
            username: None,
            score,
            subscore,
            metadata: None,
            operator: op,
            sort_order: SortOrder::Descending,
            expiry_time: 0,
            tournament: None,
        }
    }

    fn stored(score: i64, subscore: i64) -> Option<StoredScore> {
        Some(StoredScore {
            score,
            subscore,
            num_score: 1,
            max_num_score: DEFAULT_MAX_NUM_SCORE,
        })
    }

    #[test]
    fn operators_follow_nakamas_rules() {
        use WriteAction::*;
        assert_eq!(
            apply_write(stored(10, 0), &write(Operator::Best, 5, 0)),
            Ok(Unchanged)
        );
        assert_eq!(
            apply_write(stored(10, 0), &write(Operator::Best, 15, 0)),
            Ok(Update {
                score: 15,
                subscore: 0
            })
        );
        let mut asc = write(Operator::Best, 5, 0);
        asc.sort_order = SortOrder::Ascending;
        assert_eq!(
            apply_write(stored(10, 0), &asc),
            Ok(Update {
                score: 5,
                subscore: 0
            })
        );
        assert_eq!(
            apply_write(stored(10, 3), &write(Operator::Increment, 5, 1)),
            Ok(Update {
                score: 15,
                subscore: 4
            })
        );
        assert_eq!(
            apply_write(stored(10, 3), &write(Operator::Decrement, 50, 1)),
            Ok(Update {
                score: 0,
                subscore: 2
            })
        );
        assert_eq!(
            apply_write(stored(10, 3), &write(Operator::Set, 10, 3)),
            Ok(Unchanged)
        );
        assert_eq!(
            apply_write(None, &write(Operator::Decrement, 5, 5)),
            Ok(Insert {
                score: 0,
                subscore: 0,
                max_num_score: DEFAULT_MAX_NUM_SCORE
            })
        );
    }

    #[test]
    fn out_of_range_scores_are_refused() {
        assert_eq!(
            apply_write(None, &write(Operator::Set, -1, 0)),
            Err(WriteRejection::ScoreOutOfRange)
        );
        assert_eq!(
            apply_write(stored(i64::MAX, 0), &write(Operator::Increment, 1, 0)),
            Err(WriteRejection::ScoreOutOfRange)
        );
        assert_eq!(
            apply_write(stored(3, 0), &write(Operator::Increment, -4, 0)),
            Err(WriteRejection::ScoreOutOfRange)
        );
    }

    #[test]
    fn tournaments_count_attempts_and_require_joins() {
        let mut w = write(Operator::Best, 1, 0);
        w.tournament = Some(TournamentLimits {
            join_required: true,
            max_num_score: 2,
            max_size: 10,
        });
        assert_eq!(apply_write(None, &w), Err(WriteRejection::JoinRequired));
        let one = StoredScore {
            score: 5,
            subscore: 0,
            num_score: 1,
            max_num_score: 2,
        };
        let s = Some(one);
        // Not better, but an attempt all the same.
        assert_eq!(
            apply_write(s, &w),
            Ok(WriteAction::Update {
                score: 5,
                subscore: 0
            })
        );
        let full = Some(StoredScore {
            num_score: 2,
            ..one
        });
        assert_eq!(
            apply_write(full, &w),
            Err(WriteRejection::MaxNumScoreReached)
        );
    }
}
