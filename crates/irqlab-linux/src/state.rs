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
//! What a state is for ([`DeviceKey`], issue 62, item 2): the namespace by
//! its cookie, which the kernel never hands out twice, and the device by its
//! name, ifindex and hardware address ([`crate::identity`]). A state whose
//! namespace or device is not the one asked about is refused, never applied
//! to it: the state directory is shared by every namespace of the host, and
//! a namespace deleted without a restore leaves its file behind.
//!
//! A NAPI is saved with its id and the queues it serves (`queue-get`): ids
//! do not survive a reconfiguration of the device (turning GRO off and on
//! deletes a veth's NAPI and adds a new one, `netif_napi_del()` /
//! `netif_napi_add()`; a driver without per-NAPI config storage does the
//! same on a ring change), but the queues do, so `restore` finds the NAPI
//! now serving a saved NAPI's queues and puts the settings back there.
//!
//! Formats: 1 saved no queues; 2 adds them; 3 adds the namespace's cookie
//! and the device's address, and is named after the cookie
//! (`DEV.IFINDEX.netns-cookie-COOKIE.json`). Formats 1 and 2 were named after
//! the namespace's inode number (`DEV.IFINDEX.netns-INODE.json`), which the
//! kernel gives to a new namespace once the old one is deleted, so such a
//! file is read only where that cannot have happened: in the initial
//! namespace on a kernel that gives it a fixed inode number
//! ([`INITIAL_NETNS_INODE`]), which is never deleted. Elsewhere it is
//! refused with what to do (`irqlab linux restore DEV --forget`).
//!
//! Besides the settings from before, the file records what irqlab last left
//! each knob at (`applied`: every apply and tune step updates it, with the
//! value read back after the change), so that `restore` can tell a knob
//! changed by hand since and say so before putting the original back. The
//! field is optional: a file written before it existed restores as it
//! always did, without that check.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::change::{Part, Value};
use crate::device::{resolve, CoalesceSettings, QueueIds, Snapshot};
use crate::error::Error;
use crate::identity::{device_address, netns_cookie, DeviceAddress};

/// The default state directory (a tmpfs: state does not outlive a reboot,
/// and neither do the kernel settings it records).
pub const DEFAULT_STATE_DIR: &str = "/run/irqlab";
/// The environment variable that overrides [`DEFAULT_STATE_DIR`] (tests).
pub const STATE_DIR_ENV: &str = "IRQLAB_STATE_DIR";
/// The version of the file layout below (written); formats 1 and 2 are
/// read where their namespace can be told (see the module).
pub const STATE_FORMAT: u32 = 3;
/// `PROC_NET_INIT_INO` (include/linux/proc_ns.h): the inode number of the
/// initial network namespace on kernels that fix it (Linux 6.18 does); no
/// other namespace has it, and the initial one is never deleted.
pub const INITIAL_NETNS_INODE: u64 = 0xEFFF_FFF9;

/// What a device's settings were.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedState {
    pub format: u32,
    pub device: String,
    pub ifindex: u32,
    /// Inode of the network namespace (`/proc/self/ns/net`); reused by the
    /// kernel after the namespace is deleted, so only a hint since format 3.
    pub netns: u64,
    /// The namespace's cookie (`SO_NETNS_COOKIE`; format 3, `None` before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns_cookie: Option<u64>,
    /// The device's hardware address (format 3, `None` before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<DeviceAddress>,
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

/// Which device, in which network namespace: what a saved state is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceKey {
    pub device: String,
    pub ifindex: u32,
    /// The namespace's inode number (names the files of formats 1 and 2).
    pub netns: u64,
    /// The namespace's cookie: never given to another namespace.
    pub netns_cookie: u64,
    pub address: DeviceAddress,
}

impl DeviceKey {
    /// Device `device` (resolved to `ifindex`) in this thread's namespace.
    pub fn current(device: &str, ifindex: u32) -> Result<Self, Error> {
        Ok(DeviceKey {
            device: device.to_string(),
            ifindex,
            netns: current_netns()?,
            netns_cookie: netns_cookie()?,
            address: device_address(device)?,
        })
    }
}

