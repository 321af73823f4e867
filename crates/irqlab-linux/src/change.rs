//! The vocabulary of a plan, an apply and a restore: which knob of which
//! part of a device goes from what to what, and which were skipped and why.
//! Knobs carry the kernel's and ethtool's names (`defer_hard_irqs`,
//! `gro_flush_timeout` and `irq_suspend_timeout` in ns; `adaptive-rx`,
//! `rx-usecs` in µs, `rx-frames`). Each knob also has the name a profile
//! gives it (its scenario field, what `irqlab profiles` lists:
//! `napi.napi_defer_hard_irqs`, `coalesce.rx-frames`), which the text output
//! uses, so that one knob has one name wherever a profile is shown, applied
//! or restored. Both names are the knob table's (`irqlab_knobs::KNOBS`:
//! `linux_name` and `path`).

use irqlab_knobs::table as knob;
use serde::{Deserialize, Serialize};

use crate::netlink::ethtool::Coalesce;
use crate::netlink::netdev::{Napi, NapiSet, NapiThreaded};
use crate::state::SavedNapi;

/// A knob's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    Bool(bool),
    Int(u64),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Bool(true) => f.write_str("on"),
            Value::Bool(false) => f.write_str("off"),
            Value::Int(n) => write!(f, "{n}"),
        }
    }
}

/// Which part of the device a knob belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Part {
    /// A per-NAPI setting (`napi-set`).
    Napi,
    /// The device's coalescing (`coalesce-set`).
    Coalesce,
}

/// One knob that changes (or would, or did not need to).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Change {
    pub part: Part,
    /// The NAPI, for a per-NAPI knob.
    pub napi_id: Option<u32>,
    pub knob: &'static str,
    pub from: Value,
    pub to: Value,
}

/// One knob that was left alone because it cannot be set here.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Skip {
    pub part: Part,
    pub napi_id: Option<u32>,
    pub knob: &'static str,
    /// The value that was wanted.
    pub to: Value,
    /// Why, e.g. "not supported by this device".
    pub reason: String,
}

/// The reason given for coalescing a device does not have.
pub const NOT_SUPPORTED_BY_DEVICE: &str = "not supported by this device";

/// A per-NAPI knob: how to read it from a reply or a saved state and how to
/// ask for it in a `napi-set`.
pub struct NapiKnob {
    pub name: &'static str,
    /// The scenario field a profile sets it through.
    pub field: &'static str,
    pub current: fn(&Napi) -> Option<u64>,
    pub saved: fn(&SavedNapi) -> Option<u64>,
    pub set: fn(&mut NapiSet, u64),
}

/// The per-NAPI knobs a profile sets (`napi-set`, Linux 6.13).
pub const NAPI_KNOBS: [NapiKnob; 3] = [
    NapiKnob {
        name: knob::DEFER_HARD_IRQS.linux(),
        field: knob::DEFER_HARD_IRQS.path,
        current: |n| n.defer_hard_irqs.map(u64::from),
        saved: |s| s.defer_hard_irqs.map(u64::from),
        // Profile and saved values come from u32 fields.
        set: |r, v| r.defer_hard_irqs = Some(v as u32),
    },
    NapiKnob {
        name: knob::GRO_FLUSH_TIMEOUT.linux(),
        field: knob::GRO_FLUSH_TIMEOUT.path,
        current: |n| n.gro_flush_timeout,
        saved: |s| s.gro_flush_timeout,
        set: |r, v| r.gro_flush_timeout = Some(v),
    },
    NapiKnob {
        name: knob::IRQ_SUSPEND_TIMEOUT.linux(),
        field: knob::IRQ_SUSPEND_TIMEOUT.path,
        current: |n| n.irq_suspend_timeout,
        saved: |s| s.irq_suspend_timeout,
        set: |r, v| r.irq_suspend_timeout = Some(v),
    },
];

/// Per-NAPI `threaded`: never set by a profile, but put back by `restore`
/// if it changed since the state was saved.
pub const THREADED: NapiKnob = NapiKnob {
    name: "threaded",
    field: "napi.threaded",
    current: |n| n.threaded.map(|t| u64::from(t.to_raw())),
    saved: |s| s.threaded.map(u64::from),
    set: |r, v| r.threaded = Some(NapiThreaded::from_raw(v as u32)),
};

/// A coalescing knob (ethtool `-C` name).
pub struct CoalesceKnob {
    pub name: &'static str,
    /// The scenario field a profile sets it through.
    pub field: &'static str,
    pub get: fn(&Coalesce) -> Option<Value>,
    pub set: fn(&mut Coalesce, Value),
}

fn as_bool(v: Value) -> bool {
    matches!(v, Value::Bool(true)) || matches!(v, Value::Int(n) if n != 0)
}

fn as_u32(v: Value) -> u32 {
    match v {
        Value::Bool(b) => u32::from(b),
        Value::Int(n) => u32::try_from(n).unwrap_or(u32::MAX),
    }
}

