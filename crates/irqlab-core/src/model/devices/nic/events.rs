//! The physical NIC's events and its side of the driver: a frame's DMA into
//! an RX ring completes, a completion queue's moderation timer expires, a
//! transmitted reply's descriptor completes; the interrupt a completion
//! raises (routed to the host's core, or into a guest through VFIO), and
//! the TX path (the ring, the qdisc when it is full, the reply's wire time).

use crate::engine::{Nanos, Scheduler};
use crate::model::devices::nic::{Cq, PhysicalNic, Post, RxPacket, Signal};
use crate::model::run::DropSite;
use crate::model::lane;

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

impl NicEv {
    /// The queue pair the event is about.
    #[inline(always)]
    pub fn queue(&self) -> u32 {
        match *self {
            NicEv::PacketArrive { queue, .. } | NicEv::ModerationTimer { queue, .. } | NicEv::TxDone { queue, .. } => queue,
        }
    }
}

/// A reply that leaves on the wire for its client, `reply_wire_ns` after
/// its TX DMA: the NIC does not know who reads the wire; the machine makes
/// it the client's event.
#[derive(Clone, Copy, Debug)]
pub struct ReplyOnWire {
    pub conn: u32,
    pub sent_ns: Nanos,
}

/// The machine's events as the NIC schedules them: its own, and replies
/// on the wire.
pub trait NicEvents: From<NicEv> + From<ReplyOnWire> {}

impl<E: From<NicEv> + From<ReplyOnWire>> NicEvents for E {}

impl PhysicalNic {
    /// A frame from the wire reaches RX queue `queue`'s DMA at `at`. An
    /// arrival that can only join the ring waits in the queue, in its turn
    /// (`QueuePair::rx_deferrable`).
    #[inline]
    pub(crate) fn frame_in<E: NicEvents>(&mut self, sched: &mut Scheduler<E>, queue: u32, at: Nanos, mut pkt: RxPacket) {
        let q = &mut self.queues[queue as usize];
        if q.rx_deferrable() {
            pkt.arrived_ns = at;
            let key = sched.reserve(at);
            q.rx_defer(key, pkt);
            // A core busy polling the queue must poll it for real from then
            // on (`kernel/busy_chain.rs`).
            if sched.chains_running() {
                sched.lower_chain_end(queue as usize, key);
            }
        } else {
            q.rx_in_flight += 1;
            sched.at_fifo(lane::TO_SERVER, at, E::from(NicEv::PacketArrive { queue, pkt }));
        }
    }
}

/// What an event of the NIC asks of the machine.
#[derive(Clone, Copy, Debug)]
#[must_use]
pub enum NicOut {
    Nothing,
    /// Queue pair `queue`'s vector fired: its interrupt goes along its route
    /// (`PhysicalNic::route`).
    Irq { queue: u32 },
    /// A frame (or a reply) was dropped at `site`.
    Dropped { site: DropSite, conn: u32, sent_ns: Nanos },
}

impl PhysicalNic {
    /// Queue `queue` was armed again after a poll (the driver's
    /// completion): the TX completions and arrivals it kept while it could
    /// not signal (`QueuePair::tx_defer`, `rx_defer`) are events again,
    /// with the keys they were given.
    pub(crate) fn rearmed<E: NicEvents>(&mut self, sched: &mut Scheduler<E>, queue: u32) {
        let q = &mut self.queues[queue as usize];
        if !q.tx_done_deferrable() {
            while let Some((key, bytes)) = q.tx_deferred.pop_front() {
                sched.at_key(key, E::from(NicEv::TxDone { queue, bytes }));
            }
        }
        if q.rx.armed {
            while let Some((key, pkt)) = q.rx_deferred.pop_front() {
                q.rx_in_flight += 1;
                sched.at_key(key, E::from(NicEv::PacketArrive { queue, pkt }));
            }
        }
    }

    #[inline]
    pub(crate) fn on_event<E: NicEvents>(&mut self, sched: &mut Scheduler<E>, ev: NicEv) -> NicOut {
        match ev {
            NicEv::PacketArrive { queue, pkt } => self.packet_arrive(sched, queue, pkt),
            NicEv::ModerationTimer { queue, cq, gen } => {
                let a = self.queues[queue as usize].on_timer(sched.now(), cq, gen);
                self.moderation(sched, queue, cq, a)
            }
            NicEv::TxDone { queue, bytes } => {
                let a = self.queues[queue as usize].tx_done(sched.now(), bytes);
                self.moderation(sched, queue, Cq::Tx, a)
            }
        }
    }

