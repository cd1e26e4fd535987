//! Requests split by the gRPC code they were answered with: Nakama's
//! labelled families (`count`, `recv_bytes`, `sent_bytes` and the timer
//! `latency`, each with `transport`, `rpc_id` and `rpc_code`).
//!
//! Recording costs what one set of stats costs, whatever the code: an `OK`
//! answer records into stats that are always there, a failed one into the
//! stats of its code, made when that code first fails (so a kind of request
//! that never fails holds one set). The families named after the request
//! (`{Api}_count`, `Rpc_count`, ...) are not recorded apart: a scrape sums
//! the codes' counters and merges their histograms into [`Totals`].

use std::sync::OnceLock;
use std::time::Duration;

use super::exposition::{Exposition, Kind};
use super::histogram::{Counter, Histogram, HistogramSnapshot};
use crate::error::Code;

/// Count, bytes and latency of the requests answered with one code.
#[derive(Debug, Default)]
pub struct CallStats {
    pub count: Counter,
    pub recv_bytes: Counter,
    pub sent_bytes: Counter,
    pub latency: Histogram,
}

impl CallStats {
    fn record(&self, elapsed: Duration, recv: u64, sent: u64) {
        self.count.inc();
        self.recv_bytes.add(recv);
        self.sent_bytes.add(sent);
        self.latency.record(elapsed);
    }
}

/// The codes but `OK` (1 to 16), each a slot of [`StatsByCode::failed`].
const FAILED_CODES: usize = 16;

/// One kind of request on one transport (an API, or an RPC id over HTTP or
/// the socket), split by the code of its answers.
#[derive(Debug, Default)]
pub struct StatsByCode {
    ok: CallStats,
    /// Slot `code - 1`, made on the code's first failure.
    failed: [OnceLock<Box<CallStats>>; FAILED_CODES],
}

impl StatsByCode {
    /// One request answered with `code`.
    pub fn record(&self, code: Code, elapsed: Duration, recv: u64, sent: u64) {
        let stats = match code {
            Code::Ok => &self.ok,
            failed => self.failed[failed as usize - 1].get_or_init(Box::default),
        };
        stats.record(elapsed, recv, sent);
    }

    /// Every code answered at least once, `OK` first, with its stats.
    pub fn codes(&self) -> impl Iterator<Item = (Code, &CallStats)> {
        let failed = self.failed.iter().enumerate().filter_map(|(i, stats)| {
            let stats: &CallStats = stats.get()?;
            Some((Code::from_i32(i as i32 + 1), stats))
        });
        std::iter::once((Code::Ok, &self.ok))
            .chain(failed)
            .filter(|(_, stats)| stats.count.get() > 0)
    }

    /// Adds every code's counts to `totals`.
    pub fn add_to(&self, totals: &mut Totals) {
        for (code, stats) in self.codes() {
            let count = stats.count.get();
            totals.count += count;
            if code != Code::Ok {
                totals.errors += count;
            }
            totals.recv_bytes += stats.recv_bytes.get();
            totals.sent_bytes += stats.sent_bytes.get();
            totals.latency.merge(&stats.latency.snapshot());
        }
    }

    /// The counts over every code.
    pub fn totals(&self) -> Totals {
        let mut totals = Totals::default();
        self.add_to(&mut totals);
        totals
    }
}

/// Counts of one kind of request over every code (and transport), read at
/// scrape time.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Totals {
    pub count: u64,
    pub recv_bytes: u64,
    pub sent_bytes: u64,
    /// Answers with a code other than `OK`.
    pub errors: u64,
    pub latency: HistogramSnapshot,
}

impl Totals {
    /// Writes `{name}_count`, `_recv_bytes`, `_sent_bytes`, `_errors` and
    /// `_latency_ms` (a summary in seconds, as Nakama's timer).
    pub fn write(&self, e: &mut Exposition<'_>, name: &str, labels: &[(&str, &str)]) {
        let mut full = String::with_capacity(name.len() + 16);
        let values = [
            ("_count", self.count),
            ("_recv_bytes", self.recv_bytes),
            ("_sent_bytes", self.sent_bytes),
            ("_errors", self.errors),
        ];
        for (suffix, value) in values {
            full.clear();
            full.push_str(name);
            full.push_str(suffix);
            e.family(&full, Kind::Counter);
            e.sample(labels, value as f64);
        }
        full.clear();
        full.push_str(name);
        full.push_str("_latency_ms");
        e.family(&full, Kind::Summary);
        e.summary(labels, &self.latency);
    }
}

