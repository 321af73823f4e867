//! The memcached-like event-loop thread and `epoll_wait` as Linux runs it
//! (`ep_poll`, thesis Figure 3.1): return ready events at once (and, with
//! prefer_busy_poll, suspend IRQs for `irq_suspend_timeout`); otherwise busy
//! poll the epoll instance's NAPI if busy polling is on; if that finds
//! nothing, resume IRQs and sleep (blocking) or return 0 (non-blocking).
//! Each ready connection is then read, its requests processed (user time)
//! and answered (sendmsg).

use crate::model::kernel::cpu::{CpuClass, Owner, Running, ThreadId, ThreadSeg};
use crate::model::kernel::Device;
use crate::model::devices::nic::RxPacket;
use crate::model::kernel::sched::Seg;
use crate::model::kernel::host::Host;
use crate::model::kernel::Kernel;
use crate::model::trace::{TimerReason, TraceEvent};
use crate::engine::{Nanos, Scheduler};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// About to enter `epoll_wait`.
    Start,
    /// In the syscall entry segment.
    InEpollEntry,
    /// `ep_poll`'s loop head: decide what to do.
    EpCheck,
    /// Copying `n` events to user space (`ep_send_events`).
    InSendEvents(u32),
    /// Next ready connection to serve.
    NextConn,
    /// Reading a connection.
    InRecv(u32),
    /// Next request read from the connection.
    NextReq,
    /// Processing a request in user space.
    InService,
    /// The reply is built: `sendmsg` next.
    SendReady,
    /// Sending its reply.
    InSend,
    /// The busy loop goes on: `cpu_relax` spin before the next poll.
    BusySpin { owned: bool },
    /// In the spin.
    InBusySpin { owned: bool },
    /// Next busy-poll iteration (bottom halves were enabled in between).
    BusyNext { owned: bool },
    /// The busy loop ended while owning the NAPI: `busy_poll_stop` next.
    BusyStopReady,
    /// A busy-poll iteration (napi owned or not).
    InBusyIter { owned: bool },
    /// The final poll of `busy_poll_stop`.
    InBusyStop { skip_schedule: bool },
    /// Blocked in `epoll_wait` (or, a workload's thread, in its own wait).
    Sleeping,
    /// A thread of a workload with a loop of its own (bulk TCP's readers,
    /// Iometer, OLTP, background threads): runnable, its next step is the
    /// workload's to choose (`Host::workload_next`), from its own phase.
    Workload,
    /// In a step the workload chose (`Host::workload_step_done` when it ends).
    InWorkload,
    /// The reply was sent to a peer that receives on this CPU
    /// (`costs.peer_rx_cycles`): its receive softirq runs next, at the
    /// `local_bh_enable` of `__dev_queue_xmit`.
    PeerRx,
    /// In the peer's receive.
    InPeerRx,
}

pub struct AppThread {
    pub id: ThreadId,
    pub core: u32,
    pub phase: Phase,
    pub events: VecDeque<u32>,
    pub reqs: VecDeque<RxPacket>,
    pub cur: Option<RxPacket>,
    /// Packets taken by the busy poll in progress.
    pub polled: Vec<RxPacket>,
    pub busy_start_ns: Nanos,
    pub busy_napi: u32,
    /// A bulk reader: when its turn on a shared core began.
    pub slice_start_ns: Option<Nanos>,
    /// When it last started running (`se.exec_start`): the load balancer
    /// leaves a thread that ran in the last `sysctl_sched_migration_cost`
    /// where its cache is (`task_hot`).
    pub exec_start_ns: Nanos,
    /// As a waker (`record_wakee`): a softirq that interrupts this thread
    /// wakes on its behalf.
    pub flips: irqlab_policy::sched::Flips,
}

impl AppThread {
    pub fn new(id: ThreadId, core: u32) -> Self {
        AppThread {
            id,
            core,
            phase: Phase::Start,
            events: VecDeque::new(),
            reqs: VecDeque::new(),
            cur: None,
            polled: Vec::with_capacity(64),
            busy_start_ns: 0,
            busy_napi: 0,
            slice_start_ns: None,
            exec_start_ns: 0,
            flips: Default::default(),
        }
    }
    pub fn is_sleeping(&self) -> bool {
        self.phase == Phase::Sleeping
    }
    /// Woken by `ep_poll_callback`: `ep_poll` re-checks its ready list.
    pub fn wake(&mut self) {
        self.phase = Phase::EpCheck;
    }
}

