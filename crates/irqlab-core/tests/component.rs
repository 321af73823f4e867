//! A component added to the machine from outside (`model/component.rs`):
//! the periodic interrupt source (`model/devices/periodic/`) on the
//! zero-cost server, where only its handlers take hard-IRQ time.

mod common;

use common::{scenario, ZERO_COST};
use irqlab_core::model::devices::periodic::{PeriodicCounts, PeriodicIrq};
use irqlab_core::model::server::Server;
use irqlab_core::Summary;
use std::cell::Cell;
use std::rc::Rc;

fn run(source: Option<PeriodicIrq>) -> Summary {
    // 1 GHz: a cycle is a nanosecond; a light open loop.
    let s = scenario(ZERO_COST, &["run.duration_s=0.05", "run.warmup_s=0.005", "load.qps=20000"]);
    let mut server = Server::build(&s).unwrap();
    if let Some(p) = source {
        server = server.with_component(Box::new(p));
    }
    server.run().unwrap()
}

/// An interrupt every 100 µs whose handler takes 1 µs holds the core in
/// hard-IRQ time 1 % of the measured window, handles every one it raised,
/// and the requests served are the same.
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