/// The coalescing knobs a profile sets.
pub const COALESCE_KNOBS: [CoalesceKnob; 3] = [
    CoalesceKnob {
        name: knob::ADAPTIVE_RX.linux(),
        field: knob::ADAPTIVE_RX.path,
        get: |c| c.use_adaptive_rx.map(Value::Bool),
        set: |c, v| c.use_adaptive_rx = Some(as_bool(v)),
    },
    CoalesceKnob {
        name: knob::RX_USECS.linux(),
        field: knob::RX_USECS.path,
        get: |c| c.rx_usecs.map(|n| Value::Int(n.into())),
        set: |c, v| c.rx_usecs = Some(as_u32(v)),
    },
    CoalesceKnob {
        name: knob::RX_FRAMES.linux(),
        field: knob::RX_FRAMES.path,
        get: |c| c.rx_max_frames.map(|n| Value::Int(n.into())),
        set: |c, v| c.rx_max_frames = Some(as_u32(v)),
    },
];

/// Find a knob's definition by name.
pub fn napi_knob(name: &str) -> Option<&'static NapiKnob> {
    NAPI_KNOBS.iter().chain(std::iter::once(&THREADED)).find(|k| k.name == name)
}

pub fn coalesce_knob(name: &str) -> Option<&'static CoalesceKnob> {
    COALESCE_KNOBS.iter().find(|k| k.name == name)
}

/// Every knob's kernel (or ethtool) name and the scenario field a profile
/// names it by, per-NAPI knobs first (`threaded` last of those: no profile
/// sets it; `napi.threaded` is the scenario's field of the same meaning).
pub fn profile_fields() -> Vec<(&'static str, &'static str)> {
    let napi = NAPI_KNOBS.iter().chain(std::iter::once(&THREADED)).map(|k| (k.name, k.field));
    napi.chain(COALESCE_KNOBS.iter().map(|k| (k.name, k.field))).collect()
}

/// The `napi-set` requests that make `changes` (one per NAPI, in the order
/// the NAPIs first appear).
pub fn napi_requests(changes: &[Change]) -> Vec<NapiSet> {
    let mut requests: Vec<NapiSet> = Vec::new();
    for c in changes.iter().filter(|c| c.part == Part::Napi) {
        let (Some(id), Some(knob), Value::Int(to)) = (c.napi_id, napi_knob(c.knob), c.to) else { continue };
        let index = match requests.iter().position(|r| r.id == id) {
            Some(i) => i,
            None => {
                requests.push(NapiSet { id, ..NapiSet::default() });
                requests.len() - 1
            }
        };
        (knob.set)(&mut requests[index], to);
    }
    requests
}

/// The `coalesce-set` parameters that make `changes` (empty if none).
pub fn coalesce_request(changes: &[Change]) -> Coalesce {
    let mut params = Coalesce::default();
    for c in changes.iter().filter(|c| c.part == Part::Coalesce) {
        if let Some(knob) = coalesce_knob(c.knob) {
            (knob.set)(&mut params, c.to);
        }
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_grouped_into_one_request_per_napi_and_one_for_coalescing() {
        let napi = |id, knob, to| Change { part: Part::Napi, napi_id: Some(id), knob, from: Value::Int(0), to: Value::Int(to) };
        let changes = vec![
            napi(8193, "defer_hard_irqs", 100),
            napi(8194, "defer_hard_irqs", 100),
            napi(8193, "gro_flush_timeout", 20_000),
            Change { part: Part::Coalesce, napi_id: None, knob: "adaptive-rx", from: Value::Bool(false), to: Value::Bool(true) },
            Change { part: Part::Coalesce, napi_id: None, knob: "rx-usecs", from: Value::Int(0), to: Value::Int(8) },
        ];
        let requests = napi_requests(&changes);
        assert_eq!(
            requests,
            vec![
                NapiSet { id: 8193, defer_hard_irqs: Some(100), gro_flush_timeout: Some(20_000), ..NapiSet::default() },
                NapiSet { id: 8194, defer_hard_irqs: Some(100), ..NapiSet::default() },
            ]
        );
        assert_eq!(
            coalesce_request(&changes),
            Coalesce { use_adaptive_rx: Some(true), rx_usecs: Some(8), ..Coalesce::default() }
        );
        assert_eq!(serde_json::to_value(&changes[3]).unwrap()["to"], serde_json::json!(true));
    }

    #[test]
    fn every_knob_a_profile_sets_is_named_as_the_profile_names_it() {
        use irqlab_knobs::Profile;
        // `irqlab profiles` lists Profile::settings' fields; apply and
        // restore name a knob by the same field.
        for profile in Profile::ALL {
            let fields: Vec<&str> = profile.settings().iter().map(|(k, _)| k.path).collect();
            for (name, field) in profile_fields().into_iter().filter(|(n, _)| *n != "threaded") {
                assert!(fields.contains(&field), "{name} is set as {field}, which profile {} does not list", profile.name());
            }
        }
        assert_eq!(profile_fields()[0], ("defer_hard_irqs", "napi.napi_defer_hard_irqs"));
        assert!(profile_fields().contains(&("rx-frames", "coalesce.rx-frames")));
    }
}
