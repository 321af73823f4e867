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
//!
//! A transmitted frame's descriptor is a cause only once the NIC writes it
//! back, and the NIC holds done descriptors back (`TXDCTL.WTHRESH`). Intel's
//! 82598 datasheet (§3.5.3.3.4; the 82599 keeps the scheme) writes them back
//! when WTHRESH of them have accumulated, or when the vector's interval
//! counter reaches zero: "Timer expiration flushes any accumulated
//! descriptors and sets an interrupt event (TXDW)". The counter runs only
//! after an interrupt, so without throttling nothing flushes: hence ixgbe's
//! rule that WTHRESH "should not be set higher than 1 when ITR is 0 as it
//! could cause false TX hangs" ([`tx_wthresh`]).

use super::Signal;
use crate::engine::timer::{LazyTimer, TimerFire, TimerPost};
use crate::engine::Nanos;
use crate::scenario::{ItrCfg, ItrPolicyKind, ItrSetWith};
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

/// The vector of a scenario's 82599 queue pair: the `[itr]` policy, and
/// the TX ring's WTHRESH from the ITR the driver configured it with (the
/// regime's own when set by module parameter; the dynamic ITR's start,
/// `IXGBE_20K_ITR`, when `ethtool -C` set it after the interface came up).
pub fn vector(cfg: &ItrCfg) -> EitrVector {
    let policy = policy(cfg);
    let itr_at_configure = match cfg.set_with {
        ItrSetWith::ModuleParameter => policy.current(),
        ItrSetWith::Ethtool => Eitr(irqlab_policy::itr::IXGBE_20K_ITR),
    };
    EitrVector::new(policy).with_wthresh(tx_wthresh(itr_at_configure))
}

/// `TXDCTL.WTHRESH` as ixgbe 3.14.5 (the ITR paper's driver) and ixgbevf
/// set it when they configure a TX ring (`ixgbe_configure_tx_ring`): 1 if
/// the vector's ITR value is then below 8 (throttling off), else 8, "to
/// encourage burst writeback". The ring is configured when the interface
/// comes up (and at a reset); mainline ixgbe since the BQL rework tests
/// `itr < IXGBE_100K_ITR` instead and resets on an `ethtool -C` that
/// crosses it, which 3.14.5's `ixgbe_set_coalesce` does not (it resets
/// only when RSC must change).
pub fn tx_wthresh(itr_at_configure: Eitr) -> u32 {
    if itr_at_configure.0 < 8 {
        1
    } else {
        8
    }
}

/// What happens to a transmitted frame's descriptor once the NIC is done
/// with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxWriteBack {
    /// Written back now, with the descriptors held before it: the driver
    /// sees them, and they are a cause.
    Now { descriptors: u32, bytes: u64 },
    /// Held in the NIC; the signal posts the flush at the interval's end.
    Held(Signal),
}

/// The vector's interval counter reached zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntervalEnd {
    /// A stale or moved timer event: do what the signal says.
    Not(Signal),
    /// It did: these held descriptors were written back (TXDW); then ask
    /// [`EitrVector::expired`] whether the vector fires.
    Flushed { descriptors: u32, bytes: u64 },
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
    /// `TXDCTL.WTHRESH` of the queue pair's TX ring ([`tx_wthresh`]).
    wthresh: u32,
    /// Transmitted descriptors done but not yet written back, and their
    /// bytes.
    tx_held: u32,
    tx_held_bytes: u64,
}

impl EitrVector {
    /// A vector whose TX ring writes descriptors back one by one
    /// (WTHRESH 1); see [`EitrVector::with_wthresh`].
    pub fn new(policy: Box<dyn ItrPolicy + Send>) -> Self {
        EitrVector {
            interval_ns: policy.current().interval_ns(),
            last_fire_ns: None,
            enabled: true,
            timer: LazyTimer::default(),
            policy,
            work: ItrSample::default(),
            changes: 0,
            wthresh: 1,
            tx_held: 0,
            tx_held_bytes: 0,
        }
    }

    /// The TX ring's `TXDCTL.WTHRESH` (at least 1).
    pub fn with_wthresh(mut self, wthresh: u32) -> Self {
        self.wthresh = wthresh.max(1);
        self
    }

