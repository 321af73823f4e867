//! `irqlab linux apply`: plan what a profile changes on one device, then do
//! it, saving the device's previous settings first.
//!
//! A profile (`irqlab_knobs::Profile::knobs`) sets per-NAPI
//! `defer_hard_irqs`, `gro_flush_timeout` and `irq_suspend_timeout` and the
//! device's `adaptive-rx`, `rx-usecs` and `rx-frames`. What the device or the
//! kernel cannot do is skipped and said so; what makes the profile
//! meaningless (no per-NAPI configuration at all, or no IRQ suspension for
//! the irq-suspend and kernel-polling profiles) is an error. Only the device named is touched.
//!
//! After the changes, the state file also records what each knob reads back
//! ([`crate::state::AppliedKnob`]), so that `restore` can tell a knob changed
//! by hand since.

use std::path::PathBuf;

use irqlab_knobs::Profile;
use serde::Serialize;

use crate::change::{
    coalesce_request, napi_requests, Change, Part, Skip, Value, COALESCE_KNOBS, NAPI_KNOBS, NOT_SUPPORTED_BY_DEVICE,
};
use crate::device::{resolve, Snapshot};
use crate::error::Error;
use crate::ops::Kernel;
use crate::privilege::require_net_admin;
use crate::state::{AppliedKnob, DeviceKey, SavedState, StateStore};

/// What applying a profile to a device would change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Plan {
    pub device: String,
    pub ifindex: u32,
    pub profile: String,
    /// The one NAPI whose settings change, or `None` for all of them.
    pub napi: Option<u32>,
    /// Knobs that change.
    pub changes: Vec<Change>,
    /// Knobs already at the profile's value.
    pub unchanged: Vec<Change>,
    /// Knobs left alone because the device or kernel cannot set them.
    pub skipped: Vec<Skip>,
}

/// What `apply` did (or, for a dry run, would do).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ApplyReport {
    pub device: String,
    pub ifindex: u32,
    pub profile: String,
    pub napi: Option<u32>,
    /// True: nothing was touched, `changed` is what would change.
    pub dry_run: bool,
    pub changed: Vec<Change>,
    pub unchanged: Vec<Change>,
    pub skipped: Vec<Skip>,
    /// The saved previous state (`None` in a dry run).
    pub state_file: Option<PathBuf>,
    /// True when an earlier apply's saved state was kept rather than
    /// replaced (so `restore` returns to the settings before that one).
    pub state_kept: bool,
    /// Settings that read back differently from what was set (a driver
    /// rounding a value, say).
    pub warnings: Vec<String>,
}

/// The plan for applying `profile` to `device` (all NAPIs, or only `napi`).
pub fn plan(device: &str, profile: &str, napi: Option<u32>) -> Result<Plan, Error> {
    let profile = parse_profile(profile)?;
    let ifindex = resolve(device)?;
    let mut kernel = Kernel::open()?;
    let snapshot = Snapshot::read(&mut kernel, device, ifindex)?;
    plan_from(&snapshot, profile, napi)
}

/// The profile named `name`.
pub fn parse_profile(name: &str) -> Result<Profile, Error> {
    Profile::by_name(name).map_err(|_| Error::UnknownProfile {
        name: name.to_string(),
        accepted: Profile::ALL.map(|p| p.name()).join(", "),
    })
}

