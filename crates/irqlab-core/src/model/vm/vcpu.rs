//! A vCPU: a host thread pinned to one physical core whose "program" is a
//! guest CPU (`vcpu_run` → `vcpu_enter_guest` in `arch/x86/kvm/x86.c`).
//!
//! The host runs it like any thread (hard IRQs and softirqs preempt it; it
//! sleeps and is woken). While it is in guest mode its host segment is
//! open-ended (`ThreadSeg::Guest`, accounted as guest time) and the guest
//! core executes; whatever the host runs on that core instead stops the
//! guest (a VM exit): the guest core *freezes* with its running segment kept
//! on its stack, and resumes where it was once the vCPU has entered guest
//! mode again, paying `vm.exit_entry_cycles` of host time first.
//!
//! When the guest core has nothing to run, the guest executes HLT and the
//! vCPU leaves guest mode (`kvm_vcpu_halt`): KVM polls for up to the vCPU's
//! current window (host system time, idle for the guest), then sleeps; an
//! interrupt for the guest ends the poll at once, or wakes the sleeping
//! thread through the host scheduler. The window adapts as
//! `kvm_vcpu_halt` does: from 0, it grows to `halt_poll_ns_grow_start` and
//! then by `halt_poll_ns_grow` while the vCPU is woken within the maximum
//! (`halt_poll_ns`), and shrinks by `halt_poll_ns_shrink` when it is not.
//!
//! Two vCPUs pinned to one host CPU (`vm.host_cpus`) share it as two
//! CPU-bound tasks do under CFS/EEVDF: a vCPU woken for an interrupt takes
//! the CPU at once (wake-up preemption of a sleeper, the reschedule IPI's
//! exit), and while another waits, the one in guest mode runs at most the
//! rest of its turn of `cpu.sched_base_slice_ns`, after which the tick
//! makes it exit and go to the back of the run queue.

use crate::model::vm::hypervisor::Hypervisor;
use crate::engine::{Nanos, Scheduler};
use crate::model::kernel::cpu::{CpuClass, Owner, ThreadId, ThreadSeg};
use crate::model::kernel::disruption::Disruption;
use crate::model::kernel::HOST;
use crate::model::kernel::sched::Seg;
use crate::model::kernel::Kernel;
pub use crate::model::vm::vcpu_thread::{VcpuPhase, VcpuThread};

/// The vCPU thread's next host segment, or None when it sleeps.
#[inline(never)]
pub(crate) fn vcpu_next<M: Hypervisor>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, v: usize) -> Option<Seg> {
    let vcpu = &mut k.vcpus[v];
    match vcpu.phase {
        VcpuPhase::Entering => {
            if m.run().measuring {
                m.run().counters.vm_exits += 1;
            }
            if vcpu.shares_core {
                // A context switch since it last entered: a new turn.
                let switches = k.cores[vcpu.core as usize].context_switches;
                if switches != vcpu.turn_switches {
                    vcpu.turn_switches = switches;
                    vcpu.turn_start_ns = sched.now();
                }
            }
            // The VMM has control: it picks up storage completions
            // (`model/vm/vmm.rs`).
            let vmm_cycles = m.vmm_entry(k, sched, sched.now());
            let cycles = k.cfg.vm.exit_entry_cycles + vmm_cycles;
            Some(Seg { class: CpuClass::Exit, ns: k.ns(cycles), bh_disabled: false })
        }
        VcpuPhase::InGuest => {
            let (core, t) = (vcpu.core, k.vcpu_base + v as u32);
            let c = &mut k.cores[core as usize];
            if !c.runqueue.is_empty() && vcpu.shares_core {
                // Another vCPU waits: the rest of this one's turn.
                let used = sched.now() - vcpu.turn_start_ns;
                let slice = k.cfg.cpu.sched_base_slice_ns;
                if used < slice {
                    return Some(Seg { class: CpuClass::Guest, ns: slice - used, bh_disabled: false });
                }
                vcpu.phase = VcpuPhase::Entering;
                c.runqueue.push_back(t);
                return None;
            }
            if !c.runqueue.is_empty() {
                // A host thread woke meanwhile: it runs first.
                c.runqueue.push_back(t);
                return None;
            }
            Some(Seg { class: CpuClass::Guest, ns: Nanos::MAX, bh_disabled: false })
        }
        VcpuPhase::TickStop => {
            if m.run().measuring {
                let n = &mut m.run().counters;
                n.vm_exits += 1;
                n.timer_exits += 1;
            }
            Some(Seg { class: CpuClass::Exit, ns: k.ns(k.cfg.vm.exit_entry_cycles), bh_disabled: false })
        }
        VcpuPhase::HaltPoll => Some(Seg { class: CpuClass::HaltPoll, ns: vcpu.halt_poll_ns, bh_disabled: false }),
        VcpuPhase::Blocked => None,
    }
}

