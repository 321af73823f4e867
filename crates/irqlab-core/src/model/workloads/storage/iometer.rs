//! Iometer's worker (one thread, `storage.oio` outstanding I/Os): it
//! issues reads until `oio` are outstanding, then waits for completions
//! (`GetQueuedCompletionStatus`) and issues a new read right after each
//! it completes, so `oio` or `oio` - 1 are outstanding at any time. A read's latency runs from its doorbell write to the end of
//! its completion in the worker. Issuing a read ends with the write to the
//! adapter's doorbell register, which traps: the vCPU exits and the VMM
//! and the VMkernel issue the read on the vCPU's own host core
//! (`lsilogic.rs`) before the guest goes on.
//!
//! With `storage.target_latency_us` the worker behaves as the paper says
//! SQLIOSim does (§4.3): it lowers its outstanding I/Os when it sees a
//! latency above its target and raises them when below; the exact rule is
//! not published, so the model doubles or halves them every 100 ms.

use crate::model::workloads::storage::StorageEv;
use crate::engine::Scheduler;
use crate::model::kernel::app::Phase;
use crate::model::workloads::storage::StoragePhase;
use crate::model::kernel::cpu::{CpuClass, IrqSrc, ThreadId};
use crate::model::kernel::HOST;
use crate::model::kernel::sched::Seg;
use crate::model::kernel::Kernel;
use crate::model::workloads::storage::StorageHost;

/// How often SQLIOSim-like tuning looks at the latency.
pub const TUNE_INTERVAL_NS: crate::engine::Nanos = 100_000_000;

/// The worker's next step, or None when it waits for a completion.
pub(crate) fn iometer_next<M: StorageHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, t: ThreadId) -> Option<Seg> {
    let st = m.storage();
    let oio = st.oio_now;
    let th = &mut st.threads[t as usize];
    // Iometer's loop: each completion is followed by a new read.
    let (phase, cycles) = if th.outstanding < oio {
        (StoragePhase::InIoIssue, k.cfg.storage.guest_issue_cycles)
    } else if let Some(io) = th.done.pop_front() {
        th.completing = io;
        (StoragePhase::InIoComplete, k.cfg.storage.guest_complete_cycles)
    } else {
        k.threads[t as usize].phase = Phase::Sleeping;
        m.tr(sched.now(), crate::model::trace::TraceEvent::Sleep { thread: t });
        return None;
    };
    th.phase = phase;
    k.threads[t as usize].phase = Phase::InWorkload;
    Some(Seg { class: CpuClass::System, ns: k.ns(cycles), bh_disabled: false })
}

/// The worker wrote the doorbell of a new read.
pub(crate) fn iometer_issued<M: StorageHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, t: ThreadId) {
    k.threads[t as usize].phase = Phase::Workload;
    m.storage().threads[t as usize].phase = StoragePhase::IoNext;
    scsi_doorbell(m, k, sched, t);
}

/// Guest thread `t` wrote the adapter's doorbell for a new I/O: the
/// trap to the VMM on its vCPU's host core.
pub(crate) fn scsi_doorbell<M: StorageHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, t: ThreadId) {
    let now = sched.now();
    let gc = k.threads[t as usize].core;
    let vcpu = k.cores[gc as usize].vcpu.expect("a guest core has a vCPU");
    // Only the OLTP checkpoint's writer writes.
    let write = k.cfg.app.kind == crate::scenario::AppKind::Oltp && t >= k.cfg.oltp.users;
    let st = m.storage();
    st.threads[t as usize].outstanding += 1;
    // vCPU i runs on host core i.
    st.trapped[gc as usize].push_back(super::Io { sent_ns: now, owner: t, write });
    m.in_kernel(k, HOST, |k, m| {
        let core = k.thread_core(vcpu);
        k.raise_irq(m, sched, core, IrqSrc::ScsiIssue);
    });
}

/// The worker completed a read.
pub(crate) fn iometer_completed<M: StorageHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, t: ThreadId) {
    k.threads[t as usize].phase = Phase::Workload;
    let now = sched.now();
    let st = m.storage();
    let th = &mut st.threads[t as usize];
    th.phase = StoragePhase::IoNext;
    th.outstanding -= 1;
    let sent = th.completing.sent_ns;
    st.tune_latency_ns += now - sent;
    st.tune_reads += 1;
    m.run().record_reply(now, sent);
}

/// SQLIOSim's tuning (`storage.target_latency_us`), every
/// [`TUNE_INTERVAL_NS`]: double the outstanding reads while their mean
/// latency is below the target, halve them while it is above.
pub(crate) fn iometer_tune<M: StorageHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>) {
    let (target_ns, cap) = (k.cfg.storage.target_latency_us * 1_000, k.cfg.storage.oio);
    let st = m.storage();
    if st.tune_reads > 0 {
        let mean = st.tune_latency_ns / st.tune_reads;
        if mean < target_ns {
            st.oio_now = (st.oio_now * 2).min(cap);
        } else if mean > target_ns {
            st.oio_now = (st.oio_now / 2).max(1);
        }
    }
    st.tune_latency_ns = 0;
    st.tune_reads = 0;
    let guest = st.guest;
    m.in_kernel(k, guest, |k, m| storage_thread_wake(m, k, sched, 0));
    sched.at(sched.now() + TUNE_INTERVAL_NS, M::Ev::from(StorageEv::OioTune));
}

/// The ISR handed thread `t` completions: wake it if it waits.
pub(crate) fn storage_thread_wake<M: StorageHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, t: ThreadId) {
    let next = if k.cfg.app.kind == crate::scenario::AppKind::Oltp { StoragePhase::TxnNext } else { StoragePhase::IoNext };
    let th = &mut k.threads[t as usize];
    if th.phase == Phase::Sleeping {
        th.phase = Phase::Workload;
        m.storage().threads[t as usize].phase = next;
        k.thread_make_runnable(m, sched, t);
    }
}

