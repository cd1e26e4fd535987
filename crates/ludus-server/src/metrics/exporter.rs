//! The Prometheus exporter: its own small listener on
//! `metrics.prometheus_port` (at `socket.address`) that answers
//! `GET /metrics` (and, as Nakama's, any path) with the text format, one
//! request per connection. It reads a bounded head within a timeout, so a
//! slow or hostile client holds nothing for long.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use ludus_core::metrics::Kind;

use super::ServerMetrics;
use crate::state::AppState;

/// The longest request head read.
const MAX_HEAD: usize = 8 * 1024;
/// How long a client has to send its head and read the answer.
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves scrapes on `listener` until `stop` turns true.
pub(crate) async fn serve(listener: TcpListener, state: AppState, mut stop: watch::Receiver<bool>) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = crate::lane::stopped(&mut stop) => return,
        };
        match accepted {
            Ok((tcp, _)) => {
                let state = state.clone();
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(IO_TIMEOUT, answer(tcp, &state)).await;
                });
            }
            Err(error) => {
                tracing::debug!(%error, "metrics listener: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

async fn answer(mut tcp: TcpStream, state: &AppState) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tcp.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
        if head.len() > MAX_HEAD {
            return tcp
                .write_all(&response(
                    "431 Request Header Fields Too Large",
                    "text/plain",
                    "",
                ))
                .await;
        }
    }
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let (status, body) = if line.starts_with(b"GET ") || line.starts_with(b"HEAD ") {
        let Some(metrics) = state.metrics.as_ref() else {
            return Ok(());
        };
        let text = render(metrics, state);
        if line.starts_with(b"HEAD ") {
            ("200 OK", String::new())
        } else {
            ("200 OK", text)
        }
    } else {
        ("405 Method Not Allowed", String::new())
    };
    tcp.write_all(&response(
        status,
        "text/plain; version=0.0.4; charset=utf-8",
        &body,
    ))
    .await?;
    tcp.shutdown().await
}

/// The scrape: the gauges read now from the parts that hold them, then
/// everything recorded.
fn render(metrics: &Arc<ServerMetrics>, state: &AppState) -> String {
    let realtime = &state.sockets.realtime;
    let matchmaker = realtime.matchmaker.core();
    let (lua_runtimes, js_runtimes) = state.runtime.pool_sizes();
    let mut gauges = vec![
        ("sessions", realtime.hub().session_count() as f64),
        ("presences", realtime.hub().presence_count() as f64),
        ("socket_ws_open", state.sockets.open_count() as f64),
        ("authoritative_matches", realtime.matches.count() as f64),
        ("parties", realtime.parties.count() as f64),
        ("matchmaker_tickets", matchmaker.ticket_count() as f64),
        (
            "matchmaker_active_tickets",
            matchmaker.active_ticket_count() as f64,
        ),
        ("lua_runtimes", lua_runtimes as f64),
        ("javascript_runtimes", js_runtimes as f64),
    ];
    let store = state.accounts.store().stats();
    if let Some(pool) = store.pool {
        gauges.extend([
            ("db_max_open_conns", pool.max_open as f64),
            ("db_total_open_conns", pool.open as f64),
            ("db_in_use_conns", pool.in_use as f64),
            ("db_idle_conns", pool.idle as f64),
            ("db_total_wait_count", pool.wait_count as f64),
            ("db_total_wait_time_nanos", pool.wait_ns as f64),
        ]);
    }
    // The runtime counts the events its queue dropped; the counter catches
    // up at each scrape.
    metrics
        .core
        .dropped_events
        .raise_to(state.runtime.events_dropped());
    let hooks = state.runtime.hook_stats();
    let index_sizes = state.storage.indexes().entry_counts();
    let bus = realtime.hub().bus_health();
    metrics.render(&gauges, |e| {
        e.family("matchmaker_process_time", Kind::Summary);
        e.summary(&[], &matchmaker.process_time().snapshot());
        for (stage, stats) in [("before", &hooks.before), ("after", &hooks.after)] {
            let name = |what: &str| format!("overall_{stage}_{what}");
            e.family(&name("count"), Kind::Counter);
            e.sample(&[], stats.count.get() as f64);
            e.family(&name("errors"), Kind::Counter);
            e.sample(&[], stats.errors.get() as f64);
            let latency = stats.latency.snapshot();
            e.family(&name("latency_ms"), Kind::Summary);
            e.summary(&[], &latency);
            e.family(&name("latency"), Kind::Summary);
            e.summary(&[], &latency);
        }
        if !index_sizes.is_empty() {
            e.family("storage_index_entry_count", Kind::Gauge);
            for (name, n) in &index_sizes {
                e.sample(&[("index_name", name)], *n as f64);
            }
        }
        // Ludus's own: group commits and the writes they carried.
        e.family("store_batches", Kind::Counter);
        e.sample(&[], store.batches as f64);
        e.family("store_batched_writes", Kind::Counter);
        e.sample(&[], store.batched as f64);
        if let Some(bus) = bus {
            e.family("cluster_bus_reconnects", Kind::Counter);
            e.sample(&[], bus.reconnects as f64);
            e.family("cluster_bus_lag", Kind::Summary);
            e.summary(&[], &bus.lag);
        }
    })
}

fn response(status: &str, content_type: &str, body: &str) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\naccess-control-allow-origin: *\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}
