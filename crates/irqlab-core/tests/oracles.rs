//! The analytical oracles (docs/architecture.md, "Trust"): each mechanism on a minimal scenario
//! (one core, zero costs, Poisson arrivals at λ = 100k/s for 2 s, i.e. about
//! 200k samples) against its queueing formula. Tolerances: the standard
//! error of a mean waiting time over ~200k correlated samples is well under
//! 1 %; we allow 3 % for rates and 4 % for waits.

mod common;
use common::*;

const LAMBDA: f64 = 100_000.0;

/// Interrupt every B packets (`rx-frames` B, no timer): rate λ/B, mean added
/// wait (B−1)/(2λ).
#[test]
fn interrupt_every_b_packets() {
    for b in [2u32, 4, 16] {
        let r = run(ZERO_COST, &[&format!("coalesce.rx-frames={b}")]);
        assert_close(&format!("irqs/s B={b}"), r.irqs_per_s, LAMBDA / b as f64, 0.03);
        let wait_us = (b as f64 - 1.0) / (2.0 * LAMBDA) * 1e6;
        assert_close(&format!("wait B={b}"), r.rx_ring_wait_us, wait_us, 0.04);
        assert_close("packets/irq", r.packets_per_irq, b as f64, 0.03);
    }
}

/// Timer T armed at the first packet after an interrupt (`rx-usecs` T, EQE
/// mode, no frame bound): rate λ/(1+λT), mean wait (T + λT²/2)/(1+λT).
#[test]
fn timer_armed_at_first_packet() {
    for t_us in [5u32, 20, 50] {
        let r = run(ZERO_COST, &[&format!("coalesce.rx-usecs={t_us}"), "coalesce.cqe-mode-rx=false"]);
        let t = t_us as f64 * 1e-6;
        let rate = LAMBDA / (1.0 + LAMBDA * t);
        let wait_us = (t + LAMBDA * t * t / 2.0) / (1.0 + LAMBDA * t) * 1e6;
        assert_close(&format!("irqs/s T={t_us}us"), r.irqs_per_s, rate, 0.03);
        assert_close(&format!("wait T={t_us}us"), r.rx_ring_wait_us, wait_us, 0.04);
    }
}

/// Busy polling as M/G/1 with exhaustive service and vacations: the thread
/// polls, serves everything found, and when a poll is empty spins V before
/// polling again. Wq = λE[S²]/(2(1−ρ)) + E[V²]/(2E[V]).
#[test]
fn busy_polling_is_mg1_with_vacations() {
    // E[S] = 4 µs exponential (ρ = 0.4), V = 2 µs deterministic.
    let mean_s = 4e-6;
    let v = 2e-6;
    let r = run(
        ZERO_COST,
        &[
            "app.service={ dist = \"exponential\", mean_cycles = 4000 }",
            "costs.busy_poll_iteration_cycles=2000",
            "costs.epoll_wait_cycles=1",
            "epoll.busy_poll_usecs=100000000",
            "epoll.busy_poll_budget=64",
            "epoll.prefer_busy_poll=true",
            "epoll.blocking=false",
            "napi.napi_defer_hard_irqs=100",
            "napi.gro_flush_timeout=10000000000",
        ],
    );
    assert!(r.busy_poll_pct > 99.9, "packets should be busy polled: {}", r.busy_poll_pct);
    let rho = LAMBDA * mean_s;
    let es2 = 2.0 * mean_s * mean_s;
    let wq = LAMBDA * es2 / (2.0 * (1.0 - rho)) + v / 2.0;
    // Latency = Wq + S (+ 1 ns per epoll_wait, negligible).
    assert_close("busy-poll sojourn", r.latency_us.mean.unwrap(), (wq + mean_s) * 1e6, 0.04);
}

/// Interrupt-driven with a C-state exit D per busy period: M/G/1 with setup
/// times. Wq = λE[S²]/(2(1−ρ)) + (2E[D] + λE[D²])/(2(1+λE[D])).
#[test]
fn wakeup_latency_is_mg1_with_setup_times() {
    let mean_s = 4e-6;
    for d_us in [5u64, 20] {
        let d = d_us as f64 * 1e-6;
        let r = run(
            ZERO_COST,
            &["app.service={ dist = \"exponential\", mean_cycles = 4000 }", &format!("cpu.wakeup_latency_ns={}", d_us * 1000)],
        );
        let rho = LAMBDA * mean_s;
        let es2 = 2.0 * mean_s * mean_s;
        let wq = LAMBDA * es2 / (2.0 * (1.0 - rho)) + (2.0 * d + LAMBDA * d * d) / (2.0 * (1.0 + LAMBDA * d));
        assert_close(&format!("sojourn D={d_us}us"), r.latency_us.mean.unwrap(), (wq + mean_s) * 1e6, 0.04);
    }
}
