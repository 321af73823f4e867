//! What a run reports: one JSON object (`--json`) or a short readable
//! summary. Field names are stable; tools read them.

use serde::Serialize;

use crate::stats::Stats;

/// Latency percentiles in microseconds (from the HDR histogram, 3
/// significant digits); `None` (JSON `null`) when there is no sample.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencyUs {
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    pub max: Option<f64>,
}

impl LatencyUs {
    pub fn from_stats(s: &Stats) -> Self {
        Self::from_histogram(&s.latency_ns)
    }

    pub fn from_histogram(h: &hdrhistogram::Histogram<u64>) -> Self {
        if h.is_empty() {
            return LatencyUs::default();
        }
        let us = |ns: f64| Some(round3(ns / 1e3));
        LatencyUs {
            mean: us(h.mean()),
            p50: us(h.value_at_quantile(0.50) as f64),
            p95: us(h.value_at_quantile(0.95) as f64),
            p99: us(h.value_at_quantile(0.99) as f64),
            p999: us(h.value_at_quantile(0.999) as f64),
            max: us(h.max() as f64),
        }
    }
}

/// The preload phase.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Preload {
    /// Keys set (the key space).
    pub keys: u64,
    /// Sets that failed.
    pub errors: u64,
    pub seconds: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// `"closed"` or `"open"`.
    pub mode: &'static str,
    pub server: String,
    /// Measured replies per second of the measured window.
    pub achieved_qps: f64,
    /// The target rate (open loop; `null` in closed loop).
    pub offered_qps: Option<f64>,
    /// Measured replies (latency samples): hits, misses and stores.
    pub requests: u64,
    /// Error replies, wrong replies, broken streams, lost requests (never
    /// latency samples), warm-up included.
    pub errors: u64,
    /// Gets among `requests` that found no value.
    pub misses: u64,
    /// Requests sent or scheduled before the end of the measured window
    /// (warm-up included) still unanswered at the drain deadline.
    pub timeouts: u64,
    pub latency_us: LatencyUs,
    /// Where a latency sample starts: `"write"` in closed loop (just before
    /// the request's `write`, to just after the `read` of its reply: the
    /// client's own turnaround between a reply and the next request is not
    /// in it), `"schedule"` in open loop (the request's send time fixed in
    /// advance, so a late send is charged).
    pub latency_from: &'static str,
    /// Open loop: lateness of the sends against their schedule (same
    /// fields as `latency_us`; `null` in closed loop). Included in
    /// `latency_us`, which counts from the scheduled time.
    pub send_lag_us: Option<LatencyUs>,
    /// Length of the measured window, seconds (shorter than `--duration`
    /// when `--requests` ended the run).
    pub duration_s: f64,
    pub warmup_s: f64,
    pub connections: u32,
    pub depth: u32,
    pub threads: u32,
    /// `"exponential"` or `"fb_ia"` (open loop; `null` in closed loop).
    pub interarrival: Option<&'static str>,
    pub get_fraction: f64,
    pub records: u64,
    /// Bytes, or `"etc"`.
    pub key_size: serde_json::Value,
    pub value_size: serde_json::Value,
    pub seed: u64,
    /// Open loop: microseconds polled before each send time (0: sleep).
    pub spin_us: u32,
    /// Open loop: microseconds within which due requests are sent together
    /// (0: none early).
    pub batch_us: u32,
    /// `"duration"`, `"requests"` or `"connections"` (all failed).
    pub stopped_by: &'static str,
    /// The generator's own CPU time (user + system, all threads) over the
    /// timed phase (warm-up, measured window and drain), seconds.
    pub cpu_s: f64,
    /// `cpu_s` per reply handled in that phase, microseconds.
    pub cpu_us_per_request: Option<f64>,
    /// Replies handled in the timed phase (the denominator above).
    pub replies_total: u64,
    pub connections_failed: u32,
    /// The first error, described (`null` if none).
    pub first_error: Option<String>,
    /// `null` with `--no-preload`.
    pub preload: Option<Preload>,
}

