//! Same scenario and seed → identical summary (apart from wall time); a
//! different seed → a different run.

mod common;
use common::*;

fn json_without_wall(s: &irqlab_core::Summary) -> String {
    let mut v = serde_json::to_value(s).unwrap();
    v.as_object_mut().unwrap().remove("wall_s");
    v.to_string()
}

const THESIS: &str = include_str!("../../../scenarios/thesis/bare-metal.toml");

#[test]
fn same_seed_same_summary_for_every_profile() {
    for p in ["no-coalescing", "adaptive-coalescing", "busy-wait", "irq-suspend"] {
        let mut s = scenario(THESIS, &["run.duration_s=0.01", "run.warmup_s=0.002"]);
        s.set_profile(p).unwrap();
        let a = irqlab_core::run(&s).unwrap();
        let b = irqlab_core::run(&s).unwrap();
        assert_eq!(json_without_wall(&a), json_without_wall(&b), "{p}");
        s.set("run.seed", "2").unwrap();
        let c = irqlab_core::run(&s).unwrap();
        assert_ne!(json_without_wall(&a), json_without_wall(&c), "{p}: seed must matter");
    }
}

#[test]
fn open_loop_is_deterministic_too() {
    let s = scenario(THESIS, &["run.duration_s=0.01", "load.qps=200000", "load.interarrival=\"fb_ia\""]);
    let a = irqlab_core::run(&s).unwrap();
    let b = irqlab_core::run(&s).unwrap();
    assert_eq!(json_without_wall(&a), json_without_wall(&b));
}
