//! Per-server counters and a small latency histogram.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Four buckets per power of two (a relative error of at most 25 %), from
/// 1 µs to 2^40 µs (about 12 days); anything longer lands in the last.
const SUB_BITS: u32 = 2;
const SUB: usize = 1 << SUB_BITS;
const BUCKETS: usize = SUB * 40;

/// A fixed-size log-linear histogram of microseconds: 160 atomics, no
/// allocation after construction, lock-free recording.
pub(crate) struct Histogram {
    buckets: Box<[AtomicU64]>,
}

impl Histogram {
    pub(crate) fn new() -> Self {
        Self {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn index(us: u64) -> usize {
        if us < SUB as u64 {
            return us as usize;
        }
        let msb = 63 - us.leading_zeros();
        let sub = ((us >> (msb - SUB_BITS)) & (SUB as u64 - 1)) as usize;
        (((msb - SUB_BITS + 1) as usize) * SUB + sub).min(BUCKETS - 1)
    }

    /// The largest value that lands in bucket `i`.
    fn upper(i: usize) -> u64 {
        if i < SUB {
            return i as u64;
        }
        let shift = (i / SUB - 1) as u32;
        let sub = (i % SUB) as u64;
        ((SUB as u64 + sub + 1) << shift) - 1
    }

    pub(crate) fn record(&self, latency: Duration) {
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.buckets[Self::index(us)].fetch_add(1, Relaxed);
    }

    /// How many values are at most each of `bounds` (ascending), counting
    /// a bucket when its upper bound is within the bound (so a count may
    /// leave out values up to a quarter below a bound), and the total.
    pub(crate) fn cumulative(&self, bounds: &[Duration]) -> (Vec<u64>, u64) {
        let counts: Vec<u64> = self.buckets.iter().map(|b| b.load(Relaxed)).collect();
        let total = counts.iter().sum();
        let at_most = bounds
            .iter()
            .map(|bound| {
                let us = u64::try_from(bound.as_micros()).unwrap_or(u64::MAX);
                counts
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| Self::upper(*i) <= us)
                    .map(|(_, c)| c)
                    .sum()
            })
            .collect();
        (at_most, total)
    }

    /// The `q` quantile (0..=1), as the upper bound of its bucket; `None`
    /// before anything was recorded.
    pub(crate) fn quantile(&self, q: f64) -> Option<Duration> {
        let counts: Vec<u64> = self.buckets.iter().map(|b| b.load(Relaxed)).collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (i, count) in counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Some(Duration::from_micros(Self::upper(i)));
            }
        }
        None
    }
}

/// The bounds [`ServerStats::latency_buckets`] counts calls under (the
/// usual Prometheus ones).
pub const LATENCY_BOUNDS: [Duration; 12] = [
    Duration::from_millis(1),
    Duration::from_millis(5),
    Duration::from_millis(10),
    Duration::from_millis(25),
    Duration::from_millis(50),
    Duration::from_millis(100),
    Duration::from_millis(250),
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_secs(5),
    Duration::from_secs(10),
    Duration::from_secs(60),
];

/// The live counters of one server.
pub(crate) struct Stats {
    pub(crate) calls: AtomicU64,
    pub(crate) errors: AtomicU64,
    pub(crate) timeouts: AtomicU64,
    pub(crate) reconnects: AtomicU64,
    pub(crate) in_flight: AtomicU64,
    pub(crate) latency: Histogram,
    /// The sum of every recorded latency, in microseconds.
    pub(crate) latency_sum_us: AtomicU64,
}

impl Stats {
    pub(crate) fn new() -> Self {
        Self {
            calls: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
            reconnects: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            latency: Histogram::new(),
            latency_sum_us: AtomicU64::new(0),
        }
    }

