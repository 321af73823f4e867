//! The thesis scenario's summaries, kept bit for bit. A refactor of the
//! engine or the model must leave them unchanged; a change that is meant to
//! change them re-blesses the files (`IRQLAB_BLESS=1 cargo test --release
//! --test thesis_golden`) and says so, with old and new values, in its
//! commit. Only the fields present in a golden file are compared, so a new
//! summary field does not break the comparison; `wall_s` is never kept.

mod common;
use common::*;
use std::path::PathBuf;

const THESIS: &str = include_str!("../../../scenarios/thesis/bare-metal.toml");
const PROFILES: [&str; 4] = ["no-coalescing", "adaptive-coalescing", "busy-wait", "irq-suspend"];

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(format!("{name}.json"))
}

fn check(name: &str, overrides: &[&str], profile: &str) {
    let mut s = scenario(THESIS, overrides);
    s.set_profile(profile).unwrap();
    let got = serde_json::to_value(irqlab_core::run(&s).unwrap()).unwrap();
    let mut got = got.as_object().unwrap().clone();
    got.remove("wall_s");
    let path = golden_path(name);
    if std::env::var_os("IRQLAB_BLESS").is_some() {
        std::fs::write(&path, serde_json::to_string_pretty(&got).unwrap() + "\n").unwrap();
        return;
    }
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // Compare text, not parsed numbers: serde_json's default float parsing
    // may be off by one ulp, and bit-identical is the point.
    let want: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text).unwrap();
    let kept: serde_json::Map<String, serde_json::Value> =
        want.keys().map(|k| (k.clone(), got.get(k).cloned().unwrap_or(serde_json::Value::Null))).collect();
    let kept = serde_json::to_string_pretty(&kept).unwrap() + "\n";
    for (g, w) in kept.lines().zip(text.lines()) {
        assert_eq!(g, w, "{name}: differs from {}", path.display());
    }
    assert_eq!(kept, text, "{name}: differs from {}", path.display());
}

#[test]
fn closed_loop_summaries_are_unchanged() {
    for p in PROFILES {
        check(&format!("closed-{p}"), &["run.duration_s=0.1", "run.warmup_s=0.02"], p);
    }
}

#[test]
fn open_loop_summaries_are_unchanged() {
    for p in PROFILES {
        check(&format!("open-300k-{p}"), &["run.duration_s=0.1", "run.warmup_s=0.02", "load.qps=300000"], p);
    }
}
