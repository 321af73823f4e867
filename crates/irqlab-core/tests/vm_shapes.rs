//! The thesis's qualitative claims about its VM setups (§4.5–4.6), pinned
//! as shapes of the model's predictions. The thesis's numbers for these
//! setups are withheld in our copy; nothing here is fitted to them. Claim
//! ids are those of `docs/notes/virtualization-sources.md` §1.7; claims
//! the model does not reproduce are listed in `docs/calibration.md`
//! ("Virtual machines") with the reason, and the mechanism behind one of
//! them is pinned here instead (V6).

mod common;
use common::*;
use irqlab_core::Summary;

const BARE: &str = include_str!("../../../scenarios/thesis/bare-metal.toml");
const PT: &str = include_str!("../../../scenarios/thesis/passthrough.toml");
const SR: &str = include_str!("../../../scenarios/thesis/sriov.toml");
const VA: &str = include_str!("../../../scenarios/thesis/virtio-aligned.toml");
const VP: &str = include_str!("../../../scenarios/thesis/virtio-packed.toml");

const SHORT: [&str; 2] = ["run.duration_s=0.1", "run.warmup_s=0.02"];

fn closed(base: &str, profile: &str) -> Summary {
    run_profile(base, profile, &SHORT)
}

fn open(base: &str, profile: &str, qps: u32) -> Summary {
    let q = format!("load.qps={qps}");
    run_profile(base, profile, &[SHORT[0], SHORT[1], &q])
}

/// Long enough for a stable p99 at a low rate (15,000 requests at 50k/s).
fn open_tail(base: &str, profile: &str, qps: u32) -> Summary {
    let q = format!("load.qps={qps}");
    run_profile(base, profile, &["run.duration_s=0.3", "run.warmup_s=0.02", &q])
}

struct Setup {
    nc: Summary,
    is: Summary,
    bw: Summary,
}

fn virtio(base: &str) -> Setup {
    Setup { nc: closed(base, "no-coalescing"), is: closed(base, "irq-suspend"), bw: closed(base, "busy-wait") }
}

fn qps(s: &Summary) -> f64 {
    s.throughput_qps
}

#[test]
fn virtio_claims_v1_to_v5_and_the_mechanism_of_v6() {
    let (va, vp) = (virtio(VA), virtio(VP));
    // V1: with aligned interrupts, IRQ suspension and busy waiting serve
    // more than no-coalescing. (V4's "still demonstrate benefits" with IRQ
    // packing is not reproduced: the model predicts the three within noise
    // there, docs/calibration.md.)
    assert!(qps(&va.is) > qps(&va.nc) && qps(&va.bw) > qps(&va.nc), "aligned: is {} bw {} nc {}", qps(&va.is), qps(&va.bw), qps(&va.nc));
    for (name, s) in [("aligned", &va), ("packed", &vp)] {
        // V3: and they spend less of the application vCPUs in softirq.
        assert!(s.is.cpu_pct.softirq < s.nc.cpu_pct.softirq && s.bw.cpu_pct.softirq < s.nc.cpu_pct.softirq, "{name}: softirq");
        // V6's mechanism: the guest's virtual interrupts all but vanish
        // (the VM exits do not: docs/calibration.md).
        let v = |s: &Summary| s.vm.as_ref().unwrap().virtual_irqs_per_s;
        assert!(v(&s.is) < 0.2 * v(&s.nc) && v(&s.bw) < 0.2 * v(&s.nc), "{name}: virtual IRQs {} {} {}", v(&s.is), v(&s.bw), v(&s.nc));
    }
    // V2, V4: the gain is smaller with IRQ packing.
    let gain = |s: &Setup, p: &Summary| qps(p) / qps(&s.nc);
    assert!(gain(&vp, &vp.is) < gain(&va, &va.is), "is gain packed {} aligned {}", gain(&vp, &vp.is), gain(&va, &va.is));
    assert!(gain(&vp, &vp.bw) < gain(&va, &va.bw), "bw gain packed {} aligned {}", gain(&vp, &vp.bw), gain(&va, &va.bw));
    // V5: packed serves more than aligned, profile by profile.
    for (a, p) in [(&va.nc, &vp.nc), (&va.is, &vp.is), (&va.bw, &vp.bw)] {
        assert!(qps(p) > qps(a), "packed {} aligned {}", qps(p), qps(a));
    }
    // IRQ packing: the two host IRQ cores are nearly full (§4.5: "utilized
    // nearly to their full capacity").
    let irq = vp.nc.vm.as_ref().unwrap().host_irq_cores_cpu_pct.as_ref().expect("host IRQ cores");
    assert!(irq.idle < 25.0, "host IRQ cores idle {} %", irq.idle);
    // Where the host's work goes: aligned, the vhost workers and the host
    // NIC's softirqs share the vCPUs' cores; packed, they run on the two
    // IRQ cores, and the vCPUs' cores see guest mode, exits and halts only.
    let split = |s: &Summary| s.vm.as_ref().unwrap().host_split_pct.clone();
    let a = split(&va.nc);
    assert!(a.vhost > 1.0 && a.softirq > 1.0 && a.exit > 0.0, "aligned: {a:?}");
    let p = split(&vp.nc);
    assert!(p.vhost == 0.0 && p.softirq == 0.0 && p.exit > 0.0, "packed, vCPU cores: {p:?}");
    let pi = vp.nc.vm.as_ref().unwrap().host_irq_cores_split_pct.clone().expect("packed: IRQ cores' split");
    assert!(pi.vhost > 1.0 && pi.softirq > 1.0 && pi.guest == 0.0, "packed, IRQ cores: {pi:?}");
    // The guest is busy exactly while its vCPU is in guest mode: the time
    // after a TX notification's exit (the worker woken on the same core,
    // the entry) is the host's, as after any exit.
    for s in [&va.nc, &va.is, &va.bw, &vp.nc, &vp.is, &vp.bw] {
        let g = &s.cpu_pct;
        let busy = 100.0 - g.idle - g.steal;
        let guest_mode = s.vm.as_ref().unwrap().host_cpu_pct.guest;
        assert!((busy - guest_mode).abs() < 0.5, "guest busy {busy:.2} % vs host guest mode {guest_mode:.2} %");
    }
}

