//! Interrupt throttling of one Intel 82599 MSI-X vector (EITR), and the
//! ixgbe driver's policy that sets it.
//!
//! Emmerich et al. (SPECTS 2015) §II-B, Figure 1: after the vector
//! interrupts, it is held off until its throttling interval has passed; a
//! packet that arrives meanwhile makes it interrupt when the interval
//! expires, otherwise the first packet after the interval interrupts at
//! once. This is independent of NAPI's masking: ixgbe's interrupt handler
//! masks the vector (`EIMS` auto-mask) and `ixgbe_poll` re-enables it
//! (`ixgbe_irq_enable_queues`) when all work is done, so the vector
//! interrupts only when both allow it. An interrupt cause is any RX or TX
//! descriptor write-back the driver has not yet taken; the real `EICR` bit
//! may also stay set for packets a poll already took and then raise an
//! interrupt that finds nothing, which the model does not reproduce.
//!
//! Writing a new interval (`ixgbe_write_eitr` sets `EITR_CNT_WDIS`) keeps
//! the running interval counter, so a new interval counts from the last
//! interrupt.

use super::Signal;
use crate::engine::timer::{LazyTimer, TimerFire, TimerPost};
use crate::engine::Nanos;
use crate::scenario::{ItrCfg, ItrPolicyKind};
use irqlab_policy::itr::{Eitr, ItrPolicy, ItrSample, IxgbeItr, LinearItr, StaticItr};

/// The policy a scenario's `[itr]` names, as ixgbe would run it.
pub fn policy(cfg: &ItrCfg) -> Box<dyn ItrPolicy + Send> {
    match cfg.policy {
        ItrPolicyKind::Off => Box::new(StaticItr::new(0)),
        ItrPolicyKind::Static => Box::new(StaticItr::new(cfg.rate)),
        ItrPolicyKind::Ixgbe => Box::new(IxgbeItr::new()),
        ItrPolicyKind::Linear => {
            Box::new(LinearItr::new(cfg.linear_params()).expect("scenario validation checks [itr]"))
        }
        ItrPolicyKind::GoldenSection => Box::new(
            irqlab_policy::itr::GoldenItr::new(cfg.golden_params()).expect("scenario validation checks [itr]"),
        ),
    }
}

/// `IXGBE_DEFAULT_TX_WORK`: the TX descriptors `ixgbe_clean_tx_irq` reaps
/// per poll (`q_vector->tx.work_limit`).
pub const IXGBE_DEFAULT_TX_WORK: u32 = 256;

pub struct EitrVector {
    /// The minimum gap between two interrupts, ns (0: no throttling).
    interval_ns: u64,
    /// When the vector last interrupted.
    last_fire_ns: Option<Nanos>,
    /// NAPI has the vector enabled (`EIMS`).
    enabled: bool,
    timer: LazyTimer,
    /// The driver's ITR policy, asked when it leaves polling mode.
    policy: Box<dyn ItrPolicy + Send>,
    /// What the vector's rings completed since the policy last looked.
    work: ItrSample,
    /// Policy decisions that changed the interval (measured window).
    pub changes: u64,
}

impl EitrVector {
    pub fn new(policy: Box<dyn ItrPolicy + Send>) -> Self {
        EitrVector {
            interval_ns: policy.current().interval_ns(),
            last_fire_ns: None,
            enabled: true,
            timer: LazyTimer::default(),
            policy,
            work: ItrSample::default(),
            changes: 0,
        }
    }

    /// The throttling interval in force, ns.
    pub fn interval_ns(&self) -> u64 {
        self.interval_ns
    }

    /// The ITR value in force, as the driver keeps it.
    pub fn itr(&self) -> Eitr {
        self.policy.current()
    }

    /// The vector may interrupt now, or at the end of its interval.
    fn try_fire(&mut self, now: Nanos) -> Signal {
        let ready_ns = self.last_fire_ns.map_or(0, |t| t + self.interval_ns);
        if now >= ready_ns {
            return Signal::FireNow;
        }
        match self.timer.start(ready_ns) {
            TimerPost::At(at, gen) => Signal::PostTimer(at, gen),
            TimerPost::None => Signal::Nothing,
        }
    }

    /// A descriptor write-back (an interrupt cause) at `now`.
    #[inline]
    pub fn on_cause(&mut self, now: Nanos) -> Signal {
        if !self.enabled || self.timer.is_armed() {
            return Signal::Nothing;
        }
        self.try_fire(now)
    }

    /// The interval expired; `pending`: a cause still waits for the driver.
    pub fn on_timer(&mut self, now: Nanos, gen: u32, pending: bool) -> Signal {
        match self.timer.on_event(now, gen) {
            TimerFire::Ignore => Signal::Nothing,
            TimerFire::Repost(at, gen) => Signal::PostTimer(at, gen),
            TimerFire::Expire if self.enabled && pending => Signal::FireNow,
            TimerFire::Expire => Signal::Nothing,
        }
    }

