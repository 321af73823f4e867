//! A policy the user brings (`model/policy.rs`): a call changes nothing it
//! does not set, a setting at the first call is the scenario's setting, a
//! setting later changes what follows, and a mistake stops the run with one
//! sentence naming the policy and the knob.

mod common;

use common::result_json;
use irqlab_core::model::policy::{Change, Policy, PolicyError, Sample};
use irqlab_core::{run_with_policy, Error, Scenario, Summary};

const THESIS: &str = include_str!("../../../scenarios/thesis/bare-metal.toml");

/// Sets `first` at its first call and `later` at `later_at_ns`; records
/// every sample's time and counters.
struct Scripted {
    period_ns: u64,
    first: Vec<Change>,
    later: Vec<Change>,
    later_at_ns: u64,
    samples: Vec<Sample>,
}

impl Scripted {
    fn new(period_ns: u64, first: Vec<Change>) -> Self {
        Scripted { period_ns, first, later: Vec::new(), later_at_ns: u64::MAX, samples: Vec::new() }
    }
}

impl Policy for Scripted {
    fn name(&self) -> String {
        "Scripted".into()
    }
    fn period_ns(&self) -> u64 {
        self.period_ns
    }
    fn observe(&mut self, s: &Sample) -> Result<Vec<Change>, PolicyError> {
        let first = self.samples.is_empty();
        let later = s.time_ns == self.later_at_ns;
        self.samples.push(s.clone());
        Ok(if first {
            std::mem::take(&mut self.first)
        } else if later {
            std::mem::take(&mut self.later)
        } else {
            Vec::new()
        })
    }
    fn fields(&mut self) -> Vec<(String, f64)> {
        vec![("samples".into(), self.samples.len() as f64)]
    }
}

fn set(knob: &str, value: u64) -> Change {
    Change { knob: knob.into(), target: None, value }
}

fn thesis(profile: &str, sets: &[&str]) -> Scenario {
    let mut s = Scenario::from_toml_str(THESIS).expect("valid scenario");
    s.set_profile(profile).unwrap();
    for kv in sets {
        s.set_pair(kv).unwrap_or_else(|e| panic!("{kv}: {e}"));
    }
    s
}

fn with_policy(profile: &str, sets: &[&str], p: &mut dyn Policy) -> Result<Summary, Error> {
    run_with_policy(&thesis(profile, sets), p, &mut || false)
}

fn without(profile: &str, sets: &[&str]) -> Summary {
    irqlab_core::run(&thesis(profile, sets)).unwrap()
}

/// Everything the run simulated, without what the simulator did (wall
/// time, events passed) or the policy's own report.
fn simulated(s: &Summary) -> serde_json::Value {
    let mut v = result_json(s);
    v.as_object_mut().unwrap().remove("policy");
    v
}

const SHORT: &[&str] = &["run.duration_s=0.05", "run.warmup_s=0.01"];

#[test]
fn a_policy_that_changes_nothing_changes_nothing() {
    // Every 100 µs the run pauses, the passed busy polls are accounted,
    // the sample is read: none of it may move a statistic. Closed and open
    // loop (below saturation the busy polls are passed by the engine).
    for profile in ["no-coalescing", "busy-wait", "irq-suspend", "adaptive-coalescing"] {
        for open in [false, true] {
            let mut sets = SHORT.to_vec();
            if open {
                sets.push("load.qps=150000");
            }
            let mut p = Scripted::new(100_000, Vec::new());
            let with = with_policy(profile, &sets, &mut p).unwrap();
            let base = without(profile, &sets);
            assert_eq!(simulated(&with), simulated(&base), "{profile}, open loop {open}");
            let r = with.policy.as_ref().unwrap();
            // Time 0, then every 100 µs up to the end (60 ms).
            assert_eq!(r.calls, 600, "{profile}");
            assert_eq!(r.changes, 0);
            assert_eq!(r.fields.get("samples"), Some(&600.0));
            assert!(base.policy.is_none());
        }
    }
}