/// One kind of request of the labelled families: its `transport` (`api`,
/// `api_rpc` or `ws_rpc`), its `rpc_id` (the API's name or the RPC's id)
/// and its stats.
#[derive(Debug, Clone, Copy)]
pub struct Labelled<'a> {
    pub transport: &'a str,
    pub id: &'a str,
    pub stats: &'a StatsByCode,
}

/// Writes Nakama's labelled families, `count`, `recv_bytes`, `sent_bytes`
/// (counters) and `latency` (a summary in seconds), with one sample per
/// row and code answered; nothing when no row has a sample.
pub fn write_labelled(e: &mut Exposition<'_>, rows: &[Labelled<'_>]) {
    let samples: Vec<(&Labelled<'_>, Code, &CallStats)> = rows
        .iter()
        .flat_map(|row| {
            row.stats
                .codes()
                .map(move |(code, stats)| (row, code, stats))
        })
        .collect();
    if samples.is_empty() {
        return;
    }
    type Read = fn(&CallStats) -> u64;
    let counters: [(&str, Read); 3] = [
        ("count", |s| s.count.get()),
        ("recv_bytes", |s| s.recv_bytes.get()),
        ("sent_bytes", |s| s.sent_bytes.get()),
    ];
    for (name, read) in counters {
        e.family(name, Kind::Counter);
        for &(row, code, stats) in &samples {
            e.sample(&labels(row, code), read(stats) as f64);
        }
    }
    e.family("latency", Kind::Summary);
    for &(row, code, stats) in &samples {
        e.summary(&labels(row, code), &stats.latency.snapshot());
    }
}

/// A sample's labels, in the order of Nakama's map literal.
fn labels<'a>(row: &Labelled<'a>, code: Code) -> [(&'static str, &'a str); 3] {
    [
        ("transport", row.transport),
        ("rpc_id", row.id),
        ("rpc_code", code.go_name()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_split_by_code_and_sum_into_totals() {
        let s = StatsByCode::default();
        s.record(Code::Ok, Duration::from_millis(1), 10, 100);
        s.record(Code::Ok, Duration::from_millis(3), 10, 100);
        s.record(Code::NotFound, Duration::from_millis(2), 5, 50);
        s.record(Code::Unauthenticated, Duration::from_millis(8), 1, 1);
        let codes: Vec<(Code, u64)> = s.codes().map(|(c, st)| (c, st.count.get())).collect();
        assert_eq!(
            codes,
            [
                (Code::Ok, 2),
                (Code::NotFound, 1),
                (Code::Unauthenticated, 1)
            ]
        );
        let t = s.totals();
        assert_eq!((t.count, t.errors), (4, 2));
        assert_eq!((t.recv_bytes, t.sent_bytes), (26, 251));
        assert_eq!(t.latency.count, 4);
        assert_eq!(t.latency.sum_ns, 14_000_000);
    }

    #[test]
    fn a_kind_that_only_failed_has_no_ok_sample() {
        let s = StatsByCode::default();
        s.record(Code::Unknown, Duration::ZERO, 0, 0);
        let codes: Vec<Code> = s.codes().map(|(c, _)| c).collect();
        assert_eq!(codes, [Code::Unknown]);
        assert_eq!(StatsByCode::default().codes().count(), 0);
    }

    #[test]
    fn nothing_recorded_writes_no_family() {
        let mut out = String::new();
        let mut e = Exposition::new(&mut out, "nakama", "n", "");
        let idle = StatsByCode::default();
        write_labelled(
            &mut e,
            &[Labelled {
                transport: "api",
                id: "GetAccount",
                stats: &idle,
            }],
        );
        assert_eq!(out, "");
    }
}
