//! Assigning the NIC's queues to a guest through VFIO: the whole physical
//! function (full passthrough, thesis §2.4.5) or a virtual function
//! (SR-IOV, §2.4.6). Either way the guest's own driver owns the queue
//! pairs (rings, moderation, DIM) and the host only relays their
//! interrupts (`IrqRoute::Vfio`).
//!
//! What the assignment adds per packet:
//! - the interrupt path through the host (`model/vm/kvm.rs`);
//! - DMA through the IOMMU: VFIO maps the guest's memory once, so there is
//!   no per-packet CPU cost, only the latency of IOTLB misses
//!   (`vm.iommu_latency_ns`);
//! - SR-IOV only: the NIC's internal switch between the wire and the VF
//!   (`vm.eswitch_latency_ns`).
//!
//! Which host core takes a vector's host IRQ is its host affinity, which
//! the thesis does not state; the model puts it on the core of the vCPU the
//! guest routes the vector to, the only placement that needs no IPI
//! between cores (a tuned host; irqbalance is off in the thesis, §4.1.2).

use crate::model::devices::nic::route::IrqRoute;
use crate::model::ids::KernelId;
use crate::scenario::{Config, VmKind};

/// Routes for `queues` queue pairs assigned `per_vm` at a time to the
/// guests from `first_guest` on (one VM's whole NIC or its VF), each
/// guest's driver sending queue q's vector to its CPU `guest_irq_core(q)`;
/// VM g's vCPU j runs on host CPU `(g * vcpus + j) mod host_cpus`
/// (`model/vm/mod.rs`).
pub fn vfio_routes(
    queues: u32,
    per_vm: u32,
    first_guest: KernelId,
    vcpus: u32,
    host_cpus: u32,
    guest_irq_core: impl Fn(u32) -> u32,
) -> Vec<IrqRoute> {
    (0..queues)
        .map(|q| {
            let vm = q / per_vm;
            let gc = guest_irq_core(q);
            IrqRoute::Vfio { host_core: (vm * vcpus + gc) % host_cpus, guest: first_guest + vm as KernelId, guest_core: gc }
        })
        .collect()
}

/// Extra latency of an assigned queue's DMA (the IOMMU's), and between
/// the wire and the queue (the SR-IOV switch), ns; each is paid by a
/// request on its way to the ring and by a reply on its way out.
pub fn extra_latency_ns(cfg: &Config) -> (u64, u64) {
    match cfg.vm.kind {
        VmKind::None | VmKind::Virtio | VmKind::Lsilogic => (0, 0),
        VmKind::Passthrough => (cfg.vm.iommu_latency_ns, 0),
        VmKind::Sriov => (cfg.vm.iommu_latency_ns, cfg.vm.eswitch_latency_ns),
    }
}
