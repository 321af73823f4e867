//! The bulk TCP receiver (`app.kind = "bulk"`, the IAPS paper's iperf3
//! load): frames of long-lived streams reach the NIC's queues by RSS; the
//! core that polls a queue merges them with GRO and either runs the
//! protocol itself (no software steering: RSS) or hands each merged packet
//! to a core chosen by RPS, RFS or IAPS through its backlog
//! (`model/kernel/backlog.rs`); the protocol queues the data on the stream's
//! socket, ACKs it and wakes the stream's reading thread (iperf3's), which
//! copies it out in large reads. The senders are `model/workloads/tcp_stream.rs`.
//!
//! Placement: stream i's flow has a Toeplitz hash of its addresses and a
//! source port drawn from the run's seed (iperf3's client ports are
//! ephemeral), which picks its queue through the default indirection table
//! and its RPS core through `rps_cpus`. With `cpu.task_placement =
//! "pinned"` the streams' threads are spread round-robin over the cores
//! that take no queue's interrupts (cores 1-7 when one queue interrupts
//! core 0), or over every core when each takes a queue's (RSS), and never
//! move; with "fair" the fair class places and balances them
//! (`model/kernel/fair.rs`).
//!
//! Streams into SR-IOV guests (`vm.count` VMs, `model/devices/nic/vf.rs`): stream i
//! belongs to VM i mod `vm.count`, whose virtual function's queues its flow
//! hashes over (the VF's own RSS), and whose kernel runs its socket's
//! protocol and its reader, thread i / `vm.count` there. What a stream's
//! socket holds unread is kept here by stream, where the sender (another
//! host, outside every kernel) reads the window it may use.

use crate::model::workloads::tcp_stream::TcpEv;
use crate::model::kernel::cpu::{CpuClass, ThreadId};
use crate::model::kernel::KernelId;
use crate::model::kernel::gro::{GroTable, Skb};
use crate::model::kernel::sched::Seg;
use crate::model::kernel::{Device, Kernel};
use crate::model::kernel::host::Host;
use crate::model::kernel::steering::{Steering, SteeringCounters};
use crate::model::workloads::tcp_stream::Senders;
use crate::engine::rng::kind;
use crate::engine::{Nanos, RngStreams, Scheduler};
use crate::model::devices::nic::split_page::SplitPageRing;
use crate::scenario::{Config, RxBufferReuse, SteeringScheme, TaskPlacement};
use crate::stats::summary::{BulkReport, IapsShares, SteeringReport};
use irqlab_policy::steering::rss::{tcp4_hash, RssTable, DEFAULT_KEY};
use rand::Rng;

/// The bulk receiver's state beside the kernel's.
pub struct Bulk {
    pub senders: Senders,
    /// Per stream: where its reader is in its loop (the kernel sees
    /// `Phase::Workload`, `InWorkload` or `Sleeping`).
    pub readers: Vec<ReaderPhase>,
    /// Per stream: its flow hash (`skb->hash`, the NIC's RSS hash).
    pub hash: Vec<u32>,
    /// Per NIC queue (its driver's NAPI): what GRO holds, and what the poll
    /// in progress flushed to the stack.
    pub gro: Vec<GroTable>,
    pub ready: Vec<Vec<Skb>>,
    pub steering: Option<Steering>,
    pub scheme: SteeringScheme,
    /// The frames a poll takes before GRO merges them.
    frames: Vec<crate::model::devices::nic::RxPacket>,
    /// Largest merge, segments.
    gro_max_segs: u32,
    /// Per stream: bytes its socket holds that its reader has not read.
    pub unread: Vec<u64>,
    /// The VMs the streams are spread over (1 on bare metal) and the
    /// kernel of the first (stream i's kernel is `first_kernel + i % vms`).
    vms: u32,
    first_kernel: KernelId,
    /// Counters over the measured window.
    pub bytes_read: u64,
    /// Of those, per VM (SR-IOV guests).
    pub vm_bytes_read: Vec<u64>,
    pub frames_merged: u64,
    pub skbs_merged: u64,
    pub socket_drops: u64,
    /// Per core, the ns readers ran.
    pub reader_ns: Vec<u64>,
    /// Per NIC queue, its split-page buffers (`nic.rx_buffer_reuse =
    /// "split-page"`; empty otherwise).
    pages: Vec<SplitPageRing>,
    /// Per stream: payload bytes its frames brought to the driver, and the
    /// byte up to which the stack has freed them (read, or dropped after
    /// the driver: a drop frees its bytes as if the earlier ones were read
    /// too, an error of at most the dropped bytes).
    rx_bytes: Vec<u64>,
    freed_bytes: Vec<u64>,
    /// Over the measured window: frames the driver polled, and the pages
    /// it allocated for their descriptors.
    pub rx_frames: u64,
    pub rx_page_allocs: u64,
}

