//! Lock-free recording primitives: a counter, a gauge and a latency
//! histogram with fixed power-of-two buckets. Recording is a few relaxed
//! atomic additions, never a lock and never an allocation, so every hot
//! path can afford it; reading them (a scrape) is rare and may be slower.

use std::sync::atomic::{AtomicU64, Ordering};

/// A monotonic count.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    pub fn inc(&self) {
        self.add(1);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Raises the count to `total` when it is lower: for a count kept
    /// elsewhere and copied in at scrape time, safe when scrapes overlap.
    pub fn raise_to(&self, total: u64) {
        self.0.fetch_max(total, Ordering::Relaxed);
    }
}

/// A value set from time to time (stored as the bits of an `f64`).
#[derive(Debug, Default)]
pub struct Gauge(AtomicU64);

impl Gauge {
    pub fn set(&self, value: f64) {
        self.0.store(value.to_bits(), Ordering::Relaxed);
    }

    pub fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}

/// Bucket `i` holds durations below `2^(i + FIRST_SHIFT)` nanoseconds
/// (the first below about 1 µs, the last, an overflow, everything from
/// about 68 s on).
const FIRST_SHIFT: u32 = 10;
pub(crate) const BUCKETS: usize = 28;

/// Durations in nanoseconds, counted into fixed power-of-two buckets.
#[derive(Debug)]
pub struct Histogram {
    buckets: [AtomicU64; BUCKETS],
    count: AtomicU64,
    sum_ns: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            count: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
        }
    }
}

/// What a scrape reads of a [`Histogram`].
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    pub buckets: [u64; BUCKETS],
    pub count: u64,
    pub sum_ns: u64,
}

impl Histogram {
    pub fn record_ns(&self, ns: u64) {
        let bits = 64 - ns.leading_zeros();
        let index = (bits.saturating_sub(FIRST_SHIFT) as usize).min(BUCKETS - 1);
        self.buckets[index].fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    pub fn record(&self, elapsed: std::time::Duration) {
        self.record_ns(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX));
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        HistogramSnapshot {
            buckets: std::array::from_fn(|i| self.buckets[i].load(Ordering::Relaxed)),
            count: self.count.load(Ordering::Relaxed),
            sum_ns: self.sum_ns.load(Ordering::Relaxed),
        }
    }
}

impl Default for HistogramSnapshot {
    fn default() -> Self {
        HistogramSnapshot {
            buckets: [0; BUCKETS],
            count: 0,
            sum_ns: 0,
        }
    }
}

impl HistogramSnapshot {
    /// Adds `other`'s durations to these: the snapshot of one histogram
    /// that recorded what both did.
    pub fn merge(&mut self, other: &HistogramSnapshot) {
        for (mine, theirs) in self.buckets.iter_mut().zip(other.buckets) {
            *mine += theirs;
        }
        self.count += other.count;
        self.sum_ns = self.sum_ns.wrapping_add(other.sum_ns);
    }

    /// The upper bound, in nanoseconds, of bucket `i`.
    pub fn upper_bound_ns(i: usize) -> u64 {
        1u64 << (i as u32 + FIRST_SHIFT)
    }

    /// An estimate of quantile `q` (0 to 1) in nanoseconds: the value
    /// interpolated linearly inside the bucket the quantile falls into,
    /// so it is within a factor of two of the true value.
    pub fn quantile_ns(&self, q: f64) -> f64 {
        let total: u64 = self.buckets.iter().sum();
        if total == 0 {
            return 0.0;
        }
        let rank = q.clamp(0.0, 1.0) * total as f64;
        let mut seen = 0u64;
        for (i, &n) in self.buckets.iter().enumerate() {
            if n == 0 {
                continue;
            }
            if (seen + n) as f64 >= rank {
                let low = if i == 0 {
                    0.0
                } else {
                    Self::upper_bound_ns(i - 1) as f64
                };
                let high = Self::upper_bound_ns(i) as f64;
                let within = ((rank - seen as f64) / n as f64).clamp(0.0, 1.0);
                return low + (high - low) * within;
            }
            seen += n;
        }
        Self::upper_bound_ns(BUCKETS - 1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_land_in_their_power_of_two_bucket() {
        let h = Histogram::default();
        h.record_ns(0);
        h.record_ns(1023);
        h.record_ns(1024);
        h.record_ns(u64::MAX);
        let s = h.snapshot();
        assert_eq!(s.buckets[0], 2);
        assert_eq!(s.buckets[1], 1);
        assert_eq!(s.buckets[BUCKETS - 1], 1);
        assert_eq!(s.count, 4);
    }

    #[test]
    fn quantiles_are_within_a_factor_of_two() {
        let h = Histogram::default();
        for ms in 1..=100u64 {
            h.record_ns(ms * 1_000_000);
        }
        let s = h.snapshot();
        let p50 = s.quantile_ns(0.5);
        assert!((25e6..=100e6).contains(&p50), "p50 {p50}");
        let p99 = s.quantile_ns(0.99);
        assert!((49.5e6..=198e6).contains(&p99), "p99 {p99}");
        assert!(p99 >= p50);
        assert_eq!(Histogram::default().snapshot().quantile_ns(0.5), 0.0);
    }

    #[test]
    fn merged_snapshots_are_one_histogram_of_both() {
        let (a, b, both) = (
            Histogram::default(),
            Histogram::default(),
            Histogram::default(),
        );
        for (h, ns) in [(&a, 500), (&a, 70_000), (&b, 3_000_000)] {
            h.record_ns(ns);
            both.record_ns(ns);
        }
        let mut merged = HistogramSnapshot::default();
        merged.merge(&a.snapshot());
        merged.merge(&b.snapshot());
        assert_eq!(merged, both.snapshot());
    }

    #[test]
    fn counters_and_gauges_hold_what_was_recorded() {
        let c = Counter::default();
        c.inc();
        c.add(41);
        assert_eq!(c.get(), 42);
        let g = Gauge::default();
        g.set(-2.5);
        assert_eq!(g.get(), -2.5);
    }
}
