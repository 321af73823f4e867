//! The virtualization layer by behaviour: a guest kernel runs the same code
//! as bare metal, only slower by what the host adds (`model/vm/`).

mod common;
use common::*;

const THESIS: &str = include_str!("../../../scenarios/thesis/bare-metal.toml");
const PASSTHROUGH: &str = include_str!("../../../scenarios/thesis/passthrough.toml");
const SRIOV: &str = include_str!("../../../scenarios/thesis/sriov.toml");
const PROFILES: [&str; 4] = ["no-coalescing", "adaptive-coalescing", "irq-suspend", "busy-wait"];

/// One core at 1 GHz (a cycle is a nanosecond), one connection in a closed
/// loop, fixed costs: every request takes exactly the same path.
const ONE_CORE: &str = r#"
name = "one-core"
[run]
seed = 3
duration_s = 0.02
warmup_s = 0.001
[cpu]
app_cores = 1
freq_ghz = 1.0
wakeup_latency_ns = 1000
[costs]
hardirq_cycles = 100
softirq_entry_cycles = 0
napi_poll_cycles = 50
rx_packet_cycles = 200
wakeup_cycles = 30
epoll_wait_cycles = 10
epoll_event_cycles = 5
recv_cycles = 40
recv_cycles_per_request = 0
send_cycles = 60
send_cycles_per_64b = 0
context_switch_cycles = 70
interrupt_penalty_cycles = 0
irq_cold_cycles = 0
tx_clean_cycles = 0
timer_irq_cycles = 0
busy_poll_iteration_cycles = 10
[nic]
# Short, so that latencies stay near 3 µs, where the latency histogram
# resolves 2 ns.
wire_latency_ns = 500
dma_latency_ns = 0
tx_completion_irqs = false
[coalesce]
adaptive-rx = false
rx-usecs = 0
rx-frames = 0
[app]
service = { dist = "fixed", cycles = 500 }
[load]
clients = 1
threads_per_client = 1
connections_per_thread = 1
key_size = { dist = "fixed", bytes = 10 }
value_size = { dist = "fixed", bytes = 10 }
"#;

const PT_ONE_CORE: [&str; 7] = [
    "vm.kind=\"passthrough\"",
    "vm.halt_poll_ns=0",
    "vm.exit_entry_cycles=300",
    "vm.vfio_irq_cycles=150",
    "vm.ipi_cycles=0",
    "vm.vcpus=1",
    "vm.guest_nohz_idle=false",
];

#[test]
fn a_request_to_a_sleeping_guest_pays_exactly_the_host_path() {
    // Bare metal: the idle core wakes (1 µs), takes the IRQ and wakes the
    // thread. In the guest the same happens after the host has woken (the
    // same 1 µs), run vfio_msihandler with try_to_wake_up of the sleeping
    // vCPU thread (150 + 30), switched to it (70) and entered guest mode
    // (300): 550 ns more per request, nothing else.
    let bm = run(ONE_CORE, &[]);
    let pt = run(ONE_CORE, &PT_ONE_CORE);
    let (b, p) = (bm.latency_us.mean.unwrap(), pt.latency_us.mean.unwrap());
    assert!(((p - b) * 1e3 - 550.0).abs() <= 4.0, "guest mean latency {p} µs against bare metal {b} µs: the difference is not 550 ns");
    assert_eq!(bm.latency_us.p99.is_some(), pt.latency_us.p99.is_some());
    let vm = pt.vm.as_ref().expect("a VM run reports vm");
    // One exit (the halt), one injection per request.
    let per_request = |x: f64| x / pt.throughput_qps;
    assert!((per_request(vm.virtual_irqs_per_s) - 1.0).abs() < 0.01, "virtual IRQs per request {}", per_request(vm.virtual_irqs_per_s));
    assert!((per_request(vm.vm_exits_per_s) - 1.0).abs() < 0.01, "exits per request {}", per_request(vm.vm_exits_per_s));
    assert!((per_request(vm.halts_per_s) - 1.0).abs() < 0.01);
    assert_eq!(vm.halt_poll_success_pct, 0.0, "halt polling is off");
}

