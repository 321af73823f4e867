//! The NIC: per queue pair a bounded RX ring, a TX completion queue, and the
//! interrupt moderation of both CQs, which share the pair's MSI-X vector (as
//! in an mlx5 channel: RX and TX completions signal one event queue). An
//! Intel 82599 (`nic.kind = "82599"`) throttles the vector instead
//! ([`eitr`]): RX and TX write-backs are causes of one interrupt whose rate
//! ixgbe's ITR policy bounds.

pub mod eitr;
pub mod events;
pub mod moderation;
pub mod route;
pub mod split_page;
pub mod vf;

use crate::dim::net_dim::DimDirection;
use crate::engine::Nanos;
use crate::scenario::RxBufferAccounting;
pub use eitr::EitrVector;
use eitr::{IntervalEnd, TxWriteBack};
pub use moderation::{Moderation, Signal};
pub use route::IrqRoute;
use std::collections::VecDeque;

/// The physical NIC: its queue pairs, receive-side scaling and where each
/// pair's interrupt goes.
pub struct PhysicalNic {
    pub queues: Vec<QueuePair>,
    /// Per connection, the RX queue its packets land in.
    rss: Vec<u32>,
    /// Per queue pair, the path of its MSI-X vector.
    routes: Vec<IrqRoute>,
    /// The TX side's delays and qdisc length.
    pub(crate) timing: TxTiming,
    /// TX completions and arrivals the queues kept rather than scheduled
    /// (`QueuePair::tx_defer`, `rx_defer`) and have applied: handled events
    /// the engine did not pop, added to its count at the end.
    pub(crate) deferred_handled: u64,
}

/// The TX side's delays and the qdisc in front of each TX ring.
#[derive(Clone, Copy, Debug, Default)]
pub struct TxTiming {
    /// A reply's way to its client: the wire, plus an assigned device's
    /// IOMMU and SR-IOV switch (`vf.rs`), ns.
    pub reply_wire_ns: Nanos,
    /// A TX descriptor's DMA, plus the IOMMU, ns.
    pub tx_dma_ns: Nanos,
    /// Replies the qdisc holds while the ring is full (`nic.txqueuelen`).
    pub txqueuelen: u32,
}

impl PhysicalNic {
    /// `queues` with `connections` flows spread evenly over them: RSS hashes
    /// a flow's 4-tuple (Toeplitz) through the indirection table; the model
    /// takes the ideal spread, flow i on queue i mod n.
    pub fn new(queues: Vec<QueuePair>, connections: u32, routes: Vec<IrqRoute>) -> Self {
        let n = queues.len() as u32;
        debug_assert_eq!(routes.len(), queues.len());
        PhysicalNic { queues, rss: (0..connections).map(|i| i % n).collect(), routes, timing: TxTiming::default(), deferred_handled: 0 }
    }

    /// The NIC with its TX side's delays.
    pub fn with_timing(mut self, timing: TxTiming) -> Self {
        self.timing = timing;
        self
    }

    /// The path of queue pair `q`'s interrupt.
    #[inline]
    pub fn route(&self, q: u32) -> IrqRoute {
        self.routes[q as usize]
    }

    /// The RX queue of connection `conn`'s packets.
    #[inline]
    pub fn rss_queue(&self, conn: u32) -> u32 {
        self.rss[conn as usize]
    }
}

/// A received packet waiting in a ring: one memcached request.
#[derive(Clone, Copy, Debug)]
pub struct RxPacket {
    pub conn: u32,
    /// Time the client sent it (latency is measured from here).
    pub sent_ns: Nanos,
    /// Time it was posted to the ring.
    pub arrived_ns: Nanos,
    /// Bytes on the wire (DIM counts bytes).
    pub bytes: u32,
    /// Bytes of the reply this request asks for.
    pub reply_bytes: u32,
}

/// Where a packet reaching the NIC went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Post {
    /// Into the RX ring: a completion.
    Ring,
    /// Into the on-chip buffer, waiting for a descriptor.
    Buffered,
    /// Nowhere: the ring and the buffer were full.
    Dropped,
}

/// Which completion queue of a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cq {
    Rx,
    Tx,
}

