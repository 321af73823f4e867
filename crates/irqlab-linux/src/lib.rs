//! Real-kernel access for irqlab (docs/architecture.md, "The real side"): read and set
//! per-NAPI settings (netdev generic netlink: `napi-get`, `napi-set`,
//! `queue-get`) and NIC coalescing (ethtool netlink: `coalesce-get`,
//! `coalesce-set`) of one device; read its per-queue statistics
//! (`qstats-get`); set epoll busy-poll parameters (`EPIOCSPARAMS`); read a
//! socket's `SO_INCOMING_NAPI_ID`.
//!
//! Layers, bottom up:
//! - [`netlink`]: message definitions, no I/O (golden-byte tested);
//! - [`socket`]: the netlink transport (request/ack, dumps, errors), generic
//!   netlink and, for the route lookup of the load generator, rtnetlink;
//! - [`ops`]: one function per kernel operation;
//! - [`device`], [`apply`], [`restore`], [`state`]: what `irqlab linux
//!   show|apply|restore` do, as a Rust API; [`identity`]: what names a
//!   saved state's namespace and device;
//! - [`queue_stats`]: a device's per-queue counters, as a Rust API;
//! - [`epoll_params`], [`napi_id`]: the two socket-side interfaces, free of
//!   any other dependency (the LD_PRELOAD shim may use them).
//!
//! Everything here that changes the system needs CAP_NET_ADMIN and touches
//! only the device it is given.

pub mod apply;
pub mod change;
pub mod device;
pub mod epoll_params;
pub mod error;
pub mod identity;
pub mod knob;
pub mod napi_id;
pub mod netlink;
pub mod ops;
pub mod privilege;
pub mod queue_stats;
pub mod restore;
pub mod socket;
pub mod state;

pub use apply::{apply, apply_in, dry_run, plan, plan_from, ApplyReport, Plan};
pub use change::{Change, Part, Skip, Value};
pub use device::{show, CoalesceSettings, DeviceReport, NapiReport, QueueIds, Snapshot};
pub use error::Error;
pub use knob::{plan_knob, plan_knob_from, tunable};
pub use queue_stats::{queue_stats, QueueStats};
pub use restore::{forget, forget_in, restore, restore_in, ForgetReport, HandChange, Replacement, RestoreReport, Unrestored};
pub use state::{saved_state_file, AppliedKnob, DeviceKey, SavedState, StateStore};