#[test]
fn a_linux_guest_s_idle_tick_takes_two_exits_per_idle_period_one_on_the_wake_path() {
    // `vm.guest_nohz_idle` (the default): the guest stops its tick before
    // each HLT and restarts it before the woken thread runs, each a timer
    // write that exits for `vm.exit_entry_cycles` (300 ns). The stop comes
    // after the reply has left, off the request's path (the next request
    // is a round trip of the wire away); the restart is on it: 300 ns more
    // per request, and two exits more.
    let off = run(ONE_CORE, &PT_ONE_CORE);
    let on = run(ONE_CORE, &PT_ONE_CORE[..6]);
    let explicit = run(ONE_CORE, &[&PT_ONE_CORE[..6], &["vm.guest_nohz_idle=true"]].concat());
    assert_eq!(on.throughput_qps, explicit.throughput_qps, "on by default");
    let (a, b) = (off.latency_us.mean.unwrap(), on.latency_us.mean.unwrap());
    assert!(((b - a) * 1e3 - 300.0).abs() <= 4.0, "mean latency {b} µs with the idle tick's exits, {a} µs without: not 300 ns apart");
    let (vo, vn) = (off.vm.unwrap(), on.vm.as_ref().unwrap().clone());
    let per_request = |x: f64| x / on.throughput_qps;
    assert_eq!(vo.timer_exits_per_s, 0.0);
    assert!((per_request(vn.timer_exits_per_s) - 2.0).abs() < 0.01, "timer exits per request {}", per_request(vn.timer_exits_per_s));
    assert!((per_request(vn.vm_exits_per_s) - 3.0).abs() < 0.01, "exits per request {}", per_request(vn.vm_exits_per_s));
    assert!((per_request(vn.halts_per_s) - 1.0).abs() < 0.01);
    // The host's exit time grows by the two round trips.
    let exit_ns = |s: f64, qps: f64| s / 100.0 * 1e9 / qps;
    let grown = exit_ns(vn.host_split_pct.exit, on.throughput_qps) - exit_ns(vo.host_split_pct.exit, off.throughput_qps);
    assert!((grown - 600.0).abs() <= 6.0, "host exit time per request grew by {grown} ns, not 600");
    // The vIC paper's Windows guest (`lsilogic`) never takes them.
    let vic = irqlab_core::Scenario::from_toml_str(include_str!("../../../scenarios/vic/iometer.toml")).unwrap();
    assert!(vic.config().vm.guest_nohz_idle && !vic.config().vm.idle_tick_exits());
}

#[test]
fn a_busy_polling_vhost_worker_takes_no_kicks_while_it_polls_and_yields_to_a_vcpu() {
    // `vm.vhost_poll_us` (QEMU's poll-us): a worker out of work polls
    // before it sleeps, with the guest's notifications off. With IRQ
    // packing the workers have cores of their own: fewer TX notifications
    // (each an exit), and the IRQ cores' idle time becomes vhost time.
    let vp = include_str!("../../../scenarios/thesis/virtio-packed.toml");
    let va = include_str!("../../../scenarios/thesis/virtio-aligned.toml");
    let short = ["run.duration_s=0.05", "run.warmup_s=0.01"];
    let polled = [&short[..], &["vm.vhost_poll_us=50"]].concat();
    for p in ["no-coalescing", "busy-wait"] {
        let (off, on) = (run_profile(vp, p, &short), run_profile(vp, p, &polled));
        let kicks = |s: &irqlab_core::Summary| s.vm.as_ref().unwrap().tx_kicks_per_s.unwrap() / s.throughput_qps;
        assert!(kicks(&on) < 0.8 * kicks(&off), "{p}: kicks per reply {} polled, {} not", kicks(&on), kicks(&off));
        let (vo, vn) = (off.vm.unwrap(), on.vm.unwrap());
        let (io, ip) = (vo.host_irq_cores_split_pct.unwrap(), vn.host_irq_cores_split_pct.unwrap());
        assert!(ip.vhost > io.vhost + 5.0 && ip.idle < io.idle, "{p}: IRQ cores vhost {} -> {} %, idle {} -> {} %", io.vhost, ip.vhost, io.idle, ip.idle);
    }
    // Aligned, a worker shares its core with a vCPU that waits for it
    // (`need_resched()`): saturated, it never polls, and nothing changes.
    let (off, on) = (run_profile(va, "busy-wait", &short), run_profile(va, "busy-wait", &polled));
    assert_eq!(off.throughput_qps, on.throughput_qps);
    assert_eq!(off.vm.unwrap().vm_exits_per_s, on.vm.unwrap().vm_exits_per_s);
}

