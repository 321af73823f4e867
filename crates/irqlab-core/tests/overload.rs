//! Open loop far beyond capacity (the thesis scenario serves ~0.96 M
//! queries/s closed loop): every profile keeps serving, the application
//! keeps a share of its cores (ksoftirqd takes the NET_RX work and the
//! scheduler alternates it with the application), and every drop is counted
//! where it happened. The client here pipelines (`load.open_loop_backlog =
//! "server"`), so the excess reaches the server; a mutilate-like client
//! holds it instead (the last tests). Memory staying flat as the run gets longer is checked
//! on the real process in `tests/python/test_overload_memory.py`.

mod common;
use common::*;

const THESIS: &str = include_str!("../../../scenarios/thesis/bare-metal.toml");
/// The open loop's excess queues at the server (a pipelining client).
const SERVER: &str = "load.open_loop_backlog=server";
const PROFILES: [&str; 4] = ["no-coalescing", "adaptive-coalescing", "busy-wait", "irq-suspend"];

#[test]
fn every_profile_keeps_serving_at_2x_and_10x_capacity() {
    for qps in ["2000000", "10000000"] {
        for p in PROFILES {
            let qps_set = format!("load.qps={qps}");
            let r = run_profile(THESIS, p, &[&qps_set, SERVER, "run.duration_s=0.1", "run.warmup_s=0.05"]);
            let what = format!("{p} at {qps} queries/s");
            assert!(r.throughput_qps > 50_000.0, "{what}: {} queries/s", r.throughput_qps);
            let app = r.cpu_pct.user + r.cpu_pct.system;
            assert!(app > 10.0, "{what}: the application got {app:.1} % of its cores: {:?}", r.cpu_pct);
            let d = &r.drops_by_site;
            assert_eq!(r.drops, d.ring + d.socket + d.qdisc, "{what}: {d:?}");
            // At 10× the rings overflow at once; at 2× a short run may
            // still be filling the socket buffers.
            if qps == "10000000" {
                assert!(r.drops > 0, "{what}: {d:?}");
                assert!(r.warnings.iter().any(|w| w.contains("dropped")), "{what}: {:?}", r.warnings);
            }
            assert!(r.latency_us.p99.is_some());
            assert_eq!(r.retransmits, 0, "{what}: an open-loop request that is dropped is lost");
        }
    }
}

/// Before ksoftirqd shared the core, the softirq kept it whenever the ring
/// never drained: at 5 M queries/s nothing completed under any profile.
#[test]
fn ksoftirqd_alternates_with_the_application() {
    let r = run_profile(THESIS, "irq-suspend", &["load.qps=5000000", SERVER, "run.duration_s=0.1", "run.warmup_s=0.05"]);
    // Two runnable threads per core, a slice each: about half the time each.
    assert!((r.cpu_pct.softirq - 50.0).abs() < 10.0, "{:?}", r.cpu_pct);
    assert!(r.context_switches_per_s > 0.0);
}

/// A closed loop loses no connection to a drop: the client's TCP sends the
/// request again after the retransmission timeout, and the latency of that
/// request counts from its first send.
#[test]
fn closed_loop_drops_are_retransmitted() {
    let r = run_profile(
        THESIS,
        "no-coalescing",
        &["nic.rx-ring-size=16", "run.duration_s=0.5", "load.retransmit_timeout_ns=200000000"],
    );
    assert!(r.drops_by_site.ring > 0, "{:?}", r.drops_by_site);
    assert!(r.retransmits > 0);
    // Every connection keeps going: throughput stays near the unconstrained closed loop's.
    let free = run_profile(THESIS, "no-coalescing", &["run.duration_s=0.5"]);
    assert!(r.throughput_qps > 0.8 * free.throughput_qps, "{} vs {}", r.throughput_qps, free.throughput_qps);
    assert!(r.latency_us.p999.unwrap() >= 0.0);
}

