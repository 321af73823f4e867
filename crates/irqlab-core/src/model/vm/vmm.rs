//! The VMM's side: whenever it has control of a vCPU of the VM (the entry
//! after any exit, after a halt's wake-up), it picks up the completions
//! the VMkernel posted (Figure 1, 5), virtualizes each into the adapter's
//! reply queue (6) and asks vIC's Algorithm 2 whether to fire the virtual
//! interrupt (7) (`irqlab_policy::vic::Vic::on_completion`, with the
//! commands still in flight). Without vIC every completion fires it. A
//! completion held back stays in the reply queue until a later
//! interrupt's ISR takes it.

use crate::engine::{Nanos, Scheduler};
use crate::model::kernel::cpu::IrqSrc;
use crate::model::kernel::Kernel;
use crate::model::workloads::storage::StorageHost;

/// Pick up the posted completions at `now`; the VMM's cycles for them.
/// Called with the host active, as a vCPU of the VM enters guest mode.
pub(crate) fn vmm_drain<M: StorageHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, now: Nanos) -> u64 {
    let measuring = m.run().measuring;
    let st = m.storage();
    if st.posted.is_empty() {
        return 0;
    }
    let cif_threshold = k.cfg.vic.cif_threshold;
    let n = st.posted.len() as u64;
    let mut deliver = false;
    while let Some(io) = st.posted.pop_front() {
        st.cif -= 1;
        let d = match st.vic.as_mut() {
            Some(v) => {
                let epochs = v.epochs();
                let d = v.on_completion(now, st.cif);
                if measuring && v.epochs() > epochs {
                    st.counters.epoch_ratios.push(v.ratio().r());
                }
                d
            }
            None => true,
        };
        if measuring {
            let c = &mut st.counters;
            c.vmm_completions += 1;
            c.cif_sum += st.cif as u64;
            c.low_cif += (st.cif < cif_threshold) as u64;
            c.ratio_sum += st.vic.as_ref().map_or(1.0, |v| v.ratio().r());
            c.vic_delivered += d as u64;
        }
        st.replies.push_back((io, now));
        deliver |= d;
    }
    let mut cycles = n * k.cfg.storage.vmm_complete_cycles;
    if measuring {
        st.counters.pickup_cycles += cycles;
    }
    if deliver && !st.line_asserted {
        st.line_asserted = true;
        if measuring {
            st.counters.virtual_irqs += 1;
        }
        cycles += k.cfg.storage.vmm_intr_cycles;
        let (guest, gc) = (st.guest, st.irq_cpu);
        crate::model::vm::kvm::kvm_inject(m, k, sched, guest, gc, IrqSrc::Scsi);
    }
    cycles
}

/// A vCPU of the VM halts: the VMM has control and finds completions
/// posted meanwhile, so the VM does not sleep.
pub(crate) fn vmm_halt_check<M: StorageHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, gc: u32) {
    let st = m.storage();
    if !st.posted.is_empty() {
        let guest = st.guest;
        crate::model::vm::kvm::kvm_vcpu_kick(m, k, sched, guest, gc);
    }
}

