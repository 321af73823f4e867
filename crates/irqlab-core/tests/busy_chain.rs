//! Empty busy polls passed by the engine (`model/kernel/busy_chain.rs`,
//! `engine/chain.rs`) change nothing in a result: every run below gives the
//! same summary as with the chains off (a traced run handles every event
//! itself, since the trace records them), while the chains pass most of
//! the events where busy polling meets an idle ring.

mod common;
use common::*;

const THESIS: &str = include_str!("../../../scenarios/thesis/bare-metal.toml");

/// Run with chains and without; both summaries, and the share of events
/// the chains passed.
fn both(profile: &str, sets: &[&str]) -> f64 {
    let mut s = scenario(THESIS, &["run.duration_s=0.02", "run.warmup_s=0.005"]);
    s.set_profile(profile).unwrap();
    for kv in sets {
        let (k, v) = kv.split_once('=').unwrap();
        s.set(k, v).unwrap();
    }
    let chained = irqlab_core::run(&s).unwrap();
    let (plain, _) = irqlab_core::run_traced(&s, 1).unwrap();
    assert_eq!(plain.sim_events_passed, 0, "a traced run passes nothing");
    assert_eq!(result_json(&chained), result_json(&plain), "{profile} {sets:?}");
    chained.sim_events_passed as f64 / chained.sim_events as f64
}

#[test]
fn busy_wait_below_saturation_passes_most_events_and_changes_nothing() {
    for qps in ["20000", "100000", "400000"] {
        let share = both("busy-wait", &[&format!("load.qps={qps}")]);
        assert!(share > 0.5, "{qps} QPS: {share:.3} of the events passed");
    }
}

#[test]
fn a_saturated_closed_loop_and_the_other_profiles_are_unchanged() {
    both("busy-wait", &[]);
    for p in ["irq-suspend", "no-coalescing", "adaptive-coalescing", "irq-batching", "kernel-polling"] {
        both(p, &["load.qps=100000"]);
    }
}

#[test]
fn the_busy_loop_deadline_ends_a_chain_where_the_loop_ends() {
    // 30 us of busy polling at most per epoll_wait, well under the gap
    // between a core's requests: each loop's chain ends at its deadline
    // (after which the thread forgot the NAPI and spins in epoll_wait
    // without polling until a packet comes, events no chain passes).
    let share = both("busy-wait", &["load.qps=20000", "epoll.busy_poll_usecs=30"]);
    assert!(share > 0.02, "{share:.3} of the events passed");
}

#[test]
fn more_cores_than_the_flat_slots_and_odd_costs_are_unchanged() {
    // 12 cores (a tournament tree of slots), and a spin as long as a poll
    // (the two durations equal).
    let share = both("busy-wait", &["load.qps=150000", "cpu.app_cores=12", "load.connections_per_thread=24"]);
    assert!(share > 0.5, "{share:.3} of the events passed");
    both("busy-wait", &["load.qps=50000", "costs.busy_poll_iteration_cycles=300", "costs.napi_poll_cycles=300"]);
}

#[test]
fn queues_shared_by_threads_and_packed_interrupts_are_unchanged() {
    // Every vector on two dedicated cores, and fewer queue pairs than
    // threads: a thread's requests arrive on a queue another thread may be
    // busy polling, and its replies leave through queues other threads
    // poll (the delivery and transmit hooks).
    for p in ["busy-wait", "irq-suspend"] {
        both(p, &["load.qps=60000", "nic.irq_routing=\"packed\"", "nic.irq_cores=2", "nic.queues=3"]);
    }
    both("busy-wait", &["load.qps=60000", "nic.irq_routing=\"packed\"", "nic.irq_cores=2"]);
    // TX rings of two descriptors: replies wait in the qdiscs of queues
    // other threads busy poll.
    both("busy-wait", &["load.qps=60000", "nic.irq_routing=\"packed\"", "nic.irq_cores=2", "nic.queues=3", "nic.tx-ring-size=2"]);
}