/// The plan for `profile` on the device as `snapshot` saw it.
pub fn plan_from(snapshot: &Snapshot, profile: Profile, napi: Option<u32>) -> Result<Plan, Error> {
    let device = &snapshot.device;
    if snapshot.napis.is_empty() {
        return Err(Error::NoNapi { device: device.clone() });
    }
    let napis: Vec<_> = match napi {
        None => snapshot.napis.iter().collect(),
        Some(id) => {
            let found: Vec<_> = snapshot.napis.iter().filter(|n| n.id == id).collect();
            if found.is_empty() {
                let ids = snapshot.napis.iter().map(|n| n.id.to_string()).collect::<Vec<_>>().join(", ");
                return Err(Error::UnknownNapi { device: device.clone(), id, ids: format!("its NAPIs: {ids}") });
            }
            found
        }
    };
    let knobs = profile.knobs();
    let wanted = [
        u64::from(knobs.napi.defer_hard_irqs),
        knobs.napi.gro_flush_timeout_ns,
        knobs.napi.irq_suspend_timeout_ns,
    ];
    let mut plan = Plan {
        device: device.clone(),
        ifindex: snapshot.ifindex,
        profile: profile.name().to_string(),
        napi,
        changes: Vec::new(),
        unchanged: Vec::new(),
        skipped: Vec::new(),
    };

    for n in &napis {
        for (knob, &to) in NAPI_KNOBS.iter().zip(&wanted) {
            let Some(from) = (knob.current)(n) else {
                if knob.name == "irq_suspend_timeout" && to == 0 {
                    // Without the knob the kernel never suspends IRQs, which
                    // is what 0 asks for: nothing is lost.
                    plan.skipped.push(Skip {
                        part: Part::Napi,
                        napi_id: Some(n.id),
                        knob: knob.name,
                        to: Value::Int(to),
                        reason: "not supported by this kernel (Linux 6.13+), which never suspends IRQs anyway".into(),
                    });
                    continue;
                }
                return Err(missing_knob(knob.name, profile));
            };
            let change = Change { part: Part::Napi, napi_id: Some(n.id), knob: knob.name, from: Value::Int(from), to: Value::Int(to) };
            if from == to {
                plan.unchanged.push(change);
            } else {
                plan.changes.push(change);
            }
        }
    }

    let coalesce_wanted = [
        Value::Bool(knobs.coalesce.adaptive_rx),
        Value::Int(knobs.coalesce.rx_usecs.into()),
        Value::Int(knobs.coalesce.rx_frames.into()),
    ];
    for (knob, &to) in COALESCE_KNOBS.iter().zip(&coalesce_wanted) {
        let current = snapshot.coalesce.as_ref().and_then(|c| (knob.get)(c));
        match current {
            None => plan.skipped.push(Skip {
                part: Part::Coalesce,
                napi_id: None,
                knob: knob.name,
                to,
                reason: NOT_SUPPORTED_BY_DEVICE.into(),
            }),
            Some(from) => {
                let change = Change { part: Part::Coalesce, napi_id: None, knob: knob.name, from, to };
                if from == to {
                    plan.unchanged.push(change);
                } else {
                    plan.changes.push(change);
                }
            }
        }
    }
    Ok(plan)
}

fn missing_knob(knob: &str, profile: Profile) -> Error {
    if knob == "irq_suspend_timeout" {
        Error::KernelTooOld {
            what: "reports no irq-suspend-timeout in napi-get (no IRQ suspension)".into(),
            purpose: match profile {
                Profile::IrqSuspend => "apply profile irq-suspend",
                Profile::KernelPolling => "apply profile kernel-polling",
                _ => "set irq_suspend_timeout",
            },
        }
    } else {
        Error::KernelTooOld {
            what: format!("reports no per-NAPI {} in napi-get (no per-NAPI configuration)", knob.replace('_', "-")),
            purpose: "set per-NAPI settings",
        }
    }
}

/// The report of a dry run: what `plan` would change, nothing touched.
pub fn dry_run(plan: &Plan) -> ApplyReport {
    ApplyReport {
        device: plan.device.clone(),
        ifindex: plan.ifindex,
        profile: plan.profile.clone(),
        napi: plan.napi,
        dry_run: true,
        changed: plan.changes.clone(),
        unchanged: plan.unchanged.clone(),
        skipped: plan.skipped.clone(),
        state_file: None,
        state_kept: false,
        warnings: Vec::new(),
    }
}

