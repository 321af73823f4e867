//! Several KVM guests, each receiving TCP streams through its own SR-IOV
//! virtual function of one 82599 (`vm.count`, `model/devices/nic/vf.rs`,
//! `model/workloads/bulk.rs`), by behaviour.

mod common;
use common::*;
use irqlab_core::Scenario;

const R630: &str = include_str!("../../../scenarios/sriov/r630.toml");
const THESIS_SRIOV: &str = include_str!("../../../scenarios/thesis/sriov.toml");

/// Goodput of a 10 Gbit/s wire carrying 1448-byte segments in 1538-byte
/// frames (with preamble and gap), Gbit/s.
const WIRE_GOODPUT_GBPS: f64 = 10.0 * 1448.0 / 1538.0;

#[test]
fn each_vm_gets_its_stream_and_they_share_the_wire() {
    let s = run(R630, &["vm.count=3", "run.duration_s=0.05"]);
    let b = s.bulk.expect("bulk report");
    assert_eq!(b.streams, 3);
    let per_vm = b.vm_gbps.expect("per-VM throughput");
    assert_eq!(per_vm.len(), 3);
    let total: f64 = per_vm.iter().sum();
    assert!((total - b.throughput_gbps).abs() < 1e-9, "{per_vm:?} vs {}", b.throughput_gbps);
    // Below the wire (but for what the sockets held when the measured 50 ms
    // began), and close to it: the guests keep up at the default rate.
    assert!(b.throughput_gbps <= WIRE_GOODPUT_GBPS * 1.01, "{}", b.throughput_gbps);
    assert!(b.throughput_gbps > 0.95 * WIRE_GOODPUT_GBPS, "{}", b.throughput_gbps);
    for g in &per_vm {
        assert!((g - total / 3.0).abs() < 0.1 * total / 3.0, "uneven shares {per_vm:?}");
    }
    let vm = s.vm.expect("vm report");
    assert_eq!((vm.vms, vm.host_cpus), (3, 18));
    // Three VMs' two vCPUs each, on six of the host's CPUs at most.
    assert!(vm.host_busy_cpus > 0.0 && vm.host_busy_cpus <= 6.0, "{}", vm.host_busy_cpus);
}

#[test]
fn a_static_rate_bounds_every_vfs_interrupts() {
    for rate in [16_000u32, 32_000] {
        let s = run(R630, &["vm.count=3", "itr.policy=\"static\"", &format!("itr.rate={rate}"), "run.duration_s=0.05"]);
        // Each VF's vector interrupts at most `rate` times a second, and the
        // streams keep it busy enough to reach nearly that.
        let most = 3.0 * rate as f64;
        assert!(s.irqs_per_s <= most * 1.01, "{rate}: {} interrupts/s", s.irqs_per_s);
        assert!(s.irqs_per_s > most * 0.9, "{rate}: {} interrupts/s", s.irqs_per_s);
        let vm = s.vm.expect("vm report");
        // Every interrupt reaches its guest through the host (no posting).
        assert!((vm.virtual_irqs_per_s - s.irqs_per_s).abs() <= 0.01 * s.irqs_per_s, "{vm:?}");
    }
}

#[test]
fn more_interrupts_cost_the_guests_more_cpu() {
    let at = |rate: u32| {
        let s = run(R630, &["vm.count=3", "itr.policy=\"static\"", &format!("itr.rate={rate}"), "run.duration_s=0.05"]);
        s.vm.expect("vm report").host_busy_cpus
    };
    let (low, high) = (at(8_000), at(64_000));
    assert!(high > low * 1.2, "8,000/s: {low} CPUs, 64,000/s: {high} CPUs");
}

/// Guests made CPU-bound: every frame costs a vCPU 20 µs at 2.3 GHz.
const CPU_BOUND: &str = "costs.rx_frame_cycles=46000";

#[test]
fn vms_beyond_the_host_cpus_share_them_and_each_progresses() {
    // Two VMs, two vCPUs each, on two host CPUs: VM 0's vCPU j and VM 1's
    // vCPU j take turns on CPU j.
    let shared = run(R630, &["vm.count=2", "vm.host_cpus=2", CPU_BOUND, "run.duration_s=0.05"]);
    let own = run(R630, &["vm.count=2", "vm.host_cpus=0", CPU_BOUND, "run.duration_s=0.05"]);
    let (sv, ov) = (shared.vm.clone().expect("vm"), own.vm.clone().expect("vm"));
    assert_eq!((sv.host_cpus, ov.host_cpus), (2, 4));
    assert!(sv.host_busy_cpus <= 2.0 + 1e-9, "{}", sv.host_busy_cpus);
    let s_gbps = shared.bulk.expect("bulk").vm_gbps.expect("per VM");
    let o_gbps = own.bulk.expect("bulk").vm_gbps.expect("per VM");
    // Neither VM starves: the turns are fair within a quarter.
    assert!(s_gbps.iter().all(|&g| g > 0.0), "{s_gbps:?}");
    assert!((s_gbps[0] - s_gbps[1]).abs() < 0.25 * s_gbps[0].max(s_gbps[1]), "{s_gbps:?}");
    // Half the CPUs for the same CPU-bound work: about half the throughput.
    let (st, ot): (f64, f64) = (s_gbps.iter().sum(), o_gbps.iter().sum());
    assert!(st < 0.7 * ot && st > 0.3 * ot, "shared {st} Gbit/s, own CPUs {ot} Gbit/s");
}

