//! What a run reports: one JSON object (`--json`) or a short readable
//! summary. Field names are stable; tools read them.

use serde::Serialize;

use crate::config::MAX_MISS_FRACTION;
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
    /// What the run's exit status says, in a word: `"ok"` (0);
    /// `"unanswered"`, `"failed_checks"`, `"server_behind"`,
    /// `"measured_nothing"`, `"mostly_misses"` (1); `"behind_schedule"`
    /// (3). The first that holds, in that order.
    pub verdict: &'static str,
    /// Why the run failed: the sentence the command prints on stderr
    /// (`null` when `verdict` is `"ok"`).
    pub failure: Option<String>,
    /// The command's exit status for this report.
    pub exit_status: u8,
    /// `"closed"` or `"open"`.
    pub mode: &'static str,
    pub server: String,
    /// Replies read during the measured window per second of it, whenever
    /// their requests were sent (with `--requests`: the measured replies
    /// over the window, which ends when the last is in).
    pub achieved_qps: f64,
    /// The target rate (open loop; `null` in closed loop).
    pub offered_qps: Option<f64>,
    /// Measured replies (latency samples): hits, misses and stores.
    pub requests: u64,
    /// Error replies, wrong replies, broken streams, lost requests (never
    /// latency samples), warm-up included.
    pub errors: u64,
    /// Gets among `requests` (hits and misses).
    pub gets: u64,
    /// Gets among `requests` that found no value.
    pub misses: u64,
    /// `misses` over `gets` (0 without gets). More than a half after a
    /// preload, and the run fails (`"mostly_misses"`) unless
    /// `misses_allowed`.
    pub miss_fraction: f64,
    /// `--allow-misses`: misses are expected. Without a preload misses are
    /// never checked (nothing was set).
    pub misses_allowed: bool,
    /// Requests sent before the end of the measured window (warm-up
    /// included) that waited more than `--timeout-ms` after their write:
    /// `timeouts_answered` + `timeouts_unanswered`.
    pub timeouts: u64,
    /// Of those, the ones answered all the same, later (they are latency
    /// samples too when sent in the window).
    pub timeouts_answered: u64,
    /// Of those, the ones still unanswered at the drain deadline
    /// (`--timeout-ms` after the window).
    pub timeouts_unanswered: u64,
    /// Open loop: requests scheduled before the end of the window and never
    /// written by the drain deadline (0 in closed loop).
    pub unsent: u64,
    /// Of those, the ones whose connection had had a free slot for longer
    /// than `late_us` at the end: the generator's own backlog, counted in
    /// `late`; the others waited for the server and count in
    /// `failed_fraction`.
    pub unsent_backlog: u64,
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
    /// Open loop: the generator's own part of the send lag, from the moment
    /// a request could leave (its scheduled time, or the moment a reply
    /// freed a slot of its connection when all `depth` were taken) to its
    /// write. Read from the reply's read, so a generator slow to read is
    /// charged to the server here.
    pub own_lag_us: Option<LatencyUs>,
    /// Open loop: measured sends whose own lag passed `late_us`, plus the
    /// generator's backlog (`unsent_backlog`).
    pub late: Option<u64>,
    /// Open loop: `late` over the window's sends and unsent requests.
    pub late_fraction: Option<f64>,
    /// Open loop: share of the window's sends that waited for a free slot
    /// (`--connections` x `--depth` too few for this rate at the server's
    /// latency, or a server that fell behind).
    pub slot_wait_fraction: Option<f64>,
    /// Open loop: `late_fraction` at most `max_late` (`null` in closed
    /// loop). When false the latency and the rate are the generator's as
    /// much as the server's; the command exits 3.
    pub schedule_kept: Option<bool>,
    /// Timeouts (answered late or never) and unsent requests that waited
    /// for the server (not the generator's backlog) over all the window's
    /// requests (answered, unanswered, unsent).
    pub failed_fraction: f64,
    /// Share of the window's connection-time during which a connection's
    /// oldest request went unanswered for more than `timeout_ms` (from its
    /// write until its reply or the drain deadline).
    pub stalled_fraction: f64,
    /// The server answered every request of the run correctly and in
    /// time: no reply failed its checks (error replies such as
    /// `SERVER_ERROR`, wrong data, closed or reset connections, in the
    /// preload or the load), and `failed_fraction` and `stalled_fraction`
    /// both at most `max_failed`; when false the command exits 1.
    pub server_kept_up: bool,
    pub timeout_ms: u32,
    pub late_us: u32,
    pub max_late: f64,
    pub max_failed: f64,
    /// Wall time of the timed phase: warm-up, window and drain, seconds.
    pub elapsed_s: f64,
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

pub fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// Exit status of a run whose open loop fell behind its schedule.
pub const EXIT_BEHIND: u8 = 3;

