//! Where a device queue's MSI-X vector is delivered: the interrupt path is
//! chosen by the device, not by the kernel that handles it.

use crate::model::ids::KernelId;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqRoute {
    /// A core of the host kernel: bare metal (the vector's
    /// `/proc/irq/N/smp_affinity`).
    Host { core: u32 },
    /// A queue assigned to a guest through VFIO (passthrough, SR-IOV): a
    /// host hard IRQ on `host_core`, then KVM injects the guest's vector
    /// into CPU `guest_core` of `guest` (`model/vm/kvm.rs`).
    Vfio { host_core: u32, guest: KernelId, guest_core: u32 },
}

impl IrqRoute {
    /// The guest and guest CPU a VFIO route injects into.
    pub fn vfio_vcpu(&self) -> Option<(KernelId, u32)> {
        match *self {
            IrqRoute::Vfio { guest, guest_core, .. } => Some((guest, guest_core)),
            IrqRoute::Host { .. } => None,
        }
    }
}
