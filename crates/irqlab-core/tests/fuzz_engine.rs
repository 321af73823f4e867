//! Seeded engine fuzz (proptest): random valid scenarios, run for a few
//! simulated milliseconds under a wall-clock limit. Every run ends — no
//! panic, no stall, no hang — and its summary holds together: CPU shares add
//! to 100, drops add up by site, latency is null exactly when nothing
//! completed.
//!
//! The generator covers every section and profile with values inside the
//! validated ranges, kept to scenarios that simulate quickly (a closed loop
//! always has some latency or cost per request, the offered load times the
//! duration is bounded); inputs that validation rejects are skipped.
//! `cargo test` runs a small budget; `make fuzz` sets `IRQLAB_FUZZ_CASES`.

use irqlab_core::scenario::Profile;
use irqlab_core::Scenario;
use proptest::prelude::*;
use std::time::{Duration, Instant};

fn cases(default: u32) -> u32 {
    std::env::var("IRQLAB_FUZZ_CASES").ok().and_then(|v| v.parse::<u32>().ok()).map(|n| n / 10).unwrap_or(default).max(1)
}

/// A run may take this long on a slow, shared machine; beyond it, it is a hang.
const WALL_LIMIT: Duration = Duration::from_secs(60);

/// A cost in cycles: mostly realistic, sometimes 0.
fn cost() -> impl Strategy<Value = u64> {
    prop_oneof![1 => Just(0u64), 9 => 50u64..20_000]
}