/// The server's address and iperf3's port, and the client's address, in
/// the benchmarking range (RFC 2544).
const SERVER_ADDR: [u8; 4] = [198, 18, 0, 1];
const CLIENT_ADDR: [u8; 4] = [198, 18, 0, 2];
const IPERF3_PORT: u16 = 5201;
/// Entries of the NIC's RSS indirection table (mlx5's and ice's default 128
/// and up; `ethtool_rxfh_indir_default` spreads the queues over them).
const RSS_TABLE_ENTRIES: u32 = 128;

/// The cores iperf3's threads run on, for `cores` cores of which the first
/// `queues` take a queue's interrupts.
pub fn reader_cores(cores: u32, queues: u32) -> Vec<u32> {
    if queues < cores {
        (queues..cores).collect()
    } else {
        (0..cores).collect()
    }
}

impl Bulk {
    /// The streams of `cfg` into the kernels from `first_kernel` on, one per
    /// VM, over `queues` NIC queues (`nic.queues` per VM).
    pub fn new(cfg: &Config, streams: &RngStreams, first_kernel: KernelId, queues: u32) -> Bulk {
        let n = cfg.bulk_streams();
        let vms = cfg.vm.count;
        // Distinct ephemeral ports (32768-60999, `ip_local_port_range`).
        let mut rng = streams.stream(kind::RSS, 1);
        let mut ports: Vec<u16> = Vec::with_capacity(n as usize);
        while ports.len() < n as usize {
            let p = rng.gen_range(32_768u16..=60_999);
            if !ports.contains(&p) {
                ports.push(p);
            }
        }
        let hash: Vec<u32> = ports
            .iter()
            .map(|&sport| tcp4_hash(&DEFAULT_KEY, CLIENT_ADDR, SERVER_ADDR, sport, IPERF3_PORT))
            .collect();
        let table =
            RssTable::spread(RSS_TABLE_ENTRIES, cfg.queues()).expect("validated queue count");
        // Each VM's VF spreads its streams over its own queues.
        let per_vm = cfg.queues();
        let stream_queue =
            hash.iter().enumerate().map(|(i, &h)| (i as u32 % vms) * per_vm + table.queue(h)).collect();
        Bulk {
            senders: Senders::new(cfg, stream_queue),
            readers: vec![ReaderPhase::ReadCheck; n as usize],
            hash,
            gro: vec![GroTable::default(); queues as usize],
            ready: vec![Vec::with_capacity(64); queues as usize],
            steering: Steering::new(cfg),
            scheme: cfg.steering.scheme,
            frames: Vec::with_capacity(64),
            gro_max_segs: (cfg.bulk.gro_max_bytes / cfg.bulk.mss_bytes).max(1),
            unread: vec![0; n as usize],
            vms,
            first_kernel,
            bytes_read: 0,
            vm_bytes_read: vec![0; vms as usize],
            frames_merged: 0,
            skbs_merged: 0,
            socket_drops: 0,
            reader_ns: vec![0; cfg.cpu.app_cores as usize],
            pages: match cfg.nic.rx_buffer_reuse {
                RxBufferReuse::Always => Vec::new(),
                RxBufferReuse::SplitPage => (0..queues).map(|_| SplitPageRing::new(cfg.nic.rx_ring_size)).collect(),
            },
            rx_bytes: vec![0; n as usize],
            freed_bytes: vec![0; n as usize],
            rx_frames: 0,
            rx_page_allocs: 0,
        }
    }

