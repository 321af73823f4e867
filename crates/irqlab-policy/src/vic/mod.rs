//! vIC: virtual interrupt coalescing for a VM's storage completions (Ahmad,
//! Gulati and Mashtizadeh, "vIC: Interrupt Coalescing for Virtual Machine
//! Storage Device IO", USENIX ATC 2011).
//!
//! A hypervisor has no high-resolution timer to hold a completion for a
//! while, so vIC lets the *next* completions decide: the VMM delivers a
//! virtual interrupt for `countUp` out of every `skipUp` completions, a
//! ratio re-chosen every epoch from the commands in flight (CIF) and the
//! IOPS, and a held completion is delivered with a later one.
//!
//! - [`delivery_ratio`]: Algorithm 1 (`IntrCoalesceRecalc`) and Table 1;
//! - [`completion`]: Algorithm 2 (the VMM's completion handler, with no
//!   division on the critical path) and the epoch's IOPS estimate;
//! - [`ipi_deferral`]: §3.3, the VMkernel's check before it sends the IPI
//!   that makes a running VMM notice a completion.

pub mod completion;
pub mod delivery_ratio;
pub mod ipi_deferral;

pub use completion::{Vic, VicParams};
pub use delivery_ratio::{delivery_ratio, DeliveryRatio};
pub use ipi_deferral::IpiDeferral;