    /// A packet reaches the ring: post it and apply moderation.
    fn packet_arrive<E: NicEvents>(&mut self, sched: &mut Scheduler<E>, queue: u32, mut pkt: RxPacket) -> NicOut {
        let now = sched.now();
        pkt.arrived_ns = now;
        let q = &mut self.queues[queue as usize];
        q.rx_in_flight -= 1;
        // Deferred arrivals due before this one are in the ring first.
        self.deferred_handled += q.rx_catch_up(sched.current_key());
        match q.post(pkt) {
            Post::Ring => {}
            Post::Buffered => return NicOut::Nothing,
            Post::Dropped => return NicOut::Dropped { site: DropSite::Ring, conn: pkt.conn, sent_ns: pkt.sent_ns },
        }
        let signal = q.completion(now, Cq::Rx);
        self.moderation(sched, queue, Cq::Rx, signal)
    }

    /// Apply a completion queue's moderation decision: fire its vector now,
    /// or arm its timer.
    #[inline]
    pub(crate) fn moderation<E: NicEvents>(&mut self, sched: &mut Scheduler<E>, queue: u32, cq: Cq, signal: Signal) -> NicOut {
        match signal {
            Signal::Nothing => NicOut::Nothing,
            Signal::FireNow => self.fire(sched, queue, cq),
            Signal::PostTimer(at, gen) => {
                sched.at_fifo(lane::MODERATION, at, E::from(NicEv::ModerationTimer { queue, cq, gen }));
                NicOut::Nothing
            }
        }
    }

    fn fire<E: NicEvents>(&mut self, sched: &mut Scheduler<E>, queue: u32, cq: Cq) -> NicOut {
        if let Signal::PostTimer(at, gen) = self.queues[queue as usize].fire(sched.now(), cq) {
            sched.at_fifo(lane::MODERATION, at, E::from(NicEv::ModerationTimer { queue, cq, gen }));
        }
        NicOut::Irq { queue }
    }

    /// A reply leaves through queue `queue`'s TX ring, or waits in the qdisc
    /// while the ring is full.
    pub(crate) fn transmit<E: NicEvents>(&mut self, sched: &mut Scheduler<E>, queue: u32, conn: u32, sent_ns: Nanos, bytes: u32) -> NicOut {
        let q = &mut self.queues[queue as usize];
        if !q.tx_post() {
            if q.qdisc.len() >= self.timing.txqueuelen as usize {
                return NicOut::Dropped { site: DropSite::Qdisc, conn, sent_ns };
            }
            q.qdisc.push_back((conn, sent_ns, bytes));
            return NicOut::Nothing;
        }
        let now = sched.now();
        sched.at_fifo(lane::TO_CLIENT, now + self.timing.reply_wire_ns, E::from(ReplyOnWire { conn, sent_ns }));
        // The TX descriptor completes once the NIC has DMAed the reply; a
        // completion that can only count waits in the queue, in its turn.
        let done_ns = now + self.timing.tx_dma_ns;
        let q = &mut self.queues[queue as usize];
        if q.tx_done_deferrable() {
            let key = sched.reserve(done_ns);
            q.tx_defer(key, bytes);
            if sched.chains_running() {
                sched.lower_chain_end(queue as usize, key);
            }
        } else {
            sched.at_fifo(lane::TX_DONE, done_ns, E::from(NicEv::TxDone { queue, bytes }));
        }
        NicOut::Nothing
    }

    /// Descriptors were reaped: send what waits in the qdisc (while the
    /// ring has room, so nothing is dropped).
    pub(crate) fn tx_restart<E: NicEvents>(&mut self, sched: &mut Scheduler<E>, queue: u32) {
        while let Some(&(conn, sent_ns, bytes)) = self.queues[queue as usize].qdisc.front() {
            if self.queues[queue as usize].tx_in_use >= self.queues[queue as usize].tx_capacity {
                break;
            }
            self.queues[queue as usize].qdisc.pop_front();
            let out = self.transmit(sched, queue, conn, sent_ns, bytes);
            debug_assert!(matches!(out, NicOut::Nothing), "a ring with room takes the reply");
        }
    }
}
