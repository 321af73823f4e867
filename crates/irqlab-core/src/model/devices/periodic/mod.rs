//! A source of periodic interrupts on one host core: a timer or a device
//! that needs service at a fixed rate (a watchdog, a sensor, a management
//! controller), whose handler takes the core from whatever runs there.
//! It is the smallest component (`model/component.rs`): its state, its one
//! event (the next tick) and its handler, added with
//! `Server::with_component(Box::new(PeriodicIrq::new(..)))`. Its oracle
//! test is `crates/irqlab-core/tests/component.rs`.
//!
//! What it shows in a run is the disturbance a fixed interrupt load puts
//! on a core: `handler_cycles / freq × rate` of it in hard-IRQ time, and
//! the preempted thread's interruption penalty after each.

use crate::engine::Nanos;
use crate::model::component::{Component, ComponentCx};
use std::cell::Cell;
use std::rc::Rc;

/// What the source did in the measured window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeriodicCounts {
    /// Interrupts raised.
    pub raised: u64,
    /// Handlers that ran to their end.
    pub handled: u64,
}

pub struct PeriodicIrq {
    core: u32,
    period_ns: Nanos,
    handler_cycles: u64,
    counts: Rc<Cell<PeriodicCounts>>,
}

impl PeriodicIrq {
    /// An interrupt on host core `core` every `period_ns`, from time 0,
    /// whose handler takes `handler_cycles`; `counts` is where it keeps
    /// what it did (shared, so the caller can read it after the run).
    pub fn new(core: u32, period_ns: Nanos, handler_cycles: u64, counts: Rc<Cell<PeriodicCounts>>) -> Self {
        assert!(period_ns > 0, "a periodic source needs a period above 0 ns");
        PeriodicIrq { core, period_ns, handler_cycles, counts }
    }

    fn count(&self, f: impl FnOnce(&mut PeriodicCounts)) {
        let mut c = self.counts.get();
        f(&mut c);
        self.counts.set(c);
    }
}

/// Its one event: the next tick.
const TICK: u64 = 0;

impl Component for PeriodicIrq {
    fn start(&mut self, cx: &mut ComponentCx) {
        cx.at(cx.now + self.period_ns, TICK);
    }

    fn on_event(&mut self, cx: &mut ComponentCx, ev: u64) {
        debug_assert_eq!(ev, TICK);
        if cx.measuring {
            self.count(|c| c.raised += 1);
        }
        cx.raise_irq(self.core);
        cx.at(cx.now + self.period_ns, TICK);
    }

    fn irq_cycles(&self) -> u64 {
        self.handler_cycles
    }

    fn irq_done(&mut self, cx: &mut ComponentCx, _core: u32) {
        if cx.measuring {
            self.count(|c| c.handled += 1);
        }
    }
}
