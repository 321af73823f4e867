//! `irqlab linux restore`: put back the settings saved by the first
//! `apply` — the per-NAPI knobs a profile sets (and `threaded`, should it
//! have changed) and the coalescing knobs it sets — then forget the saved
//! state. Knobs already at their saved value are left alone.
//!
//! Which NAPI gets a saved NAPI's settings back ([`targets`]): the NAPI of
//! the same id while it exists; otherwise the NAPI now serving the queues it
//! served. Ids do not survive a reconfiguration: turning GRO off and on
//! deletes a veth's NAPI and adds a new one with a new id
//! (`veth_napi_del()`/`veth_napi_add()` → `netif_napi_del()`/`netif_napi_add()`,
//! which takes the next id in `napi_hash_add()`), and the new NAPI keeps
//! whatever `irq_suspend_timeout` was left in its memory, since
//! `netif_napi_add_weight_locked()` resets only `defer_hard_irqs` and
//! `gro_flush_timeout` (to the device-wide values). A driver that links no
//! queue to its NAPIs (veth: no `netif_queue_set_napi()`) leaves one case
//! that can still be decided: a device that had one NAPI and has one now,
//! which serves the device's queues as the old one did.
//!
//! Settings that have nowhere to go are not forgotten: what can be put back
//! is, the saved state is kept, and restore fails naming what it could not
//! restore ([`Error::RestoreIncomplete`]).
//!
//! A knob changed by hand since irqlab last set it (`ethtool -C`, a sysfs
//! write, another tool's `napi-set`) is restored all the same, since restore
//! means "as before irqlab", but not silently: each one is reported in
//! [`RestoreReport::changed_since_apply`] with the value irqlab left, the
//! value now and the value restored. That needs the state file's record of
//! what apply set ([`crate::state::AppliedKnob`]); a file written before
//! irqlab kept one restores without the check. The check is made only on a
//! NAPI of the id the record names: a NAPI that replaced it (a new id) starts
//! from the device-wide defaults the kernel gives a new NAPI, which is no
//! hand change, and `replaced` already says so.

use std::path::PathBuf;

use serde::Serialize;

use crate::apply::read_back_mismatches;
use crate::change::{
    coalesce_request, napi_requests, Change, Part, Skip, Value, COALESCE_KNOBS, NAPI_KNOBS, THREADED,
};
use crate::device::{resolve, CoalesceSettings, QueueIds, Snapshot};
use crate::error::Error;
use crate::netlink::ethtool::Coalesce;
use crate::ops::Kernel;
use crate::privilege::require_net_admin;
use crate::state::{AppliedKnob, DeviceKey, SavedNapi, StateStore};

/// What `restore` did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RestoreReport {
    pub device: String,
    pub ifindex: u32,
    /// The state file that was restored and removed (kept when
    /// `unrestored` is not empty).
    pub state_file: PathBuf,
    /// The profile whose apply saved the state.
    pub profile: String,
    /// Knobs set back (`from` now, `to` saved), on the NAPI now in place.
    pub restored: Vec<Change>,
    /// Knobs already at their saved value.
    pub unchanged: Vec<Change>,
    /// Saved knobs that could not be put back.
    pub skipped: Vec<Skip>,
    /// Saved NAPIs that no longer exist, and the NAPI that took each one's
    /// place and got its settings.
    pub replaced: Vec<Replacement>,
    /// Saved NAPIs whose settings had nowhere to go (then `restore` fails
    /// with [`Error::RestoreIncomplete`] and the state is kept).
    pub unrestored: Vec<Unrestored>,
    /// Knobs found at another value than irqlab last left them at: changed
    /// by hand since apply, and restored (or already back) all the same.
    pub changed_since_apply: Vec<HandChange>,
    pub warnings: Vec<String>,
}

/// A knob someone changed since irqlab last set it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HandChange {
    pub part: Part,
    pub napi_id: Option<u32>,
    pub knob: &'static str,
    /// What irqlab left it at (read back after the last apply or tune step).
    pub applied: Value,
    /// What it is now.
    pub now: Value,
    /// What restore puts back: the value from before the first apply.
    pub restoring: Value,
}

