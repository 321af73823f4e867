//! The disruption model (`[microarch] ipc_model = "disruption"`,
//! `model/kernel/disruption.rs`): what it does to a run, on the thesis's
//! scenario, with footprints given here (not the scenario's fit, so that
//! each test holds whatever the fit).

mod common;

use common::run_profile;

const THESIS: &str = include_str!("../../../scenarios/thesis/bare-metal.toml");

fn disruption(thread: u64, softirq: u64, hardirq: u64, flush: u64) -> Vec<String> {
    vec![
        "run.duration_s=0.05".into(),
        format!("microarch.thread_code_bytes={thread}"),
        format!("microarch.softirq_code_bytes={softirq}"),
        format!("microarch.hardirq_code_bytes={hardirq}"),
        format!("microarch.flush_cycles={flush}"),
        "microarch.ipc_model=disruption".into(),
    ]
}

fn run(profile: &str, sets: &[String]) -> irqlab_core::Summary {
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    run_profile(THESIS, profile, &sets)
}

#[test]
fn fixed_costs_report_no_ipc() {
    let s = run("no-coalescing", &["run.duration_s=0.05".into(), "microarch.ipc_model=fixed".into()]);
    assert_eq!(s.ipc, None);
    assert_eq!(s.instructions_per_query, None);
}

/// Code that fits the L1i together is never displaced and there is no
/// flush: every cycle is warm, so the IPC is the warm one exactly, under
/// any profile.
#[test]
fn code_that_fits_runs_at_the_warm_ipc() {
    for profile in ["no-coalescing", "busy-wait"] {
        let s = run(profile, &disruption(16_384, 8_192, 4_096, 0));
        let ipc = s.ipc.expect("ipc under the disruption model");
        assert!((ipc - 1.0 / 1.116).abs() < 1e-9, "{profile}: {ipc}");
        let ipq = s.instructions_per_query.unwrap();
        assert!((ipq - s.cycles_per_query / 1.116).abs() < 1e-6 * ipq, "{profile}: {ipq}");
    }
}

/// Footprints that do not fit together: the more interrupts, the more
/// refills, so IPC falls from busy-wait (no interrupt on the path) through
/// adaptive coalescing to no-coalescing, as Table 4.1's does.
#[test]
fn interrupts_lower_the_ipc_in_table_4_1s_order() {
    let sets = disruption(28_672, 20_480, 4_096, 1_000);
    let ipc: Vec<f64> = ["no-coalescing", "adaptive-coalescing", "busy-wait"]
        .iter()
        .map(|p| run(p, &sets).ipc.unwrap())
        .collect();
    assert!(ipc[0] < ipc[1] && ipc[1] < ipc[2], "{ipc:?}");
    assert!((ipc[2] - 1.0 / 1.116).abs() < 0.005, "busy-wait is hardly disrupted: {}", ipc[2]);
}

/// Another core (`cpi_warm`) or another build of the code
/// (`instructions_scale`): the same operations' instructions at that CPI.
/// With code that fits, every cycle is warm, so the IPC is the core's warm
/// IPC exactly and the instructions per query follow the scale alone.
#[test]
fn the_costs_carry_to_another_core_as_instructions() {
    let base = run("busy-wait", &disruption(16_384, 8_192, 4_096, 0));
    let mut faster = disruption(16_384, 8_192, 4_096, 0);
    faster.push("microarch.cpi_warm=0.883".into());
    let f = run("busy-wait", &faster);
    assert!((f.ipc.unwrap() - 1.0 / 0.883).abs() < 1e-9, "{:?}", f.ipc);
    // The same instructions per query (to the nanosecond rounding of each
    // operation), in fewer cycles: more queries.
    let (a, b) = (base.instructions_per_query.unwrap(), f.instructions_per_query.unwrap());
    assert!((b / a - 1.0).abs() < 0.01, "{a} -> {b}");
    assert!(f.throughput_qps > 1.2 * base.throughput_qps, "{} -> {}", base.throughput_qps, f.throughput_qps);
    let mut fewer = disruption(16_384, 8_192, 4_096, 0);
    fewer.push("microarch.instructions_scale=0.5".into());
    let h = run("busy-wait", &fewer);
    let c = h.instructions_per_query.unwrap();
    assert!((c / a - 0.5).abs() < 0.01, "{a} -> {c}");
    assert!((h.ipc.unwrap() - 1.0 / 1.116).abs() < 1e-9);
}