impl SavedState {
    /// The state of the device `snapshot` read, for `key` (the same device).
    pub fn from_snapshot(snapshot: &Snapshot, profile: &str, key: &DeviceKey) -> Self {
        let saved_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        SavedState {
            format: STATE_FORMAT,
            device: snapshot.device.clone(),
            ifindex: snapshot.ifindex,
            netns: key.netns,
            netns_cookie: Some(key.netns_cookie),
            address: Some(key.address.clone()),
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
        }
    }

    /// What this state is for (`None` for formats 1 and 2, which do not say).
    pub fn key(&self) -> Option<DeviceKey> {
        Some(DeviceKey {
            device: self.device.clone(),
            ifindex: self.ifindex,
            netns: self.netns,
            netns_cookie: self.netns_cookie?,
            address: self.address.clone()?,
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

    /// The file of the state for `key` (format 3).
    pub fn path(&self, key: &DeviceKey) -> PathBuf {
        self.dir.join(format!("{}.{}.netns-cookie-{}.json", key.device, key.ifindex, key.netns_cookie))
    }

    /// Where formats 1 and 2 kept the state of device `device` (index
    /// `ifindex`) in the namespace of inode `netns`.
    pub fn older_path(&self, device: &str, ifindex: u32, netns: u64) -> PathBuf {
        self.dir.join(format!("{device}.{ifindex}.netns-{netns}.json"))
    }

    /// Save `state` (format 3) unless a state is saved for its device
    /// already. Returns the file and whether this call wrote it (false: an
    /// earlier state was kept). A file found for the device that is not its
    /// own, or whose namespace cannot be told, is an error ([`Self::load`]).
    pub fn save_if_absent(&self, state: &SavedState) -> Result<(PathBuf, bool), Error> {
        let key = state.key().expect("a state to save names its namespace and device (format 3)");
        if let Some((path, _)) = self.load(&key)? {
            return Ok((path, false));
        }
        let path = self.path(&key);
        let problem = |what: &str, e: io::Error| Error::State { path: path.clone(), problem: format!("could not be {what}: {e}") };
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

    /// The state saved for the device of `key`, if any. A file under its
    /// name that is for another namespace or device (another address), and
    /// a file of format 1 or 2 whose namespace cannot be told, are errors
    /// ([`Error::StateNotThisDevice`]) saying what to do.
    pub fn load(&self, key: &DeviceKey) -> Result<Option<(PathBuf, SavedState)>, Error> {
        let path = self.path(key);
        if let Some(state) = read_state(&path)? {
            if state.format != STATE_FORMAT {
                return Err(Error::State {
                    path,
                    problem: format!("has format {}, where a file of this name has format {STATE_FORMAT}", state.format),
                });
            }
            if state.netns_cookie.is_none() || state.address.is_none() {
                return Err(Error::State {
                    path,
                    problem: "is not a saved state irqlab can read: format 3 names the namespace's cookie and the \
                              device's address, and this file does not"
                        .into(),
                });
            }
            if let Some(what) = not_for(&state, key) {
                return Err(Error::StateNotThisDevice { path, device: key.device.clone(), what });
            }
            return Ok(Some((path, state)));
        }
        let path = self.older_path(&key.device, key.ifindex, key.netns);
        let Some(state) = read_state(&path)? else { return Ok(None) };
        if !(1..STATE_FORMAT).contains(&state.format) || state.device != key.device || state.ifindex != key.ifindex {
            return Err(Error::State {
                path,
                problem: format!(
                    "is for device `{}` (ifindex {}, format {}), not for `{}` (ifindex {}, format 1 or 2)",
                    state.device, state.ifindex, state.format, key.device, key.ifindex
                ),
            });
        }
        if key.netns != INITIAL_NETNS_INODE || state.netns != key.netns {
            return Err(Error::StateNotThisDevice {
                path,
                device: key.device.clone(),
                what: format!(
                    "was written by an older irqlab (format {}), which named the network namespace only by its \
                     inode number {}, a number the kernel gives to a new namespace once the old one is deleted, so \
                     irqlab cannot tell whether it was saved for this namespace's `{}`",
                    state.format, state.netns, key.device
                ),
            });
        }
        Ok(Some((path, state)))
    }

    /// Delete every state saved for the device of `key` (format 3, and an
    /// older file under the namespace's inode number), whoever's it is,
    /// without restoring anything; the files removed, each with the state
    /// it held when it could be read.
    pub fn forget(&self, key: &DeviceKey) -> Result<Vec<(PathBuf, Option<SavedState>)>, Error> {
        let mut gone = Vec::new();
        for path in [self.path(key), self.older_path(&key.device, key.ifindex, key.netns)] {
            let state = read_state(&path).ok().flatten();
            match fs::remove_file(&path) {
                Ok(()) => gone.push((path, state)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::State { path, problem: format!("could not be removed: {e}") }),
            }
        }
        Ok(gone)
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

/// Why `state` (format 3, with its cookie and address) is not the state of
/// `key`'s device, if it is not.
fn not_for(state: &SavedState, key: &DeviceKey) -> Option<String> {
    let (cookie, address) = (state.netns_cookie?, state.address.as_ref()?);
    if cookie != key.netns_cookie {
        return Some(format!(
            "was saved in another network namespace (cookie {cookie}, this one's is {})",
            key.netns_cookie
        ));
    }
    if state.device != key.device || state.ifindex != key.ifindex {
        return Some(format!("was saved for device `{}` (ifindex {})", state.device, state.ifindex));
    }
    if *address != key.address {
        return Some(format!(
            "was saved for a device `{}` (ifindex {}) with {}, and this one has {} (another device, or its address \
             changed since; `ip link set {} address ...` gives it back)",
            state.device, state.ifindex, address, key.address, key.device
        ));
    }
    None
}

/// The file of the state saved for device `device` in this namespace, if
/// any; an error for a file that is not its own (see [`StateStore::load`]).
pub fn saved_state_file(device: &str, store: &StateStore) -> Result<Option<PathBuf>, Error> {
    let ifindex = resolve(device)?;
    Ok(store.load(&DeviceKey::current(device, ifindex)?)?.map(|(path, _)| path))
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

    const COOKIE: u64 = 4097;

    fn key() -> DeviceKey {
        DeviceKey {
            device: "veth0".into(),
            ifindex: 3,
            netns: 4026532174,
            netns_cookie: COOKIE,
            address: DeviceAddress { permanent: false, address: "02:00:00:00:00:01".into() },
        }
    }

    fn state(profile: &str) -> SavedState {
        SavedState {
            format: STATE_FORMAT,
            device: "veth0".into(),
            ifindex: 3,
            netns: 4026532174,
            netns_cookie: Some(COOKIE),
            address: Some(key().address),
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
        assert!(path.ends_with(format!("veth0.3.netns-cookie-{COOKIE}.json")), "{}", path.display());
        let (again, wrote_again) = store.save_if_absent(&state("irq-suspend")).unwrap();
        assert_eq!((again.clone(), wrote_again), (path.clone(), false));
        let (_, loaded) = store.load(&key()).unwrap().unwrap();
        assert_eq!(loaded, state("busy-wait"));
        assert!(store.load(&DeviceKey { ifindex: 4, ..key() }).unwrap().is_none());
        store.remove(&path).unwrap();
        assert!(store.load(&key()).unwrap().is_none());
        let _ = fs::remove_dir_all(store.dir().parent().unwrap());
    }

    #[test]
    fn a_namespace_that_reuses_an_inode_number_does_not_see_the_state_of_the_deleted_one() {
        // Issue 62, item 2: namespace A (cookie 4097) is deleted without a
        // restore; B gets A's inode number and a veth of the same name and index.
        let store = scratch("reuse");
        store.save_if_absent(&state("busy-wait")).unwrap();
        let b = DeviceKey {
            netns_cookie: 8193,
            address: DeviceAddress { permanent: false, address: "02:00:00:00:00:02".into() },
            ..key()
        };
        assert!(store.load(&b).unwrap().is_none(), "B has no saved state");
        let mut in_b = state("irq-suspend");
        (in_b.netns_cookie, in_b.address) = (Some(b.netns_cookie), Some(b.address.clone()));
        let (path_b, wrote) = store.save_if_absent(&in_b).unwrap();
        assert!(wrote, "B's apply saves B's state, not A's");
        assert_eq!(store.load(&b).unwrap().unwrap().1.profile, "irq-suspend");

        // A file under B's name that holds another namespace's or device's state is refused.
        let mut moved = state("busy-wait");
        moved.netns_cookie = Some(COOKIE);
        fs::write(&path_b, serde_json::to_string(&moved).unwrap()).unwrap();
        let err = store.load(&b).unwrap_err().to_string();
        assert!(err.contains("another network namespace (cookie 4097, this one's is 8193)"), "{err}");
        assert!(err.contains("`irqlab linux restore veth0 --forget`"), "{err}");
        assert!(store.save_if_absent(&in_b).is_err(), "apply refuses it too, before any change");
        moved.netns_cookie = Some(b.netns_cookie);
        fs::write(&path_b, serde_json::to_string(&moved).unwrap()).unwrap();
        let err = store.load(&b).unwrap_err().to_string();
        assert!(
            err.contains("with address 02:00:00:00:00:01, and this one has address 02:00:00:00:00:02"),
            "{err}"
        );
        // --forget deletes it, whoever's it is.
        let gone = store.forget(&b).unwrap();
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].0, path_b);
        assert!(store.load(&b).unwrap().is_none());
        assert!(store.forget(&b).unwrap().is_empty());
        let _ = fs::remove_dir_all(store.dir().parent().unwrap());
    }

    const FORMAT_1: &str = r#"{"format": 1, "device": "veth0", "ifindex": 3, "netns": NETNS, "profile": "irq-suspend",
            "saved_at": 1, "napis": [{"id": 258, "defer_hard_irqs": 0, "gro_flush_timeout": 0,
            "irq_suspend_timeout": 0, "threaded": 0}], "coalesce": null}"#;

    #[test]
    fn an_older_file_is_read_in_the_initial_namespace_only() {
        // As irqlab wrote it before NAPIs were saved with their queues, and
        // before states were keyed by the namespace's cookie.
        let store = scratch("format1");
        fs::create_dir_all(store.dir()).unwrap();
        let initial = DeviceKey { netns: INITIAL_NETNS_INODE, ..key() };
        let text = FORMAT_1.replace("NETNS", &INITIAL_NETNS_INODE.to_string());
        let older = store.older_path("veth0", 3, INITIAL_NETNS_INODE);
        fs::write(&older, &text).unwrap();
        let (path, loaded) = store.load(&initial).unwrap().unwrap();
        assert_eq!((path, loaded.format, loaded.napis[0].id), (older.clone(), 1, 258));
        assert!(loaded.napis[0].queues.is_empty());
        // Apply keeps it (no format-3 file beside it).
        let mut mine = state("busy-wait");
        mine.netns = INITIAL_NETNS_INODE;
        assert_eq!(store.save_if_absent(&mine).unwrap(), (older.clone(), false));
        fs::write(&older, text.replace("\"format\": 1", "\"format\": 3")).unwrap();
        let err = store.load(&initial).unwrap_err().to_string();
        assert!(err.contains("format 3") && err.contains("format 1 or 2"), "{err}");
        fs::remove_file(&older).unwrap();

        // Any other namespace's inode number may be a deleted namespace's.
        let other = store.older_path("veth0", 3, key().netns);
        fs::write(&other, FORMAT_1.replace("NETNS", &key().netns.to_string())).unwrap();
        let err = store.load(&key()).unwrap_err().to_string();
        assert!(err.contains("older irqlab (format 1)") && err.contains("inode number 4026532174"), "{err}");
        assert!(err.contains("cannot tell whether it was saved for this namespace's `veth0`"), "{err}");
        assert!(store.save_if_absent(&state("busy-wait")).is_err(), "apply does not claim it");
        assert_eq!(store.forget(&key()).unwrap().len(), 1);
        assert!(store.load(&key()).unwrap().is_none());
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
        let (_, loaded) = store.load(&key()).unwrap().unwrap();
        assert_eq!(loaded.applied, None);
        store
            .record_applied(&path, &[applied(Some(8193), "gro_flush_timeout", Value::Int(20_000)), applied(None, "adaptive-rx", Value::Bool(true))])
            .unwrap();
        // A later apply (or tune step) replaces the value of the same knob and keeps the others.
        store.record_applied(&path, &[applied(Some(8193), "gro_flush_timeout", Value::Int(5_000_000))]).unwrap();
        let (_, loaded) = store.load(&key()).unwrap().unwrap();
        assert_eq!(
            loaded.applied.unwrap(),
            vec![applied(Some(8193), "gro_flush_timeout", Value::Int(5_000_000)), applied(None, "adaptive-rx", Value::Bool(true))]
        );
        // The original settings are untouched by the record.
        assert_eq!((loaded.profile.as_str(), loaded.napis.clone()), ("irq-suspend", state("irq-suspend").napis));
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"applied\"") && text.contains("\"format\": 3"), "{text}");
        let _ = fs::remove_dir_all(store.dir().parent().unwrap());
    }

    #[test]
    fn a_file_without_the_record_reads_as_before() {
        // As irqlab wrote format 2 before it recorded what apply set, in the initial namespace.
        let store = scratch("norecord");
        fs::create_dir_all(store.dir()).unwrap();
        let text = r#"{"format": 2, "device": "veth0", "ifindex": 3, "netns": 4026531833, "profile": "busy-wait",
            "saved_at": 1, "napis": [{"id": 258, "queues": {"rx": [0], "tx": [0]}, "defer_hard_irqs": 0,
            "gro_flush_timeout": 0, "irq_suspend_timeout": 0, "threaded": 0}], "coalesce": null}"#;
        fs::write(store.older_path("veth0", 3, INITIAL_NETNS_INODE), text).unwrap();
        let initial = DeviceKey { netns: INITIAL_NETNS_INODE, ..key() };
        let (path, loaded) = store.load(&initial).unwrap().unwrap();
        assert_eq!(loaded.applied, None);
        assert_eq!((loaded.napis[0].id, loaded.netns_cookie), (258, None));
        // Recording into it adds the field and changes nothing else.
        store.record_applied(&path, &[applied(Some(258), "defer_hard_irqs", Value::Int(100))]).unwrap();
        let (_, again) = store.load(&initial).unwrap().unwrap();
        assert_eq!(SavedState { applied: None, ..again.clone() }, loaded);
        assert_eq!(again.applied.unwrap().len(), 1);
        let _ = fs::remove_dir_all(store.dir().parent().unwrap());
    }

    #[test]
    fn a_corrupt_state_file_is_an_error_naming_the_file() {
        let store = scratch("corrupt");
        fs::create_dir_all(store.dir()).unwrap();
        let path = store.path(&key());
        fs::write(&path, "{not json").unwrap();
        let err = store.load(&key()).unwrap_err().to_string();
        assert!(err.contains(&path.display().to_string()) && err.contains("not a saved state"), "{err}");
        // Format 3 without the cookie and address it is named by.
        let mut bare = state("busy-wait");
        bare.netns_cookie = None;
        fs::write(&path, serde_json::to_string(&bare).unwrap()).unwrap();
        let err = store.load(&key()).unwrap_err().to_string();
        assert!(err.contains("format 3 names the namespace's cookie"), "{err}");
        let _ = fs::remove_dir_all(store.dir().parent().unwrap());
    }
}