    pub fn wthresh(&self) -> u32 {
        self.wthresh
    }

    /// Transmitted descriptors the NIC holds back.
    pub fn tx_held(&self) -> u32 {
        self.tx_held
    }

    /// The end of the running interval, if one runs at `now`.
    fn interval_end_after(&self, now: Nanos) -> Option<Nanos> {
        let end = self.last_fire_ns? + self.interval_ns;
        (self.interval_ns > 0 && now < end).then_some(end)
    }

    /// The throttling interval in force, ns.
    pub fn interval_ns(&self) -> u64 {
        self.interval_ns
    }

    /// `ethtool -C` of a static rate (`ixgbe_set_coalesce`): the vector's
    /// value becomes `(1000000 / rate) << 2` and `ixgbe_set_itr` no longer
    /// runs (any `rx_itr_setting` but 1 is static), so the rate stays until
    /// set again. The driver writes EITR at once (`ixgbe_write_eitr`); here
    /// the new interval counts from the vector's last interrupt, and an
    /// interrupt already waiting for the old interval's end keeps that end.
    pub fn set_rate(&mut self, rate_per_s: u32) {
        let p = irqlab_policy::itr::StaticItr::new(rate_per_s);
        self.interval_ns = p.current().interval_ns();
        self.policy = Box::new(p);
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

    /// A transmitted frame's descriptor is done at `now` (ixgbe asks for a
    /// write-back of every packet's last descriptor: `IXGBE_TXD_CMD` has
    /// `RS`). Written back once WTHRESH have accumulated; else held, and
    /// flushed when the running interval ends (if none runs, by the next
    /// interrupt's).
    pub fn tx_descriptor_done(&mut self, now: Nanos, bytes: u32) -> TxWriteBack {
        self.tx_held += 1;
        self.tx_held_bytes += bytes as u64;
        if self.tx_held >= self.wthresh {
            let (descriptors, bytes) = (self.tx_held, self.tx_held_bytes);
            (self.tx_held, self.tx_held_bytes) = (0, 0);
            return TxWriteBack::Now { descriptors, bytes };
        }
        let Some(end) = self.interval_end_after(now) else { return TxWriteBack::Held(Signal::Nothing) };
        match self.timer.start(end) {
            TimerPost::At(at, gen) => TxWriteBack::Held(Signal::PostTimer(at, gen)),
            TimerPost::None => TxWriteBack::Held(Signal::Nothing),
        }
    }

    /// The vector's timer event: the interval's end flushes the held TX
    /// descriptors.
    pub fn on_timer(&mut self, now: Nanos, gen: u32) -> IntervalEnd {
        match self.timer.on_event(now, gen) {
            TimerFire::Ignore => IntervalEnd::Not(Signal::Nothing),
            TimerFire::Repost(at, gen) => IntervalEnd::Not(Signal::PostTimer(at, gen)),
            TimerFire::Expire => {
                let (descriptors, bytes) = (self.tx_held, self.tx_held_bytes);
                (self.tx_held, self.tx_held_bytes) = (0, 0);
                IntervalEnd::Flushed { descriptors, bytes }
            }
        }
    }

    /// After the interval ended: `pending`, a cause waits for the driver.
    pub fn expired(&self, pending: bool) -> Signal {
        if self.enabled && pending {
            Signal::FireNow
        } else {
            Signal::Nothing
        }
    }

    /// The vector interrupts: auto-masked until NAPI re-enables it. Its
    /// interval starts, and with it the flush of TX descriptors held back.
    pub fn fire(&mut self, now: Nanos) -> Signal {
        self.enabled = false;
        self.last_fire_ns = Some(now);
        self.timer.cancel();
        if self.tx_held == 0 || self.interval_ns == 0 {
            return Signal::Nothing;
        }
        match self.timer.start(now + self.interval_ns) {
            TimerPost::At(at, gen) => Signal::PostTimer(at, gen),
            TimerPost::None => Signal::Nothing,
        }
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

    /// The timer event as the queue pair handles it, `pending` after the flush.
    fn end(v: &mut EitrVector, now: Nanos, gen: u32, pending: bool) -> Signal {
        match v.on_timer(now, gen) {
            IntervalEnd::Not(s) => s,
            IntervalEnd::Flushed { .. } => v.expired(pending),
        }
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
        assert_eq!(end(&mut v, 52_200, 1, true), Signal::FireNow);
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
        assert_eq!(end(&mut v, 171_200, 1, false), Signal::Nothing);
        // Masked when the interval expires: nothing until enabled.
        let mut m = vector(20_000);
        m.fire(0);
        assert_eq!(m.enable(10_000, true), Signal::PostTimer(51_200, 1));
        assert_eq!(end(&mut m, 51_200, 1, true), Signal::FireNow);
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

    #[test]
    fn wthresh_follows_the_itr_the_ring_was_configured_with() {
        // ixgbe 3.14.5 ixgbe_configure_tx_ring: itr < 8 → 1, else 8.
        assert_eq!(tx_wthresh(Eitr(0)), 1, "InterruptThrottleRate=0");
        assert_eq!(tx_wthresh(Eitr(7)), 1);
        assert_eq!(tx_wthresh(Eitr(8)), 8, "the highest static rate, 488281/s");
        assert_eq!(tx_wthresh(Eitr(IXGBE_20K_ITR)), 8, "the dynamic ITR's start");
    }

    #[test]
    fn held_descriptors_are_written_back_at_wthresh_or_when_the_interval_ends() {
        // 20000/s (51.2 µs), WTHRESH 8.
        let mut v = vector(20_000).with_wthresh(8);
        assert_eq!(v.on_cause(0), Signal::FireNow);
        assert_eq!(v.fire(0), Signal::Nothing, "nothing held yet");
        // A descriptor done inside the interval waits for its end.
        assert_eq!(v.tx_descriptor_done(2_000, 60), TxWriteBack::Held(Signal::PostTimer(51_200, 1)));
        assert_eq!(v.tx_descriptor_done(3_000, 60), TxWriteBack::Held(Signal::Nothing), "one flush");
        assert_eq!(v.tx_held(), 2);
        assert_eq!(v.enable(5_000, false), Signal::Nothing, "the driver sees nothing yet");
        // The interval's end flushes both (TXDW), and the vector fires.
        assert_eq!(v.on_timer(51_200, 1), IntervalEnd::Flushed { descriptors: 2, bytes: 120 });
        assert_eq!(v.expired(true), Signal::FireNow);
        assert_eq!(v.tx_held(), 0);
        // Eight done at once are written back at once, held or not.
        let mut w = vector(20_000).with_wthresh(8);
        for i in 0..7 {
            assert!(matches!(w.tx_descriptor_done(i, 60), TxWriteBack::Held(_)));
        }
        assert_eq!(w.tx_descriptor_done(7, 60), TxWriteBack::Now { descriptors: 8, bytes: 480 });
    }

    #[test]
    fn without_a_running_interval_held_descriptors_wait_for_the_next_interrupt() {
        // No throttling: the counter never runs, nothing flushes (ixgbe's
        // "false TX hangs" with WTHRESH above 1 and ITR 0).
        let mut off = vector(0).with_wthresh(8);
        assert_eq!(off.tx_descriptor_done(0, 60), TxWriteBack::Held(Signal::Nothing));
        assert_eq!(off.fire(10), Signal::Nothing);
        assert_eq!(off.tx_held(), 1);
        // Throttled, but the interval already over: held until the next
        // interrupt's interval ends.
        let mut v = vector(20_000).with_wthresh(8);
        assert_eq!(v.fire(0), Signal::Nothing);
        assert_eq!(v.tx_descriptor_done(60_000, 60), TxWriteBack::Held(Signal::Nothing));
        assert_eq!(v.fire(70_000), Signal::PostTimer(121_200, 1));
        assert_eq!(v.on_timer(121_200, 1), IntervalEnd::Flushed { descriptors: 1, bytes: 60 });
        // WTHRESH 1 writes every descriptor back at once.
        let mut one = vector(0);
        assert_eq!(one.wthresh(), 1);
        assert_eq!(one.tx_descriptor_done(5, 60), TxWriteBack::Now { descriptors: 1, bytes: 60 });
    }
}
