//! The storage I/O path and vIC, by behaviour: analytical oracles for the
//! array (one read at a time; saturation), Little's law for the worker,
//! interrupts per completion with vIC off and on, the delivery ratio's
//! dependence on the commands in flight, the IPI deferral, validation and
//! determinism.

use irqlab_core::{Scenario, Summary};

/// The vIC paper's VM (one vCPU), with cheap or fitted costs.
fn vm(extra: &[(&str, &str)]) -> Scenario {
    let mut s = Scenario::from_toml_str(
        r#"
        [run]
        duration_s = 0.2
        # Past vIC's first 200 ms epoch, in which R = 1.
        warmup_s = 0.25
        [cpu]
        app_cores = 1
        freq_ghz = 2.4
        [vm]
        kind = "lsilogic"
        vcpus = 1
        halt_poll_ns = 0
        [app]
        kind = "iometer"
        "#,
    )
    .unwrap();
    for (k, v) in extra {
        s.set(k, v).unwrap_or_else(|e| panic!("{k}={v}: {e}"));
    }
    s
}

fn run(s: &Scenario) -> Summary {
    irqlab_core::run(s).unwrap()
}

/// Every CPU cost of the path set to `cycles`.
fn costs(cycles: &str) -> Vec<(&'static str, String)> {
    [
        "storage.guest_issue_cycles",
        "storage.guest_complete_cycles",
        "storage.guest_isr_cycles",
        "storage.issue_trap_cycles",
        "storage.ack_trap_cycles",
        "storage.vmm_complete_cycles",
        "storage.vmm_intr_cycles",
        "storage.hba_irq_cycles",
        "storage.vmk_complete_cycles",
        "vm.exit_entry_cycles",
        "vm.ipi_cycles",
        "costs.wakeup_cycles",
        "costs.timer_irq_cycles",
        "costs.context_switch_cycles",
        "costs.interrupt_penalty_cycles",
    ]
    .iter()
    .map(|k| (*k, cycles.to_string()))
    .collect()
}

fn with(base: &[(&str, String)], more: &[(&str, &str)]) -> Scenario {
    let mut v: Vec<(&str, &str)> = base.iter().map(|(k, v)| (*k, v.as_str())).collect();
    v.extend_from_slice(more);
    vm(&v)
}

#[test]
fn one_read_at_a_time_on_a_free_path_takes_the_arrays_time_exactly() {
    // OIO 1, no CPU cost, no clock, fixed service: each read takes
    // service + its frames' transfer + the latency, so IOPS = 1 / that.
    let s = with(
        &costs("0"),
        &[
            ("storage.oio", "1"),
            ("storage.guest_timer_hz", "0"),
            ("storage.array_service", "fixed"),
            ("storage.array_service_ns", "20000"),
            ("storage.array_latency_ns", "80000"),
            ("cpu.wakeup_latency_ns", "0"),
        ],
    );
    let sum = run(&s);
    // Towards the host, 4096 bytes in 2 FCP_DATA frames and the 24-byte
    // FCP_RSP, each frame with 60 bytes of framing: 4,300 bytes of
    // characters at 4GFC's 425 MB/s, 10.118 us.
    let per_read_s = (20_000.0 + 10_118.0 + 80_000.0) * 1e-9;
    let st = sum.storage.as_ref().unwrap();
    assert!((st.iops - 1.0 / per_read_s).abs() / st.iops < 0.002, "{} vs {}", st.iops, 1.0 / per_read_s);
    assert!((sum.latency_us.mean.unwrap() - per_read_s * 1e6).abs() < 0.5);
}

#[test]
fn many_reads_outstanding_saturate_the_array_at_one_over_its_service_time() {
    let s = with(
        &costs("100"),
        &[("storage.oio", "64"), ("storage.array_service_ns", "25000"), ("storage.array_latency_ns", "50000")],
    );
    let st = run(&s).storage.unwrap();
    assert!((st.iops - 40_000.0).abs() / 40_000.0 < 0.03, "{}", st.iops);
}

#[test]
fn littles_law_holds_for_the_workers_reads() {
    // The worker keeps OIO reads outstanding but for the one it is
    // completing and the one it is issuing: IOPS x latency within [OIO-1, OIO].
    for oio in [4u32, 16, 48] {
        let s = vm(&[("storage.oio", &oio.to_string())]);
        let sum = run(&s);
        let l = sum.throughput_qps * sum.latency_us.mean.unwrap() * 1e-6;
        assert!(l <= oio as f64 + 0.05 && l >= oio as f64 - 1.05, "OIO {oio}: {l}");
    }
}

