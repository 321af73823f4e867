//! A part added to the machine from outside the built-in set: a device or
//! a workload that handles its own events and may interrupt the host's
//! cores. It arrives as one folder (its state, its events, its code) and
//! one registration (`Server::with_component`); the machine gives it an
//! id, carries its events (`Ev::Component`, the `u64` it chose) back to it,
//! and routes its interrupts (`IrqSrc::Component`) to the host kernel,
//! whose scheduler runs the handler for the cycles it asks.
//!
//! `devices/periodic/` is one: a source of periodic interrupts, and the
//! recipe in docs/architecture.md ("Add a device or a workload") says how
//! to write another.

use crate::engine::Nanos;

/// Index of a component in the order it was registered.
pub type ComponentId = u16;

/// What a component may do when it is called: schedule its own events
/// and interrupt host cores. The machine carries the requests out when the
/// call returns, in order.
pub struct ComponentCx<'a> {
    /// The simulated time of the call.
    pub now: Nanos,
    /// Inside the measured window (after `run.warmup_s`).
    pub measuring: bool,
    pub(crate) events: &'a mut Vec<(Nanos, u64)>,
    pub(crate) irqs: &'a mut Vec<u32>,
}

impl ComponentCx<'_> {
    /// Have `ev` delivered to this component's `on_event` at `at_ns` (not
    /// before now).
    pub fn at(&mut self, at_ns: Nanos, ev: u64) {
        self.events.push((at_ns.max(self.now), ev));
    }

    /// Raise this component's interrupt on host core `core`.
    pub fn raise_irq(&mut self, core: u32) {
        self.irqs.push(core);
    }
}

/// A device or workload added to the machine.
pub trait Component {
    /// Called once as the run starts (at time 0).
    fn start(&mut self, cx: &mut ComponentCx);
    /// One of its own events arrives: the `u64` it scheduled.
    fn on_event(&mut self, cx: &mut ComponentCx, ev: u64);
    /// Cycles of its interrupt's handler.
    fn irq_cycles(&self) -> u64 {
        0
    }
    /// Its interrupt's handler ended on host core `core`.
    fn irq_done(&mut self, cx: &mut ComponentCx, core: u32) {
        let _ = (cx, core);
    }
}