impl Kernel {
    /// The peer's receive softirq after a reply (`Phase::PeerRx`). Waking a
    /// load generator that sleeps on its core costs the IPI here
    /// (`sock_def_readable` → `try_to_wake_up`).
    #[cold]
    #[inline(never)]
    fn peer_rx<H: Host>(&mut self, m: &mut H, now: Nanos, t: ThreadId) -> Seg {
        self.threads[t as usize].phase = Phase::InPeerRx;
        if m.run().counting {
            m.run().counters.softirq_rounds += 1;
        }
        let wake = if m.peer_asleep(now) { self.cfg.costs.remote_wake_cycles } else { 0 };
        let ns = self.ns(self.cfg.costs.peer_rx_cycles + wake);
        Seg { class: CpuClass::Softirq, ns, bh_disabled: true }
    }
}

fn sys(ns: Nanos) -> Seg {
    Seg { class: CpuClass::System, ns, bh_disabled: false }
}

impl Kernel {
    /// The thread's next segment, or None when it blocks.
    pub(crate) fn thread_next<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, t: ThreadId) -> Option<Seg> {
        loop {
            let th = &mut self.threads[t as usize];
            match th.phase {
                Phase::Start => return Some(self.epoll_entry(t)),
                Phase::EpCheck => {
                    if let Some(seg) = self.ep_poll_step(m, sched, t) {
                        return Some(seg);
                    }
                    if self.threads[t as usize].phase == Phase::Sleeping {
                        return None;
                    }
                }
                Phase::NextConn => match th.events.pop_front() {
                    None => th.phase = Phase::Start,
                    Some(conn) => return Some(self.recv_start(t, conn)),
                },
                Phase::NextReq => return Some(self.next_request(t)),
                Phase::SendReady => return Some(self.send_start(t)),
                Phase::PeerRx => return Some(self.peer_rx(m, sched.now(), t)),
                Phase::BusySpin { owned } => {
                    th.phase = Phase::InBusySpin { owned };
                    return Some(sys(self.ns(self.cfg.costs.busy_poll_iteration_cycles)));
                }
                Phase::BusyNext { owned } => {
                    let napi = th.busy_napi;
                    let prefer = self.epolls[t as usize].prefer_busy_poll;
                    let owned = owned || self.napis[napi as usize].busy_poll_acquire(prefer);
                    return Some(self.busy_iteration(m, sched.current_key(), t, owned));
                }
                Phase::BusyStopReady => return Some(self.busy_poll_stop(m, sched, t)),
                Phase::Sleeping => return None,
                Phase::Workload => return m.workload_next(self, sched, t),
                // In-segment phases never ask for a next segment.
                _ => unreachable!("thread_next in phase {:?}", th.phase),
            }
        }
    }

    /// memcached reads connection `conn` (`Phase::NextConn` with a ready
    /// connection): its `try_read_network`, one `read` that takes every
    /// request the socket holds. A request that arrives during it makes the
    /// socket ready again.
    #[inline(always)]
    fn recv_start(&mut self, t: ThreadId, conn: u32) -> Seg {
        let th = &mut self.threads[t as usize];
        let c = &mut self.conns[conn as usize];
        c.on_ready = false;
        c.rx_bytes = 0;
        let n = c.rx.len() as u64;
        c.rx.move_into(&mut th.reqs);
        th.phase = Phase::InRecv(conn);
        sys(self.ns(self.cfg.costs.recv_cycles + self.cfg.costs.recv_cycles_per_request * n))
    }

    /// `sendmsg` ended (`Phase::InSend`): the reply leaves; the peer's
    /// receive runs next on this CPU if it is modelled, else the next
    /// request.
    #[inline(always)]
    fn reply_sent<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, t: ThreadId) {
        let p = self.threads[t as usize].cur.take().expect("request being sent");
        self.threads[t as usize].phase =
            if self.cfg.costs.peer_rx_cycles > 0 { Phase::PeerRx } else { Phase::NextReq };
        let queue = self.conns[p.conn as usize].tx_queue;
        match self.device {
            Device::Nic => m.transmit(self, sched, queue, p.conn, p.sent_ns, p.reply_bytes),
            Device::Virtio => {
                let core = self.threads[t as usize].core;
                m.virtio_transmit(self, sched, core, queue, p.conn, p.sent_ns, p.reply_bytes)
            }
        }
    }

    /// `Phase::NextReq`: the next request read, else the next ready
    /// connection, else `epoll_wait` again.
    #[inline(always)]
    fn next_request(&mut self, t: ThreadId) -> Seg {
        let th = &mut self.threads[t as usize];
        if let Some(p) = th.reqs.pop_front() {
            self.service_start(t, p)
        } else if let Some(conn) = th.events.pop_front() {
            self.recv_start(t, conn)
        } else {
            self.epoll_entry(t)
        }
    }

    /// `Phase::Start`: enter `epoll_wait`.
    #[inline(always)]
    fn epoll_entry(&mut self, t: ThreadId) -> Seg {
        self.threads[t as usize].phase = Phase::InEpollEntry;
        sys(self.ns(self.cfg.costs.epoll_wait_cycles))
    }

    /// memcached processes request `p` (`Phase::NextReq` with a request).
    #[inline(always)]
    fn service_start(&mut self, t: ThreadId, p: RxPacket) -> Seg {
        let th = &mut self.threads[t as usize];
        th.cur = Some(p);
        th.phase = Phase::InService;
        let base = self.service[t as usize].cycles();
        let cycles = base + self.cfg.app.service_cycles_per_64b * (p.reply_bytes as u64 / 64);
        Seg { class: CpuClass::User, ns: self.ns(cycles), bh_disabled: false }
    }

    /// memcached sends the reply it built (`Phase::SendReady`).
    #[inline(always)]
    fn send_start(&mut self, t: ThreadId) -> Seg {
        let th = &mut self.threads[t as usize];
        let p = th.cur.expect("request in service");
        th.phase = Phase::InSend;
        if self.cores.len() >= crate::engine::queue::HINT_MIN_OWNERS {
            // When this segment ends the reply reads its connection, and
            // the next read the next one: at hundreds of cores both lines
            // left the cache since (a hint; engine/prefetch.rs).
            crate::engine::prefetch::at(&self.conns, p.conn as usize);
            if let Some(&next) = th.events.front() {
                crate::engine::prefetch::at(&self.conns, next as usize);
            }
        }
        let cycles = self.cfg.costs.send_cycles + self.cfg.costs.send_cycles_per_64b * (p.reply_bytes as u64 / 64);
        sys(self.ns(cycles))
    }

    /// The three steps that make most of a busy server's segment ends,
    /// when nothing else wants the core: a read ends and the service of the
    /// request it read starts; a service ends and its `sendmsg` starts; a
    /// `sendmsg` ends, the reply leaves, and the next request's service,
    /// the next connection's read or the next `epoll_wait` starts. Does
    /// exactly what `core_segment_done` → `thread_step_done` → `kick` →
    /// `thread_next` does then, without looking at everything those look
    /// at; returns false, having changed nothing, in every other case.
    #[inline(always)]
    pub(crate) fn thread_step_fast<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32) -> bool {
        let c = &self.cores[core as usize];
        let Some(Running { owner: Owner::Thread(t, ThreadSeg::Step), .. }) = c.running else {
            return false;
        };
        if !c.runs_only_thread(t) || t >= self.vcpu_base {
            return false;
        }
        let th = &mut self.threads[t as usize];
        let seg = match th.phase {
            // InRecv → NextReq, which takes the next request.
            Phase::InRecv(_) => match th.reqs.pop_front() {
                Some(p) => self.service_start(t, p),
                None => return false,
            },
            // InService → SendReady.
            Phase::InService => self.send_start(t),
            // InSend → NextReq (no peer receive on this CPU), a NIC.
            Phase::InSend if self.cfg.costs.peer_rx_cycles == 0 && self.device == Device::Nic => {
                self.cores[core as usize].running = None;
                self.reply_sent(m, sched, t);
                self.next_request(t)
            }
            _ => return false,
        };
        self.cores[core as usize].running = None;
        self.start_segment(sched, core, Owner::Thread(t, ThreadSeg::Step), seg);
        true
    }

    /// One pass of `ep_poll`'s loop; returns a segment to run, or None after
    /// setting the phase (Sleeping, or Start for a non-blocking return).
    fn ep_poll_step<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, t: ThreadId) -> Option<Seg> {
        let k = &self.cfg.costs;
        let ep = &self.epolls[t as usize];
        if !ep.ready.is_empty() {
            let n = (ep.ready.len() as u32).min(ep.maxevents);
            self.threads[t as usize].phase = Phase::InSendEvents(n);
            return Some(sys(self.ns(k.epoll_event_cycles * n as u64)));
        }
        if let (Some(napi), true) = (ep.napi_id, ep.busy_loop_on()) {
            // ep_busy_loop → napi_busy_loop: first iteration.
            let th = &mut self.threads[t as usize];
            th.busy_start_ns = sched.now();
            th.busy_napi = napi;
            let prefer = ep.prefer_busy_poll;
            let owned = self.napis[napi as usize].busy_poll_acquire(prefer);
            return Some(self.busy_iteration(m, sched.current_key(), t, owned));
        }
        // Nothing to poll: sleep, or return 0 at once when non-blocking.
        let th = &mut self.threads[t as usize];
        if ep.blocking {
            th.phase = Phase::Sleeping;
            m.tr(sched.now(), TraceEvent::Sleep { thread: t });
        } else {
            th.phase = Phase::Start;
        }
        None
    }

    /// A busy-poll iteration of `__napi_busy_loop`: the driver poll with the
    /// epoll budget if the thread owns the NAPI (nothing if it does not).
    /// Runs with bottom halves disabled; the loop's own cost is the spin
    /// that follows when the loop goes on.
    fn busy_iteration<H: Host>(&mut self, m: &mut H, key: u128, t: ThreadId, owned: bool) -> Seg {
        let napi = self.threads[t as usize].busy_napi;
        let budget = self.epolls[t as usize].busy_poll_budget;
        let mut cycles = 0;
        if owned {
            let mut buf = std::mem::take(&mut self.threads[t as usize].polled);
            let (_, c) = self.driver_poll_take(m, key, napi, budget, &mut buf);
            self.threads[t as usize].polled = buf;
            cycles += c;
        }
        self.threads[t as usize].phase = Phase::InBusyIter { owned };
        Seg { class: CpuClass::System, ns: self.ns(cycles), bh_disabled: true }
    }

    /// Effects of the thread's completed step.
    pub(crate) fn thread_step_done<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, t: ThreadId) {
        let now = sched.now();
        let phase = self.threads[t as usize].phase;
        match phase {
            Phase::InEpollEntry => {
                self.threads[t as usize].phase = Phase::EpCheck;
                self.epolls[t as usize].batch_ends(now);
            }
            Phase::InSendEvents(n) => {
                let ep = &mut self.epolls[t as usize];
                let th = &mut self.threads[t as usize];
                for _ in 0..n {
                    match ep.ready.pop_front() {
                        Some(c) => th.events.push_back(c),
                        None => break,
                    }
                }
                th.phase = Phase::NextConn;
                if !th.events.is_empty() {
                    ep.batch_begins(now);
                }
                // napi_suspend_irqs (thesis Fig. 3.1 line 6).
                if ep.prefer_busy_poll && !th.events.is_empty() {
                    if let Some(napi) = ep.napi_id {
                        m.tr(now, TraceEvent::SuspendIrqs { napi });
                        if let Some(d) = self.napis[napi as usize].suspend_irqs() {
                            let core = self.threads[t as usize].core;
                            self.napi_timer_start(m, sched, napi, core, d, TimerReason::Suspend);
                        }
                    }
                }
            }
            Phase::InRecv(_) => self.threads[t as usize].phase = Phase::NextReq,
            Phase::InService => self.threads[t as usize].phase = Phase::SendReady,
            Phase::InPeerRx => self.threads[t as usize].phase = Phase::NextReq,
            Phase::InSend => self.reply_sent(m, sched, t),
            Phase::InBusyIter { owned } => {
                let mut buf = std::mem::take(&mut self.threads[t as usize].polled);
                let napi = self.threads[t as usize].busy_napi;
                if owned {
                    m.tr(now, TraceEvent::Poll { napi, packets: buf.len() as u32, busy: true });
                    self.driver_poll_done(m, sched, napi);
                }
                self.deliver(m, sched, napi, &mut buf, true);
                self.threads[t as usize].polled = buf;
                let ep = &self.epolls[t as usize];
                let elapsed = now - self.threads[t as usize].busy_start_ns;
                let loop_end = !ep.ready.is_empty() || elapsed >= ep.busy_poll_usecs as Nanos * 1_000;
                if !loop_end {
                    self.threads[t as usize].phase = Phase::BusySpin { owned };
                    return;
                }
                if owned {
                    self.threads[t as usize].phase = Phase::BusyStopReady;
                    return;
                }
                self.busy_loop_finished(m, sched, t);
            }
            Phase::InBusySpin { owned } => self.threads[t as usize].phase = Phase::BusyNext { owned },
            Phase::InWorkload => m.workload_step_done(self, sched, t),
            Phase::InBusyStop { skip_schedule } => {
                let mut buf = std::mem::take(&mut self.threads[t as usize].polled);
                let rc = buf.len() as u32;
                let napi = self.threads[t as usize].busy_napi;
                m.tr(now, TraceEvent::Poll { napi, packets: rc, busy: true });
                self.driver_poll_done(m, sched, napi);
                self.deliver(m, sched, napi, &mut buf, true);
                self.threads[t as usize].polled = buf;
                let napi = self.threads[t as usize].busy_napi;
                let core = self.threads[t as usize].core;
                let budget = self.epolls[t as usize].busy_poll_budget;
                if rc < budget {
                    self.driver_complete(m, sched, core, napi, rc);
                } else if self.napis[napi as usize].busy_poll_stop_full(skip_schedule) {
                    self.napi_enqueue(core, napi);
                }
                self.busy_loop_finished(m, sched, t);
            }
            other => unreachable!("step done in phase {other:?}"),
        }
    }

    /// `busy_poll_stop`: leave busy-poll mode, with prefer_busy_poll reload
    /// the deferral count and arm the watchdog, then poll once more.
    fn busy_poll_stop<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, t: ThreadId) -> Seg {
        let napi = self.threads[t as usize].busy_napi;
        let prefer = self.epolls[t as usize].prefer_busy_poll;
        let (skip, timer) = self.napis[napi as usize].busy_poll_stop(prefer);
        let core = self.threads[t as usize].core;
        if let Some(d) = timer {
            self.napi_timer_start(m, sched, napi, core, d, TimerReason::BusyPollStop);
        }
        let budget = self.epolls[t as usize].busy_poll_budget;
        let mut buf = std::mem::take(&mut self.threads[t as usize].polled);
        let (_, c) = self.driver_poll_take(m, sched.current_key(), napi, budget, &mut buf);
        self.threads[t as usize].polled = buf;
        self.threads[t as usize].phase = Phase::InBusyStop { skip_schedule: skip };
        Seg { class: CpuClass::System, ns: self.ns(c), bh_disabled: true }
    }

    /// Back in `ep_busy_loop` after the busy loop: events → send them;
    /// nothing → `napi_resume_irqs` (prefer_busy_poll), forget the NAPI id,
    /// then sleep or return 0.
    fn busy_loop_finished<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, t: ThreadId) {
        let _ = sched;
        if !self.epolls[t as usize].ready.is_empty() {
            self.threads[t as usize].phase = Phase::EpCheck;
            return;
        }
        let napi = self.threads[t as usize].busy_napi;
        if self.epolls[t as usize].prefer_busy_poll {
            let scheduled = self.napis[napi as usize].resume_irqs();
            m.tr(sched.now(), TraceEvent::ResumeIrqs { napi, scheduled });
            if scheduled {
                let core = self.threads[t as usize].core;
                self.napi_enqueue(core, napi);
            }
        }
        let ep = &mut self.epolls[t as usize];
        ep.napi_id = None;
        if ep.blocking {
            self.threads[t as usize].phase = Phase::Sleeping;
            m.tr(sched.now(), TraceEvent::Sleep { thread: t });
        } else {
            self.threads[t as usize].phase = Phase::Start;
        }
    }
}
