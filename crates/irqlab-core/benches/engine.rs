//! Criterion benches of the simulator (`make bench`, docs/performance.md):
//! the thesis bare-metal scenario's simulated events per wall second under
//! three profiles, the SR-IOV paper's fifteen guests and the IAPS paper's
//! steering, and the event queue alone under the thesis's mix of
//! events: as the model used it before per-core slots and deferred NIC
//! events (segment ends in the heap, three fixed-delay streams in FIFO
//! lanes), and as it does now (a segment end per core in its slot, replies
//! in a lane, idle watchdogs in the heap).
use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use irqlab_core::engine::{EventQueue, StreamRng};
use irqlab_core::Scenario;

/// A scenario file under `scenarios/`, with `sets` applied, 0.05 s
/// simulated after 0.01 s of warm-up.
fn scenario(file: &str, profile: Option<&str>, sets: &[(&str, &str)]) -> Scenario {
    let path = format!("{}/../../scenarios/{file}", env!("CARGO_MANIFEST_DIR"));
    let mut s = Scenario::from_path(std::path::Path::new(&path)).expect("scenario");
    if let Some(p) = profile {
        s.set_profile(p).unwrap();
    }
    for &(k, v) in sets.iter().chain(&[("run.duration_s", "0.05"), ("run.warmup_s", "0.01")]) {
        s.set(k, v).unwrap();
    }
    s
}

/// Bench one run of `s`, its throughput in simulated events.
fn bench_run(g: &mut BenchmarkGroup<'_, WallTime>, name: &str, s: &Scenario) {
    let events = irqlab_core::run(s).unwrap().sim_events;
    g.throughput(Throughput::Elements(events));
    g.bench_function(name, |b| b.iter(|| irqlab_core::run(s).unwrap()));
}

fn thesis(c: &mut Criterion) {
    let mut g = c.benchmark_group("thesis-bare-metal");
    g.sample_size(10);
    for profile in ["busy-wait", "no-coalescing", "irq-suspend"] {
        bench_run(&mut g, profile, &scenario("thesis/bare-metal.toml", Some(profile), &[]));
    }
    g.finish();
}

/// The scenarios beyond the thesis's bare metal that multiply its cost: the
/// SR-IOV paper's testbed with fifteen guests (each with its VF, vCPUs
/// sharing host cores) and the IAPS paper's steering between cores, as
/// their files describe them (their own profiles), 0.05 s simulated.
fn scenarios(c: &mut Criterion) {
    let mut g = c.benchmark_group("scenarios");
    g.sample_size(10);
    bench_run(&mut g, "sriov-15-vms", &scenario("sriov/r630.toml", None, &[("vm.count", "15")]));
    bench_run(&mut g, "iaps-steering", &scenario("iaps/bulk-8core.toml", None, &[]));
    g.finish();
}

/// The project's own generator (a PCG stream): one 128-bit multiply per
/// draw, cheap beside the queue's work.
fn draws() -> impl FnMut() -> u64 {
    let mut rng = <StreamRng as rand::SeedableRng>::seed_from_u64(1);
    move || rand::RngCore::next_u64(&mut rng)
}

/// One pop and one push per step, as a handled event schedules its
/// successor: 19 events pending, in the heap (segment ends 0.3-2 us ahead)
/// and in three lanes at fixed delays (the ring, the wire, a DMA
/// completion).
fn queue(c: &mut Criterion) {
    const STEPS: u64 = 100_000;
    let mut g = c.benchmark_group("event-queue");
    g.throughput(Throughput::Elements(STEPS));
    g.bench_function("pop-push-thesis-mix", |b| {
        b.iter(|| {
            let mut q: EventQueue<u64> = EventQueue::new();
            let mut rand = draws();
            for i in 0..16 {
                q.push(300 + rand() % 1700, i);
            }
            for (lane, delay) in [(0usize, 20_600u64), (1, 20_000), (2, 600)] {
                q.push_fifo(lane, delay, lane as u64);
            }
            let mut sum = 0u64;
            for _ in 0..STEPS {
                let (now, ev) = q.pop().expect("never empty");
                sum = sum.wrapping_add(ev);
                // Half to the heap, half to the lanes, as in the thesis's
                // busy-wait run (three segment ends, three lane events per
                // request).
                match rand() % 6 {
                    0 => q.push_fifo(0, now + 20_600, ev),
                    1 => q.push_fifo(1, now + 20_000, ev),
                    2 => q.push_fifo(2, now + 600, ev),
                    _ => q.push(now + 300 + rand() % 1700, ev),
                }
            }
            sum
        })
    });
    g.finish();
}

/// One pop and one push per step, as the busy-wait thesis run uses the
/// queue now: a segment end per core (8) in the owned slots, three of every
/// four events, each followed by that core's next segment 0.3-2 us ahead;
/// replies in one lane 20 us ahead; 8 NAPI watchdogs far ahead in the heap.
fn queue_owned(c: &mut Criterion) {
    const STEPS: u64 = 100_000;
    const CORES: u64 = 8;
    let mut g = c.benchmark_group("event-queue");
    g.throughput(Throughput::Elements(STEPS));
    g.bench_function("pop-push-owned-mix", |b| {
        b.iter(|| {
            let mut q: EventQueue<u64> = EventQueue::new();
            q.set_owners(CORES as usize);
            let mut rand = draws();
            for core in 0..CORES {
                q.push_owned(core as usize, 300 + rand() % 1700, core);
                q.push(1_000_000_000 + core, 100 + core);
            }
            for i in 0..20 {
                q.push_fifo(1, 1_000 * i, 1_000);
            }
            let mut sum = 0u64;
            for _ in 0..STEPS {
                let (now, ev) = q.pop().expect("never empty");
                sum = sum.wrapping_add(ev);
                if ev < CORES {
                    q.push_owned(ev as usize, now + 300 + rand() % 1700, ev);
                } else {
                    // A reply reached its client; the next one leaves a
                    // segment end later.
                    q.push_fifo(1, now + 20_000, ev);
                }
            }
            sum
        })
    });
    g.finish();
}

criterion_group!(benches, thesis, scenarios, queue, queue_owned);
criterion_main!(benches);
