//! IRQ routing (aligned vs packed) and behaviour past saturation.

mod common;
use common::*;

const TWO_CORES: &str = r#"
name = "routing"
[run]
duration_s = 0.02
warmup_s = 0.002
[cpu]
app_cores = 2
[load]
connections_per_thread = 64
qps = 100000
"#;

/// Packed routing: the RX queues' vectors go to a dedicated IRQ core, so the
/// application cores see no hard IRQ or softirq time and the IRQ core sees
/// all of it (thesis §3.1.2).
#[test]
fn packed_routing_moves_interrupt_work_to_the_irq_core() {
    let r = run_profile(TWO_CORES, "no-coalescing", &["nic.irq_routing=\"packed\"", "nic.queues=1", "nic.irq_cores=1"]);
    let app = &r.cpu_pct;
    let irq = r.irq_cores_cpu_pct.as_ref().expect("irq cores reported");
    assert_eq!(app.irq, 0.0, "{app:?}");
    assert_eq!(app.softirq, 0.0, "{app:?}");
    assert!(irq.softirq > 1.0 && irq.irq > 0.1, "{irq:?}");
    assert!((r.throughput_qps - 100_000.0).abs() < 3_000.0, "{}", r.throughput_qps);
    let aligned = run_profile(TWO_CORES, "no-coalescing", &[]);
    assert!(aligned.irq_cores_cpu_pct.is_none());
    assert!(aligned.cpu_pct.softirq > 1.0);
}

/// Open loop beyond capacity from a pipelining client: rings fill, packets
/// are dropped at the NIC, the run stays bounded in memory and time, and
/// throughput saturates.
#[test]
fn overload_drops_at_the_ring() {
    let r = run_profile(
        TWO_CORES,
        "no-coalescing",
        &["load.qps=2000000", "load.open_loop_backlog=server", "nic.rx-ring-size=256"],
    );
    assert!(r.drops > 0);
    assert!(r.throughput_qps < 1_500_000.0, "{}", r.throughput_qps);
    assert!(r.cpu_pct.idle < 1.0, "{:?}", r.cpu_pct);
}

/// A full TX ring holds replies back (the qdisc) until a poll reaps
/// descriptors: nothing is lost, replies are later.
#[test]
fn tiny_tx_ring_delays_but_loses_nothing() {
    let big = run_profile(TWO_CORES, "busy-wait", &[]);
    let tiny = run_profile(TWO_CORES, "busy-wait", &["nic.tx-ring-size=1"]);
    assert!((tiny.throughput_qps - big.throughput_qps).abs() < 0.02 * big.throughput_qps, "{} vs {}", tiny.throughput_qps, big.throughput_qps);
    assert!(tiny.latency_us.mean.unwrap() > big.latency_us.mean.unwrap(), "{} vs {}", tiny.latency_us.mean.unwrap(), big.latency_us.mean.unwrap());
}
