//! Clients: closed loop (each connection keeps `depth` requests outstanding,
//! sending the next after a reply and an optional think time) for maximum
//! throughput, and open loop (arrival times drawn in advance from the
//! inter-arrival distribution, each on a connection drawn at random) for
//! latency at a rate. In the open loop a connection that has `depth`
//! requests outstanding holds the next at the client until a reply frees a
//! slot, as mutilate does (`load.open_loop_backlog = "client"`), or sends
//! it anyway (`"server"`). Latency runs from the client's send to the
//! reply's arrival at the client, wire and NIC time included. Request and
//! reply sizes follow mutilate's ETC generators (`fb_key`, `fb_value`).
//!
//! With `load.client_ns_per_request` the clients are one load-generator
//! thread on a core of its own that does one thing at a time: each request
//! costs it half that to write and half to read its reply, in the order
//! they come. A reply is then recorded when its read ends (the load
//! generator times from just before a write to just after the read), and a
//! closed loop's next request leaves when its write ends. The thread sleeps
//! when it has nothing to do, on a core that then idles: a reply that finds
//! it asleep wakes it across CPUs, which takes what `irqlab testbed probe`
//! measures for a wake-up of a thread on a halted CPU (`remote_wake_ns`, in
//! the model's terms `cpu.wakeup_latency_ns`, `costs.idle_exit_cycles` and a
//! wake-up and switch); an open-loop send that finds it asleep is made when
//! its timed wait ends, `load.client_timer_lag_ns` late (the probe's
//! `timer_wake_ns`). With `load.latency_from = "schedule"` a request is timed
//! from its scheduled arrival, as `irqlab-loadgen` times an open loop, so
//! both that lateness and a held request's wait for a slot are in its latency.
//! Its core is a vCPU like the server's: the host holds its wake-ups back
//! now and then (`cpu.host_halted_late_per_s`, `HostHold` in
//! `model/kernel/host_preempt.rs`), and a wake-up then takes the longer of
//! its usual time and that lateness; and the host takes it while it works
//! (`cpu.host_preempt_per_s`), which lengthens that work.

use crate::model::devices::nic::RxPacket;
use crate::model::kernel::host_preempt::HostHold;
use crate::model::workloads::WorkloadCx;
use crate::model::devices::nic::events::NicEvents;
use crate::engine::rng::kind;
use crate::engine::{Nanos, RngStreams, Scheduler, StreamRng};
use crate::error::Error;
use crate::scenario::{Config, LatencyFrom, OpenLoopBacklog, SizeCfg};
use std::collections::VecDeque;
use crate::workload::{InterArrival, SizeDist, SizeField};
use rand::Rng;

/// memcached text protocol overheads: `get <key>\r\n` and
/// `VALUE <key> <flags> <bytes>\r\n<data>\r\nEND\r\n`, plus TCP/IP/Ethernet
/// headers (66 bytes).
const GET_OVERHEAD_BYTES: u32 = 6 + 66;
const VALUE_OVERHEAD_BYTES: u32 = 6 + 3 + 8 + 4 + 2 + 5 + 66;

/// The clients' events.
#[derive(Clone, Copy, Debug)]
pub enum ClientEv {
    /// A reply reaches its client.
    ReplyArrive { conn: u32, sent_ns: Nanos },
    /// Open loop: the next request is due.
    OpenArrival,
    /// Closed loop: a connection sends its next request.
    Send { conn: u32 },
    /// Closed loop: a dropped request (or its dropped reply) is sent again
    /// by the client's TCP; latency keeps counting from `sent_ns`.
    Retransmit { conn: u32, sent_ns: Nanos },
}

