//! The NAPI instance's state machine (Linux ≥ 6.13, `net/core/dev.c`), as pure
//! transitions: the caller (softirq, busy poll, the hrtimer) does the
//! scheduling and the driver applies the result (re-arm the IRQ or not).
//!
//! State bits kept: `NAPIF_STATE_SCHED` (someone owns the instance: it is on
//! a poll list or a busy poller holds it), `MISSED`, `IN_BUSY_POLL`,
//! `PREFER_BUSY_POLL`; the counter `defer_hard_irqs_count`; and the per-NAPI
//! configuration `napi_defer_hard_irqs`, `gro_flush_timeout`,
//! `irq_suspend_timeout` (6.13 per-NAPI config). GRO is assumed enabled
//! (`gro_bitmask` non-zero), as on the thesis's mlx5 NIC.

use crate::engine::Nanos;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NapiConfig {
    pub defer_hard_irqs: u32,
    /// ns
    pub gro_flush_timeout: Nanos,
    /// ns
    pub irq_suspend_timeout: Nanos,
}

/// What `napi_complete_done` tells the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The return value: true lets the driver re-enable the device IRQ.
    pub rearm_irq: bool,
    /// `MISSED` was set: the instance stays owned and is scheduled again.
    pub reschedule: bool,
    /// `hrtimer_start(&n->timer, timeout)` with this delay.
    pub start_timer_ns: Option<Nanos>,
}

#[derive(Clone, Debug)]
pub struct Napi {
    pub id: u32,
    pub cfg: NapiConfig,
    pub sched: bool,
    pub missed: bool,
    pub in_busy_poll: bool,
    pub prefer_busy_poll: bool,
    pub defer_hard_irqs_count: u32,
}

impl Napi {
    pub fn new(id: u32, cfg: NapiConfig) -> Self {
        Napi { id, cfg, sched: false, missed: false, in_busy_poll: false, prefer_busy_poll: false, defer_hard_irqs_count: 0 }
    }

    /// `napi_schedule_prep`: take ownership, or note that an event was
    /// missed while someone else owns the instance.
    pub fn schedule_prep(&mut self) -> bool {
        if self.sched {
            self.missed = true;
            false
        } else {
            self.sched = true;
            true
        }
    }

    /// `napi_complete_done(n, work_done)`.
    pub fn complete_done(&mut self, work_done: u32) -> Completion {
        let none = Completion { rearm_irq: false, reschedule: false, start_timer_ns: None };
        // A busy poller owns the instance: it decides in busy_poll_stop.
        if self.in_busy_poll {
            return none;
        }
        let mut timeout: Nanos = 0;
        let mut ret = true;
        if work_done > 0 {
            // GRO flush timer, and a fresh allowance of deferred IRQs.
            timeout = self.cfg.gro_flush_timeout;
            self.defer_hard_irqs_count = self.cfg.defer_hard_irqs;
        }
        if self.defer_hard_irqs_count > 0 {
            self.defer_hard_irqs_count -= 1;
            timeout = self.cfg.gro_flush_timeout;
            if timeout > 0 {
                ret = false;
            }
        }
        // Release: clear SCHED and PREFER_BUSY_POLL; MISSED keeps SCHED.
        self.prefer_busy_poll = false;
        if self.missed {
            self.missed = false;
            return Completion { rearm_irq: false, reschedule: true, start_timer_ns: None };
        }
        self.sched = false;
        Completion { rearm_irq: ret, reschedule: false, start_timer_ns: (timeout > 0).then_some(timeout) }
    }

    /// `napi_watchdog`, the hrtimer callback: schedule a poll unless someone
    /// owns the instance; it does not set MISSED (no device event).
    pub fn watchdog(&mut self) -> bool {
        if self.sched {
            return false;
        }
        self.sched = true;
        self.prefer_busy_poll = false;
        true
    }

    /// `__napi_busy_loop` taking ownership at its first iteration. When the
    /// instance is owned elsewhere, `prefer_busy_poll` asks the owner
    /// (softirq) to let go, and the iteration polls nothing.
    pub fn busy_poll_acquire(&mut self, prefer_busy_poll: bool) -> bool {
        if self.sched || self.in_busy_poll {
            if prefer_busy_poll {
                self.prefer_busy_poll = true;
            }
            return false;
        }
        self.sched = true;
        self.in_busy_poll = true;
        true
    }

    /// First half of `busy_poll_stop`: leave busy-poll mode and, with
    /// prefer_busy_poll, reload the deferral count and arm the watchdog for
    /// `gro_flush_timeout`. Returns (skip_schedule, timer delay).
    pub fn busy_poll_stop(&mut self, prefer_busy_poll: bool) -> (bool, Option<Nanos>) {
        self.missed = false;
        self.in_busy_poll = false;
        if prefer_busy_poll {
            self.defer_hard_irqs_count = self.cfg.defer_hard_irqs;
            let t = self.cfg.gro_flush_timeout;
            if self.defer_hard_irqs_count > 0 && t > 0 {
                return (true, Some(t));
            }
        }
        (false, None)
    }

