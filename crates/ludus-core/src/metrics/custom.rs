//! Metrics that modules create by name (`nk.metrics_counter_add`,
//! `nk.metrics_gauge_set`, `nk.metrics_timer_record`), bounded in number:
//! past `metrics.custom_scope_limit` series a new name or tag set is
//! refused, counted and logged (at most once a minute), so a module cannot
//! exhaust memory by inventing names.
//!
//! Existing series are found under a read lock (uncontended: one atomic
//! operation); only a new series takes the write lock. The server's own
//! recording never comes here.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use super::exposition::{Exposition, Kind};
use super::histogram::{Counter, Gauge, Histogram};

/// One module-made series: a name, its tags and its value.
#[derive(Debug)]
enum Value {
    Counter(Counter),
    Gauge(Gauge),
    Timer(Histogram),
}

impl Value {
    fn kind(&self) -> Kind {
        match self {
            Value::Counter(_) => Kind::Counter,
            Value::Gauge(_) => Kind::Gauge,
            Value::Timer(_) => Kind::Summary,
        }
    }
}

type Key = (String, BTreeMap<String, String>);

/// Why a custom metric was not recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CustomRefused {
    /// `custom_scope_limit` series exist already.
    Limit,
    /// The name is a series of another kind (a counter and a gauge cannot
    /// share a name in one scrape).
    KindClash,
    /// A counter was given a negative delta.
    Negative,
}

/// The module-made series of one node.
#[derive(Debug)]
pub struct CustomMetrics {
    /// The most series; 0 means no limit (as Nakama's `custom_scope_limit`).
    limit: usize,
    series: RwLock<HashMap<Key, Arc<Value>>>,
    kinds: RwLock<HashMap<String, Kind>>,
    refused: [Counter; 3],
    /// When (seconds since start of the process clock) a refusal was last
    /// logged, so a looping module does not flood the log.
    last_log: AtomicU64,
}

impl CustomMetrics {
    pub fn new(limit: usize) -> CustomMetrics {
        CustomMetrics {
            limit,
            series: RwLock::default(),
            kinds: RwLock::default(),
            refused: Default::default(),
            last_log: AtomicU64::new(u64::MAX),
        }
    }

    pub fn counter_add(
        &self,
        name: &str,
        tags: BTreeMap<String, String>,
        delta: i64,
    ) -> Result<(), CustomRefused> {
        if delta < 0 {
            return Err(self.refuse(name, CustomRefused::Negative));
        }
        match &*self.get(name, tags, Kind::Counter)? {
            Value::Counter(c) => c.add(delta as u64),
            _ => unreachable!("series kinds are checked by get"),
        }
        Ok(())
    }

    pub fn gauge_set(
        &self,
        name: &str,
        tags: BTreeMap<String, String>,
        value: f64,
    ) -> Result<(), CustomRefused> {
        match &*self.get(name, tags, Kind::Gauge)? {
            Value::Gauge(g) => g.set(value),
            _ => unreachable!("series kinds are checked by get"),
        }
        Ok(())
    }

    pub fn timer_record(
        &self,
        name: &str,
        tags: BTreeMap<String, String>,
        elapsed: Duration,
    ) -> Result<(), CustomRefused> {
        match &*self.get(name, tags, Kind::Summary)? {
            Value::Timer(h) => h.record(elapsed),
            _ => unreachable!("series kinds are checked by get"),
        }
        Ok(())
    }

    /// How many calls were refused for `why`.
    pub fn refused(&self, why: CustomRefused) -> u64 {
        self.refused[why as usize].get()
    }

