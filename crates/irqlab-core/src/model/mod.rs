//! The modelled world around the engine (`crate::engine`), in tiers
//! (docs/architecture.md, "Tiers"):
//!
//! - [`kernel`]: a Linux kernel: what it owns (cores, NAPIs, threads,
//!   epolls, sockets) and its code: the scheduler ([`kernel::sched`],
//!   [`kernel::cpu`]), `net_rx_action` and NAPI ([`kernel::softirq`],
//!   [`kernel::napi`], [`kernel::napi_thread`]), GRO, software steering
//!   and per-core backlogs ([`kernel::gro`], [`kernel::steering`],
//!   [`kernel::backlog`]), `ep_poll` with busy polling and IRQ suspension
//!   ([`kernel::epoll`]) and the application threads' loops
//!   ([`kernel::app`]);
//! - [`devices`]: what raises a kernel's interrupts: the physical NIC (RSS,
//!   rings, moderation, the 82599's vector, SR-IOV functions), virtio-net,
//!   a storage guest's SCSI adapter and array;
//! - [`vm`]: the virtualization layer: vCPU threads, KVM's interrupt
//!   delivery and halt polling, vhost workers, the hypervisor's storage
//!   stack and vIC;
//! - [`workloads`]: what loads the machine: memcached's clients, forwarding,
//!   bulk TCP, Iometer, OLTP, background threads;
//! - [`run`]: the measurement window and its counters;
//! - [`policy`]: a policy the user brings, called at its period with what a
//!   kernel exposes, setting knobs by their kernel names;
//! - [`build`]: the machine's parts assembled from a scenario;
//! - [`server`]: assembly, the dispatch of the engine's events and the
//!   summary; [`trace`]: the kernel-level event trace.
//!
//! Policies (DIM, ITR, steering, vIC, searches) are pure decisions in the
//! `irqlab-policy` crate.

pub mod build;
pub mod devices;
pub mod kernel;
pub mod run;
pub mod component;
pub mod event;
pub mod ids;
pub mod lane;
pub mod machine;
pub mod policy;
pub mod report;
pub mod server;
pub mod trace;
pub mod vm;
pub mod workloads;
