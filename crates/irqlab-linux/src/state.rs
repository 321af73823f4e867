//! The saved state of a device: what its per-NAPI settings and coalescing
//! were before the first `irqlab linux apply`, so that `restore` can put
//! them back exactly.
//!
//! One JSON file per device in the state directory (`/run/irqlab/`, or
//! `$IRQLAB_STATE_DIR`), named after the device's name, ifindex and network
//! namespace — a veth in one namespace is not the same device as a veth of
//! the same name and index in another. A saved state is never overwritten:
//! a second `apply` keeps the first one's, so `restore` returns to what was
//! there before irqlab touched the device at all.
//!
//! A NAPI is saved with its id and the queues it serves (`queue-get`): ids
//! do not survive a reconfiguration of the device (turning GRO off and on
//! deletes a veth's NAPI and adds a new one, `netif_napi_del()` /
//! `netif_napi_add()`; a driver without per-NAPI config storage does the
//! same on a ring change), but the queues do, so `restore` finds the NAPI
//! now serving a saved NAPI's queues and puts the settings back there.
//!
//! Formats: 1 saved no queues; 2 adds them. Both are read (a format-1
//! NAPI has no queues, as has one of a driver that links none).
//!
//! Besides the settings from before, the file records what irqlab last left
//! each knob at (`applied`: every apply and tune step updates it, with the
//! value read back after the change), so that `restore` can tell a knob
//! changed by hand since and say so before putting the original back. The
//! field is optional and leaves the format at 2: a file written before it
//! existed restores as it always did, without that check, and an irqlab
//! that predates it ignores it (serde skips unknown fields) and restores
//! the file as before.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::change::{Part, Value};
use crate::device::{CoalesceSettings, QueueIds, Snapshot};
use crate::error::Error;

/// The default state directory (a tmpfs: state does not outlive a reboot,
/// and neither do the kernel settings it records).
pub const DEFAULT_STATE_DIR: &str = "/run/irqlab";
/// The environment variable that overrides [`DEFAULT_STATE_DIR`] (tests).
pub const STATE_DIR_ENV: &str = "IRQLAB_STATE_DIR";
/// The version of the file layout below (written); every format from 1 to
/// this one is read.
pub const STATE_FORMAT: u32 = 2;

/// What a device's settings were.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedState {
    pub format: u32,
    pub device: String,
    pub ifindex: u32,
    /// Inode of the network namespace (`/proc/self/ns/net`).
    pub netns: u64,
    /// The profile whose apply saved this state.
    pub profile: String,
    /// Seconds since the Unix epoch.
    pub saved_at: u64,
    pub napis: Vec<SavedNapi>,
    /// `None`: the device has no coalescing.
    pub coalesce: Option<CoalesceSettings>,
    /// What irqlab last left each knob at; `None` in a file written before
    /// irqlab recorded it (then `restore` cannot tell a hand change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<Vec<AppliedKnob>>,
}

/// One knob as the last apply (or tune step) left it: the value read back
/// after the change, on the NAPI of that id (`None` for coalescing).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedKnob {
    pub part: Part,
    pub napi_id: Option<u32>,
    pub knob: String,
    pub value: Value,
}

impl AppliedKnob {
    fn same_knob(&self, other: &AppliedKnob) -> bool {
        (self.part, self.napi_id, self.knob.as_str()) == (other.part, other.napi_id, other.knob.as_str())
    }
}

/// One NAPI's settings; `None` where the kernel did not report the knob.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedNapi {
    pub id: u32,
    /// The queues it served (format 2; empty in format 1, and for a driver
    /// that links no queue to a NAPI).
    #[serde(default)]
    pub queues: QueueIds,
    pub defer_hard_irqs: Option<u32>,
    /// Nanoseconds.
    pub gro_flush_timeout: Option<u64>,
    /// Nanoseconds.
    pub irq_suspend_timeout: Option<u64>,
    /// `enum netdev_napi_threaded` value.
    pub threaded: Option<u32>,
}

