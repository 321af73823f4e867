//! Software steering's data path (`net/core/dev.c`, Linux 6.10, the IAPS
//! paper's kernel):
//!
//! - `enqueue_to_backlog`: the packet joins the target core's input queue,
//!   or is dropped when it already holds `netdev_max_backlog`; the enqueue
//!   that finds the backlog NAPI idle schedules it: on the same core
//!   directly, on another through `napi_schedule_rps`, which puts the
//!   target on this core's `rps_ipi_list`;
//! - `net_rps_action_and_irq_enable` at the end of this core's
//!   `net_rx_action` (and at the start of its own `process_backlog`) sends
//!   one IPI per listed core;
//! - the IPI's handler on the target (`rps_trigger_softirq`) puts the
//!   backlog NAPI on its poll list and raises NET_RX;
//! - `process_backlog` (weight `dev_weight`, 64) splices the input queue
//!   into the process queue when the latter is empty, runs the protocol on
//!   each packet, and completes when both are empty.
//!
//! So an IPI is sent only when a packet enters an idle backlog (no packet
//! queued, none being processed); this is what IAPS exploits.

use crate::model::kernel::cpu::CpuClass;
use crate::model::kernel::gro::Skb;
use crate::model::kernel::sched::Seg;
use crate::model::kernel::host::Host;
use crate::model::kernel::Kernel;
use crate::model::trace::TraceEvent;
use crate::engine::Scheduler;

/// The poll-list entry of a core's backlog NAPI (`softnet_data.backlog`);
/// device NAPIs are numbered from 0.
pub const BACKLOG_NAPI: u32 = u32::MAX;
/// Marks the segment in which `net_rx_action` sends its IPIs.
pub const IPI_SEND: u32 = u32::MAX - 1;

impl Kernel {
    /// `enqueue_to_backlog` on core `from` of a packet for core `target`;
    /// `flow` is its RFS flow-table slot, if RFS chose the core.
    pub(crate) fn enqueue_to_backlog<H: Host>(
        &mut self, m: &mut H,
        sched: &mut Scheduler<H::Ev>,
        from: u32,
        target: u32,
        skb: Skb,
        flow: Option<u32>,
    ) {
        let measuring = m.run().measuring;
        let st = m.steering().expect("software steering");
        let t = target as usize;
        let qlen = st.backlogs[t].input.len();
        if qlen >= st.max_backlog {
            if measuring {
                st.counters.backlog_drops += 1;
            }
            return m.stream_lost(sched, &skb);
        }
        if measuring {
            st.counters.steered += 1;
            if target != from {
                st.counters.steered_remote += 1;
            }
        }
        if qlen == 0 {
            if let Some(iaps) = st.iaps.as_mut() {
                iaps.became_busy(target);
            }
        }
        st.backlogs[t].input.push_back(skb);
        st.views[t].len += 1;
        if let Some(slot) = flow {
            let qtail = st.views[t].tail();
            st.rfs.enqueued(slot, qtail);
        }
        let b = &mut st.backlogs[t];
        if qlen == 0 && !b.scheduled {
            b.scheduled = true;
            let remote = target != from;
            if remote {
                st.ipi_list[from as usize].push(target);
            }
            m.tr(
                sched.now(),
                TraceEvent::BacklogScheduled {
                    core: target,
                    remote,
                },
            );
            if !remote {
                self.napi_enqueue(from, BACKLOG_NAPI);
            }
        }
    }

    /// `net_rps_action_and_irq_enable` at the end of `core`'s
    /// `net_rx_action`: a segment sending the listed IPIs, or None.
    pub(crate) fn rps_send_ipis<H: Host>(&mut self, m: &mut H, core: u32) -> Option<Seg> {
        let st = m.steering_ref()?;
        let n = st.ipi_list[core as usize].len() as u64;
        if n == 0 {
            return None;
        }
        self.softirq[core as usize].polling = Some((IPI_SEND, n as u32));
        Some(Seg {
            class: CpuClass::Softirq,
            ns: self.ns(n * self.cfg.costs.ipi_send_cycles),
            bh_disabled: false,
        })
    }

