//! Interrupt moderation of one completion queue (CQ), with ethtool
//! semantics, optionally driven by net DIM.
//!
//! Follows mlx5's CQ moderation (the thesis's ConnectX-4 Lx): once the driver
//! arms the CQ, the first completion starts the moderation period; the CQ
//! signals its interrupt when `frames` completions are pending or `usecs`
//! have passed. In CQE mode every completion restarts the period; in EQE
//! mode it runs from the first. A bound of 0 is no bound; both 0 means an
//! interrupt per completion. Signalling disarms the CQ until NAPI re-arms it
//! (`napi_complete_done` returning true, then `mlx5e_cq_arm`).

use crate::dim::dim::DimSample;
use crate::dim::net_dim::{
    net_dim_get_rx_moderation, net_dim_get_tx_moderation, DimCqPeriodMode, DimDirection, NetDim,
    NET_DIM_PARAMS_NUM_PROFILES,
};
use crate::engine::timer::{LazyTimer, TimerFire, TimerPost};
use crate::engine::Nanos;
use crate::stats::dim_profiles::DimProfileTime;

/// What the CQ wants done after completions arrived, it was re-armed or its
/// timer event came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    Nothing,
    /// Signal the interrupt now.
    FireNow,
    /// Post a moderation-timer event at this time with this generation.
    PostTimer(Nanos, u32),
}

pub struct Moderation {
    /// The driver armed the CQ (it may signal).
    pub armed: bool,
    /// Completions since the moderation period started.
    pending: u32,
    timer: LazyTimer,
    pub usecs: u32,
    pub frames: u32,
    cqe_mode: bool,
    pub dim: Option<NetDim>,
    /// Time each DIM profile was in force (unused without DIM); accounted
    /// at profile changes only.
    pub dim_time: DimProfileTime,
    // DIM counters (wrapping, as the driver's): completions, bytes, events.
    pub dim_pkts: u32,
    pub dim_bytes: u64,
    pub dim_events: u16,
}

impl Moderation {
    /// A CQ created with the ethtool values `usecs`/`frames`. With
    /// `adaptive`, DIM starts zeroed as mlx5 allocates it
    /// ([`NetDim::zeroed`]): the ethtool values stay in force until DIM's
    /// first decision.
    pub fn new(usecs: u32, frames: u32, cqe_mode: bool, adaptive: bool, direction: DimDirection) -> Self {
        let dim = adaptive.then(|| {
            let mode = if cqe_mode { DimCqPeriodMode::StartFromCqe } else { DimCqPeriodMode::StartFromEqe };
            NetDim::zeroed(mode, direction)
        });
        let dim_time = DimProfileTime::new(dim.as_ref().map_or(0, |d| initial_profile_ix(d, usecs, frames)));
        Moderation {
            armed: true,
            pending: 0,
            timer: LazyTimer::default(),
            usecs,
            frames,
            cqe_mode,
            dim,
            dim_time,
            dim_pkts: 0,
            dim_bytes: 0,
            dim_events: 0,
        }
    }

    /// `n` new completions at `now`.
    pub fn on_completions(&mut self, now: Nanos, n: u32) -> Signal {
        if !self.armed || n == 0 {
            return Signal::Nothing;
        }
        self.pending += n;
        if (self.frames <= 1 && self.usecs == 0) || (self.frames > 0 && self.pending >= self.frames) {
            return Signal::FireNow;
        }
        if self.usecs == 0 {
            return Signal::Nothing; // frame bound only
        }
        if self.cqe_mode || !self.timer.is_armed() {
            if let TimerPost::At(at, gen) = self.timer.start(now + self.usecs as Nanos * 1_000) {
                return Signal::PostTimer(at, gen);
            }
        }
        Signal::Nothing
    }

    /// A moderation-timer event arrived.
    pub fn on_timer(&mut self, now: Nanos, gen: u32) -> Signal {
        match self.timer.on_event(now, gen) {
            TimerFire::Ignore => Signal::Nothing,
            TimerFire::Repost(at, gen) => Signal::PostTimer(at, gen),
            TimerFire::Expire if self.armed && self.pending > 0 => Signal::FireNow,
            TimerFire::Expire => Signal::Nothing,
        }
    }

    /// The CQ signals: disarm until re-armed.
    pub fn fire(&mut self) {
        self.armed = false;
        self.pending = 0;
        self.timer.cancel();
        self.dim_events = self.dim_events.wrapping_add(1);
    }

    /// The driver re-arms the CQ; `outstanding` completions not yet reaped
    /// count as new ones.
    pub fn arm(&mut self, now: Nanos, outstanding: u32) -> Signal {
        if self.armed {
            return Signal::Nothing;
        }
        self.armed = true;
        self.pending = 0;
        self.timer.cancel();
        self.on_completions(now, outstanding)
    }

    /// Count reaped completions for DIM.
    #[inline]
    pub fn count(&mut self, n: u32, bytes: u64) {
        self.dim_pkts = self.dim_pkts.wrapping_add(n);
        self.dim_bytes = self.dim_bytes.wrapping_add(bytes);
    }

    /// Feed DIM a sample, as `mlx5e_napi_poll` does when it re-arms the CQ;
    /// apply a new moderation at once (the driver's work item).
    pub fn dim_sample(&mut self, now: Nanos) {
        if let Some(d) = self.dim.as_mut() {
            let s = DimSample { time_ns: now, pkt_ctr: self.dim_pkts, byte_ctr: self.dim_bytes, event_ctr: self.dim_events };
            if let Some(m) = d.on_sample(s) {
                self.usecs = m.usec as u32;
                self.frames = m.pkts as u32;
                d.work_done();
                self.dim_time.switch(now, d.profile_ix());
            }
        }
    }
}

