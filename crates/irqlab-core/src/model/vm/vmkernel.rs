//! The VMkernel's side of a read: vSCSI's issue to the HBA (at the end of
//! the doorbell's trap, on the vCPU's core), the HBA's interrupt on the
//! host's storage core (Figure 1, 1), the storage stack up to vSCSI's
//! match to the VM (2), the post to the VM's completion queue (3), and the
//! notification of the VMM (4): an IPI to the core where the VM runs in
//! guest mode, unless vIC's deferral holds it back because the VMM fired a
//! virtual interrupt within `vic.ipi_threshold_us` (§3.3); the wake-up of
//! a halted VM ("It will schedule the VM if it is descheduled", §2); and
//! nothing for a VM out of guest mode on its core, whose VMM will look at
//! the queue before it enters again.
//!
//! The HBA raises one interrupt for the completions in its response queue
//! that no handler has yet taken: completions that arrive while the
//! interrupt waits, or while its handler walks the queue, join it; later
//! ones raise another. The handler completes one command at a time, each
//! through the storage stack to the VM's completion queue and the VMM's
//! notification, as the driver's ISR walks its response ring and calls
//! each command's completion in turn (Linux's qla2xxx,
//! `qla24xx_process_response_queue`, from which ESX's driver of the time
//! came): a completion reaches the VM as soon as its own processing ends.

use crate::model::workloads::storage::StorageEv;
use crate::engine::Scheduler;
use crate::model::kernel::cpu::IrqSrc;
use crate::model::kernel::HOST;
use crate::model::kernel::Kernel;
use crate::model::vm::vcpu::VcpuPhase;
use crate::model::workloads::storage::StorageHost;

/// vSCSI issues the trapped read to the HBA: the array completes it at
/// a time known now.
pub(crate) fn vscsi_issue<M: StorageHost>(m: &mut M, sched: &mut Scheduler<M::Ev>, core: u32) {
    let now = sched.now();
    let st = m.storage();
    let io = st.trapped[core as usize].pop_front().expect("a trapped I/O");
    st.cif += 1;
    let done = st.array.submit(now, io.write);
    st.in_array.push_back(io);
    sched.at(done, M::Ev::from(StorageEv::HbaComplete));
}

/// A read's status reached the HBA (`Ev::Storage(StorageEv::HbaComplete)`).
pub(crate) fn hba_complete<M: StorageHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>) {
    let measuring = m.run().measuring;
    let st = m.storage();
    let io = st.in_array.pop_front().expect("an I/O at the array");
    st.hba_response.push_back(io);
    if st.hba_irq_raised || st.hba_draining {
        return;
    }
    st.hba_irq_raised = true;
    if measuring {
        st.counters.hba_irqs += 1;
    }
    let core = st.hba_core;
    m.in_kernel(k, HOST, |k, m| k.raise_irq(m, sched, core, IrqSrc::Hba));
}

/// The HBA's handler takes the next completion of its response queue:
/// its cycles (the interrupt's entry and exit with the first).
pub(crate) fn hba_handler_start<M: StorageHost>(m: &mut M) -> u64 {
    let s = &m.cfg().storage;
    let (irq, per) = (s.hba_irq_cycles, s.vmk_complete_cycles);
    let st = m.storage();
    let entry = if std::mem::take(&mut st.hba_irq_raised) { irq } else { 0 };
    st.hba_draining = true;
    let io = st.hba_response.pop_front().expect("a completion in the HBA's response queue");
    st.in_handler.push_back(io);
    entry + per
}

/// The handler posted a completion to the VM's queue: notify the VMM,
/// then go on with the next in the response queue, if any.
pub(crate) fn hba_handler_done<M: StorageHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, core: u32) {
    hba_post(m, k, sched);
    let st = m.storage();
    if st.hba_response.is_empty() {
        st.hba_draining = false;
    } else {
        m.in_kernel(k, HOST, |k, m| k.raise_irq(m, sched, core, IrqSrc::Hba));
    }
}

/// The completion the handler processed is in the VM's queue: notify the VMM.
fn hba_post<M: StorageHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>) {
    let now = sched.now();
    let measuring = m.run().measuring;
    let st = m.storage();
    let taken = std::mem::take(&mut st.in_handler);
    st.posted.extend(taken);
    let (guest, gc) = (st.guest, st.irq_cpu);
    if crate::model::vm::kvm::vcpu_in_guest_mode(m, k, guest, gc) {
        let st = m.storage();
        let last = st.vic.as_ref().and_then(|v| v.last_delivery_ns());
        if !st.ipi.send_ipi(now, last) {
            if measuring {
                st.counters.ipis_deferred += 1;
            }
            return;
        }
        if measuring {
            st.counters.ipis += 1;
        }
    } else if measuring {
        let t = m.kernel_ref(k, guest).cores[gc as usize].vcpu.expect("a guest core has a vCPU");
        let v = k.vcpu_index(t).expect("a vCPU thread");
        if matches!(k.vcpus[v].phase, VcpuPhase::Blocked | VcpuPhase::HaltPoll) {
            m.storage().counters.vm_wakeups += 1;
        }
    }
    crate::model::vm::kvm::kvm_vcpu_kick(m, k, sched, guest, gc);
}

