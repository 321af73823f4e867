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
    /// Open loop: the part of each measured request's send lag that was
    /// the generator's own, from the moment it could have left (its
    /// scheduled time, or later the moment a reply freed a `--depth` slot
    /// of a connection that had all taken) to its write.
    pub own_lag_ns: Histogram<u64>,
    /// Open loop: measured requests written (on time, late or early).
    pub sends: u64,
    /// Open loop: of those, the ones whose own lag passed `--late-us`, plus
    /// the generator's backlog (`unsent_backlog`).
    pub late: u64,
    /// Open loop: measured requests that waited for a free `--depth` slot.
    pub slot_waits: u64,
    /// Open loop: measured requests (scheduled in the window) never written
    /// by the end of the drain.
    pub unsent: u64,
    /// Of those, the ones whose connection had had a free slot for longer
    /// than `--late-us` at the end: the generator's backlog (the others
    /// waited for the server).
    pub unsent_backlog: u64,
    /// Connection-time inside the measured window during which a
    /// connection's oldest request had gone, or would go, unanswered for
    /// longer than `--timeout-ms`, ns summed over connections.
    pub stalled_ns: u64,
    /// Replies (other than failures) read during the measured window,
    /// whenever their request was sent: the throughput's numerator.
    pub window_replies: u64,
    /// Measured replies that are samples (hits, misses, stores).
    pub requests: u64,
    /// Of those, gets (hits and misses).
    pub gets: u64,
    /// Of those, gets that missed.
    pub misses: u64,
    /// Error replies, wrong replies, broken streams and requests lost with a
    /// failed connection, from the start of the timed phase on (warm-up
    /// included: an error is never benign).
    pub errors: u64,
    /// Requests sent or scheduled before the end of the measured window
    /// (warm-up included) still unanswered when the drain timeout ran out.
    pub timeouts: u64,
    /// Requests of the same span answered, but more than `--timeout-ms`
    /// after their write (a timeout too: the flag's meaning).
    pub timeouts_answered: u64,
    /// Of those, the ones that are latency samples too (sent in the
    /// measured window): counted once in the failed share's denominator.
    pub timeouts_answered_sampled: u64,
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
            own_lag_ns: Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid bounds"),
            sends: 0,
            late: 0,
            slot_waits: 0,
            unsent: 0,
            unsent_backlog: 0,
            stalled_ns: 0,
            window_replies: 0,
            requests: 0,
            gets: 0,
            misses: 0,
            errors: 0,
            timeouts: 0,
            timeouts_answered: 0,
            timeouts_answered_sampled: 0,
            replies: 0,
            connections_failed: 0,
            first_error: None,
        }
    }
}

impl Stats {
    /// One measured reply: a get (`Some(missed)`) or a store (`None`).
    pub fn record(&mut self, latency_ns: u64, get: Option<bool>) {
        self.latency_ns
            .saturating_record(latency_ns.clamp(1, MAX_LATENCY_NS));
        self.requests += 1;
        self.gets += u64::from(get.is_some());
        self.misses += u64::from(get == Some(true));
    }

    /// One measured open-loop request written `lag_ns` after its
    /// scheduled time, `own_ns` of it after it could have left.
    pub fn record_send(&mut self, lag_ns: u64, own_ns: u64, late_ns: u64) {
        self.send_lag_ns
            .saturating_record(lag_ns.clamp(1, MAX_LATENCY_NS));
        self.own_lag_ns
            .saturating_record(own_ns.clamp(1, MAX_LATENCY_NS));
        self.sends += 1;
        self.late += u64::from(own_ns > late_ns);
        self.slot_waits += u64::from(own_ns < lag_ns);
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
        self.own_lag_ns
            .add(&other.own_lag_ns)
            .expect("same bounds");
        self.sends += other.sends;
        self.late += other.late;
        self.slot_waits += other.slot_waits;
        self.unsent += other.unsent;
        self.unsent_backlog += other.unsent_backlog;
        self.stalled_ns += other.stalled_ns;
        self.window_replies += other.window_replies;
        self.requests += other.requests;
        self.gets += other.gets;
        self.misses += other.misses;
        self.errors += other.errors;
        self.timeouts += other.timeouts;
        self.timeouts_answered += other.timeouts_answered;
        self.timeouts_answered_sampled += other.timeouts_answered_sampled;
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
        a.record(10_000, Some(false));
        a.record(0, Some(true));
        b.record(u64::MAX, None);
        b.error(|| "first".into());
        b.error(|| "second".into());
        a.merge(&b);
        assert_eq!((a.requests, a.gets, a.misses, a.errors), (3, 2, 1, 2));
        assert_eq!(a.first_error.as_deref(), Some("first"));
        assert_eq!(a.latency_ns.len(), 3);
        assert_eq!(a.latency_ns.min(), 1);
        assert!(a.latency_ns.max() >= MAX_LATENCY_NS);
    }

    #[test]
    fn a_send_is_late_by_its_own_lag_only() {
        let mut s = Stats::default();
        s.record_send(50_000, 50_000, 1_000_000); // late, its own doing, under the bound
        s.record_send(5_000_000, 10_000, 1_000_000); // waited for a slot, then left promptly
        s.record_send(3_000_000, 2_000_000, 1_000_000); // 1 ms for a slot, then 2 ms its own
        assert_eq!((s.sends, s.late, s.slot_waits), (3, 1, 2));
        assert_eq!(s.send_lag_ns.len(), 3);
        assert!(s.own_lag_ns.max() >= 2_000_000 && s.own_lag_ns.max() < 2_010_000);
    }
}