/// Moderation settings of one CQ.
#[derive(Clone, Copy, Debug)]
pub struct CqSettings {
    pub usecs: u32,
    pub frames: u32,
    pub cqe_mode: bool,
    pub adaptive: bool,
    /// The CQ signals interrupts at all (TX completion interrupts optional).
    pub irqs: bool,
}

pub struct QueuePair {
    pub id: u32,
    pub ring: VecDeque<RxPacket>,
    pub capacity: usize,
    pub rx: Moderation,
    pub tx: Moderation,
    tx_irqs: bool,
    /// TX descriptors in use: posted by `sendmsg`, not yet reaped.
    pub tx_in_use: u32,
    pub tx_capacity: u32,
    /// Replies waiting for a free TX descriptor (the qdisc while the driver
    /// has stopped the queue): connection, client send time, bytes.
    pub qdisc: VecDeque<(u32, Nanos, u32)>,
    /// Transmitted packets whose completions the driver has not reaped.
    pub tx_outstanding: u32,
    pub tx_outstanding_bytes: u64,
    /// TX completions not scheduled as events (`tx_defer`): the engine's
    /// key each would have had, and its bytes, in key order.
    pub tx_deferred: VecDeque<(u128, u32)>,
    /// Arrivals not scheduled as events (`rx_defer`): the engine's key each
    /// would have had, and its packet (arrival time set), in key order.
    pub rx_deferred: VecDeque<(u128, RxPacket)>,
    /// Arrivals scheduled as events and not yet handled.
    pub rx_in_flight: u32,
    pub drops: u64,
    pub irqs: u64,
    /// Packets and bytes the driver took from the RX ring (a driver's
    /// per-queue `rx_packets`/`rx_bytes`, counted at poll as mlx5e and
    /// ixgbe count them), since the start; what a policy sees.
    pub rx_packets: u64,
    pub rx_bytes: u64,
    /// TX completions the driver reaped, and their bytes.
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// The 82599's throttled vector; None on a ConnectX-4, whose CQs
    /// moderate (`rx`, `tx`). Boxed, as the buffer, so that a ConnectX-4's
    /// hot queue state stays as compact as before.
    pub eitr: Option<Box<EitrVector>>,
    /// The 82599's on-chip receive buffer; None on a ConnectX-4.
    buffer: Option<Box<PacketBuffer>>,
}

/// Frames waiting in the NIC's on-chip buffer for a free descriptor
/// (`nic.rx_packet_buffer_bytes`), and the buffer bytes they take
/// (`nic.rx_packet_buffer_accounting`).
struct PacketBuffer {
    frames: VecDeque<RxPacket>,
    bytes: u64,
    capacity_bytes: u64,
    accounting: RxBufferAccounting,
}

/// Preamble, start delimiter and inter-frame gap: what a frame occupies on
/// the wire beyond its bytes and FCS (ixgbe's `IXGBE_ETH_FRAMING`).
const ETH_FRAMING_BYTES: u64 = 20;

impl PacketBuffer {
    /// The buffer bytes a frame of `bytes` (without FCS) takes.
    fn charge(&self, bytes: u32) -> u64 {
        let frame = bytes as u64 + FCS_BYTES;
        match self.accounting {
            RxBufferAccounting::Frame => frame,
            // 36/25 of the wire time, rounded up (the driver's DV macros add 1).
            RxBufferAccounting::FillRate => ((frame + ETH_FRAMING_BYTES) * 36).div_ceil(25),
        }
    }
}

/// Take from `deferred` (in key order) every entry whose key is below
/// `key`, handing each to `apply`; how many.
#[inline]
fn take_due<T>(deferred: &mut VecDeque<(u128, T)>, key: u128, mut apply: impl FnMut(T)) -> u64 {
    let mut n = 0;
    while deferred.front().is_some_and(|&(k, _)| k < key) {
        let (_, t) = deferred.pop_front().expect("a front entry");
        apply(t);
        n += 1;
    }
    n
}

/// Ethernet's frame check sequence, which the NIC buffers with the frame
/// but strips before the driver counts it.
const FCS_BYTES: u64 = 4;

