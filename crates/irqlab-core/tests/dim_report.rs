//! The summary's `dim`: which net DIM profile each queue's completion
//! queues had in force for how much of the measured window, on the thesis
//! scenario. RX DIM runs when `adaptive-rx` is on (adaptive-coalescing,
//! busy-wait, irq-suspend); TX DIM when `adaptive-tx` is on (the default in
//! every profile) and TX completions signal interrupts.

mod common;
use common::*;
use irqlab_core::stats::summary::{DimCqReport, PerProfile};
use irqlab_core::Summary;

const THESIS: &str = include_str!("../../../scenarios/thesis/bare-metal.toml");

fn run(profile: &str, overrides: &[&str]) -> Summary {
    let mut s = scenario(THESIS, &[&["run.duration_s=0.02", "run.warmup_s=0.01"], overrides].concat());
    s.set_profile(profile).unwrap();
    irqlab_core::run(&s).unwrap()
}

fn sum(p: &PerProfile<f64>) -> f64 {
    p.0.iter().sum()
}

/// Shares add to 100 per queue and overall, the overall share is the mean
/// of the queues' and the changes add up.
fn check_consistent(what: &str, r: &DimCqReport, queues: u32) {
    assert_eq!(r.queues.iter().map(|q| q.queue).collect::<Vec<_>>(), (0..queues).collect::<Vec<_>>(), "{what}");
    for q in &r.queues {
        assert!((sum(&q.time_share_pct) - 100.0).abs() < 1e-9, "{what}: {q:?}");
        assert!(q.time_share_pct.0.iter().all(|&p| (0.0..=100.0).contains(&p)), "{what}: {q:?}");
    }
    assert!((sum(&r.time_share_pct) - 100.0).abs() < 1e-9, "{what}: {:?}", r.time_share_pct);
    for ix in 0..5 {
        let mean = r.queues.iter().map(|q| q.time_share_pct.0[ix]).sum::<f64>() / queues as f64;
        assert!((r.time_share_pct.0[ix] - mean).abs() < 1e-9, "{what}: profile {ix}");
    }
    assert_eq!(r.changes, r.queues.iter().map(|q| q.changes).sum::<u64>(), "{what}");
}

#[test]
fn adaptive_coalescing_reports_rx_and_tx_dim() {
    for overrides in [&[][..], &["load.qps=300000"][..]] {
        let r = run("adaptive-coalescing", overrides);
        let dim = r.dim.as_ref().expect("adaptive-coalescing runs DIM");
        let rx = dim.rx.as_ref().expect("adaptive-rx is on");
        assert_eq!(rx.cq_period_mode, "cqe", "cqe-mode-rx is on in the profile");
        let table: Vec<(u16, u16)> = rx.profiles.iter().map(|m| (m.usecs, m.frames)).collect();
        assert_eq!(table, [(2, 256), (8, 128), (16, 64), (32, 64), (64, 64)], "NET_DIM_RX_CQE_PROFILES");
        check_consistent("rx", rx, 8);
        let tx = dim.tx.as_ref().expect("adaptive-tx is on by default");
        assert_eq!(tx.cq_period_mode, "eqe");
        assert_eq!(tx.profiles[4].usecs, 128, "NET_DIM_TX_EQE_PROFILES");
        check_consistent("tx", tx, 8);
    }
}

#[test]
fn no_coalescing_has_no_rx_dim_and_no_dim_at_all_without_adaptive_tx() {
    let r = run("no-coalescing", &[]);
    let dim = r.dim.as_ref().expect("TX DIM still runs");
    assert!(dim.rx.is_none());
    assert!(dim.tx.is_some());
    let r = run("no-coalescing", &["coalesce.adaptive-tx=false"]);
    assert!(r.dim.is_none());
    let json = serde_json::to_value(&r).unwrap();
    assert!(json["dim"].is_null());
    // TX completions that signal no interrupt leave TX DIM nothing to do.
    let r = run("adaptive-coalescing", &["nic.tx_completion_irqs=false"]);
    let dim = r.dim.as_ref().unwrap();
    assert!(dim.rx.is_some() && dim.tx.is_none());
}

#[test]
fn the_measured_window_excludes_warm_up() {
    // DIM starts every queue on profile 1 (NET_DIM_DEF_PROFILE_CQE) and,
    // while the closed loop ramps up to full load, walks to profile 4 (64
    // µs / 64 frames) within some 30 ms. Without warm-up the walk is in the
    // window; after the scenario's 50 ms of warm-up it is not, and DIM
    // stays on profile 4.
    let cold = run("adaptive-coalescing", &["run.warmup_s=0"]);
    let rx = cold.dim.as_ref().unwrap().rx.as_ref().unwrap();
    assert!(rx.changes > 0 && rx.time_share_pct.0[1] > 0.0, "{rx:?}");
    let warm = run("adaptive-coalescing", &["run.warmup_s=0.05"]);
    let rx = warm.dim.as_ref().unwrap().rx.as_ref().unwrap();
    assert_eq!(rx.time_share_pct.0[1], 0.0, "{rx:?}");
    assert!(rx.time_share_pct.0[4] > 90.0, "{rx:?}");
}

#[test]
fn the_report_is_deterministic() {
    let a = serde_json::to_string(&run("adaptive-coalescing", &["load.qps=100000"]).dim).unwrap();
    let b = serde_json::to_string(&run("adaptive-coalescing", &["load.qps=100000"]).dim).unwrap();
    assert_eq!(a, b);
}
