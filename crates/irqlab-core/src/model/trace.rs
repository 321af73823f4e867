//! An optional record of the kernel-level events of a run (interrupts, NAPI
//! timer arming, busy polling, IRQ suspension, sleeps and wake-ups), for
//! tests and for users who want to see the state machine at work. Bounded:
//! recording stops at the limit.

use crate::engine::Nanos;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum TraceEvent {
    /// The NIC raised RX queue `queue`'s interrupt.
    IrqFired { queue: u32 },
    /// The driver re-armed the queue's interrupt (`napi_complete_done` true).
    IrqRearmed { queue: u32 },
    /// `hrtimer_start` on NAPI `napi`'s watchdog, with the reason.
    TimerArmed { napi: u32, delay_ns: Nanos, reason: TimerReason },
    /// `napi_watchdog` ran; `scheduled` if it scheduled a poll.
    WatchdogFired { napi: u32, scheduled: bool },
    /// A softirq or busy poll of `napi` took `packets`.
    Poll { napi: u32, packets: u32, busy: bool },
    /// `napi_suspend_irqs` from `ep_poll` returning events.
    SuspendIrqs { napi: u32 },
    /// `napi_resume_irqs` after a fruitless busy poll.
    ResumeIrqs { napi: u32, scheduled: bool },
    /// A thread blocked in `epoll_wait`.
    Sleep { thread: u32 },
    /// `ep_poll_callback` woke a thread.
    Wake { thread: u32 },
    /// A packet entered core `core`'s idle backlog and scheduled its NAPI:
    /// from another core (`remote`, an IPI follows) or from itself.
    BacklogScheduled { core: u32, remote: bool },
    /// Core `core` handled a steering IPI (`rps_trigger_softirq`).
    IpiHandled { core: u32 },
    /// A policy the user brought (`model/policy.rs`) set `knob` (its
    /// kernel name) to `value` on queue, NAPI or thread `target` (None:
    /// every one).
    PolicySet { knob: &'static str, target: Option<u32>, value: u64 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerReason {
    /// `napi_complete_done` (deferral / GRO flush): `gro_flush_timeout`.
    Complete,
    /// `busy_poll_stop` with prefer_busy_poll: `gro_flush_timeout`.
    BusyPollStop,
    /// `napi_suspend_irqs`: `irq_suspend_timeout`.
    Suspend,
}

#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub events: Vec<(Nanos, TraceEvent)>,
    pub limit: usize,
}

impl Trace {
    pub fn new(limit: usize) -> Self {
        Trace { events: Vec::with_capacity(limit.min(1 << 16)), limit }
    }
    #[inline]
    pub fn push(&mut self, now: Nanos, e: TraceEvent) {
        if self.events.len() < self.limit {
            self.events.push((now, e));
        }
    }
}
