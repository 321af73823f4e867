//! The interrupt-handling profiles. A profile is a set of knob values; both
//! the knobs and the profiles are declared once, in `crates/irqlab-knobs`
//! (shared with the real-kernel tools, which need not build the simulator
//! to know them), and re-exported here. What is the simulator's own is how
//! a profile becomes scenario overrides.

pub use irqlab_knobs::profile::{Coalesce, EpollParams, PerNapi, Profile, ProfileKnobs};
use irqlab_knobs::Value;

/// The knobs `profile` sets as scenario overrides, in the table's order.
pub(crate) fn overrides(profile: Profile) -> Vec<(&'static str, toml::Value)> {
    profile
        .settings()
        .into_iter()
        .map(|(knob, value)| {
            let v = match value {
                Value::Bool(b) => toml::Value::Boolean(b),
                // Every knob's range ends at or below i64::MAX (the table's
                // KTIME_NS is the widest), so the cast is exact.
                Value::Int(n) => toml::Value::Integer(n as i64),
            };
            (knob.path, v)
        })
        .collect()
}