/// The socket receive buffer bounds what waits for the application.
#[test]
fn a_full_socket_buffer_drops_at_the_socket() {
    let small = run_profile(THESIS, "no-coalescing", &["load.qps=2000000", SERVER, "socket.rcvbuf_bytes=4096", "run.duration_s=0.05"]);
    let big = run_profile(THESIS, "no-coalescing", &["load.qps=2000000", SERVER, "socket.rcvbuf_bytes=1048576", "run.duration_s=0.05"]);
    assert!(small.drops_by_site.socket > 0, "{:?}", small.drops_by_site);
    assert!(small.drops_by_site.socket > big.drops_by_site.socket, "{:?} vs {:?}", small.drops_by_site, big.drops_by_site);
}

/// A full TX ring queues replies in the qdisc, up to `nic.txqueuelen`.
#[test]
fn a_full_qdisc_drops_replies() {
    let r = run_profile(THESIS, "no-coalescing", &["nic.tx-ring-size=1", "nic.txqueuelen=1", "run.duration_s=0.05"]);
    assert!(r.drops_by_site.qdisc > 0, "{:?}", r.drops_by_site);
    let roomy = run_profile(THESIS, "no-coalescing", &["nic.tx-ring-size=1", "nic.txqueuelen=1000", "run.duration_s=0.05"]);
    assert_eq!(roomy.drops, 0, "{:?}", roomy.drops_by_site);
}

/// Nothing completes in a window shorter than one round trip: latency is
/// null, not zero, and the summary says why.
#[test]
fn no_completion_means_null_latency_and_a_warning() {
    let r = run_profile(THESIS, "busy-wait", &["run.warmup_s=0", "run.duration_s=0.00001"]);
    assert_eq!(r.requests_completed, 0);
    assert_eq!(r.latency_us, irqlab_core::stats::summary::LatencyUs::default());
    assert!(r.latency_us.p99.is_none());
    assert!(r.warnings.iter().any(|w| w.contains("no request completed")), "{:?}", r.warnings);
    let json = serde_json::to_value(&r).unwrap();
    assert!(json["latency_us"]["p99"].is_null());
}

/// mutilate (depth 1) holds a request at the client while its connection
/// waits for a reply, so an open loop beyond capacity cannot push the
/// server past its closed-loop maximum; the held requests are counted and
/// the summary says what that does to latency.
#[test]
fn a_mutilate_client_holds_the_excess_and_serves_the_closed_loop_maximum() {
    for p in ["no-coalescing", "adaptive-coalescing"] {
        let closed = run_profile(THESIS, p, &["run.duration_s=0.2"]);
        let open = run_profile(THESIS, p, &["load.qps=2000000", "run.duration_s=0.2"]);
        let pipelined = run_profile(THESIS, p, &["load.qps=2000000", SERVER, "run.duration_s=0.2"]);
        assert!(open.held_at_client > 0 && pipelined.held_at_client == 0);
        assert!(open.warnings.iter().any(|w| w.contains("could not offer load.qps")), "{:?}", open.warnings);
        let ratio = open.throughput_qps / closed.throughput_qps;
        assert!((ratio - 1.0).abs() < 0.02, "{p}: open {} vs closed {}", open.throughput_qps, closed.throughput_qps);
        // No socket backlog builds up: latency stays that of the closed loop.
        assert!(open.latency_us.p99.unwrap() < 2.0 * closed.latency_us.p99.unwrap(), "{p}");
        assert!(pipelined.latency_us.p99.unwrap() > 10.0 * closed.latency_us.p99.unwrap(), "{p}");
    }
}

/// A held connection would wait forever for a lost request: the client's
/// TCP retransmits it, as in the closed loop.
#[test]
fn a_mutilate_client_retransmits_what_was_dropped() {
    let r = run_profile(
        THESIS,
        "adaptive-coalescing",
        &["load.qps=800000", "nic.rx-ring-size=16", "run.duration_s=0.5", "load.retransmit_timeout_ns=20000000"],
    );
    assert!(r.drops_by_site.ring > 0, "{:?}", r.drops_by_site);
    assert!(r.retransmits > 0);
    assert!(r.warnings.iter().any(|w| w.contains("retransmitted")), "{:?}", r.warnings);
}
