//! What net DIM did: how long each moderation profile was in force on a
//! completion queue over the measured window, and how often DIM changed it.
//!
//! The profile is the kernel's `dim->profile_ix` (`lib/dim/net_dim.c`,
//! `net_dim()`), which the driver's work handler turns into the CQ's
//! moderation with `net_dim_get_rx_moderation()` /
//! `net_dim_get_tx_moderation()`. Time is accounted only when the profile
//! changes (at most once per `DIM_NEVENTS` interrupts) and once at the end,
//! never per event, and memory is fixed: one counter per profile.

use crate::dim::net_dim::{
    net_dim_get_rx_moderation, net_dim_get_tx_moderation, DimCqPeriodMode, DimDirection, NET_DIM_PARAMS_NUM_PROFILES,
};
use crate::engine::Nanos;
use crate::stats::summary::{DimCqReport, DimProfileModer, DimQueueReport, PerProfile};

/// Profiles per DIM table (`NET_DIM_PARAMS_NUM_PROFILES`).
const N: usize = NET_DIM_PARAMS_NUM_PROFILES;

/// Time per DIM profile on one completion queue since the measurement
/// started, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DimProfileTime {
    /// Profile in force since `since_ns` (`dim->profile_ix`).
    ix: u8,
    /// When the current profile came into force, or the measurement
    /// started, whichever is later.
    since_ns: Nanos,
    /// Time each profile was in force before `since_ns`, ns.
    ns: [Nanos; N],
    /// Profile changes since the measurement started.
    changes: u64,
}

impl DimProfileTime {
    /// Start accounting at time 0 with profile `ix` in force.
    pub fn new(ix: u8) -> Self {
        DimProfileTime { ix: ix.min(N as u8 - 1), ..Default::default() }
    }

    /// The measurement starts at `now` (end of warm-up): forget what was
    /// accounted; the profile in force stays.
    pub fn restart(&mut self, now: Nanos) {
        self.since_ns = now;
        self.ns = [0; N];
        self.changes = 0;
    }

    /// DIM put profile `ix` in force at `now` (at most once per
    /// `DIM_NEVENTS` interrupts).
    #[inline]
    pub fn switch(&mut self, now: Nanos, ix: u8) {
        self.ns[self.ix as usize] += now.saturating_sub(self.since_ns);
        self.since_ns = now;
        // net_dim_step() keeps profile_ix inside the table; the clamp only
        // keeps the index in bounds.
        self.ix = ix.min(N as u8 - 1);
        self.changes += 1;
    }

    /// The profile in force.
    pub fn profile_ix(&self) -> u8 {
        self.ix
    }

    /// Profile changes accounted so far.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// Time each profile was in force up to `now`, ns (the current profile's
    /// stretch included). Sums to `now` minus the start of the measurement.
    pub fn ns_until(&self, now: Nanos) -> [Nanos; N] {
        let mut ns = self.ns;
        ns[self.ix as usize] += now.saturating_sub(self.since_ns);
        ns
    }
}

/// `ns` as percentages of their sum. A window of no length (not reachable
/// through a validated scenario) gives 100 to `current`, so the shares
/// always sum to 100.
fn shares_pct(ns: &[u128; N], current: usize) -> PerProfile<f64> {
    let total: u128 = ns.iter().sum();
    let mut pct = [0.0; N];
    if total == 0 {
        pct[current] = 100.0;
    } else {
        for (p, &t) in pct.iter_mut().zip(ns) {
            *p = 100.0 * t as f64 / total as f64;
        }
    }
    PerProfile(pct)
}

