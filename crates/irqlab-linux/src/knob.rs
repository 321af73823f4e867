//! One knob set to one value: what `irqlab linux tune` changes at each step.
//! A [`Plan`] like a profile's, so [`crate::apply_in`] saves the device's
//! settings before the first change and [`crate::restore`] puts them back.
//! Only the device named is touched, and only this knob of it.

use crate::apply::Plan;
use crate::change::{coalesce_knob, napi_knob, Change, Part, Value, NAPI_KNOBS};
use crate::device::{resolve, Snapshot};
use crate::error::Error;
use crate::ops::Kernel;

/// The knobs a step may set, with the largest value the kernel takes (the
/// knob table's `kernel` range, `irqlab_knobs::tunable`): `defer-hard-irqs`
/// is an s32 in `napi-set`'s policy; the timeouts are nanoseconds the kernel
/// turns into a `ktime_t` (s64); `rx-usecs` and `rx-frames` are u32 (the
/// driver may refuse less).
pub fn tunable() -> Vec<(&'static str, u64)> {
    irqlab_knobs::tunable()
}

/// The plan that sets `knob` to `value` on `device` (every NAPI, or only `napi`).
pub fn plan_knob(device: &str, knob: &str, value: u64, napi: Option<u32>) -> Result<Plan, Error> {
    check(knob, value)?;
    let ifindex = resolve(device)?;
    let mut kernel = Kernel::open()?;
    let snapshot = Snapshot::read(&mut kernel, device, ifindex)?;
    plan_knob_from(&snapshot, knob, value, napi)
}

fn check(knob: &str, value: u64) -> Result<(), Error> {
    // The one switch a profile sets, 0 or 1: not searched by a tuner, but set
    // back to what `irqlab linux exec --napi-dev` found over an earlier apply
    // (issue 62, item 3).
    if knob == irqlab_knobs::table::ADAPTIVE_RX.linux() {
        return if value <= 1 { Ok(()) } else { Err(Error::KnobRange { knob: knob.to_string(), value, max: 1 }) };
    }
    let tunable = tunable();
    let accepted = || tunable.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ");
    let Some(&(_, max)) = tunable.iter().find(|(k, _)| *k == knob) else {
        return Err(Error::UnknownKnob { name: knob.to_string(), accepted: accepted() });
    };
    if value > max {
        return Err(Error::KnobRange { knob: knob.to_string(), value, max });
    }
    Ok(())
}