/// A host segment of the vCPU thread completed.
#[inline(never)]
pub(crate) fn vcpu_step_done(k: &mut Kernel, v: usize) {
    let vcpu = &mut k.vcpus[v];
    vcpu.phase = match vcpu.phase {
        VcpuPhase::Entering => VcpuPhase::InGuest,
        // The timer is written; the guest executes HLT, which returns at
        // once if an interrupt came meanwhile.
        VcpuPhase::TickStop if std::mem::take(&mut vcpu.tick_stop_kicked) => VcpuPhase::Entering,
        // No halt poll while another task waits for the CPU
        // (`kvm_vcpu_can_poll`: `single_task_running()`).
        VcpuPhase::TickStop if vcpu.halt_poll_ns > 0 && k.cores[vcpu.core as usize].runqueue.is_empty() => {
            VcpuPhase::HaltPoll
        }
        VcpuPhase::TickStop => VcpuPhase::Blocked,
        // The poll found nothing: `kvm_vcpu_block`.
        VcpuPhase::HaltPoll => VcpuPhase::Blocked,
        p => unreachable!("vCPU host segment done in phase {p:?}"),
    };
}

/// The vCPU thread's guest-mode segment started on its host core: the
/// guest core runs again.
#[inline(never)]
pub(crate) fn vcpu_entered<M: Hypervisor>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, v: usize) {
    let (guest, gc) = (k.vcpus[v].guest, k.vcpus[v].guest_core);
    m.in_kernel(k, guest, |k, m| {
        k.cores[gc as usize].frozen = false;
        k.kick(m, sched, gc);
    });
}

/// The host preempted vCPU thread `t` in guest mode (a VM exit): the
/// guest core stops where it is, and a thread it was running pays the
/// interruption penalty when it resumes, as after a hard IRQ on bare
/// metal; under the disruption model the host's exit code displaces the
/// guest's in the core's L1i.
#[inline(never)]
pub(crate) fn vcpu_preempted<M: Hypervisor>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, t: ThreadId) {
    let v = k.vcpu_index(t).expect("a vCPU thread");
    let (guest, gc) = (k.vcpus[v].guest, k.vcpus[v].guest_core);
    let now = sched.now();
    m.in_kernel(k, guest, |k, _| {
        let c = &mut k.cores[gc as usize];
        c.frozen = true;
        if k.disruption.is_some() {
            Disruption::host_ran(&mut c.displaced_by);
        }
        if let Some(r) = c.running {
            let thread = matches!(r.owner, Owner::Thread(..));
            c.preempt(now, true);
            if thread {
                c.interruptions += 1;
            }
        }
        // Its time is the host's from now on, whether a segment was cut or
        // one had just ended with an effect that exits (a doorbell write,
        // a virtio TX notification, a SCSI issue trapped on this vCPU).
        c.set_class(now, CpuClass::Steal);
    });
}

/// The turn of vCPU thread `t` in guest mode on a shared host CPU is
/// over: the tick's exit stops its guest core, and it waits behind the
/// vCPU that takes the CPU.
#[inline(never)]
pub(crate) fn vcpu_turn_over<M: Hypervisor>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, core: u32, t: ThreadId) {
    vcpu_preempted(m, k, sched, t);
    let v = k.vcpu_index(t).expect("a vCPU thread");
    k.vcpus[v].phase = VcpuPhase::Entering;
    let c = &mut k.cores[core as usize];
    c.current_thread = None;
    c.runqueue.push_back(t);
}

/// A preempted guest-mode segment comes back to the top of the host
/// core's stack: enter guest mode again (an exit was taken).
#[inline(never)]
pub(crate) fn vcpu_resume(k: &mut Kernel, t: ThreadId, now: Nanos) {
    let v = k.vcpu_index(t).expect("a vCPU thread");
    let slice = k.cfg.cpu.sched_base_slice_ns;
    let vcpu = &mut k.vcpus[v];
    vcpu.phase = VcpuPhase::Entering;
    let core = vcpu.core;
    // On a shared CPU an exit ends the turn only if a woken thread
    // preempts it or the turn is used up.
    let turn_over = !vcpu.shares_core
        || std::mem::take(&mut vcpu.wake_preempted)
        || now - vcpu.turn_start_ns >= slice;
    let c = &mut k.cores[core as usize];
    if !c.runqueue.is_empty() && turn_over {
        // Another host thread (a vhost worker, a woken vCPU) was woken
        // meanwhile: it runs first, and the vCPU waits its turn.
        c.current_thread = None;
        c.runqueue.push_back(t);
    }
}

