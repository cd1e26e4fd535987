//! Measurements: a compact latency histogram and a per-second timeline, and
//! the summary the published tables use (10-second windows, rates, means,
//! percentiles).
//!
//! Workers record into their own `Recorder` without locks; recorders are
//! merged once at the end.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Sub-buckets per power of two: values are kept within 1/64 (about 1.6 %).
const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;
/// Enough buckets for microsecond values below 2^41 µs (25 days); larger ones
/// land in the last bucket.
const BUCKETS: usize = ((41 - SUB_BITS as usize) + 1) * SUB as usize;

/// A log-linear histogram of microsecond latencies. Its buckets (18 KB) are
/// allocated at the sixteenth value: until then the values are kept as
/// they came, so the histograms of 250,000 idle virtual users cost little.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Histogram {
    #[serde(default)]
    counts: Vec<u64>,
    /// The values recorded while `counts` is not allocated.
    #[serde(default)]
    few: Vec<u64>,
    total: u64,
    max: u64,
    sum: u128,
}

/// Values a histogram keeps as they came before allocating its buckets.
const FEW: usize = 16;

fn bucket_of(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros(); // position of the top bit, >= SUB_BITS
    let shift = exp - SUB_BITS;
    let sub = (v >> shift) - SUB; // 0..SUB
    (((shift + 1) as u64) * SUB + sub).min(BUCKETS as u64 - 1) as usize
}

/// The largest value that lands in bucket `i`.
fn bucket_high(i: usize) -> u64 {
    let i = i as u64;
    if i < SUB {
        return i;
    }
    let shift = i / SUB - 1;
    let sub = i % SUB;
    ((SUB + sub + 1) << shift) - 1
}

impl Histogram {
    pub fn record(&mut self, micros: u64) {
        if self.counts.is_empty() && self.few.len() < FEW {
            self.few.push(micros);
        } else {
            self.bucket(micros);
        }
        self.total += 1;
        self.max = self.max.max(micros);
        self.sum += micros as u128;
    }

    /// Counts `micros` in its bucket.
    fn bucket(&mut self, micros: u64) {
        self.allocate();
        self.counts[bucket_of(micros)] += 1;
    }

    /// Allocates the buckets, moving the values kept so far into them.
    fn allocate(&mut self) {
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS];
            for v in std::mem::take(&mut self.few) {
                self.counts[bucket_of(v)] += 1;
            }
        }
    }

    pub fn merge(&mut self, other: &Histogram) {
        if !other.counts.is_empty() {
            self.allocate();
            for (a, b) in self.counts.iter_mut().zip(&other.counts) {
                *a += b;
            }
        }
        for &v in &other.few {
            if self.counts.is_empty() && self.few.len() < FEW {
                self.few.push(v);
            } else {
                self.bucket(v);
            }
        }
        self.total += other.total;
        self.max = self.max.max(other.max);
        self.sum += other.sum;
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    pub fn mean(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.sum as f64 / self.total as f64
        }
    }

    /// The value at quantile `q` (0..=1), as the upper edge of its bucket,
    /// never above the largest value seen.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut counts = std::borrow::Cow::Borrowed(&self.counts);
        if !self.few.is_empty() {
            let mut dense = vec![0; BUCKETS];
            for &v in &self.few {
                dense[bucket_of(v)] += 1;
            }
            counts = std::borrow::Cow::Owned(dense);
        }
        let mut seen = 0;
        for (i, c) in counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bucket_high(i).min(self.max);
            }
        }
        self.max
    }
}

/// One second of a run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Second {
    /// Successful operations that finished in this second.
    pub ok: u64,
    pub errors: u64,
    /// Sum of the successful operations' latencies, µs.
    pub latency_sum_us: u64,
    /// Connected users (sockets, or busy virtual users) at the end of the second.
    pub users: u64,
    pub messages_sent: u64,
    pub messages_received: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

/// What one worker measured; merged into the run's totals at the end (and,
/// with `--processes`, written by each process for the first to merge).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Recorder {
    pub latency: Histogram,
    /// Latency above the tick floor (`match`): what the server adds beyond
    /// waiting for its next tick.
    pub above_floor: Histogram,
    /// Latency of what was sent once every user had started (after
    /// `--ramp`; `match`): the players held, without the arrivals.
    pub held: Histogram,
    /// Delivery time of broadcasts (`ccu`): a push that carries
    /// `bench_epoch_us`, the sender's wall clock in µs, against this
    /// machine's wall clock when it arrives.
    #[serde(default)]
    pub broadcast: Histogram,
    /// One entry per second of the run; in a sparse record, one per second
    /// the user was busy, numbered by `numbers`.
    pub seconds: Vec<Second>,
    pub errors: BTreeMap<String, u64>,
    /// A sparse record's second numbers, ascending (`Recorder::sparse`).
    #[serde(skip)]
    numbers: Option<Vec<u32>>,
    /// A sparse record's connected spans (`connected`), counted at merge.
    #[serde(skip)]
    spans: Vec<(u32, u32)>,
}

