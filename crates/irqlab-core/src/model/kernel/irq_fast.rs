//! The interrupt path's fast path: a queue's hard IRQ preempts what runs,
//! its handler schedules the NAPI, NET_RX polls it, and the round ends with
//! the preempted thread resumed. Under no-coalescing these are two events
//! in ten and most of the `kick`s; each step below does exactly what
//! `raise_irq` → `kick`, `core_segment_done` → `hardirq_done` → `kick` and
//! `core_segment_done` → `softirq_step_done` → `kick` do then, having first
//! checked that none of the cases `kick` looks at before that step applies
//! (a pending IRQ, the idle-exit cost, ksoftirqd, a frozen guest core, a
//! preempted bottom-half-disabled context). In every other case a step
//! returns false having changed nothing, and the general path runs, as
//! `thread_step_fast` (`app.rs`) does for the thread's steps.
//!
//! A traced run takes none of these paths (`Kernel::irq_fast`): it is the
//! reference the tests compare with (`tests/irq_fast.rs`).
//!
//! Only the host kernel's own queues (a NIC with its NET_RX softirq, not
//! threaded NAPI, no software steering) take these paths: a guest's poll
//! may trap to its host and freeze the core mid-step, which `kick`'s loop
//! handles and these do not.

use crate::engine::Scheduler;
use crate::model::kernel::cpu::{CpuClass, IrqSrc, Owner, Running, ThreadSeg};
use crate::model::kernel::host::Host;
use crate::model::kernel::sched::Seg;
use crate::model::kernel::{Device, Kernel, HOST};

impl Kernel {
    /// A hard IRQ is raised on a core that runs a step of a host thread or a
    /// softirq poll, awake, with no other IRQ pending: the IRQ preempts it
    /// and its handler starts at once (`raise_irq`, then `kick`'s step 1).
    #[inline(always)]
    pub(crate) fn irq_enters_fast<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32, src: IrqSrc) -> bool {
        let c = &mut self.cores[core as usize];
        let Some(Running { owner, .. }) = c.running else {
            return false;
        };
        if !self.irq_fast {
            return false;
        }
        // A guest-mode segment takes a VM exit (`vcpu_preempted`); a hard
        // IRQ or a wake-up is not preempted.
        if !matches!(owner, Owner::Thread(_, ThreadSeg::Step | ThreadSeg::Overhead) | Owner::Softirq) {
            return false;
        }
        if !c.irq_pending.is_empty() || c.idle_exit_due || !c.waking_done || c.frozen {
            return false;
        }
        c.preempt(sched.now(), true);
        if matches!(owner, Owner::Thread(..)) {
            c.interruptions += 1;
        }
        let ns = self.ns(self.irq_cycles(m, src));
        self.start_segment(sched, core, Owner::HardIrq(src), Seg { class: CpuClass::Irq, ns, bh_disabled: false });
        true
    }

    /// The running segment of `core`, a queue's hard IRQ handler or a
    /// NET_RX poll, completed: its fast path if it has one (module doc).
    #[inline(always)]
    pub(crate) fn irq_step_fast<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32) -> bool {
        match self.cores[core as usize].running {
            Some(Running { owner: Owner::HardIrq(IrqSrc::Queue(q)), .. }) => self.queue_irq_done_fast(m, sched, core, q),
            Some(Running { owner: Owner::Softirq, .. }) => self.softirq_poll_done_fast(m, sched, core),
            _ => false,
        }
    }

    /// Whether this kernel's NET_RX rounds may take the fast path.
    #[inline(always)]
    fn irq_fast_ok<H: Host>(&self, m: &H) -> bool {
        self.irq_fast && self.id == HOST && self.device == Device::Nic && !self.cfg.napi.threaded && m.steering_ref().is_none()
    }

    /// `core` may start a NET_RX round now: `kick` would reach its step 2
    /// (no idle-exit cost, no pending IRQ) and `softirq_can_run` holds but
    /// for the pending flag, which the caller sets or has.
    #[inline(always)]
    fn softirq_may_start(&self, core: u32) -> bool {
        let c = &self.cores[core as usize];
        c.irq_pending.is_empty()
            && !c.idle_exit_due
            && !c.ksoftirqd_mode
            && !c.frozen
            && !c.stack.iter().any(|f| f.owner == Owner::Softirq || f.bh_disabled)
    }

    /// Queue `q`'s hard IRQ handler ended and nobody owns its NAPI: the
    /// driver schedules it (`hardirq_done`) and, at IRQ exit, NET_RX starts
    /// a round that polls it (`kick`'s step 2).
    #[inline(always)]
    fn queue_irq_done_fast<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32, q: u32) -> bool {
        let napi = self.queue_napi[q as usize];
        if !self.irq_fast_ok(m) || self.napis[napi as usize].sched || !self.softirq_may_start(core) {
            return false;
        }
        self.cores[core as usize].running = None;
        let owned = self.napis[napi as usize].schedule_prep();
        debug_assert!(owned);
        self.napi_enqueue(core, napi);
        match self.softirq_next(m, sched, core) {
            Some(seg) => self.start_segment(sched, core, Owner::Softirq, seg),
            // A fresh round with the NAPI just queued polls it (its budget
            // and `netdev_budget_usecs` >= 1 are not used up at its start);
            // should it not, `kick` goes on as its loop would.
            None => self.kick(m, sched, core),
        }
        true
    }

    /// A NET_RX poll ended. Its effects are the general ones
    /// (`softirq_step_done`); then, when nothing is left on the poll list
    /// and nothing else is pending, the round ends (`softirq_next`) and the
    /// context it preempted resumes (`kick`'s step 3).
    #[inline(always)]
    fn softirq_poll_done_fast<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32) -> bool {
        if !self.irq_fast_ok(m) || self.softirq[core as usize].poll_continues.is_some() {
            return false;
        }
        self.cores[core as usize].running = None;
        self.softirq_step_done(m, sched, core);
        let c = &self.cores[core as usize];
        let round_over = c.running.is_none()
            && c.softirq_in_round
            && !c.softirq_pending
            && c.poll_list.is_empty()
            && self.softirq[core as usize].poll_continues.is_none()
            && self.softirq_may_start(core);
        if !round_over {
            self.kick(m, sched, core);
            return true;
        }
        // `softirq_next` at the end of a round with an empty poll list.
        let st = &mut self.softirq[core as usize];
        st.active = false;
        st.restarts = 0;
        let c = &mut self.cores[core as usize];
        c.softirq_in_round = false;
        match c.stack.pop() {
            Some(f) => {
                self.resume_frame(m, sched, core, f);
                let c = &self.cores[core as usize];
                if c.running.is_none() && !c.frozen {
                    self.kick(m, sched, core);
                }
            }
            None => self.kick(m, sched, core),
        }
        true
    }
}