    /// The vector interrupts: auto-masked until NAPI re-enables it.
    pub fn fire(&mut self, now: Nanos) {
        self.enabled = false;
        self.last_fire_ns = Some(now);
        self.timer.cancel();
    }

    /// `ixgbe_irq_enable_queues`: `pending` causes interrupt as soon as the
    /// interval allows.
    pub fn enable(&mut self, now: Nanos, pending: bool) -> Signal {
        if self.enabled {
            return Signal::Nothing;
        }
        self.enabled = true;
        if pending {
            self.try_fire(now)
        } else {
            Signal::Nothing
        }
    }

    /// Count what the driver's poll completed (`ring_container->total_*`).
    #[inline]
    pub fn count_rx(&mut self, packets: u32, bytes: u64) {
        self.work.rx_packets += packets as u64;
        self.work.rx_bytes += bytes;
    }

    #[inline]
    pub fn count_tx(&mut self, packets: u32, bytes: u64) {
        self.work.tx_packets += packets as u64;
        self.work.tx_bytes += bytes;
    }

    /// `ixgbe_set_itr` when the driver leaves polling mode: the policy sees
    /// the work since it last looked and may write a new interval.
    pub fn sample(&mut self, now: Nanos) {
        let s = ItrSample { time_ns: now, ..std::mem::take(&mut self.work) };
        if let Some(itr) = self.policy.observe(s) {
            let ns = itr.interval_ns();
            if ns != self.interval_ns {
                self.interval_ns = ns;
                self.changes += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlab_policy::itr::{StaticItr, IXGBE_20K_ITR};

    fn vector(rate: u32) -> EitrVector {
        EitrVector::new(Box::new(StaticItr::new(rate)))
    }

    #[test]
    fn figure_1_a_packet_in_the_interval_fires_at_its_end_one_after_it_at_once() {
        // 20000/s: itr 200, bits 11:3 → 25 × 2.048 µs = 51.2 µs.
        let mut v = vector(20_000);
        assert_eq!(v.interval_ns(), 51_200);
        assert_eq!(v.on_cause(1_000), Signal::FireNow, "the first packet fires at once");
        v.fire(1_000);
        // NAPI re-enables at once with nothing pending.
        assert_eq!(v.enable(3_000, false), Signal::Nothing);
        // A packet inside the interval: the interrupt waits for its end.
        assert_eq!(v.on_cause(10_000), Signal::PostTimer(52_200, 1));
        assert_eq!(v.on_cause(11_000), Signal::Nothing, "one timer for the interval");
        assert_eq!(v.on_timer(52_200, 1, true), Signal::FireNow);
        v.fire(52_200);
        assert_eq!(v.enable(60_000, false), Signal::Nothing);
        // After the interval the next packet fires at once.
        assert_eq!(v.on_cause(200_000), Signal::FireNow);
    }

    #[test]
    fn napi_masking_and_throttling_both_gate_the_vector() {
        let mut v = vector(20_000);
        assert_eq!(v.on_cause(0), Signal::FireNow);
        v.fire(0);
        // Masked by NAPI: causes wait whatever the interval.
        assert_eq!(v.on_cause(100_000), Signal::Nothing);
        // Re-enabled after the interval with work pending: at once.
        assert_eq!(v.enable(120_000, true), Signal::FireNow);
        v.fire(120_000);
        // Re-enabled inside the interval with work pending: at its end.
        assert_eq!(v.enable(130_000, true), Signal::PostTimer(171_200, 1));
        // The work was taken before the end (a cause with nothing pending).
        assert_eq!(v.on_timer(171_200, 1, false), Signal::Nothing);
        // Masked when the interval expires: nothing until enabled.
        let mut m = vector(20_000);
        m.fire(0);
        assert_eq!(m.enable(10_000, true), Signal::PostTimer(51_200, 1));
        assert_eq!(m.on_timer(51_200, 1, true), Signal::FireNow);
    }

    #[test]
    fn without_throttling_every_enabled_cause_fires() {
        let mut v = vector(0);
        assert_eq!(v.interval_ns(), 0);
        for t in [0, 10, 20] {
            assert_eq!(v.on_cause(t), Signal::FireNow);
            v.fire(t);
            assert_eq!(v.on_cause(t + 1), Signal::Nothing, "masked until NAPI re-enables it");
            assert_eq!(v.enable(t + 5, false), Signal::Nothing);
        }
    }

    #[test]
    fn the_policy_sees_the_work_since_it_last_looked() {
        // The dynamic ITR starts at 20K; a light load brings it down.
        let mut v = EitrVector::new(Box::new(irqlab_policy::itr::IxgbeItr::new()));
        assert_eq!(v.itr(), Eitr(IXGBE_20K_ITR));
        v.count_rx(1, 60);
        v.count_tx(1, 60);
        v.sample(50_000);
        assert!(v.interval_ns() < 51_200, "smoothed toward 100K: {}", v.interval_ns());
        assert_eq!(v.changes, 1);
        assert_eq!(v.work, ItrSample::default(), "the counts were handed over");
    }
}