/// The summary of one direction's DIM over all queues: the profile table
/// of `mode`/`direction`, the time share of each profile over all queues
/// (each queue weighs the same: they share the window), the changes, and
/// per queue (queue id, accounting) the same.
pub fn cq_report<'a>(
    mode: DimCqPeriodMode,
    direction: DimDirection,
    queues: impl Iterator<Item = (u32, &'a DimProfileTime)>,
    now: Nanos,
) -> DimCqReport {
    let profiles = std::array::from_fn(|ix| {
        let m = match direction {
            DimDirection::Rx => net_dim_get_rx_moderation(mode, ix),
            DimDirection::Tx => net_dim_get_tx_moderation(mode, ix),
        }
        .unwrap_or_default();
        DimProfileModer { usecs: m.usec, frames: m.pkts }
    });
    let mut all = [0u128; N];
    let mut changes = 0;
    let mut current = 0;
    let per_queue: Vec<DimQueueReport> = queues
        .map(|(queue, t)| {
            let ns = t.ns_until(now).map(u128::from);
            for (a, n) in all.iter_mut().zip(&ns) {
                *a += n;
            }
            changes += t.changes();
            current = t.profile_ix() as usize;
            DimQueueReport { queue, time_share_pct: shares_pct(&ns, current), changes: t.changes() }
        })
        .collect();
    DimCqReport {
        cq_period_mode: match mode {
            DimCqPeriodMode::StartFromCqe => "cqe",
            DimCqPeriodMode::StartFromEqe => "eqe",
        }
        .to_string(),
        profiles,
        time_share_pct: shares_pct(&all, current),
        changes,
        queues: per_queue,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(p: &PerProfile<f64>) -> f64 {
        p.0.iter().sum()
    }

    #[test]
    fn a_forced_profile_sequence_gives_its_time_shares() {
        // Warm-up: profile 1 from 0, profile 3 at 400; measured from 1000.
        let mut t = DimProfileTime::new(1);
        t.switch(400, 3);
        t.restart(1_000);
        assert_eq!(t.ns_until(1_000), [0; N]);
        // 1000..3000 profile 3, 3000..6000 profile 2, 6000..11000 profile 4.
        t.switch(3_000, 2);
        t.switch(6_000, 4);
        assert_eq!(t.ns_until(11_000), [0, 0, 3_000, 2_000, 5_000]);
        assert_eq!(t.changes(), 2);
        let r = cq_report(DimCqPeriodMode::StartFromCqe, DimDirection::Rx, [(0, &t)].into_iter(), 11_000);
        assert_eq!(r.queues[0].time_share_pct.0, [0.0, 0.0, 30.0, 20.0, 50.0]);
        assert_eq!(r.time_share_pct.0, [0.0, 0.0, 30.0, 20.0, 50.0]);
        assert_eq!((r.changes, r.queues[0].changes, r.queues[0].queue), (2, 2, 0));
    }

    #[test]
    fn shares_sum_to_100_per_queue_and_over_all_queues() {
        let mut a = DimProfileTime::new(1);
        a.restart(7);
        for (i, at) in [13, 101, 997, 1_009, 77_777].into_iter().enumerate() {
            a.switch(at, (i * 3 % N) as u8);
        }
        let mut b = DimProfileTime::new(0); // never changed: all in profile 0
        b.restart(7);
        let now = 1_000_003;
        let r = cq_report(DimCqPeriodMode::StartFromEqe, DimDirection::Tx, [(0, &a), (1, &b)].into_iter(), now);
        for q in &r.queues {
            assert!((sum(&q.time_share_pct) - 100.0).abs() < 1e-9, "{q:?}");
        }
        assert!((sum(&r.time_share_pct) - 100.0).abs() < 1e-9);
        assert_eq!(r.queues[1].time_share_pct.0, [100.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(r.changes, 5);
        // Every queue weighs the same: the aggregate is the mean of the queues'.
        for ix in 0..N {
            let mean = (r.queues[0].time_share_pct.0[ix] + r.queues[1].time_share_pct.0[ix]) / 2.0;
            assert!((r.time_share_pct.0[ix] - mean).abs() < 1e-9);
        }
    }

    #[test]
    fn the_report_names_the_profile_table_in_use() {
        let t = DimProfileTime::new(1);
        let rx = cq_report(DimCqPeriodMode::StartFromCqe, DimDirection::Rx, [(0, &t)].into_iter(), 10);
        assert_eq!(rx.cq_period_mode, "cqe");
        let pairs = rx.profiles.map(|m| (m.usecs, m.frames));
        assert_eq!(pairs, [(2, 256), (8, 128), (16, 64), (32, 64), (64, 64)], "NET_DIM_RX_CQE_PROFILES");
        let tx = cq_report(DimCqPeriodMode::StartFromEqe, DimDirection::Tx, [(0, &t)].into_iter(), 10);
        assert_eq!(tx.cq_period_mode, "eqe");
        let pairs = tx.profiles.map(|m| (m.usecs, m.frames));
        assert_eq!(pairs, [(1, 128), (8, 128), (32, 128), (64, 128), (128, 128)], "NET_DIM_TX_EQE_PROFILES");
    }

    #[test]
    fn a_window_of_no_length_gives_the_current_profile_100() {
        let mut t = DimProfileTime::new(2);
        t.restart(50);
        let r = cq_report(DimCqPeriodMode::StartFromCqe, DimDirection::Rx, [(3, &t)].into_iter(), 50);
        assert_eq!(r.queues[0].time_share_pct.0, [0.0, 0.0, 100.0, 0.0, 0.0]);
        assert_eq!(r.queues[0].queue, 3);
    }

    #[test]
    fn the_json_shape_is_keyed_by_profile_index() {
        let mut t = DimProfileTime::new(1);
        t.switch(500, 2);
        let r = cq_report(DimCqPeriodMode::StartFromCqe, DimDirection::Rx, [(0, &t)].into_iter(), 1_000);
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["profiles"][4]["usecs"], 64);
        assert_eq!(v["profiles"][4]["frames"], 64);
        assert_eq!(v["time_share_pct"]["1"], 50.0);
        assert_eq!(v["queues"][0]["time_share_pct"]["2"], 50.0);
        let keys: Vec<&String> = v["time_share_pct"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["0", "1", "2", "3", "4"]);
        let back: DimCqReport = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }
}
