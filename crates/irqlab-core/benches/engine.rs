//! Simulated events per wall second on the thesis bare-metal scenario.
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use irqlab_core::Scenario;

fn thesis(c: &mut Criterion) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/thesis/bare-metal.toml");
    let mut g = c.benchmark_group("thesis-bare-metal");
    g.sample_size(10);
    for profile in ["no-coalescing", "irq-suspend"] {
        let mut s = Scenario::from_path(std::path::Path::new(path)).expect("scenario");
        s.set_profile(profile).unwrap();
        s.set("run.duration_s", "0.05").unwrap();
        s.set("run.warmup_s", "0.01").unwrap();
        let events = irqlab_core::run(&s).unwrap().sim_events;
        g.throughput(Throughput::Elements(events));
        g.bench_function(profile, |b| b.iter(|| irqlab_core::run(&s).unwrap()));
    }
    g.finish();
}

criterion_group!(benches, thesis);
criterion_main!(benches);
