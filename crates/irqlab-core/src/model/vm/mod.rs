//! Virtual machines: a guest is a second [`Kernel`](super::kernel::Kernel),
//! run by the same code as the host's, whose CPUs are vCPU threads of the
//! host.
//!
//! - [`vcpu`]: the vCPU thread on its pinned host core: entering guest
//!   mode (the exit/entry cost), the guest's CPU running only meanwhile,
//!   freezing when the host preempts it, halting when the guest idles, and
//!   KVM halt polling;
//! - [`kvm`]: delivering an interrupt into a guest: `kvm_set_msi` →
//!   `kvm_vcpu_kick` (an IPI and an exit for a vCPU running in guest mode,
//!   a wake-up for a halted one) and injection at entry; the VFIO route of
//!   an assigned device's MSI-X vector (thesis §4.6: "interrupts must
//!   first be rerouted via the VFIO-PCI layer before the virtual CPU can
//!   be notified");
//! - [`virtio_net`] and [`vhost`]: the paravirtual device and its host
//!   worker threads (thesis §2.4.2, §4.5).
//!
//! Sandy Bridge-EP (the thesis's E5-2670) has neither APICv nor posted
//! interrupts (`docs/notes/virtualization-sources.md` §3.2), so every
//! interrupt for a running vCPU costs an exit; the guest's EOI is taken as
//! exit-free (PV EOI).

pub mod kvm;
pub mod vcpu;
pub mod vhost;
pub mod virtio_net;
