//! Results for people and machines: the published table's columns on the
//! terminal, the full result as JSON, and an SVG chart of rate, latency and
//! users over time.

use std::fmt::Write as _;

use serde::Serialize;

use crate::stats::{Second, Summary};

#[derive(Debug, Serialize)]
pub struct RunResult {
    pub workload: String,
    pub target: String,
    pub concurrency: usize,
    /// Whether the workload drove sockets (adds the socket figures to the table).
    pub socket: bool,
    pub summary: Summary,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub seconds: Vec<Second>,
}

/// The table printed at the end of a run.
pub fn table(r: &RunResult) -> String {
    let s = &r.summary;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "workload {} against {}: {} users, {:.1} s",
        r.workload, r.target, r.concurrency, s.duration_secs
    );
    let _ = writeln!(
        out,
        "| highest 10s mean | lowest 10s mean | highest rate | mean rate | mean latency | p50 | p99 | max | ok | errors |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
    let _ = writeln!(
        out,
        "| {:.2} ms | {:.2} ms | {:.1}/s | {:.1}/s | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms | {} | {} |",
        s.highest_10s_mean_ms,
        s.lowest_10s_mean_ms,
        s.highest_rate,
        s.mean_rate,
        s.mean_latency_ms,
        s.p50_ms,
        s.p99_ms,
        s.max_ms,
        s.total_ok,
        s.total_errors
    );
    let _ = writeln!(out, "bytes in {} out {}", r.bytes_in, r.bytes_out);
    if r.socket {
        let secs = s.duration_secs.max(1e-9);
        let _ = writeln!(
            out,
            "| peak users | users at end | sent/s | received/s | highest received/s | sent | received | bytes in/s | bytes out/s |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} | {:.1} | {:.1} | {} | {} | {:.0} | {:.0} |",
            s.peak_users,
            s.final_users,
            s.mean_sent_rate,
            s.mean_received_rate,
            s.highest_received_rate,
            s.messages_sent,
            s.messages_received,
            r.bytes_in as f64 / secs,
            r.bytes_out as f64 / secs
        );
        let step = r.seconds.len().div_ceil(10).max(1);
        let users: Vec<String> = r
            .seconds
            .iter()
            .enumerate()
            .step_by(step)
            .map(|(i, sec)| format!("{i}s {}", sec.users))
            .collect();
        let _ = writeln!(out, "connected users over time: {}", users.join(", "));
    }
    if let Some(f) = &s.above_floor {
        let _ = writeln!(
            out,
            "latency above the {:.0} ms tick floor: mean {:.2} ms, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            f.floor_ms, f.mean_ms, f.p50_ms, f.p99_ms, f.max_ms
        );
    }
    if let Some(h) = &s.held {
        let _ = writeln!(
            out,
            "latency of what was sent after the {:.0} s ramp ({} samples): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            h.after_s, h.count, h.p50_ms, h.p99_ms, h.max_ms
        );
    }
    if let Some(b) = &s.broadcast {
        let _ = writeln!(
            out,
            "broadcast delivery time ({} pushes): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            b.count, b.p50_ms, b.p99_ms, b.max_ms
        );
    }
    if !s.errors.is_empty() {
        let kinds: Vec<String> = s.errors.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        let _ = writeln!(out, "errors by kind: {}", kinds.join(", "));
    }
    out
}

/// A chart of operations/s, mean latency (ms), users and (for socket
/// workloads) messages received per second, each scaled to its own height
/// and labelled with its maximum.
pub fn svg(r: &RunResult) -> String {
    const W: f64 = 800.0;
    const H: f64 = 360.0;
    const PAD: f64 = 48.0;
    let n = r.seconds.len().max(2);
    let x = |i: usize| PAD + (W - 2.0 * PAD) * i as f64 / (n - 1) as f64;
    let mut series: Vec<(&str, &str, Vec<f64>)> = vec![
        (
            "ops/s",
            "#1f77b4",
            r.seconds.iter().map(|s| s.ok as f64).collect(),
        ),
        (
            "mean latency ms",
            "#d62728",
            r.seconds
                .iter()
                .map(|s| {
                    if s.ok > 0 {
                        s.latency_sum_us as f64 / s.ok as f64 / 1000.0
                    } else {
                        0.0
                    }
                })
                .collect(),
        ),
        (
            "users",
            "#2ca02c",
            r.seconds.iter().map(|s| s.users as f64).collect(),
        ),
    ];
    if r.socket {
        series.push((
            "received/s",
            "#9467bd",
            r.seconds
                .iter()
                .map(|s| s.messages_received as f64)
                .collect(),
        ));
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{PAD}" y="20" font-size="14">ludus bench {} against {} ({} users)</text>"#,
        xml(&r.workload),
        xml(&r.target),
        r.concurrency
    );
    let (top, bottom) = (40.0, H - PAD);
    let _ = writeln!(
        out,
        r##"<line x1="{PAD}" y1="{bottom}" x2="{}" y2="{bottom}" stroke="#444"/><line x1="{PAD}" y1="{top}" x2="{PAD}" y2="{bottom}" stroke="#444"/>"##,
        W - PAD
    );
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="end">time (s): {}</text>"#,
        W - PAD,
        H - 16.0,
        r.seconds.len()
    );
    for (k, (name, color, values)) in series.iter().enumerate() {
        let max = values.iter().cloned().fold(0.0f64, f64::max);
        let scale = if max > 0.0 { (bottom - top) / max } else { 0.0 };
        let points: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{:.1},{:.1}", x(i), bottom - v * scale))
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{}"/>"#,
            points.join(" ")
        );
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" fill="{color}">{name} (max {:.1})</text>"#,
            PAD + 200.0 * k as f64,
            H - 16.0,
            max
        );
    }
    out.push_str("</svg>\n");
    out
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Recorder;

    fn result() -> RunResult {
        let mut rec = Recorder::default();
        rec.ok(0, 1000);
        rec.ok(1, 3000);
        rec.second(1).users = 4;
        rec.error(1, "status 401");
        RunResult {
            workload: "register".into(),
            target: "127.0.0.1:7350".into(),
            concurrency: 4,
            socket: true,
            summary: Summary::of(&rec, 2.0),
            bytes_in: 10,
            bytes_out: 20,
            seconds: rec.seconds,
        }
    }

    #[test]
    fn table_has_the_published_columns_and_errors() {
        let t = table(&result());
        assert!(t.contains(
            "| highest 10s mean | lowest 10s mean | highest rate | mean rate | mean latency |"
        ));
        assert!(t.contains("| 2.00 ms |"), "{t}");
        assert!(t.contains("errors by kind: status 401: 1"), "{t}");
        assert!(t.contains("| peak users |"), "{t}");
        assert!(t.contains("connected users over time: 0s 0, 1s 4"), "{t}");
    }

    #[test]
    fn svg_draws_three_series_and_received_for_sockets() {
        let mut r = result();
        r.socket = false;
        let s = svg(&r);
        assert!(s.starts_with("<svg"));
        assert_eq!(s.matches("<polyline").count(), 3);
        assert!(s.contains("users (max 4.0)"));
        r.socket = true;
        r.seconds[1].messages_received = 7;
        let s = svg(&r);
        assert_eq!(s.matches("<polyline").count(), 4);
        assert!(s.contains("received/s (max 7.0)"));
    }
}