impl Recorder {
    /// A record for one virtual user: it keeps only the seconds in which
    /// something happened, so a socket held idle through a long run costs
    /// a few entries, not one per second of the run.
    pub fn sparse() -> Recorder {
        Recorder {
            numbers: Some(Vec::new()),
            ..Recorder::default()
        }
    }

    pub fn second(&mut self, s: usize) -> &mut Second {
        let Some(numbers) = &mut self.numbers else {
            if self.seconds.len() <= s {
                self.seconds.resize(s + 1, Second::default());
            }
            return &mut self.seconds[s];
        };
        let n = s as u32;
        let at = match numbers.last() {
            Some(&last) if last == n => numbers.len() - 1,
            Some(&last) if last > n => match numbers.binary_search(&n) {
                Ok(at) => at,
                Err(at) => {
                    numbers.insert(at, n);
                    self.seconds.insert(at, Second::default());
                    at
                }
            },
            _ => {
                numbers.push(n);
                self.seconds.push(Second::default());
                numbers.len() - 1
            }
        };
        &mut self.seconds[at]
    }

    pub fn ok(&mut self, second: usize, micros: u64) {
        self.latency.record(micros);
        let s = self.second(second);
        s.ok += 1;
        s.latency_sum_us += micros;
    }

    pub fn error(&mut self, second: usize, kind: &str) {
        self.second(second).errors += 1;
        *self.errors.entry(kind.to_owned()).or_default() += 1;
    }

    /// Counts users connected throughout seconds `from..to`.
    pub fn connected(&mut self, from: usize, to: usize) {
        if self.numbers.is_some() {
            self.spans.push((from as u32, to as u32));
            return;
        }
        for s in from..to {
            self.second(s).users += 1;
        }
    }

    pub fn merge(&mut self, other: &Recorder) {
        self.latency.merge(&other.latency);
        self.above_floor.merge(&other.above_floor);
        self.held.merge(&other.held);
        self.broadcast.merge(&other.broadcast);
        match &other.numbers {
            Some(numbers) => {
                for (&n, b) in numbers.iter().zip(&other.seconds) {
                    add(self.second(n as usize), b);
                }
            }
            None => {
                if self.seconds.len() < other.seconds.len() {
                    self.seconds.resize(other.seconds.len(), Second::default());
                }
                for (a, b) in self.seconds.iter_mut().zip(&other.seconds) {
                    add(a, b);
                }
            }
        }
        for &(from, to) in &other.spans {
            self.connected(from as usize, to as usize);
        }
        for (k, v) in &other.errors {
            *self.errors.entry(k.clone()).or_default() += v;
        }
    }
}

fn add(a: &mut Second, b: &Second) {
    a.ok += b.ok;
    a.errors += b.errors;
    a.latency_sum_us += b.latency_sum_us;
    a.users += b.users;
    a.messages_sent += b.messages_sent;
    a.messages_received += b.messages_received;
    a.bytes_in += b.bytes_in;
    a.bytes_out += b.bytes_out;
}

/// The published table's columns, plus percentiles and totals.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    pub duration_secs: f64,
    pub total_ok: u64,
    pub total_errors: u64,
    /// Highest mean latency of any full 10-second window, ms.
    pub highest_10s_mean_ms: f64,
    /// Lowest mean latency of any full 10-second window, ms.
    pub lowest_10s_mean_ms: f64,
    /// Highest rate over any full 10-second window, operations/s.
    pub highest_rate: f64,
    /// Successful operations over the whole run, per second.
    pub mean_rate: f64,
    pub mean_latency_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub errors: BTreeMap<String, u64>,
    /// Socket figures: connected users at their peak and at the last second.
    pub peak_users: u64,
    pub final_users: u64,
    pub messages_sent: u64,
    pub messages_received: u64,
    /// Messages per second over the whole run, and the highest full 10-second window.
    pub mean_sent_rate: f64,
    pub mean_received_rate: f64,
    pub highest_received_rate: f64,
    /// Latency above the tick floor (match), when any was recorded.
    pub above_floor: Option<AboveFloor>,
    /// Latency once every user had started (match), when any was recorded.
    pub held: Option<Held>,
    /// Delivery time of broadcasts (ccu), when any arrived.
    pub broadcast: Option<Broadcast>,
}

