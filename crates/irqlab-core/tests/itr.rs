//! The 82599's interrupt throttling and the forwarding workload of the ITR
//! paper (Emmerich et al., SPECTS 2015): an analytical oracle of the
//! throttled vector, the orderings the three regimes must keep whatever the
//! constants, and the scenario's rules.

mod common;
use common::*;

const FORWARDING: &str = include_str!("../../../scenarios/itr/forwarding.toml");

/// A throttled vector with zero-cost processing under Poisson arrivals at
/// λ: after an interrupt the vector waits its interval T; if a packet came
/// meanwhile it fires at T, else at the next arrival (memoryless, mean
/// 1/λ). Rate 1/(T + e^{−λT}/λ); the packets of (0, T] wait T/2 on
/// average, those after none, so the mean wait is (T²/2)/(T + e^{−λT}/λ).
#[test]
fn throttled_vector_oracle() {
    let lambda: f64 = 100_000.0;
    // Rates whose EITR intervals are 10.24, 20.48 and 51.2 µs.
    for (rate, t_us) in [(100_000u32, 10.24f64), (50_000, 20.48), (20_000, 51.2)] {
        let r = run(
            ZERO_COST,
            &["nic.kind=\"82599\"", "itr.policy=\"static\"", &format!("itr.rate={rate}")],
        );
        let t = t_us * 1e-6;
        let cycle = t + (-lambda * t).exp() / lambda;
        assert_close(&format!("irqs/s at {rate}/s"), r.irqs_per_s, 1.0 / cycle, 0.03);
        assert_close(&format!("wait at {rate}/s"), r.rx_ring_wait_us, t * t / 2.0 / cycle * 1e6, 0.04);
    }
    // Off: an interrupt per packet.
    let r = run(ZERO_COST, &["nic.kind=\"82599\"", "itr.policy=\"off\""]);
    assert_close("irqs/s off", r.irqs_per_s, lambda, 0.03);
}

fn forwarding(policy: &str, pps: u32) -> irqlab_core::Summary {
    run(FORWARDING, &[&format!("itr.policy=\"{policy}\""), &format!("load.qps={pps}"), "run.duration_s=0.05"])
}

/// §IV–V: throttling trades CPU for latency, the linear ITR in between.
#[test]
fn the_regimes_order_interrupts_cpu_and_latency_at_medium_load() {
    let (off, ixgbe, linear) = (forwarding("off", 500_000), forwarding("ixgbe", 500_000), forwarding("linear", 500_000));
    let busy = |s: &irqlab_core::Summary| 100.0 - s.cpu_pct.idle;
    let mean = |s: &irqlab_core::Summary| s.latency_us.mean.unwrap();
    assert!(off.irqs_per_s > linear.irqs_per_s && linear.irqs_per_s > ixgbe.irqs_per_s);
    assert!(busy(&off) > busy(&linear) && busy(&linear) > busy(&ixgbe));
    assert!(mean(&off) < mean(&linear) && mean(&linear) < mean(&ixgbe));
    // Every regime forwards what it is offered below overload.
    for s in [&off, &ixgbe, &linear] {
        assert_eq!(s.drops, 0);
        assert_close("throughput", s.throughput_qps, 500_000.0, 0.01);
        // The load-latency product is the busy cycles per packet times the mean latency.
        assert_close("P_ll", s.load_latency_product.unwrap(), s.cycles_per_query * mean(s), 1e-9);
    }
    // ixgbe's 8000/s floor: at 0.5 Mpps it is in its bulk state.
    assert!(ixgbe.irqs_per_s < 8_200.0, "{}", ixgbe.irqs_per_s);
}

