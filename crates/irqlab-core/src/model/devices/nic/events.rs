//! The physical NIC's events and its side of the driver: a frame's DMA into
//! an RX ring completes, a completion queue's moderation timer expires, a
//! transmitted reply's descriptor completes; the interrupt a completion
//! raises (routed to the host's core, or into a guest through VFIO), and
//! the TX path (the ring, the qdisc when it is full, the reply's wire time).

use crate::engine::{Nanos, Scheduler};
use crate::model::devices::nic::{Cq, IrqRoute, PhysicalNic, Post, RxPacket, Signal};
use crate::model::kernel::cpu::IrqSrc;
use crate::model::kernel::HOST;
use crate::model::server::{lane, DropSite, Ev, Server};
use crate::model::trace::TraceEvent;
use crate::model::workloads::client::ClientEv;

/// The NIC's events.
#[derive(Clone, Copy, Debug)]
pub enum NicEv {
    /// A request's DMA into RX queue `queue` completes.
    PacketArrive { queue: u32, pkt: RxPacket },
    /// The interrupt-moderation timer of a queue's CQ expires.
    ModerationTimer { queue: u32, cq: Cq, gen: u32 },
    /// A transmitted reply's descriptor completes on queue `queue`.
    TxDone { queue: u32, bytes: u32 },
}

impl PhysicalNic {
    /// A frame from the wire reaches RX queue `queue`'s DMA at `at`. An
    /// arrival that can only join the ring waits in the queue, in its turn
    /// (`QueuePair::rx_deferrable`).
    #[inline]
    pub(crate) fn frame_in(&mut self, sched: &mut Scheduler<Ev>, queue: u32, at: Nanos, mut pkt: RxPacket) {
        let q = &mut self.queues[queue as usize];
        if q.rx_deferrable() {
            pkt.arrived_ns = at;
            q.rx_defer(sched.reserve(at), pkt);
        } else {
            q.rx_in_flight += 1;
            sched.at_fifo(lane::TO_SERVER, at, Ev::Nic(NicEv::PacketArrive { queue, pkt }));
        }
    }
}

impl Server {
    #[inline]
    pub(crate) fn nic_event(&mut self, sched: &mut Scheduler<Ev>, ev: NicEv) {
        match ev {
            NicEv::PacketArrive { queue, pkt } => self.packet_arrive(sched, queue, pkt),
            NicEv::ModerationTimer { queue, cq, gen } => {
                let a = self.nic.queues[queue as usize].on_timer(sched.now(), cq, gen);
                self.moderation(sched, queue, cq, a);
            }
            NicEv::TxDone { queue, bytes } => {
                let a = self.nic.queues[queue as usize].tx_done(sched.now(), bytes);
                self.moderation(sched, queue, Cq::Tx, a);
            }
        }
    }

    /// A packet reaches the ring: post it and apply moderation.
    fn packet_arrive(&mut self, sched: &mut Scheduler<Ev>, queue: u32, mut pkt: RxPacket) {
        let now = sched.now();
        pkt.arrived_ns = now;
        let q = &mut self.nic.queues[queue as usize];
        q.rx_in_flight -= 1;
        // Deferred arrivals due before this one are in the ring first.
        self.deferred_handled += q.rx_catch_up(sched.current_key());
        match q.post(pkt) {
            Post::Ring => {}
            Post::Buffered => return,
            Post::Dropped => return self.dropped(sched, DropSite::Ring, pkt.conn, pkt.sent_ns),
        }
        let signal = q.completion(now, Cq::Rx);
        self.moderation(sched, queue, Cq::Rx, signal);
    }

    #[inline]
    pub fn moderation(&mut self, sched: &mut Scheduler<Ev>, queue: u32, cq: Cq, signal: Signal) {
        match signal {
            Signal::Nothing => {}
            Signal::FireNow => self.raise_queue_irq(sched, queue, cq),
            Signal::PostTimer(at, gen) => sched.at_fifo(lane::MODERATION, at, Ev::Nic(NicEv::ModerationTimer { queue, cq, gen })),
        }
    }

    fn raise_queue_irq(&mut self, sched: &mut Scheduler<Ev>, queue: u32, cq: Cq) {
        self.tr(sched.now(), TraceEvent::IrqFired { queue });
        let q = &mut self.nic.queues[queue as usize];
        q.fire(sched.now(), cq);
        if self.run.measuring {
            self.run.counters.hard_irqs += 1;
        }
        match self.nic.route(queue) {
            // Threaded NAPI on a veth: the sender's `napi_schedule` wakes the
            // NAPI thread; no interrupt runs on the core.
            IrqRoute::Host { core } if self.cfg.napi.threaded => self.napi_thread_schedule(sched, core, queue),
            IrqRoute::Host { core } => self.in_kernel(HOST, |s| s.raise_irq(sched, core, IrqSrc::Queue(queue))),
            IrqRoute::Vfio { host_core, guest, guest_core } => {
                if self.cfg.vm.posted_interrupts && self.vcpu_in_guest_mode(guest, guest_core) {
                    // VT-d posted interrupt: straight into the running guest.
                    self.posted_inject(sched, guest, guest_core, IrqSrc::Queue(queue));
                } else {
                    self.in_kernel(HOST, |s| s.raise_irq(sched, host_core, IrqSrc::Vfio(queue)))
                }
            }
        }
    }

    /// A reply leaves through queue `queue`'s TX ring, or waits in the qdisc
    /// while the ring is full.
    pub(crate) fn transmit(&mut self, sched: &mut Scheduler<Ev>, queue: u32, conn: u32, sent_ns: Nanos, bytes: u32) {
        let q = &mut self.nic.queues[queue as usize];
        if !q.tx_post() {
            if q.qdisc.len() >= self.cfg.nic.txqueuelen as usize {
                self.dropped(sched, DropSite::Qdisc, conn, sent_ns);
            } else {
                q.qdisc.push_back((conn, sent_ns, bytes));
            }
            return;
        }
        let now = sched.now();
        let wire_ns = self.cfg.nic.wire_latency_ns + self.vm_dma_extra_ns + self.vm_wire_extra_ns;
        sched.at_fifo(lane::TO_CLIENT, now + wire_ns, Ev::Client(ClientEv::ReplyArrive { conn, sent_ns }));
        // The TX descriptor completes once the NIC has DMAed the reply; a
        // completion that can only count waits in the queue, in its turn.
        let done_ns = now + self.cfg.nic.dma_latency_ns + self.vm_dma_extra_ns;
        let q = &mut self.nic.queues[queue as usize];
        if q.tx_done_deferrable() {
            q.tx_defer(sched.reserve(done_ns), bytes);
        } else {
            sched.at_fifo(lane::TX_DONE, done_ns, Ev::Nic(NicEv::TxDone { queue, bytes }));
        }
    }

    /// Descriptors were reaped: send what waits in the qdisc.
    pub(crate) fn tx_restart(&mut self, sched: &mut Scheduler<Ev>, queue: u32) {
        while let Some(&(conn, sent_ns, bytes)) = self.nic.queues[queue as usize].qdisc.front() {
            if self.nic.queues[queue as usize].tx_in_use >= self.nic.queues[queue as usize].tx_capacity {
                break;
            }
            self.nic.queues[queue as usize].qdisc.pop_front();
            self.transmit(sched, queue, conn, sent_ns, bytes);
        }
    }

}
