//! The NIC's receive side: bounded RX rings and per-queue interrupt
//! moderation with ethtool semantics, optionally driven by net DIM.
//!
//! Moderation follows mlx5's completion-queue moderation (the thesis's
//! ConnectX-4 Lx): once the driver arms the queue, the first completion starts
//! the moderation period; the interrupt fires when `rx-frames` completions are
//! pending or `rx-usecs` have passed. In CQE mode (`cqe-mode-rx on`) every
//! completion restarts the period; in EQE mode it runs from the first. A
//! bound of 0 is no bound; both 0 means an interrupt per completion. Firing
//! disarms the queue until NAPI re-arms it (`napi_complete_done` returning
//! true, then the driver's `mlx5e_cq_arm`).

use crate::dim::dim::DimSample;
use crate::dim::net_dim::{DimCqPeriodMode, NetDim};
use crate::engine::timer::{LazyTimer, TimerFire, TimerPost};
use crate::engine::Nanos;
use std::collections::VecDeque;

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

/// What the NIC wants done after a packet arrived or the queue was re-armed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModerationAction {
    Nothing,
    /// Raise the queue's interrupt now.
    FireNow,
    /// Post a moderation-timer event at this time with this generation.
    PostTimer(Nanos, u32),
}

pub struct RxQueue {
    pub id: u32,
    pub ring: VecDeque<RxPacket>,
    pub capacity: usize,
    /// Core the queue's MSI-X vector is routed to.
    pub irq_core: u32,
    /// The driver armed the completion queue (the interrupt may fire).
    pub armed: bool,
    /// Completions since the moderation period started.
    pending: u32,
    /// The moderation period's timer.
    timer: LazyTimer,
    pub usecs: u32,
    pub frames: u32,
    cqe_mode: bool,
    pub dim: Option<NetDim>,
    // DIM counters (wrapping, as the driver's): packets, bytes, IRQs.
    pub dim_pkts: u32,
    pub dim_bytes: u64,
    pub dim_events: u16,
    // Statistics.
    pub drops: u64,
    pub irqs: u64,
}

impl RxQueue {
    pub fn new(id: u32, capacity: usize, irq_core: u32, usecs: u32, frames: u32, cqe_mode: bool, adaptive: bool) -> Self {
        let dim = adaptive.then(|| {
            NetDim::new(if cqe_mode { DimCqPeriodMode::StartFromCqe } else { DimCqPeriodMode::StartFromEqe })
        });
        let (usecs, frames) = match &dim {
            Some(d) => {
                let m = d.current_moderation();
                (m.usec as u32, m.pkts as u32)
            }
            None => (usecs, frames),
        };
        RxQueue {
            id,
            ring: VecDeque::with_capacity(capacity.min(1 << 16)),
            capacity,
            irq_core,
            armed: true,
            pending: 0,
            timer: LazyTimer::default(),
            usecs,
            frames,
            cqe_mode,
            dim,
            dim_pkts: 0,
            dim_bytes: 0,
            dim_events: 0,
            drops: 0,
            irqs: 0,
        }
    }

    /// A packet's DMA completed. Returns false if the ring was full (drop).
    pub fn post(&mut self, pkt: RxPacket) -> bool {
        if self.ring.len() >= self.capacity {
            self.drops += 1;
            return false;
        }
        self.ring.push_back(pkt);
        true
    }

    /// Moderation after `n` new completions at `now`.
    pub fn on_completions(&mut self, now: Nanos, n: u32) -> ModerationAction {
        if !self.armed || n == 0 {
            return ModerationAction::Nothing;
        }
        self.pending += n;
        if (self.frames <= 1 && self.usecs == 0) || (self.frames > 0 && self.pending >= self.frames) {
            return ModerationAction::FireNow;
        }
        if self.usecs == 0 {
            return ModerationAction::Nothing; // frame bound only
        }
        if self.cqe_mode || !self.timer.is_armed() {
            if let TimerPost::At(at, gen) = self.timer.start(now + self.usecs as Nanos * 1_000) {
                return ModerationAction::PostTimer(at, gen);
            }
        }
        ModerationAction::Nothing
    }