    /// The stack dropped `skb` after the driver: its frames are freed.
    pub fn dropped(&mut self, skb: &Skb) {
        self.freed_bytes[skb.conn as usize] += skb.bytes as u64;
    }

    /// The stream whose reader is thread `t` of kernel `k`.
    #[inline]
    pub fn stream_of(&self, k: KernelId, t: ThreadId) -> usize {
        (t * self.vms) as usize + (k - self.first_kernel)
    }

    /// The streams VM `vm` receives (its readers' count).
    pub fn streams_into(cfg: &Config, vm: u32) -> u32 {
        let (n, vms) = (cfg.bulk_streams(), cfg.vm.count);
        (n + vms - 1 - vm) / vms
    }

    /// Forget the counters (end of warm-up).
    pub fn reset_counters(&mut self) {
        self.bytes_read = 0;
        self.vm_bytes_read.iter_mut().for_each(|b| *b = 0);
        self.frames_merged = 0;
        self.skbs_merged = 0;
        self.socket_drops = 0;
        self.reader_ns.iter_mut().for_each(|n| *n = 0);
        self.rx_frames = 0;
        self.rx_page_allocs = 0;
        self.senders.losses = 0;
        self.senders.reductions = 0;
        self.senders.frames_sent = 0;
        if let Some(s) = self.steering.as_mut() {
            let since_start = s.counters.ipis_since_start;
            s.counters = SteeringCounters { ipis_since_start: since_start, ..Default::default() };
        }
    }
}

impl Bulk {
    /// What the streams did (`Summary::bulk`).
    pub(crate) fn report(&self, k: &mut Kernel, now: Nanos, dur_s: f64) -> BulkReport {
        let core_busy_pct = k
            .cores
            .iter_mut()
            .map(|c| {
                let a = c.accounted(now);
                let total: Nanos = a.iter().sum();
                let idle = a[CpuClass::Idle as usize];
                if total > 0 {
                    100.0 * (total - idle) as f64 / total as f64
                } else {
                    0.0
                }
            })
            .collect();
        let b = self;
        let ratio = |a: u64, d: u64| if d > 0 { a as f64 / d as f64 } else { 0.0 };
        let s = &b.senders;
        let mean_cwnd = s.streams.iter().map(|x| x.cwnd).sum::<f64>() / s.streams.len() as f64;
        let gbps = |bytes: u64| bytes as f64 * 8.0 / dur_s / 1e9;
        BulkReport {
            streams: s.streams.len() as u32,
            throughput_gbps: gbps(b.bytes_read),
            vm_gbps: (b.vms > 1).then(|| b.vm_bytes_read.iter().map(|&x| gbps(x)).collect()),
            frames_per_gro_packet: ratio(b.frames_merged, b.skbs_merged),
            losses: s.losses,
            window_reductions: s.reductions,
            socket_drops: b.socket_drops,
            mean_cwnd_segments: mean_cwnd,
            core_busy_pct,
            reader_migrations_per_s: k.migrations as f64 / dur_s,
            reader_core_pct: {
                let total: u64 = b.reader_ns.iter().sum();
                b.reader_ns.iter().map(|&n| if total > 0 { 100.0 * n as f64 / total as f64 } else { 0.0 }).collect()
            },
            rx_page_alloc_pct: (!b.pages.is_empty()).then(|| 100.0 * ratio(b.rx_page_allocs, b.rx_frames)),
        }
    }

