//! The Linux ≥ 6.13 NAPI / epoll state machine, one kernel rule per test,
//! checked on the trace of small runs (one core, one queue).

mod common;
use common::*;
use irqlab_core::{TimerReason, TraceEvent};

/// One core with realistic (non-zero) costs, 1 ms between requests on
/// average; TX completions do not interrupt, so each trace shows the RX rule
/// alone.
const ONE_CORE: &str = r#"
name = "napi-rules"
[run]
seed = 3
duration_s = 0.05
warmup_s = 0.0
[cpu]
app_cores = 1
[nic]
wire_latency_ns = 5000
tx_completion_irqs = false
[load]
connections_per_thread = 8
qps = 1000
"#;

fn traced(sets: &[&str]) -> (irqlab_core::Summary, Vec<TraceEvent>) {
    let s = scenario(ONE_CORE, sets);
    let (sum, tr) = irqlab_core::run_traced(&s, 200_000).unwrap();
    (sum, tr.into_iter().map(|(_, e)| e).collect())
}

fn napi_events(tr: &[TraceEvent]) -> Vec<TraceEvent> {
    tr.iter().copied().filter(|e| !matches!(e, TraceEvent::Sleep { .. } | TraceEvent::Wake { .. })).collect()
}

/// `napi_complete_done` without deferral: every poll that empties the ring
/// re-enables the IRQ, so each packet costs one interrupt at low load.
#[test]
fn without_deferral_every_completion_rearms_the_irq() {
    let (sum, tr) = traced(&["coalesce.rx-usecs=0", "coalesce.rx-frames=0"]);
    let ev = napi_events(&tr);
    for w in ev.windows(2) {
        if let TraceEvent::Poll { busy: false, .. } = w[0] {
            assert_eq!(w[1], TraceEvent::IrqRearmed { queue: 0 }, "{ev:?}");
        }
    }
    assert!(!ev.iter().any(|e| matches!(e, TraceEvent::TimerArmed { .. })));
    assert!((sum.packets_per_irq - 1.0).abs() < 0.01, "{}", sum.packets_per_irq);
}

/// With `napi_defer_hard_irqs` D > 0 and `gro_flush_timeout` G > 0, a poll
/// that found work leaves the IRQ masked and arms the watchdog for G; each
/// empty poll uses one deferral and re-arms it; after D−1 empty polls the
/// next empty poll re-enables the IRQ (`napi_complete_done`).
#[test]
fn deferral_keeps_irq_masked_and_arms_the_watchdog() {
    let (_, tr) = traced(&["coalesce.rx-usecs=0", "coalesce.rx-frames=0", "napi.napi_defer_hard_irqs=3", "napi.gro_flush_timeout=50000"]);
    let ev = napi_events(&tr);
    let i = ev.iter().position(|e| matches!(e, TraceEvent::IrqFired { .. })).expect("an interrupt");
    let armed = TraceEvent::TimerArmed { napi: 0, delay_ns: 50_000, reason: TimerReason::Complete };
    let fired = TraceEvent::WatchdogFired { napi: 0, scheduled: true };
    let empty = TraceEvent::Poll { napi: 0, packets: 0, busy: false };
    assert!(matches!(ev[i + 1], TraceEvent::Poll { packets: 1.., busy: false, .. }), "{:?}", &ev[i..i + 4]);
    assert_eq!(&ev[i + 2..i + 11], &[armed, fired, empty, armed, fired, empty, armed, fired, empty], "{:?}", &ev[i..i + 12]);
    assert_eq!(ev[i + 11], TraceEvent::IrqRearmed { queue: 0 });
}

/// `net_rx_action`: a NAPI polls at most `weight` packets per poll and one
/// that used its whole weight is polled again in a later round.
#[test]
fn softirq_polls_at_most_weight_packets_per_poll() {
    // Closed loop: 200 connections send their first request within 10 µs,
    // before the 50 µs moderation timer fires: one burst of 200 packets.
    let text = scenario(ONE_CORE, &["load.connections_per_thread=200", "coalesce.rx-usecs=50", "coalesce.rx-frames=0", "coalesce.cqe-mode-rx=false", "run.duration_s=0.0005"])
        .resolved_toml()
        .replace("qps = 1000.0\n", "");
    let closed = irqlab_core::Scenario::from_toml_str(&text).unwrap();
    assert!(closed.config().load.qps.is_none());
    let (_, tr) = irqlab_core::run_traced(&closed, 1000).unwrap();
    let polls: Vec<u32> = tr
        .iter()
        .filter_map(|(_, e)| match e {
            TraceEvent::Poll { packets, busy: false, .. } => Some(*packets),
            _ => None,
        })
        .collect();
    assert_eq!(&polls[..4], &[64, 64, 64, 8], "{polls:?}");
}

