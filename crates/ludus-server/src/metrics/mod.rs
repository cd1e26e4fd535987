//! The server's side of the metrics: the per-API and per-RPC recording of
//! client requests (by the lane and by [`layer::Recorded`] around the
//! router, by [`socket_rpc::MeteredModules`] for the socket's RPCs), each
//! under the gRPC code of its answer, socket counts, the gauges read at
//! scrape time, and the Prometheus exporter (`metrics.prometheus_port`,
//! [`exporter`]).
//!
//! Nakama's labelled families (`count`, `recv_bytes`, `sent_bytes`,
//! `latency` with `transport`, `rpc_id` and `rpc_code`) are what is
//! recorded; the older per-name ones (`{Api}_count`, `Rpc_count{rpc_id}`,
//! ...) are their sums over codes, and for an RPC over both transports,
//! read at scrape time.
//!
//! With `metrics.prometheus_port` 0 none of this exists and nothing records.

pub(crate) mod exporter;
pub(crate) mod layer;
pub(crate) mod socket_rpc;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::http::Method;
use ludus_core::Code;
use ludus_core::metrics::{
    ApiId, Counter, Exposition, Kind, Labelled, Metrics, Naming, StatsByCode, Totals,
    write_labelled,
};

use crate::api::names::{API_NAMES, Called, api_of};
use crate::config::Config;

/// The close codes counted one by one (`socket_ws_closed_by{code}`); any
/// other is counted as `other`.
const CLOSE_CODES: [u16; 8] = [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1012];

/// Reads one count of [`Totals`].
type Read = fn(&Totals) -> u64;

/// Where one request is counted.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Slot {
    Api(ApiId),
    /// `/v2/rpc/{id}` (transport `api_rpc`), by index of the id.
    HttpRpc(usize),
    /// The socket's `rpc` envelope (transport `ws_rpc`).
    SocketRpc(usize),
    /// A path of no API Ludus serves (or an RPC no module registered):
    /// counted overall only.
    Other,
}

/// One RPC id's requests, per transport.
#[derive(Debug, Default)]
struct RpcStats {
    http: StatsByCode,
    socket: StatsByCode,
}

/// Everything the server records, over the core handle modules share.
pub struct ServerMetrics {
    pub core: Arc<Metrics>,
    /// One slot per RPC id registered at start, in [`Self::rpc_ids`] order.
    rpc_index: HashMap<Box<str>, usize>,
    rpc_ids: Vec<Box<str>>,
    rpcs: Box<[RpcStats]>,
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
            rpcs: rpc_ids.iter().map(|_| RpcStats::default()).collect(),
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

    /// Where `/v2/rpc/{id}` is counted.
    pub(crate) fn rpc_slot(&self, id: &str) -> Slot {
        self.rpc_index
            .get(id)
            .map_or(Slot::Other, |&i| Slot::HttpRpc(i))
    }

    /// Where the socket's RPC `id` is counted.
    pub(crate) fn socket_rpc_slot(&self, id: &str) -> Slot {
        self.rpc_index
            .get(id)
            .map_or(Slot::Other, |&i| Slot::SocketRpc(i))
    }

