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
//! closed loop's next request leaves when its write ends.

use crate::model::devices::nic::events::NicEv;
use crate::model::devices::nic::RxPacket;
use crate::model::server::{Ev, Server};
use crate::engine::rng::kind;
use crate::engine::{Nanos, RngStreams, Scheduler, StreamRng};
use crate::error::Error;
use crate::scenario::{Config, OpenLoopBacklog, SizeCfg};
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
}

fn size_dist(c: SizeCfg) -> SizeDist {
    match c {
        SizeCfg::Etc => SizeDist::Etc,
        SizeCfg::Fixed { bytes } => SizeDist::Fixed(bytes),
    }
}

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
        self.busy_until_ns = now.max(self.busy_until_ns) + ns;
        self.busy_until_ns
    }

    /// The load-generator thread writes a request due at `now`: when the
    /// write ends, and what its latency is timed from (a closed loop's new
    /// request from the start of its write, as the load generator times it).
    #[cold]
    #[inline(never)]
    fn write(&mut self, now: Nanos, sent_ns: Nanos) -> (Nanos, Nanos) {
        let written = self.occupy(now, self.write_ns);
        (written, if self.closed && sent_ns == now { written - self.write_ns } else { sent_ns })
    }

    /// The load-generator thread reads a reply that arrived at `now`; when
    /// the read ends. A sleeping thread is woken on its idle core first
    /// (`wakeup_ns`).
    #[cold]
    #[inline(never)]
    fn read(&mut self, now: Nanos, wakeup_ns: Nanos) -> Nanos {
        let start = if self.asleep(now) { now + wakeup_ns } else { now };
        self.occupy(start, self.read_ns)
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

impl Server {
    #[inline]
    pub(crate) fn client_event(&mut self, sched: &mut Scheduler<Ev>, ev: ClientEv) {
        match ev {
            ClientEv::ReplyArrive { conn, sent_ns } => self.client_reply(sched, conn, sent_ns),
            ClientEv::OpenArrival => self.open_arrival(sched),
            ClientEv::Send { conn } => self.client_send(sched, conn),
            ClientEv::Retransmit { conn, sent_ns } => self.client_retransmit(sched, conn, sent_ns),
        }
    }

    /// The load-generator thread is modelled (`load.client_ns_per_request`).
    pub(crate) fn client_thread_modelled(&self) -> bool {
        self.clients.read_ns > 0
    }

    /// The load-generator thread sleeps at `now`: a reply must wake it.
    pub(crate) fn client_asleep(&self, now: Nanos) -> bool {
        self.clients.read_ns > 0 && self.clients.asleep(now)
    }

    /// The load-generator thread spends `cycles` more from `now` (a wake-up
    /// it sends to the server's CPU).
    pub(crate) fn client_spends(&mut self, now: Nanos, cycles: u64) {
        let ns = self.ns(cycles);
        self.clients.occupy(now, ns);
    }

    pub(crate) fn clients_start(&mut self, sched: &mut Scheduler<Ev>) {
        if self.clients.closed {
            // Stagger the first requests over 10 µs so they do not all land
            // in the same nanosecond.
            let n = self.clients.nconn;
            for conn in 0..n {
                for _ in 0..self.clients.depth {
                    let at = (conn as u64 * 10_000) / n as u64;
                    sched.at(at, Ev::Client(ClientEv::Send { conn }));
                }
            }
        } else {
            sched.at(0, Ev::Client(ClientEv::OpenArrival));
        }
    }

    /// A client sends a request on `conn` now.
    pub(crate) fn client_send(&mut self, sched: &mut Scheduler<Ev>, conn: u32) {
        let now = sched.now();
        self.client_send_as_of(sched, conn, now);
    }

    /// A client's TCP sends a dropped request again; latency still runs
    /// from the first send.
    pub(crate) fn client_retransmit(&mut self, sched: &mut Scheduler<Ev>, conn: u32, sent_ns: Nanos) {
        if self.measuring && sched.now() < self.end_ns {
            self.counters.retransmits += 1;
        }
        self.client_send_as_of(sched, conn, sent_ns);
    }

    fn client_send_as_of(&mut self, sched: &mut Scheduler<Ev>, conn: u32, sent_ns: Nanos) {
        let now = sched.now();
        if now >= self.end_ns {
            return;
        }
        let (written, sent_ns) =
            if self.clients.write_ns == 0 { (now, sent_ns) } else { self.clients.write(now, sent_ns) };
        let mut pkt = self.clients.request(conn, sent_ns);
        let queue = self.nic.rss_queue(conn);
        let at = written + self.clients.to_ring_ns;
        // An arrival that can only join the ring waits in the queue, in its
        // turn (QueuePair::rx_deferrable).
        let q = &mut self.nic.queues[queue as usize];
        if q.rx_deferrable() {
            pkt.arrived_ns = at;
            q.rx_defer(sched.reserve(at), pkt);
        } else {
            q.rx_in_flight += 1;
            sched.at_fifo(crate::model::server::lane::TO_SERVER, at, Ev::Nic(NicEv::PacketArrive { queue, pkt }));
        }
    }

    pub(crate) fn open_arrival(&mut self, sched: &mut Scheduler<Ev>) {
        let now = sched.now();
        let (gap, conn) = {
            let (ia, rng) = self.clients.arrivals.as_mut().expect("open loop");
            let gap = ia.sample_ns(rng);
            let conn = rng.gen_range(0..self.clients.nconn);
            (gap, conn)
        };
        let c = &mut self.clients;
        if !c.holds() || c.outstanding[conn as usize] < c.depth {
            if c.holds() {
                c.outstanding[conn as usize] += 1;
            }
            self.client_send(sched, conn);
        } else {
            // mutilate's WAITING_FOR_OPQ: sent when a reply frees a slot.
            c.held[conn as usize] += 1;
            if self.measuring && now < self.end_ns {
                self.counters.held_at_client += 1;
            }
        }
        let next = now.saturating_add(gap);
        if next < self.end_ns {
            sched.at(next, Ev::Client(ClientEv::OpenArrival));
        }
    }

    pub(crate) fn client_reply(&mut self, sched: &mut Scheduler<Ev>, conn: u32, sent_ns: Nanos) {
        let now = sched.now();
        let read = if self.clients.read_ns == 0 { now } else { self.clients.read(now, self.cfg.cpu.wakeup_latency_ns) };
        self.record_reply(read, sent_ns);
        let c = &mut self.clients;
        if c.closed {
            if c.think_ns == 0 {
                self.client_send(sched, conn);
            } else {
                sched.after(c.think_ns, Ev::Client(ClientEv::Send { conn }));
            }
        } else if c.holds() {
            // The slot goes to a held request at once (its time has come);
            // mutilate measures it from this send.
            if c.held[conn as usize] > 0 {
                c.held[conn as usize] -= 1;
                self.client_send(sched, conn);
            } else {
                c.outstanding[conn as usize] -= 1;
            }
        }
    }
}