    /// What software steering did (`Summary::steering`).
    pub(crate) fn steering_report(&self, dur_s: f64) -> Option<SteeringReport> {
        let b = Some(self).filter(|b| b.scheme != SteeringScheme::None)?;
        let scheme = serde_json::to_value(b.scheme)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        let Some(st) = b.steering.as_ref() else {
            return Some(SteeringReport {
                scheme,
                ..Default::default()
            });
        };
        let c = &st.counters;
        let per = |x: u64| x as f64 / dur_s;
        let pct = |a: u64, d: u64| {
            if d > 0 {
                100.0 * a as f64 / d as f64
            } else {
                0.0
            }
        };
        let decisions: u64 = c.iaps_cases.iter().sum();
        Some(SteeringReport {
            scheme,
            ipis_per_s: per(c.ipis),
            packets_per_ipi: if c.ipis > 0 {
                c.steered as f64 / c.ipis as f64
            } else {
                0.0
            },
            steered_per_s: per(c.steered),
            remote_pct: pct(c.steered_remote, c.steered),
            backlog_drops: c.backlog_drops,
            iaps: st.iaps.as_ref().map(|_| IapsShares {
                previous_busy_pct: pct(c.iaps_cases[0], decisions),
                new_busy_pct: pct(c.iaps_cases[1], decisions),
                no_busy_pct: pct(c.iaps_cases[2], decisions),
            }),
        })
    }
}

/// Where iperf3's reader of a stream is in its loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReaderPhase {
    /// About to `read` its socket.
    ReadCheck,
    /// Copying this many bytes out of its socket.
    InRead(u32),
}

/// What bulk TCP's code (the driver's poll with GRO, the protocol, the
/// readers) asks of the machine beyond a kernel's `Host`: the workload's
/// state, and its senders' events. The machine implements it once
/// (`model/machine.rs`).
pub trait BulkHost: Host<Ev: From<TcpEv>> {
    /// The workload's state.
    fn bulk(&mut self) -> &mut Bulk;
}

/// The driver's poll of `napi` on `core` at `now`: take up to `budget`
/// frames, merge them with GRO and flush what the poll flushes; returns
/// (frames, cycles). The stack's work on the flushed packets is in the
/// poll's cycles: the protocol (no software steering) or the steering.
pub(crate) fn stream_poll_take<M: BulkHost>(m: &mut M, k: &mut Kernel, now: Nanos, napi: u32, budget: u32) -> (u32, u64) {
    let qi = k.napi_queue[napi as usize] as usize;
    let mut frames = std::mem::take(&mut m.bulk().frames);
    frames.clear();
    m.queue(Device::Nic, qi as u32).take(budget, &mut frames);
    let n = frames.len() as u32;
    let measuring = m.run().measuring;
    // The run's counters count from the start when a policy watches.
    let counting = m.run().counting;
    let hz = k.cfg.napi.hz;
    let b = m.bulk();
    let (gro, ready) = (&mut b.gro[qi], &mut b.ready[qi]);
    ready.clear();
    for p in &frames {
        gro.receive(
            p.conn,
            b.hash[p.conn as usize],
            p.reply_bytes,
            p.sent_ns,
            p.arrived_ns,
            now,
            b.gro_max_segs,
            ready,
        );
    }
    // napi_complete_done flushes all; a poll that used its weight only
    // what is from an earlier jiffy, or all when HZ < 1000.
    gro.flush(now, n < budget || hz < 1000, ready);
    let skbs = ready.len() as u64;
    // The put loop at the end of the poll: which descriptors' pages stay.
    let mut allocs = 0u64;
    if let Some(ring) = b.pages.get_mut(qi) {
        for p in &frames {
            let s = p.conn as usize;
            b.rx_bytes[s] += p.reply_bytes as u64;
            let freed = &b.freed_bytes;
            if !ring.put(p.conn, b.rx_bytes[s], |s| freed[s as usize]) {
                allocs += 1;
            }
        }
    }
    if measuring {
        b.rx_frames += n as u64;
        b.rx_page_allocs += allocs;
        b.skbs_merged += skbs;
    }
    if counting {
        m.run().counters.packets_polled += n as u64;
        for p in &frames {
            m.run().counters.ring_wait_ns += (now - p.arrived_ns) as u128;
        }
    }
    frames.clear();
    m.bulk().frames = frames;
    let costs = &k.cfg.costs;
    let mut cycles = costs.napi_poll_cycles
        + n as u64 * costs.rx_frame_cycles
        + skbs * costs.gro_skb_cycles
        + allocs * costs.rx_page_alloc_cycles;
    let b = m.bulk();
    if b.scheme.is_software() {
        cycles += skbs * costs.steer_skb_cycles;
    } else {
        cycles += tcp_rx_cycles(k, &b.ready[qi]);
    }
    (n, cycles)
}

