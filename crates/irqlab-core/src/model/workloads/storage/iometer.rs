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
use crate::model::server::{Ev, Machine};
use crate::model::kernel::Kernel;

/// How often SQLIOSim-like tuning looks at the latency.
pub const TUNE_INTERVAL_NS: crate::engine::Nanos = 100_000_000;

impl Machine {
    /// The worker's next step, or None when it waits for a completion.
    pub(crate) fn iometer_next(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, t: ThreadId) -> Option<Seg> {
        let st = self.storage.as_mut().expect("storage workload");
        let oio = st.oio_now;
        let th = &mut st.threads[t as usize];
        // Iometer's loop: each completion is followed by a new read.
        let (phase, cycles) = if th.outstanding < oio {
            (StoragePhase::InIoIssue, self.cfg.storage.guest_issue_cycles)
        } else if let Some(io) = th.done.pop_front() {
            th.completing = io;
            (StoragePhase::InIoComplete, self.cfg.storage.guest_complete_cycles)
        } else {
            k.threads[t as usize].phase = Phase::Sleeping;
            self.tr(sched.now(), crate::model::trace::TraceEvent::Sleep { thread: t });
            return None;
        };
        th.phase = phase;
        k.threads[t as usize].phase = Phase::InWorkload;
        Some(Seg { class: CpuClass::System, ns: self.ns(cycles), bh_disabled: false })
    }

    /// The worker wrote the doorbell of a new read.
    pub(crate) fn iometer_issued(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, t: ThreadId) {
        k.threads[t as usize].phase = Phase::Workload;
        self.storage_mut().threads[t as usize].phase = StoragePhase::IoNext;
        self.scsi_doorbell(k, sched, t);
    }

    /// Guest thread `t` wrote the adapter's doorbell for a new I/O: the
    /// trap to the VMM on its vCPU's host core.
    pub(crate) fn scsi_doorbell(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, t: ThreadId) {
        let now = sched.now();
        let gc = k.threads[t as usize].core;
        let vcpu = k.cores[gc as usize].vcpu.expect("a guest core has a vCPU");
        let st = self.storage_mut();
        st.threads[t as usize].outstanding += 1;
        // vCPU i runs on host core i.
        st.trapped[gc as usize].push_back(super::Io { sent_ns: now, owner: t });
        self.in_kernel(k, HOST, |k, s| {
            let core = k.thread_core(vcpu);
            k.raise_irq(s, sched, core, IrqSrc::ScsiIssue);
        });
    }

    /// The worker completed a read.
    pub(crate) fn iometer_completed(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, t: ThreadId) {
        k.threads[t as usize].phase = Phase::Workload;
        let now = sched.now();
        let st = self.storage_mut();
        let th = &mut st.threads[t as usize];
        th.phase = StoragePhase::IoNext;
        th.outstanding -= 1;
        let sent = th.completing.sent_ns;
        st.tune_latency_ns += now - sent;
        st.tune_reads += 1;
        self.record_reply(now, sent);
    }

    /// SQLIOSim's tuning (`storage.target_latency_us`), every
    /// [`TUNE_INTERVAL_NS`]: double the outstanding reads while their mean
    /// latency is below the target, halve them while it is above.
    pub(crate) fn iometer_tune(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>) {
        let (target_ns, cap) = (self.cfg.storage.target_latency_us * 1_000, self.cfg.storage.oio);
        let st = self.storage_mut();
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
        self.in_kernel(k, guest, |k, s| s.storage_thread_wake(k, sched, 0));
        sched.at(sched.now() + TUNE_INTERVAL_NS, Ev::Storage(StorageEv::OioTune));
    }

    /// The ISR handed thread `t` completions: wake it if it waits.
    pub(crate) fn storage_thread_wake(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, t: ThreadId) {
        let next = if self.cfg.app.kind == crate::scenario::AppKind::Oltp { StoragePhase::TxnNext } else { StoragePhase::IoNext };
        let th = &mut k.threads[t as usize];
        if th.phase == Phase::Sleeping {
            th.phase = Phase::Workload;
            self.storage_mut().threads[t as usize].phase = next;
            k.thread_make_runnable(self, sched, t);
        }
    }
}