    /// The IPIs of `core`'s list leave (`net_rps_send_ipi`).
    pub(crate) fn rps_ipis_sent<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32) {
        let mut list = std::mem::take(&mut m.steering().expect("software steering").ipi_list[core as usize]);
        for &target in &list {
            self.raise_irq(m, sched, target, crate::model::kernel::cpu::IrqSrc::RpsIpi);
        }
        // Emptied, the list keeps its allocation.
        list.clear();
        m.steering().expect("software steering").ipi_list[core as usize] = list;
    }

    /// The IPI's handler ended (`rps_trigger_softirq`): the backlog NAPI
    /// goes on this core's poll list.
    pub(crate) fn rps_ipi_handled<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32) {
        let measuring = m.run().measuring;
        let counters = &mut m.steering().expect("software steering").counters;
        counters.ipis_since_start += 1;
        if measuring {
            counters.ipis += 1;
        }
        m.tr(sched.now(), TraceEvent::IpiHandled { core });
        self.napi_enqueue(core, BACKLOG_NAPI);
    }

    /// `process_backlog` on `core`, having processed `done` packets in this
    /// call so far: take up to the rest of the weight, splicing the input
    /// queue when the process queue is empty; returns (packets, cycles).
    pub(crate) fn process_backlog_take<H: Host>(
        &mut self, m: &mut H,
        sched: &mut Scheduler<H::Ev>,
        core: u32,
        done: u32,
    ) -> (u32, u64) {
        let quota = self.cfg.napi.weight;
        let mut cycles = if done == 0 {
            self.cfg.costs.napi_poll_cycles
        } else {
            0
        };
        // IPIs still waiting go first (`sd_has_rps_ipi_waiting`).
        if done == 0 {
            let n = m.steering_ref().map_or(0, |s| s.ipi_list[core as usize].len());
            if n > 0 {
                cycles += n as u64 * self.cfg.costs.ipi_send_cycles;
                self.rps_ipis_sent(m, sched, core);
            }
        }
        let st = m.steering().expect("software steering");
        let c = core as usize;
        let mut buf = std::mem::take(&mut st.processing[c]);
        buf.clear();
        let b = &mut st.backlogs[c];
        while done + (buf.len() as u32) < quota {
            if b.process.is_empty() {
                if b.input.is_empty() {
                    break;
                }
                std::mem::swap(&mut b.process, &mut b.input);
                if let Some(iaps) = st.iaps.as_mut() {
                    iaps.became_idle(core);
                }
            }
            buf.push(b.process.pop_front().expect("non-empty process queue"));
        }
        let n = buf.len() as u32;
        st.processing[c] = buf;
        cycles += m.tcp_rx_cycles(self, &m.steering_ref().expect("software steering").processing[c]);
        (n, cycles)
    }

    /// The `process_backlog` segment ended: the packets reach their
    /// sockets; then go on, complete, or stay scheduled for the next round.
    /// Returns Some(packets so far) when the call goes on with the input
    /// queue filled meanwhile.
    pub(crate) fn process_backlog_done<H: Host>(
        &mut self, m: &mut H,
        sched: &mut Scheduler<H::Ev>,
        core: u32,
        n: u32,
        before: u32,
    ) -> Option<u32> {
        let c = core as usize;
        let st = m.steering().expect("software steering");
        let mut buf = std::mem::take(&mut st.processing[c]);
        st.backlogs[c].head = st.backlogs[c].head.wrapping_add(n);
        st.views[c].input_queue_head = st.backlogs[c].head;
        st.views[c].len -= n;
        for skb in buf.drain(..) {
            m.tcp_rcv(self, sched, core, skb);
        }
        let work = before + n;
        let weight = self.cfg.napi.weight;
        let st = m.steering().expect("software steering");
        st.processing[c] = buf;
        let b = &mut st.backlogs[c];
        if work < weight {
            if !b.input.is_empty() || !b.process.is_empty() {
                return Some(work);
            }
            b.scheduled = false;
        } else {
            // Weight used: still scheduled, polled again next round.
            self.cores[c].poll_list.push_back(BACKLOG_NAPI);
        }
        None
    }
}
