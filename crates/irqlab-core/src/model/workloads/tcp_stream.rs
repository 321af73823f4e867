//! The senders of the bulk TCP streams (`app.kind = "bulk"`): one host
//! sending every stream over a link of `bulk.link_gbps`, each stream
//! limited by its congestion window and the receiver's window.
//!
//! What it keeps of TCP: segments of `bulk.mss_bytes` sent in bursts of up
//! to `bulk.tso_max_segments` (a TSO packet); the streams spread over
//! `bulk.sender_queues` TX queues (the sending threads' cores, XPS), each
//! queue sending its streams' bursts one after another, and the NIC
//! putting one frame of each queue with data on the link in turn (its
//! transmit scheduler arbitrates between queues frame by frame), so that
//! the receiver sees the active queues' frames interleaved; slow start from `bulk.initial_cwnd`, then one segment per
//! window per round trip (Reno's additive increase); on a loss the window
//! shrinks to `bulk.beta` of itself, at most once per smoothed round trip.
//!
//! What it simplifies, on purpose: the receiver ACKs each packet the
//! protocol processes (after GRO, so one ACK covers its segments) and the
//! ACK needs no cycles apart from `costs.tcp_skb_cycles` and no TX ring; a
//! loss is known one wire latency after the drop (the duplicate ACKs of the
//! segments behind it), and the lost data counts as sent again by sending
//! new data (the receiver model does not reorder, so goodput is the same);
//! the receive window is what the socket has free at the moment the sender
//! looks (its advertisement is one wire latency old in reality); CUBIC's
//! window growth is not modelled.

use crate::model::devices::nic::events::NicEv;
use crate::model::devices::nic::RxPacket;
use crate::model::devices::nic::events::NicEvents;
use crate::model::workloads::WorkloadCx;
use crate::engine::{Nanos, Scheduler};
use crate::scenario::bulk::FRAME_OVERHEAD_BYTES;

#[derive(Clone, Debug)]
pub struct Stream {
    /// Congestion window and slow-start threshold, segments.
    pub cwnd: f64,
    pub ssthresh: f64,
    /// Segments sent and neither acknowledged nor known lost.
    pub inflight: u32,
    /// No further window reduction before this time (one round trip).
    pub recover_until_ns: Nanos,
    pub srtt_ns: f64,
    /// The RX queue its flow hashes to.
    pub queue: u32,
}

/// One TX queue of the sender: the streams whose threads send through it
/// (XPS: stream i on queue i mod `bulk.sender_queues`) and the TSO burst
/// it is sending.
#[derive(Clone, Debug, Default)]
struct SenderQueue {
    streams: Vec<usize>,
    /// The stream whose turn comes next.
    next: usize,
    /// The burst being sent: its stream and the frames left.
    stream: usize,
    left: u32,
}

/// The sending host.
pub struct Senders {
    pub streams: Vec<Stream>,
    /// The sender's TX queues, each with its streams and current burst.
    queues: Vec<SenderQueue>,
    /// The queue whose frame leads the next round.
    next_queue: usize,
    /// A burst is on the wire (a `WireFree` event is pending).
    wire_busy: bool,
    /// Wire time of one frame, ns (payload, headers, preamble and gap).
    frame_ns: f64,
    mss: u32,
    tso_max: u32,
    rcvbuf: u64,
    beta: f64,
    /// The wire, and the wire plus the NIC's DMA, ns.
    wire_ns: Nanos,
    to_ring_ns: Nanos,
    /// Counters over the measured window.
    pub losses: u64,
    pub reductions: u64,
    pub frames_sent: u64,
}

/// The machine's events as the senders schedule them: their own, and the
/// NIC's for the frames they put on the wire.
pub trait TcpEvents: From<TcpEv> + NicEvents {}

impl<E: From<TcpEv> + NicEvents> TcpEvents for E {}

