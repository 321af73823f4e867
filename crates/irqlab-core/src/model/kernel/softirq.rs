//! The NET_RX softirq: `net_rx_action` polling the core's poll list, and the
//! driver's poll (`mlx5e_napi_poll`) with its completion handling.
//!
//! A round polls each NAPI on the list once with its weight (64); a NAPI
//! that used its whole weight goes to the tail for the next round (it is not
//! repolled in the same `net_rx_action` call), unless a busy poller asked
//! for it (PREFER_BUSY_POLL), in which case it is completed instead
//! (`__napi_poll`). A round stops at `netdev_budget` packets or
//! `netdev_budget_usecs`; `handle_softirqs` restarts while work is pending
//! up to `MAX_SOFTIRQ_RESTART` times within 2 ms, then hands the rest to
//! ksoftirqd, which runs the same rounds as a thread sharing the core with
//! the application (see [`crate::model::kernel::sched`]).

use crate::model::kernel::backlog::{BACKLOG_NAPI, IPI_SEND};
use crate::model::kernel::cpu::CpuClass;
use crate::model::kernel::{Device, RxSink};
use crate::model::devices::nic::RxPacket;
use crate::model::kernel::sched::Seg;
use crate::model::kernel::host::Host;
use crate::model::kernel::Kernel;
use crate::model::trace::{TimerReason, TraceEvent};
use crate::engine::{Nanos, Scheduler};

/// Per-core progress of the softirq in execution.
#[derive(Clone, Copy, Debug, Default)]
pub struct SoftirqState {
    /// A round is in progress.
    pub active: bool,
    /// NAPIs still to poll in this round.
    pub to_poll: u32,
    pub budget_left: i64,
    pub round_start_ns: Nanos,
    pub restarts: u32,
    pub first_start_ns: Nanos,
    /// The NAPI being polled and how many packets the poll's current
    /// segment took.
    pub polling: Option<(u32, u32)>,
    /// Packets the poll took in its earlier segments (a forwarding poll
    /// that went on to descriptors done meanwhile).
    pub poll_taken_before: u32,
    /// The poll of this NAPI goes on with the descriptors written back
    /// while it forwarded, having taken this many so far.
    pub poll_continues: Option<(u32, u32)>,
    /// The entry cost of the round was paid.
    pub entered: bool,
}