    /// One request answered with `code`: counted overall and in its slot,
    /// under its code.
    pub(crate) fn record(&self, slot: Slot, elapsed: Duration, recv: u64, sent: u64, code: Code) {
        let error = code != Code::Ok;
        match slot {
            Slot::Api(id) => self.core.api(id, elapsed, recv, sent, code),
            Slot::HttpRpc(i) => {
                self.core.requests.record(elapsed, recv, sent, error);
                self.rpcs[i].http.record(code, elapsed, recv, sent);
            }
            Slot::SocketRpc(i) => {
                self.core.requests.record(elapsed, recv, sent, error);
                self.rpcs[i].socket.record(code, elapsed, recv, sent);
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

    /// Writes what only the server knows: the labelled families (APIs and
    /// RPCs), per-RPC families (Nakama's `Rpc_*` with an `rpc_id` label,
    /// over both transports) and the close counts.
    fn write_more(&self, e: &mut Exposition<'_>) {
        let mut rows: Vec<Labelled<'_>> = self
            .core
            .api_stats()
            .map(|(name, stats)| Labelled {
                transport: "api",
                id: name,
                stats,
            })
            .collect();
        for (id, rpc) in self.rpc_ids.iter().zip(self.rpcs.iter()) {
            rows.push(Labelled {
                transport: "api_rpc",
                id,
                stats: &rpc.http,
            });
            rows.push(Labelled {
                transport: "ws_rpc",
                id,
                stats: &rpc.socket,
            });
        }
        write_labelled(e, &rows);

        let called: Vec<(&str, Totals)> = self
            .rpc_ids
            .iter()
            .zip(self.rpcs.iter())
            .filter_map(|(id, rpc)| {
                let mut totals = Totals::default();
                rpc.http.add_to(&mut totals);
                rpc.socket.add_to(&mut totals);
                (totals.count > 0).then_some((&**id, totals))
            })
            .collect();
        if !called.is_empty() {
            let families: [(&str, Read); 4] = [
                ("Rpc_count", |t| t.count),
                ("Rpc_recv_bytes", |t| t.recv_bytes),
                ("Rpc_sent_bytes", |t| t.sent_bytes),
                ("Rpc_errors", |t| t.errors),
            ];
            for (name, value) in families {
                e.family(name, Kind::Counter);
                for (id, totals) in &called {
                    e.sample(&[("rpc_id", id)], value(totals) as f64);
                }
            }
            e.family("Rpc_latency_ms", Kind::Summary);
            for (id, totals) in &called {
                e.summary(&[("rpc_id", id)], &totals.latency);
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
        assert!(matches!(slot, Slot::HttpRpc(0)));
        m.record(slot, Duration::from_millis(1), 5, 7, Code::Ok);
        m.record(
            m.slot(&Method::POST, "/v2/rpc/nope"),
            Duration::ZERO,
            1,
            1,
            Code::NotFound,
        );
        m.record(
            m.slot(&Method::GET, "/v2/account"),
            Duration::ZERO,
            0,
            10,
            Code::Ok,
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

    #[test]
    fn labelled_families_split_transports_and_codes_and_sum_into_the_named_ones() {
        let core = ServerMetrics::core(&Config::default());
        let m = ServerMetrics::new(core, ["echo".to_owned(), "idle".to_owned()]);
        let ms = Duration::from_millis;
        let (http, ws) = (m.rpc_slot("echo"), m.socket_rpc_slot("echo"));
        assert!(matches!(ws, Slot::SocketRpc(0)));
        m.record(http, ms(1), 5, 7, Code::Ok);
        m.record(http, ms(3), 5, 9, Code::Ok);
        m.record(http, ms(2), 4, 30, Code::InvalidArgument);
        m.record(ws, ms(1), 6, 8, Code::Ok);
        m.record(ws, ms(5), 6, 0, Code::PermissionDenied);
        let account = m.slot(&Method::GET, "/v2/account");
        m.record(account, ms(1), 0, 100, Code::Ok);
        m.record(account, ms(1), 0, 50, Code::Unauthenticated);
        let text = m.render(&[], |_| {});
        let labels = |transport: &str, id: &str, code: &str| {
            format!(
                "{{node_name=\"ludus\",transport=\"{transport}\",rpc_id=\"{id}\",rpc_code=\"{code}\"}}"
            )
        };
        let expected = [
            ("nakama_count", labels("api_rpc", "echo", "OK"), "2"),
            (
                "nakama_count",
                labels("api_rpc", "echo", "InvalidArgument"),
                "1",
            ),
            ("nakama_count", labels("ws_rpc", "echo", "OK"), "1"),
            (
                "nakama_count",
                labels("ws_rpc", "echo", "PermissionDenied"),
                "1",
            ),
            ("nakama_count", labels("api", "GetAccount", "OK"), "1"),
            (
                "nakama_count",
                labels("api", "GetAccount", "Unauthenticated"),
                "1",
            ),
            ("nakama_recv_bytes", labels("api_rpc", "echo", "OK"), "10"),
            ("nakama_sent_bytes", labels("api_rpc", "echo", "OK"), "16"),
            (
                "nakama_sent_bytes",
                labels("api", "GetAccount", "Unauthenticated"),
                "50",
            ),
            ("nakama_latency_count", labels("api_rpc", "echo", "OK"), "2"),
            (
                "nakama_latency_sum",
                labels("api_rpc", "echo", "OK"),
                "0.004",
            ),
            (
                "nakama_latency_sum",
                labels("ws_rpc", "echo", "PermissionDenied"),
                "0.005",
            ),
            // The named families sum the codes, and both transports.
            (
                "nakama_Rpc_count",
                "{node_name=\"ludus\",rpc_id=\"echo\"}".into(),
                "5",
            ),
            (
                "nakama_Rpc_errors",
                "{node_name=\"ludus\",rpc_id=\"echo\"}".into(),
                "2",
            ),
            (
                "nakama_Rpc_recv_bytes",
                "{node_name=\"ludus\",rpc_id=\"echo\"}".into(),
                "26",
            ),
            (
                "nakama_Rpc_sent_bytes",
                "{node_name=\"ludus\",rpc_id=\"echo\"}".into(),
                "54",
            ),
            (
                "nakama_Rpc_latency_ms_count",
                "{node_name=\"ludus\",rpc_id=\"echo\"}".into(),
                "5",
            ),
            (
                "nakama_Rpc_latency_ms_sum",
                "{node_name=\"ludus\",rpc_id=\"echo\"}".into(),
                "0.012",
            ),
            (
                "nakama_GetAccount_count",
                "{node_name=\"ludus\"}".into(),
                "2",
            ),
            (
                "nakama_GetAccount_errors",
                "{node_name=\"ludus\"}".into(),
                "1",
            ),
            (
                "nakama_GetAccount_sent_bytes",
                "{node_name=\"ludus\"}".into(),
                "150",
            ),
            (
                "nakama_GetAccount_latency_ms_count",
                "{node_name=\"ludus\"}".into(),
                "2",
            ),
            (
                "nakama_overall_request_count",
                "{node_name=\"ludus\"}".into(),
                "7",
            ),
            (
                "nakama_overall_request_errors",
                "{node_name=\"ludus\"}".into(),
                "3",
            ),
        ];
        for (name, labels, value) in expected {
            let line = format!("{name}{labels} {value}");
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing from\n{text}"
            );
        }
        // The latency is a summary with Nakama's quantiles.
        let quantile = format!(
            "nakama_latency{}",
            labels("ws_rpc", "echo", "OK").replace('}', ",quantile=\"0.99\"}")
        );
        assert!(
            text.lines().any(|l| l.starts_with(&quantile)),
            "{quantile} missing from\n{text}"
        );
        for family in [
            "# TYPE nakama_count counter",
            "# TYPE nakama_recv_bytes counter",
            "# TYPE nakama_sent_bytes counter",
            "# TYPE nakama_latency summary",
        ] {
            assert_eq!(text.lines().filter(|l| *l == family).count(), 1, "{family}");
        }
        // Only what was answered has a sample.
        assert!(!text.contains("idle"), "{text}");
        assert!(!text.contains("rpc_code=\"NotFound\""), "{text}");
        assert!(
            !text.contains(&labels("ws_rpc", "echo", "InvalidArgument")),
            "{text}"
        );
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("nakama_count{"))
                .count(),
            6,
            "{text}"
        );
    }
}