pub struct Clients {
    closed: bool,
    /// Open loop: the arrival process and the stream picking connections.
    arrivals: Option<(InterArrival, StreamRng)>,
    sizes: StreamRng,
    key: SizeDist,
    value: SizeDist,
    nconn: u32,
    depth: u32,
    think_ns: Nanos,
    /// Client → NIC ring: wire plus DMA.
    to_ring_ns: Nanos,
    /// Open loop with the backlog at the client: per connection, requests
    /// outstanding and requests waiting for a slot (empty otherwise).
    outstanding: Vec<u32>,
    held: Vec<u32>,
    /// Forwarding: every packet is a frame of this many bytes (`load.frame_bytes`).
    frame_bytes: Option<u32>,
    /// The load-generator thread's CPU to write a request and to read a
    /// reply (0: not modelled), and when it is next free.
    write_ns: Nanos,
    read_ns: Nanos,
    busy_until_ns: Nanos,
    /// A reply reaches a sleeping load-generator thread this late: the IPI
    /// and the exit of its halted core (`cpu.wakeup_latency_ns`), the CPU
    /// that core pays to leave idle (`costs.idle_exit_cycles`), the wake-up
    /// and the switch, as a wake-up of a thread on another CPU in the probe.
    wakeup_ns: Nanos,
    /// An open-loop send due while the thread sleeps is written this late
    /// (`load.client_timer_lag_ns`).
    timer_lag_ns: Nanos,
    /// `load.latency_from = "schedule"`: per connection, the scheduled
    /// arrivals of the requests held for a slot, oldest first (empty
    /// otherwise).
    held_at: Vec<VecDeque<Nanos>>,
    /// `load.latency_from = "schedule"` in an open loop.
    from_schedule: bool,
    /// The host holding the thread's halted core back (None: never).
    halted_late: Option<Box<HostHold>>,
    /// The host taking the thread's core while it works (None: never).
    preempted: Option<Box<HostHold>>,
}

fn size_dist(c: SizeCfg) -> SizeDist {
    match c {
        SizeCfg::Etc => SizeDist::Etc,
        SizeCfg::Fixed { bytes } => SizeDist::Fixed(bytes),
    }
}

/// The machine's events as the clients schedule them: their own, and the
/// NIC's for the frames they put on the wire.
pub trait ClientEvents: From<ClientEv> + NicEvents {}

impl<E: From<ClientEv> + NicEvents> ClientEvents for E {}

impl Clients {
    pub fn new(cfg: &Config, streams: &RngStreams) -> Result<Self, Error> {
        let arrivals = match cfg.load.qps {
            None => None,
            Some(qps) => Some((
                InterArrival::new(cfg.load.interarrival, qps).map_err(|e| Error::field("load.qps", e))?,
                streams.stream(kind::CLIENT_ARRIVALS, 0),
            )),
        };
        // Depth bookkeeping only where requests are held at the client.
        let per_connection = if holds_at_client(cfg) { cfg.load.connections() as usize } else { 0 };
        Ok(Clients {
            closed: cfg.load.qps.is_none(),
            arrivals,
            sizes: streams.stream(kind::CLIENT_REQUESTS, 0),
            key: size_dist(cfg.load.key_size),
            value: size_dist(cfg.load.value_size),
            nconn: cfg.load.connections() as u32,
            depth: cfg.load.depth,
            think_ns: cfg.load.think_time_ns,
            to_ring_ns: {
                let (dma_extra, wire_extra) = crate::model::devices::nic::vf::extra_latency_ns(cfg);
                cfg.nic.wire_latency_ns + cfg.nic.dma_latency_ns + dma_extra + wire_extra
            },
            outstanding: vec![0; per_connection],
            held: vec![0; per_connection],
            frame_bytes: (cfg.app.kind == crate::scenario::AppKind::Forwarding).then_some(cfg.load.frame_bytes),
            write_ns: cfg.load.client_ns_per_request / 2,
            read_ns: cfg.load.client_ns_per_request - cfg.load.client_ns_per_request / 2,
            busy_until_ns: 0,
            wakeup_ns: if cfg.load.client_ns_per_request == 0 {
                cfg.cpu.wakeup_latency_ns
            } else {
                let clock = crate::engine::time::CycleClock::new(cfg.cpu.freq_ghz);
                cfg.cpu.wakeup_latency_ns
                    + clock.ns(cfg.costs.idle_exit_cycles + cfg.costs.wakeup_cycles + cfg.costs.context_switch_cycles)
            },
            timer_lag_ns: cfg.load.client_timer_lag_ns,
            held_at: if cfg.load.latency_from == LatencyFrom::Schedule {
                vec![VecDeque::new(); per_connection]
            } else {
                Vec::new()
            },
            from_schedule: cfg.load.qps.is_some() && cfg.load.latency_from == LatencyFrom::Schedule,
            halted_late: if cfg.load.client_ns_per_request == 0 {
                None
            } else {
                HostHold::halted(cfg, streams, kind::HOST_HALTED_LATE, u64::from(u32::MAX), 1)
            },
            preempted: if cfg.load.client_ns_per_request == 0 {
                None
            } else {
                HostHold::busy(cfg, streams, kind::HOST_PREEMPT, u64::from(u32::MAX), 1)
            },
        })
    }

