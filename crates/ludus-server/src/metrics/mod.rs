//! The server's side of the metrics: the per-API and per-RPC recording of
//! client requests (by the lane and by [`layer::Recorded`] around the
//! router), socket counts, the gauges read at scrape time, and the
//! Prometheus exporter (`metrics.prometheus_port`, [`exporter`]).
//!
//! With `metrics.prometheus_port` 0 none of this exists and nothing records.

pub(crate) mod exporter;
pub(crate) mod layer;
pub(crate) mod socket_rpc;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::http::Method;
use ludus_core::metrics::{ApiId, Counter, Exposition, Kind, Metrics, Naming, RequestStats};

use crate::api::names::{API_NAMES, Called, api_of};
use crate::config::Config;

/// The close codes counted one by one (`socket_ws_closed_by{code}`); any
/// other is counted as `other`.
const CLOSE_CODES: [u16; 8] = [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1012];

/// Reads one counter of a [`RequestStats`].
type Read = fn(&RequestStats) -> u64;

/// Where one request is counted.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Slot {
    Api(ApiId),
    Rpc(usize),
    /// A path of no API Ludus serves (or an RPC no module registered):
    /// counted overall only.
    Other,
}

/// Everything the server records, over the core handle modules share.
pub struct ServerMetrics {
    pub core: Arc<Metrics>,
    /// One slot per RPC id registered at start, in [`Self::rpc_ids`] order.
    rpc_index: HashMap<Box<str>, usize>,
    rpc_ids: Vec<Box<str>>,
    rpcs: Box<[RequestStats]>,
    /// Sockets closed by the client (or gone), and by the server per code.
    closed_by_client: Counter,
    closed_by_code: [Counter; CLOSE_CODES.len() + 1],
}

impl ServerMetrics {
    /// The core handle for `config`, before the runtime exists (modules
    /// record their own metrics into it).
    pub fn core(config: &Config) -> Arc<Metrics> {
        let m = &config.metrics;
        Arc::new(Metrics::new(
            Naming {
                prefix: m.prefix.clone(),
                custom_prefix: m.custom_prefix.clone(),
                namespace: m.namespace.clone(),
                node: config.name.clone(),
            },
            API_NAMES,
            m.custom_scope_limit,
        ))
    }

    pub fn new(core: Arc<Metrics>, rpc_ids: impl IntoIterator<Item = String>) -> ServerMetrics {
        let rpc_ids: Vec<Box<str>> = rpc_ids.into_iter().map(String::into_boxed_str).collect();
        ServerMetrics {
            core,
            rpc_index: rpc_ids
                .iter()
                .enumerate()
                .map(|(i, id)| (id.clone(), i))
                .collect(),
            rpcs: rpc_ids.iter().map(|_| RequestStats::default()).collect(),
            rpc_ids,
            closed_by_client: Counter::default(),
            closed_by_code: Default::default(),
        }
    }

    /// Where a request for `method` and `path` is counted.
    pub(crate) fn slot(&self, method: &Method, path: &str) -> Slot {
        match api_of(method, path) {
            Some(Called::Api(name)) => self.core.api_id(name).map_or(Slot::Other, Slot::Api),
            Some(Called::Rpc(id)) => self.rpc_slot(id),
            None => Slot::Other,
        }
    }

    pub(crate) fn rpc_slot(&self, id: &str) -> Slot {
        self.rpc_index
            .get(id)
            .map_or(Slot::Other, |&i| Slot::Rpc(i))
    }

    /// One request answered: counted overall and in its slot.
    pub(crate) fn record(&self, slot: Slot, elapsed: Duration, recv: u64, sent: u64, error: bool) {
        match slot {
            Slot::Api(id) => self.core.api(id, elapsed, recv, sent, error),
            Slot::Rpc(i) => {
                self.core.requests.record(elapsed, recv, sent, error);
                self.rpcs[i].record(elapsed, recv, sent, error);
            }
            Slot::Other => self.core.requests.record(elapsed, recv, sent, error),
        }
    }

