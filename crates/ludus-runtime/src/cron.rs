//! Standard five-field cron expressions (`minute hour day-of-month month
//! day-of-week`, plus `@hourly`-style shortcuts) for `nk.cron_next`, in UTC.

use chrono::{DateTime, Datelike, Duration, TimeZone, Timelike, Utc};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid cron expression: {0}")]
pub(crate) struct CronError(String);

/// A parsed expression: one bit per allowed value of each field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cron {
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    /// Both day fields restricted: a day matches when either does (cron's rule).
    day_or: bool,
}

impl Cron {
    pub(crate) fn parse(expr: &str) -> Result<Cron, CronError> {
        let expr = match expr.trim() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other => other,
        };
        let fields: Vec<&str> = expr.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(CronError(format!(
                "expected 5 fields (minute hour day month weekday), got {}",
                fields.len()
            )));
        }
        let months = [
            "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
        ];
        let days = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
        let mut weekdays = field(fields[4], 0, 7, &days, 0)?;
        // 7 is Sunday too.
        if weekdays & (1 << 7) != 0 {
            weekdays |= 1;
        }
        Ok(Cron {
            minutes: field(fields[0], 0, 59, &[], 0)?,
            hours: field(fields[1], 0, 23, &[], 0)?,
            days: field(fields[2], 1, 31, &[], 0)?,
            months: field(fields[3], 1, 12, &months, 1)?,
            weekdays,
            day_or: !fields[2].starts_with('*') && !fields[4].starts_with('*'),
        })
    }

    /// The first matching minute strictly after `after`.
    pub(crate) fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let start = after.with_second(0)?.with_nanosecond(0)? + Duration::minutes(1);
        let mut t = start;
        // Five years of days covers every satisfiable expression (Feb 29 included).
        let limit = start + Duration::days(366 * 5);
        while t < limit {
            if !bit(self.months, t.month()) || !self.day_matches(&t) {
                let next_day = Utc
                    .with_ymd_and_hms(t.year(), t.month(), t.day(), 0, 0, 0)
                    .single()?
                    + Duration::days(1);
                t = next_day;
                continue;
            }
            if !bit(self.hours, t.hour()) {
                t = t.with_minute(0)? + Duration::hours(1);
                continue;
            }
            if !bit(self.minutes, t.minute()) {
                t += Duration::minutes(1);
                continue;
            }
            return Some(t);
        }
        None
    }

    fn day_matches(&self, t: &DateTime<Utc>) -> bool {
        let dom = bit(self.days, t.day());
        let dow = bit(self.weekdays, t.weekday().num_days_from_sunday());
        if self.day_or { dom || dow } else { dom && dow }
    }
}

fn bit(set: u64, n: u32) -> bool {
    set & (1u64 << n) != 0
}

/// One field: `*`, `a`, `a-b`, with an optional `/step`, comma-separated.
fn field(text: &str, min: u32, max: u32, names: &[&str], name_base: u32) -> Result<u64, CronError> {
    let value = |s: &str| -> Result<u32, CronError> {
        if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(s)) {
            return Ok(i as u32 + name_base);
        }
        let v: u32 = s
            .parse()
            .map_err(|_| CronError(format!("`{s}` is not a number or a name")))?;
        if v < min || v > max {
            return Err(CronError(format!("{v} is outside {min}-{max}")));
        }
        Ok(v)
    };
    let mut set = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (
                r,
                s.parse::<u32>()
                    .ok()
                    .filter(|s| *s > 0)
                    .ok_or_else(|| CronError(format!("bad step in `{part}`")))?,
            ),
            None => (part, 1),
        };
        let (lo, hi) = if range == "*" {
            (min, max)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a)?, value(b)?)
        } else {
            let v = value(range)?;
            (v, if step > 1 { max } else { v })
        };
        if lo > hi {
            return Err(CronError(format!("range `{range}` runs backwards")));
        }
        let mut v = lo;
        while v <= hi {
            set |= 1 << v;
            v += step;
        }
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn next(expr: &str, ts: i64) -> i64 {
        let t = Utc.timestamp_opt(ts, 0).unwrap();
        Cron::parse(expr)
            .unwrap()
            .next_after(t)
            .unwrap()
            .timestamp()
    }

    #[test]
    fn common_expressions() {
        // 2021-01-01 00:00:30 UTC, a Friday.
        let t = 1_609_459_230;
        assert_eq!(next("* * * * *", t), 1_609_459_260);
        assert_eq!(next("0 0 * * *", t), 1_609_545_600);
        assert_eq!(next("@hourly", t), 1_609_462_800);
        assert_eq!(next("*/15 * * * *", t), 1_609_460_100);
        // Next Monday midnight: 2021-01-04.
        assert_eq!(next("0 0 * * mon", t), 1_609_718_400);
        // Feb 29 of the next leap year.
        assert_eq!(next("0 0 29 2 *", t), 1_709_164_800);
    }

    #[test]
    fn bad_expressions() {
        assert!(Cron::parse("* * *").is_err());
        assert!(Cron::parse("61 * * * *").is_err());
        assert!(Cron::parse("5-1 * * * *").is_err());
        assert!(Cron::parse("*/0 * * * *").is_err());
    }
}
