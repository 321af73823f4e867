//! Shared helpers for the integration tests.
#![allow(dead_code)]

use irqlab_core::{Scenario, Summary};

/// A one-core server whose every cost is zero: the mechanisms alone shape
/// the timing, so queueing formulas apply.
pub const ZERO_COST: &str = r#"
name = "oracle"
[run]
seed = 7
duration_s = 2.0
warmup_s = 0.05
[cpu]
app_cores = 1
freq_ghz = 1.0
wakeup_latency_ns = 0
[costs]
hardirq_cycles = 0
softirq_entry_cycles = 0
napi_poll_cycles = 0
rx_packet_cycles = 0
wakeup_cycles = 0
epoll_wait_cycles = 0
epoll_event_cycles = 0
recv_cycles = 0
recv_cycles_per_request = 0
send_cycles = 0
send_cycles_per_64b = 0
context_switch_cycles = 0
interrupt_penalty_cycles = 0
irq_cold_cycles = 0
tx_clean_cycles = 0
timer_irq_cycles = 0
busy_poll_iteration_cycles = 0
[nic]
rx-ring-size = 65536
wire_latency_ns = 0
dma_latency_ns = 0
tx_completion_irqs = false
[coalesce]
adaptive-rx = false
rx-usecs = 0
rx-frames = 0
[epoll]
maxevents = 100000
[app]
service = { dist = "fixed", cycles = 0 }
[load]
clients = 1
threads_per_client = 1
connections_per_thread = 1000
qps = 100000
# Poisson arrivals as the formulas assume: never held at the client.
open_loop_backlog = "server"
interarrival = "exponential"
key_size = { dist = "fixed", bytes = 10 }
value_size = { dist = "fixed", bytes = 10 }
"#;

pub fn scenario(base: &str, sets: &[&str]) -> Scenario {
    let mut s = Scenario::from_toml_str(base).expect("valid scenario");
    for kv in sets {
        s.set_pair(kv).unwrap_or_else(|e| panic!("{kv}: {e}"));
    }
    s
}

/// Run `base` under `profile`, then the overrides.
pub fn run_profile(base: &str, profile: &str, sets: &[&str]) -> Summary {
    let mut s = Scenario::from_toml_str(base).expect("valid scenario");
    s.set_profile(profile).unwrap_or_else(|e| panic!("{profile}: {e}"));
    for kv in sets {
        s.set_pair(kv).unwrap_or_else(|e| panic!("{kv}: {e}"));
    }
    irqlab_core::run(&s).expect("run")
}

pub fn run(base: &str, sets: &[&str]) -> Summary {
    irqlab_core::run(&scenario(base, sets)).expect("run")
}

/// |sim − expected| ≤ rel · expected, with a readable failure.
pub fn assert_close(what: &str, sim: f64, expected: f64, rel: f64) {
    let err = (sim - expected).abs() / expected;
    assert!(err <= rel, "{what}: simulated {sim:.4} vs formula {expected:.4} ({:.1} % off, tolerance {:.1} %)", err * 100.0, rel * 100.0);
}

/// A summary without what says how the simulator ran it (its wall time
/// and the events the engine passed): what two ways of running one
/// scenario must agree on.
pub fn result_json(s: &Summary) -> serde_json::Value {
    let mut v = serde_json::to_value(s).unwrap();
    let o = v.as_object_mut().unwrap();
    o.remove("wall_s");
    o.remove("sim_events_passed");
    v
}