    /// `__busy_poll_stop` after the final poll used its whole budget: either
    /// hand over to softirq (true: schedule) or just release ownership.
    pub fn busy_poll_stop_full(&mut self, skip_schedule: bool) -> bool {
        if skip_schedule {
            self.sched = false;
            false
        } else {
            true // stays SCHED, goes on the poll list
        }
    }

    /// `napi_suspend_irqs` (called by `ep_poll` after it returned events with
    /// prefer_busy_poll): the watchdog moves to `irq_suspend_timeout`.
    pub fn suspend_irqs(&self) -> Option<Nanos> {
        (self.cfg.irq_suspend_timeout > 0).then_some(self.cfg.irq_suspend_timeout)
    }

    /// `napi_resume_irqs`: with IRQ suspension configured, schedule a poll
    /// now so the instance returns to interrupt (or gro_flush_timeout) mode
    /// instead of waiting for the suspend timeout.
    pub fn resume_irqs(&mut self) -> bool {
        self.cfg.irq_suspend_timeout > 0 && self.schedule_prep()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn napi(defer: u32, gro: Nanos, suspend: Nanos) -> Napi {
        Napi::new(0, NapiConfig { defer_hard_irqs: defer, gro_flush_timeout: gro, irq_suspend_timeout: suspend })
    }

    #[test]
    fn without_deferral_completion_rearms_the_irq() {
        let mut n = napi(0, 0, 0);
        assert!(n.schedule_prep());
        let c = n.complete_done(3);
        assert_eq!(c, Completion { rearm_irq: true, reschedule: false, start_timer_ns: None });
        assert!(!n.sched);
    }

    #[test]
    fn empty_poll_with_defer_and_gro_flush_timeout_keeps_irq_masked_and_arms_watchdog() {
        let mut n = napi(2, 20_000, 0);
        n.schedule_prep();
        // Work done: count reloaded to 2 then one deferral used.
        let c = n.complete_done(5);
        assert!(!c.rearm_irq);
        assert_eq!(c.start_timer_ns, Some(20_000));
        assert_eq!(n.defer_hard_irqs_count, 1);
        // Watchdog schedules a poll that finds nothing: still masked.
        assert!(n.watchdog());
        let c = n.complete_done(0);
        assert!(!c.rearm_irq);
        assert_eq!(n.defer_hard_irqs_count, 0);
        // Next empty poll: allowance exhausted, IRQ re-enabled, no timer.
        assert!(n.watchdog());
        let c = n.complete_done(0);
        assert!(c.rearm_irq);
        assert_eq!(c.start_timer_ns, None);
    }

    #[test]
    fn work_without_deferral_still_arms_gro_flush_timer_but_rearms_irq() {
        let mut n = napi(0, 50_000, 0);
        n.schedule_prep();
        let c = n.complete_done(1);
        assert!(c.rearm_irq);
        assert_eq!(c.start_timer_ns, Some(50_000));
    }

    #[test]
    fn missed_event_keeps_ownership_and_reschedules() {
        let mut n = napi(0, 0, 0);
        assert!(n.schedule_prep());
        assert!(!n.schedule_prep());
        let c = n.complete_done(1);
        assert!(c.reschedule && !c.rearm_irq);
        assert!(n.sched);
    }

    #[test]
    fn busy_poll_owner_blocks_completion_and_watchdog() {
        let mut n = napi(100, 20_000, 20_000_000);
        assert!(n.busy_poll_acquire(true));
        assert_eq!(n.complete_done(0), Completion { rearm_irq: false, reschedule: false, start_timer_ns: None });
        assert!(!n.watchdog(), "watchdog does not poll an instance a busy poller owns");
        let (skip, t) = n.busy_poll_stop(true);
        assert!(skip);
        assert_eq!(t, Some(20_000));
        assert_eq!(n.defer_hard_irqs_count, 100);
        // The final poll's completion now applies deferral.
        let c = n.complete_done(0);
        assert!(!c.rearm_irq);
        assert_eq!(n.defer_hard_irqs_count, 99);
    }

    #[test]
    fn prefer_busy_poll_is_requested_from_softirq_owner_and_cleared_by_watchdog_or_completion() {
        let mut n = napi(0, 0, 0);
        n.schedule_prep(); // softirq owns it
        assert!(!n.busy_poll_acquire(true));
        assert!(n.prefer_busy_poll);
        n.complete_done(0);
        assert!(!n.prefer_busy_poll);
        n.prefer_busy_poll = true;
        assert!(n.watchdog());
        assert!(!n.prefer_busy_poll);
    }

    #[test]
    fn suspend_and_resume_follow_irq_suspend_timeout() {
        let mut n = napi(100, 20_000, 20_000_000);
        assert_eq!(n.suspend_irqs(), Some(20_000_000));
        assert!(n.resume_irqs());
        assert!(n.sched);
        let mut off = napi(100, 20_000, 0);
        assert_eq!(off.suspend_irqs(), None);
        assert!(!off.resume_irqs());
    }
}
