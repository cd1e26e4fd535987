//! Cron schedules of leaderboard resets and tournaments, in UTC, as Nakama
//! reads them: five fields (`minute hour day-of-month month day-of-week`) or
//! a shortcut such as `@daily`; a day matches when either day field does.
//! Parsing and the search for occurrences are the `croner` crate's; this
//! module fixes its options and speaks UNIX seconds.

use chrono::{DateTime, Utc};
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

use crate::error::ApiError;

/// A parsed reset schedule.
#[derive(Debug, Clone)]
pub struct Schedule {
    cron: Cron,
    expr: String,
}

impl Schedule {
    /// Parses a five-field expression; the error names the expression.
    pub fn parse(expr: &str) -> Result<Schedule, ApiError> {
        let parser = CronParser::builder()
            .seconds(Seconds::Disallowed)
            .year(Year::Disallowed)
            .build();
        let cron = parser.parse(expr.trim()).map_err(|e| {
            ApiError::invalid(format!(
                "invalid cron expression {expr:?}: {e}; expected five fields (minute hour day month weekday)"
            ))
        })?;
        Ok(Schedule {
            cron,
            expr: expr.to_owned(),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.expr
    }

    /// The first occurrence strictly after `t` (UNIX seconds), if any.
    pub fn next_after(&self, t: i64) -> Option<i64> {
        let at = DateTime::<Utc>::from_timestamp(t, 0)?;
        self.cron
            .find_next_occurrence(&at, false)
            .ok()
            .map(|d| d.timestamp())
    }

    /// The last occurrence at or before `t`, if any.
    pub fn last_at_or_before(&self, t: i64) -> Option<i64> {
        let at = DateTime::<Utc>::from_timestamp(t, 0)?;
        self.cron
            .find_previous_occurrence(&at, true)
            .ok()
            .map(|d| d.timestamp())
    }
}

/// When a tournament's current period starts being active, stops being
/// active, and expires (its records leave the current window): Nakama's
/// `calculateTournamentDeadlines`, in UNIX seconds. An expiry of 0 means
/// the records never expire.
pub fn tournament_deadlines(
    start_time: i64,
    end_time: i64,
    duration: i64,
    schedule: Option<&Schedule>,
    now: i64,
) -> (i64, i64, i64) {
    let Some(schedule) = schedule else {
        let mut end_active = start_time + duration;
        if end_time > 0 && end_active > end_time {
            end_active = end_time;
        }
        return (start_time, end_active, end_time);
    };
    let next = |t: i64| schedule.next_after(t).unwrap_or(i64::MAX);
    let mut start_active = if now < start_time {
        next(start_time)
    } else {
        // A period that starts exactly now has started.
        schedule.last_at_or_before(now).unwrap_or(start_time)
    };
    let mut end_active = start_active.saturating_add(duration);
    let mut expiry = next(start_active);
    if end_active > expiry {
        end_active = expiry;
    }
    if start_time > end_active {
        // The tournament starts after this period's active part: its first
        // period is the next one from the start time.
        start_active = next(start_time);
        end_active = start_active.saturating_add(duration);
        expiry = next(start_active);
        if end_active > expiry {
            end_active = expiry;
        }
    } else if start_time > start_active {
        start_active = start_time;
    }
    if end_time > 0 && expiry > end_time {
        expiry = end_time;
        if end_active > expiry {
            end_active = expiry;
        }
    }
    (start_active, end_active, expiry)
}

#[cfg(test)]
mod tests {
    use super::*;

    // 2026-01-01T00:00:00Z, a Thursday.
    const JAN1: i64 = 1_767_225_600;

    #[test]
    fn five_fields_and_shortcuts_parse_others_do_not() {
        assert!(Schedule::parse("0 0 * * *").is_ok());
        assert!(Schedule::parse("@daily").is_ok());
        assert!(Schedule::parse("*/5 * * * 1-5").is_ok());
        for bad in ["", "* * * *", "0 0 0 * * *", "61 * * * *", "nonsense"] {
            assert!(Schedule::parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    /// The expressions `nk.cron_next` was tested with when it had a parser
    /// of its own: the same answers from croner.
    #[test]
    fn common_expressions() {
        let next = |expr: &str, t: i64| Schedule::parse(expr).unwrap().next_after(t).unwrap();
        // 2021-01-01T00:00:30Z, a Friday.
        let t = 1_609_459_230;
        assert_eq!(next("* * * * *", t), 1_609_459_260);
        assert_eq!(next("0 0 * * *", t), 1_609_545_600);
        assert_eq!(next("@hourly", t), 1_609_462_800);
        assert_eq!(next("*/15 * * * *", t), 1_609_460_100);
        assert_eq!(next("0 0 * * mon", t), 1_609_718_400);
        assert_eq!(next("0 0 29 2 *", t), 1_709_164_800);
        for bad in ["* * *", "61 * * * *", "5-1 * * * *", "*/0 * * * *"] {
            assert!(Schedule::parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn next_is_strictly_after_and_last_is_inclusive() {
        let daily = Schedule::parse("0 0 * * *").unwrap();
        assert_eq!(daily.next_after(JAN1), Some(JAN1 + 86_400));
        assert_eq!(daily.next_after(JAN1 - 1), Some(JAN1));
        assert_eq!(daily.last_at_or_before(JAN1), Some(JAN1));
        assert_eq!(daily.last_at_or_before(JAN1 + 5), Some(JAN1));
    }

    #[test]
    fn tournament_deadlines_follow_the_schedule_and_bounds() {
        let daily = Schedule::parse("0 0 * * *").unwrap();
        // Started long ago, one hour active per day.
        let (s, e, x) = tournament_deadlines(0, 0, 3600, Some(&daily), JAN1 + 100);
        assert_eq!((s, e, x), (JAN1, JAN1 + 3600, JAN1 + 86_400));
        // Not started yet: the first period is the first reset after start.
        let (s, e, x) = tournament_deadlines(JAN1 + 10, 0, 3600, Some(&daily), JAN1);
        assert_eq!(
            (s, e, x),
            (JAN1 + 86_400, JAN1 + 86_400 + 3600, JAN1 + 2 * 86_400)
        );
        // An end time caps the expiry.
        let (_, e, x) = tournament_deadlines(0, JAN1 + 1800, 3600, Some(&daily), JAN1 + 100);
        assert_eq!((e, x), (JAN1 + 1800, JAN1 + 1800));
        // No schedule: one period from the start time.
        assert_eq!(
            tournament_deadlines(JAN1, 0, 600, None, JAN1 + 1),
            (JAN1, JAN1 + 600, 0)
        );
    }
}
