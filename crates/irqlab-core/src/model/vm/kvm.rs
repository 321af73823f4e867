//! KVM's interrupt delivery into a guest, without APICv (Sandy Bridge-EP):
//! `kvm_set_msi` → `__apic_accept_irq` → `vmx_deliver_interrupt` sets the
//! vector pending and calls `kvm_vcpu_kick`, which
//! - for a vCPU running in guest mode, sends a reschedule IPI to its core:
//!   the IPI forces a VM exit there (host time: `vm.ipi_cycles`), and the
//!   interrupt is injected at the next entry, which pays
//!   `vm.exit_entry_cycles`;
//! - for a vCPU whose thread is out of guest mode on its core (the host is
//!   running an interrupt, a softirq or the entry itself), does nothing
//!   more: the interrupt is injected at the coming entry;
//! - for a halted vCPU, ends its halt poll at once, or wakes its sleeping
//!   thread (`kvm_vcpu_wake_up` → `try_to_wake_up`; the host core pays its
//!   C-state exit and the context switch).
//!
//! An assigned device's MSI-X vector (VFIO, passthrough and SR-IOV) is a
//! host hard IRQ first: `vfio_msihandler` → `eventfd_signal` →
//! `irqfd_wakeup` → `kvm_set_msi`, in the host's interrupt context on the
//! core the vector's affinity names (`vm.vfio_irq_cycles`).

use crate::model::vm::hypervisor::Hypervisor;
use crate::engine::Scheduler;
use crate::model::kernel::cpu::{IrqSrc, Owner, ThreadSeg};
use crate::model::kernel::{KernelId, HOST};
use crate::model::kernel::Kernel;
use crate::model::vm::vcpu::VcpuPhase;

/// Deliver interrupt `src` to CPU `gc` of guest `guest`: kick the
/// vCPU, then raise the interrupt on the guest core, where it runs as
/// soon as the vCPU is in guest mode.
#[inline(never)]
pub(crate) fn kvm_inject<M: Hypervisor>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, guest: KernelId, gc: u32, src: IrqSrc) {
    if m.run().measuring {
        m.run().counters.virtual_irqs += 1;
    }
    kvm_vcpu_kick(m, k, sched, guest, gc);
    m.in_kernel(k, guest, |k, m| k.raise_irq(m, sched, gc, src));
}

/// The vCPU of CPU `gc` of guest `guest` runs in guest mode now (its
/// thread's guest-mode segment runs on its core).
pub(crate) fn vcpu_in_guest_mode<M: Hypervisor>(m: &M, k: &Kernel, guest: KernelId, gc: u32) -> bool {
    let Some(t) = m.kernel_ref(k, guest).cores[gc as usize].vcpu else { return false };
    let host = m.kernel_ref(k, HOST);
    let core = host.thread_core(t);
    matches!(host.cores[core as usize].running, Some(r) if r.owner == Owner::Thread(t, ThreadSeg::Guest))
}

/// A posted interrupt (`vm.posted_interrupts`: VT-d posting with APICv,
/// `vmx_pi_update_irte`) for a vCPU in guest mode: the device writes the
/// vector into the vCPU's posted-interrupt descriptor and the CPU
/// delivers it without an exit or any host handler. A vCPU out of guest
/// mode gets the host's notification instead (the VFIO path).
#[inline(never)]
pub(crate) fn posted_inject<M: Hypervisor>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, guest: KernelId, gc: u32, src: IrqSrc) {
    if m.run().measuring {
        m.run().counters.virtual_irqs += 1;
    }
    m.in_kernel(k, guest, |k, m| k.raise_irq(m, sched, gc, src));
}