/// `ep_poll` returning events with prefer_busy_poll calls
/// `napi_suspend_irqs`, which arms the watchdog for `irq_suspend_timeout`
/// (thesis Figure 3.1, line 6).
#[test]
fn epoll_returning_events_suspends_irqs_for_irq_suspend_timeout() {
    let mut s = scenario(ONE_CORE, &[]);
    s.set_profile("irq-suspend").unwrap();
    // 100k requests/s on one core: busy, below saturation.
    s.set("load.qps", "100000").unwrap();
    let (sum, tr) = irqlab_core::run_traced(&s, 200_000).unwrap();
    let ev: Vec<TraceEvent> = tr.into_iter().map(|(_, e)| e).collect();
    let mut suspends = 0;
    for w in ev.windows(2) {
        if let TraceEvent::SuspendIrqs { napi } = w[0] {
            suspends += 1;
            assert_eq!(w[1], TraceEvent::TimerArmed { napi, delay_ns: 20_000_000, reason: TimerReason::Suspend });
        }
    }
    assert!(suspends > 100, "{suspends}");
    // Busy polling takes most packets; the rest come from watchdog polls
    // while the thread sleeps between bursts. Hard interrupts stay rare.
    assert!(sum.busy_poll_pct > 50.0, "{}", sum.busy_poll_pct);
    assert!(sum.irqs_per_s < 0.01 * sum.throughput_qps, "{} irqs/s", sum.irqs_per_s);
}

/// A busy poll that finds nothing calls `napi_resume_irqs`, which schedules
/// the NAPI at once; the thread then sleeps (blocking epoll).
#[test]
fn fruitless_busy_poll_resumes_irqs_then_sleeps() {
    let mut s = scenario(ONE_CORE, &[]);
    s.set_profile("irq-suspend").unwrap();
    let (_, tr) = irqlab_core::run_traced(&s, 200_000).unwrap();
    let ev: Vec<TraceEvent> = tr.into_iter().map(|(_, e)| e).collect();
    let i = ev
        .iter()
        .position(|e| matches!(e, TraceEvent::ResumeIrqs { .. }))
        .expect("a fruitless busy poll at 1k QPS");
    // busy_poll_stop armed the watchdog, polled a last time and completed.
    assert_eq!(ev[i - 3], TraceEvent::TimerArmed { napi: 0, delay_ns: 20_000, reason: TimerReason::BusyPollStop });
    assert_eq!(ev[i - 2], TraceEvent::Poll { napi: 0, packets: 0, busy: true });
    assert_eq!(ev[i - 1], TraceEvent::TimerArmed { napi: 0, delay_ns: 20_000, reason: TimerReason::Complete });
    assert_eq!(ev[i], TraceEvent::ResumeIrqs { napi: 0, scheduled: true });
    assert_eq!(ev[i + 1], TraceEvent::Sleep { thread: 0 });
    // The softirq poll scheduled by napi_resume_irqs runs next.
    assert_eq!(ev[i + 2], TraceEvent::Poll { napi: 0, packets: 0, busy: false });
}

/// The watchdog schedules a poll only when nobody owns the NAPI, and it
/// clears PREFER_BUSY_POLL when it does (`napi_watchdog`): at low load
/// irq-suspend falls back to watchdog polls every gro_flush_timeout until
/// the deferrals run out, then to interrupts.
#[test]
fn watchdog_polls_until_deferrals_run_out_then_irqs_return() {
    let mut s = scenario(ONE_CORE, &[]);
    s.set_profile("irq-suspend").unwrap();
    let (sum, tr) = irqlab_core::run_traced(&s, 500_000).unwrap();
    let fires = tr.iter().filter(|(_, e)| matches!(e, TraceEvent::WatchdogFired { scheduled: true, .. })).count();
    let rearms = tr.iter().filter(|(_, e)| matches!(e, TraceEvent::IrqRearmed { .. })).count();
    assert!(fires > 0 && rearms > 0, "fires {fires} rearms {rearms}");
    // Requests arrive ~1 ms apart; 100 deferrals × 20 µs = 2 ms: most gaps
    // are covered by watchdog polls, so interrupts are fewer than requests.
    assert!(sum.irqs_per_s < sum.throughput_qps, "{} irqs/s vs {} qps", sum.irqs_per_s, sum.throughput_qps);
}

/// busy-wait: the application never sleeps and takes its packets by busy
/// polling; the 5 ms deferral keeps interrupts away.
#[test]
fn busy_wait_never_sleeps() {
    let mut s = scenario(ONE_CORE, &[]);
    s.set_profile("busy-wait").unwrap();
    s.set("load.qps", "50000").unwrap();
    let (sum, tr) = irqlab_core::run_traced(&s, 200_000).unwrap();
    let late: Vec<_> = tr.iter().filter(|(t, _)| *t > 1_000_000).collect();
    assert!(!late.iter().any(|(_, e)| matches!(e, TraceEvent::Sleep { .. })));
    assert!(sum.busy_poll_pct > 99.0, "{}", sum.busy_poll_pct);
    assert!(sum.cpu_pct.idle < 0.5, "{}", sum.cpu_pct.idle);
}