#[test]
fn virtio_claims_v10_v12_at_low_load() {
    // V8 (the three profiles' tails within 25 % at low load) is left to the
    // reproduction's check on its longer runs, where it holds: in this
    // test's short runs the disruption model spreads the tails by up to
    // 27 % (nc 307 us against bw 242 us aligned), a p99 of too few samples.
    let p99 = |s: &Summary| s.latency_us.p99.unwrap();
    for base in [VA, VP] {
        let (nc, is, bw) =
            (open_tail(base, "no-coalescing", 50_000), open_tail(base, "irq-suspend", 50_000), open_tail(base, "busy-wait", 50_000));
        // V12: busy waiting keeps its vCPUs busy; IRQ suspension does not.
        assert!(100.0 - bw.cpu_pct.idle > 99.0 && 100.0 - is.cpu_pct.idle < 50.0);
        // V10: the guest's tail is above bare metal's at the same load.
        let bm = open_tail(BARE, "no-coalescing", 50_000);
        assert!(p99(&nc) > p99(&bm), "virtio p99 {} bare metal {}", p99(&nc), p99(&bm));
    }
}

#[test]
fn passthrough_and_sriov_claims_p1_p3_p5_p6() {
    let profiles = ["no-coalescing", "adaptive-coalescing", "irq-suspend", "busy-wait"];
    let bm: Vec<Summary> = profiles.iter().map(|p| closed(BARE, p)).collect();
    for (name, base) in [("passthrough", PT), ("sriov", SR)] {
        let vm: Vec<Summary> = profiles.iter().map(|p| closed(base, p)).collect();
        let q = |v: &[Summary], i: usize| qps(&v[i]);
        // P1: IRQ suspension and busy waiting gain more over the
        // interrupt-driven profiles in the VM than on bare metal.
        for polled in [2, 3] {
            for driven in [0, 1] {
                assert!(
                    q(&vm, polled) / q(&vm, driven) > q(&bm, polled) / q(&bm, driven),
                    "{name}: {} over {}",
                    profiles[polled],
                    profiles[driven]
                );
            }
        }
        // P3: the interrupt-driven profiles lose more to the VM, nc most.
        let loss: Vec<f64> = (0..4).map(|i| 1.0 - q(&vm, i) / q(&bm, i)).collect();
        assert!(loss[0] > loss[1] && loss[1] > loss[2].max(loss[3]), "{name}: losses {loss:?}");
        // P6: no-coalescing serves least.
        assert!((1..4).all(|i| q(&vm, 0) < q(&vm, i)), "{name}: nc is not the lowest");
    }
    // P5: at the same offered load the host's vCPU cores are busier than
    // bare metal's cores (halt polling), for every profile.
    for p in profiles {
        let (b, v) = (open(BARE, p, 300_000), open(PT, p, 300_000));
        let host_busy = 100.0 - v.vm.as_ref().unwrap().host_cpu_pct.idle;
        assert!(host_busy >= 100.0 - b.cpu_pct.idle - 0.5, "{p}: host {host_busy} bare metal {}", 100.0 - b.cpu_pct.idle);
    }
}

#[test]
fn every_vm_setup_runs_its_profiles_closed_and_open_deterministically() {
    for (base, profiles) in [
        (PT, &["no-coalescing", "adaptive-coalescing", "irq-suspend", "busy-wait"][..]),
        (SR, &["no-coalescing", "adaptive-coalescing", "irq-suspend", "busy-wait"][..]),
        (VA, &["no-coalescing", "irq-suspend", "busy-wait"][..]),
        (VP, &["no-coalescing", "irq-suspend", "busy-wait"][..]),
    ] {
        for p in profiles {
            for sets in [&["run.duration_s=0.01", "run.warmup_s=0.002"][..], &["run.duration_s=0.01", "run.warmup_s=0.002", "load.qps=150000"][..]] {
                let a = run_profile(base, p, sets);
                let mut b = run_profile(base, p, sets);
                b.wall_s = a.wall_s;
                assert_eq!(a, b, "{p}: not deterministic");
                assert!(a.requests_completed > 0 && a.vm.is_some(), "{p}");
            }
        }
    }
}