impl SavedState {
    pub fn from_snapshot(snapshot: &Snapshot, profile: &str) -> Result<Self, Error> {
        let saved_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Ok(SavedState {
            format: STATE_FORMAT,
            device: snapshot.device.clone(),
            ifindex: snapshot.ifindex,
            netns: current_netns()?,
            profile: profile.to_string(),
            saved_at,
            napis: snapshot
                .napis
                .iter()
                .map(|n| SavedNapi {
                    id: n.id,
                    queues: snapshot.queues_of(n.id),
                    defer_hard_irqs: n.defer_hard_irqs,
                    gro_flush_timeout: n.gro_flush_timeout,
                    irq_suspend_timeout: n.irq_suspend_timeout,
                    threaded: n.threaded.map(|t| t.to_raw()),
                })
                .collect(),
            coalesce: snapshot.coalesce.as_ref().map(CoalesceSettings::from),
            applied: None,
        })
    }
}

/// Where saved states live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateStore {
    dir: PathBuf,
}

impl StateStore {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        StateStore { dir: dir.into() }
    }

    /// `$IRQLAB_STATE_DIR` if set and not empty, else `/run/irqlab`.
    pub fn from_env() -> Self {
        match std::env::var_os(STATE_DIR_ENV) {
            Some(dir) if !dir.is_empty() => StateStore::new(dir),
            _ => StateStore::new(DEFAULT_STATE_DIR),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of device `device` (index `ifindex`) in network namespace `netns`.
    pub fn path(&self, device: &str, ifindex: u32, netns: u64) -> PathBuf {
        self.dir.join(format!("{device}.{ifindex}.netns-{netns}.json"))
    }

    /// Save `state` unless a state is saved for the device already. Returns
    /// the file and whether this call wrote it (false: an earlier state was kept).
    pub fn save_if_absent(&self, state: &SavedState) -> Result<(PathBuf, bool), Error> {
        let path = self.path(&state.device, state.ifindex, state.netns);
        let problem = |what: &str, e: io::Error| Error::State { path: path.clone(), problem: format!("could not be {what}: {e}") };
        if path.exists() {
            return Ok((path, false));
        }
        fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir).map_err(|e| problem("created (its directory)", e))?;
        // Written whole to a temporary file, then linked into place: a reader
        // never sees half a state, and linking fails if another apply got
        // there first, whose state then is the one kept.
        let tmp = self.dir.join(format!(".{}.{}.tmp", state.device, std::process::id()));
        let text = serde_json::to_string_pretty(state).expect("a saved state is plain data");
        let write = || -> io::Result<()> {
            let mut file = fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
            file.write_all(text.as_bytes())?;
            file.write_all(b"\n")?;
            file.sync_all()
        };
        let result = write().and_then(|()| fs::hard_link(&tmp, &path));
        let _ = fs::remove_file(&tmp);
        match result {
            Ok(()) => Ok((path, true)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok((path, false)),
            Err(e) => Err(problem("written", e)),
        }
    }

    /// The state saved for the device, if any.
    pub fn load(&self, device: &str, ifindex: u32, netns: u64) -> Result<Option<(PathBuf, SavedState)>, Error> {
        let path = self.path(device, ifindex, netns);
        let Some(state) = read_state(&path)? else { return Ok(None) };
        if !(1..=STATE_FORMAT).contains(&state.format) || state.device != device || state.ifindex != ifindex {
            return Err(Error::State {
                path,
                problem: format!(
                    "is for device `{}` (ifindex {}, format {}), not for `{device}` (ifindex {ifindex}, a format from 1 to {STATE_FORMAT})",
                    state.device, state.ifindex, state.format
                ),
            });
        }
        Ok(Some((path, state)))
    }

    /// Record in the state file at `path` what irqlab left these knobs at,
    /// replacing an earlier record of the same knob (same part, NAPI and
    /// name) and keeping the rest. The file is rewritten whole and renamed
    /// into place, so a reader sees the old record or the new one.
    pub fn record_applied(&self, path: &Path, knobs: &[AppliedKnob]) -> Result<(), Error> {
        let Some(mut state) = read_state(path)? else {
            return Err(Error::State { path: path.to_path_buf(), problem: "is gone (restored meanwhile?)".into() });
        };
        let record = state.applied.get_or_insert_with(Vec::new);
        for k in knobs {
            match record.iter_mut().find(|r| r.same_knob(k)) {
                Some(r) => r.value = k.value,
                None => record.push(k.clone()),
            }
        }
        let tmp = self.dir.join(format!(".{}.{}.record.tmp", state.device, std::process::id()));
        let text = serde_json::to_string_pretty(&state).expect("a saved state is plain data");
        let write = || -> io::Result<()> {
            let mut file = fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
            file.write_all(text.as_bytes())?;
            file.write_all(b"\n")?;
            file.sync_all()?;
            fs::rename(&tmp, path)
        };
        write().map_err(|e| {
            let _ = fs::remove_file(&tmp);
            Error::State { path: path.to_path_buf(), problem: format!("could not be updated: {e}") }
        })
    }

    pub fn remove(&self, path: &Path) -> Result<(), Error> {
        fs::remove_file(path).map_err(|e| Error::State { path: path.to_path_buf(), problem: format!("could not be removed: {e}") })
    }
}

/// The saved state in `path`, or `None` if there is no such file.
fn read_state(path: &Path) -> Result<Option<SavedState>, Error> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::State { path: path.to_path_buf(), problem: format!("could not be read: {e}") }),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| Error::State { path: path.to_path_buf(), problem: format!("is not a saved state irqlab can read: {e}") })
}

