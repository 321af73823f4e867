//! Fetching the next core's state ahead (`engine/prefetch.rs`, the queue's
//! owner hint from `HINT_MIN_OWNERS` cores on) changes nothing in a result:
//! at 256 and 300 cores every run below gives the summary of its traced
//! run, which takes no owner hint.

mod common;
use common::*;

const THESIS: &str = include_str!("../../../scenarios/thesis/bare-metal.toml");

fn same(cores: u32, profile: &str, sets: &[&str]) {
    let mut s = scenario(THESIS, &["run.duration_s=0.0004", "run.warmup_s=0.0001"]);
    s.set_profile(profile).unwrap();
    s.set("cpu.app_cores", &cores.to_string()).unwrap();
    s.set("load.connections_per_thread", &(2 * cores).to_string()).unwrap();
    for kv in sets {
        let (k, v) = kv.split_once('=').unwrap();
        s.set(k, v).unwrap();
    }
    let hinted = irqlab_core::run(&s).unwrap();
    let (reference, _) = irqlab_core::run_traced(&s, 1).unwrap();
    assert!(hinted.requests_completed > 100, "{profile} at {cores} cores: {} requests", hinted.requests_completed);
    assert_eq!(result_json(&hinted), result_json(&reference), "{profile} at {cores} cores {sets:?}");
}

#[test]
fn many_cores_give_the_summary_of_a_run_without_hints() {
    for p in ["busy-wait", "no-coalescing", "irq-suspend"] {
        same(256, p, &[]);
    }
    // Not a power of two (the tree's last leaves empty), open loop, and
    // threads not on the core of their index (packed routing).
    same(300, "no-coalescing", &["load.qps=10000000"]);
    same(300, "busy-wait", &["nic.irq_routing=\"packed\"", "nic.irq_cores=4"]);
}
