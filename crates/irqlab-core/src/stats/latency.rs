//! Latency histogram: HDR, 3 significant digits, 1 ns to 100 s, fixed size
//! however long the run.

use crate::stats::summary::LatencyUs;
use hdrhistogram::Histogram;

pub struct LatencyHistogram {
    h: Histogram<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    pub fn new() -> Self {
        LatencyHistogram { h: Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid bounds") }
    }
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.h.saturating_record(ns.max(1));
    }
    pub fn reset(&mut self) {
        self.h.reset();
    }
    pub fn len(&self) -> u64 {
        self.h.len()
    }
    pub fn is_empty(&self) -> bool {
        self.h.is_empty()
    }
    pub fn summary_us(&self) -> LatencyUs {
        if self.h.is_empty() {
            return LatencyUs::default();
        }
        let q = |p: f64| Some(self.h.value_at_quantile(p) as f64 / 1e3);
        LatencyUs { mean: Some(self.h.mean() / 1e3), p50: q(0.5), p95: q(0.95), p99: q(0.99), p999: q(0.999) }
    }
}
