//! A source of periodic interrupts on one host core: a timer or a device
//! that needs service at a fixed rate (a watchdog, a sensor, a management
//! controller), whose handler takes the core from whatever runs there.
//! It is the smallest component (`model/component.rs`): its state, its one
//! event (the next tick) and its handler, added with
//! `Server::with_component(Box::new(PeriodicIrq::new(..)))`.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::server::Server;
    use crate::scenario::Scenario;

    /// One core at 1 GHz (a cycle is a nanosecond) whose every cost is
    /// zero, serving a light open loop: only the source's handlers take
    /// hard-IRQ time.
    fn light_load() -> Scenario {
        Scenario::from_toml_str(
            r#"
            [run]
            seed = 3
            duration_s = 0.05
            warmup_s = 0.005
            [cpu]
            app_cores = 1
            freq_ghz = 1.0
            wakeup_latency_ns = 0
            [costs]
            hardirq_cycles = 0
            softirq_entry_cycles = 0
            napi_poll_cycles = 0
            rx_packet_cycles = 0
            timer_irq_cycles = 0
            interrupt_penalty_cycles = 0
            irq_cold_cycles = 0
            [load]
            qps = 20000.0
            open_loop_backlog = "server"
            "#,
        )
        .unwrap()
    }

    fn run(source: Option<PeriodicIrq>) -> crate::stats::summary::Summary {
        let mut server = Server::build(&light_load()).unwrap();
        if let Some(p) = source {
            server = server.with_component(Box::new(p));
        }
        server.run().unwrap()
    }

    /// An interrupt every 100 µs whose handler takes 1 µs holds the core
    /// in hard-IRQ time 1 % of the measured window, handles every one it
    /// raised, and the requests served are the same.
    #[test]
    fn a_periodic_source_takes_its_share_of_the_core_in_hard_irq_time() {
        let counts = Rc::new(Cell::new(PeriodicCounts::default()));
        let quiet = run(None);
        let loaded = run(Some(PeriodicIrq::new(0, 100_000, 1_000, counts.clone())));
        assert_eq!(quiet.cpu_pct.irq, 0.0, "no other cost is in hard-IRQ time");
        let c = counts.get();
        // 0.05 s at 10 kHz: 500 ticks in the window, give or take the edges.
        assert!((499..=501).contains(&c.raised), "{c:?}");
        assert!(c.handled + 1 >= c.raised && c.handled <= c.raised + 1, "{c:?}");
        let irq_pct = loaded.cpu_pct.irq;
        assert!((irq_pct - 1.0).abs() < 0.01, "hard-IRQ time {irq_pct} % of the core");
        let served = (loaded.throughput_qps - quiet.throughput_qps).abs() / quiet.throughput_qps;
        assert!(served < 0.01, "{} against {}", loaded.throughput_qps, quiet.throughput_qps);
    }
}