impl QueuePair {
    pub fn new(id: u32, capacity: usize, tx_capacity: u32, rx: CqSettings, tx: CqSettings) -> Self {
        QueuePair {
            id,
            ring: VecDeque::new(),
            capacity,
            rx: Moderation::new(rx.usecs, rx.frames, rx.cqe_mode, rx.adaptive, DimDirection::Rx),
            tx: Moderation::new(tx.usecs, tx.frames, tx.cqe_mode, tx.adaptive, DimDirection::Tx),
            tx_irqs: tx.irqs,
            tx_in_use: 0,
            tx_capacity,
            qdisc: VecDeque::new(),
            tx_outstanding: 0,
            tx_outstanding_bytes: 0,
            tx_deferred: VecDeque::new(),
            rx_deferred: VecDeque::new(),
            rx_in_flight: 0,
            drops: 0,
            irqs: 0,
            rx_packets: 0,
            rx_bytes: 0,
            tx_packets: 0,
            tx_bytes: 0,
            eitr: None,
            buffer: None,
        }
    }

    /// An 82599 queue pair: its vector throttled by `eitr`, frames waiting
    /// in up to `packet_buffer_bytes` of on-chip buffer when the ring is full.
    pub fn with_eitr(mut self, eitr: EitrVector, packet_buffer_bytes: u64, accounting: RxBufferAccounting) -> Self {
        self.eitr = Some(Box::new(eitr));
        self.buffer = Some(Box::new(PacketBuffer {
            frames: VecDeque::new(),
            bytes: 0,
            capacity_bytes: packet_buffer_bytes,
            accounting,
        }));
        self
    }

    /// Frames in the RX ring, written back and not yet taken.
    pub fn rx_pending(&self) -> usize {
        self.ring.len()
    }

    /// A busy poll of the pair would find nothing to do: no frame in the
    /// ring, no 82599 vector (whose on-chip buffer refills the ring at a
    /// poll), no TX completion to reap, no reply waiting for a descriptor
    /// (`kernel/busy_chain.rs`).
    pub fn idle_for_busy_poll(&self) -> bool {
        self.ring.is_empty() && self.eitr.is_none() && self.tx_outstanding == 0 && self.qdisc.is_empty()
    }

    /// The smallest key of the TX completions and arrivals the pair keeps
    /// (`tx_defer`, `rx_defer`), or `u128::MAX` if none.
    pub fn first_deferred_key(&self) -> u128 {
        let tx = self.tx_deferred.front().map_or(u128::MAX, |&(k, _)| k);
        let rx = self.rx_deferred.front().map_or(u128::MAX, |&(k, _)| k);
        tx.min(rx)
    }

    /// Frames waiting for a descriptor or in the ring: the vector has a cause.
    fn causes_pending(&self) -> bool {
        !self.ring.is_empty() || (self.tx_irqs && self.tx_outstanding > 0)
    }

    fn cq(&mut self, cq: Cq) -> &mut Moderation {
        match cq {
            Cq::Rx => &mut self.rx,
            Cq::Tx => &mut self.tx,
        }
    }

    /// The moderation of `cq`, to read.
    pub fn cq_ref(&self, cq: Cq) -> &Moderation {
        match cq {
            Cq::Rx => &self.rx,
            Cq::Tx => &self.tx,
        }
    }

    /// A packet reaches the NIC: into the ring (true), into the on-chip
    /// buffer while the ring is full (false, no completion yet), or dropped
    /// (false; counted).
    #[inline]
    pub fn post(&mut self, pkt: RxPacket) -> Post {
        if self.ring.len() >= self.capacity {
            return self.post_ring_full(pkt);
        }
        self.ring.push_back(pkt);
        Post::Ring
    }

    #[cold]
    #[inline(never)]
    fn post_ring_full(&mut self, pkt: RxPacket) -> Post {
        if let Some(b) = self.buffer.as_mut() {
            let charge = b.charge(pkt.bytes);
            if b.bytes + charge <= b.capacity_bytes {
                b.bytes += charge;
                b.frames.push_back(pkt);
                return Post::Buffered;
            }
        }
        self.drops += 1;
        Post::Dropped
    }

