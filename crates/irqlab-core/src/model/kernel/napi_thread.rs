//! Threaded NAPI (`napi.threaded`; `/sys/class/net/DEV/threaded` = 1), as
//! the veth testbed runs it.
//!
//! `____napi_schedule` of a threaded NAPI wakes the NAPI's kernel thread
//! (`napi_threaded_poll`) instead of raising NET_RX; the thread polls until
//! the NAPI completes (`napi_threaded_poll_loop`), then sleeps in
//! `napi_thread_wait`. On a veth the schedule comes from the *sender*
//! (`veth_xmit` → `__veth_xdp_flush` → `napi_schedule`, unless
//! `rx_notify_masked` is set, which `veth_poll` clears when
//! `napi_complete_done` returns true): no interrupt runs on the receiving
//! core, only the wake-up of its thread (an IPI if the core idles). The
//! device model's interrupt, with no moderation, is that mask: fired once,
//! re-armed at completion.
//!
//! A wake-up from another CPU reaches the core as an IPI
//! (`ttwu_queue_wakelist`; the testbed counts one RES or CAL interrupt on
//! the server core per wake-up): on a busy core, `cpu.ipi_latency_ns`
//! later, a hard interrupt of `costs.ipi_irq_cycles` whose handler makes
//! the thread runnable; on an idle one the core's wake-up
//! (`cpu.wakeup_latency_ns`). Packets that arrive meanwhile find the NAPI
//! scheduled (masked) and wait for the same poll. A wake-up from the core
//! itself (the NAPI watchdog's hrtimer) needs no IPI.
//!
//! The thread is a thread of its core like ksoftirqd (`model/kernel/sched.rs`
//! runs both through the same turn logic):
//! - woken, it preempts the application thread at the end of its current
//!   segment (a rarely running thread has the earlier EEVDF deadline; on
//!   the testbed a thread woken on a busy CPU runs within the round trip of
//!   the wake-up), then polls until its NAPIs are done or the application
//!   has waited `cpu.sched_base_slice_ns`, and sleeps;
//! - each switch to the thread and back costs `costs.context_switch_cycles`
//!   (the application thread goes back to the run queue and pays its switch
//!   when it runs again);
//! - its polls are system time, not softirq (the kernel does not count a
//!   NAPI thread's polls as NET_RX), and each turn it gets is counted
//!   (`napi_thread_wakeups_per_s`), as the thread's context switches in
//!   `/proc/PID/status` are.
//!
//! One thread per core serves the core's NAPIs (the kernel has one per
//! NAPI; the testbed has one NAPI per core).

use crate::model::kernel::cpu::{Core, CpuClass, IrqSrc};
use crate::model::kernel::sched::Seg;
use crate::model::kernel::host::Host;
use crate::model::kernel::Kernel;
use crate::model::kernel::events::KernelEv;
use crate::engine::Scheduler;

impl Core {
    /// `napi_schedule` of a threaded NAPI on this core: wake the core's
    /// NAPI thread (it preempts at the next segment boundary).
    pub(crate) fn napi_thread_wake(&mut self) {
        if !self.ksoftirqd_mode {
            self.ksoftirqd_mode = true;
            self.ksoftirqd_turn = false;
            self.napi_thread_woken = true;
        }
    }
}

impl Kernel {
    /// The peer's `napi_schedule` of queue `queue`'s NAPI on `core`, from
    /// another CPU: the NAPI thread is woken by an IPI (see the module),
    /// unless it is awake already.
    pub(crate) fn napi_thread_schedule<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32, queue: u32) {
        let napi = self.queue_napi[queue as usize];
        if !self.napis[napi as usize].schedule_prep() {
            return;
        }
        let c = &mut self.cores[core as usize];
        c.poll_list.push_back(napi);
        if c.ksoftirqd_mode || c.napi_thread_ipi_in_flight || c.irq_pending.contains(&IrqSrc::NapiThreadIpi) {
            return;
        }
        if m.peer_modelled() {
            // The sender's `try_to_wake_up` pays for the IPI.
            let ns = self.ns(self.cfg.costs.remote_wake_cycles);
            m.peer_spends(sched.now(), ns);
        }
        let c = &mut self.cores[core as usize];
        if c.running.is_none() {
            c.napi_thread_wake();
            if c.waking_done {
                self.kick(m, sched, core);
            } else {
                self.kick_after_wakeup(m, sched, core);
            }
        } else if self.cfg.cpu.ipi_latency_ns > 0 {
            c.napi_thread_ipi_in_flight = true;
            sched.after(self.cfg.cpu.ipi_latency_ns, H::Ev::from(KernelEv::NapiThreadIpi { core }));
        } else {
            self.raise_irq(m, sched, core, IrqSrc::NapiThreadIpi);
        }
    }

    /// The wake-up IPI reaches `core`: its handler runs, or, if the core
    /// went idle meanwhile, the thread runs at once.
    pub(crate) fn napi_thread_ipi<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32) {
        let c = &mut self.cores[core as usize];
        c.napi_thread_ipi_in_flight = false;
        if c.ksoftirqd_mode {
            return;
        }
        if c.running.is_none() {
            c.napi_thread_wake();
            self.kick(m, sched, core);
        } else {
            self.raise_irq(m, sched, core, IrqSrc::NapiThreadIpi);
        }
    }

    /// The NAPI thread takes `core`: a preempted application thread goes
    /// back to the run queue (it pays its switch back in), and the thread's
    /// first segment carries the switch to it.
    pub(crate) fn napi_thread_turn<H: Host>(&mut self, m: &mut H, core: u32) {
        if m.run().measuring {
            m.run().counters.napi_thread_runs += 1;
        }
        let c = &mut self.cores[core as usize];
        c.napi_thread_woken = false;
        if let Some(t) = c.current_thread.take() {
            c.runqueue.push_front(t);
        }
        c.switched_out = true;
        c.napi_thread_switch_due = true;
    }

    /// A segment of the NAPI thread: system time, after the switch to it if due.
    pub(crate) fn napi_thread_segment(&mut self, core: u32, mut seg: Seg) -> Seg {
        seg.class = CpuClass::System;
        if std::mem::take(&mut self.cores[core as usize].napi_thread_switch_due) {
            seg.ns += self.ns(self.cfg.costs.context_switch_cycles);
        }
        seg
    }
}
