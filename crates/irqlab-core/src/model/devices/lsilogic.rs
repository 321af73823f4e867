//! The emulated LSI Logic adapter: the guest's register accesses that trap
//! to the VMM on the vCPU's host core (the doorbell of a new read, the
//! ISR's acknowledgement), and the adapter's interrupt and the clock's in
//! the guest.
//!
//! The adapter's interrupt line is level-triggered: the VMM asserts it for
//! a delivered completion unless it is asserted already, and the guest's
//! ISR takes every completion the VMM has virtualized so far, then
//! acknowledges, which deasserts the line. "Level-triggered lines do some
//! implicit coalescing already but that only helps if two IOs are
//! completed back-to-back in the very short time window before the guest
//! interrupt service routine has had the chance to deassert the line"
//! (the paper, §2).

use crate::model::workloads::storage::StorageEv;
use crate::engine::Scheduler;
use crate::model::kernel::cpu::IrqSrc;
use crate::model::kernel::HOST;
use crate::model::kernel::Kernel;
use crate::model::workloads::storage::StorageHost;
use crate::model::vm::vmkernel::hba_handler_done;
use crate::model::vm::vmkernel::hba_handler_start;
use crate::model::workloads::storage::iometer::storage_thread_wake;
use crate::model::vm::vmkernel::vscsi_issue;
use crate::model::workloads::storage::windows::{nt_completion_apc, nt_ipi_cycles, nt_ipi_done};
use crate::scenario::GuestDispatcher;

/// Cycles of a storage interrupt source, on the active kernel: the
/// host's traps and HBA interrupt, the guest's ISR and clock.
pub(crate) fn storage_irq_cycles<M: StorageHost>(m: &mut M, src: IrqSrc) -> u64 {
    let s = &m.cfg().storage;
    let trap = match src {
        IrqSrc::ScsiIssue => s.issue_trap_cycles,
        IrqSrc::ScsiAck => s.ack_trap_cycles,
        _ => 0,
    };
    if trap > 0 && m.run().measuring {
        m.storage().counters.emulation_cycles += trap;
    }
    let s = &m.cfg().storage;
    match src {
        IrqSrc::ScsiIssue | IrqSrc::ScsiAck => trap,
        IrqSrc::Hba => hba_handler_start(m),
        IrqSrc::Scsi => s.guest_isr_cycles,
        IrqSrc::GuestTimer => m.cfg().costs.timer_irq_cycles,
        IrqSrc::GuestIpiSend(_) | IrqSrc::GuestIpi(_) => nt_ipi_cycles(m, src),
        _ => unreachable!("not a storage interrupt source"),
    }
}

/// End of a storage interrupt source's handler.
pub(crate) fn storage_irq_done<M: StorageHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, core: u32, src: IrqSrc) {
    match src {
        IrqSrc::ScsiIssue => vscsi_issue(m, sched, core),
        // The VMM has control now; it looks at the completion queue
        // when the vCPU enters guest mode again (`vmm.rs`).
        IrqSrc::ScsiAck => {}
        IrqSrc::Hba => hba_handler_done(m, k, sched, core),
        IrqSrc::Scsi => lsilogic_isr_done(m, k, sched, core),
        IrqSrc::GuestTimer => {
            if m.run().measuring {
                m.storage().counters.guest_irqs += 1;
            }
        }
        IrqSrc::GuestIpiSend(_) | IrqSrc::GuestIpi(_) => nt_ipi_done(m, k, sched, src),
        _ => unreachable!("not a storage interrupt source"),
    }
}

/// The guest's ISR on CPU `gc` took the replies: they go to the
/// worker, the line is acknowledged (a register write that traps).
fn lsilogic_isr_done<M: StorageHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, gc: u32) {
    let now = sched.now();
    let measuring = m.run().measuring;
    let st = m.storage();
    if measuring {
        st.counters.guest_irqs += 1;
    }
    st.line_asserted = false;
    // The owners to wake, in a buffer kept across interrupts; under
    // Windows' dispatcher one per completion (an APC per I/O).
    let windows = k.cfg.storage.guest_dispatcher == GuestDispatcher::Windows2003;
    let mut woken = std::mem::take(&mut st.woken);
    while let Some((io, picked_ns)) = st.replies.pop_front() {
        if measuring {
            st.counters.isr_taken += 1;
            st.counters.reply_wait_ns += now - picked_ns;
        }
        st.threads[io.owner as usize].done.push_back(io);
        if windows || !woken.contains(&io.owner) {
            woken.push(io.owner);
        }
    }
    for &t in &woken {
        if windows {
            nt_completion_apc(m, k, sched, gc, t);
        } else {
            storage_thread_wake(m, k, sched, t);
        }
    }
    woken.clear();
    m.storage().woken = woken;
    let vcpu = k.cores[gc as usize].vcpu.expect("a guest core has a vCPU");
    m.in_kernel(k, HOST, |k, m| {
        let core = k.thread_core(vcpu);
        k.raise_irq(m, sched, core, IrqSrc::ScsiAck);
    });
}

/// The guest's clock: Windows' periodic tick, taken by every CPU, an
/// interrupt the VMM injects into each vCPU (which exits if it runs, or
/// wakes if it halted). Windows requires that "all processors must
/// receive the interrupts" of the system clock (the NT platform
/// specification, "System Interval Timer Interrupt"), and each processor's
/// tick (`KeUpdateRunTime` in Windows Server 2003 SP1's kernel) counts as
/// one of its interrupts: perfmon's Interrupts/sec, summed over the
/// processors, takes `guest_timer_hz` per vCPU
/// (docs/notes/vic-guest-interrupts-sources.md §2-3).
pub(crate) fn guest_tick<M: StorageHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>) {
    let hz = k.cfg.storage.guest_timer_hz as u64;
    let guest = m.storage().guest;
    let vcpus = k.cfg.vcpus();
    m.in_kernel(k, HOST, |k, m| {
        for gc in 0..vcpus {
            crate::model::vm::kvm::kvm_inject(m, k, sched, guest, gc, IrqSrc::GuestTimer);
        }
    });
    sched.at(sched.now() + 1_000_000_000 / hz, M::Ev::from(StorageEv::GuestTick));
}