    /// A socket ended: `None` when the client closed it or went away,
    /// else the close code the server sent.
    pub(crate) fn socket_closed(&self, code: Option<u16>) {
        self.core.ws_closed.inc();
        match code {
            None => self.closed_by_client.inc(),
            Some(code) => {
                let i = CLOSE_CODES
                    .iter()
                    .position(|&c| c == code)
                    .unwrap_or(CLOSE_CODES.len());
                self.closed_by_code[i].inc();
            }
        }
    }

    /// Writes what only the server knows: per-RPC families (Nakama's
    /// `Rpc_*` with an `rpc_id` label) and the close counts.
    fn write_more(&self, e: &mut Exposition<'_>) {
        let called: Vec<usize> = (0..self.rpcs.len())
            .filter(|&i| self.rpcs[i].count.get() > 0)
            .collect();
        if !called.is_empty() {
            let families: [(&str, Read); 4] = [
                ("Rpc_count", |s| s.count.get()),
                ("Rpc_recv_bytes", |s| s.recv_bytes.get()),
                ("Rpc_sent_bytes", |s| s.sent_bytes.get()),
                ("Rpc_errors", |s| s.errors.get()),
            ];
            for (name, value) in families {
                e.family(name, Kind::Counter);
                for &i in &called {
                    e.sample(&[("rpc_id", &self.rpc_ids[i])], value(&self.rpcs[i]) as f64);
                }
            }
            e.family("Rpc_latency_ms", Kind::Summary);
            for &i in &called {
                e.summary(
                    &[("rpc_id", &self.rpc_ids[i])],
                    &self.rpcs[i].latency.snapshot(),
                );
            }
        }
        e.family("socket_ws_closed_by", Kind::Counter);
        e.sample(&[("code", "client")], self.closed_by_client.get() as f64);
        let mut code = String::new();
        for (i, counter) in self.closed_by_code.iter().enumerate() {
            code.clear();
            match CLOSE_CODES.get(i) {
                Some(c) => code.push_str(&c.to_string()),
                None => code.push_str("other"),
            }
            e.sample(&[("code", &code)], counter.get() as f64);
        }
    }

    /// The whole scrape: the core metrics, `gauges` read now, the server's
    /// own, then what `extra` writes (read now from the parts that hold it).
    pub fn render(
        &self,
        gauges: &[(&str, f64)],
        extra: impl FnOnce(&mut Exposition<'_>),
    ) -> String {
        let mut out = String::with_capacity(16 * 1024);
        self.core.render(&mut out, gauges, |e| {
            self.write_more(e);
            extra(e);
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rpcs_registered_at_start_are_counted_by_id_and_others_overall() {
        let core = ServerMetrics::core(&Config::default());
        let m = ServerMetrics::new(core, ["echo".to_owned()]);
        let slot = m.slot(&Method::POST, "/v2/rpc/echo");
        assert!(matches!(slot, Slot::Rpc(0)));
        m.record(slot, Duration::from_millis(1), 5, 7, false);
        m.record(
            m.slot(&Method::POST, "/v2/rpc/nope"),
            Duration::ZERO,
            1,
            1,
            true,
        );
        m.record(
            m.slot(&Method::GET, "/v2/account"),
            Duration::ZERO,
            0,
            10,
            false,
        );
        m.socket_closed(None);
        m.socket_closed(Some(1008));
        m.socket_closed(Some(4000));
        let text = m.render(&[("sessions", 2.0)], |_| {});
        for line in [
            "nakama_overall_request_count{node_name=\"ludus\"} 3",
            "nakama_overall_request_errors{node_name=\"ludus\"} 1",
            "nakama_Rpc_count{node_name=\"ludus\",rpc_id=\"echo\"} 1",
            "nakama_Rpc_sent_bytes{node_name=\"ludus\",rpc_id=\"echo\"} 7",
            "nakama_GetAccount_count{node_name=\"ludus\"} 1",
            "nakama_socket_ws_closed{node_name=\"ludus\"} 3",
            "nakama_socket_ws_closed_by{node_name=\"ludus\",code=\"client\"} 1",
            "nakama_socket_ws_closed_by{node_name=\"ludus\",code=\"1008\"} 1",
            "nakama_socket_ws_closed_by{node_name=\"ludus\",code=\"other\"} 1",
            "nakama_sessions{node_name=\"ludus\"} 2",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing from\n{text}"
            );
        }
        assert!(!text.contains("nope"), "{text}");
    }
}