    /// Open loop, backlog at the client: requests keep their connection's
    /// depth.
    fn holds(&self) -> bool {
        !self.outstanding.is_empty()
    }

    /// The load-generator thread does `ns` of work from `now` or when it is
    /// free, whichever is later; returns when the work ends.
    fn occupy(&mut self, now: Nanos, ns: Nanos) -> Nanos {
        let taken = match self.preempted.as_mut() {
            None => 0,
            Some(p) => p.late_ns(0, ns),
        };
        self.busy_until_ns = now.max(self.busy_until_ns) + ns + taken;
        self.busy_until_ns
    }

    /// The load-generator thread writes a request due at `now`: when the
    /// write ends, and what its latency is timed from: a new request (not
    /// a retransmission) from the start of its write, as a closed loop's
    /// load generator and mutilate time it, or, with `load.latency_from =
    /// "schedule"`, an open loop's from when it was due.
    #[cold]
    #[inline(never)]
    fn write(&mut self, now: Nanos, sent_ns: Nanos) -> (Nanos, Nanos) {
        // An open loop's send that finds the thread asleep waits for its
        // timed wait to end.
        let start = if !self.closed && self.asleep(now) { now + self.wake_ns(now, self.timer_lag_ns) } else { now };
        let written = self.occupy(start, self.write_ns);
        let from_write = sent_ns == now && !self.from_schedule;
        (written, if from_write { written - self.write_ns } else { sent_ns })
    }

    /// The load-generator thread reads a reply that arrived at `now`; when
    /// the read ends. A sleeping thread is woken on its idle core first
    /// (`wakeup_ns`).
    #[cold]
    #[inline(never)]
    fn read(&mut self, now: Nanos, wakeup_ns: Nanos) -> Nanos {
        let start = if self.asleep(now) { now + self.wake_ns(now, wakeup_ns) } else { now };
        self.occupy(start, self.read_ns)
    }

    /// How long the sleeping thread takes to wake at `now`: `usual_ns`, or
    /// longer where the host holds its halted core back.
    fn wake_ns(&mut self, now: Nanos, usual_ns: Nanos) -> Nanos {
        match self.halted_late.as_mut() {
            None => usual_ns,
            Some(hl) => usual_ns.max(hl.late_ns(0, now - self.busy_until_ns)),
        }
    }

    /// The load-generator thread sleeps (it has nothing to do at `now`).
    fn asleep(&self, now: Nanos) -> bool {
        self.busy_until_ns < now
    }

    /// Requests waiting at the client now, over all connections.
    pub(crate) fn held_backlog(&self) -> u64 {
        self.held.iter().map(|&h| u64::from(h)).sum()
    }

    fn request(&mut self, conn: u32, sent_ns: Nanos) -> RxPacket {
        if let Some(bytes) = self.frame_bytes {
            // A packet generator's frame, forwarded back as it is.
            return RxPacket { conn, sent_ns, arrived_ns: 0, bytes, reply_bytes: bytes };
        }
        let key = self.key.sample(SizeField::Key, &mut self.sizes);
        let value = self.value.sample(SizeField::Value, &mut self.sizes);
        RxPacket {
            conn,
            sent_ns,
            arrived_ns: 0,
            bytes: key + GET_OVERHEAD_BYTES,
            reply_bytes: key + value + VALUE_OVERHEAD_BYTES,
        }
    }
}

/// An open loop that holds requests at the client (mutilate).
pub(crate) fn holds_at_client(cfg: &Config) -> bool {
    cfg.load.qps.is_some() && cfg.load.open_loop_backlog == OpenLoopBacklog::Client
}

impl Clients {
    #[inline]
    pub fn on_event<E: ClientEvents>(&mut self, cx: &mut WorkloadCx<E>, ev: ClientEv) {
        match ev {
            ClientEv::ReplyArrive { conn, sent_ns } => self.reply(cx, conn, sent_ns),
            ClientEv::OpenArrival => self.open_arrival(cx),
            ClientEv::Send { conn } => self.send(cx, conn),
            ClientEv::Retransmit { conn, sent_ns } => self.retransmit(cx, conn, sent_ns),
        }
    }

    /// The load-generator thread is modelled (`load.client_ns_per_request`).
    pub(crate) fn thread_modelled(&self) -> bool {
        self.read_ns > 0
    }

    /// The load-generator thread sleeps at `now`: a reply must wake it.
    pub(crate) fn thread_asleep(&self, now: Nanos) -> bool {
        self.read_ns > 0 && self.asleep(now)
    }