#[test]
fn halt_polling_catches_short_idle_gaps_and_shows_as_host_cpu() {
    // The guest idles ~1 µs between requests: KVM's window grows until it
    // covers them, so the vCPU never sleeps and the host core never idles
    // except before the window has grown.
    let polled = run(ONE_CORE, &[&PT_ONE_CORE[..1], &PT_ONE_CORE[2..]].concat());
    let off = run(ONE_CORE, &PT_ONE_CORE);
    let (vp, vo) = (polled.vm.unwrap(), off.vm.unwrap());
    assert!(vp.halt_poll_success_pct > 95.0, "polled wake-ups {} %", vp.halt_poll_success_pct);
    assert!(vp.host_cpu_pct.idle < 5.0, "host idle {} % while polling", vp.host_cpu_pct.idle);
    assert!(vo.host_cpu_pct.idle > 50.0, "host idle {} % without polling", vo.host_cpu_pct.idle);
    // The guest sees idle time either way: polling is the host's.
    assert!(polled.cpu_pct.idle > 50.0 && off.cpu_pct.idle > 50.0);
    // A wake-up caught by the poll skips the host's C-state exit, the
    // wake-up and the context switch: lower latency.
    assert!(polled.latency_us.mean.unwrap() < off.latency_us.mean.unwrap());
}

#[test]
fn with_free_virtualization_a_passthrough_guest_serves_what_bare_metal_serves() {
    // Every VM cost zero (the host's code at an exit touching no cache
    // line) and halt polling off: what remains is the guest kernel, the
    // same code as bare metal. Closed loop, every profile.
    let free = [
        "run.duration_s=0.05",
        "run.warmup_s=0.01",
        "vm.exit_entry_cycles=0",
        "vm.vfio_irq_cycles=0",
        "vm.ipi_cycles=0",
        "vm.halt_poll_ns=0",
        "vm.exit_code_bytes=0",
    ];
    for p in PROFILES {
        let bm = run_profile(THESIS, p, &free[..2]);
        let pt = run_profile(PASSTHROUGH, p, &free);
        assert_close(&format!("{p}: passthrough QPS with free virtualization"), pt.throughput_qps, bm.throughput_qps, 0.01);
    }
}

#[test]
fn vm_runs_are_deterministic_and_report_their_layer() {
    for base in [PASSTHROUGH, SRIOV] {
        let sets = ["run.duration_s=0.02", "run.warmup_s=0.005", "load.qps=200000"];
        let a = run_profile(base, "irq-suspend", &sets);
        let mut b = run_profile(base, "irq-suspend", &sets);
        b.wall_s = a.wall_s;
        assert_eq!(a, b, "same scenario and seed, same summary");
        let vm = a.vm.as_ref().expect("vm report");
        assert!(vm.kind == "passthrough" || vm.kind == "sriov");
        let h = &vm.host_cpu_pct;
        let sum = h.user + h.system + h.softirq + h.irq + h.idle + h.guest + h.steal;
        assert!((sum - 100.0).abs() < 1e-6, "host shares sum to {sum}");
        let g = &a.cpu_pct;
        let sum = g.user + g.system + g.softirq + g.irq + g.idle + g.guest + g.steal;
        assert!((sum - 100.0).abs() < 1e-6, "guest shares sum to {sum}");
        assert!(h.guest > 0.0 && g.guest == 0.0);
        // The host's time by what it was for: the same time, split further.
        let t = &vm.host_split_pct;
        let sum = t.guest + t.exit + t.halt_poll + t.vhost + t.irq + t.softirq + t.other + t.idle;
        assert!((sum - 100.0).abs() < 1e-6, "host split sums to {sum}");
        assert!((t.guest - h.guest).abs() < 1e-9 && (t.irq - h.irq).abs() < 1e-9 && (t.idle - h.idle).abs() < 1e-9);
        let system = t.exit + t.halt_poll + t.vhost + t.other;
        assert!((system - (h.system + h.user + h.steal)).abs() < 1e-6, "split system {system} vs {h:?}");
        assert!(t.exit > 0.0 && t.halt_poll > 0.0 && t.vhost == 0.0, "{t:?}");
        assert!(vm.host_irq_cores_split_pct.is_none());
    }
    assert!(run(THESIS, &["run.duration_s=0.01"]).vm.is_none(), "bare metal has no vm report");
}

#[test]
fn busy_polling_in_a_guest_takes_no_exits_and_no_interrupts() {
    let s = run_profile(PASSTHROUGH, "busy-wait", &["run.duration_s=0.02", "run.warmup_s=0.005"]);
    let vm = s.vm.unwrap();
    assert_eq!(vm.vm_exits_per_s, 0.0);
    assert_eq!(vm.virtual_irqs_per_s, 0.0);
    assert_eq!(vm.host_cpu_pct.guest, 100.0);
    // Interrupt-driven, every packet's interrupt is an injection and an exit.
    let nc = run_profile(PASSTHROUGH, "no-coalescing", &["run.duration_s=0.02", "run.warmup_s=0.005"]);
    let vm = nc.vm.unwrap();
    assert!(vm.virtual_irqs_per_s >= 0.9 * nc.irqs_per_s, "{} injected for {} device IRQs", vm.virtual_irqs_per_s, nc.irqs_per_s);
    assert!(nc.cpu_pct.steal > 1.0, "exits take time from the guest: steal {}", nc.cpu_pct.steal);
}

