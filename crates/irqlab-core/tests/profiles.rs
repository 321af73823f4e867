//! Every profile runs the thesis scenario closed loop and open loop and
//! reports every field, with values that make sense together.

mod common;
use common::*;
use irqlab_core::scenario::Profile;
use irqlab_core::Summary;

const THESIS: &str = include_str!("../../../scenarios/thesis/bare-metal.toml");

fn check_fields(p: &str, r: &Summary) {
    assert!(r.throughput_qps > 0.0, "{p}: no throughput");
    assert!(r.requests_completed > 0);
    let l = &r.latency_us;
    let (p50, p95, p99, p999) = (l.p50.unwrap(), l.p95.unwrap(), l.p99.unwrap(), l.p999.unwrap());
    assert!(0.0 < p50 && p50 <= p95 && p95 <= p99 && p99 <= p999, "{p}: {l:?}");
    assert!(l.mean.unwrap() > 0.0);
    assert!(r.warnings.is_empty(), "{p}: {:?}", r.warnings);
    let c = &r.cpu_pct;
    let total = c.user + c.system + c.softirq + c.irq + c.idle;
    assert!((total - 100.0).abs() < 1e-6, "{p}: cpu adds to {total}");
    assert!(r.cycles_per_query > 0.0);
    assert!(r.sim_events > 0 && r.wall_s > 0.0 && r.sim_time_s > 0.0);
    assert!(r.irqs_per_s >= 0.0 && r.packets_per_irq >= 0.0 && r.context_switches_per_s >= 0.0);
    assert_eq!(r.profile.as_deref(), Some(p));
}

#[test]
fn every_profile_closed_and_open_loop() {
    for p in Profile::ALL.map(|p| p.name()) {
        let mut s = scenario(THESIS, &["run.duration_s=0.02", "run.warmup_s=0.005"]);
        s.set_profile(p).unwrap();
        let closed = irqlab_core::run(&s).unwrap();
        check_fields(p, &closed);
        assert_eq!(closed.mode, "closed");
        assert!(closed.cpu_pct.idle < 5.0, "{p}: closed loop should saturate the cores: {:?}", closed.cpu_pct);
        s.set("load.qps", "200000").unwrap();
        let open = irqlab_core::run(&s).unwrap();
        check_fields(p, &open);
        assert_eq!(open.mode, "open");
        assert_eq!(open.offered_qps, Some(200000.0));
        let err = (open.throughput_qps - 200000.0).abs() / 200000.0;
        assert!(err < 0.03, "{p}: open loop achieved {} of 200000", open.throughput_qps);
        assert_eq!(open.drops, 0);
    }
}

/// The interrupt-driven profiles take every packet from the softirq; the
/// polling ones take almost all of them by busy polling.
#[test]
fn who_takes_the_packets() {
    let mut s = scenario(THESIS, &["run.duration_s=0.02", "run.warmup_s=0.005"]);
    for (p, polled) in [
        ("no-coalescing", false),
        ("adaptive-coalescing", false),
        ("busy-wait", true),
        ("irq-suspend", true),
        ("irq-batching", false),
    ] {
        s.set_profile(p).unwrap();
        let r = irqlab_core::run(&s).unwrap();
        if polled {
            assert!(r.busy_poll_pct > 95.0, "{p}: {}", r.busy_poll_pct);
            assert!(r.cpu_pct.softirq < 3.0, "{p}: {:?}", r.cpu_pct);
        } else {
            assert_eq!(r.busy_poll_pct, 0.0, "{p}");
            assert!(r.cpu_pct.softirq > 5.0, "{p}: {:?}", r.cpu_pct);
        }
    }
}