    pub(crate) fn snapshot(&self) -> ServerStats {
        ServerStats {
            calls: self.calls.load(Relaxed),
            errors: self.errors.load(Relaxed),
            timeouts: self.timeouts.load(Relaxed),
            reconnects: self.reconnects.load(Relaxed),
            in_flight: self.in_flight.load(Relaxed),
            p50: self.latency.quantile(0.50),
            p95: self.latency.quantile(0.95),
            p99: self.latency.quantile(0.99),
            bytes_sent: None,
            bytes_received: None,
            latency_buckets: {
                let (at_most, _) = self.latency.cumulative(&LATENCY_BOUNDS);
                LATENCY_BOUNDS.iter().copied().zip(at_most).collect()
            },
            latency_sum: Duration::from_micros(self.latency_sum_us.load(Relaxed)),
        }
    }
}

/// Counts one call in flight for as long as it lives.
pub(crate) struct InFlight<'a>(&'a Stats);

impl<'a> InFlight<'a> {
    pub(crate) fn new(stats: &'a Stats) -> Self {
        stats.in_flight.fetch_add(1, Relaxed);
        Self(stats)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Relaxed);
    }
}

/// What a server's calls have done so far, read with
/// [`Hub::stats`](super::Hub::stats).
///
/// Latency percentiles come from a log-linear histogram with four buckets
/// per power of two, so each is an upper bound within 25 % of the true
/// value. `bytes_*` are `None`: the client library does not count the
/// bytes its transports move (a `MessageSink` sees whole messages, but the
/// hub only holds the typed `Client`, which exposes no such counter).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerStats {
    /// Tool calls finished (successful or not).
    pub calls: u64,
    /// Calls that ended in an error (a tool result with `isError: true` is
    /// data, not an error).
    pub errors: u64,
    /// Calls that timed out (also counted in `errors`).
    pub timeouts: u64,
    /// Successful reconnections after an unexpected close.
    pub reconnects: u64,
    /// Calls under way now.
    pub in_flight: u64,
    /// Median latency.
    pub p50: Option<Duration>,
    /// 95th percentile latency.
    pub p95: Option<Duration>,
    /// 99th percentile latency.
    pub p99: Option<Duration>,
    /// Bytes sent, when the transport counts them (never, yet).
    pub bytes_sent: Option<u64>,
    /// Bytes received, when the transport counts them (never, yet).
    pub bytes_received: Option<u64>,
    /// Calls that took at most each of [`LATENCY_BOUNDS`] (cumulative, for
    /// a Prometheus histogram; within a quarter of the bound).
    pub latency_buckets: Vec<(Duration, u64)>,
    /// All calls' latencies added up.
    pub latency_sum: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_and_bound_it_within_a_quarter() {
        for us in (0..5000u64).chain([1 << 20, (1 << 20) + 12345, u64::MAX / 4]) {
            let i = Histogram::index(us);
            let upper = Histogram::upper(i);
            assert!(upper >= us || i == BUCKETS - 1, "{us} -> {i} -> {upper}");
            if i > 0 && i < BUCKETS - 1 {
                assert!(
                    Histogram::upper(i - 1) < us,
                    "{us} also fits bucket {}",
                    i - 1
                );
                assert!(upper as f64 <= us as f64 * 1.25 + 1.0, "{us} -> {upper}");
            }
        }
    }

    #[test]
    fn percentiles_follow_the_recorded_distribution() {
        let h = Histogram::new();
        assert_eq!(h.quantile(0.5), None);
        for _ in 0..90 {
            h.record(Duration::from_millis(1));
        }
        for _ in 0..9 {
            h.record(Duration::from_millis(100));
        }
        h.record(Duration::from_secs(2));
        let p50 = h.quantile(0.5).unwrap();
        let p95 = h.quantile(0.95).unwrap();
        let p99 = h.quantile(0.99).unwrap();
        let p100 = h.quantile(1.0).unwrap();
        assert!(p50 >= Duration::from_millis(1) && p50 <= Duration::from_micros(1250));
        assert!(p95 >= Duration::from_millis(100) && p95 <= Duration::from_millis(125));
        assert!(p99 >= Duration::from_millis(100) && p99 <= Duration::from_millis(125));
        assert!(p100 >= Duration::from_secs(2) && p100 <= Duration::from_millis(2500));
    }
}