    /// Frames that waited in the on-chip buffer take the descriptors the
    /// driver freed. A frame keeps its arrival time at the NIC, so the
    /// ring wait it reports includes its wait in the buffer.
    fn refill_from_buffer(&mut self) {
        let Some(b) = self.buffer.as_mut() else { return };
        while self.ring.len() < self.capacity {
            let Some(p) = b.frames.pop_front() else { break };
            b.bytes -= b.charge(p.bytes);
            self.ring.push_back(p);
        }
    }

    /// A completion on `cq` at `now`.
    #[inline]
    pub fn completion(&mut self, now: Nanos, cq: Cq) -> Signal {
        if cq == Cq::Tx && !self.tx_irqs {
            return Signal::Nothing;
        }
        if let Some(v) = self.eitr.as_mut() {
            return v.on_cause(now);
        }
        self.cq(cq).on_completions(now, 1)
    }

    /// `sendmsg` hands a reply to the driver: true if a TX descriptor was
    /// free (it is now in use), false if the reply must wait in the qdisc.
    pub fn tx_post(&mut self) -> bool {
        if self.tx_in_use >= self.tx_capacity {
            return false;
        }
        self.tx_in_use += 1;
        true
    }

    /// A TX completion need not be an event while it can only count: no
    /// 82599 vector, and a TX CQ that cannot signal (TX interrupts off, or
    /// not armed; only `arm` arms it). `tx_done` then adds one to the
    /// outstanding completions and nothing else, and only `reap_tx` and
    /// `arm` read those.
    #[inline]
    pub fn tx_done_deferrable(&self) -> bool {
        self.eitr.is_none() && (!self.tx_irqs || !self.tx.armed)
    }

    /// Keep a TX completion with the event key it would have had (see
    /// `tx_done_deferrable`); `tx_catch_up` applies it in its turn.
    #[inline]
    pub fn tx_defer(&mut self, key: u128, bytes: u32) {
        self.tx_deferred.push_back((key, bytes));
    }

    /// Apply the deferred TX completions whose keys are below `key` (those
    /// due before the event being handled), as `tx_done` would have;
    /// returns how many.
    #[inline]
    pub fn tx_catch_up(&mut self, key: u128) -> u64 {
        let mut bytes = 0;
        let due = take_due(&mut self.tx_deferred, key, |b| bytes += b as u64);
        self.tx_outstanding += due as u32;
        self.tx_outstanding_bytes += bytes;
        due
    }

    /// An arrival need not be an event while it can only join the ring: no
    /// 82599 vector (nor its on-chip buffer), an RX CQ that cannot signal
    /// (not armed; only `arm` arms it), and room in the ring for it behind
    /// every arrival already on its way, so that no drop can happen (only
    /// the driver's `take` shortens the ring). The arrival then appends
    /// the packet and nothing else, and only the driver (`take`, `arm`,
    /// `rx_pending`) and `post` read the ring.
    #[inline]
    pub fn rx_deferrable(&self) -> bool {
        self.eitr.is_none()
            && !self.rx.armed
            && self.rx_in_flight == 0
            && self.ring.len() + self.rx_deferred.len() < self.capacity
    }

    /// Keep an arrival with the event key it would have had and its
    /// arrival time set (see `rx_deferrable`); `rx_catch_up` posts it in
    /// its turn.
    #[inline]
    pub fn rx_defer(&mut self, key: u128, pkt: RxPacket) {
        self.rx_deferred.push_back((key, pkt));
    }

    /// Post the deferred arrivals whose keys are below `key` (those due
    /// before the event being handled), as `post` would have; returns how
    /// many.
    #[inline]
    pub fn rx_catch_up(&mut self, key: u128) -> u64 {
        let (ring, capacity) = (&mut self.ring, self.capacity);
        take_due(&mut self.rx_deferred, key, |pkt| {
            debug_assert!(ring.len() < capacity, "a deferred arrival always has room");
            ring.push_back(pkt);
        })
    }

    /// Deferred TX completions and arrivals due before `key` (see
    /// `tx_catch_up`, `rx_catch_up`): how many.
    #[inline]
    pub fn catch_up(&mut self, key: u128) -> u64 {
        self.tx_catch_up(key) + self.rx_catch_up(key)
    }