#[test]
fn without_vic_every_completion_raises_the_line_unless_it_is_already_up() {
    let sum = run(&vm(&[("storage.oio", "32")]));
    let st = sum.storage.unwrap();
    assert!(st.vic.is_none());
    assert!(st.virtual_irqs_per_s <= st.iops * 1.001);
    // The level-triggered line merges only completions picked up together.
    assert!(st.virtual_irqs_per_s > 0.8 * st.iops, "{} of {}", st.virtual_irqs_per_s, st.iops);
    // Every post is either an IPI, a wake-up or found the VMM out of guest
    // mode; nothing is deferred.
    assert_eq!(st.ipis_deferred_per_s, 0.0);
    assert!(st.ipis_per_s + st.vm_wakeups_per_s > 0.5 * st.iops, "{} IPIs, {} wake-ups", st.ipis_per_s, st.vm_wakeups_per_s);
}

#[test]
fn vic_delivers_its_ratio_and_the_ratio_follows_the_commands_in_flight() {
    for (oio, lo, hi) in [(8u32, 0.75, 0.8), (16, 0.5, 0.8), (64, 1.0 / 8.0, 1.0 / 6.0)] {
        let s = vm(&[("storage.oio", &oio.to_string()), ("vic.enabled", "true")]);
        let st = run(&s).storage.unwrap();
        let v = st.vic.unwrap();
        // Table 1: R(CIF) for the CIF seen, which is below OIO.
        assert!(st.mean_cif < oio as f64, "OIO {oio}: CIF {}", st.mean_cif);
        assert!(v.mean_ratio >= lo - 1e-9 && v.mean_ratio <= hi + 1e-9, "OIO {oio}: R {}", v.mean_ratio);
        // Algorithm 2 delivers that share of the completions.
        assert!((v.delivered_ratio - v.mean_ratio).abs() < 0.01, "{} vs {}", v.delivered_ratio, v.mean_ratio);
        assert!(st.virtual_irqs_per_s <= v.delivered_ratio * st.iops * 1.01);
    }
}

#[test]
fn vic_holds_completions_for_about_one_interval_at_a_third() {
    // At R = 1/3 a held completion waits for up to two more: on average
    // one inter-completion time, less when the VMM picks up several at once.
    let base = run(&vm(&[("storage.oio", "32")])).storage.unwrap();
    let vic = run(&vm(&[("storage.oio", "32"), ("vic.enabled", "true")])).storage.unwrap();
    assert!((vic.vic.as_ref().unwrap().mean_ratio - 1.0 / 3.0).abs() < 0.02);
    let added_us = vic.reply_wait_us - base.reply_wait_us;
    let interval_us = 1e6 / vic.iops;
    assert!(added_us > 0.25 * interval_us && added_us < 2.0 * interval_us, "{added_us} vs {interval_us}");
}

#[test]
fn the_ipi_threshold_defers_ipis_only_when_set() {
    let on = |t: &str| run(&vm(&[("storage.oio", "32"), ("vic.enabled", "true"), ("vic.ipi_threshold_us", t)]));
    let never = on("0").storage.unwrap();
    assert_eq!(never.ipis_deferred_per_s, 0.0);
    let deferred = on("100").storage.unwrap();
    assert!(deferred.ipis_deferred_per_s > 0.0);
    assert!(deferred.ipis_per_s < never.ipis_per_s);
    let longer = on("1000").storage.unwrap();
    assert!(longer.ipis_per_s <= deferred.ipis_per_s);
}

#[test]
fn vic_lowers_the_cost_per_read_most_where_it_coalesces_most() {
    let pair = |oio: &str| {
        let a = run(&vm(&[("storage.oio", oio)])).storage.unwrap();
        let b = run(&vm(&[("storage.oio", oio), ("vic.enabled", "true")])).storage.unwrap();
        (a, b)
    };
    let (a8, b8) = pair("8");
    let (a64, b64) = pair("64");
    assert!(b8.cycles_per_io < a8.cycles_per_io && b64.cycles_per_io < a64.cycles_per_io);
    assert!(b64.guest_irqs_per_s < 0.5 * a64.guest_irqs_per_s);
    let gain = |a: &irqlab_core::stats::summary::StorageReport, b: &irqlab_core::stats::summary::StorageReport| 1.0 - b.cycles_per_io / a.cycles_per_io;
    assert!(gain(&a64, &b64) > gain(&a8, &b8));
}

