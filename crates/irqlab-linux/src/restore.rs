//! `irqlab linux restore`: put back the settings saved by the first
//! `apply` — the per-NAPI knobs a profile sets (and `threaded`, should it
//! have changed) and the coalescing knobs it sets — then forget the saved
//! state. Knobs already at their saved value are left alone.

use std::path::PathBuf;

use serde::Serialize;

use crate::apply::read_back_mismatches;
use crate::change::{
    coalesce_request, napi_requests, Change, Part, Skip, Value, COALESCE_KNOBS, NAPI_KNOBS, THREADED,
};
use crate::device::{resolve, CoalesceSettings, Snapshot};
use crate::error::Error;
use crate::netlink::ethtool::Coalesce;
use crate::ops::Kernel;
use crate::privilege::require_net_admin;
use crate::state::{current_netns, StateStore};

/// What `restore` did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RestoreReport {
    pub device: String,
    pub ifindex: u32,
    /// The state file that was restored and removed.
    pub state_file: PathBuf,
    /// The profile whose apply saved the state.
    pub profile: String,
    /// Knobs set back (`from` now, `to` saved).
    pub restored: Vec<Change>,
    /// Knobs already at their saved value.
    pub unchanged: Vec<Change>,
    /// Saved knobs that could not be put back.
    pub skipped: Vec<Skip>,
    pub warnings: Vec<String>,
}

/// Restore `device` from the default state directory.
pub fn restore(device: &str) -> Result<RestoreReport, Error> {
    restore_in(device, &StateStore::from_env())
}

/// [`restore`] from `store`.
pub fn restore_in(device: &str, store: &StateStore) -> Result<RestoreReport, Error> {
    require_net_admin("irqlab linux restore")?;
    let ifindex = resolve(device)?;
    let Some((state_file, saved)) = store.load(device, ifindex, current_netns()?)? else {
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
        warnings: Vec::new(),
    };

    for s in &saved.napis {
        let current = now.napis.iter().find(|n| n.id == s.id);
        for knob in NAPI_KNOBS.iter().chain(std::iter::once(&THREADED)) {
            let Some(to) = (knob.saved)(s) else { continue };
            let (part, napi_id, name) = (Part::Napi, Some(s.id), knob.name);
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
                    reason: match current {
                        None => format!("NAPI {} no longer exists (the device was reconfigured)", s.id),
                        Some(_) => "no longer reported by the kernel".to_string(),
                    },
                }),
            }
        }
    }

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

    for request in napi_requests(&report.restored) {
        kernel.napi_set(request, device)?;
    }
    let coalesce = coalesce_request(&report.restored);
    if !coalesce.is_empty() {
        kernel.coalesce_set(ifindex, device, coalesce)?;
    }
    let after = Snapshot::read(&mut kernel, device, ifindex)?;
    report.warnings = read_back_mismatches(&after, &report.restored);
    store.remove(&state_file)?;
    Ok(report)
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