/// Make the changes of `plan`, saving the device's state first in the
/// default state directory (`$IRQLAB_STATE_DIR` or `/run/irqlab`).
pub fn apply(plan: &Plan) -> Result<ApplyReport, Error> {
    apply_in(plan, &StateStore::from_env())
}

/// [`apply`] with the state saved in `store`.
pub fn apply_in(plan: &Plan, store: &StateStore) -> Result<ApplyReport, Error> {
    require_net_admin("irqlab linux apply")?;
    let device = plan.device.as_str();
    let ifindex = resolve(device)?;
    if ifindex != plan.ifindex {
        return Err(Error::Changed {
            device: device.to_string(),
            what: format!("its ifindex went from {} to {ifindex}", plan.ifindex),
        });
    }
    let key = DeviceKey::current(device, ifindex)?;
    let mut kernel = Kernel::open()?;
    let before = Snapshot::read(&mut kernel, device, ifindex)?;
    let (state_file, wrote) = store.save_if_absent(&SavedState::from_snapshot(&before, &plan.profile, &key))?;
    let partial = |e: Error| Error::Partial { source: Box::new(e), state: state_file.clone(), device: device.to_string() };

    // What this apply left each knob at, for `restore` to tell a hand change
    // later: the knobs already at the profile's value, and each change once
    // the kernel took it (a failure half way records the half that was made).
    let mut made: Vec<&Change> = plan.unchanged.iter().collect();
    let mut outcome = Ok(());
    for request in napi_requests(&plan.changes) {
        let id = request.id;
        if let Err(e) = kernel.napi_set(request, device) {
            outcome = Err(e);
            break;
        }
        made.extend(plan.changes.iter().filter(|c| c.part == Part::Napi && c.napi_id == Some(id)));
    }
    let coalesce = coalesce_request(&plan.changes);
    if outcome.is_ok() && !coalesce.is_empty() {
        outcome = kernel.coalesce_set(ifindex, device, coalesce);
        if outcome.is_ok() {
            made.extend(plan.changes.iter().filter(|c| c.part == Part::Coalesce));
        }
    }
    let after = match outcome {
        Ok(()) => Snapshot::read(&mut kernel, device, ifindex),
        Err(e) => Err(e),
    };
    let recorded = store.record_applied(&state_file, &applied_knobs(after.as_ref().ok(), &made));
    let after = after.map_err(partial)?;
    let mut warnings = read_back_mismatches(&after, &plan.changes);
    if let Err(e) = recorded {
        warnings.push(format!("{e}, so `irqlab linux restore {device}` cannot tell a knob changed by hand since"));
    }
    Ok(ApplyReport {
        device: device.to_string(),
        ifindex,
        profile: plan.profile.clone(),
        napi: plan.napi,
        dry_run: false,
        changed: plan.changes.clone(),
        unchanged: plan.unchanged.clone(),
        skipped: plan.skipped.clone(),
        state_file: Some(state_file.clone()),
        state_kept: !wrote,
        warnings,
    })
}

/// The record of `made` for the state file: each knob's value as `after`
/// reads it back (a driver may round what it was given), else as asked.
fn applied_knobs(after: Option<&Snapshot>, made: &[&Change]) -> Vec<AppliedKnob> {
    made.iter()
        .map(|c| AppliedKnob {
            part: c.part,
            napi_id: c.napi_id,
            knob: c.knob.to_string(),
            value: after.and_then(|a| current_value(a, c)).unwrap_or(c.to),
        })
        .collect()
}

/// The value `snapshot` reports for the knob of `c` (on its NAPI).
pub(crate) fn current_value(snapshot: &Snapshot, c: &Change) -> Option<Value> {
    match c.part {
        Part::Napi => {
            let napi = snapshot.napis.iter().find(|n| Some(n.id) == c.napi_id);
            let knob = crate::change::napi_knob(c.knob);
            napi.zip(knob).and_then(|(n, k)| (k.current)(n)).map(Value::Int)
        }
        Part::Coalesce => {
            let knob = crate::change::coalesce_knob(c.knob);
            snapshot.coalesce.as_ref().zip(knob).and_then(|(co, k)| (k.get)(co))
        }
    }
}