impl Kernel {
    /// Next softirq segment of `core`, or None when the softirq is done
    /// (pending flag cleared, or handed to ksoftirqd).
    pub(crate) fn softirq_next<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32) -> Option<Seg> {
        let now = sched.now();
        let weight = self.cfg.napi.weight;
        let st = &mut self.softirq[core as usize];
        if !st.active {
            // handle_softirqs: start (or restart) a round.
            let c = &mut self.cores[core as usize];
            c.softirq_pending = false;
            if c.poll_list.is_empty() {
                st.restarts = 0;
                return None;
            }
            if st.restarts == 0 {
                st.first_start_ns = now;
            }
            st.active = true;
            c.softirq_in_round = true;
            st.entered = false;
            st.to_poll = c.poll_list.len() as u32;
            st.budget_left = self.cfg.napi.netdev_budget as i64;
            st.round_start_ns = now;
            // A NAPI thread's polls are not NET_RX softirqs.
            if m.run().counting && self.id >= m.app_kernel() && !self.cfg.napi.threaded {
                m.run().counters.softirq_rounds += 1;
            }
        }
        if let Some((napi, taken)) = self.softirq[core as usize].poll_continues.take() {
            if napi == BACKLOG_NAPI {
                let (n, cycles) = self.process_backlog_take(m, sched, core, taken);
                let st = &mut self.softirq[core as usize];
                st.polling = Some((BACKLOG_NAPI, n));
                st.poll_taken_before = taken;
                return Some(Seg { class: CpuClass::Softirq, ns: self.ns(cycles), bh_disabled: false });
            }
            return Some(self.forward_poll_continue(m, core, napi, taken, weight));
        }
        let st = &mut self.softirq[core as usize];
        let c = &mut self.cores[core as usize];
        let budget_us = self.cfg.napi.netdev_budget_usecs as Nanos * 1_000;
        if st.to_poll == 0 || c.poll_list.is_empty() || st.budget_left <= 0 || now - st.round_start_ns >= budget_us {
            // Software steering: the IPIs this round scheduled leave first
            // (`net_rps_action_and_irq_enable`).
            if m.steering_ref().is_some() {
                if let Some(seg) = self.rps_send_ipis(m, core) {
                    return Some(seg);
                }
            }
            let st = &mut self.softirq[core as usize];
            let c = &mut self.cores[core as usize];
            // End of the round: anything left re-raises NET_RX.
            st.active = false;
            c.softirq_in_round = false;
            if !c.poll_list.is_empty() {
                st.restarts += 1;
                if st.restarts >= self.cfg.napi.max_softirq_restart || now - st.first_start_ns >= 2_000_000 {
                    // wakeup_softirqd: the rest runs at thread priority.
                    st.restarts = 0;
                    if !c.ksoftirqd_mode {
                        // Woken, ksoftirqd preempts the current thread
                        // (its wake-up lag wins under EEVDF) and runs for
                        // a slice before the thread gets the core back.
                        c.ksoftirqd_mode = true;
                        c.ksoftirqd_turn = true;
                        c.turn_start_ns = now;
                        c.context_switches += 1;
                    }
                    c.softirq_pending = true;
                    self.pelt_refresh(core, now);
                    return None;
                }
                c.softirq_pending = true;
                return self.softirq_next(m, sched, core);
            }
            st.restarts = 0;
            return None;
        }
        let napi = c.poll_list.pop_front().expect("non-empty poll list");
        st.to_poll -= 1;
        let entry = if st.entered {
            0
        } else {
            // Cold start when the round interrupted a running thread.
            let interrupted_thread = matches!(
                c.stack.last(),
                Some(crate::model::kernel::cpu::Frame { owner: crate::model::kernel::cpu::Owner::Thread(..), interrupted: true, .. })
            );
            // Under the disruption model the cold start is the refill
            // (`start_segment`).
            let cold = interrupted_thread && self.disruption.is_none();
            self.cfg.costs.softirq_entry_cycles + if cold { self.cfg.costs.irq_cold_cycles } else { 0 }
        };
        st.entered = true;
        let (n, cycles) = if napi == BACKLOG_NAPI {
            self.process_backlog_take(m, sched, core, 0)
        } else if self.rx_sink == RxSink::Stream {
            m.stream_poll_take(self, now, napi, weight)
        } else {
            let mut buf = std::mem::take(&mut self.softirq_buf[core as usize]);
            let r = self.driver_poll_take(m, sched.current_key(), napi, weight, &mut buf);
            self.softirq_buf[core as usize] = buf;
            r
        };
        let st = &mut self.softirq[core as usize];
        st.polling = Some((napi, n));
        st.poll_taken_before = 0;
        Some(Seg { class: CpuClass::Softirq, ns: self.ns(entry + cycles), bh_disabled: false })
    }

    /// `ixgbe_clean_rx_irq` reads descriptors one by one until it finds one
    /// not yet written back or has taken its budget, so frames that arrived
    /// while it forwarded the earlier ones are taken in the same poll, with
    /// no new poll's overhead and no TX reaping (`ixgbe_poll` cleans TX
    /// first). The model takes a poll's packets as a batch and continues
    /// it with a segment of its own for those that came meanwhile.
    fn forward_poll_continue<H: Host>(&mut self, m: &mut H, core: u32, napi: u32, taken: u32, weight: u32) -> Seg {
        let mut buf = std::mem::take(&mut self.softirq_buf[core as usize]);
        buf.clear();
        let qi = self.napi_queue[napi as usize] as usize;
        m.queue(Device::Nic, qi as u32).take(weight - taken, &mut buf);
        let n = buf.len() as u32;
        self.softirq_buf[core as usize] = buf;
        let st = &mut self.softirq[core as usize];
        st.polling = Some((napi, n));
        st.poll_taken_before = taken;
        Seg { class: CpuClass::Softirq, ns: self.ns(n as u64 * self.cfg.costs.forward_packet_cycles), bh_disabled: false }
    }

    /// Next segment of ksoftirqd (`run_ksoftirqd`: `handle_softirqs` again
    /// while work is pending), or None when the poll list is empty and it
    /// goes back to sleep.
    pub(crate) fn ksoftirqd_next<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32) -> Option<Seg> {
        loop {
            if let Some(seg) = self.softirq_next(m, sched, core) {
                return Some(seg);
            }
            // handle_softirqs returned: done, or out of restarts/time, in
            // which case ksoftirqd (already running) starts another call.
            if self.cores[core as usize].poll_list.is_empty() {
                return None;
            }
        }
    }

    /// The poll segment completed: deliver what it took, then complete or requeue.
    pub(crate) fn softirq_step_done<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32) {
        let Some((napi, n)) = self.softirq[core as usize].polling.take() else { return };
        if napi >= IPI_SEND {
            return self.steering_step_done(m, sched, core, napi, n);
        }
        let mut buf = std::mem::take(&mut self.softirq_buf[core as usize]);
        self.deliver(m, sched, napi, &mut buf, false);
        self.softirq_buf[core as usize] = buf;
        self.softirq[core as usize].budget_left -= n as i64;
        m.tr(sched.now(), TraceEvent::Poll { napi, packets: n, busy: false });
        let weight = self.cfg.napi.weight;
        let n = n + std::mem::take(&mut self.softirq[core as usize].poll_taken_before);
        if self.rx_sink == RxSink::Forward && n < weight {
            let qi = self.napi_queue[napi as usize] as usize;
            let done = m.queue(Device::Nic, qi as u32).catch_up(sched.current_key());
            m.deferred_handled(done);
            if m.queue(Device::Nic, qi as u32).rx_pending() > 0 {
                self.softirq[core as usize].poll_continues = Some((napi, n));
                return;
            }
        }
        // Reaped TX descriptors restart a stopped queue; freed virtqueue buffers a worker.
        self.driver_poll_done(m, sched, napi);
        if n < weight || self.napis[napi as usize].prefer_busy_poll {
            self.driver_complete(m, sched, core, napi, n);
        } else {
            // Whole weight used: stay scheduled, poll again next round.
            self.cores[core as usize].poll_list.push_back(napi);
        }
    }

    /// A segment of software steering ended: the IPIs left, or a
    /// `process_backlog` step (which may go on, `model/kernel/backlog.rs`).
    #[cold]
    fn steering_step_done<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32, napi: u32, n: u32) {
        if napi == IPI_SEND {
            return self.rps_ipis_sent(m, sched, core);
        }
        let before = std::mem::take(&mut self.softirq[core as usize].poll_taken_before);
        m.tr(sched.now(), TraceEvent::Poll { napi, packets: n, busy: false });
        self.softirq[core as usize].budget_left -= n as i64;
        if let Some(work) = self.process_backlog_done(m, sched, core, n, before) {
            self.softirq[core as usize].poll_continues = Some((BACKLOG_NAPI, work));
        }
    }

    /// The driver's poll: take up to `budget` packets from the ring into
    /// `buf` (delivered when the poll's segment ends); returns (packets,
    /// cycles of the poll including the wake-ups its deliveries cause).
    /// `key` is the engine's key of the event being handled: the TX
    /// completions and arrivals the queue kept (`QueuePair::tx_defer`,
    /// `rx_defer`) whose keys are below it are applied first.
    pub(crate) fn driver_poll_take<H: Host>(&mut self, m: &mut H, key: u128, napi: u32, budget: u32, buf: &mut Vec<RxPacket>) -> (u32, u64) {
        buf.clear();
        let qi = self.napi_queue[napi as usize] as usize;
        let q = m.queue(self.device, qi as u32);
        // mlx5e_napi_poll reaps TX completions first (not counted as work);
        // ixgbe_poll too, up to its own TX work limit.
        let tx_budget = if q.eitr.is_some() { crate::model::devices::nic::eitr::IXGBE_DEFAULT_TX_WORK } else { budget };
        let deferred_done = q.catch_up(key);
        let tx = q.reap_tx(tx_budget);
        q.take(budget, buf);
        let n = buf.len() as u32;
        m.deferred_handled(deferred_done);
        let k = &self.cfg.costs;
        if self.rx_sink == RxSink::Forward {
            // No socket, no waiter: each packet is switched and sent.
            return (n, k.napi_poll_cycles + n as u64 * k.forward_packet_cycles + tx as u64 * k.tx_clean_cycles);
        }
        let mut cycles = k.napi_poll_cycles + n as u64 * k.rx_packet_cycles + tx as u64 * k.tx_clean_cycles;
        if self.rx_sink == RxSink::Bridge {
            // The tap wakes the guest's vhost worker (`sk_data_ready`).
            if n > 0 {
                cycles += k.wakeup_cycles;
            }
            return (n, cycles);
        }
        cycles += self.wakeup_cycles_for(buf.iter().map(|p| p.conn));
        (n, cycles)
    }

    /// The wake-ups a delivery of packets of connections `conns` causes:
    /// `ep_poll_callback` (or a socket's `sk_data_ready`) wakes each
    /// sleeping waiter once.
    #[inline]
    pub(crate) fn wakeup_cycles_for(&self, conns: impl Iterator<Item = u32>) -> u64 {
        let mut woken: u64 = 0;
        let mut cycles = 0;
        for conn in conns {
            let t = self.conn_thread[conn as usize];
            if self.threads[t as usize].is_sleeping() && (woken & (1u64 << (t % 64))) == 0 {
                woken |= 1u64 << (t % 64);
                cycles += self.cfg.costs.wakeup_cycles;
            }
        }
        cycles
    }

    /// After a poll of `napi` (softirq or busy poll): on the NIC, reaped TX
    /// descriptors let the stack restart a stopped queue; on virtio-net,
    /// the RX buffers it freed let a waiting vhost worker go on.
    pub(crate) fn driver_poll_done<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, napi: u32) {
        let queue = self.napi_queue[napi as usize];
        match self.device {
            Device::Nic => m.tx_restart(sched, queue),
            Device::Virtio => m.virtio_refilled(self, sched, queue),
        }
    }

    /// The driver's completion after a poll that used less than its budget:
    /// `napi_complete_done`, then re-arm the IRQ (with a DIM sample) if it
    /// returned true, arm the watchdog, or reschedule on MISSED.
    pub(crate) fn driver_complete<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32, napi: u32, work: u32) {
        let c = self.napis[napi as usize].complete_done(work);
        if let Some(t) = c.start_timer_ns {
            self.napi_timer_start(m, sched, napi, core, t, TimerReason::Complete);
        }
        if c.reschedule {
            self.napi_enqueue(core, napi);
        }
        if c.rearm_irq {
            let now = sched.now();
            let queue = self.napi_queue[napi as usize];
            m.tr(now, TraceEvent::IrqRearmed { queue });
            if self.device == Device::Virtio {
                return m.virtqueue_napi_complete(self, core, napi, queue, now);
            }
            let q = m.queue(Device::Nic, queue);
            let done = q.catch_up(sched.current_key());
            q.dim_sample(now);
            let signals = q.arm(now);
            m.deferred_handled(done);
            for (cq, signal) in signals {
                m.moderation(self, sched, queue, cq, signal);
            }
            // A CQ may signal now: completions and arrivals still to come
            // are events again, with the keys they were given.
            m.nic_rearmed(sched, queue);
        }
    }
}