/// [`plan_knob`] on the device as `snapshot` saw it.
pub fn plan_knob_from(snapshot: &Snapshot, knob: &str, value: u64, napi: Option<u32>) -> Result<Plan, Error> {
    check(knob, value)?;
    let device = &snapshot.device;
    let mut plan = Plan {
        device: device.clone(),
        ifindex: snapshot.ifindex,
        profile: format!("tune {knob}"),
        napi,
        changes: Vec::new(),
        unchanged: Vec::new(),
        skipped: Vec::new(),
    };
    let mut record = |change: Change| {
        if change.from == change.to {
            plan.unchanged.push(change);
        } else {
            plan.changes.push(change);
        }
    };
    if let Some(k) = napi_knob(knob).filter(|k| NAPI_KNOBS.iter().any(|n| n.name == k.name)) {
        if snapshot.napis.is_empty() {
            return Err(Error::NoNapi { device: device.clone() });
        }
        let napis: Vec<_> = snapshot.napis.iter().filter(|n| napi.is_none_or(|id| n.id == id)).collect();
        if napis.is_empty() {
            let ids = snapshot.napis.iter().map(|n| n.id.to_string()).collect::<Vec<_>>().join(", ");
            return Err(Error::UnknownNapi { device: device.clone(), id: napi.unwrap_or(0), ids: format!("its NAPIs: {ids}") });
        }
        for n in napis {
            let Some(from) = (k.current)(n) else {
                return Err(Error::KernelTooOld {
                    what: format!("reports no per-NAPI {} in napi-get", knob.replace('_', "-")),
                    purpose: "tune it",
                });
            };
            record(Change { part: Part::Napi, napi_id: Some(n.id), knob: k.name, from: Value::Int(from), to: Value::Int(value) });
        }
    } else {
        let k = coalesce_knob(knob).expect("every tunable knob is a NAPI or a coalescing knob");
        let Some(from) = snapshot.coalesce.as_ref().and_then(|c| (k.get)(c)) else {
            return Err(Error::KnobUnsupported { device: device.clone(), knob: knob.to_string() });
        };
        let to = if matches!(from, Value::Bool(_)) { Value::Bool(value != 0) } else { Value::Int(value) };
        record(Change { part: Part::Coalesce, napi_id: None, knob: k.name, from, to });
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netlink::ethtool::Coalesce;
    use crate::netlink::netdev::Napi;

    /// `apply`'s test NAPI with a gro_flush_timeout of 20 µs.
    fn napi(id: u32, suspend: Option<u64>) -> Napi {
        Napi { gro_flush_timeout: Some(20_000), ..crate::apply::tests::napi(id, suspend) }
    }

    fn device(napis: Vec<Napi>, coalesce: Option<Coalesce>) -> Snapshot {
        Snapshot { device: "eth9".into(), ..crate::apply::tests::veth(napis, coalesce) }
    }

    #[test]
    fn a_per_napi_knob_changes_on_every_napi_or_the_one_named() {
        let d = device(vec![napi(1, Some(0)), napi(2, Some(0))], None);
        let p = plan_knob_from(&d, "gro_flush_timeout", 50_000, None).unwrap();
        assert_eq!(p.changes.len(), 2);
        assert_eq!(p.changes[0].from, Value::Int(20_000));
        assert_eq!(p.changes[1].to, Value::Int(50_000));
        let p = plan_knob_from(&d, "gro_flush_timeout", 20_000, Some(2)).unwrap();
        assert!(p.changes.is_empty() && p.unchanged.len() == 1 && p.unchanged[0].napi_id == Some(2));
        assert!(matches!(plan_knob_from(&d, "gro_flush_timeout", 1, Some(7)), Err(Error::UnknownNapi { id: 7, .. })));
    }

    #[test]
    fn a_coalescing_knob_needs_the_driver_to_take_it() {
        let c = Coalesce { rx_usecs: Some(8), ..Coalesce::default() };
        let d = device(vec![napi(1, Some(0))], Some(c));
        let p = plan_knob_from(&d, "rx-usecs", 32, None).unwrap();
        assert_eq!((p.changes[0].part, p.changes[0].from, p.changes[0].to), (Part::Coalesce, Value::Int(8), Value::Int(32)));
        let err = plan_knob_from(&d, "rx-frames", 32, None).unwrap_err().to_string();
        assert!(err.contains("rx-frames") && err.contains("eth9"), "{err}");
        let err = plan_knob_from(&device(vec![], None), "rx-usecs", 1, None).unwrap_err().to_string();
        assert!(err.contains("does not accept"), "{err}");
        // adaptive-rx, a switch: 0 or 1, planned as off or on.
        let c = Coalesce { use_adaptive_rx: Some(false), ..Coalesce::default() };
        let d = device(vec![napi(1, Some(0))], Some(c));
        let p = plan_knob_from(&d, "adaptive-rx", 1, None).unwrap();
        assert_eq!((p.changes[0].from, p.changes[0].to), (Value::Bool(false), Value::Bool(true)));
        assert!(plan_knob_from(&d, "adaptive-rx", 0, None).unwrap().changes.is_empty());
        assert!(plan_knob_from(&d, "adaptive-rx", 2, None).unwrap_err().to_string().contains("adaptive-rx"));
    }

    #[test]
    fn unknown_knobs_ranges_and_missing_kernel_features_are_refused_in_one_sentence() {
        let d = device(vec![napi(1, None)], None);
        let err = plan_knob_from(&d, "busy_poll", 1, None).unwrap_err().to_string();
        assert!(err.contains("busy_poll") && err.contains("defer_hard_irqs, gro_flush_timeout"), "{err}");
        let err = plan_knob_from(&d, "defer_hard_irqs", 1 << 31, None).unwrap_err().to_string();
        assert!(err.contains("2147483647"), "{err}");
        // The knob table's one range for the timeouts: up to S64_MAX ns.
        let err = plan_knob_from(&d, "irq_suspend_timeout", 1 << 63, None).unwrap_err().to_string();
        assert!(err.contains("9223372036854775807"), "{err}");
        let err = plan_knob_from(&d, "irq_suspend_timeout", 5, None).unwrap_err().to_string();
        assert!(err.contains("irq-suspend-timeout"), "{err}");
        assert!(matches!(plan_knob_from(&device(vec![], None), "defer_hard_irqs", 1, None), Err(Error::NoNapi { .. })));
    }
}