#[test]
fn a_setting_at_the_first_call_is_the_scenarios_setting() {
    let cases: [(&str, Vec<Change>, &[&str]); 3] = [
        ("no-coalescing", vec![set("rx-usecs", 16), set("rx-frames", 32)], &["coalesce.rx-usecs=16", "coalesce.rx-frames=32"]),
        (
            "no-coalescing",
            vec![set("defer-hard-irqs", 20), set("gro-flush-timeout", 50_000)],
            &["napi.napi_defer_hard_irqs=20", "napi.gro_flush_timeout=50000"],
        ),
        (
            "irq-suspend",
            vec![set("irq-suspend-timeout", 2_000_000), set("busy_poll_usecs", 20)],
            &["napi.irq_suspend_timeout=2000000", "epoll.busy_poll_usecs=20"],
        ),
    ];
    for (profile, first, statically) in cases {
        let mut p = Scripted::new(250_000, first);
        let with = with_policy(profile, SHORT, &mut p).unwrap();
        let base = without(profile, &[SHORT, statically].concat());
        assert_eq!(simulated(&with), simulated(&base), "{profile}: {statically:?}");
        // And it is a change: the profile's own values give another run.
        assert_ne!(simulated(&with), simulated(&without(profile, SHORT)), "{statically:?} changes the run");
        let r = with.policy.unwrap();
        assert_eq!(r.changes, 2 * 8, "two knobs on each of 8 queues, NAPIs or threads");
        assert_eq!(r.decisions.len(), 2);
        assert_eq!(r.decisions[0].time_us, 0.0);
    }
}

#[test]
fn the_82599s_rate_set_at_the_first_call_is_the_scenarios_static_rate() {
    // ixgbe's dynamic ITR (the driver's default) until the policy sets a
    // static rate, as `ethtool -C rx-usecs` does: the same run as
    // `itr.policy = "static"` at that rate.
    let nic = ["nic.kind=\"82599\"", "itr.policy=\"ixgbe\""];
    let mut p = Scripted::new(250_000, vec![set("InterruptThrottleRate", 8_000)]);
    let with = with_policy("no-coalescing", &[SHORT, &nic].concat(), &mut p).unwrap();
    let base = without("no-coalescing", &[SHORT, &["nic.kind=\"82599\"", "itr.policy=\"static\"", "itr.rate=8000"]].concat());
    assert_eq!(simulated(&with), simulated(&base));
    assert_ne!(simulated(&with), simulated(&without("no-coalescing", &[SHORT, &nic].concat())));
    // (1000000 / 8000) << 2 = 500 quarter-µs; the 82599 keeps bits 11:3,
    // 496 × 256 ns.
    assert_eq!(p.samples[1].queues[0].itr_interval_ns, Some(496 * 256));
    assert_eq!(p.samples[1].queues[0].rx_usecs, None);
    let mut q = Scripted::new(250_000, vec![set("InterruptThrottleRate", 500)]);
    let e = with_policy("no-coalescing", &[SHORT, &nic].concat(), &mut q);
    assert!(matches!(e, Err(Error::Policy(m)) if m.contains("must be between 978 and 488281 (got 500)")));
    let mut q = Scripted::new(250_000, vec![set("InterruptThrottleRate", 8_000)]);
    let e = with_policy("no-coalescing", SHORT, &mut q);
    assert!(matches!(e, Err(Error::Policy(m)) if m.contains("the ConnectX-4")));
}

#[test]
fn a_setting_later_changes_what_follows_and_only_that() {
    // No coalescing, then at 20 ms rx-usecs 64 on queue 0 only: fewer
    // interrupts after, the same as without the policy before.
    let mut p = Scripted::new(1_000_000, Vec::new());
    p.later = vec![Change { knob: "rx-usecs".into(), target: Some(0), value: 64 }];
    p.later_at_ns = 20_000_000;
    let sets = ["run.duration_s=0.03", "run.warmup_s=0.01"];
    let with = with_policy("no-coalescing", &sets, &mut p).unwrap();
    let base = without("no-coalescing", &sets);
    assert!(with.irqs_per_s < base.irqs_per_s, "{} < {}", with.irqs_per_s, base.irqs_per_s);
    let r = with.policy.unwrap();
    assert_eq!((r.changes, r.decisions[0].target, r.decisions[0].time_us), (1, Some(0), 20_000.0));

    // The samples up to 20 ms are those of the run without the change.
    let mut q = Scripted::new(1_000_000, Vec::new());
    with_policy("no-coalescing", &sets, &mut q).unwrap();
    for (a, b) in p.samples.iter().zip(&q.samples).take(21) {
        assert_eq!((a.time_ns, a.hard_irqs, a.packets), (b.time_ns, b.hard_irqs, b.packets));
    }
    assert_ne!(p.samples[30].hard_irqs, q.samples[30].hard_irqs);
}

