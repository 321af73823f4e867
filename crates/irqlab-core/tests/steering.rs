//! Software packet steering and the bulk TCP receiver, by behaviour: the
//! IPI oracle, the link-limited throughput, backlog drops, IAPS's fewer
//! IPIs, validation and determinism.

use irqlab_core::{Scenario, TraceEvent};

/// Eight cores (two for the oracle) receiving bulk streams on one queue.
fn bulk(cores: u32, extra: &[(&str, &str)]) -> Scenario {
    let mut s = Scenario::from_toml_str(&format!(
        r#"
        [run]
        duration_s = 0.02
        warmup_s = 0.005
        [cpu]
        app_cores = {cores}
        [nic]
        queues = 1
        rx-ring-size = 2048
        wire_latency_ns = 5000
        [coalesce]
        rx-usecs = 50
        rx-frames = 0
        [app]
        kind = "bulk"
        "#
    ))
    .unwrap();
    for (k, v) in extra {
        s.set(k, v).unwrap_or_else(|e| panic!("{k}={v}: {e}"));
    }
    s
}

#[test]
fn with_one_flow_steered_to_one_remote_core_every_ipi_is_an_idle_backlog_filled() {
    // The oracle of the issue: RPS sends one flow from core 0 (the
    // queue's interrupt core) to core 1 only; an IPI must go out exactly
    // when a packet finds core 1's backlog idle, never otherwise.
    let s = bulk(
        2,
        &[
            ("steering.scheme", "rps"),
            ("steering.rps_cpus", "[1]"),
            ("bulk.streams", "1"),
            ("run.warmup_s", "0"),
        ],
    );
    let (sum, trace) = irqlab_core::run_traced(&s, 10_000_000).unwrap();
    let mut scheduled = 0u64;
    let mut ipis = 0u64;
    let mut outstanding = 0i64;
    for (_, e) in &trace {
        match *e {
            TraceEvent::BacklogScheduled { core, remote } => {
                assert_eq!(
                    (core, remote),
                    (1, true),
                    "only core 1's backlog, only from core 0"
                );
                scheduled += 1;
                outstanding += 1;
                assert!(
                    outstanding <= 1,
                    "a second IPI was queued for a backlog already scheduled"
                );
            }
            TraceEvent::IpiHandled { core } => {
                assert_eq!(core, 1);
                ipis += 1;
                outstanding -= 1;
                assert!(outstanding >= 0, "an IPI without an idle backlog filled");
            }
            _ => {}
        }
    }
    assert!(ipis > 100, "the flow needed IPIs ({ipis})");
    // Every transition but perhaps the last (its IPI still on its way) was signalled.
    assert!(
        scheduled - ipis <= 1,
        "{scheduled} idle-backlog fills, {ipis} IPIs"
    );
    let st = sum.steering.unwrap();
    assert!((st.remote_pct - 100.0).abs() < 1e-9);
    assert!(
        (st.ipis_per_s * 0.02 - ipis as f64).abs() <= 1.0,
        "summary {} /s",
        st.ipis_per_s
    );
}

#[test]
fn an_idle_receiver_reads_at_the_links_goodput() {
    // 50 Gbit/s of 1538-byte wire frames carrying 1448 bytes each.
    let s = bulk(
        8,
        &[
            ("steering.scheme", "rps"),
            ("bulk.streams", "4"),
            ("costs.rx_frame_cycles", "100"),
        ],
    );
    let sum = irqlab_core::run(&s).unwrap();
    let b = sum.bulk.unwrap();
    let goodput = 50.0 * 1448.0 / 1538.0;
    assert!(
        (b.throughput_gbps - goodput).abs() / goodput < 0.01,
        "{} Gbit/s",
        b.throughput_gbps
    );
    assert_eq!(b.losses, 0);
    assert!(
        b.frames_per_gro_packet > 20.0,
        "GRO merges back-to-back frames ({})",
        b.frames_per_gro_packet
    );
}

#[test]
fn rss_spreads_flows_over_queues_without_ipis() {
    let s = bulk(
        8,
        &[
            ("nic.queues", "8"),
            ("steering.scheme", "rss"),
            ("bulk.streams", "16"),
        ],
    );
    let sum = irqlab_core::run(&s).unwrap();
    let st = sum.steering.unwrap();
    assert_eq!(
        (st.ipis_per_s, st.steered_per_s, st.backlog_drops),
        (0.0, 0.0, 0)
    );
    assert!(sum.bulk.unwrap().throughput_gbps > 40.0);
}

