//! The Prometheus text exposition format (version 0.0.4), written the way
//! Nakama's reporter (tally's Prometheus reporter) names things: the prefix
//! and the name joined by `_`, characters outside `[a-zA-Z0-9_:]` replaced
//! by `_`, the node's own labels (`node_name`, and `namespace` when set)
//! on every sample, and timers as summaries in seconds.

use std::fmt::Write as _;

use super::histogram::HistogramSnapshot;

/// The quantiles a summary reports (tally's default objectives).
pub const QUANTILES: [(f64, &str); 5] = [
    (0.5, "0.5"),
    (0.75, "0.75"),
    (0.95, "0.95"),
    (0.99, "0.99"),
    (0.999, "0.999"),
];

/// What kind of family a name is, for its `# TYPE` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Summary,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Summary => "summary",
        }
    }
}

/// Writes families into a text buffer. Each family is opened once with
/// [`Exposition::family`] and its samples follow it, as the format wants.
pub struct Exposition<'a> {
    out: &'a mut String,
    /// `prefix_` (already sanitized), or empty.
    prefix: String,
    /// `node_name="…"[,namespace="…"]`, already escaped.
    base_labels: String,
    /// The family being written: its full name.
    family: String,
}

impl<'a> Exposition<'a> {
    pub fn new(out: &'a mut String, prefix: &str, node: &str, namespace: &str) -> Self {
        let mut base_labels = String::new();
        push_label(&mut base_labels, "node_name", node);
        if !namespace.is_empty() {
            base_labels.push(',');
            push_label(&mut base_labels, "namespace", namespace);
        }
        let mut p = String::new();
        if !prefix.is_empty() {
            push_name(&mut p, prefix);
            p.push('_');
        }
        Exposition {
            out,
            prefix: p,
            base_labels,
            family: String::new(),
        }
    }

    /// Opens the family `name` (below the prefix) with its `# TYPE` line.
    pub fn family(&mut self, name: &str, kind: Kind) {
        self.family.clear();
        self.family.push_str(&self.prefix);
        push_name(&mut self.family, name);
        let _ = writeln!(self.out, "# TYPE {} {}", self.family, kind.as_str());
    }

    /// One sample of the open family.
    pub fn sample(&mut self, labels: &[(&str, &str)], value: f64) {
        self.sample_suffixed("", labels, None, value);
    }

    /// A whole summary (quantiles, `_sum`, `_count`) of the open family,
    /// from a histogram of nanoseconds, in seconds.
    pub fn summary(&mut self, labels: &[(&str, &str)], snap: &HistogramSnapshot) {
        for (q, text) in QUANTILES {
            let seconds = snap.quantile_ns(q) / 1e9;
            self.sample_suffixed("", labels, Some(text), seconds);
        }
        self.sample_suffixed("_sum", labels, None, snap.sum_ns as f64 / 1e9);
        self.sample_suffixed("_count", labels, None, snap.count as f64);
    }

    fn sample_suffixed(
        &mut self,
        suffix: &str,
        labels: &[(&str, &str)],
        quantile: Option<&str>,
        value: f64,
    ) {
        let out = &mut *self.out;
        out.push_str(&self.family);
        out.push_str(suffix);
        out.push('{');
        out.push_str(&self.base_labels);
        for (k, v) in labels {
            out.push(',');
            push_label(out, k, v);
        }
        if let Some(q) = quantile {
            out.push(',');
            push_label(out, "quantile", q);
        }
        out.push_str("} ");
        push_value(out, value);
        out.push('\n');
    }
}

/// A metric or label name with every character outside `[a-zA-Z0-9_:]`
/// replaced by `_` (and a leading digit prefixed by `_`).
pub fn push_name(out: &mut String, name: &str) {
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        out.push('_');
    }
    out.extend(name.chars().map(|c| {
        if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
            c
        } else {
            '_'
        }
    }));
}

fn push_label(out: &mut String, key: &str, value: &str) {
    let start = out.len();
    push_name(out, key);
    // Label names may not hold ':'.
    let fixed: String = out[start..].replace(':', "_");
    out.truncate(start);
    out.push_str(&fixed);
    out.push_str("=\"");
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn push_value(out: &mut String, value: f64) {
    if value.is_nan() {
        out.push_str("NaN");
    } else if value.is_infinite() {
        out.push_str(if value > 0.0 { "+Inf" } else { "-Inf" });
    } else if value.fract() == 0.0 && value.abs() < 1e15 {
        let _ = write!(out, "{}", value as i64);
    } else {
        let _ = write!(out, "{value}");
    }
}

#[cfg(test)]
mod tests {
    use super::super::histogram::Histogram;
    use super::*;

    #[test]
    fn families_are_prefixed_labelled_and_escaped() {
        let mut out = String::new();
        let mut e = Exposition::new(&mut out, "nakama", "node-1", "");
        e.family("overall_count", Kind::Counter);
        e.sample(&[], 3.0);
        e.family("Rpc_count", Kind::Counter);
        e.sample(&[("rpc_id", "say \"hi\"\\\n")], 1.0);
        e.family("sessions", Kind::Gauge);
        e.sample(&[], 0.5);
        assert_eq!(
            out,
            "# TYPE nakama_overall_count counter\n\
             nakama_overall_count{node_name=\"node-1\"} 3\n\
             # TYPE nakama_Rpc_count counter\n\
             nakama_Rpc_count{node_name=\"node-1\",rpc_id=\"say \\\"hi\\\"\\\\\\n\"} 1\n\
             # TYPE nakama_sessions gauge\n\
             nakama_sessions{node_name=\"node-1\"} 0.5\n"
        );
    }

    #[test]
    fn names_are_sanitized_and_the_prefix_may_be_empty() {
        let mut out = String::new();
        let mut e = Exposition::new(&mut out, "", "n", "prod");
        e.family("my.metric-1", Kind::Gauge);
        e.sample(&[("a.b", "v")], 1.0);
        e.family("9lives", Kind::Gauge);
        e.sample(&[], f64::NAN);
        assert_eq!(
            out,
            "# TYPE my_metric_1 gauge\n\
             my_metric_1{node_name=\"n\",namespace=\"prod\",a_b=\"v\"} 1\n\
             # TYPE _9lives gauge\n\
             _9lives{node_name=\"n\",namespace=\"prod\"} NaN\n"
        );
    }

    #[test]
    fn a_summary_has_quantiles_sum_and_count_in_seconds() {
        let h = Histogram::default();
        h.record_ns(1_500_000_000);
        h.record_ns(500_000_000);
        let mut out = String::new();
        let mut e = Exposition::new(&mut out, "nakama", "n", "");
        e.family("overall_latency_ms", Kind::Summary);
        e.summary(&[], &h.snapshot());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "# TYPE nakama_overall_latency_ms summary");
        assert!(
            lines[1].starts_with("nakama_overall_latency_ms{node_name=\"n\",quantile=\"0.5\"} ")
        );
        assert_eq!(lines[6], "nakama_overall_latency_ms_sum{node_name=\"n\"} 2");
        assert_eq!(
            lines[7],
            "nakama_overall_latency_ms_count{node_name=\"n\"} 2"
        );
        assert_eq!(lines.len(), 8);
    }
}