/// The protocol's cycles for `skbs`, with the wake-ups of the sleeping
/// readers they reach.
pub(crate) fn tcp_rx_cycles(k: &Kernel, skbs: &[Skb]) -> u64 {
    skbs.len() as u64 * k.cfg.costs.tcp_skb_cycles + k.wakeup_cycles_for(skbs.iter().map(|s| s.conn))
}

/// The poll's segment ended: the flushed packets go to the protocol
/// here, or to their cores' backlogs.
pub(crate) fn stream_deliver<M: BulkHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, napi: u32) {
    let queue = k.napi_queue[napi as usize];
    let b = m.bulk();
    let mut ready = std::mem::take(&mut b.ready[queue as usize]);
    // Software steering (bare metal only) hands packets on from the
    // core that polled.
    let core = match m.irq_route(queue) {
        crate::model::devices::nic::IrqRoute::Host { core } => core,
        crate::model::devices::nic::IrqRoute::Vfio { guest_core, .. } => guest_core,
    };
    let measuring = m.run().measuring;
    for skb in ready.drain(..) {
        let b = m.bulk();
        if measuring {
            b.frames_merged += skb.segs as u64;
        }
        match b.steering.as_mut() {
            Some(st) => {
                let (target, flow) = st.target(b.hash[skb.conn as usize], measuring);
                k.enqueue_to_backlog(m, sched, core, target, skb, flow);
            }
            None => tcp_rcv(m, k, sched, core, skb),
        }
    }
    m.bulk().ready[queue as usize] = ready;
}

/// `tcp_v4_rcv` of a packet whose protocol work just ended on `core`: its
/// data joins the socket, its ACK leaves, a sleeping reader wakes (where
/// the scheduler puts it, with `cpu.task_placement = "fair"`).
pub(crate) fn tcp_rcv<M: BulkHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, core: u32, skb: Skb) {
    let now = sched.now();
    let rcvbuf = k.cfg.bulk.rcvbuf_bytes;
    let measuring = m.run().measuring;
    let unread = &mut m.bulk().unread[skb.conn as usize];
    if *unread + skb.bytes as u64 > rcvbuf {
        if measuring {
            m.bulk().socket_drops += 1;
            m.run().counters.drops.socket += 1;
        }
        return m.stream_lost(sched, &skb);
    }
    *unread += skb.bytes as u64;
    // The stream's reader, in this (the polling) kernel.
    let t = k.conn_thread[skb.conn as usize];
    if m.run().measuring {
        m.run().latency.record(now - skb.sent_ns);
    }
    sched.at(
        now + k.cfg.nic.wire_latency_ns,
        M::Ev::from(TcpEv::Ack {
            conn: skb.conn,
            segs: skb.segs,
            sent_ns: skb.sent_ns,
        }),
    );
    if k.threads[t as usize].is_sleeping() {
        m.tr(now, crate::model::trace::TraceEvent::Wake { thread: t });
        k.threads[t as usize].phase = crate::model::kernel::app::Phase::Workload;
        let b = m.bulk();
        let stream = b.stream_of(k.id, t);
        b.readers[stream] = ReaderPhase::ReadCheck;
        if k.cfg.cpu.task_placement == TaskPlacement::Fair {
            k.select_task_rq(t, core, now);
            k.fair_runnable(t, now, true);
        }
        k.thread_make_runnable(m, sched, t);
    }
}