/// The TX ring's write-back threshold follows how the ITR was set (ixgbe
/// 3.14.5 `ixgbe_configure_tx_ring`): off at module load, WTHRESH 1 and
/// each forwarded frame's write-back interrupts after its RX interrupt,
/// two per packet; off by `ethtool -C` after the interface came up with the
/// dynamic ITR, WTHRESH 8 and no interval to flush them, so one write-back
/// interrupt per eight packets at a load light enough for every packet to
/// have its own RX interrupt (CBR, 50 µs apart).
#[test]
fn tx_write_backs_interrupt_per_descriptor_or_per_eight() {
    let at = |set_with: &str| {
        run(
            FORWARDING,
            &["itr.policy=\"off\"", &format!("itr.set_with=\"{set_with}\""), "load.qps=20000", "run.duration_s=0.05"],
        )
    };
    let (module, ethtool) = (at("module-parameter"), at("ethtool"));
    assert_close("irqs per packet, module parameter", module.irqs_per_s / module.throughput_qps, 2.0, 0.01);
    assert_close("irqs per packet, ethtool", ethtool.irqs_per_s / ethtool.throughput_qps, 1.125, 0.01);
    assert_eq!(module.latency_us.mean, ethtool.latency_us.mean, "the TX interrupt comes after the packet left");
    // The dynamic ITR's ring has WTHRESH 8 either way: the same run.
    let dynamic = |set_with: &str| {
        run(FORWARDING, &["itr.policy=\"ixgbe\"", &format!("itr.set_with=\"{set_with}\""), "load.qps=20000", "run.duration_s=0.05"])
    };
    assert_eq!(dynamic("module-parameter").irqs_per_s, dynamic("ethtool").irqs_per_s);
}

/// The DuT's idle states if they are modelled (`cpu.idle_states`,
/// intel_idle's Ivy Bridge table, the menu governor): the time the report
/// puts in the states is the cores' idle time, a light load reaches deeper states than a heavy one, and a wake-up
/// from them costs latency that the fixed model without exit latency does
/// not have.
#[test]
fn idle_states_account_for_the_idle_time_and_deepen_as_the_load_falls() {
    let at = |pps: u32, extra: &[&str]| {
        let mut o = vec![
            "itr.policy=\"off\"".to_string(),
            format!("load.qps={pps}"),
            "run.duration_s=0.05".to_string(),
            "cpu.idle_states=\"ivb\"".to_string(),
        ];
        o.extend(extra.iter().map(|s| s.to_string()));
        let o: Vec<&str> = o.iter().map(String::as_str).collect();
        run(FORWARDING, &o)
    };
    // The mean exit latency of the states entered, weighted by entries.
    let mean_exit_us = |s: &irqlab_core::Summary| {
        let st = s.idle_states.as_ref().expect("an idle-state table reports its states");
        let n: f64 = st.iter().map(|x| x.entries_per_s).sum();
        st.iter().map(|x| x.entries_per_s * x.exit_latency_us as f64).sum::<f64>() / n
    };
    let (light, heavy) = (at(5_000, &[]), at(300_000, &[]));
    for s in [&light, &heavy] {
        let resident: f64 = s.idle_states.as_ref().unwrap().iter().map(|x| x.residency_pct).sum();
        assert_close("time in idle states vs idle CPU", resident, s.cpu_pct.idle, 0.01);
    }
    assert!(mean_exit_us(&light) > mean_exit_us(&heavy) + 1.0, "{} vs {}", mean_exit_us(&light), mean_exit_us(&heavy));
    let fixed = at(5_000, &["cpu.idle_states=\"fixed\"", "cpu.wakeup_latency_ns=0"]);
    assert!(fixed.idle_states.is_none());
    assert!(light.latency_us.mean.unwrap() > fixed.latency_us.mean.unwrap() + 1.0);
}

/// Throttling does not change the maximum throughput (§IV-B): past
/// overload every regime polls, and forwards the same rate.
#[test]
fn overload_is_the_same_for_every_regime_and_drops_begin_there() {
    let off = forwarding("off", 2_500_000);
    assert!(off.drops > 0 && off.drops_by_site.ring == off.drops);
    for p in ["ixgbe", "linear"] {
        let s = forwarding(p, 2_500_000);
        assert_close(&format!("max throughput {p}"), s.throughput_qps, off.throughput_qps, 0.005);
    }
    assert_eq!(forwarding("off", 2_000_000).drops, 0);
}

