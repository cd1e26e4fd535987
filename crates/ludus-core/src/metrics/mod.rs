//! Server metrics: one cheap handle ([`Metrics`]) that the places doing the
//! work record into (atomic counters and fixed-bucket histograms: no lock
//! and no allocation per request), and its rendering in the Prometheus text
//! format with Nakama's metric names, so a Nakama dashboard reads Ludus.
//!
//! The handle knows nothing of transports: the server gives it the list of
//! API names at construction ([`ApiId`] indexes it) and serves the text.
//! Each API's requests are split by the gRPC code of their answer
//! ([`StatsByCode`]), for Nakama's labelled families.

pub mod by_code;
mod custom;
pub mod exposition;
pub mod histogram;

use std::time::Duration;

use crate::error::Code;
pub use by_code::{CallStats, Labelled, StatsByCode, Totals, write_labelled};
pub use custom::{CustomMetrics, CustomRefused};
pub use exposition::{Exposition, Kind};
pub use histogram::{Counter, Gauge, Histogram, HistogramSnapshot};

/// How the exported names and labels are made (Nakama's `metrics.*` keys
/// and the node's name).
#[derive(Debug, Clone)]
pub struct Naming {
    /// `metrics.prefix` (Nakama: `nakama`; empty for none).
    pub prefix: String,
    /// `metrics.custom_prefix`, below `prefix`, for modules' metrics.
    pub custom_prefix: String,
    /// `metrics.namespace`: a `namespace` label on every sample when set.
    pub namespace: String,
    /// The node's name: the `node_name` label on every sample.
    pub node: String,
}

/// An index into the API names given to [`Metrics::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiId(pub u16);

/// Counts, bytes, errors and latency of one kind of request.
#[derive(Debug, Default)]
pub struct RequestStats {
    pub count: Counter,
    pub recv_bytes: Counter,
    pub sent_bytes: Counter,
    pub errors: Counter,
    pub latency: Histogram,
}

impl RequestStats {
    pub fn record(&self, elapsed: Duration, recv: u64, sent: u64, error: bool) {
        self.count.inc();
        self.recv_bytes.add(recv);
        self.sent_bytes.add(sent);
        if error {
            self.errors.inc();
        }
        self.latency.record(elapsed);
    }
}

/// Socket messages (Nakama's `overall_message_*`).
#[derive(Debug, Default)]
pub struct MessageStats {
    pub count: Counter,
    pub recv_bytes: Counter,
    pub sent_bytes: Counter,
    pub errors: Counter,
}

/// The node's metrics.
#[derive(Debug)]
pub struct Metrics {
    naming: Naming,
    api_names: &'static [&'static str],
    /// Client API requests (Nakama's `overall_request_*`).
    pub requests: RequestStats,
    /// Per API (transport `api`), by code.
    apis: Box<[StatsByCode]>,
    pub messages: MessageStats,
    /// `socket_ws_opened`, `socket_ws_closed`.
    pub ws_opened: Counter,
    pub ws_closed: Counter,
    /// Events dropped because the event queue was full.
    pub dropped_events: Counter,
    /// Modules' own metrics.
    pub custom: CustomMetrics,
}