/// The DIM profile whose moderation equals the ethtool values the CQ was
/// created with (the thesis's 8 µs / 128 frames is profile 1 of both the
/// RX CQE and the TX EQE table), else DIM's own index. The time before
/// DIM's first decision is accounted to it: a stretch of `DIM_NEVENTS`
/// interrupts, over long before any warm-up ends.
fn initial_profile_ix(d: &NetDim, usecs: u32, frames: u32) -> u8 {
    (0..NET_DIM_PARAMS_NUM_PROFILES)
        .find(|&ix| {
            let m = match d.direction() {
                DimDirection::Rx => net_dim_get_rx_moderation(d.mode(), ix),
                DimDirection::Tx => net_dim_get_tx_moderation(d.mode(), ix),
            };
            m.is_some_and(|m| (m.usec as u32, m.pkts as u32) == (usecs, frames))
        })
        .map_or(d.profile_ix(), |ix| ix as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(usecs: u32, frames: u32, cqe: bool) -> Moderation {
        Moderation::new(usecs, frames, cqe, false, DimDirection::Rx)
    }

    #[test]
    fn frame_bound_fires_at_the_nth_completion() {
        let mut q = m(0, 3, false);
        assert_eq!(q.on_completions(0, 1), Signal::Nothing);
        assert_eq!(q.on_completions(1, 1), Signal::Nothing);
        assert_eq!(q.on_completions(2, 1), Signal::FireNow);
    }

    #[test]
    fn eqe_timer_runs_from_the_first_completion_cqe_restarts() {
        let mut q = m(8, 0, false);
        assert_eq!(q.on_completions(100, 1), Signal::PostTimer(8_100, 1));
        assert_eq!(q.on_completions(200, 1), Signal::Nothing);
        assert_eq!(q.on_timer(8_100, 1), Signal::FireNow);
        let mut c = m(8, 0, true);
        assert_eq!(c.on_completions(100, 1), Signal::PostTimer(8_100, 1));
        // CQE mode: the period restarts; the posted event is re-posted.
        assert_eq!(c.on_completions(200, 1), Signal::Nothing);
        assert_eq!(c.on_timer(8_100, 1), Signal::PostTimer(8_200, 1));
        assert_eq!(c.on_timer(8_200, 1), Signal::FireNow);
    }

    #[test]
    fn disarmed_cq_stays_quiet_and_rearming_counts_outstanding_completions() {
        let mut q = m(0, 0, false);
        q.fire();
        assert_eq!(q.on_completions(0, 1), Signal::Nothing);
        assert_eq!(q.arm(5, 1), Signal::FireNow);
        q.fire();
        assert_eq!(q.arm(6, 0), Signal::Nothing);
    }

    #[test]
    fn adaptive_keeps_the_ethtool_values_and_starts_dim_zeroed_as_mlx5() {
        let q = Moderation::new(8, 128, true, true, DimDirection::Rx);
        assert_eq!((q.usecs, q.frames), (8, 128), "the CQ's creation values stay");
        assert_eq!(q.dim.unwrap().profile_ix(), 0, "kvzalloc'ed struct dim");
        assert_eq!(q.dim_time.profile_ix(), 1, "8/128 is RX CQE profile 1");
        let t = Moderation::new(8, 128, false, true, DimDirection::Tx);
        assert_eq!(t.dim_time.profile_ix(), 1, "8/128 is TX EQE profile 1");
        // Values of no profile: the time goes to DIM's own index.
        let o = Moderation::new(5, 7, true, true, DimDirection::Rx);
        assert_eq!((o.usecs, o.frames), (5, 7));
        assert_eq!(o.dim_time.profile_ix(), 0);
    }

    /// DIM's first window: opened at 1 µs, then `DIM_NEVENTS` interrupts
    /// and 640 packets; the next sample closes it.
    fn first_window(q: &mut Moderation) {
        q.dim_sample(1_000);
        for _ in 0..64 {
            q.fire();
        }
        q.count(640, 64_000);
    }

    #[test]
    fn dims_first_decision_steps_right_to_profile_1() {
        let mut q = Moderation::new(3, 30, true, true, DimDirection::Rx);
        first_window(&mut q);
        q.dim_sample(101_000);
        assert_eq!(q.dim.unwrap().profile_ix(), 1);
        assert_eq!((q.usecs, q.frames), (8, 128), "RX CQE profile 1 applied");
        assert_eq!(q.dim_time.changes(), 1);
    }

    #[test]
    fn the_time_per_dim_profile_follows_dims_changes() {
        // Created with RX CQE profile 0's values (2 µs / 256 frames).
        let mut q = Moderation::new(2, 256, true, true, DimDirection::Rx);
        assert_eq!(q.dim_time.profile_ix(), 0);
        q.dim_time.restart(1_000); // the measurement starts
        first_window(&mut q);
        // Traffic after none: net_dim leaves its parking spot, one step right.
        q.dim_sample(101_000);
        assert_eq!(q.dim.unwrap().profile_ix(), 1);
        assert_eq!((q.usecs, q.frames), (8, 128), "RX CQE profile 1");
        assert_eq!(q.dim_time.profile_ix(), 1);
        assert_eq!(q.dim_time.changes(), 1);
        assert_eq!(q.dim_time.ns_until(401_000), [100_000, 300_000, 0, 0, 0]);
    }
}
