//! The interrupt path's fast path (`model/kernel/irq_fast.rs`) changes
//! nothing in a result: every run below gives the same summary as a traced
//! run, which takes the general path (`raise_irq` → `kick`,
//! `core_segment_done` → `kick`) at every step. The runs are chosen to
//! reach the cases where the fast path must step aside: IRQs that arrive
//! while another is pending or a round is in progress, ksoftirqd, a
//! NAPI a busy poller owns, idle cores that pay to wake, rounds cut by
//! their budget, a core that takes every vector, a guest's interrupts.

mod common;
use common::*;

const THESIS: &str = include_str!("../../../scenarios/thesis/bare-metal.toml");
const VIRTIO: &str = include_str!("../../../scenarios/thesis/virtio-packed.toml");

/// A run of `toml` under `profile` with `sets` equals its traced run;
/// its hard IRQs per second.
fn same(toml: &str, profile: &str, sets: &[&str]) -> f64 {
    let mut s = scenario(toml, &["run.duration_s=0.02", "run.warmup_s=0.005"]);
    s.set_profile(profile).unwrap();
    for kv in sets {
        let (k, v) = kv.split_once('=').unwrap();
        s.set(k, v).unwrap();
    }
    let fast = irqlab_core::run(&s).unwrap();
    let (general, _) = irqlab_core::run_traced(&s, 1).unwrap();
    assert_eq!(result_json(&fast), result_json(&general), "{profile} {sets:?}");
    fast.irqs_per_s
}

#[test]
fn every_profile_closed_and_open_loop_is_unchanged() {
    for p in ["no-coalescing", "adaptive-coalescing", "irq-batching", "irq-suspend", "kernel-polling", "busy-wait"] {
        same(THESIS, p, &[]);
        let irqs = same(THESIS, p, &["load.qps=150000"]);
        // (Batching and suspension defer to the watchdog's timer IRQs.)
        if p == "no-coalescing" || p == "adaptive-coalescing" {
            assert!(irqs > 1_000.0, "{p}: {irqs} IRQs/s");
        }
    }
}

#[test]
fn idle_cores_short_rounds_and_ksoftirqd_are_unchanged() {
    // Light load: cores sleep between requests and pay their C-state
    // exit and idle-exit cost before the handler runs.
    let irqs = same(THESIS, "no-coalescing", &["load.qps=20000", "costs.idle_exit_cycles=900"]);
    assert!(irqs > 10_000.0, "{irqs} IRQs/s");
    // With no exit latency the handler starts at once and the idle-exit
    // cost is still owed when it ends: NET_RX waits for it.
    same(THESIS, "no-coalescing", &["load.qps=20000", "costs.idle_exit_cycles=900", "cpu.wakeup_latency_ns=0"]);
    // Rounds of one packet and restarts handed to ksoftirqd.
    same(THESIS, "no-coalescing", &["napi.netdev_budget=1", "napi.max_softirq_restart=1"]);
    // ... on cores that take several queues' vectors: one queue's IRQ ends
    // while ksoftirqd polls another's NAPI.
    same(THESIS, "no-coalescing", &["napi.netdev_budget=1", "napi.max_softirq_restart=1", "nic.irq_routing=\"packed\"", "nic.irq_cores=2"]);
    // A round that ends at once (`netdev_budget_usecs` = 0 is refused;
    // 1 us ends most rounds after their first poll).
    same(THESIS, "adaptive-coalescing", &["napi.netdev_budget_usecs=1"]);
}

#[test]
fn shared_and_packed_vectors_are_unchanged() {
    // Fewer queues than threads and every vector on two cores: IRQs that
    // come while another is pending or a round runs.
    for p in ["no-coalescing", "irq-suspend"] {
        let irqs = same(THESIS, p, &["load.qps=200000", "nic.irq_routing=\"packed\"", "nic.irq_cores=2", "nic.queues=3"]);
        assert!(irqs > 1_000.0 || p == "irq-suspend", "{p}: {irqs} IRQs/s");
    }
}

#[test]
fn a_guests_interrupts_are_unchanged() {
    let irqs = same(VIRTIO, "no-coalescing", &[]);
    assert!(irqs > 1_000.0, "{irqs} IRQs/s");
}