#[test]
fn the_sample_counts_from_the_start_and_agrees_with_the_summary() {
    let mut p = Scripted::new(1_000_000, Vec::new());
    with_policy("busy-wait", &["run.duration_s=0.02", "run.warmup_s=0.005"], &mut p).unwrap();
    let samples = &p.samples;
    assert_eq!(samples.len(), 25, "time 0, then every ms before the end (25 ms)");
    assert!(samples.windows(2).all(|w| w[1].packets >= w[0].packets && w[1].requests_completed >= w[0].requests_completed));
    assert!(samples[3].packets > 0 && !samples[3].measuring, "the warm-up counts");
    assert!(samples[5].measuring);
    // The same run ended at 24 ms: its window (5 ms to 24 ms) is what the
    // samples at 5 and 24 ms say.
    let s = without("busy-wait", &["run.duration_s=0.019", "run.warmup_s=0.005"]);
    let done = samples[24].requests_completed - samples[5].requests_completed;
    assert_eq!(done, s.requests_completed);
    let mean_us = (samples[24].latency_sum_ns - samples[5].latency_sum_ns) as f64 / done as f64 / 1e3;
    let want = s.latency_us.mean.unwrap();
    // The summary's mean is its histogram's: values kept to three
    // significant digits (stats/latency.rs), so a tenth of a percent.
    assert!((mean_us - want).abs() < 1e-3 * want, "{mean_us} vs {want}");
    let irqs_per_s = (samples[24].hard_irqs - samples[5].hard_irqs) as f64 / 0.019;
    assert!((irqs_per_s - s.irqs_per_s).abs() < 1e-9 * s.irqs_per_s.max(1.0), "{irqs_per_s} vs {}", s.irqs_per_s);
    // Each core's time adds up to the time elapsed.
    for c in &samples[24].cores {
        assert_eq!(c.user_ns + c.system_ns + c.softirq_ns + c.irq_ns + c.idle_ns, 24_000_000);
    }
}

#[test]
fn a_mistake_stops_the_run_with_one_sentence_naming_the_policy_and_the_knob() {
    let cases: [(Change, &str); 4] = [
        (set("rx-usecs", 5000), "policy `Scripted` set `rx-usecs`, which must be between 0 and 4095 (got 5000)"),
        (set("adaptive-rx", 1), "policy `Scripted` set `adaptive-rx`, which a policy cannot set during a run"),
        (
            Change { knob: "defer-hard-irqs".into(), target: Some(8), value: 1 },
            "policy `Scripted` set `defer-hard-irqs` on 8, but there are 8 NAPI instances (0 to 7)",
        ),
        (set("frobnicate", 1), "policy `Scripted` set `frobnicate`, which a policy cannot set"),
    ];
    for (change, want) in cases {
        let mut p = Scripted::new(100_000, Vec::new());
        p.later = vec![change];
        p.later_at_ns = 300_000;
        match with_policy("no-coalescing", SHORT, &mut p) {
            Err(Error::Policy(msg)) => {
                assert!(msg.starts_with(want), "{msg}");
                assert!(!msg.contains('\n'));
            }
            other => panic!("{want}: {:?}", other.map(|s| s.throughput_qps)),
        }
    }
    // The 82599 has no CQ moderation; a period outside 1 µs to an hour.
    let mut p = Scripted::new(100_000, vec![set("rx-usecs", 8)]);
    let e = with_policy("no-coalescing", &[SHORT, &["nic.kind=\"82599\""]].concat(), &mut p);
    assert!(matches!(e, Err(Error::Policy(m)) if m.contains("the 82599")));
    let mut p = Scripted::new(10, Vec::new());
    let e = with_policy("no-coalescing", SHORT, &mut p);
    assert!(matches!(e, Err(Error::Policy(m)) if m.contains("`period_us` must be between 1 and")));
}

#[test]
fn the_trace_records_each_setting_at_its_time() {
    use irqlab_core::model::server::Server;
    use irqlab_core::TraceEvent;

    let mut p = Scripted::new(1_000_000, vec![set("rx-usecs", 16)]);
    p.later = vec![Change { knob: "defer-hard-irqs".into(), target: Some(3), value: 2 }];
    p.later_at_ns = 2_000_000;
    let s = thesis("no-coalescing", &["run.duration_s=0.004", "run.warmup_s=0.001"]);
    let (summary, trace) = Server::build(&s).unwrap().with_trace(1_000_000).run_with_policy(Some(&mut p), &mut || false).unwrap();
    let settings: Vec<_> = trace.iter().filter(|(_, e)| matches!(e, TraceEvent::PolicySet { .. })).collect();
    assert_eq!(
        settings,
        [
            &(0, TraceEvent::PolicySet { knob: "rx-usecs", target: None, value: 16 }),
            &(2_000_000, TraceEvent::PolicySet { knob: "defer-hard-irqs", target: Some(3), value: 2 }),
        ]
    );
    // The traced run (the general interrupt path, no passed polls) is the
    // untraced one.
    let mut q = Scripted::new(1_000_000, vec![set("rx-usecs", 16)]);
    q.later = p.later.clone();
    q.later_at_ns = 2_000_000;
    let untraced = run_with_policy(&s, &mut q, &mut || false).unwrap();
    assert_eq!(simulated(&summary), simulated(&untraced));
}