    /// A transmitted packet completed (descriptor done). On an 82599 the
    /// driver sees it once the NIC writes it back (`EitrVector::
    /// tx_descriptor_done`: WTHRESH, or the interval's end).
    #[inline]
    pub fn tx_done(&mut self, now: Nanos, bytes: u32) -> Signal {
        if let Some(v) = self.eitr.as_mut() {
            match v.tx_descriptor_done(now, bytes) {
                TxWriteBack::Held(signal) => return signal,
                TxWriteBack::Now { descriptors, bytes } => self.written_back(descriptors, bytes),
            }
        } else {
            self.written_back(1, bytes as u64);
        }
        self.completion(now, Cq::Tx)
    }

    /// TX descriptors the driver can now reap.
    #[inline]
    fn written_back(&mut self, descriptors: u32, bytes: u64) {
        self.tx_outstanding += descriptors;
        self.tx_outstanding_bytes += bytes;
    }

    pub fn on_timer(&mut self, now: Nanos, cq: Cq, gen: u32) -> Signal {
        if let Some(v) = self.eitr.as_mut() {
            return match v.on_timer(now, gen) {
                IntervalEnd::Not(signal) => signal,
                IntervalEnd::Flushed { descriptors, bytes } => {
                    self.written_back(descriptors, bytes);
                    let pending = self.causes_pending();
                    self.eitr.as_ref().expect("82599 vector").expired(pending)
                }
            };
        }
        self.cq(cq).on_timer(now, gen)
    }

    /// `cq` signals the pair's interrupt; on an 82599 the signal may post
    /// the flush of TX descriptors held back at the new interval's end.
    pub fn fire(&mut self, now: Nanos, cq: Cq) -> Signal {
        self.irqs += 1;
        match self.eitr.as_mut() {
            Some(v) => v.fire(now),
            None => {
                self.cq(cq).fire();
                Signal::Nothing
            }
        }
    }

    /// The driver re-arms both CQs at the end of its poll (on an 82599,
    /// re-enables the vector).
    pub fn arm(&mut self, now: Nanos) -> [(Cq, Signal); 2] {
        if self.eitr.is_some() {
            let pending = self.causes_pending();
            let v = self.eitr.as_mut().expect("82599 vector");
            return [(Cq::Rx, v.enable(now, pending)), (Cq::Tx, Signal::Nothing)];
        }
        let rx_pending = self.ring.len() as u32;
        let rx = self.rx.arm(now, rx_pending);
        let tx = if self.tx_irqs { self.tx.arm(now, self.tx_outstanding) } else { Signal::Nothing };
        [(Cq::Rx, rx), (Cq::Tx, tx)]
    }

    /// Take up to `budget` packets (the driver's RX poll), counting them for
    /// DIM or the ITR policy; frames waiting in the on-chip buffer then
    /// take the freed descriptors.
    pub fn take(&mut self, budget: u32, out: &mut Vec<RxPacket>) {
        let n = (budget as usize).min(self.ring.len());
        let mut bytes = 0u64;
        for p in self.ring.drain(..n) {
            bytes += p.bytes as u64;
            out.push(p);
        }
        self.rx_packets += n as u64;
        self.rx_bytes += bytes;
        match self.eitr.as_mut() {
            Some(v) => v.count_rx(n as u32, bytes),
            None => self.rx.count(n as u32, bytes),
        }
        if self.buffer.as_ref().is_some_and(|b| !b.frames.is_empty()) {
            self.refill_from_buffer();
        }
    }

    /// Reap up to `max` TX completions (`mlx5e_poll_tx_cq`); returns how many.
    pub fn reap_tx(&mut self, max: u32) -> u32 {
        let n = self.tx_outstanding.min(max);
        self.tx_in_use -= n;
        if n > 0 {
            let bytes = self.tx_outstanding_bytes * n as u64 / self.tx_outstanding as u64;
            self.tx_outstanding -= n;
            self.tx_outstanding_bytes -= bytes;
            self.tx_packets += n as u64;
            self.tx_bytes += bytes;
            match self.eitr.as_mut() {
                Some(v) => v.count_tx(n, bytes),
                None => self.tx.count(n, bytes),
            }
        }
        n
    }

