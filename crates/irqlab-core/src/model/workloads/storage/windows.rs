//! Windows Server 2003 as the storage guest's kernel
//! (`storage.guest_dispatcher = "windows-2003"`): the completion of an I/O
//! as a special kernel APC to the thread that issued it, the readying of
//! a waiting thread on the processor `KiDeferredReadyThread` chooses (the
//! decision is `irqlab_policy::sched::nt_ready`), and the inter-processor
//! interrupts both send (Windows Research Kernel 1.2;
//! docs/notes/vic-guest-interrupts-sources.md §8). The guest's ISR
//! (`devices/lsilogic.rs`) calls in here for each completion it hands over.

use crate::engine::Scheduler;
use crate::model::kernel::app::Phase;
use crate::model::kernel::cpu::{IrqSrc, ThreadId};
use crate::model::kernel::Kernel;
use crate::model::kernel::HOST;
use crate::model::workloads::storage::iometer::storage_thread_wake;
use crate::model::workloads::storage::{Storage, StorageHost, StoragePhase};
use irqlab_policy::sched::nt_ready::{nt_ready_thread, NtCpu};

/// Windows Server 2003's completion of an I/O of thread `t`, in the DPC on
/// guest CPU `gc` (`storage.guest_dispatcher = "windows-2003"`):
/// `IopfCompleteRequest` queues a special kernel APC to the thread that
/// issued it (`KeInsertQueueApc`; the APC then posts to the completion
/// port in the thread's context). A thread waiting at passive level, as
/// Iometer's worker in `GetQueuedCompletionStatus`, is unwaited and
/// readied where `KiDeferredReadyThread` puts it, with an IPI if that
/// processor halted or must preempt; a thread running on another
/// processor gets an APC interrupt (`KiRequestApcInterrupt`: an IPI); a
/// thread that is ready, or runs here, takes the APC when it runs (Windows
/// Research Kernel 1.2, `io/iomgr/iosubs.c`, `ke/apcsup.c`,
/// `ke/thredsup.c`; docs/notes/vic-guest-interrupts-sources.md §8).
pub(crate) fn nt_completion_apc<M: StorageHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, gc: u32, t: ThreadId) {
    let core = k.threads[t as usize].core;
    if k.threads[t as usize].phase == Phase::Sleeping {
        let st = m.storage();
        if st.ready_on_ipi.iter().any(|r| r.contains(&t)) {
            // Readied already, for a processor whose IPI is on its way.
            return;
        }
        let (ideal, cpus) = (k.cfg.storage.worker_vcpu, k.cfg.vcpus());
        let d = nt_ready_thread(ideal, core, gc, cpus, |c| nt_cpu_state(st, k, c));
        if d.cpu != core {
            k.threads[t as usize].core = d.cpu;
            k.migrations += 1;
        }
        if d.ipi {
            m.storage().ready_on_ipi[d.cpu as usize].push(t);
            nt_send_ipi(m, k, sched, gc, d.cpu);
        } else {
            storage_thread_wake(m, k, sched, t);
        }
    } else if core != gc && k.cores[core as usize].current_thread == Some(t) {
        nt_send_ipi(m, k, sched, gc, core);
    }
}

/// What guest CPU `c` is doing, as Windows' dispatcher sees it when it
/// readies Iometer's worker: idle (no thread, nothing readied for it),
/// halted if its vCPU is out of guest mode then; else running a thread
/// of lower priority (a background thread at idle priority) or not.
fn nt_cpu_state(st: &Storage, k: &Kernel, c: u32) -> NtCpu {
    let core = &k.cores[c as usize];
    if core.current_thread.is_none() && core.runqueue.is_empty() && st.ready_on_ipi[c as usize].is_empty() {
        return if core.frozen { NtCpu::IdleHalted } else { NtCpu::Idle };
    }
    match core.current_thread {
        Some(r) if matches!(st.threads[r as usize].phase, StoragePhase::Spin | StoragePhase::InSpin) => NtCpu::BusyLower,
        _ => NtCpu::Busy,
    }
}

/// Guest CPU `from` sends an IPI to guest CPU `to`: its write of the
/// interrupt command register traps to the VMM, which injects the IPI
/// into `to`'s vCPU; one already pending there takes this one with it.
fn nt_send_ipi<M: StorageHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, from: u32, to: u32) {
    let st = m.storage();
    if std::mem::replace(&mut st.ipi_pending[to as usize], true) {
        return;
    }
    let vcpu = k.cores[from as usize].vcpu.expect("a guest core has a vCPU");
    m.in_kernel(k, HOST, |k, m| {
        let core = k.thread_core(vcpu);
        k.raise_irq(m, sched, core, IrqSrc::GuestIpiSend(to));
    });
}

/// Cycles of an IPI's two halves: the sender's trap, the VMM's emulation
/// of the interrupt command register's write and its notification of the
/// target vCPU, as the host's IPI to a vCPU costs (`vm.ipi_cycles`, an
/// estimate); the target's handler (`costs.ipi_irq_cycles`), whose start
/// is the local APIC's acceptance: another IPI may be sent from then on.
pub(crate) fn nt_ipi_cycles<M: StorageHost>(m: &mut M, src: IrqSrc) -> u64 {
    match src {
        IrqSrc::GuestIpiSend(_) => m.cfg().vm.ipi_cycles,
        IrqSrc::GuestIpi(c) => {
            m.storage().ipi_pending[c as usize] = false;
            m.cfg().costs.ipi_irq_cycles
        }
        _ => unreachable!("not a guest IPI"),
    }
}

/// An IPI's half ended: the sender's trap injects the IPI into the target
/// vCPU; the target's handler runs the threads readied for it.
pub(crate) fn nt_ipi_done<M: StorageHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, src: IrqSrc) {
    match src {
        IrqSrc::GuestIpiSend(target) => {
            let guest = m.storage().guest;
            crate::model::vm::kvm::kvm_inject(m, k, sched, guest, target, IrqSrc::GuestIpi(target));
        }
        IrqSrc::GuestIpi(c) => {
            if m.run().measuring {
                m.storage().counters.guest_ipis += 1;
            }
            let mut ready = std::mem::take(&mut m.storage().ready_on_ipi[c as usize]);
            for &t in &ready {
                storage_thread_wake(m, k, sched, t);
            }
            ready.clear();
            m.storage().ready_on_ipi[c as usize] = ready;
        }
        _ => unreachable!("not a guest IPI"),
    }
}
