//! An epoll instance (`fs/eventpoll.c`): the ready list, the busy-poll
//! parameters set by `EPIOCSPARAMS`, and the NAPI id learned from sockets.
//! Delivery to sockets (`ep_poll_callback`) lives here too.

use crate::model::kernel::RxSink;
use crate::model::devices::nic::RxPacket;
use crate::model::kernel::host::Host;
use crate::model::kernel::Kernel;
use crate::model::trace::TraceEvent;
use crate::engine::{Nanos, Scheduler};
use crate::scenario::EpollCfg;
use std::collections::VecDeque;

/// `BUSY_POLL_BUDGET`: packets per busy-poll round when the budget is 0.
pub const BUSY_POLL_BUDGET: u32 = 8;

pub struct Epoll {
    /// Connections with unread requests, in readiness order (`rdllist`).
    pub ready: VecDeque<u32>,
    /// NAPI to busy poll (`ep->napi_id`); forgotten after a fruitless poll.
    pub napi_id: Option<u32>,
    pub busy_poll_usecs: u32,
    pub busy_poll_budget: u32,
    pub prefer_busy_poll: bool,
    pub blocking: bool,
    pub maxevents: u32,
    /// The batch the thread is serving: when `epoll_wait` last returned
    /// events (`ep_send_events`, where IRQ suspension begins), until its
    /// next `epoll_wait` reaches `ep_poll` (where suspension is renewed or
    /// ended). None between batches.
    pub batch_start_ns: Option<Nanos>,
    /// The batches served so far.
    pub batches: Batches,
}

/// An application's batches as the kernel's IRQ suspension sees them: the
/// time from `epoll_wait` returning events to the thread's next
/// `epoll_wait`, which `irq-suspend-timeout` "should be set large enough to
/// cover" (Documentation/networking/napi.rst, IRQ suspension; see
/// docs/notes/second-measurement-sources.md §2.5). What a policy reads
/// (`model/policy.rs`); the run's statistics do not depend on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Batches {
    /// Batches ended.
    pub count: u64,
    /// Their times summed, ns.
    pub total_ns: u64,
    /// The longest since [`Batches::take_longest`] last read it, ns.
    pub longest_ns: Nanos,
}

impl Batches {
    /// A batch of `ns` ended.
    pub fn record(&mut self, ns: Nanos) {
        self.count += 1;
        self.total_ns += ns;
        self.longest_ns = self.longest_ns.max(ns);
    }

    /// The longest batch since the last read (0: none), and start anew.
    pub fn take_longest(&mut self) -> Nanos {
        std::mem::take(&mut self.longest_ns)
    }
}

impl Epoll {
    pub fn new(c: &EpollCfg) -> Self {
        Epoll {
            ready: VecDeque::new(),
            napi_id: None,
            busy_poll_usecs: c.busy_poll_usecs,
            busy_poll_budget: if c.busy_poll_budget == 0 { BUSY_POLL_BUDGET } else { c.busy_poll_budget },
            prefer_busy_poll: c.prefer_busy_poll,
            blocking: c.blocking,
            maxevents: c.maxevents,
            batch_start_ns: None,
            batches: Batches::default(),
        }
    }

    /// `ep_busy_loop_on`: busy polling applies (the global sysctl is 0).
    pub fn busy_loop_on(&self) -> bool {
        self.busy_poll_usecs > 0 || self.prefer_busy_poll
    }

    /// `ep_send_events` returned events at `now`: a batch begins.
    pub fn batch_begins(&mut self, now: Nanos) {
        self.batch_start_ns = Some(now);
    }

    /// The thread's next `epoll_wait` reached `ep_poll` at `now`: the batch
    /// in progress, if any, ends.
    pub fn batch_ends(&mut self, now: Nanos) {
        if let Some(start) = self.batch_start_ns.take() {
            self.batches.record(now - start);
        }
    }
}

impl Kernel {
    /// Deliver polled packets to their sockets (TCP receive, then
    /// `ep_poll_callback`: queue the socket on the ready list, learn the
    /// NAPI id, wake the waiter).
    pub(crate) fn deliver<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, napi: u32, buf: &mut Vec<RxPacket>, busy_polled: bool) {
        match self.rx_sink {
            RxSink::Sockets => {}
            // A VirtIO host: the stack forwards to the guest's tap.
            RxSink::Bridge => return m.bridge_deliver(self, sched, buf),
            RxSink::Forward => return m.forward_deliver(self, sched, napi, buf),
            RxSink::Stream => return m.stream_deliver(self, sched, napi),
        }
        let now = sched.now();
        for p in buf.drain(..) {
            if m.run().counting {
                m.run().counters.packets_polled += 1;
                if busy_polled {
                    m.run().counters.packets_busy_polled += 1;
                }
                m.run().counters.ring_wait_ns += (now - p.arrived_ns) as u128;
            }
            let conn = &mut self.conns[p.conn as usize];
            if conn.rx_bytes + p.bytes as u64 > self.cfg.socket.rcvbuf_bytes {
                // tcp_data_queue: no receive-buffer room, the segment is
                // dropped after the protocol work was done.
                m.dropped(sched, crate::model::run::DropSite::Socket, p.conn, p.sent_ns);
                continue;
            }
            conn.rx_bytes += p.bytes as u64;
            conn.rx.push_back(p);
            let t = self.conn_thread[p.conn as usize];
            if !conn.on_ready {
                conn.on_ready = true;
                self.unchain_thread(sched, t);
                let ep = &mut self.epolls[t as usize];
                ep.ready.push_back(p.conn);
                if ep.busy_loop_on() {
                    // sk_mark_napi_id: the socket learns the NAPI that
                    // received it, and ep_poll_callback hands it to epoll.
                    ep.napi_id = Some(napi);
                }
                if self.threads[t as usize].is_sleeping() {
                    m.tr(now, TraceEvent::Wake { thread: t });
                    self.threads[t as usize].wake();
                    self.thread_make_runnable(m, sched, t);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_runs_from_the_events_returned_to_the_next_ep_poll() {
        let mut ep = Epoll::new(&EpollCfg::default());
        // An epoll_wait that reaches ep_poll with no batch in progress ends none.
        ep.batch_ends(5);
        assert_eq!(ep.batches, Batches::default());
        ep.batch_begins(100);
        ep.batch_ends(350);
        ep.batch_begins(400);
        ep.batch_ends(500);
        assert_eq!(ep.batches, Batches { count: 2, total_ns: 350, longest_ns: 250 });
        assert_eq!(ep.batches.take_longest(), 250);
        assert_eq!(ep.batches.take_longest(), 0, "the longest starts anew at each read");
        assert_eq!((ep.batches.count, ep.batches.total_ns), (2, 350), "the count and the sum go on");
    }
}