    /// TX completions signal interrupts (else the TX CQ's moderation, DIM
    /// included, has nothing to do).
    pub fn tx_irqs(&self) -> bool {
        self.tx_irqs
    }

    /// DIM samples for both CQs at re-arm time; on an 82599 the ITR
    /// policy's (`ixgbe_poll` → `ixgbe_set_itr`).
    pub fn dim_sample(&mut self, now: Nanos) {
        if let Some(v) = self.eitr.as_mut() {
            return v.sample(now);
        }
        self.rx.dim_sample(now);
        self.tx.dim_sample(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(t: Nanos) -> RxPacket {
        RxPacket { conn: 0, sent_ns: t, arrived_ns: t, bytes: 100, reply_bytes: 100 }
    }
    fn s(usecs: u32, frames: u32, irqs: bool) -> CqSettings {
        CqSettings { usecs, frames, cqe_mode: false, adaptive: false, irqs }
    }

    #[test]
    fn deferred_tx_completions_count_only_once_due_and_only_while_the_cq_cannot_signal() {
        let mut q = QueuePair::new(0, 8, 8, s(0, 0, true), s(0, 0, true));
        // Armed (as a new CQ is): a completion could signal, so it is an event.
        assert!(!q.tx_done_deferrable());
        q.tx.fire();
        assert!(q.tx_done_deferrable());
        q.tx_defer(10, 100);
        q.tx_defer(20, 50);
        q.tx_defer(30, 7);
        // Keys below the event being handled are due: applied in order.
        assert_eq!(q.tx_catch_up(10), 0);
        assert_eq!(q.tx_catch_up(21), 2);
        assert_eq!((q.tx_outstanding, q.tx_outstanding_bytes), (2, 150));
        assert_eq!(q.tx_deferred.len(), 1);
        // As tx_done would have counted them.
        let mut r = QueuePair::new(0, 8, 8, s(0, 0, true), s(0, 0, true));
        r.tx.fire();
        assert_eq!(r.tx_done(0, 100), Signal::Nothing);
        assert_eq!(r.tx_done(0, 50), Signal::Nothing);
        assert_eq!((r.tx_outstanding, r.tx_outstanding_bytes), (2, 150));
        // TX interrupts off: always deferrable; an 82599 vector: never.
        let off = QueuePair::new(0, 8, 8, s(0, 0, true), s(0, 0, false));
        assert!(off.tx_done_deferrable());
        use irqlab_policy::itr::StaticItr;
        let v = EitrVector::new(Box::new(StaticItr::new(0)));
        let mut e = QueuePair::new(0, 8, 8, s(0, 0, true), s(0, 0, false)).with_eitr(v, 0, RxBufferAccounting::Frame);
        e.tx.fire();
        assert!(!e.tx_done_deferrable());
    }

    #[test]
    fn deferred_arrivals_join_the_ring_in_key_order_and_never_overfill_it() {
        let mut q = QueuePair::new(0, 3, 8, s(0, 0, true), s(0, 0, true));
        // Armed: an arrival could signal, so it is an event.
        assert!(!q.rx_deferrable());
        q.rx.fire();
        assert!(q.rx_deferrable());
        // An arrival scheduled as an event is on its way: the ring's room
        // is not known, so no deferral until it is handled.
        q.rx_in_flight = 1;
        assert!(!q.rx_deferrable());
        q.rx_in_flight = 0;
        assert_eq!(q.post(pkt(1)), Post::Ring);
        q.rx_defer(10, pkt(2));
        assert!(q.rx_deferrable());
        q.rx_defer(20, pkt(3));
        // Ring 1 + deferred 2 = capacity 3: another could be dropped.
        assert!(!q.rx_deferrable());
        assert_eq!(q.rx_catch_up(15), 1);
        assert_eq!(q.rx_pending(), 2);
        assert_eq!(q.catch_up(u128::MAX), 1);
        let mut out = vec![];
        q.take(64, &mut out);
        assert_eq!(out.iter().map(|p| p.sent_ns).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert!(q.rx_deferrable());
    }

    #[test]
    fn full_ring_drops() {
        let mut q = QueuePair::new(0, 2, 8, s(0, 0, true), s(0, 0, true));
        assert!(q.post(pkt(0)) == Post::Ring && q.post(pkt(1)) == Post::Ring);
        assert_eq!(q.post(pkt(2)), Post::Dropped);
        assert_eq!(q.drops, 1);
        let mut out = vec![];
        q.take(64, &mut out);
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn a_full_ring_fills_the_on_chip_buffer_which_takes_freed_descriptors() {
        use irqlab_policy::itr::StaticItr;
        let v = EitrVector::new(Box::new(StaticItr::new(0)));
        // Room for two 100-byte frames (104 wire bytes each) beyond the ring.
        let mut q = QueuePair::new(0, 2, 8, s(0, 0, true), s(0, 0, true)).with_eitr(v, 208, RxBufferAccounting::Frame);
        for t in 0..2 {
            assert_eq!(q.post(pkt(t)), Post::Ring);
        }
        assert_eq!(q.post(pkt(2)), Post::Buffered);
        assert_eq!(q.post(pkt(3)), Post::Buffered);
        assert_eq!(q.post(pkt(4)), Post::Dropped);
        let mut out = vec![];
        q.take(1, &mut out);
        assert_eq!(out[0].sent_ns, 0);
        // The freed descriptor went to the oldest buffered frame.
        assert_eq!(q.ring.len(), 2);
        assert_eq!(q.ring[1].sent_ns, 2);
        assert_eq!(q.post(pkt(5)), Post::Buffered, "its buffer space is free again");
        assert_eq!(q.drops, 1);
    }

    #[test]
    fn the_fill_rate_charges_a_minimum_frame_121_bytes_of_the_buffer() {
        use irqlab_policy::itr::StaticItr;
        // 60 bytes, FCS 4, framing 20: 84 wire bytes x 36/25 = 120.96 -> 121.
        let v = EitrVector::new(Box::new(StaticItr::new(0)));
        let mut q = QueuePair::new(0, 1, 8, s(0, 0, true), s(0, 0, true)).with_eitr(v, 3 * 121, RxBufferAccounting::FillRate);
        let small = |t| RxPacket { bytes: 60, ..pkt(t) };
        assert_eq!(q.post(small(0)), Post::Ring);
        for t in 1..4 {
            assert_eq!(q.post(small(t)), Post::Buffered);
        }
        assert_eq!(q.post(small(4)), Post::Dropped, "three frames fill 363 bytes");
        let mut out = vec![];
        q.take(1, &mut out);
        assert_eq!(q.post(small(5)), Post::Buffered, "one frame's 121 bytes are free again");
        // A 1514-byte frame: (1514 + 4 + 20) x 36/25 = 2214.72 -> 2215.
        let b = q.buffer.as_ref().unwrap();
        assert_eq!(b.charge(1514), 2215);
    }

    #[test]
    fn tx_completions_signal_only_when_enabled_and_are_reaped() {
        let mut q = QueuePair::new(0, 8, 2, s(0, 0, true), s(0, 2, true));
        assert!(q.tx_post() && q.tx_post());
        assert!(!q.tx_post(), "the TX ring holds 2 descriptors");
        assert_eq!(q.tx_done(0, 100), Signal::Nothing);
        assert_eq!(q.tx_done(1, 100), Signal::FireNow);
        q.fire(1, Cq::Tx);
        assert_eq!(q.reap_tx(1), 1);
        assert_eq!(q.tx_outstanding, 1);
        assert!(q.tx_post(), "reaping freed a descriptor");
        // Re-arming with one completion outstanding starts a new period.
        let [(_, rx), (_, tx)] = q.arm(5);
        assert_eq!(rx, Signal::Nothing);
        assert_eq!(tx, Signal::Nothing, "one of two frames");
        let mut off = QueuePair::new(0, 8, 8, s(0, 0, true), s(0, 1, false));
        assert!(off.tx_post());
        assert_eq!(off.tx_done(0, 100), Signal::Nothing);
        assert_eq!(off.reap_tx(64), 1);
    }
}