/// The delivery time of broadcasts to held sockets.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Broadcast {
    /// Pushes received.
    pub count: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// The latency of what was sent once every user had started.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Held {
    /// Seconds into the run from which samples count (the ramp).
    pub after_s: f64,
    pub count: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// Latency minus the tick floor, floored at zero.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AboveFloor {
    pub floor_ms: f64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

const WINDOW: usize = 10;

impl Summary {
    /// Summarises a merged recorder of a run that lasted `duration_secs`.
    pub fn of(rec: &Recorder, duration_secs: f64) -> Summary {
        let ms = |us: f64| us / 1000.0;
        let mut highest_mean = 0.0f64;
        let mut lowest_mean = f64::INFINITY;
        let mut highest_rate = 0.0f64;
        let mut highest_received = 0.0f64;
        // Non-overlapping windows, as Tsung's 10-second samples; a trailing
        // partial window is left out so it cannot skew the extremes.
        for w in rec.seconds.chunks(WINDOW).filter(|w| w.len() == WINDOW) {
            let ok: u64 = w.iter().map(|s| s.ok).sum();
            let sum: u64 = w.iter().map(|s| s.latency_sum_us).sum();
            highest_rate = highest_rate.max(ok as f64 / WINDOW as f64);
            let received: u64 = w.iter().map(|s| s.messages_received).sum();
            highest_received = highest_received.max(received as f64 / WINDOW as f64);
            if ok > 0 {
                let mean = sum as f64 / ok as f64;
                highest_mean = highest_mean.max(mean);
                lowest_mean = lowest_mean.min(mean);
            }
        }
        let total_ok = rec.latency.count();
        // Runs shorter than one window still report their whole-run figures.
        if !lowest_mean.is_finite() {
            lowest_mean = rec.latency.mean();
            highest_mean = highest_mean.max(rec.latency.mean());
        }
        let per_s = |n: u64| {
            if duration_secs > 0.0 {
                n as f64 / duration_secs
            } else {
                0.0
            }
        };
        if highest_rate == 0.0 {
            highest_rate = per_s(total_ok);
        }
        let messages_sent: u64 = rec.seconds.iter().map(|s| s.messages_sent).sum();
        let messages_received: u64 = rec.seconds.iter().map(|s| s.messages_received).sum();
        if highest_received == 0.0 {
            highest_received = per_s(messages_received);
        }
        Summary {
            duration_secs,
            total_ok,
            total_errors: rec.errors.values().sum(),
            highest_10s_mean_ms: ms(highest_mean),
            lowest_10s_mean_ms: ms(lowest_mean),
            highest_rate,
            mean_rate: if duration_secs > 0.0 {
                total_ok as f64 / duration_secs
            } else {
                0.0
            },
            mean_latency_ms: ms(rec.latency.mean()),
            p50_ms: ms(rec.latency.quantile(0.50) as f64),
            p99_ms: ms(rec.latency.quantile(0.99) as f64),
            max_ms: ms(rec.latency.max() as f64),
            errors: rec.errors.clone(),
            peak_users: rec.seconds.iter().map(|s| s.users).max().unwrap_or(0),
            final_users: rec.seconds.last().map(|s| s.users).unwrap_or(0),
            messages_sent,
            messages_received,
            mean_sent_rate: per_s(messages_sent),
            mean_received_rate: per_s(messages_received),
            highest_received_rate: highest_received,
            above_floor: None,
            held: None,
            broadcast: None,
        }
    }

    /// Adds the delivery time of the broadcasts `rec` received.
    pub fn with_broadcast(mut self, rec: &Recorder) -> Summary {
        let h = &rec.broadcast;
        if h.count() > 0 {
            let ms = |us: u64| us as f64 / 1000.0;
            self.broadcast = Some(Broadcast {
                count: h.count(),
                p50_ms: ms(h.quantile(0.5)),
                p99_ms: ms(h.quantile(0.99)),
                max_ms: ms(h.max()),
            });
        }
        self
    }

    /// Adds the figures of `rec`'s samples sent after `after_s` seconds.
    pub fn with_held(mut self, rec: &Recorder, after_s: f64) -> Summary {
        let h = &rec.held;
        if h.count() > 0 {
            let ms = |us: u64| us as f64 / 1000.0;
            self.held = Some(Held {
                after_s,
                count: h.count(),
                p50_ms: ms(h.quantile(0.5)),
                p99_ms: ms(h.quantile(0.99)),
                max_ms: ms(h.max()),
            });
        }
        self
    }