/// A saved NAPI that is gone, and the NAPI that got its settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Replacement {
    /// The id the settings were saved under.
    pub saved_napi_id: u32,
    /// The NAPI that now serves its queues.
    pub napi_id: u32,
    /// The queues they share (empty when the driver links none).
    pub queues: QueueIds,
    /// How the NAPI was found, e.g. "it now serves rx 0 tx 0".
    pub because: String,
}

/// A saved NAPI whose settings could not be put back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unrestored {
    pub saved_napi_id: u32,
    /// The queues it served, as saved.
    pub queues: QueueIds,
    pub reason: String,
}

/// Where each saved NAPI's settings go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Targets {
    /// (index into the saved NAPIs, id of the NAPI now in place): the
    /// changes to make, one entry per NAPI now.
    pub to: Vec<(usize, u32)>,
    pub replaced: Vec<Replacement>,
    pub unrestored: Vec<Unrestored>,
}

fn same_settings(a: &SavedNapi, b: &SavedNapi) -> bool {
    (a.defer_hard_irqs, a.gro_flush_timeout, a.irq_suspend_timeout, a.threaded)
        == (b.defer_hard_irqs, b.gro_flush_timeout, b.irq_suspend_timeout, b.threaded)
}

/// The queues both `a` and `b` hold.
fn shared(a: &QueueIds, b: &QueueIds) -> QueueIds {
    QueueIds {
        rx: a.rx.iter().copied().filter(|q| b.rx.contains(q)).collect(),
        tx: a.tx.iter().copied().filter(|q| b.tx.contains(q)).collect(),
    }
}

/// Match the saved NAPIs to the device's NAPIs now: by id, else by the
/// queues they serve, else (no queue known) the device's only NAPI when it
/// had only one; a NAPI now gets the settings of one saved NAPI only (two
/// saved NAPIs whose queues one NAPI now serves must have saved the same
/// settings, or the second is unrestored). `queues_saved`: the state's
/// format records queues (2 and later; format 1 did not).
pub fn targets(saved: &[SavedNapi], now: &Snapshot, queues_saved: bool) -> Targets {
    let device = &now.device;
    let exists = |id: u32| now.napis.iter().any(|n| n.id == id);
    let mut t = Targets::default();
    // NAPI now → index of the saved NAPI whose settings it gets.
    let mut owner: Vec<(u32, usize)> = Vec::new();
    for (i, s) in saved.iter().enumerate() {
        if exists(s.id) {
            t.to.push((i, s.id));
            owner.push((s.id, i));
        }
    }
    for (i, s) in saved.iter().enumerate() {
        if exists(s.id) {
            continue;
        }
        let mut unrestored = |reason: String| {
            t.unrestored.push(Unrestored { saved_napi_id: s.id, queues: s.queues.clone(), reason });
        };
        let candidates: Vec<(u32, QueueIds, String)> = if now.napis.is_empty() {
            unrestored(format!("device `{device}` has no NAPI now (a veth has one only while GRO is on)"));
            continue;
        } else if !s.queues.is_empty() {
            now.napis
                .iter()
                .filter_map(|n| {
                    let q = shared(&now.queues_of(n.id), &s.queues);
                    (!q.is_empty()).then(|| {
                        let because = format!("it now serves {q}");
                        (n.id, q, because)
                    })
                })
                .collect()
        } else if saved.len() == 1 && now.napis.len() == 1 {
            let because = format!(
                "it is device `{device}`'s only NAPI now, as NAPI {} was (the driver links no queue to a NAPI)",
                s.id
            );
            vec![(now.napis[0].id, QueueIds::default(), because)]
        } else {
            let why = if queues_saved {
                "the driver links no queue to a NAPI"
            } else {
                "the state was saved by an irqlab that did not record them, format 1"
            };
            unrestored(format!(
                "irqlab does not know which queues it served ({why}), so it cannot tell which of device \
                 `{device}`'s {} NAPIs took its place",
                now.napis.len()
            ));
            continue;
        };
        if candidates.is_empty() {
            unrestored(format!("no NAPI of device `{device}` serves its queues ({}) now", s.queues));
            continue;
        }
        let mut conflicts = Vec::new();
        for (id, queues, because) in candidates {
            match owner.iter().find(|(o, _)| *o == id) {
                Some(&(_, j)) if !same_settings(&saved[j], s) => conflicts.push(format!(
                    "NAPI {id}, which now serves its queues {queues}, gets the different saved settings of NAPI {}",
                    saved[j].id
                )),
                // Another saved NAPI with the same settings put them there already.
                Some(_) => t.replaced.push(Replacement { saved_napi_id: s.id, napi_id: id, queues, because }),
                None => {
                    owner.push((id, i));
                    t.to.push((i, id));
                    t.replaced.push(Replacement { saved_napi_id: s.id, napi_id: id, queues, because });
                }
            }
        }
        if !conflicts.is_empty() {
            unrestored(conflicts.join(", and "));
        }
    }
    t
}

