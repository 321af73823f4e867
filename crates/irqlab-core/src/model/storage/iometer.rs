//! Iometer's worker (one thread, `storage.oio` outstanding I/Os): it
//! issues reads until `oio` are outstanding, then waits for completions
//! (`GetQueuedCompletionStatus`) and issues a new read right after each
//! it completes, so `oio` or `oio` - 1 are outstanding at any time. A read's latency runs from its doorbell write to the end of
//! its completion in the worker. Issuing a read ends with the write to the
//! adapter's doorbell register, which traps: the vCPU exits and the VMM
//! and the VMkernel issue the read on the vCPU's own host core
//! (`lsilogic.rs`) before the guest goes on.

use crate::engine::Scheduler;
use crate::model::app::Phase;
use crate::model::cpu::{CpuClass, IrqSrc, ThreadId};
use crate::model::kernel::HOST;
use crate::model::sched::Seg;
use crate::model::server::{Ev, Server};

impl Server {
    /// The worker's next step, or None when it waits for a completion.
    pub(crate) fn iometer_next(&mut self, sched: &mut Scheduler<Ev>, t: ThreadId) -> Option<Seg> {
        let oio = self.cfg.storage.oio;
        let st = self.storage.as_mut().expect("storage workload");
        // Iometer's loop: each completion is followed by a new read.
        let (phase, cycles) = if st.outstanding < oio {
            (Phase::InIoIssue, self.cfg.storage.guest_issue_cycles)
        } else if let Some(sent) = st.done.pop_front() {
            st.completing = sent;
            (Phase::InIoComplete, self.cfg.storage.guest_complete_cycles)
        } else {
            self.kernel.threads[t as usize].phase = Phase::Sleeping;
            self.tr(sched.now(), crate::model::trace::TraceEvent::Sleep { thread: t });
            return None;
        };
        self.kernel.threads[t as usize].phase = phase;
        Some(Seg { class: CpuClass::System, ns: self.ns(cycles), bh_disabled: false })
    }

    /// The worker wrote the doorbell of a new read: the trap to the VMM on
    /// the vCPU's host core.
    pub(crate) fn iometer_issued(&mut self, sched: &mut Scheduler<Ev>, t: ThreadId) {
        let now = sched.now();
        self.kernel.threads[t as usize].phase = Phase::IoNext;
        let st = self.storage.as_mut().expect("storage workload");
        st.outstanding += 1;
        st.trapped.push_back(now);
        let gc = st.worker_cpu;
        let vcpu = self.kernel.cores[gc as usize].vcpu.expect("a guest core has a vCPU");
        self.in_kernel(HOST, |s| {
            let core = s.kernel.thread_core(vcpu);
            s.raise_irq(sched, core, IrqSrc::ScsiIssue);
        });
    }

    /// The worker completed a read.
    pub(crate) fn iometer_completed(&mut self, sched: &mut Scheduler<Ev>, t: ThreadId) {
        self.kernel.threads[t as usize].phase = Phase::IoNext;
        let st = self.storage.as_mut().expect("storage workload");
        st.outstanding -= 1;
        let sent = st.completing;
        self.record_reply(sched.now(), sent);
    }

    /// The ISR handed the worker completions: wake it if it waits.
    pub(crate) fn iometer_wake(&mut self, sched: &mut Scheduler<Ev>, t: ThreadId) {
        let th = &mut self.kernel.threads[t as usize];
        if th.phase == Phase::Sleeping {
            th.phase = Phase::IoNext;
            self.thread_make_runnable(sched, t);
        }
    }
}