impl Metrics {
    pub fn new(naming: Naming, api_names: &'static [&'static str], custom_limit: usize) -> Metrics {
        Metrics {
            naming,
            api_names,
            requests: RequestStats::default(),
            apis: api_names.iter().map(|_| StatsByCode::default()).collect(),
            messages: MessageStats::default(),
            ws_opened: Counter::default(),
            ws_closed: Counter::default(),
            dropped_events: Counter::default(),
            custom: CustomMetrics::new(custom_limit),
        }
    }

    /// Metrics for tests and for servers that export none: the same
    /// recording, nobody reads it.
    pub fn unnamed() -> Metrics {
        Metrics::new(
            Naming {
                prefix: String::new(),
                custom_prefix: String::new(),
                namespace: String::new(),
                node: String::new(),
            },
            &[],
            0,
        )
    }

    pub fn naming(&self) -> &Naming {
        &self.naming
    }

    /// The id of the API called `name`, if it was given at construction.
    pub fn api_id(&self, name: &str) -> Option<ApiId> {
        self.api_names
            .iter()
            .position(|n| *n == name)
            .map(|i| ApiId(i as u16))
    }

    /// One client API request answered with `code`: counted overall and
    /// under its API and code.
    pub fn api(&self, id: ApiId, elapsed: Duration, recv: u64, sent: u64, code: Code) {
        self.requests.record(elapsed, recv, sent, code != Code::Ok);
        if let Some(stats) = self.apis.get(id.0 as usize) {
            stats.record(code, elapsed, recv, sent);
        }
    }

    /// Every API with its name, for the labelled families (transport
    /// `api`, the name as `rpc_id`).
    pub fn api_stats(&self) -> impl Iterator<Item = (&'static str, &StatsByCode)> {
        self.api_names.iter().copied().zip(self.apis.iter())
    }

    /// One socket message received.
    pub fn message(&self, recv: u64, error: bool) {
        self.messages.count.inc();
        self.messages.recv_bytes.add(recv);
        if error {
            self.messages.errors.inc();
        }
    }

    /// Writes every metric: the overall ones, one set per API that was
    /// called at least once, the `gauges` the caller read at scrape time,
    /// what `more` adds, then the modules' metrics under the custom prefix.
    pub fn render(
        &self,
        out: &mut String,
        gauges: &[(&str, f64)],
        more: impl FnOnce(&mut Exposition<'_>),
    ) {
        let n = &self.naming;
        let mut e = Exposition::new(out, &n.prefix, &n.node, &n.namespace);
        let m = &self.messages;
        let r = &self.requests;
        let counters = [
            ("overall_count", r.count.get() + m.count.get()),
            ("overall_request_count", r.count.get()),
            ("overall_message_count", m.count.get()),
            (
                "overall_recv_bytes",
                r.recv_bytes.get() + m.recv_bytes.get(),
            ),
            ("overall_request_recv_bytes", r.recv_bytes.get()),
            ("overall_message_recv_bytes", m.recv_bytes.get()),
            (
                "overall_sent_bytes",
                r.sent_bytes.get() + m.sent_bytes.get(),
            ),
            ("overall_request_sent_bytes", r.sent_bytes.get()),
            ("overall_message_sent_bytes", m.sent_bytes.get()),
            ("overall_errors", r.errors.get() + m.errors.get()),
            ("overall_request_errors", r.errors.get()),
            ("overall_message_errors", m.errors.get()),
            ("socket_ws_opened", self.ws_opened.get()),
            ("socket_ws_closed", self.ws_closed.get()),
            ("dropped_events", self.dropped_events.get()),
        ];
        for (name, value) in counters {
            e.family(name, Kind::Counter);
            e.sample(&[], value as f64);
        }
        e.family("overall_latency_ms", Kind::Summary);
        e.summary(&[], &r.latency.snapshot());
        for (name, stats) in self.api_stats() {
            let totals = stats.totals();
            if totals.count > 0 {
                totals.write(&mut e, name, &[]);
            }
        }
        for (name, value) in gauges {
            e.family(name, Kind::Gauge);
            e.sample(&[], *value);
        }
        e.family("metrics_collection_errors_count", Kind::Counter);
        for (why, text) in [
            (CustomRefused::Negative, "negative_increment"),
            (CustomRefused::Limit, "scope_limit"),
            (CustomRefused::KindClash, "kind_clash"),
        ] {
            e.sample(&[("err", text)], self.custom.refused(why) as f64);
        }
        more(&mut e);
        drop(e);
        let mut prefix = n.prefix.clone();
        if !n.custom_prefix.is_empty() {
            if !prefix.is_empty() {
                prefix.push('_');
            }
            prefix.push_str(&n.custom_prefix);
        }
        let mut e = Exposition::new(out, &prefix, &n.node, &n.namespace);
        self.custom.write(&mut e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_counts_overall_and_under_its_api() {
        let m = Metrics::new(
            Naming {
                prefix: "nakama".into(),
                custom_prefix: "custom".into(),
                namespace: String::new(),
                node: "n1".into(),
            },
            &["AuthenticateDevice", "ListFriends"],
            10,
        );
        let id = m.api_id("AuthenticateDevice").unwrap();
        m.api(id, Duration::from_millis(2), 100, 200, Code::Ok);
        m.api(id, Duration::from_millis(4), 10, 20, Code::NotFound);
        m.message(7, false);
        m.custom
            .counter_add("logins", Default::default(), 3)
            .unwrap();
        let mut out = String::new();
        m.render(&mut out, &[("sessions", 5.0)], |e| {
            e.family("extra", Kind::Gauge);
            e.sample(&[], 1.0);
        });
        for line in [
            "nakama_overall_count{node_name=\"n1\"} 3",
            "nakama_overall_request_count{node_name=\"n1\"} 2",
            "nakama_overall_recv_bytes{node_name=\"n1\"} 117",
            "nakama_overall_request_errors{node_name=\"n1\"} 1",
            "nakama_AuthenticateDevice_count{node_name=\"n1\"} 2",
            "nakama_AuthenticateDevice_sent_bytes{node_name=\"n1\"} 220",
            "nakama_AuthenticateDevice_errors{node_name=\"n1\"} 1",
            "nakama_AuthenticateDevice_latency_ms_count{node_name=\"n1\"} 2",
            "nakama_sessions{node_name=\"n1\"} 5",
            "nakama_extra{node_name=\"n1\"} 1",
            "nakama_custom_logins{node_name=\"n1\"} 3",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} missing from\n{out}");
        }
        // An API never called exports nothing.
        assert!(!out.contains("ListFriends"), "{out}");
        // Every family is declared once.
        let mut types: Vec<&str> = out.lines().filter(|l| l.starts_with("# TYPE")).collect();
        let all = types.len();
        types.sort();
        types.dedup();
        assert_eq!(types.len(), all);
    }
}