#[test]
fn the_vm_section_is_validated() {
    let err = |sets: &[&str]| {
        let mut s = irqlab_core::Scenario::from_toml_str(THESIS).unwrap();
        let mut out = None;
        for kv in sets {
            if let Err(e) = s.set_pair(kv) {
                out = Some(e.to_string());
                break;
            }
        }
        out.expect("an error")
    };
    let e = err(&["vm.kind=\"passthrough\"", "vm.vcpus=4"]);
    assert!(e.contains("vm.vcpus") && e.contains("cpu.app_cores"), "{e}");
    let e = err(&["vm.kind=\"hyperv\""]);
    assert!(e.contains("vm.kind") && e.contains("passthrough"), "{e}");
    let e = err(&["vm.kind=\"sriov\"", "nic.irq_routing=\"packed\""]);
    assert!(e.contains("nic.irq_routing"), "{e}");
    let e = err(&["vm.exit_entry_cycles=-1"]);
    assert!(e.contains("vm.exit_entry_cycles"), "{e}");
    let e = err(&["vm.vhost_poll_us=2000000"]);
    assert!(e.contains("vm.vhost_poll_us") && e.contains("1000000"), "{e}");
    let e = err(&["vm.guest_nohz_idle=3"]);
    assert!(e.contains("vm.guest_nohz_idle"), "{e}");
}

#[test]
fn posted_interrupts_take_the_host_off_a_running_guest_s_interrupt_path() {
    // Saturated, every vCPU is in guest mode when its queue's vector
    // fires: posted, it goes straight in (no exit, no host handler), and
    // the guest serves what bare metal serves (ELI's 97-100 %).
    let sets = ["run.duration_s=0.05", "run.warmup_s=0.01"];
    let bm = run_profile(THESIS, "no-coalescing", &sets);
    let relayed = run_profile(PASSTHROUGH, "no-coalescing", &sets);
    let posted = run_profile(PASSTHROUGH, "no-coalescing", &[sets[0], sets[1], "vm.posted_interrupts=true"]);
    let vm = posted.vm.as_ref().unwrap();
    assert_eq!(vm.vm_exits_per_s, 0.0);
    assert!(vm.virtual_irqs_per_s > 0.9 * posted.irqs_per_s);
    assert_close("posted-interrupt guest QPS", posted.throughput_qps, bm.throughput_qps, 0.01);
    assert!(relayed.throughput_qps < 0.95 * posted.throughput_qps, "relayed {} posted {}", relayed.throughput_qps, posted.throughput_qps);
}

#[test]
fn the_host_code_at_each_exit_costs_the_guest_its_refill() {
    // Under the disruption model the host's exit code shares the vCPU's
    // core's L1i: with no-coalescing's exit per request the guest's own
    // cycles per query rise and its IPC falls; busy-wait takes no exits
    // and pays nothing. (The host's time for the exits is the same in
    // both runs: only the guest's refill differs.)
    let sets = ["run.duration_s=0.05", "run.warmup_s=0.01"];
    let none = ["run.duration_s=0.05", "run.warmup_s=0.01", "vm.exit_code_bytes=0"];
    let paid = run_profile(PASSTHROUGH, "no-coalescing", &sets);
    let free = run_profile(PASSTHROUGH, "no-coalescing", &none);
    assert!(paid.vm.as_ref().unwrap().vm_exits_per_s > 100_000.0);
    assert!(paid.cycles_per_query > free.cycles_per_query, "cpq {} vs {}", paid.cycles_per_query, free.cycles_per_query);
    assert!(paid.ipc.unwrap() < free.ipc.unwrap(), "ipc {:?} vs {:?}", paid.ipc, free.ipc);
    assert!(paid.throughput_qps < free.throughput_qps);
    let bw = run_profile(PASSTHROUGH, "busy-wait", &sets);
    let bw_free = run_profile(PASSTHROUGH, "busy-wait", &none);
    assert_eq!(bw.vm.as_ref().unwrap().vm_exits_per_s, 0.0);
    assert_eq!(bw.cycles_per_query, bw_free.cycles_per_query);
}