/// `ixgbe_clean_rx_irq` goes on to frames written back while it forwarded
/// the earlier ones, so near saturation a packet waits only for the
/// backlog ahead of it, not for a whole batch: without ITR the latency at
/// 2.0 Mpps stays within twice that at 1.0 Mpps (taking each poll's frames
/// as one batch, it was 26 µs against 5.5 µs).
#[test]
fn a_forwarding_poll_takes_the_frames_that_arrive_while_it_runs() {
    let (medium, high) = (forwarding("off", 1_000_000), forwarding("off", 2_000_000));
    let (m, h) = (medium.latency_us.mean.unwrap(), high.latency_us.mean.unwrap());
    assert!(h < 2.0 * m, "{h} µs at 2.0 Mpps vs {m} µs at 1.0 Mpps");
    assert_eq!(high.drops, 0);
}

#[test]
fn forwarding_runs_are_deterministic() {
    let a = serde_json::to_value(forwarding("linear", 1_000_000)).unwrap();
    let b = serde_json::to_value(forwarding("linear", 1_000_000)).unwrap();
    let strip = |mut v: serde_json::Value| {
        v.as_object_mut().unwrap().remove("wall_s");
        v
    };
    assert_eq!(strip(a), strip(b));
}

#[test]
fn scenario_rules_name_the_field() {
    let err = |base: &str, sets: &[&str]| {
        let mut s = irqlab_core::Scenario::from_toml_str(base).unwrap();
        let mut last = Ok(());
        for kv in sets {
            last = s.set_pair(kv);
            if last.is_err() {
                break;
            }
        }
        last.unwrap_err().to_string()
    };
    let e = err(ZERO_COST, &["itr.policy=\"linear\""]);
    assert!(e.contains("itr") && e.contains("82599"), "{e}");
    let e = err(FORWARDING, &["itr.rate=977"]);
    assert!(e.contains("itr.rate") && e.contains("978"), "{e}");
    let e = err(FORWARDING, &["itr.min_rate=100000"]);
    assert!(e.contains("itr.min_rate"), "{e}");
    let e = err(FORWARDING, &["load.open_loop_backlog=\"client\""]);
    assert!(e.contains("load.open_loop_backlog") && e.contains("forwarding"), "{e}");
    let e = err(FORWARDING, &["itr.policy=\"fast\""]);
    assert!(e.contains("itr.policy") && e.contains("linear"), "{e}");
    let e = err(FORWARDING, &["nic.kind=\"e1000\""]);
    assert!(e.contains("nic.kind") && e.contains("82599"), "{e}");
}

/// The SR-IOV paper's golden-section ITR drives the vector: it probes
/// rates inside its range, and a narrow range pins the vector's interrupt
/// rate there (the search can only answer what it may probe).
#[test]
fn the_golden_section_itr_keeps_the_rate_inside_its_range() {
    let narrow = run(
        FORWARDING,
        &[
            "itr.policy=\"golden-section\"",
            "itr.min_rate=20000",
            "itr.max_rate=30000",
            "itr.accept_rate=1000",
            "load.qps=1500000",
            "run.duration_s=0.05",
        ],
    );
    // Under load the vector interrupts at about its throttled rate.
    assert!(narrow.irqs_per_s > 15_000.0 && narrow.irqs_per_s < 31_000.0, "{}", narrow.irqs_per_s);
    let wide = run(
        FORWARDING,
        &["itr.policy=\"golden-section\"", "itr.min_rate=60000", "itr.max_rate=100000", "load.qps=1500000", "run.duration_s=0.05"],
    );
    assert!(wide.irqs_per_s > narrow.irqs_per_s * 1.5, "{} vs {}", wide.irqs_per_s, narrow.irqs_per_s);
    // Its parameters are checked.
    let mut s = irqlab_core::Scenario::from_toml_str(FORWARDING).unwrap();
    s.set_pair("itr.policy=\"golden-section\"").unwrap();
    let e = s.set_pair("itr.accept_rate=500000").unwrap_err().to_string();
    assert!(e.contains("itr.accept_rate"), "{e}");
    let e = s.set_pair("itr.accept_rate=95000").unwrap_err().to_string();
    assert!(e.contains("accept_rate_per_s"), "{e}");
}
