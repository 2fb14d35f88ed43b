//! The gateway's metrics in the Prometheus text format.

use super::HubServer;

impl HubServer {
    /// The gateway's metrics in the Prometheus text format: per server its
    /// state, tool calls, errors, timeouts, reconnects, calls in flight and
    /// a call-latency histogram (`switchboard_call_duration_seconds`).
    pub fn metrics_text(&self) -> String {
        use std::fmt::Write as _;
        let servers = self.hub.list();
        let stats: Vec<_> = servers
            .iter()
            .map(|s| (s, self.hub.stats(&s.name).unwrap_or_default()))
            .collect();
        let mut out = String::new();
        let metric = "switchboard_backend_up";
        let _ = writeln!(
            out,
            "# HELP {metric} Whether the backend is ready (1) or not (0), with its state.\n# TYPE {metric} gauge"
        );
        for (server, _) in &stats {
            let _ = writeln!(
                out,
                "{metric}{{server=\"{}\",state=\"{}\"}} {}",
                label(&server.name),
                server.state.name(),
                u8::from(server.state.is_ready())
            );
        }
        /// A metric's name, type, help and value.
        type Counter = (
            &'static str,
            &'static str,
            &'static str,
            fn(&crate::hub::ServerStats) -> u64,
        );
        let counters: [Counter; 5] = [
            (
                "switchboard_calls_total",
                "counter",
                "Tool calls finished.",
                |s| s.calls,
            ),
            (
                "switchboard_call_errors_total",
                "counter",
                "Tool calls that failed (an isError result is not a failure).",
                |s| s.errors,
            ),
            (
                "switchboard_call_timeouts_total",
                "counter",
                "Tool calls that timed out.",
                |s| s.timeouts,
            ),
            (
                "switchboard_reconnects_total",
                "counter",
                "Reconnections after an unexpected close.",
                |s| s.reconnects,
            ),
            (
                "switchboard_calls_in_flight",
                "gauge",
                "Tool calls under way.",
                |s| s.in_flight,
            ),
        ];
        for (metric, kind, help, get) in counters {
            let _ = writeln!(out, "# HELP {metric} {help}\n# TYPE {metric} {kind}");
            for (server, snapshot) in &stats {
                let _ = writeln!(
                    out,
                    "{metric}{{server=\"{}\"}} {}",
                    label(&server.name),
                    get(snapshot)
                );
            }
        }
        let metric = "switchboard_call_duration_seconds";
        let _ = writeln!(
            out,
            "# HELP {metric} Tool call latency.\n# TYPE {metric} histogram"
        );
        for (server, snapshot) in &stats {
            let server = label(&server.name);
            for (bound, count) in &snapshot.latency_buckets {
                let _ = writeln!(
                    out,
                    "{metric}_bucket{{server=\"{server}\",le=\"{}\"}} {count}",
                    bound.as_secs_f64()
                );
            }
            let _ = writeln!(
                out,
                "{metric}_bucket{{server=\"{server}\",le=\"+Inf\"}} {}",
                snapshot.calls
            );
            let _ = writeln!(
                out,
                "{metric}_sum{{server=\"{server}\"}} {}",
                snapshot.latency_sum.as_secs_f64()
            );
            let _ = writeln!(
                out,
                "{metric}_count{{server=\"{server}\"}} {}",
                snapshot.calls
            );
        }
        out
    }
}

/// A Prometheus label value: backslash, double quote and newline escaped.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