/// A fraction as a percentage with enough digits to tell it from 0.
fn pct(x: f64) -> String {
    if x == 0.0 || x >= 0.1 {
        format!("{:.1} %", x * 100.0)
    } else {
        format!("{:.2} %", x * 100.0)
    }
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
    /// such a run, nor one that sent nothing (the generator's failure).
    pub fn unanswered(&self) -> Option<String> {
        (self.requests == 0 && self.timeouts_unanswered > 0).then(|| {
            let unsent = if self.unsent > 0 {
                format!(" and {} were never sent", thousands(self.unsent))
            } else {
                String::new()
            };
            let answered = self.answered_late(" (");
            let answered = if answered.is_empty() { answered } else { answered + ")" };
            format!(
                "the server at {} answered no request of the measured window: {} timed out{answered}{unsent}, none was measured",
                self.server,
                thousands(self.timeouts)
            )
        })
    }

    /// How many of the timeouts were answered all the same, after
    /// `--timeout-ms`, after `lead` ("" if none).
    fn answered_late(&self, lead: &str) -> String {
        let ms = thousands(u64::from(self.timeout_ms));
        match self.timeouts_answered {
            0 => String::new(),
            n if n == self.timeouts => format!("{lead}all answered later than {ms} ms"),
            n => format!("{lead}{} of them answered later than {ms} ms", thousands(n)),
        }
    }

    /// Why the open loop's figures are the generator's as much as the
    /// server's: it sent more than `max_late` of the window's requests
    /// later than `late_us` after they could leave (exit status 3).
    pub fn behind_schedule(&self) -> Option<String> {
        if self.schedule_kept != Some(false) {
            return None;
        }
        let own = self.own_lag_us.as_ref().and_then(|l| l.p99).map_or_else(String::new, |p99| {
            format!(", its own delay p99 {} us", thousands(p99.round() as u64))
        });
        let unsent = if self.unsent_backlog > 0 {
            format!(" and {} never left", thousands(self.unsent_backlog))
        } else {
            String::new()
        };
        Some(format!(
            "the generator could not keep its schedule: {} of the window's requests left more than {} us after they could{own}{unsent} (--max-late {}); it delivered {} QPS of the {} offered",
            pct(self.late_fraction.unwrap_or(0.0)),
            self.late_us,
            self.max_late,
            thousands(self.achieved_qps.round() as u64),
            thousands(self.offered_qps.unwrap_or(0.0).round() as u64),
        ))
    }

    /// Why the server did not keep up although it answered: more than
    /// `max_failed` of the window's requests timed out or never left, or
    /// its connections were stalled longer than that share of the window
    /// (exit status 1).
    pub fn over_budget(&self) -> Option<String> {
        if self.failed_fraction <= self.max_failed && self.stalled_fraction <= self.max_failed {
            return None;
        }
        let mut why = Vec::new();
        if self.failed_fraction > self.max_failed {
            let answered = self.answered_late(", ");
            why.push(format!(
                "{} of the window's requests timed out ({}{answered}) or were never sent for want of a free slot ({})",
                pct(self.failed_fraction),
                thousands(self.timeouts),
                thousands(self.unsent - self.unsent_backlog)
            ));
        }
        if self.stalled_fraction > self.max_failed {
            why.push(format!(
                "its connections were stalled (a request unanswered for more than {} ms) for {} of the window",
                thousands(u64::from(self.timeout_ms)),
                pct(self.stalled_fraction)
            ));
        }
        Some(format!(
            "the server at {} did not keep up: {} (--max-failed {})",
            self.server,
            why.join(", and "),
            self.max_failed
        ))
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

    /// Why the run measured nothing although the server failed no request:
    /// no request sent (or scheduled) in the window was answered, and none
    /// timed out (a window too short for a round trip, or an open-loop
    /// schedule that put no request in it). It printed a report of 0
    /// requests and exited 0 (issue 62, item 12). An open loop that fell
    /// behind its schedule measured nothing because of that, which
    /// [`Report::behind_schedule`] says (a generator starved of CPU sends
    /// nothing in a short window).
    pub fn measured_nothing(&self) -> Option<String> {
        (self.requests == 0 && self.schedule_kept != Some(false)).then(|| {
            let qps = if self.offered_qps.is_some() { ", or a higher --qps" } else { "" };
            format!(
                "the run measured no request: none sent in the {} s window was answered (give a longer --duration{qps})",
                self.duration_s
            )
        })
    }

    /// Why the run did not measure the server it meant to: after a preload
    /// that set every key, more than [`MAX_MISS_FRACTION`] of the measured
    /// gets missed (a server that keeps nothing, or evicts most keys), and
    /// misses were not declared expected with `--allow-misses`.
    pub fn mostly_misses(&self) -> Option<String> {
        (self.preload.is_some() && !self.misses_allowed && self.miss_fraction > MAX_MISS_FRACTION).then(|| {
            format!(
                "{} of the {} measured gets missed (more than half) although the preload set every key: the server \
                 at {} did not keep them (give memcached more -m memory or use fewer --records, or pass \
                 --allow-misses if misses are expected)",
                thousands(self.misses),
                thousands(self.gets),
                self.server
            )
        })
    }

    /// The verdict, the sentence that explains it and the exit status:
    /// the first failure that holds, the server's before the generator's.
    pub fn judge(&self) -> (&'static str, Option<String>, u8) {
        let found = [
            ("unanswered", self.unanswered()),
            ("failed_checks", self.failed_checks()),
            ("server_behind", self.over_budget()),
            ("measured_nothing", self.measured_nothing()),
            ("mostly_misses", self.mostly_misses()),
        ]
        .into_iter()
        .find_map(|(what, why)| why.map(|w| (what, w, 1)))
        .or_else(|| self.behind_schedule().map(|w| ("behind_schedule", w, EXIT_BEHIND)));
        match found {
            Some((what, why, code)) => (what, Some(why), code),
            None => ("ok", None, 0),
        }
    }

    /// Fill in `verdict`, `failure` and `exit_status` from the counts.
    pub fn settle(mut self) -> Self {
        let (verdict, failure, code) = self.judge();
        self.verdict = verdict;
        self.failure = failure;
        self.exit_status = code;
        self
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
            "  requests     {} measured; {} QPS over the {:.3} s window (stopped by {}; the timed phase took {:.3} s)\n",
            thousands(self.requests),
            thousands(self.achieved_qps.round() as u64),
            self.duration_s,
            self.stopped_by,
            self.elapsed_s
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
        if let (Some(l), Some(late), Some(wait)) = (&self.own_lag_us, self.late_fraction, self.slot_wait_fraction) {
            s += &format!(
                "  own lag us   p50 {}  p99 {}  max {}  (the generator's part); {} late by more than {} us, {} waited for a free slot\n",
                opt(l.p50),
                opt(l.p99),
                opt(l.max),
                pct(late),
                self.late_us,
                pct(wait)
            );
        }
        s += &format!(
            "  errors {}  misses {} of {} gets  timeouts {} ({} answered after {} ms, {} never)  unsent {}  failed connections {}  stalled {}\n",
            self.errors,
            self.misses,
            self.gets,
            self.timeouts,
            self.timeouts_answered,
            thousands(u64::from(self.timeout_ms)),
            self.timeouts_unanswered,
            self.unsent,
            self.connections_failed,
            pct(self.stalled_fraction)
        );
        if let Some(wait) = self.slot_wait_fraction.filter(|&w| w > self.max_late) {
            s += &format!(
                "  note         {} of the sends waited for a free slot: the server's pace (or --connections x --depth too few at its latency) held them back, so the rate is the server's\n",
                pct(wait)
            );
        }
        if self.misses > 0 && self.preload.is_some() && self.miss_fraction <= MAX_MISS_FRACTION {
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
        st.record(12_345, Some(false));
        let l = LatencyUs::from_stats(&st);
        assert!((l.p50.unwrap() - 12.345).abs() < 0.02, "{l:?}");
        let j = serde_json::to_value(&l).unwrap();
        assert!(j.get("p999").is_some());
        assert_eq!((pct(0.0), pct(0.0004), pct(0.123)), ("0.0 %".into(), "0.04 %".into(), "12.3 %".into()));
    }

    fn open_report() -> Report {
        Report {
            verdict: "ok",
            failure: None,
            exit_status: 0,
            mode: "open",
            server: "127.0.0.1:11211".into(),
            achieved_qps: 30_123.0,
            offered_qps: Some(50_000.0),
            requests: 90_000,
            errors: 0,
            gets: 90_000,
            misses: 0,
            miss_fraction: 0.0,
            misses_allowed: false,
            timeouts: 0,
            timeouts_answered: 0,
            timeouts_unanswered: 0,
            unsent: 0,
            unsent_backlog: 0,
            latency_us: LatencyUs::default(),
            latency_from: "schedule",
            send_lag_us: Some(LatencyUs::default()),
            own_lag_us: Some(LatencyUs { p99: Some(13_000.4), ..LatencyUs::default() }),
            late: Some(11_070),
            late_fraction: Some(0.123),
            slot_wait_fraction: Some(0.0),
            schedule_kept: Some(false),
            failed_fraction: 0.0,
            stalled_fraction: 0.0,
            server_kept_up: true,
            timeout_ms: 2000,
            late_us: 1000,
            max_late: 0.01,
            max_failed: 0.01,
            elapsed_s: 5.08,
            duration_s: 3.0,
            warmup_s: 0.0,
            connections: 8,
            depth: 1,
            threads: 1,
            interarrival: Some("exponential"),
            get_fraction: 1.0,
            records: 10,
            key_size: serde_json::Value::Null,
            value_size: serde_json::Value::Null,
            seed: 1,
            spin_us: 0,
            batch_us: 0,
            stopped_by: "duration",
            cpu_s: 1.0,
            cpu_us_per_request: Some(10.0),
            replies_total: 90_000,
            connections_failed: 0,
            first_error: None,
            preload: None,
        }
    }

    #[test]
    fn verdicts_say_who_fell_behind_in_one_sentence() {
        let r = open_report();
        let why = r.behind_schedule().unwrap();
        assert_eq!(
            why,
            "the generator could not keep its schedule: 12.3 % of the window's requests left more than 1000 us \
             after they could, its own delay p99 13,000 us (--max-late 0.01); it delivered 30,123 QPS of the 50,000 offered"
        );
        assert!(r.over_budget().is_none() && r.unanswered().is_none());
        let text = r.to_text();
        assert!(text.contains("30,123 QPS over the 3.000 s window") && text.contains("took 5.080 s"), "{text}");

        let r = Report {
            schedule_kept: Some(true),
            server_kept_up: false,
            failed_fraction: 0.156,
            timeouts: 1_000,
            timeouts_unanswered: 1_000,
            unsent: 37_568,
            stalled_fraction: 0.5,
            ..open_report()
        };
        assert!(r.behind_schedule().is_none());
        assert_eq!(
            r.over_budget().unwrap(),
            "the server at 127.0.0.1:11211 did not keep up: 15.6 % of the window's requests timed out (1,000) \
             or were never sent for want of a free slot (37,568), and its connections were stalled (a request unanswered for more than \
             2,000 ms) for 50.0 % of the window (--max-failed 0.01)"
        );
        let none = Report { requests: 0, ..r };
        assert!(none.unanswered().unwrap().contains("1,000 timed out and 37,568 were never sent"));
    }

    #[test]
    fn the_verdict_names_the_first_failure_and_agrees_with_the_exit_status() {
        let kept = Report { schedule_kept: Some(true), ..open_report() };
        assert_eq!(kept.judge(), ("ok", None, 0));
        let behind = open_report().settle();
        assert_eq!((behind.verdict, behind.exit_status), ("behind_schedule", 3));
        assert_eq!(behind.failure, behind.behind_schedule());
        // Gets that mostly miss after a preload fail, the server's failure
        // before the generator's lateness; --allow-misses or no preload
        // accepts them.
        let preload = Some(Preload { keys: 10, errors: 0, seconds: 0.1 });
        let missing = Report { misses: 45_001, miss_fraction: 0.500011, preload: preload.clone(), ..open_report() };
        let (what, why, code) = missing.judge();
        assert_eq!((what, code), ("mostly_misses", 1));
        assert!(why.unwrap().starts_with("45,001 of the 90,000 measured gets missed (more than half) although the preload"));
        assert_eq!(Report { misses_allowed: true, ..missing.clone() }.judge().0, "behind_schedule");
        assert_eq!(Report { preload: None, ..missing.clone() }.judge().0, "behind_schedule");
        let half = Report { misses: 45_000, miss_fraction: 0.5, schedule_kept: Some(true), preload, ..open_report() };
        assert_eq!(half.judge().0, "ok");
        // Error replies outrank misses; nothing measured is a failure too.
        let errors = Report { errors: 3, first_error: Some("x".into()), ..missing };
        assert_eq!(errors.judge().0, "failed_checks");
        let nothing = Report { requests: 0, schedule_kept: Some(true), ..open_report() };
        let (what, why, code) = nothing.judge();
        assert_eq!((what, code), ("measured_nothing", 1));
        // ... unless the generator fell behind: then that is why.
        let starved = Report { requests: 0, ..open_report() };
        assert_eq!(starved.judge().0, "behind_schedule");
        assert_eq!(
            why.unwrap(),
            "the run measured no request: none sent in the 3 s window was answered (give a longer --duration, or a higher --qps)"
        );
        // A reply after --timeout-ms is a timeout, named as answered.
        let late = Report {
            timeouts: 6,
            timeouts_answered: 5,
            timeouts_unanswered: 1,
            failed_fraction: 1.0,
            timeout_ms: 200,
            ..open_report()
        };
        assert_eq!(late.judge().0, "server_behind");
        assert!(late.over_budget().unwrap().contains("timed out (6, 5 of them answered later than 200 ms)"));
        assert!(late.to_text().contains("timeouts 6 (5 answered after 200 ms, 1 never)"));
        let silent = Report { requests: 0, unsent: 0, ..late };
        assert!(silent
            .unanswered()
            .unwrap()
            .ends_with("window: 6 timed out (5 of them answered later than 200 ms), none was measured"));
    }
}
