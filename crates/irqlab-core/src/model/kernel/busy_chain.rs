//! Empty busy polls passed by the engine (issue 40, docs/performance.md,
//! "Scale").
//!
//! A thread busy polling a NAPI it owns whose ring is empty runs, until a
//! packet comes or `busy_poll_usecs` runs out, the same two segments over
//! and over: the driver's poll that finds nothing (`napi_poll_cycles`,
//! bottom halves disabled) and the `cpu_relax` spin of `napi_busy_loop`
//! (`busy_poll_iteration_cycles`). Each ends in an event that changes
//! nothing but the core's clock and starts the other segment. Below
//! saturation those are almost every event of a busy-wait run (1,400 per
//! request at 100k QPS on the thesis scenario).
//!
//! Once the spin starts with nothing to find, the core hands the engine the
//! two durations ([`crate::engine::chain`]): the queue passes the core's
//! segment ends itself, in their order among every other event's, and
//! counts each as handled. The chain ends at the
//! first event that could make a poll different: a deferred arrival or TX
//! completion of the NAPI's queue (its key, and any key the queue defers
//! later: `Scheduler::lower_chain_end`), or the loop's deadline. Anything
//! else that reaches the core, its thread, its epoll instance or its queue
//! ends the chain first (`Kernel::unchain`, called where those change): the
//! core's state is then brought to where the passed events left it, which
//! is arithmetic, since they changed only the phase, the running segment's
//! end and the time charged to system.
//!
//! Exact by construction; checked by the summaries of every scenario, which
//! stay bit-identical (`tools/debug_check.py`).

use crate::engine::{Nanos, Scheduler};
use crate::model::kernel::app::Phase;
use crate::model::kernel::cpu::{CpuClass, Owner, Running, ThreadId, ThreadSeg};
use crate::model::kernel::host::Host;
use crate::model::kernel::{Device, Kernel, HOST};

/// A chained core's `gen` differs from its pending event's by this (half
/// the range, so no stale event of the core can match it meanwhile).
const CHAINED_GEN: u32 = 1 << 31;

impl Kernel {
    /// Thread `t` just started its spin on `core` (`Phase::InBusySpin`):
    /// chain its empty polls if nothing but its own clock can change before
    /// the chain's end.
    #[inline(never)]
    pub(crate) fn try_chain_busy_poll<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32, t: ThreadId) {
        if self.id != HOST || core as usize >= sched.owners() {
            return;
        }
        let c = &self.cores[core as usize];
        if !c.runs_only_thread(t) || c.idle_exit_due || !c.runqueue.is_empty() || c.chained {
            return;
        }
        let th = &self.threads[t as usize];
        let ep = &self.epolls[t as usize];
        if th.phase != (Phase::InBusySpin { owned: true }) || !ep.ready.is_empty() {
            return;
        }
        // The next segments' refill (the disruption model) is that of a
        // class nothing displaced since it last ran.
        if let Some(d) = &self.disruption {
            let Some(class) = crate::model::kernel::disruption::class_of(Owner::Thread(t, ThreadSeg::Step)) else {
                return;
            };
            if d.refill_after_itself(class) != 0 {
                return;
            }
        }
        let k = &self.cfg.costs;
        let poll_ns = self.ns(k.napi_poll_cycles);
        let spin_ns = self.ns(k.busy_poll_iteration_cycles);
        if poll_ns == 0 || spin_ns == 0 {
            return;
        }
        let deadline_ns = th.busy_start_ns.saturating_add(ep.busy_poll_usecs as Nanos * 1_000);
        if deadline_ns <= sched.now() + spin_ns + poll_ns {
            // The loop ends at the next poll's end or before: nothing to pass.
            return;
        }
        let qi = self.napi_queue[th.busy_napi as usize];
        let q = m.queue(Device::Nic, qi);
        // An empty poll: nothing in the ring (nor in an 82599's buffer),
        // no TX completion to reap, no reply waiting for a descriptor.
        if !q.idle_for_busy_poll() {
            return;
        }
        let end_key = q.first_deferred_key().min((deadline_ns as u128) << 64);
        if sched.chain_owned(core as usize, [poll_ns, spin_ns], end_key, qi as usize) {
            let c = &mut self.cores[core as usize];
            c.chained = true;
            // The slot's event no longer matches the core's `gen`, so that
            // `kernel_event` finds the chain's end off its usual path;
            // `unchain` puts it back.
            c.gen ^= CHAINED_GEN;
        }
    }

    /// End `core`'s chain, if one runs, and bring the core where the
    /// events it passed left it.
    #[inline(always)]
    pub(crate) fn unchain<E>(&mut self, sched: &mut Scheduler<E>, core: u32) {
        if self.cores[core as usize].chained {
            self.unchain_now(sched, core);
        }
    }

    #[cold]
    #[inline(never)]
    fn unchain_now<E>(&mut self, sched: &mut Scheduler<E>, core: u32) {
        let c = &mut self.cores[core as usize];
        c.chained = false;
        c.gen ^= CHAINED_GEN;
        let ch = sched.unchain_owned(core as usize);
        if ch.passed == 0 {
            return;
        }
        let t = c.current_thread.expect("a chained core runs its thread");
        // Each passed event started a segment of the system class: the time
        // charged telescopes to the start of the pending one.
        c.set_class(ch.next_ns - ch.segment_ns, CpuClass::System);
        // Odd: the pending segment is a poll; even: a spin.
        let poll = ch.passed & 1 == 1;
        c.running = Some(Running {
            owner: Owner::Thread(t, ThreadSeg::Step),
            class: CpuClass::System,
            end_ns: ch.next_ns,
            bh_disabled: poll,
        });
        self.threads[t as usize].phase =
            if poll { Phase::InBusyIter { owned: true } } else { Phase::InBusySpin { owned: true } };
    }

    /// End the chain of the core busy polling device queue `queue`, if one
    /// runs (something reached the queue).
    #[inline(always)]
    pub(crate) fn unchain_queue<E>(&mut self, sched: &mut Scheduler<E>, queue: u32) {
        if let Some(core) = sched.chain_watcher(queue as usize) {
            self.unchain(sched, core as u32);
        }
    }

    /// End the chain of the core thread `t` runs on, if one runs.
    #[inline(always)]
    pub(crate) fn unchain_thread<E>(&mut self, sched: &mut Scheduler<E>, t: ThreadId) {
        self.unchain(sched, self.threads[t as usize].core);
    }

    /// End every chain (warm-up end, the run's end: the cores are read).
    pub(crate) fn unchain_all<E>(&mut self, sched: &mut Scheduler<E>) {
        for core in 0..self.cores.len() as u32 {
            self.unchain(sched, core);
        }
    }
}