/// The inode of this process's network namespace.
pub fn current_netns() -> Result<u64, Error> {
    let path = Path::new("/proc/self/ns/net");
    fs::metadata(path).map(|m| m.ino()).map_err(|e| Error::State {
        path: path.to_path_buf(),
        problem: format!("(this process's network namespace) could not be read: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(profile: &str) -> SavedState {
        SavedState {
            format: STATE_FORMAT,
            device: "veth0".into(),
            ifindex: 3,
            netns: 4026531840,
            profile: profile.into(),
            saved_at: 1,
            napis: vec![SavedNapi {
                id: 8193,
                queues: QueueIds { rx: vec![0], tx: vec![0] },
                defer_hard_irqs: Some(0),
                gro_flush_timeout: Some(0),
                irq_suspend_timeout: Some(0),
                threaded: Some(0),
            }],
            coalesce: None,
            applied: None,
        }
    }

    fn scratch(name: &str) -> StateStore {
        let dir = std::env::temp_dir().join(format!("irqlab-state-test-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        StateStore::new(dir.join("nested"))
    }

    #[test]
    fn the_first_saved_state_is_kept_and_read_back() {
        let store = scratch("keep");
        let (path, wrote) = store.save_if_absent(&state("busy-wait")).unwrap();
        assert!(wrote);
        let (again, wrote_again) = store.save_if_absent(&state("irq-suspend")).unwrap();
        assert_eq!((again.clone(), wrote_again), (path.clone(), false));
        let (_, loaded) = store.load("veth0", 3, 4026531840).unwrap().unwrap();
        assert_eq!(loaded, state("busy-wait"));
        assert!(store.load("veth0", 4, 4026531840).unwrap().is_none());
        store.remove(&path).unwrap();
        assert!(store.load("veth0", 3, 4026531840).unwrap().is_none());
        let _ = fs::remove_dir_all(store.dir().parent().unwrap());
    }

    #[test]
    fn a_format_1_file_is_read_with_no_queues() {
        // As irqlab wrote it before NAPIs were saved with their queues.
        let store = scratch("format1");
        fs::create_dir_all(store.dir()).unwrap();
        let text = r#"{"format": 1, "device": "veth0", "ifindex": 3, "netns": 1, "profile": "irq-suspend",
            "saved_at": 1, "napis": [{"id": 258, "defer_hard_irqs": 0, "gro_flush_timeout": 0,
            "irq_suspend_timeout": 0, "threaded": 0}], "coalesce": null}"#;
        fs::write(store.path("veth0", 3, 1), text).unwrap();
        let (_, loaded) = store.load("veth0", 3, 1).unwrap().unwrap();
        assert_eq!(loaded.format, 1);
        assert_eq!(loaded.napis[0].id, 258);
        assert!(loaded.napis[0].queues.is_empty());
        fs::write(store.path("veth0", 3, 1), text.replace("\"format\": 1", "\"format\": 3")).unwrap();
        let err = store.load("veth0", 3, 1).unwrap_err().to_string();
        assert!(err.contains("format 3") && err.contains("a format from 1 to 2"), "{err}");
        let _ = fs::remove_dir_all(store.dir().parent().unwrap());
    }

    fn applied(napi_id: Option<u32>, knob: &str, value: Value) -> AppliedKnob {
        let part = if napi_id.is_some() { Part::Napi } else { Part::Coalesce };
        AppliedKnob { part, napi_id, knob: knob.into(), value }
    }

    #[test]
    fn what_apply_set_is_recorded_beside_the_original_and_updated_by_later_applies() {
        let store = scratch("applied");
        let (path, _) = store.save_if_absent(&state("irq-suspend")).unwrap();
        let (_, loaded) = store.load("veth0", 3, 4026531840).unwrap().unwrap();
        assert_eq!(loaded.applied, None);
        store
            .record_applied(&path, &[applied(Some(8193), "gro_flush_timeout", Value::Int(20_000)), applied(None, "adaptive-rx", Value::Bool(true))])
            .unwrap();
        // A later apply (or tune step) replaces the value of the same knob and keeps the others.
        store.record_applied(&path, &[applied(Some(8193), "gro_flush_timeout", Value::Int(5_000_000))]).unwrap();
        let (_, loaded) = store.load("veth0", 3, 4026531840).unwrap().unwrap();
        assert_eq!(
            loaded.applied.unwrap(),
            vec![applied(Some(8193), "gro_flush_timeout", Value::Int(5_000_000)), applied(None, "adaptive-rx", Value::Bool(true))]
        );
        // The original settings are untouched by the record.
        assert_eq!((loaded.profile.as_str(), loaded.napis.clone()), ("irq-suspend", state("irq-suspend").napis));
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"applied\"") && text.contains("\"format\": 2"), "{text}");
        let _ = fs::remove_dir_all(store.dir().parent().unwrap());
    }

    #[test]
    fn a_file_without_the_record_reads_as_before_and_an_older_reader_ignores_it() {
        // As irqlab wrote format 2 before it recorded what apply set.
        let store = scratch("norecord");
        fs::create_dir_all(store.dir()).unwrap();
        let text = r#"{"format": 2, "device": "veth0", "ifindex": 3, "netns": 1, "profile": "busy-wait",
            "saved_at": 1, "napis": [{"id": 258, "queues": {"rx": [0], "tx": [0]}, "defer_hard_irqs": 0,
            "gro_flush_timeout": 0, "irq_suspend_timeout": 0, "threaded": 0}], "coalesce": null}"#;
        fs::write(store.path("veth0", 3, 1), text).unwrap();
        let (path, loaded) = store.load("veth0", 3, 1).unwrap().unwrap();
        assert_eq!(loaded.applied, None);
        assert_eq!(loaded.napis[0].id, 258);
        // Recording into it adds the field and changes nothing else.
        store.record_applied(&path, &[applied(Some(258), "defer_hard_irqs", Value::Int(100))]).unwrap();
        let (_, again) = store.load("veth0", 3, 1).unwrap().unwrap();
        assert_eq!(SavedState { applied: None, ..again.clone() }, loaded);
        assert_eq!(again.applied.unwrap().len(), 1);
        // A reader of the layout without `applied` (the fields up to
        // `coalesce`, as irqlab had them) still reads the new file.
        #[derive(Deserialize)]
        #[allow(dead_code)]
        struct Older {
            format: u32,
            device: String,
            ifindex: u32,
            netns: u64,
            profile: String,
            saved_at: u64,
            napis: Vec<SavedNapi>,
            coalesce: Option<CoalesceSettings>,
        }
        let older: Older = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!((older.format, older.napis.len()), (2, 1));
        let _ = fs::remove_dir_all(store.dir().parent().unwrap());
    }

    #[test]
    fn a_corrupt_state_file_is_an_error_naming_the_file() {
        let store = scratch("corrupt");
        fs::create_dir_all(store.dir()).unwrap();
        let path = store.path("veth0", 3, 1);
        fs::write(&path, "{not json").unwrap();
        let err = store.load("veth0", 3, 1).unwrap_err().to_string();
        assert!(err.contains(&path.display().to_string()) && err.contains("not a saved state"), "{err}");
        let _ = fs::remove_dir_all(store.dir().parent().unwrap());
    }
}