#[test]
fn same_seed_same_summary_and_the_seed_matters() {
    let s = vm(&[("storage.oio", "16"), ("vic.enabled", "true")]);
    let a = serde_json::to_string(&run(&s).storage).unwrap();
    let b = serde_json::to_string(&run(&s).storage).unwrap();
    assert_eq!(a, b);
    let c = serde_json::to_string(&run(&vm(&[("storage.oio", "16"), ("vic.enabled", "true"), ("run.seed", "2")])).storage)
        .unwrap();
    assert_ne!(a, c);
}

#[test]
fn bad_storage_scenarios_are_refused_with_the_field_named() {
    let err = |extra: &[(&str, &str)]| {
        let mut s = vm(&[]);
        for (k, v) in extra {
            if let Err(e) = s.set(k, v) {
                return e.to_string();
            }
        }
        irqlab_core::run(&s).map(|_| ()).unwrap_err().to_string()
    };
    assert!(err(&[("storage.oio", "1025")]).contains("storage.oio"));
    assert!(err(&[("storage.background_threads", "2000")]).contains("storage.background_threads"));
    assert!(err(&[("storage.block_bytes", "1000")]).contains("storage.block_bytes"));
    assert!(err(&[("storage.worker_vcpu", "1")]).contains("storage.worker_vcpu"));
    assert!(err(&[("vic.cif_threshold", "0")]).contains("vic.cif_threshold"));
    assert!(err(&[("vic.epoch_ms", "0")]).contains("vic.epoch_ms"));
    assert!(err(&[("storage.link_mb_per_s", "0")]).contains("storage.link_mb_per_s"));
    assert!(err(&[("vm.kind", "passthrough")]).contains("vm.kind"));
    assert!(err(&[("storage.array_service_ns", "0"), ("storage.array_latency_ns", "0")]).contains("storage.array_latency_ns"));
    let e = err(&[("storage.guest_dispatcher", "windows-xp")]);
    assert!(e.contains("storage.guest_dispatcher") && e.contains("windows-2003"), "{e}");
    let e = Scenario::from_toml_str("[vic]\nenabled = true\n").map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("vic"), "{e}");
    let e = Scenario::from_toml_str("[app]\nkind = \"iometer\"\n").map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("vm.kind"), "{e}");
    let e = Scenario::from_toml_str("[storage]\noio = 4\n").map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("storage"), "{e}");
}

/// §4.5's guest: two vCPUs, 8 KB reads at OIO 8, vIC on, and `bg`
/// CPU-bound threads at idle priority.
fn section_4_5(bg: &str, oio: &str, threshold_us: &str) -> irqlab_core::stats::summary::StorageReport {
    run(&vm(&[
        ("vm.vcpus", "2"),
        ("storage.block_bytes", "8192"),
        ("storage.oio", oio),
        ("storage.background_threads", bg),
        ("vic.enabled", "true"),
        ("vic.ipi_threshold_us", threshold_us),
    ]))
    .storage
    .unwrap()
}

#[test]
fn background_threads_alone_use_their_cpus_and_keep_the_guest_from_halting() {
    let st = section_4_5("2", "0", "100");
    let share = st.background_cpu_pct.unwrap();
    assert!(share > 99.0, "{share}");
    assert_eq!(st.iops, 0.0);
    assert!(st.vcpu_halt_pct < 1.0);
}

#[test]
fn with_a_busy_guest_the_ipi_threshold_trades_io_for_computation() {
    // Alone, the reads do not care about the threshold: the guest halts
    // and the VMM looks at the queue then (§4.5).
    let alone = [section_4_5("0", "8", "0"), section_4_5("0", "8", "500")];
    assert!((alone[1].iops / alone[0].iops - 1.0).abs() < 0.05, "{} vs {}", alone[1].iops, alone[0].iops);
    // Beside a CPU-bound load, a longer threshold defers IPIs: fewer reads,
    // more computation.
    let co: Vec<_> = ["0", "100", "500"].iter().map(|t| section_4_5("2", "8", t)).collect();
    for w in co.windows(2) {
        assert!(w[1].iops < w[0].iops, "{} then {}", w[0].iops, w[1].iops);
        assert!(w[1].background_cpu_pct.unwrap() > w[0].background_cpu_pct.unwrap());
    }
    // Both workloads lose by running together.
    assert!(co[0].iops < alone[0].iops);
    assert!(co[0].background_cpu_pct.unwrap() < 95.0);
    // The worker is never starved by the idle-priority threads.
    assert!(co[0].iops > 0.8 * alone[0].iops, "{} vs {}", co[0].iops, alone[0].iops);
}