/// One clause per unrestored NAPI, for [`Error::RestoreIncomplete`].
fn describe(unrestored: &[Unrestored]) -> String {
    unrestored
        .iter()
        .map(|u| {
            let queues = if u.queues.is_empty() { String::new() } else { format!(" (queues {})", u.queues) };
            format!("the saved settings of NAPI {}{queues} have nowhere to go, as {}", u.saved_napi_id, u.reason)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Restore `device` from the default state directory.
pub fn restore(device: &str) -> Result<RestoreReport, Error> {
    restore_in(device, &StateStore::from_env())
}

/// [`restore`] from `store`.
pub fn restore_in(device: &str, store: &StateStore) -> Result<RestoreReport, Error> {
    require_net_admin("irqlab linux restore")?;
    let ifindex = resolve(device)?;
    let Some((state_file, saved)) = store.load(&DeviceKey::current(device, ifindex)?)? else {
        return Err(Error::NoSavedState { device: device.to_string(), dir: store.dir().to_path_buf() });
    };
    let mut kernel = Kernel::open()?;
    let now = Snapshot::read(&mut kernel, device, ifindex)?;
    let mut report = RestoreReport {
        device: device.to_string(),
        ifindex,
        state_file: state_file.clone(),
        profile: saved.profile.clone(),
        restored: Vec::new(),
        unchanged: Vec::new(),
        skipped: Vec::new(),
        replaced: Vec::new(),
        unrestored: Vec::new(),
        changed_since_apply: Vec::new(),
        warnings: Vec::new(),
    };

    let targets = targets(&saved.napis, &now, saved.format >= 2);
    for &(i, napi_id) in &targets.to {
        let s = &saved.napis[i];
        let current = now.napis.iter().find(|n| n.id == napi_id);
        for knob in NAPI_KNOBS.iter().chain(std::iter::once(&THREADED)) {
            let Some(to) = (knob.saved)(s) else { continue };
            let (part, napi_id, name) = (Part::Napi, Some(napi_id), knob.name);
            match current.and_then(|n| (knob.current)(n)) {
                Some(from) => {
                    let change = Change { part, napi_id, knob: name, from: Value::Int(from), to: Value::Int(to) };
                    if from == to {
                        report.unchanged.push(change);
                    } else {
                        report.restored.push(change);
                    }
                }
                None => report.skipped.push(Skip {
                    part,
                    napi_id,
                    knob: name,
                    to: Value::Int(to),
                    reason: "no longer reported by the kernel".to_string(),
                }),
            }
        }
    }
    report.replaced = targets.replaced;
    report.unrestored = targets.unrestored;

    if let Some(saved_coalesce) = saved.coalesce {
        let saved_params = coalesce_from_settings(&saved_coalesce);
        for knob in &COALESCE_KNOBS {
            let Some(to) = (knob.get)(&saved_params) else { continue };
            match now.coalesce.as_ref().and_then(|c| (knob.get)(c)) {
                Some(from) => {
                    let change = Change { part: Part::Coalesce, napi_id: None, knob: knob.name, from, to };
                    if from == to {
                        report.unchanged.push(change);
                    } else {
                        report.restored.push(change);
                    }
                }
                None => report.skipped.push(Skip {
                    part: Part::Coalesce,
                    napi_id: None,
                    knob: knob.name,
                    to,
                    reason: "no longer reported by the device".into(),
                }),
            }
        }
    }

    if let Some(applied) = &saved.applied {
        report.changed_since_apply = changed_since_apply(applied, &report.restored, &report.unchanged);
    }

    for request in napi_requests(&report.restored) {
        kernel.napi_set(request, device)?;
    }
    let coalesce = coalesce_request(&report.restored);
    if !coalesce.is_empty() {
        kernel.coalesce_set(ifindex, device, coalesce)?;
    }
    let after = Snapshot::read(&mut kernel, device, ifindex)?;
    report.warnings = read_back_mismatches(&after, &report.restored);
    if !report.unrestored.is_empty() {
        // Keep the saved state: it is the only record of those settings.
        return Err(Error::RestoreIncomplete {
            device: device.to_string(),
            what: describe(&report.unrestored),
            state: state_file,
            report: Box::new(report),
        });
    }
    store.remove(&state_file)?;
    Ok(report)
}

/// What `restore --forget` did: the saved states of a device it deleted
/// without restoring anything.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ForgetReport {
    pub device: String,
    pub ifindex: u32,
    pub forgotten: Vec<Forgotten>,
}

/// One deleted state file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Forgotten {
    pub state_file: PathBuf,
    /// The profile whose apply saved it (`None`: the file could not be read).
    pub profile: Option<String>,
    /// Seconds since the Unix epoch.
    pub saved_at: Option<u64>,
}

/// Forget the saved state of `device` in the default state directory.
pub fn forget(device: &str) -> Result<ForgetReport, Error> {
    forget_in(device, &StateStore::from_env())
}

/// Delete the states saved for `device` in this namespace from `store`,
/// whoever's they are (a state refused as not this device's included),
/// leaving the device as it is. No state is an error, as for `restore`.
pub fn forget_in(device: &str, store: &StateStore) -> Result<ForgetReport, Error> {
    let ifindex = resolve(device)?;
    let gone = store.forget(&DeviceKey::current(device, ifindex)?)?;
    if gone.is_empty() {
        return Err(Error::NoSavedState { device: device.to_string(), dir: store.dir().to_path_buf() });
    }
    let forgotten = gone
        .into_iter()
        .map(|(state_file, state)| Forgotten {
            state_file,
            profile: state.as_ref().map(|s| s.profile.clone()),
            saved_at: state.map(|s| s.saved_at),
        })
        .collect();
    Ok(ForgetReport { device: device.to_string(), ifindex, forgotten })
}

/// The knobs of `restored` and `unchanged` (their `from` is the value now)
/// whose value is not the one `applied` recorded for the same NAPI id and
/// knob. Knobs without a record (never set by irqlab, or a NAPI id the
/// record does not name) are not judged.
pub fn changed_since_apply(applied: &[AppliedKnob], restored: &[Change], unchanged: &[Change]) -> Vec<HandChange> {
    restored
        .iter()
        .chain(unchanged)
        .filter_map(|c| {
            let record = applied.iter().find(|a| (a.part, a.napi_id, a.knob.as_str()) == (c.part, c.napi_id, c.knob))?;
            (record.value != c.from).then_some(HandChange {
                part: c.part,
                napi_id: c.napi_id,
                knob: c.knob,
                applied: record.value,
                now: c.from,
                restoring: c.to,
            })
        })
        .collect()
}

fn coalesce_from_settings(s: &CoalesceSettings) -> Coalesce {
    Coalesce {
        rx_usecs: s.rx_usecs,
        rx_max_frames: s.rx_frames,
        tx_usecs: s.tx_usecs,
        tx_max_frames: s.tx_frames,
        use_adaptive_rx: s.adaptive_rx,
        use_adaptive_tx: s.adaptive_tx,
        use_cqe_mode_tx: s.cqe_mode_tx,
        use_cqe_mode_rx: s.cqe_mode_rx,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netlink::netdev::{Napi, NapiThreaded, Queue, QueueType};

    fn saved(id: u32, rx: &[u32], defer: u32) -> SavedNapi {
        SavedNapi {
            id,
            queues: QueueIds { rx: rx.to_vec(), tx: rx.to_vec() },
            defer_hard_irqs: Some(defer),
            gro_flush_timeout: Some(0),
            irq_suspend_timeout: Some(0),
            threaded: Some(0),
        }
    }

    fn napi(id: u32) -> Napi {
        Napi {
            id,
            ifindex: 3,
            irq: None,
            threaded: Some(NapiThreaded::Disabled),
            pid: None,
            defer_hard_irqs: Some(100),
            irq_suspend_timeout: Some(20_000_000),
            gro_flush_timeout: Some(20_000),
            other: Vec::new(),
        }
    }

    /// A device whose NAPIs serve the given rx and tx queues (`queue-get`);
    /// `None`: the driver links no queue to a NAPI (veth).
    fn device(napis: &[(u32, Option<&[u32]>)]) -> Snapshot {
        let mut queues = Vec::new();
        for &(id, served) in napis {
            for &q in served.unwrap_or(&[]) {
                for kind in [QueueType::Rx, QueueType::Tx] {
                    queues.push(Queue { id: q, kind, ifindex: 3, napi_id: Some(id), other: Vec::new() });
                }
            }
        }
        if napis.iter().all(|(_, served)| served.is_none()) {
            queues.push(Queue { id: 0, kind: QueueType::Rx, ifindex: 3, napi_id: None, other: Vec::new() });
        }
        Snapshot {
            device: "eth1".into(),
            ifindex: 3,
            napis: napis.iter().map(|&(id, _)| napi(id)).collect(),
            queues,
            coalesce: None,
            coalesce_params: Vec::new(),
        }
    }

    fn ids(t: &Targets) -> Vec<(u32, u32)> {
        t.replaced.iter().map(|r| (r.saved_napi_id, r.napi_id)).collect()
    }

    #[test]
    fn a_napi_that_still_exists_gets_its_own_settings() {
        let t = targets(&[saved(8193, &[0], 0)], &device(&[(8193, Some(&[0])), (8194, Some(&[1]))]), true);
        assert_eq!(t.to, vec![(0, 8193)]);
        assert!(t.replaced.is_empty() && t.unrestored.is_empty());
    }

    #[test]
    fn a_replaced_napi_is_found_by_the_queues_it_served() {
        // The device was reconfigured: new ids, queues served in another order.
        let old = [saved(8193, &[0], 1), saved(8194, &[1], 2)];
        let t = targets(&old, &device(&[(9000, Some(&[1])), (9001, Some(&[0]))]), true);
        assert_eq!(t.to, vec![(0, 9001), (1, 9000)]);
        assert_eq!(ids(&t), vec![(8193, 9001), (8194, 9000)]);
        assert_eq!(t.replaced[0].queues, QueueIds { rx: vec![0], tx: vec![0] });
        assert_eq!(t.replaced[0].because, "it now serves rx 0 tx 0");
        assert!(t.unrestored.is_empty());
    }

    #[test]
    fn a_veth_whose_gro_was_toggled_gets_its_settings_on_its_new_napi() {
        // veth links no queue to its NAPI; it had one and has one.
        let mut old = saved(258, &[], 0);
        old.queues = QueueIds::default();
        let t = targets(&[old.clone()], &device(&[(259, None)]), true);
        assert_eq!(t.to, vec![(0, 259)]);
        assert_eq!(ids(&t), vec![(258, 259)]);
        assert!(t.replaced[0].because.contains("only NAPI now, as NAPI 258 was"), "{}", t.replaced[0].because);

        // Several NAPIs and no queue to tell them apart: nowhere to go.
        let mut other = saved(260, &[], 0);
        other.queues = QueueIds::default();
        let t = targets(&[old.clone(), other], &device(&[(300, None), (301, None)]), true);
        assert!(t.to.is_empty());
        assert_eq!(t.unrestored.len(), 2);
        assert!(t.unrestored[0].reason.contains("cannot tell which of device `eth1`'s 2 NAPIs"), "{}", t.unrestored[0].reason);

        // GRO off: no NAPI at all.
        let t = targets(&[old], &device(&[]), true);
        assert!(t.to.is_empty());
        assert!(t.unrestored[0].reason.contains("has no NAPI now"), "{:?}", t.unrestored);
    }

    #[test]
    fn settings_whose_queues_are_gone_or_taken_by_other_settings_are_unrestored() {
        let old = [saved(8193, &[0], 1), saved(8194, &[1], 2)];
        // One queue pair left.
        let t = targets(&old, &device(&[(9000, Some(&[0]))]), true);
        assert_eq!(t.to, vec![(0, 9000)]);
        assert_eq!(t.unrestored.len(), 1);
        assert_eq!(t.unrestored[0].saved_napi_id, 8194);
        assert_eq!(t.unrestored[0].reason, "no NAPI of device `eth1` serves its queues (rx 1 tx 1) now");
        // One NAPI now serves both pairs: the two saved settings differ.
        let t = targets(&old, &device(&[(9000, Some(&[0, 1]))]), true);
        assert_eq!(t.to, vec![(0, 9000)]);
        assert!(t.unrestored[0].reason.contains("gets the different saved settings of NAPI 8193"), "{:?}", t.unrestored);
        // ... unless they are the same.
        let same = [saved(8193, &[0], 1), saved(8194, &[1], 1)];
        let t = targets(&same, &device(&[(9000, Some(&[0, 1]))]), true);
        assert_eq!(t.to, vec![(0, 9000)]);
        assert_eq!(ids(&t), vec![(8193, 9000), (8194, 9000)]);
        assert!(t.unrestored.is_empty());
    }

    #[test]
    fn a_knob_changed_by_hand_since_apply_is_reported_and_still_restored() {
        let napi = |id, knob, from, to| Change { part: Part::Napi, napi_id: Some(id), knob, from: Value::Int(from), to: Value::Int(to) };
        let record = |id: Option<u32>, knob: &str, value| AppliedKnob {
            part: if id.is_some() { Part::Napi } else { Part::Coalesce },
            napi_id: id,
            knob: knob.into(),
            value,
        };
        let applied = vec![
            record(Some(12), "defer_hard_irqs", Value::Int(100)),
            record(Some(12), "gro_flush_timeout", Value::Int(20_000)),
            record(Some(12), "irq_suspend_timeout", Value::Int(20_000_000)),
            record(None, "adaptive-rx", Value::Bool(true)),
        ];
        let restored = vec![
            napi(12, "defer_hard_irqs", 100, 0),      // as apply left it
            napi(12, "gro_flush_timeout", 5_000, 0),  // changed by hand
            Change { part: Part::Coalesce, napi_id: None, knob: "adaptive-rx", from: Value::Bool(false), to: Value::Bool(true) },
            napi(13, "gro_flush_timeout", 7, 0),      // a NAPI the record does not name
        ];
        // Set back by hand to the original already: still a change since apply.
        let unchanged = vec![napi(12, "irq_suspend_timeout", 0, 0)];
        let changed = changed_since_apply(&applied, &restored, &unchanged);
        let seen: Vec<_> = changed.iter().map(|h| (h.napi_id, h.knob, h.applied, h.now, h.restoring)).collect();
        assert_eq!(
            seen,
            vec![
                (Some(12), "gro_flush_timeout", Value::Int(20_000), Value::Int(5_000), Value::Int(0)),
                (None, "adaptive-rx", Value::Bool(true), Value::Bool(false), Value::Bool(true)),
                (Some(12), "irq_suspend_timeout", Value::Int(20_000_000), Value::Int(0), Value::Int(0)),
            ]
        );
        // Without a record (a state file from before irqlab kept one) nothing is judged.
        assert!(changed_since_apply(&[], &restored, &unchanged).is_empty());
    }

    #[test]
    fn an_incomplete_restore_is_one_sentence_naming_the_napi_and_the_kept_state() {
        let unrestored = vec![Unrestored {
            saved_napi_id: 258,
            queues: QueueIds::default(),
            reason: "device `veth0` has no NAPI now (a veth has one only while GRO is on)".into(),
        }];
        let report = RestoreReport {
            device: "veth0".into(),
            ifindex: 3,
            state_file: "/run/irqlab/veth0.3.netns-1.json".into(),
            profile: "irq-suspend".into(),
            restored: Vec::new(),
            unchanged: Vec::new(),
            skipped: Vec::new(),
            replaced: Vec::new(),
            unrestored: unrestored.clone(),
            changed_since_apply: Vec::new(),
            warnings: Vec::new(),
        };
        let err = Error::RestoreIncomplete {
            device: "veth0".into(),
            what: describe(&unrestored),
            state: report.state_file.clone(),
            report: Box::new(report),
        };
        assert_eq!(
            err.to_string(),
            "device `veth0` could not be restored in full: the saved settings of NAPI 258 have nowhere to go, as \
             device `veth0` has no NAPI now (a veth has one only while GRO is on); the rest was put back, and the \
             saved state stays in /run/irqlab/veth0.3.netns-1.json for a later `irqlab linux restore veth0`"
        );
    }
}