#[test]
fn one_vm_keeps_its_one_vcpu_per_cpu_pinning() {
    // host_cpus = 0 means a CPU per vCPU: naming that many changes nothing.
    let a = run(THESIS_SRIOV, &["run.duration_s=0.02"]);
    let vcpus = a.vm.as_ref().expect("vm").host_cpus;
    let b = run(THESIS_SRIOV, &["run.duration_s=0.02", &format!("vm.host_cpus={vcpus}")]);
    let (mut a, mut b) = (a, b);
    a.wall_s = 0.0;
    b.wall_s = 0.0;
    assert_eq!(a, b);
}

#[test]
fn the_golden_section_itr_searches_each_vf_within_its_range() {
    let s = run(
        R630,
        &["vm.count=3", "itr.policy=\"golden-section\"", "itr.min_rate=2000", "itr.max_rate=100000", "run.duration_s=0.05"],
    );
    assert!(s.irqs_per_s > 0.0 && s.irqs_per_s <= 3.0 * 100_000.0 * 1.01, "{}", s.irqs_per_s);
    let b = s.bulk.expect("bulk");
    assert!(b.vm_gbps.expect("per VM").iter().all(|&g| g > 0.5), "a VF's search starved its VM");
}

#[test]
fn a_flat_throughput_keeps_the_default_itr_under_the_minimum_effect() {
    // Three VMs fill the wire at any rate from 2,000/s: the throughput is
    // flat. With searches that finish between restarts (3,000 interrupts),
    // the paper's tuner as printed holds whatever its noisy slices chose,
    // which at 3 VMs is a rate the interrupt vCPUs cannot outrun; with the
    // minimum effect (r630.toml's 1 %) each search ends in a tie and
    // ixgbevf's dynamic ITR runs until the next one.
    let sets = ["vm.count=3", "itr.restart_irqs=3000", "run.duration_s=0.3"];
    let default = run(R630, &[&sets[..], &["itr.policy=\"ixgbe\""]].concat());
    let tie_rule = run(R630, &[&sets[..], &["itr.policy=\"golden-section\""]].concat());
    let printed = R630.replace("min_effect = 0.01", "");
    assert_ne!(printed, R630, "r630.toml sets the minimum effect");
    let as_printed = run(&printed, &[&sets[..], &["itr.policy=\"golden-section\""]].concat());
    let gbps = |s: &irqlab_core::Summary| s.bulk.as_ref().expect("bulk").throughput_gbps;
    for s in [&tie_rule, &as_printed] {
        assert_close("tuner's throughput", gbps(s), gbps(&default), 0.01);
    }
    assert!(
        tie_rule.irqs_per_s < 1.5 * default.irqs_per_s && as_printed.irqs_per_s > 3.0 * default.irqs_per_s,
        "interrupts/s: default {}, tie rule {}, as printed {}",
        default.irqs_per_s,
        tie_rule.irqs_per_s,
        as_printed.irqs_per_s
    );
}

#[test]
fn a_run_of_many_vms_is_deterministic() {
    let sets = ["vm.count=11", "run.duration_s=0.02", "itr.policy=\"golden-section\""];
    let (mut a, mut b) = (run(R630, &sets), run(R630, &sets));
    a.wall_s = 0.0;
    b.wall_s = 0.0;
    assert_eq!(a, b);
}

fn refused(sets: &[&str]) -> String {
    let mut s = Scenario::from_toml_str(R630).expect("valid scenario");
    for kv in sets {
        if let Err(e) = s.set_pair(kv) {
            return e.to_string();
        }
    }
    panic!("{sets:?} was accepted")
}

#[test]
fn several_vms_are_refused_where_they_cannot_apply() {
    let e = refused(&["vm.count=2", "vm.kind=\"passthrough\""]);
    assert!(e.contains("vm.count") && e.contains("sriov"), "{e}");
    let e = refused(&["vm.count=65"]);
    assert!(e.contains("vm.count") && e.contains("64"), "{e}");
    // Several VMs receive streams; memcached runs in one guest.
    let mut s = Scenario::from_toml_str(THESIS_SRIOV).expect("valid");
    let e = s.set_pair("vm.count=2").unwrap_err().to_string();
    assert!(e.contains("vm.count") && e.contains("bulk"), "{e}");
    let e = refused(&["steering.scheme=\"rps\""]);
    assert!(e.contains("steering.scheme"), "{e}");
    let thesis_virtio = include_str!("../../../scenarios/thesis/virtio-aligned.toml");
    let mut s = Scenario::from_toml_str(thesis_virtio).expect("valid");
    let e = s.set_pair("vm.host_cpus=4").unwrap_err().to_string();
    assert!(e.contains("vm.host_cpus"), "{e}");
    let e = s.set_pair("nic.kind=\"82599\"").unwrap_err().to_string();
    assert!(e.contains("nic.kind"), "{e}");
}