    /// The load-generator thread spends `ns` more from `now` (a wake-up it
    /// sends to the server's CPU).
    pub(crate) fn spends(&mut self, now: Nanos, ns: Nanos) {
        self.occupy(now, ns);
    }

    pub(crate) fn start<E: ClientEvents>(&mut self, sched: &mut Scheduler<E>) {
        if self.closed {
            // Stagger the first requests over 10 µs so they do not all land
            // in the same nanosecond.
            let n = self.nconn;
            for conn in 0..n {
                for _ in 0..self.depth {
                    let at = (conn as u64 * 10_000) / n as u64;
                    sched.at(at, E::from(ClientEv::Send { conn }));
                }
            }
        } else {
            sched.at(0, E::from(ClientEv::OpenArrival));
        }
    }

    /// A client sends a request on `conn` now.
    fn send<E: ClientEvents>(&mut self, cx: &mut WorkloadCx<E>, conn: u32) {
        let now = cx.sched.now();
        self.send_as_of(cx, conn, now);
    }

    /// A client's TCP sends a dropped request again; latency still runs
    /// from the first send.
    fn retransmit<E: ClientEvents>(&mut self, cx: &mut WorkloadCx<E>, conn: u32, sent_ns: Nanos) {
        if cx.run.measuring && cx.sched.now() < cx.run.end_ns {
            cx.run.counters.retransmits += 1;
        }
        self.send_as_of(cx, conn, sent_ns);
    }

    /// A reply freed a slot on `conn` at `now` while a request was held
    /// there: it is sent, timed from its send (mutilate) or from when it was
    /// due (`load.latency_from = "schedule"`).
    #[cold]
    #[inline(never)]
    fn send_held<E: ClientEvents>(&mut self, cx: &mut WorkloadCx<E>, conn: u32, now: Nanos) {
        self.held[conn as usize] -= 1;
        let due = self.held_at.get_mut(conn as usize).and_then(VecDeque::pop_front).unwrap_or(now);
        self.send_as_of(cx, conn, due);
    }

    fn send_as_of<E: ClientEvents>(&mut self, cx: &mut WorkloadCx<E>, conn: u32, sent_ns: Nanos) {
        let now = cx.sched.now();
        if now >= cx.run.end_ns {
            return;
        }
        let (written, sent_ns) = if self.write_ns == 0 { (now, sent_ns) } else { self.write(now, sent_ns) };
        let pkt = self.request(conn, sent_ns);
        let queue = cx.nic.rss_queue(conn);
        cx.nic.frame_in(cx.sched, queue, written + self.to_ring_ns, pkt);
    }

    fn open_arrival<E: ClientEvents>(&mut self, cx: &mut WorkloadCx<E>) {
        let now = cx.sched.now();
        let (gap, conn) = {
            let (ia, rng) = self.arrivals.as_mut().expect("open loop");
            let gap = ia.sample_ns(rng);
            let conn = rng.gen_range(0..self.nconn);
            (gap, conn)
        };
        if !self.holds() || self.outstanding[conn as usize] < self.depth {
            if self.holds() {
                self.outstanding[conn as usize] += 1;
            }
            self.send(cx, conn);
        } else {
            // mutilate's WAITING_FOR_OPQ: sent when a reply frees a slot.
            self.held[conn as usize] += 1;
            if let Some(q) = self.held_at.get_mut(conn as usize) {
                q.push_back(now);
            }
            if cx.run.measuring && now < cx.run.end_ns {
                cx.run.counters.held_at_client += 1;
            }
        }
        let next = now.saturating_add(gap);
        if next < cx.run.end_ns {
            cx.sched.at(next, E::from(ClientEv::OpenArrival));
        }
    }

    fn reply<E: ClientEvents>(&mut self, cx: &mut WorkloadCx<E>, conn: u32, sent_ns: Nanos) {
        let now = cx.sched.now();
        let read = if self.read_ns == 0 { now } else { self.read(now, self.wakeup_ns) };
        cx.run.record_reply(read, sent_ns);
        if self.closed {
            if self.think_ns == 0 {
                self.send(cx, conn);
            } else {
                cx.sched.after(self.think_ns, E::from(ClientEv::Send { conn }));
            }
        } else if self.holds() {
            // The slot goes to a held request at once (its time has come);
            // mutilate measures it from this send, irqlab-loadgen from its
            // schedule.
            if self.held[conn as usize] > 0 {
                self.send_held(cx, conn, now);
            } else {
                self.outstanding[conn as usize] -= 1;
            }
        }
    }
}