impl Senders {
    pub fn new(cfg: &crate::scenario::Config, queues: Vec<u32>) -> Senders {
        let b = &cfg.bulk;
        let wire_bytes = (b.mss_bytes + crate::scenario::bulk::WIRE_OVERHEAD_BYTES) as f64;
        let one_way = (cfg.nic.wire_latency_ns + cfg.nic.dma_latency_ns) as f64;
        Senders {
            streams: queues
                .into_iter()
                .map(|queue| Stream {
                    cwnd: b.initial_cwnd as f64,
                    ssthresh: f64::INFINITY,
                    inflight: 0,
                    recover_until_ns: 0,
                    srtt_ns: 2.0 * one_way,
                    queue,
                })
                .collect(),
            queues: (0..cfg.bulk.sender_queues.min(cfg.bulk_streams()) as usize)
                .map(|q| SenderQueue {
                    streams: (q..cfg.bulk_streams() as usize)
                        .step_by(cfg.bulk.sender_queues as usize)
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            next_queue: 0,
            wire_busy: false,
            frame_ns: wire_bytes * 8.0 / b.link_gbps,
            mss: b.mss_bytes,
            tso_max: b.tso_max_segments,
            rcvbuf: b.rcvbuf_bytes,
            beta: b.beta,
            wire_ns: cfg.nic.wire_latency_ns,
            to_ring_ns: cfg.nic.wire_latency_ns + cfg.nic.dma_latency_ns,
            losses: 0,
            reductions: 0,
            frames_sent: 0,
        }
    }

    /// Queue `q` starts a burst of the next of its streams with window;
    /// false if none has any (`unread`: what each stream's socket holds).
    fn start_burst(&mut self, q: usize, unread: &[u64]) -> bool {
        let n = self.queues[q].streams.len();
        for k in 0..n {
            let j = (self.queues[q].next + k) % n;
            let i = self.queues[q].streams[j];
            let burst = self.window(i, unread[i]).min(self.tso_max);
            if burst > 0 {
                self.streams[i].inflight += burst;
                let sq = &mut self.queues[q];
                sq.next = (j + 1) % n;
                sq.stream = i;
                sq.left = burst;
                return true;
            }
        }
        false
    }

    /// Segments stream `i` may send now, given `unread` bytes waiting in
    /// its socket.
    fn window(&self, i: usize, unread: u64) -> u32 {
        let s = &self.streams[i];
        let rwnd = (self.rcvbuf.saturating_sub(unread) / self.mss as u64) as f64;
        let w = s.cwnd.min(rwnd).floor() as i64 - s.inflight as i64;
        w.max(0) as u32
    }
}

/// The senders' events.
#[derive(Clone, Copy, Debug)]
pub enum TcpEv {
    /// The sender's link finished a burst.
    WireFree,
    /// An ACK of `segs` segments reaches the sender (0: a window update
    /// after a read).
    Ack { conn: u32, segs: u32, sent_ns: Nanos },
    /// The sender learns that `segs` segments were lost.
    Loss { conn: u32, segs: u32 },
}

impl Senders {
    /// `unread`: what each stream's socket at the receiver holds (its
    /// window).
    #[inline]
    pub fn on_event<E: TcpEvents>(&mut self, cx: &mut WorkloadCx<E>, unread: &[u64], ev: TcpEv) {
        match ev {
            TcpEv::WireFree => self.wire_send(cx, unread),
            TcpEv::Ack { conn, segs, sent_ns } => self.ack(cx, unread, conn, segs, sent_ns),
            TcpEv::Loss { conn, segs } => self.loss(cx, unread, conn, segs),
        }
    }

    /// Start the senders (at time 0, every stream has its initial window).
    pub(crate) fn start<E: TcpEvents>(&mut self, cx: &mut WorkloadCx<E>, unread: &[u64]) {
        self.wire_send(cx, unread);
    }

    /// The link is free: each sender queue with data puts one frame on
    /// it in turn (a round of at most `bulk.sender_queues` frames); a queue
    /// whose burst is done starts the next of its streams that has window.
    fn wire_send<E: TcpEvents>(&mut self, cx: &mut WorkloadCx<E>, unread: &[u64]) {
        let now = cx.sched.now();
        let nq = self.queues.len();
        let mut sent = 0u32;
        for k in 0..nq {
            let q = (self.next_queue + k) % nq;
            if self.queues[q].left == 0 && !self.start_burst(q, unread) {
                continue;
            }
            let sq = &mut self.queues[q];
            sq.left -= 1;
            let i = sq.stream;
            // The frame is in the NIC's ring once its last bit arrived and
            // its DMA completed.
            let sent_ns = now + (sent as f64 * self.frame_ns).round() as Nanos;
            let done = now + ((sent + 1) as f64 * self.frame_ns).round() as Nanos;
            let pkt = RxPacket {
                conn: i as u32,
                sent_ns,
                arrived_ns: 0,
                bytes: self.mss + FRAME_OVERHEAD_BYTES,
                reply_bytes: self.mss,
            };
            let queue = self.streams[i].queue;
            cx.nic.queues[queue as usize].rx_in_flight += 1;
            cx.sched.at(done + self.to_ring_ns, E::from(NicEv::PacketArrive { queue, pkt }));
            sent += 1;
        }
        if sent == 0 {
            self.wire_busy = false;
            return;
        }
        if cx.run.measuring {
            self.frames_sent += sent as u64;
        }
        self.next_queue = (self.next_queue + 1) % nq;
        self.wire_busy = true;
        cx.sched.at(now + (sent as f64 * self.frame_ns).round() as Nanos, E::from(TcpEv::WireFree));
    }

    /// Something opened a window: send if the link is idle.
    fn kick<E: TcpEvents>(&mut self, cx: &mut WorkloadCx<E>, unread: &[u64]) {
        if !self.wire_busy {
            self.wire_send(cx, unread);
        }
    }

    /// An ACK of `segs` segments of stream `conn` (0: a window update after
    /// a read), for a packet whose first segment was sent at `sent_ns`.
    fn ack<E: TcpEvents>(&mut self, cx: &mut WorkloadCx<E>, unread: &[u64], conn: u32, segs: u32, sent_ns: Nanos) {
        if segs > 0 {
            let now = cx.sched.now();
            let s = &mut self.streams[conn as usize];
            s.inflight = s.inflight.saturating_sub(segs);
            s.srtt_ns += ((now - sent_ns) as f64 - s.srtt_ns) / 8.0;
            if s.cwnd < s.ssthresh {
                s.cwnd += segs as f64;
            } else {
                s.cwnd += segs as f64 / s.cwnd;
            }
            // No point in a window the receiver can never grant.
            s.cwnd = s.cwnd.min((self.rcvbuf / self.mss as u64) as f64);
        }
        self.kick(cx, unread);
    }

    /// `segs` segments of stream `conn` were dropped in the receiver: the
    /// sender learns it one wire latency later.
    pub(crate) fn lost<E: From<TcpEv>>(&self, sched: &mut Scheduler<E>, conn: u32, segs: u32) {
        sched.at(sched.now() + self.wire_ns, E::from(TcpEv::Loss { conn, segs }));
    }

    /// The sender learns of a loss: the segments leave the flight, and the
    /// window shrinks once per round trip.
    fn loss<E: TcpEvents>(&mut self, cx: &mut WorkloadCx<E>, unread: &[u64], conn: u32, segs: u32) {
        let now = cx.sched.now();
        let beta = self.beta;
        let s = &mut self.streams[conn as usize];
        s.inflight = s.inflight.saturating_sub(segs);
        let reduce = now >= s.recover_until_ns;
        if reduce {
            s.ssthresh = (s.cwnd * beta).max(2.0);
            s.cwnd = s.ssthresh;
            s.recover_until_ns = now + s.srtt_ns as Nanos;
        }
        if cx.run.measuring {
            self.losses += segs as u64;
            self.reductions += reduce as u64;
        }
        self.kick(cx, unread);
    }
}