/// `kvm_vcpu_kick` for the vCPU of CPU `gc` of guest `guest`: make it
/// leave guest mode or wake it up, so that it enters (again) and sees
/// what is pending.
#[inline(never)]
pub(crate) fn kvm_vcpu_kick<M: Hypervisor>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, guest: KernelId, gc: u32) {
    let t = m.kernel_ref(k, guest).cores[gc as usize].vcpu.expect("a guest core has a vCPU");
    let now = sched.now();
    m.in_kernel(k, HOST, |k, m| {
        let v = k.vcpu_index(t).expect("a vCPU thread");
        let core = k.vcpus[v].core;
        match k.vcpus[v].phase {
            VcpuPhase::InGuest => {
                // Running in guest mode (not preempted on its core):
                // the IPI forces the exit. (A device vector on the
                // vCPU's own core has already exited it: the vCPU is
                // then preempted, not running. A guest timer expiring
                // there is the same exit, taken for the timer.)
                let running = matches!(
                    k.cores[core as usize].running,
                    Some(r) if r.owner == Owner::Thread(t, ThreadSeg::Guest)
                );
                if running {
                    k.raise_irq(m, sched, core, IrqSrc::VcpuKick(t));
                }
            }
            VcpuPhase::Entering => {}
            // On its way to HLT: the HLT will not block.
            VcpuPhase::TickStop => k.vcpus[v].tick_stop_kicked = true,
            VcpuPhase::HaltPoll => {
                vcpu_woken(m, k, v, now);
                let c = &mut k.cores[core as usize];
                match c.running {
                    Some(r) if r.owner == Owner::Thread(t, ThreadSeg::Step) => {
                        // The poll loop sees the pending interrupt.
                        c.abandon();
                        k.kick(m, sched, core);
                    }
                    // The poll was preempted by a host interrupt: it
                    // must not resume.
                    _ => k.vcpus[v].poll_frame_stale = true,
                }
            }
            VcpuPhase::Blocked => {
                vcpu_woken(m, k, v, now);
                k.thread_make_runnable(m, sched, t);
            }
        }
    });
}

/// The halted vCPU `v` has an event: it enters guest mode next, and
/// KVM adapts its poll window to how long it was halted.
fn vcpu_woken<M: Hypervisor>(m: &mut M, k: &mut Kernel, v: usize, now: crate::engine::Nanos) {
    let vcpu = &mut k.vcpus[v];
    let polled = vcpu.phase == VcpuPhase::HaltPoll;
    vcpu.phase = VcpuPhase::Entering;
    let halt_ns = now - vcpu.halt_start_ns;
    vcpu.adapt_halt_poll(halt_ns, &k.cfg.vm);
    if m.run().measuring && polled {
        m.run().counters.halt_poll_wakeups += 1;
    }
}

/// Host cycles of the hard IRQ `src` (VM sources only), on the active
/// (host) kernel: a VFIO vector that must also wake a sleeping vCPU
/// thread pays `try_to_wake_up`.
#[inline(never)]
pub(crate) fn vm_irq_cycles<M: Hypervisor>(m: &M, k: &Kernel, src: IrqSrc) -> u64 {
    match src {
        IrqSrc::Vfio(q) => {
            let route = m.irq_route(q);
            let blocked = route
                .vfio_vcpu()
                .and_then(|(g, gc)| m.kernel_ref(k, g).cores[gc as usize].vcpu)
                .and_then(|t| k.vcpu_index(t))
                .is_some_and(|v| k.vcpus[v].phase == VcpuPhase::Blocked);
            k.cfg.vm.vfio_irq_cycles + if blocked { k.cfg.costs.wakeup_cycles } else { 0 }
        }
        IrqSrc::VcpuKick(_) => k.cfg.vm.ipi_cycles,
        IrqSrc::VirtioKick(_) => k.cfg.vm.kick_cycles,
        _ => unreachable!("not a VM interrupt source"),
    }
}

/// End of a VM-related host hard IRQ on `core`.
#[inline(never)]
pub(crate) fn vm_hardirq_done<M: Hypervisor>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, src: IrqSrc) {
    match src {
        IrqSrc::Vfio(q) => {
            if let Some((guest, gc)) = m.irq_route(q).vfio_vcpu() {
                kvm_inject(m, k, sched, guest, gc, IrqSrc::Queue(q));
            }
        }
        // The exit happened; the entry follows when the vCPU thread
        // resumes.
        IrqSrc::VcpuKick(_) => {}
        IrqSrc::VirtioKick(q) => m.virtio_kicked(k, sched, q),
        _ => unreachable!("not a VM interrupt source"),
    }
}

/// A thread became runnable on a guest core whose vCPU is halted or
/// out of guest mode: the guest's reschedule IPI kicks the vCPU.
#[inline(never)]
pub(crate) fn guest_core_wake<M: Hypervisor>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, gc: u32) {
    let guest = k.id;
    kvm_vcpu_kick(m, k, sched, guest, gc);
}

