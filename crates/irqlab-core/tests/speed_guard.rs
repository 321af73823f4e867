//! A guard against the engine getting slower, safe on a shared or slow
//! machine: it never compares a time with a constant. It measures, in the
//! same process and alternating, the thesis scenario's simulated events per
//! wall second and a fixed reference workload's iterations per wall second
//! (plain integer work that no change to irqlab can speed up or slow down),
//! keeps the best of several rounds of each (the least disturbed), and
//! checks their ratio against a floor. A machine that is twice as slow is
//! twice as slow at both, so the ratio holds; a change that makes the
//! engine 30 % slower moves the ratio below the floor.
//!
//! The floor is [`FLOOR_SHARE`] of the ratio measured when it was last set
//! (docs/performance.md, "Guard").
//!
//! It is a benchmark, not part of `cargo test`: on a machine shared with
//! other busy processes the two workloads are disturbed unequally (one
//! round of each is seconds apart, and a neighbour may take the core during
//! one and not the other), and a loaded machine once measured 0.0899 with
//! the same engine that measures 0.136 alone. `make bench` runs it:
//! `cargo test --release -p irqlab-core --test speed_guard -- --ignored --nocapture`.
//! A debug build refuses to measure (its speed says nothing about the
//! release build's) and fails, saying so.

mod common;
use common::scenario;
use std::time::Instant;

const THESIS: &str = include_str!("../../../scenarios/thesis/bare-metal.toml");

/// The ratio measured on the reference machine (a 2-vCPU KVM guest, Xeon
/// at 2.6 GHz) after the speed work of docs/performance.md: thesis
/// busy-wait events per second over reference iterations per second.
const RATIO_MEASURED: f64 = 0.136;
/// The share of [`RATIO_MEASURED`] below which the guard fails. A quarter
/// lower is far beyond this machine's noise (three runs gave 0.1351-0.1374
/// on the best of five rounds) and leaves room for another CPU model's
/// different balance of the two workloads; the engine before the second
/// round of speed work (21.9 M events/s, a ratio of 0.078) fails it, and
/// the one before the first (12.6 M events/s) fails it by far.
const FLOOR_SHARE: f64 = 0.75;
const ROUNDS: usize = 5;

/// The reference workload: a xorshift stream updating a 64 KiB table with
/// a data-dependent branch, the kind of work the engine does (integer
/// arithmetic, L1-resident memory, unpredictable branches). Returns a value
/// so the work cannot be optimised away.
fn reference(iterations: u64) -> u64 {
    let mut table = vec![0u64; 8192];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut acc = 0u64;
    for _ in 0..iterations {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let i = (x % 8192) as usize;
        table[i] = table[i].wrapping_add(x);
        if table[i] & 1 == 1 {
            acc = acc.wrapping_add(table[(i * 7) & 8191]);
        } else {
            acc ^= x >> 3;
        }
    }
    acc
}

#[test]
#[ignore = "a benchmark: run by make bench (cargo test --release -p irqlab-core --test speed_guard -- --ignored --nocapture)"]
fn the_engine_keeps_its_speed_relative_to_a_fixed_workload() {
    assert!(
        !cfg!(debug_assertions),
        "speed_guard cannot measure a debug build: its speed says nothing about the release build's (add --release)"
    );
    let mut s = scenario(THESIS, &["run.duration_s=0.05", "run.warmup_s=0.01"]);
    s.set_profile("busy-wait").unwrap();
    const REF_ITERATIONS: u64 = 20_000_000;
    let (mut best_engine, mut best_ref) = (0.0f64, 0.0f64);
    let mut sink = 0u64;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let summary = irqlab_core::run(&s).unwrap();
        let wall = start.elapsed().as_secs_f64();
        best_engine = best_engine.max(summary.sim_events as f64 / wall);
        let start = Instant::now();
        sink = sink.wrapping_add(reference(std::hint::black_box(REF_ITERATIONS)));
        best_ref = best_ref.max(REF_ITERATIONS as f64 / start.elapsed().as_secs_f64());
    }
    let ratio = best_engine / best_ref;
    eprintln!(
        "speed_guard: thesis busy-wait {:.2} M events/s, reference {:.1} M iterations/s, ratio {ratio:.4} \
         (measured {RATIO_MEASURED:.4} when the floor was set; floor {:.4}) [{sink}]",
        best_engine / 1e6,
        best_ref / 1e6,
        RATIO_MEASURED * FLOOR_SHARE
    );
    assert!(
        ratio >= RATIO_MEASURED * FLOOR_SHARE,
        "the engine simulates {:.2} M events/s where a fixed workload runs {:.1} M iterations/s: a ratio of {ratio:.4}, \
         below the floor {:.4} ({FLOOR_SHARE} x the {RATIO_MEASURED:.4} measured when it was set); \
         the engine or model got slower (see docs/performance.md)",
        best_engine / 1e6,
        best_ref / 1e6,
        RATIO_MEASURED * FLOOR_SHARE
    );
}