    /// Adds the above-floor figures of `rec` measured against `floor_us`.
    pub fn with_floor(mut self, rec: &Recorder, floor_us: u64) -> Summary {
        let h = &rec.above_floor;
        if h.count() > 0 {
            let ms = |us: u64| us as f64 / 1000.0;
            self.above_floor = Some(AboveFloor {
                floor_ms: ms(floor_us),
                mean_ms: h.mean() / 1000.0,
                p50_ms: ms(h.quantile(0.5)),
                p99_ms: ms(h.quantile(0.99)),
                max_ms: ms(h.max()),
            });
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_keeps_its_first_values_and_then_counts_them_in_buckets() {
        let values: Vec<u64> = (1..=40).map(|v| v * 997).collect();
        let mut dense = Histogram::default();
        dense.allocate();
        let mut lazy = Histogram::default();
        for (k, &v) in values.iter().enumerate() {
            dense.record(v);
            lazy.record(v);
            assert_eq!(lazy.counts.is_empty(), k < FEW, "after {} values", k + 1);
            for q in [0.0, 0.5, 0.99, 1.0] {
                assert_eq!(
                    lazy.quantile(q),
                    dense.quantile(q),
                    "q {q} after {} values",
                    k + 1
                );
            }
        }
        // Merging: few into dense, dense into few, few into few.
        let mut a = Histogram::default();
        a.record(5);
        a.merge(&dense);
        let mut b = dense.clone();
        let mut c = Histogram::default();
        c.record(5);
        b.merge(&c);
        assert_eq!(
            (a.count(), a.quantile(0.5), a.max()),
            (b.count(), b.quantile(0.5), b.max())
        );
        let mut d = Histogram::default();
        d.record(5);
        d.merge(&c);
        assert_eq!((d.count(), d.quantile(1.0)), (2, 5));
        assert!(d.counts.is_empty());
    }

    #[test]
    fn a_sparse_record_merges_as_the_dense_one() {
        let mut sparse = Recorder::sparse();
        let mut dense = Recorder::default();
        for r in [&mut sparse, &mut dense] {
            r.ok(7, 100);
            r.second(300).messages_received += 2;
            r.ok(2, 50);
            r.error(7, "timeout");
            r.connected(3, 9);
            r.second(7).bytes_in += 10;
        }
        assert_eq!(sparse.seconds.len(), 3, "only the busy seconds");
        let (mut from_sparse, mut from_dense) = (Recorder::default(), Recorder::default());
        from_sparse.merge(&sparse);
        from_dense.merge(&dense);
        assert_eq!(from_sparse.seconds, from_dense.seconds);
        assert_eq!(from_sparse.seconds[5].users, 1);
        assert_eq!(from_sparse.seconds[7].ok, 1);
        assert_eq!(from_sparse.seconds[300].messages_received, 2);
        assert_eq!(from_sparse.errors, from_dense.errors);
        assert_eq!(from_sparse.latency.count(), 2);
    }

    #[test]
    fn buckets_are_monotonic_and_tight() {
        let mut last = 0;
        for v in [
            0u64,
            1,
            63,
            64,
            65,
            127,
            128,
            1000,
            4095,
            4096,
            1_000_000,
            1 << 39,
        ] {
            let b = bucket_of(v);
            assert!(b >= last, "bucket order at {v}");
            last = b;
            let high = bucket_high(b);
            assert!(high >= v, "{v} above its bucket's edge {high}");
            assert!(
                (high - v) as f64 <= v as f64 / 64.0 + 1.0,
                "{v} -> {high} too coarse"
            );
        }
    }

    #[test]
    fn quantiles_of_one_to_a_hundred() {
        let mut h = Histogram::default();
        for v in 1..=100 {
            h.record(v);
        }
        // Below 64 the buckets are exact; above, within 1/64.
        assert_eq!(h.quantile(0.5), 50);
        let p99 = h.quantile(0.99);
        assert!((99..=100).contains(&p99), "{p99}");
        assert_eq!(h.quantile(1.0), 100);
        assert_eq!(h.max(), 100);
        assert!((h.mean() - 50.5).abs() < 1e-9);
    }

    #[test]
    fn windows_rates_and_means_by_hand() {
        let mut r = Recorder::default();
        // Seconds 0-9: 10 ops/s at 1 ms. Seconds 10-19: 20 ops/s at 3 ms.
        // Seconds 20-24: a partial window that must not count.
        for s in 0..10 {
            for _ in 0..10 {
                r.ok(s, 1_000);
            }
        }
        for s in 10..20 {
            for _ in 0..20 {
                r.ok(s, 3_000);
            }
        }
        for s in 20..25 {
            for _ in 0..100 {
                r.ok(s, 9_000);
            }
        }
        r.error(3, "status 500");
        r.error(4, "status 500");
        r.error(5, "timeout");
        let sum = Summary::of(&r, 25.0);
        assert_eq!(sum.total_ok, 100 + 200 + 500);
        assert_eq!(sum.lowest_10s_mean_ms, 1.0);
        assert_eq!(sum.highest_10s_mean_ms, 3.0);
        assert_eq!(sum.highest_rate, 20.0);
        assert_eq!(sum.mean_rate, 800.0 / 25.0);
        let mean = (100.0 * 1.0 + 200.0 * 3.0 + 500.0 * 9.0) / 800.0;
        assert!((sum.mean_latency_ms - mean).abs() < 1e-9);
        assert_eq!(sum.total_errors, 3);
        assert_eq!(sum.errors["status 500"], 2);
        assert_eq!(sum.max_ms, 9.0);
        let p50 = sum.p50_ms;
        assert!((8.8..=9.2).contains(&p50), "{p50}");
    }

    #[test]
    fn socket_figures_by_hand() {
        let mut r = Recorder::default();
        // Two users: one connected for seconds 0-19, one for 5-9 only.
        r.connected(0, 20);
        r.connected(5, 10);
        // Seconds 0-9 receive 30 messages each, 10-19 receive 50; 7 sent per second.
        for s in 0..20 {
            let sec = r.second(s);
            sec.messages_received = if s < 10 { 30 } else { 50 };
            sec.messages_sent = 7;
        }
        // Above a 100 ms floor: 105 ms and 130 ms echoes are 5 and 30 ms above.
        for lat in [105_000u64, 130_000] {
            r.ok(3, lat);
            r.above_floor.record(lat.saturating_sub(100_000));
        }
        let sum = Summary::of(&r, 20.0).with_floor(&r, 100_000);
        assert_eq!(sum.peak_users, 2);
        assert_eq!(sum.final_users, 1);
        assert_eq!(sum.messages_received, 800);
        assert_eq!(sum.messages_sent, 140);
        assert_eq!(sum.mean_received_rate, 40.0);
        assert_eq!(sum.mean_sent_rate, 7.0);
        assert_eq!(sum.highest_received_rate, 50.0);
        let f = sum.above_floor.unwrap();
        assert_eq!(f.floor_ms, 100.0);
        assert_eq!(f.mean_ms, 17.5);
        assert!((5.0..=5.1).contains(&f.p50_ms), "{}", f.p50_ms);
        assert_eq!(f.max_ms, 30.0);
        // Without above-floor samples there is no section.
        let sum = Summary::of(&Recorder::default(), 1.0).with_floor(&Recorder::default(), 1);
        assert!(sum.above_floor.is_none());
        // The held figures count only their own samples: 99 at 90 ms and
        // one at 300 ms after the ramp, while the whole run also had a
        // second at 250 ms during it.
        let mut r = Recorder::default();
        for _ in 0..99 {
            r.ok(12, 90_000);
            r.held.record(90_000);
        }
        r.ok(3, 250_000);
        r.ok(12, 300_000);
        r.held.record(300_000);
        let sum = Summary::of(&r, 20.0).with_held(&r, 10.0);
        let h = sum.held.unwrap();
        assert_eq!((h.after_s, h.count), (10.0, 100));
        assert!((89.0..=91.0).contains(&h.p99_ms), "{}", h.p99_ms);
        assert_eq!(h.max_ms, 300.0);
        assert_eq!(sum.total_ok, 101);
        assert!(
            Summary::of(&Recorder::default(), 1.0)
                .with_held(&Recorder::default(), 1.0)
                .held
                .is_none()
        );
    }

    #[test]
    fn merging_adds_everything() {
        let mut a = Recorder::default();
        let mut b = Recorder::default();
        a.ok(0, 10);
        b.ok(2, 30);
        b.error(2, "io");
        b.second(2).users = 5;
        a.merge(&b);
        assert_eq!(a.seconds.len(), 3);
        assert_eq!(a.latency.count(), 2);
        assert_eq!(a.seconds[2].users, 5);
        assert_eq!(a.errors["io"], 1);
    }
}
