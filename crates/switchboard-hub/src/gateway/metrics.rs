//! The gateway's metrics in the Prometheus text format.

use super::HubServer;
#[cfg(all(feature = "oauth", feature = "http-server"))]
use crate::hub::Hub;
use crate::hub::ServerStats;

impl HubServer {
    /// The gateway's metrics in the Prometheus text format: per server its
    /// state, tool calls, errors, timeouts, reconnects, calls in flight and
    /// a call-latency histogram (`switchboard_call_duration_seconds`).
    pub fn metrics_text(&self) -> String {
        use std::fmt::Write as _;
        let servers = self.hub.list();
        let stats: Vec<(String, ServerStats)> = servers
            .iter()
            .map(|s| (s.name.clone(), self.hub.stats(&s.name).unwrap_or_default()))
            .collect();
        let mut out = String::new();
        let metric = "switchboard_backend_up";
        let _ = writeln!(
            out,
            "# HELP {metric} Whether the backend is ready (1) or not (0), with its state.\n# TYPE {metric} gauge"
        );
        for server in &servers {
            let _ = writeln!(
                out,
                "{metric}{{server=\"{}\",state=\"{}\"}} {}",
                label(&server.name),
                server.state.name(),
                u8::from(server.state.is_ready())
            );
        }
        write_stats(&mut out, &stats);
        out
    }
}

/// The metrics of a gateway serving each host user their own hub
/// ([`UserGateway`](super::users::UserGateway)), over the `hubs` this
/// replica holds now: how many users it holds, per server how many of them
/// have it ready, and each server's counters and latencies added up over
/// them (a user's hub let go when idle takes its counts along: to
/// Prometheus, a counter reset).
#[cfg(all(feature = "oauth", feature = "http-server"))]
pub(crate) fn users_metrics_text(hubs: &[Hub]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let metric = "switchboard_users_loaded";
    let _ = writeln!(
        out,
        "# HELP {metric} Host users whose hub this replica holds.\n# TYPE {metric} gauge\n{metric} {}",
        hubs.len()
    );
    let mut ready: Vec<(String, u64)> = Vec::new();
    let mut summed: Vec<(String, ServerStats)> = Vec::new();
    for hub in hubs {
        for server in hub.list() {
            let at = match summed.iter().position(|(name, _)| *name == server.name) {
                Some(at) => at,
                None => {
                    summed.push((server.name.clone(), ServerStats::default()));
                    ready.push((server.name.clone(), 0));
                    summed.len() - 1
                }
            };
            ready[at].1 += u64::from(server.state.is_ready());
            add(
                &mut summed[at].1,
                &hub.stats(&server.name).unwrap_or_default(),
            );
        }
    }
    let metric = "switchboard_backend_ready_users";
    let _ = writeln!(
        out,
        "# HELP {metric} Users whose backend is ready.\n# TYPE {metric} gauge"
    );
    for (server, count) in &ready {
        let _ = writeln!(out, "{metric}{{server=\"{}\"}} {count}", label(server));
    }
    write_stats(&mut out, &summed);
    out
}

/// `more` added to `total` (the latency buckets by bound).
#[cfg(all(feature = "oauth", feature = "http-server"))]
fn add(total: &mut ServerStats, more: &ServerStats) {
    total.calls += more.calls;
    total.errors += more.errors;
    total.timeouts += more.timeouts;
    total.reconnects += more.reconnects;
    total.in_flight += more.in_flight;
    total.latency_sum += more.latency_sum;
    for (bound, count) in &more.latency_buckets {
        match total.latency_buckets.iter_mut().find(|(b, _)| b == bound) {
            Some((_, total)) => *total += count,
            None => total.latency_buckets.push((*bound, *count)),
        }
    }
}

/// Each server's counters and latency histogram.
fn write_stats(out: &mut String, stats: &[(String, ServerStats)]) {
    use std::fmt::Write as _;
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
        for (server, snapshot) in stats {
            let _ = writeln!(
                out,
                "{metric}{{server=\"{}\"}} {}",
                label(server),
                get(snapshot)
            );
        }
    }
    let metric = "switchboard_call_duration_seconds";
    let _ = writeln!(
        out,
        "# HELP {metric} Tool call latency.\n# TYPE {metric} histogram"
    );
    for (server, snapshot) in stats {
        let server = label(server);
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
}

/// A Prometheus label value: backslash, double quote and newline escaped.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