/// The TPC-C-like load: `users` threads on `vcpus` guest CPUs.
fn oltp(vcpus: &str, extra: &[(&str, &str)]) -> Scenario {
    let mut s = Scenario::from_toml_str(&format!(
        r#"
        [run]
        duration_s = 1.0
        warmup_s = 0.25
        [cpu]
        app_cores = {vcpus}
        freq_ghz = 2.4
        [vm]
        kind = "lsilogic"
        vcpus = {vcpus}
        halt_poll_ns = 0
        [app]
        kind = "oltp"
        [storage]
        block_bytes = 8192
        array_service_ns = 125000
        array_latency_ns = 5875000
        "#
    ))
    .unwrap();
    for (k, v) in extra {
        s.set(k, v).unwrap_or_else(|e| panic!("{k}={v}: {e}"));
    }
    s
}

#[test]
fn one_user_alternates_computing_and_reading() {
    // Free I/O path: a transaction takes its computation (2.4M cycles at
    // 2.4 GHz: 1 ms on average) plus one read (125 us + 8.52 KB at 425 MB/s
    // + 5.875 ms), so about 1 / 7.02 ms transactions per second.
    let mut extra: Vec<(&str, String)> = costs("0");
    extra.retain(|(k, _)| *k != "costs.context_switch_cycles" && *k != "costs.interrupt_penalty_cycles");
    let mut v: Vec<(&str, &str)> = extra.iter().map(|(k, v)| (*k, v.as_str())).collect();
    v.extend_from_slice(&[
        ("oltp.users", "1"),
        ("oltp.compute_cycles", "2400000"),
        ("storage.guest_timer_hz", "0"),
        ("cpu.wakeup_latency_ns", "0"),
        ("costs.context_switch_cycles", "0"),
        ("costs.interrupt_penalty_cycles", "0"),
        ("run.duration_s", "5"),
    ]);
    let st = run(&oltp("1", &v)).storage.unwrap();
    let expected = 1.0 / (1e-3 + 125e-6 + 8432.0 / 400e6 + 5.875e-3);
    let tps = st.transactions_per_s.unwrap();
    assert!((tps / expected - 1.0).abs() < 0.03, "{tps} vs {expected}");
    assert!((st.iops - tps).abs() < 1.0, "one read per transaction");
}

#[test]
fn many_users_saturate_the_cpus_and_a_checkpoint_swings_the_ratio() {
    let base = &[("oltp.users", "80"), ("oltp.compute_cycles", "2100000"), ("vic.enabled", "true")];
    let sum = run(&oltp("4", base));
    assert!(sum.cpu_pct.idle < 5.0, "{:?}", sum.cpu_pct);
    let st = sum.storage.unwrap();
    // CPU-bound: 4 x 2.4 GHz over ~2.2M cycles per transaction.
    let tps = st.transactions_per_s.unwrap();
    assert!(tps > 3500.0 && tps < 4600.0, "{tps}");
    let calm = st.vic.unwrap().epoch_ratios;
    let mut with_ckpt = base.to_vec();
    with_ckpt.extend_from_slice(&[
        ("oltp.checkpoint_interval_ms", "400"),
        ("oltp.checkpoint_writes", "4000"),
        ("oltp.checkpoint_depth", "128"),
    ]);
    let bursty = run(&oltp("4", &with_ckpt)).storage.unwrap().vic.unwrap().epoch_ratios;
    let min = |v: &[f64]| v.iter().cloned().fold(f64::MAX, f64::min);
    assert!(min(&bursty) < 1.0 / 12.0, "{bursty:?}");
    assert!(min(&calm) > min(&bursty), "{calm:?}");
}

#[test]
fn oltp_fields_are_checked() {
    let err = |extra: &[(&str, &str)]| {
        let mut s = oltp("2", &[]);
        for (k, v) in extra {
            if let Err(e) = s.set(k, v) {
                return e.to_string();
            }
        }
        irqlab_core::run(&s).map(|_| ()).unwrap_err().to_string()
    };
    assert!(err(&[("storage.oio", "16")]).contains("storage.oio"));
    assert!(err(&[("oltp.users", "0")]).contains("oltp.users"));
    assert!(err(&[("oltp.checkpoint_writes", "10")]).contains("oltp.checkpoint_writes"));
    assert!(err(&[("cpu.app_cores", "1")]).contains("cpu.app_cores"));
    let e = Scenario::from_toml_str("[oltp]\nusers = 5\n").map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("oltp"), "{e}");
}