fn overrides() -> impl Strategy<Value = Vec<String>> {
    let cpu = (1u32..=4, 1.0f64..4.0, 0u64..5_000, 1_000u64..5_000_000);
    let costs = prop::collection::vec(cost(), 16);
    let nic = (1u32..2048, 1u32..2048, 1u32..2000, any::<bool>(), 1u32..=2, 0u64..50_000, 0u64..2_000, any::<bool>());
    let coalesce = (any::<bool>(), 0u32..256, 0u32..256, any::<bool>(), any::<bool>(), 0u32..64, 0u32..256);
    let napi = (0u32..200, 0u64..10_000_000, 0u64..30_000_000, 1u32..128, 1u32..600, 1u32..3_000, 1u32..20);
    let epoll = (0u32..2_000, 0u32..128, any::<bool>(), any::<bool>(), 1u32..128, 2_048u64..1_000_000);
    let service = prop_oneof![
        (0u64..20_000).prop_map(|c| format!("{{ dist = \"fixed\", cycles = {c} }}")),
        (1u64..20_000).prop_map(|c| format!("{{ dist = \"exponential\", mean_cycles = {c} }}")),
        (0u64..10_000, 0u64..10_000).prop_map(|(a, b)| format!(
            "{{ dist = \"uniform\", min_cycles = {}, max_cycles = {} }}", a.min(b), a.max(b)
        )),
    ];
    let load = (1u32..=4, 1u32..=4, 1u32..=16, 1u32..=4, 0u64..10_000, prop::option::of(1e3f64..2e7), any::<bool>(), any::<bool>(), 1_000u64..100_000_000);
    let run = (1e-4f64..1e-2, 0.0f64..2e-3, any::<u64>(), prop::option::of(0usize..Profile::ALL.len()));
    // A guest half the time: kind, costs, halt polling, extra vCPUs.
    let vm = (0usize..4, cost(), cost(), cost(), 0u64..300_000, 0u32..4, 0u64..50_000, 0u32..4, 0u32..3);
    // On bare metal, an 82599 half the time (policy, static rate, linear
    // rho_max, on-chip buffer), and forwarding instead of memcached in an
    // open loop a third of the time, constant-rate or not.
    let itr = (0usize..8, 978u32..100_000, 1_000u64..5_000_000, 0u64..600_000, 0usize..3, any::<bool>(), cost());
    (cpu, costs, nic, coalesce, napi, epoll, service, load, run, vm, itr).prop_map(
        |(cpu, costs, nic, co, napi, ep, service, load, run, vm, itr)| {
            let names = [
                "hardirq_cycles", "softirq_entry_cycles", "napi_poll_cycles", "rx_packet_cycles", "wakeup_cycles",
                "epoll_wait_cycles", "epoll_event_cycles", "recv_cycles", "send_cycles", "send_cycles_per_64b",
                "context_switch_cycles", "interrupt_penalty_cycles", "irq_cold_cycles", "tx_clean_cycles",
                "timer_irq_cycles", "busy_poll_iteration_cycles",
            ];
            let mut o: Vec<String> = names.iter().zip(&costs).map(|(n, c)| format!("costs.{n}={c}")).collect();
            o.extend([
                format!("cpu.app_cores={}", cpu.0),
                format!("cpu.freq_ghz={}", cpu.1),
                format!("cpu.wakeup_latency_ns={}", cpu.2),
                format!("cpu.sched_base_slice_ns={}", cpu.3),
                format!("nic.rx-ring-size={}", nic.0),
                format!("nic.tx-ring-size={}", nic.1),
                format!("nic.txqueuelen={}", nic.2),
                format!("nic.irq_routing=\"{}\"", if nic.3 { "packed" } else { "aligned" }),
                format!("nic.queues={}", if nic.3 { 1 } else { 0 }),
                format!("nic.irq_cores={}", nic.4),
                // A closed loop whose round trip costs nothing would simulate
                // billions of requests per simulated second: give it a wire.
                format!("nic.wire_latency_ns={}", if load.5.is_none() { nic.5.max(1_000) } else { nic.5 }),
                format!("nic.dma_latency_ns={}", nic.6),
                format!("nic.tx_completion_irqs={}", nic.7),
                format!("coalesce.adaptive-rx={}", co.0),
                format!("coalesce.rx-usecs={}", co.1),
                format!("coalesce.rx-frames={}", co.2),
                format!("coalesce.cqe-mode-rx={}", co.3),
                format!("coalesce.adaptive-tx={}", co.4),
                format!("coalesce.tx-usecs={}", co.5),
                format!("coalesce.tx-frames={}", co.6),
                format!("napi.napi_defer_hard_irqs={}", napi.0),
                format!("napi.gro_flush_timeout={}", napi.1),
                format!("napi.irq_suspend_timeout={}", napi.2),
                format!("napi.weight={}", napi.3),
                format!("napi.netdev_budget={}", napi.4),
                format!("napi.netdev_budget_usecs={}", napi.5),
                format!("napi.max_softirq_restart={}", napi.6),
                format!("epoll.busy_poll_usecs={}", ep.0),
                format!("epoll.busy_poll_budget={}", ep.1),
                format!("epoll.prefer_busy_poll={}", ep.2),
                format!("epoll.blocking={}", ep.3),
                format!("epoll.maxevents={}", ep.4),
                format!("socket.rcvbuf_bytes={}", ep.5),
                format!("app.service={service}"),
                format!("load.clients={}", load.0),
                format!("load.threads_per_client={}", load.1),
                format!("load.connections_per_thread={}", load.2),
                format!("load.depth={}", load.3),
                format!("load.think_time_ns={}", load.4),
                format!("load.interarrival=\"{}\"", if load.6 { "fb_ia" } else { "exponential" }),
                format!("load.key_size={}", if load.7 { "{ dist = \"etc\" }" } else { "{ dist = \"fixed\", bytes = 30 }" }),
                format!("load.retransmit_timeout_ns={}", load.8),
                format!("run.seed={}", run.2 >> 1),
                format!("run.warmup_s={}", run.1),
            ]);
            if vm.0 >= 2 {
                o.extend([
                    format!("vm.kind=\"{}\"", if vm.0 == 2 { "passthrough" } else { "sriov" }),
                    format!("vm.exit_entry_cycles={}", vm.1),
                    format!("vm.vfio_irq_cycles={}", vm.2),
                    format!("vm.ipi_cycles={}", vm.3),
                    format!("vm.halt_poll_ns={}", vm.4),
                    format!("vm.halt_poll_ns_grow={}", vm.5),
                    format!("vm.halt_poll_ns_grow_start={}", vm.6),
                    format!("vm.halt_poll_ns_shrink={}", vm.7),
                    format!("vm.vcpus={}", cpu.0 + vm.8),
                    format!("vm.iommu_latency_ns={}", vm.6 / 10),
                ]);
            }
            if vm.0 < 2 && itr.0 >= 4 {
                let policy = ["off", "static", "ixgbe", "linear"][itr.0 - 4];
                o.extend([
                    "nic.kind=\"82599\"".to_string(),
                    format!("itr.policy=\"{policy}\""),
                    format!("itr.rate={}", itr.1),
                    format!("itr.rho_max_pps={}", itr.2),
                    format!("nic.rx_packet_buffer_bytes={}", itr.3),
                ]);
            }
            if vm.0 < 2 && load.5.is_some() && itr.4 == 0 {
                o.extend([
                    "app.kind=\"forwarding\"".to_string(),
                    "load.open_loop_backlog=\"server\"".to_string(),
                    format!("costs.forward_packet_cycles={}", itr.6),
                ]);
                if itr.5 {
                    o.push("load.interarrival=\"constant\"".to_string());
                }
            }
            match load.5 {
                // Bound the offered requests of one run to ~40,000.
                Some(qps) => {
                    o.push(format!("load.qps={qps}"));
                    o.push(format!("run.duration_s={}", run.0.min(40_000.0 / qps).max(1e-5)));
                }
                None => o.push(format!("run.duration_s={}", run.0)),
            }
            if let Some(p) = run.3 {
                o.push(format!("#profile={}", Profile::ALL[p].name()));
            }
            o
        },
    )
}