/// The guest core of vCPU thread `host_thread` has nothing to run: HLT.
/// Called with the guest active; the guest core is frozen from now on.
#[inline(never)]
pub(crate) fn vcpu_halt<M: Hypervisor>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, host_thread: ThreadId, gc: u32) {
    k.cores[gc as usize].frozen = true;
    // `tick_nohz_idle_stop_tick` before the HLT: the timer write exits,
    // unless the tick is still stopped from the last idle period.
    let tick_stop = k.cfg.vm.idle_tick_exits() && !k.cores[gc as usize].tick_stopped;
    k.cores[gc as usize].tick_stopped |= tick_stop;
    if k.disruption.is_some() {
        // The HLT exit: KVM's halt handling (and whatever the host runs
        // while the vCPU is halted) runs on its core.
        Disruption::host_ran(&mut k.cores[gc as usize].displaced_by);
    }
    let now = sched.now();
    m.in_kernel(k, HOST, |k, m| {
        let v = k.vcpu_index(host_thread).expect("a vCPU thread");
        let core = k.vcpus[v].core;
        let c = &mut k.cores[core as usize];
        let r = c.abandon().expect("a halting vCPU is in guest mode");
        debug_assert!(matches!(r.owner, Owner::Thread(t, ThreadSeg::Guest) if t == host_thread));
        let vcpu = &mut k.vcpus[v];
        vcpu.halt_start_ns = now;
        vcpu.phase = if tick_stop {
            VcpuPhase::TickStop
        } else if vcpu.halt_poll_ns > 0 {
            VcpuPhase::HaltPoll
        } else {
            VcpuPhase::Blocked
        };
        if m.run().measuring {
            m.run().counters.vm_halts += 1;
        }
        k.kick(m, sched, core);
    });
    m.vmm_halt(k, sched, gc);
}

/// Guest core `gc` leaves idle for a task with its tick stopped
/// (`do_idle` → `tick_nohz_idle_exit` → `tick_nohz_restart_sched_tick`):
/// the timer write exits (handled in KVM's fastpath, which enters again
/// at once), and the task runs once its vCPU is back in guest mode.
/// Called with the guest active, from its core's scheduling.
#[inline(never)]
pub(crate) fn vcpu_tick_restart<M: Hypervisor>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, gc: u32) {
    k.cores[gc as usize].tick_stopped = false;
    let t = k.cores[gc as usize].vcpu.expect("a guest core has a vCPU");
    m.in_kernel(k, HOST, |k, m| {
        let core = k.thread_core(t);
        let c = &mut k.cores[core as usize];
        if !matches!(c.running, Some(r) if r.owner == Owner::Thread(t, ThreadSeg::Guest)) {
            // Not in guest mode (cannot happen while its guest core runs).
            return;
        }
        if m.run().measuring {
            m.run().counters.timer_exits += 1;
        }
        let c = &mut k.cores[core as usize];
        c.abandon();
        m.vcpu_preempted(k, sched, t);
        let v = k.vcpu_index(t).expect("a vCPU thread");
        k.vcpus[v].phase = VcpuPhase::Entering;
        k.kick(m, sched, core);
    });
}

/// Another host thread became runnable on `core`, where vCPU `v`'s
/// thread runs: in guest mode, the wake-up's reschedule IPI makes it
/// exit (it then yields, `vcpu_resume`); halt polling stops at once
/// (`kvm_vcpu_can_poll`: `single_task_running()`) and the vCPU sleeps.
#[inline(never)]
pub(crate) fn vcpu_contended<M: Hypervisor>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, core: u32, t: ThreadId, seg: ThreadSeg) {
    let v = k.vcpu_index(t).expect("a vCPU thread");
    match (seg, k.vcpus[v].phase) {
        (ThreadSeg::Guest, _) => {
            let vcpu = &mut k.vcpus[v];
            vcpu.wake_preempted = vcpu.shares_core;
            k.raise_irq(m, sched, core, crate::model::kernel::cpu::IrqSrc::VcpuKick(t))
        }
        (ThreadSeg::Step, VcpuPhase::HaltPoll) => {
            let c = &mut k.cores[core as usize];
            c.abandon();
            c.current_thread = None;
            k.vcpus[v].phase = VcpuPhase::Blocked;
            k.kick(m, sched, core);
        }
        _ => {}
    }
}