#[test]
fn a_backlog_that_cannot_keep_up_drops_and_the_senders_back_off() {
    // Protocol processing far slower than the link, a short backlog.
    let s = bulk(
        2,
        &[
            ("steering.scheme", "rps"),
            ("steering.rps_cpus", "[1]"),
            ("steering.netdev_max_backlog", "4"),
            ("bulk.streams", "4"),
            ("costs.tcp_skb_cycles", "200000"),
        ],
    );
    let sum = irqlab_core::run(&s).unwrap();
    let (st, b) = (sum.steering.unwrap(), sum.bulk.unwrap());
    assert!(st.backlog_drops > 0, "no backlog drop");
    assert_eq!(
        sum.drops_by_site.ring, 0,
        "backlog drops are counted apart from the ring's"
    );
    assert!(b.window_reductions > 0 && b.throughput_gbps < 10.0, "{b:?}");
}

#[test]
fn iaps_needs_fewer_ipis_than_rps_for_many_streams() {
    let run = |scheme: &str| {
        let s = bulk(8, &[("steering.scheme", scheme), ("bulk.streams", "32")]);
        irqlab_core::run(&s).unwrap()
    };
    let (rps, iaps) = (run("rps"), run("iaps"));
    let (r, i) = (rps.steering.unwrap(), iaps.steering.unwrap());
    assert!(
        i.packets_per_ipi > 1.5 * r.packets_per_ipi,
        "IAPS {} vs RPS {} packets per IPI",
        i.packets_per_ipi,
        r.packets_per_ipi
    );
    let shares = i.iaps.expect("IAPS decision shares");
    let total = shares.previous_busy_pct + shares.new_busy_pct + shares.no_busy_pct;
    assert!((total - 100.0).abs() < 1e-6, "{shares:?}");
    assert!(r.iaps.is_none());
}

#[test]
fn steering_is_refused_where_it_cannot_apply() {
    let e = Scenario::from_toml_str("[steering]\nscheme = \"iaps\"\n")
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(e.contains("steering.scheme") && e.contains("bulk"), "{e}");
    let e = Scenario::from_toml_str("[app]\nkind = \"bulk\"\n[cpu]\napp_cores = 2\n[nic]\nqueues = 1\n[steering]\nscheme = \"rps\"\nrps_cpus = [2]\n")
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("steering.rps_cpus") && e.contains("0 to 1"),
        "{e}"
    );
    let e = Scenario::from_toml_str("[bulk]\nstreams = 1025\n[app]\nkind = \"bulk\"\n")
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(e.contains("bulk.streams"), "{e}");
    let e = Scenario::from_toml_str(
        "[app]\nkind = \"bulk\"\n[bulk]\nmss_bytes = 8948\nrcvbuf_bytes = 4096\n",
    )
    .map(|_| ())
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("bulk.rcvbuf_bytes") && e.contains("17896"),
        "{e}"
    );
    let e = Scenario::from_toml_str("[bulk]\nstreams = 4\n")
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(e.contains("bulk") && e.contains("app.kind"), "{e}");
    let e = Scenario::from_toml_str("[app]\nkind = \"bulk\"\n[bulk]\nsender_queues = 0\n").map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("bulk.sender_queues") && e.contains("1 and 1024"), "{e}");
    let e = Scenario::from_toml_str("[napi]\nhz = 200\n")
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(e.contains("napi.hz") && e.contains("250"), "{e}");
}

#[test]
fn a_bulk_run_is_deterministic_and_the_seed_moves_the_flows() {
    let json = |seed: &str| {
        let s = bulk(
            8,
            &[
                ("steering.scheme", "rps"),
                ("bulk.streams", "8"),
                ("run.seed", seed),
            ],
        );
        let mut sum = irqlab_core::run(&s).unwrap();
        sum.wall_s = 0.0;
        serde_json::to_string(&sum).unwrap()
    };
    assert_eq!(json("3"), json("3"));
    assert_ne!(
        json("3"),
        json("4"),
        "the seed draws the streams' ports, so their hashes and cores"
    );
}

#[test]
fn with_many_flows_and_every_scheme_each_core_gets_one_ipi_per_idle_backlog_filled_remotely() {
    for scheme in ["rps", "rfs", "iaps"] {
        let s = bulk(
            8,
            &[
                ("steering.scheme", scheme),
                ("bulk.streams", "32"),
                ("run.warmup_s", "0"),
                ("napi.hz", "250"),
            ],
        );
        let (_, trace) = irqlab_core::run_traced(&s, 10_000_000).unwrap();
        let mut pending = [0i64; 8];
        let mut ipis = 0u64;
        for (_, e) in &trace {
            match *e {
                TraceEvent::BacklogScheduled { core, remote: true } => {
                    pending[core as usize] += 1;
                    assert!(
                        pending[core as usize] <= 1,
                        "{scheme}: two IPIs queued for core {core}'s backlog"
                    );
                }
                TraceEvent::IpiHandled { core } => {
                    pending[core as usize] -= 1;
                    ipis += 1;
                    assert!(
                        pending[core as usize] >= 0,
                        "{scheme}: an IPI to core {core} without a remote fill"
                    );
                }
                _ => {}
            }
        }
        assert!(ipis > 100, "{scheme}: {ipis} IPIs");
    }
}