fn build(o: &[String]) -> Option<Scenario> {
    let mut s = Scenario::from_toml_str("name = \"fuzz\"").unwrap();
    let (profile, sets): (Vec<&String>, Vec<&String>) = o.iter().partition(|kv| kv.starts_with("#profile="));
    if let Some(p) = profile.first() {
        s.set_profile(p.trim_start_matches("#profile=")).unwrap();
    }
    // Overrides go in together, after the profile, as `--set` does.
    s.set_pairs(&sets).ok()?;
    Some(s)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(64), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_valid_scenario_runs_to_its_end(o in overrides()) {
        let Some(s) = build(&o) else { return Ok(()) };
        let start = Instant::now();
        let r = irqlab_core::run_interruptible(&s, &mut || start.elapsed() > WALL_LIMIT);
        let r = match r {
            Ok(r) => r,
            Err(e) => panic!("{e}\nscenario overrides: {o:?}"),
        };
        let sum = |c: &irqlab_core::stats::summary::CpuPct| c.user + c.system + c.softirq + c.irq + c.idle + c.guest + c.steal;
        prop_assert!((sum(&r.cpu_pct) - 100.0).abs() < 1e-6, "cpu adds to {}", sum(&r.cpu_pct));
        if let Some(vm) = &r.vm {
            prop_assert!((sum(&vm.host_cpu_pct) - 100.0).abs() < 1e-6, "host cpu adds to {}", sum(&vm.host_cpu_pct));
        }
        let d = &r.drops_by_site;
        prop_assert_eq!(r.drops, d.ring + d.socket + d.qdisc);
        prop_assert_eq!(r.latency_us.p99.is_none(), r.requests_completed == 0);
        prop_assert_eq!(r.latency_us.mean.is_none(), r.requests_completed == 0);
        prop_assert!(r.throughput_qps.is_finite() && r.cycles_per_query.is_finite());
        prop_assert!(r.sim_time_s > 0.0);
    }
}