pub fn round3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

fn opt(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |v| format!("{v:.1}"))
}

/// `1234567` → `1,234,567`.
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

impl Report {
    /// Why the run measured nothing, if the server left every request of
    /// the measured window unanswered: no latency sample, only timeouts. A
    /// run that got replies, even wrong ones (counted as errors), is not
    /// such a run.
    pub fn unanswered(&self) -> Option<String> {
        (self.requests == 0 && self.timeouts > 0).then(|| {
            format!(
                "the server at {} answered no request of the measured window: {} timed out, none was measured",
                self.server, self.timeouts
            )
        })
    }

    /// Why the run cannot be trusted although it measured something: some
    /// replies failed their checks (error replies, wrong keys or data,
    /// broken streams, lost requests), in the preload or the load.
    pub fn failed_checks(&self) -> Option<String> {
        let preload = self.preload.as_ref().map_or(0, |p| p.errors);
        let n = self.errors + preload;
        (n > 0).then(|| {
            let first = self.first_error.as_deref().unwrap_or("not recorded");
            format!("{n} replies from {} failed their checks (first: {first})", self.server)
        })
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("report serializes")
    }

    /// A few readable lines.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let load = match (self.offered_qps, self.interarrival) {
            (Some(q), Some(ia)) => {
                format!("open loop at {} QPS ({ia})", thousands(q.round() as u64))
            }
            _ => "closed loop".to_string(),
        };
        s += &format!(
            "irqlab-loadgen: {load}, {} connections x depth {}, {} thread{}, server {}\n",
            self.connections,
            self.depth,
            self.threads,
            if self.threads == 1 { "" } else { "s" },
            self.server
        );
        if let Some(p) = &self.preload {
            s += &format!(
                "  preload      {} keys in {:.3} s, {} errors\n",
                thousands(p.keys),
                p.seconds,
                p.errors
            );
        }
        s += &format!(
            "  requests     {} in {:.3} s = {} QPS (stopped by {})\n",
            thousands(self.requests),
            self.duration_s,
            thousands(self.achieved_qps.round() as u64),
            self.stopped_by
        );
        let l = &self.latency_us;
        s += &format!(
            "  latency us   mean {}  p50 {}  p95 {}  p99 {}  p99.9 {}  max {}  (from the {})\n",
            opt(l.mean),
            opt(l.p50),
            opt(l.p95),
            opt(l.p99),
            opt(l.p999),
            opt(l.max),
            if self.latency_from == "write" { "request's write to its reply's read" } else { "scheduled send time" }
        );
        if let Some(l) = &self.send_lag_us {
            s += &format!(
                "  send lag us  mean {}  p50 {}  p99 {}  max {}  (sends behind schedule)\n",
                opt(l.mean),
                opt(l.p50),
                opt(l.p99),
                opt(l.max)
            );
        }
        s += &format!(
            "  errors {}  misses {}  timeouts {}  failed connections {}\n",
            self.errors, self.misses, self.timeouts, self.connections_failed
        );
        if self.misses > 0 && self.preload.is_some() {
            s += "  note         gets missed after the preload set every key: the server evicted some (give memcached more -m memory, or use fewer --records)\n";
        }
        if let Some(e) = &self.first_error {
            s += &format!("  first error  {e}\n");
        }
        s += &format!(
            "  generator    {:.3} s CPU = {} us/request",
            self.cpu_s,
            self.cpu_us_per_request
                .map_or_else(|| "-".to_string(), |v| format!("{v:.2}"))
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(round3(1.23456), 1.235);
        let mut st = Stats::default();
        assert_eq!(LatencyUs::from_stats(&st), LatencyUs::default());
        st.record(12_345, false);
        let l = LatencyUs::from_stats(&st);
        assert!((l.p50.unwrap() - 12.345).abs() < 0.02, "{l:?}");
        let j = serde_json::to_value(&l).unwrap();
        assert!(j.get("p999").is_some());
    }
}
