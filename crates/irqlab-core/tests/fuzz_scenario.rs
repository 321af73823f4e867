//! Fuzz of the scenario parser and validator (proptest): whatever the text
//! or the overrides, parsing returns a scenario or an error and never
//! panics; every error is one line and speaks of fields and ranges, never of
//! Rust types; an accepted scenario respects the documented bounds.
//!
//! `cargo test` runs a small budget; `make fuzz` sets `IRQLAB_FUZZ_CASES`
//! for a long one.

use irqlab_core::Scenario;
use proptest::prelude::*;

fn cases(default: u32) -> u32 {
    std::env::var("IRQLAB_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

const THESIS: &str = include_str!("../../../scenarios/thesis/bare-metal.toml");

/// Every field path a scenario has, plus a few that do not exist.
const KEYS: &[&str] = &[
    "name", "description", "run.seed", "run.duration_s", "run.warmup_s", "run.profile", "run",
    "cpu.app_cores", "cpu.freq_ghz", "cpu.wakeup_latency_ns", "cpu.sched_base_slice_ns", "cpu",
    "costs.hardirq_cycles", "costs.rx_packet_cycles", "costs.recv_cycles", "costs.send_cycles",
    "costs.epoll_wait_cycles", "costs.busy_poll_iteration_cycles", "costs.interrupt_penalty_cycles",
    "nic.queues", "nic.rx-ring-size", "nic.tx-ring-size", "nic.txqueuelen", "nic.irq_routing", "nic.irq_cores",
    "nic.wire_latency_ns", "nic.dma_latency_ns", "nic.tx_completion_irqs",
    "coalesce.adaptive-rx", "coalesce.rx-usecs", "coalesce.rx-frames", "coalesce.cqe-mode-rx",
    "napi.napi_defer_hard_irqs", "napi.gro_flush_timeout", "napi.irq_suspend_timeout", "napi.weight",
    "napi.netdev_budget", "napi.netdev_budget_usecs", "napi.max_softirq_restart", "socket.rcvbuf_bytes",
    "epoll.busy_poll_usecs", "epoll.busy_poll_budget", "epoll.prefer_busy_poll", "epoll.blocking",
    "epoll.maxevents", "app.service", "app.service.dist", "app.service.cycles", "app.service_cycles_per_64b",
    "load.clients", "load.threads_per_client", "load.connections_per_thread", "load.depth",
    "load.think_time_ns", "load.qps", "load.interarrival", "load.key_size", "load.value_size",
    "load.get_fraction", "load.retransmit_timeout_ns", "load", "vm.kind", "vm.vcpus", "vm.exit_entry_cycles",
    "vm.halt_poll_ns", "vm.halt_poll_ns_grow", "vm.halt_poll_ns_shrink", "vm.iommu_latency_ns", "vm", "bogus", "cpu.bogus", "a..b", ".x", "x.",
];

/// Override values of every TOML type, in and out of every range.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|v| v.to_string()),
        (0u64..5000).prop_map(|v| v.to_string()),
        any::<f64>().prop_map(|v| format!("{v:?}")),
        Just("99999999999999999999".to_string()),
        Just("-0".to_string()),
        Just("inf".to_string()),
        Just("nan".to_string()),
        Just("1e9".to_string()),
        Just("true".to_string()),
        Just("\"fb_ia\"".to_string()),
        Just("packed".to_string()),
        Just("busy-wait".to_string()),
        Just("kernel-polling".to_string()),
        Just("\"passthrough\"".to_string()),
        Just("\"sriov\"".to_string()),
        Just("[1, 2]".to_string()),
        Just("{ dist = \"fixed\", cycles = 10 }".to_string()),
        Just("{ dist = \"uniform\", min_cycles = 9, max_cycles = 3 }".to_string()),
        Just("{ dist = \"etc\" }".to_string()),
        Just("{}".to_string()),
        Just("300000\n[cpu]\napp_cores=1".to_string()),
        Just("1.2.3".to_string()),
        Just("\"unterminated".to_string()),
        "[ -~]{0,12}",
    ]
}

fn check_error(e: &irqlab_core::Error) {
    let m = e.to_string();
    assert!(!m.is_empty() && !m.contains('\n') && !m.contains('\r'), "not one line: {m:?}");
    assert!(!m.contains("` :") && !m.contains("unit variant"), "clumsy: {m}");
    // Only our own words count: what the user wrote is echoed in `…` or "…".
    let ours: String = m.split(['`', '"']).step_by(2).collect::<Vec<_>>().join(" ");
    for rust in [" u8", " u16", " u32", " u64", " i64", " f64", "struct ", "usize", "enum "] {
        assert!(!ours.contains(rust), "a Rust type name reaches the user: {m}");
    }
}

fn check_accepted(s: &Scenario) {
    let c = s.config();
    assert!((1..=1_000_000).contains(&c.load.connections()));
    assert!(c.load.qps.is_some() || c.load.connections() * c.load.depth as u64 <= 1_000_000);
    assert!(c.run.duration_s > 0.0 && c.run.duration_s.is_finite());
    assert_eq!(c.run.profile.is_some(), s.profile().is_some());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(256), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn overrides_never_panic_and_errors_are_plain(pairs in prop::collection::vec((prop::sample::select(KEYS), value()), 1..5)) {
        let mut s = Scenario::from_toml_str(THESIS).unwrap();
        let before = s.config().clone();
        let pairs: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        match s.set_pairs(&pairs) {
            Ok(()) => check_accepted(&s),
            Err(e) => {
                check_error(&e);
                // A rejected batch changes nothing.
                prop_assert_eq!(format!("{:?}", s.config()), format!("{before:?}"));
            }
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in "(?s).{0,200}") {
        match Scenario::from_toml_str(&text) {
            Ok(s) => check_accepted(&s),
            Err(e) => check_error(&e),
        }
    }

    #[test]
    fn mangled_thesis_file_never_panics(cut in 0usize..THESIS.len(), insert in "[ -~\n]{0,8}") {
        let mut text = THESIS.as_bytes()[..cut].to_vec();
        text.extend_from_slice(insert.as_bytes());
        text.extend_from_slice(&THESIS.as_bytes()[cut..]);
        let text = String::from_utf8_lossy(&text);
        match Scenario::from_toml_str(&text) {
            Ok(s) => check_accepted(&s),
            Err(e) => check_error(&e),
        }
    }
}
