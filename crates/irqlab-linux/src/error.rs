//! The errors of the real-kernel operations. Each message is one sentence
//! that says what was refused and why, naming the device, NAPI or file.

use std::path::PathBuf;

use crate::restore::RestoreReport;
use crate::socket::NetlinkError;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Changing settings needs CAP_NET_ADMIN (root).
    #[error("{action} needs root (CAP_NET_ADMIN) to change NAPI and coalescing settings; run it as root")]
    NotPermitted { action: String },
    #[error("there is no network device named `{name}` in this network namespace")]
    NoSuchDevice { name: String },
    #[error("`{name}` is not a network device name ({reason})")]
    BadDeviceName { name: String, reason: &'static str },
    #[error(
        "device `{device}` has no NAPI instance, so it has no per-NAPI settings \
         (a veth has one only while GRO is on)"
    )]
    NoNapi { device: String },
    #[error("NAPI {id} is not one of device `{device}`'s NAPIs ({ids})")]
    UnknownNapi { device: String, id: u32, ids: String },
    /// The kernel lacks a feature irqlab needs.
    #[error("this kernel {what}, so irqlab cannot {purpose} (Linux 6.13 or later is needed)")]
    KernelTooOld { what: String, purpose: &'static str },
    #[error("profile `{name}` is unknown; accepted: {accepted}")]
    UnknownProfile { name: String, accepted: String },
    #[error("knob `{name}` cannot be tuned; accepted: {accepted}")]
    UnknownKnob { name: String, accepted: String },
    #[error("{knob} must be at most {max} (got {value})")]
    KnobRange { knob: String, value: u64, max: u64 },
    #[error("device `{device}`'s driver does not accept coalescing parameter {knob} (irqlab linux doctor {device} lists what it does)")]
    KnobUnsupported { device: String, knob: String },
    #[error(transparent)]
    Netlink(#[from] NetlinkError),
    #[error("there is no saved state for device `{device}` in {dir} (nothing was applied to it, or it was restored already)")]
    NoSavedState { device: String, dir: PathBuf },
    #[error("the saved state file {path} {problem}")]
    State { path: PathBuf, problem: String },
    /// A state file under this device's name that is not its own, or whose
    /// namespace cannot be told (state.rs): never applied to it.
    #[error(
        "the saved state file {path} {what}, so irqlab will not use it for device `{device}` here; \
         `irqlab linux restore {device} --forget` deletes it and leaves the device as it is (the file lists \
         the settings it saved)"
    )]
    StateNotThisDevice { path: PathBuf, device: String, what: String },
    /// What names a namespace or a device could not be read.
    #[error("irqlab could not read {what} ({problem})")]
    Identity { what: String, problem: String },
    /// A failure after the state was saved: say how to get the old settings back.
    #[error("{source}; the settings from before are saved in {state}, so `irqlab linux restore {device}` puts them back")]
    Partial { source: Box<Error>, state: PathBuf, device: String },
    #[error("device `{device}` changed while irqlab was reading it ({what}); run the command again")]
    Changed { device: String, what: String },
    /// `restore` put back what it could but not everything: the saved
    /// state is kept, and `report` says what was done.
    #[error(
        "device `{device}` could not be restored in full: {what}; the rest was put back, and the saved state \
         stays in {state} for a later `irqlab linux restore {device}`"
    )]
    RestoreIncomplete { device: String, what: String, state: PathBuf, report: Box<RestoreReport> },
}