    /// How many series exist.
    pub fn len(&self) -> usize {
        self.series.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn get(
        &self,
        name: &str,
        tags: BTreeMap<String, String>,
        kind: Kind,
    ) -> Result<Arc<Value>, CustomRefused> {
        let key = (name.to_owned(), tags);
        if let Some(v) = self
            .series
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return if v.kind() == kind {
                Ok(v.clone())
            } else {
                Err(self.refuse(name, CustomRefused::KindClash))
            };
        }
        let mut series = self.series.write().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = series.get(&key) {
            return if v.kind() == kind {
                Ok(v.clone())
            } else {
                Err(self.refuse(name, CustomRefused::KindClash))
            };
        }
        if self.limit > 0 && series.len() >= self.limit {
            return Err(self.refuse(name, CustomRefused::Limit));
        }
        let mut kinds = self.kinds.write().unwrap_or_else(|e| e.into_inner());
        match kinds.get(name) {
            Some(k) if *k != kind => return Err(self.refuse(name, CustomRefused::KindClash)),
            Some(_) => {}
            None => {
                kinds.insert(name.to_owned(), kind);
            }
        }
        let value = Arc::new(match kind {
            Kind::Counter => Value::Counter(Counter::default()),
            Kind::Gauge => Value::Gauge(Gauge::default()),
            Kind::Summary => Value::Timer(Histogram::default()),
        });
        series.insert(key, value.clone());
        Ok(value)
    }

    fn refuse(&self, name: &str, why: CustomRefused) -> CustomRefused {
        self.refused[why as usize].inc();
        let now = crate::unix_now() as u64;
        let last = self.last_log.load(Ordering::Relaxed);
        if (last == u64::MAX || now >= last + 60)
            && self
                .last_log
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::warn!(
                metric = name,
                reason = ?why,
                limit = self.limit,
                "custom metric refused (logged at most once a minute)"
            );
        }
        why
    }

    /// Writes every series, grouped by name, in name order.
    pub fn write(&self, e: &mut Exposition<'_>) {
        let series = self.series.read().unwrap_or_else(|e| e.into_inner());
        let mut all: Vec<(&Key, &Arc<Value>)> = series.iter().collect();
        all.sort_by(|a, b| a.0.cmp(b.0));
        let mut open: Option<&str> = None;
        for ((name, tags), value) in all {
            if open != Some(name.as_str()) {
                e.family(name, value.kind());
                open = Some(name);
            }
            let labels: Vec<(&str, &str)> =
                tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            match &**value {
                Value::Counter(c) => e.sample(&labels, c.get() as f64),
                Value::Gauge(g) => e.sample(&labels, g.get()),
                Value::Timer(h) => e.summary(&labels, &h.snapshot()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn series_past_the_limit_are_refused_and_counted() {
        let m = CustomMetrics::new(2);
        m.counter_add("a", tags(&[]), 1).unwrap();
        m.counter_add("a", tags(&[("k", "1")]), 1).unwrap();
        assert_eq!(
            m.counter_add("a", tags(&[("k", "2")]), 1),
            Err(CustomRefused::Limit)
        );
        assert_eq!(m.gauge_set("b", tags(&[]), 1.0), Err(CustomRefused::Limit));
        // Existing series still record.
        m.counter_add("a", tags(&[]), 5).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m.refused(CustomRefused::Limit), 2);
        let mut out = String::new();
        m.write(&mut Exposition::new(&mut out, "nakama_custom", "n", ""));
        assert!(
            out.contains("nakama_custom_a{node_name=\"n\"} 6\n"),
            "{out}"
        );
        assert!(
            out.contains("nakama_custom_a{node_name=\"n\",k=\"1\"} 1\n"),
            "{out}"
        );
        assert_eq!(out.matches("# TYPE nakama_custom_a counter").count(), 1);
    }

    #[test]
    fn a_name_keeps_its_kind_and_counters_only_go_up() {
        let m = CustomMetrics::new(0);
        m.gauge_set("g", tags(&[]), 2.0).unwrap();
        assert_eq!(
            m.counter_add("g", tags(&[("x", "y")]), 1),
            Err(CustomRefused::KindClash)
        );
        assert_eq!(
            m.counter_add("c", tags(&[]), -1),
            Err(CustomRefused::Negative)
        );
        m.timer_record("t", tags(&[]), Duration::from_millis(3))
            .unwrap();
        let mut out = String::new();
        m.write(&mut Exposition::new(&mut out, "", "n", ""));
        assert!(
            out.contains("# TYPE g gauge\ng{node_name=\"n\"} 2\n"),
            "{out}"
        );
        assert!(out.contains("# TYPE t summary\n"), "{out}");
        assert!(out.contains("t_count{node_name=\"n\"} 1\n"), "{out}");
    }
}