#[test]
fn a_latency_target_tunes_the_outstanding_reads_as_sqliosim_does() {
    // Far above what the cached LUN gives: the worker climbs to its ceiling.
    let high = run(&vm(&[("storage.oio", "64"), ("storage.target_latency_us", "100000"), ("run.warmup_s", "1.0")]));
    let l = high.throughput_qps * high.latency_us.mean.unwrap() * 1e-6;
    assert!(l > 62.0, "{l}");
    // Below a single read's latency: it stays at one.
    let low = run(&vm(&[("storage.oio", "64"), ("storage.target_latency_us", "50"), ("run.warmup_s", "1.0")]));
    let l = low.throughput_qps * low.latency_us.mean.unwrap() * 1e-6;
    assert!(l < 1.05, "{l}");
}

#[test]
fn every_vcpu_takes_the_guests_clock() {
    // No reads: the guest's only interrupts are its clock's, 64 Hz on
    // each vCPU (Windows delivers the system clock to every processor).
    for vcpus in ["1", "2", "4"] {
        let s = vm(&[("storage.oio", "0"), ("vm.vcpus", vcpus), ("run.duration_s", "1.0")]);
        let st = run(&s).storage.unwrap();
        let expect = 64.0 * vcpus.parse::<f64>().unwrap();
        assert!((st.guest_irqs_per_s - expect).abs() <= 64.0 * 0.05 + 1.0, "{vcpus} vCPUs: {}", st.guest_irqs_per_s);
    }
}

/// The paper's 2-vCPU guest under Windows Server 2003's dispatcher: the
/// adapter interrupts vCPU 0, the worker's ideal processor is `ideal`.
fn windows(ideal: &str, extra: &[(&str, &str)]) -> Scenario {
    let mut v = vec![
        ("vm.vcpus", "2"),
        ("storage.guest_dispatcher", "windows-2003"),
        ("storage.worker_vcpu", ideal),
        ("storage.interrupt_vcpu", "0"),
        ("storage.oio", "8"),
    ];
    v.extend_from_slice(extra);
    vm(&v)
}

#[test]
fn windows_readies_the_worker_on_its_idle_ideal_processor_with_an_ipi() {
    let st = run(&windows("1", &[])).storage.unwrap();
    let ipis = st.guest_ipis_per_s.expect("reported under windows-2003");
    // One APC per completed read; the worker, readied on the halted vCPU 1
    // or running there when another completes, takes an IPI for most of
    // them (a pending IPI takes later ones with it).
    assert!(ipis > 0.5 * st.iops && ipis <= st.iops * 1.001, "{ipis} IPIs at {} IOPS", st.iops);
    // IPIs are not among the interrupts Windows counts.
    assert!(st.guest_irqs_per_s < st.iops * 1.05, "{}", st.guest_irqs_per_s);
}

#[test]
fn a_worker_whose_ideal_processor_takes_the_interrupts_stays_there_without_ipis() {
    // vCPU 0 is idle while its DPC readies the worker (only the
    // assignment of a thread takes a processor out of the idle summary),
    // so the worker runs where the interrupt came.
    let st = run(&windows("0", &[])).storage.unwrap();
    assert_eq!(st.guest_ipis_per_s, Some(0.0));
    assert!(st.iops > 20_000.0);
}

#[test]
fn with_one_vcpu_windows_dispatching_is_pinned_dispatching() {
    let pinned = run(&vm(&[("storage.oio", "16")])).storage.unwrap();
    let win = run(&vm(&[("storage.oio", "16"), ("storage.guest_dispatcher", "windows-2003")])).storage.unwrap();
    assert_eq!(win.guest_ipis_per_s, Some(0.0));
    assert_eq!(pinned.guest_ipis_per_s, None);
    assert_eq!((win.iops, win.cycles_per_io, win.guest_irqs_per_s), (pinned.iops, pinned.cycles_per_io, pinned.guest_irqs_per_s));
}

#[test]
fn a_busy_ideal_processor_is_preempted_from_idle_priority_by_an_ipi() {
    // Hyper Pi's threads keep both vCPUs busy at idle priority: no
    // processor is idle, so the worker preempts its ideal one's thread,
    // which takes a dispatch IPI from vCPU 0's DPC.
    let st = run(&windows("1", &[("storage.background_threads", "2")])).storage.unwrap();
    assert!(st.guest_ipis_per_s.unwrap() > 0.5 * st.iops, "{:?} at {}", st.guest_ipis_per_s, st.iops);
    assert!(st.background_cpu_pct.unwrap() > 30.0);
}

#[test]
fn the_oltp_load_refuses_windows_dispatching() {
    let mut s = oltp("4", &[]);
    let e = s.set("storage.guest_dispatcher", "windows-2003").unwrap_err().to_string();
    assert!(e.contains("storage.guest_dispatcher") && e.contains("oltp"), "{e}");
}