/// For every change, a sentence if the device now reports something else.
pub(crate) fn read_back_mismatches(after: &Snapshot, changes: &[Change]) -> Vec<String> {
    let mut warnings = Vec::new();
    for c in changes {
        let now = current_value(after, c);
        if now != Some(c.to) {
            let target = match c.napi_id {
                Some(id) => format!("NAPI {id}"),
                None => format!("device `{}`", after.device),
            };
            let now = now.map_or_else(|| "nothing".to_string(), |v| v.to_string());
            warnings.push(format!("{} of {target} was set to {} but reads back as {now}", c.knob, c.to));
        }
    }
    warnings
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::netlink::ethtool::Coalesce;
    use crate::netlink::netdev::{Napi, NapiThreaded};

    pub(crate) fn napi(id: u32, suspend: Option<u64>) -> Napi {
        Napi {
            id,
            ifindex: 3,
            irq: None,
            threaded: Some(NapiThreaded::Disabled),
            pid: None,
            defer_hard_irqs: Some(0),
            irq_suspend_timeout: suspend,
            gro_flush_timeout: Some(0),
            other: Vec::new(),
        }
    }

    pub(crate) fn veth(napis: Vec<Napi>, coalesce: Option<Coalesce>) -> Snapshot {
        Snapshot { device: "veth0".into(), ifindex: 3, napis, queues: Vec::new(), coalesce, coalesce_params: Vec::new() }
    }

    #[test]
    fn irq_suspend_on_a_veth_changes_the_napi_and_skips_coalescing() {
        let plan = plan_from(&veth(vec![napi(8193, Some(0))], None), Profile::IrqSuspend, None).unwrap();
        let changed: Vec<_> = plan.changes.iter().map(|c| (c.napi_id, c.knob, c.to)).collect();
        assert_eq!(
            changed,
            vec![
                (Some(8193), "defer_hard_irqs", Value::Int(100)),
                (Some(8193), "gro_flush_timeout", Value::Int(20_000)),
                (Some(8193), "irq_suspend_timeout", Value::Int(20_000_000)),
            ]
        );
        let skipped: Vec<_> = plan.skipped.iter().map(|s| (s.knob, s.reason.as_str())).collect();
        assert_eq!(
            skipped,
            vec![
                ("adaptive-rx", NOT_SUPPORTED_BY_DEVICE),
                ("rx-usecs", NOT_SUPPORTED_BY_DEVICE),
                ("rx-frames", NOT_SUPPORTED_BY_DEVICE)
            ]
        );
    }

    #[test]
    fn knobs_already_at_the_profile_value_are_unchanged_and_unreported_coalescing_is_skipped() {
        let coalesce = Coalesce { use_adaptive_rx: Some(false), rx_usecs: Some(1), ..Coalesce::default() };
        let plan = plan_from(&veth(vec![napi(8193, Some(0))], Some(coalesce)), Profile::NoCoalescing, None).unwrap();
        assert!(plan.changes.is_empty(), "{:?}", plan.changes);
        assert_eq!(plan.unchanged.len(), 5);
        assert_eq!(plan.skipped.len(), 1);
        assert_eq!((plan.skipped[0].knob, plan.skipped[0].to), ("rx-frames", Value::Int(128)));
    }

    #[test]
    fn one_napi_can_be_chosen_and_an_unknown_one_is_an_error() {
        let snapshot = veth(vec![napi(8193, Some(0)), napi(8194, Some(0))], None);
        let plan = plan_from(&snapshot, Profile::BusyWait, Some(8194)).unwrap();
        assert!(plan.changes.iter().all(|c| c.napi_id == Some(8194)));
        let err = plan_from(&snapshot, Profile::BusyWait, Some(1)).unwrap_err().to_string();
        assert_eq!(err, "NAPI 1 is not one of device `veth0`'s NAPIs (its NAPIs: 8193, 8194)");
    }

    #[test]
    fn a_device_without_napi_is_an_error() {
        let err = plan_from(&veth(vec![], None), Profile::BusyWait, None).unwrap_err();
        assert!(matches!(err, Error::NoNapi { .. }), "{err}");
    }

    #[test]
    fn a_kernel_without_irq_suspension_skips_a_zero_but_refuses_the_irq_suspend_profile() {
        let old = veth(vec![napi(8193, None)], None);
        let plan = plan_from(&old, Profile::BusyWait, None).unwrap();
        assert!(plan.skipped.iter().any(|s| s.knob == "irq_suspend_timeout" && s.reason.contains("not supported by this kernel")));
        let err = plan_from(&old, Profile::IrqSuspend, None).unwrap_err().to_string();
        assert_eq!(
            err,
            "this kernel reports no irq-suspend-timeout in napi-get (no IRQ suspension), so irqlab cannot \
             apply profile irq-suspend (Linux 6.13 or later is needed)"
        );
        let mut older = napi(8193, None);
        older.defer_hard_irqs = None;
        let err = plan_from(&veth(vec![older], None), Profile::NoCoalescing, None).unwrap_err();
        assert!(err.to_string().contains("no per-NAPI defer-hard-irqs"), "{err}");
    }

    #[test]
    fn unknown_profiles_list_the_accepted_ones() {
        assert_eq!(
            parse_profile("fast").unwrap_err().to_string(),
            "profile `fast` is unknown; accepted: no-coalescing, adaptive-coalescing, busy-wait, irq-suspend, \
             irq-batching, kernel-polling"
        );
    }

    #[test]
    fn irq_batching_sets_deferral_and_coalescing_like_the_others() {
        let coalesce = Coalesce { use_adaptive_rx: Some(false), rx_usecs: Some(1), rx_max_frames: Some(128), ..Coalesce::default() };
        let plan = plan_from(&veth(vec![napi(8193, Some(0))], Some(coalesce)), Profile::IrqBatching, None).unwrap();
        let changed: Vec<_> = plan.changes.iter().map(|c| (c.knob, c.to)).collect();
        assert_eq!(
            changed,
            vec![
                ("defer_hard_irqs", Value::Int(100)),
                ("gro_flush_timeout", Value::Int(20_000)),
                ("adaptive-rx", Value::Bool(true)),
                ("rx-usecs", Value::Int(8)),
            ]
        );
        let unchanged: Vec<_> = plan.unchanged.iter().map(|c| (c.knob, c.to)).collect();
        assert_eq!(unchanged, vec![("irq_suspend_timeout", Value::Int(0)), ("rx-frames", Value::Int(128))]);
        // A kernel without IRQ suspension can still take it: the 0 is skipped.
        let plan = plan_from(&veth(vec![napi(8193, None)], None), Profile::IrqBatching, None).unwrap();
        assert!(plan.skipped.iter().any(|s| s.knob == "irq_suspend_timeout"));
    }

    #[test]
    fn kernel_polling_suspends_irqs_without_deferral_and_needs_irq_suspension() {
        let plan = plan_from(&veth(vec![napi(8193, Some(0))], None), Profile::KernelPolling, None).unwrap();
        let changed: Vec<_> = plan.changes.iter().map(|c| (c.knob, c.to)).collect();
        assert_eq!(changed, vec![("irq_suspend_timeout", Value::Int(20_000_000))]);
        let err = plan_from(&veth(vec![napi(8193, None)], None), Profile::KernelPolling, None).unwrap_err().to_string();
        assert_eq!(
            err,
            "this kernel reports no irq-suspend-timeout in napi-get (no IRQ suspension), so irqlab cannot \
             apply profile kernel-polling (Linux 6.13 or later is needed)"
        );
    }
}
