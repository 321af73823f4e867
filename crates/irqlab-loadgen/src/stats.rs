//! What a worker counts. Latency samples go to an HDR histogram in
//! nanoseconds with 3 significant digits (as the simulator's, so figures
//! compare); everything else is a plain counter. Workers count privately and
//! are merged once at the end.

use hdrhistogram::Histogram;

/// Largest latency recorded exactly, ns (100 s, far beyond any run's hard
/// time bound); larger values are recorded as this.
pub const MAX_LATENCY_NS: u64 = 100_000_000_000;

#[derive(Clone, Debug)]
pub struct Stats {
    pub latency_ns: Histogram<u64>,
    /// Open loop: how late each measured request left the generator
    /// relative to its scheduled time (waiting for a free `--depth` slot,
    /// or the generator's own delay). Large values mean the generator, not
    /// the server, shaped the latency.
    pub send_lag_ns: Histogram<u64>,
    /// Measured replies that are samples (hits, misses, stores).
    pub requests: u64,
    /// Of those, gets that missed.
    pub misses: u64,
    /// Error replies, wrong replies, broken streams and requests lost with a
    /// failed connection, from the start of the timed phase on (warm-up
    /// included: an error is never benign).
    pub errors: u64,
    /// Requests sent or scheduled before the end of the measured window
    /// (warm-up included) still unanswered when the drain timeout ran out.
    pub timeouts: u64,
    /// Every reply parsed in the phase (warm-up and drain included): the
    /// denominator of the generator's CPU cost per request.
    pub replies: u64,
    pub connections_failed: u32,
    /// The first error seen, described for the report.
    pub first_error: Option<String>,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            latency_ns: Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid bounds"),
            send_lag_ns: Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid bounds"),
            requests: 0,
            misses: 0,
            errors: 0,
            timeouts: 0,
            replies: 0,
            connections_failed: 0,
            first_error: None,
        }
    }
}

impl Stats {
    pub fn record(&mut self, latency_ns: u64, miss: bool) {
        self.latency_ns
            .saturating_record(latency_ns.clamp(1, MAX_LATENCY_NS));
        self.requests += 1;
        self.misses += u64::from(miss);
    }

    pub fn record_send_lag(&mut self, lag_ns: u64) {
        self.send_lag_ns
            .saturating_record(lag_ns.clamp(1, MAX_LATENCY_NS));
    }

    /// Count one error, keeping the first description.
    pub fn error(&mut self, describe: impl FnOnce() -> String) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(describe());
        }
    }

    pub fn merge(&mut self, other: &Stats) {
        self.latency_ns.add(&other.latency_ns).expect("same bounds");
        self.send_lag_ns
            .add(&other.send_lag_ns)
            .expect("same bounds");
        self.requests += other.requests;
        self.misses += other.misses;
        self.errors += other.errors;
        self.timeouts += other.timeouts;
        self.replies += other.replies;
        self.connections_failed += other.connections_failed;
        if self.first_error.is_none() {
            self.first_error.clone_from(&other.first_error);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_and_merge() {
        let mut a = Stats::default();
        let mut b = Stats::default();
        a.record(10_000, false);
        a.record(0, true);
        b.record(u64::MAX, false);
        b.error(|| "first".into());
        b.error(|| "second".into());
        a.merge(&b);
        assert_eq!((a.requests, a.misses, a.errors), (3, 1, 2));
        assert_eq!(a.first_error.as_deref(), Some("first"));
        assert_eq!(a.latency_ns.len(), 3);
        assert_eq!(a.latency_ns.min(), 1);
        assert!(a.latency_ns.max() >= MAX_LATENCY_NS);
    }
}