/// iperf3's reading thread `t` (stream t): a blocking `read` of up to
/// `bulk.read_bytes`, or sleep when the socket is empty. Threads that
/// share a core take turns of `cpu.sched_base_slice_ns`.
pub(crate) fn reader_next<M: BulkHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, t: ThreadId) -> Option<Seg> {
    let now = sched.now();
    let b = m.bulk();
    let unread = b.unread[b.stream_of(k.id, t)];
    let slice = k.cfg.cpu.sched_base_slice_ns;
    let th = &mut k.threads[t as usize];
    if unread == 0 {
        th.phase = crate::model::kernel::app::Phase::Sleeping;
        th.slice_start_ns = None;
        m.tr(now, crate::model::trace::TraceEvent::Sleep { thread: t });
        k.fair_runnable(t, now, false);
        return None;
    }
    match th.slice_start_ns {
        None => th.slice_start_ns = Some(now),
        Some(start)
            if now - start >= slice
                && !k.cores[th.core as usize].runqueue.is_empty() =>
        {
            // Its turn is over: to the back of the run queue.
            th.slice_start_ns = None;
            let core = th.core as usize;
            k.cores[core].runqueue.push_back(t);
            return None;
        }
        Some(_) => {}
    }
    let bytes = unread.min(k.cfg.bulk.read_bytes as u64) as u32;
    th.phase = crate::model::kernel::app::Phase::InWorkload;
    let b = m.bulk();
    let stream = b.stream_of(k.id, t);
    b.readers[stream] = ReaderPhase::InRead(bytes);
    let costs = &k.cfg.costs;
    let cycles = costs.recv_cycles + costs.copy_cycles_per_kib * bytes as u64 / 1024;
    let ns = k.ns(cycles);
    k.threads[t as usize].exec_start_ns = now;
    if m.run().measuring {
        let core = k.threads[t as usize].core as usize;
        if let Some(n) = m.bulk().reader_ns.get_mut(core) {
            *n += ns;
        }
    }
    Some(Seg {
        class: CpuClass::System,
        ns,
        bh_disabled: false,
    })
}

/// The read of `bytes` ended: the socket has room again (the window
/// update reaches the sender one wire latency later) and RFS learns
/// where the flow is read (`sock_rps_record_flow`).
pub(crate) fn reader_done<M: BulkHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, t: ThreadId, bytes: u32) {
    let now = sched.now();
    let core = k.threads[t as usize].core;
    k.threads[t as usize].phase = crate::model::kernel::app::Phase::Workload;
    let measuring = m.run().measuring;
    let b = m.bulk();
    let stream = b.stream_of(k.id, t);
    b.readers[stream] = ReaderPhase::ReadCheck;
    b.unread[stream] -= bytes as u64;
    b.freed_bytes[stream] += bytes as u64;
    if measuring {
        b.bytes_read += bytes as u64;
        b.vm_bytes_read[stream % b.vms as usize] += bytes as u64;
    }
    let hash = b.hash[stream];
    if let Some(st) = b.steering.as_mut() {
        st.rfs.record(hash, core);
    }
    sched.at(
        now + k.cfg.nic.wire_latency_ns,
        M::Ev::from(TcpEv::Ack {
            conn: stream as u32,
            segs: 0,
            sent_ns: now,
        }),
    );
}