    /// A moderation-timer event arrived: fire, re-post, or ignore.
    pub fn on_timer(&mut self, now: Nanos, gen: u32) -> ModerationAction {
        match self.timer.on_event(now, gen) {
            TimerFire::Ignore => ModerationAction::Nothing,
            TimerFire::Repost(at, gen) => ModerationAction::PostTimer(at, gen),
            TimerFire::Expire if self.armed && self.pending > 0 => ModerationAction::FireNow,
            TimerFire::Expire => ModerationAction::Nothing,
        }
    }

    /// The interrupt fires: disarm until NAPI re-arms.
    pub fn fire(&mut self) {
        self.armed = false;
        self.pending = 0;
        self.timer.cancel();
        self.irqs += 1;
        self.dim_events = self.dim_events.wrapping_add(1);
    }

    /// The driver re-arms the queue (`napi_complete_done` returned true).
    /// Completions already in the ring count as new events.
    pub fn arm(&mut self, now: Nanos) -> ModerationAction {
        if self.armed {
            return ModerationAction::Nothing;
        }
        self.armed = true;
        self.pending = 0;
        self.timer.cancel();
        let n = self.ring.len() as u32;
        self.on_completions(now, n)
    }

    /// Take up to `budget` packets (the driver's poll), counting them for DIM.
    pub fn take(&mut self, budget: u32, out: &mut Vec<RxPacket>) {
        let n = (budget as usize).min(self.ring.len());
        for p in self.ring.drain(..n) {
            self.dim_pkts = self.dim_pkts.wrapping_add(1);
            self.dim_bytes = self.dim_bytes.wrapping_add(p.bytes as u64);
            out.push(p);
        }
    }

    /// Feed DIM a sample, as `mlx5e_napi_poll` does when it re-arms the
    /// queue; apply a new moderation at once (the driver's work item).
    pub fn dim_sample(&mut self, now: Nanos) {
        if let Some(d) = self.dim.as_mut() {
            let s = DimSample { time_ns: now, pkt_ctr: self.dim_pkts, byte_ctr: self.dim_bytes, event_ctr: self.dim_events };
            if let Some(m) = d.on_sample(s) {
                self.usecs = m.usec as u32;
                self.frames = m.pkts as u32;
                d.work_done();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(t: Nanos) -> RxPacket {
        RxPacket { conn: 0, sent_ns: t, arrived_ns: t, bytes: 100, reply_bytes: 100 }
    }

    #[test]
    fn frame_bound_fires_at_the_nth_completion() {
        let mut q = RxQueue::new(0, 16, 0, 0, 3, false, false);
        assert_eq!(q.on_completions(0, 1), ModerationAction::Nothing);
        assert_eq!(q.on_completions(1, 1), ModerationAction::Nothing);
        assert_eq!(q.on_completions(2, 1), ModerationAction::FireNow);
    }

    #[test]
    fn eqe_timer_runs_from_the_first_completion_cqe_restarts() {
        let mut q = RxQueue::new(0, 16, 0, 8, 0, false, false);
        assert_eq!(q.on_completions(100, 1), ModerationAction::PostTimer(8_100, 1));
        assert_eq!(q.on_completions(200, 1), ModerationAction::Nothing);
        assert_eq!(q.on_timer(8_100, 1), ModerationAction::FireNow);
        let mut c = RxQueue::new(0, 16, 0, 8, 0, true, false);
        assert_eq!(c.on_completions(100, 1), ModerationAction::PostTimer(8_100, 1));
        // CQE mode: the period restarts; the posted event is re-posted.
        assert_eq!(c.on_completions(200, 1), ModerationAction::Nothing);
        assert_eq!(c.on_timer(8_100, 1), ModerationAction::PostTimer(8_200, 1));
        assert_eq!(c.on_timer(8_200, 1), ModerationAction::FireNow);
    }

    #[test]
    fn disarmed_queue_stays_quiet_and_rearming_counts_pending_packets() {
        let mut q = RxQueue::new(0, 16, 0, 0, 0, false, false);
        q.fire();
        assert!(q.post(pkt(0)));
        assert_eq!(q.on_completions(0, 1), ModerationAction::Nothing);
        assert_eq!(q.arm(5), ModerationAction::FireNow);
    }

    #[test]
    fn full_ring_drops() {
        let mut q = RxQueue::new(0, 2, 0, 0, 0, false, false);
        assert!(q.post(pkt(0)) && q.post(pkt(1)));
        assert!(!q.post(pkt(2)));
        assert_eq!(q.drops, 1);
        let mut out = vec![];
        q.take(64, &mut out);
        assert_eq!(out.len(), 2);
    }
}
