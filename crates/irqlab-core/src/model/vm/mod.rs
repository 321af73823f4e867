//! Virtual machines: a guest is a second [`Kernel`](crate::model::kernel::Kernel),
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

pub mod hypervisor;
pub mod kvm;
pub mod vcpu;
pub mod vcpu_thread;
pub mod vhost;
pub mod vhost_worker;
pub mod vmkernel;
pub mod vmm;

use crate::model::kernel::cpu::Core;
use crate::model::kernel::{CoreRole, Kernel, NapiTimer, RxSink, HOST};
use crate::model::kernel::napi::{Napi, NapiConfig};
use crate::scenario::{Config, VmKind};
use vcpu::VcpuThread;
use vhost::VhostWorker;

/// The host kernel of a VM run, around `guests`, the guests' kernels (the
/// ones that run the application, one per VM): vCPU j of VM g is host
/// thread `g * vcpus + j`, pinned to host core `(g * vcpus + j) mod
/// cfg.vm_host_cpus()` (core j of one VM: the thesis's pinning), and the
/// guests' cores wait, frozen, for their vCPUs to enter guest mode. With VirtIO the host also drives the NIC's `nq` queues with
/// its own NAPIs (no deferral: the profiles apply in the guest), bridges
/// what they receive to the guest's tap, and runs one vhost worker per
/// guest queue pair, on the host core that takes its flows' interrupts
/// (`irq_core`) unless `vm.vhost_core` names one.
pub(crate) fn host_kernel(
    cfg: &Config,
    guests: &mut [Kernel],
    nq: u32,
    guest_queues: u32,
    irq_core: impl Fn(u32) -> u32,
) -> Kernel {
    let vcpus = cfg.vcpus();
    let all_vcpus = vcpus * guests.len() as u32;
    for (g, guest) in guests.iter_mut().enumerate() {
        for (j, c) in guest.cores.iter_mut().enumerate() {
            c.vcpu = Some(g as u32 * vcpus + j as u32);
            c.frozen = true;
        }
    }
    let virtio = cfg.vm.kind == VmKind::Virtio;
    // The host's cores: the vCPUs', then (VirtIO with IRQ packing) the
    // cores that take the NIC's interrupts.
    // A storage guest's HBA interrupts go to the core after the vCPUs'.
    let host_cores = match cfg.vm.kind {
        VmKind::Virtio => cfg.total_cores() - cfg.cpu.app_cores + vcpus,
        VmKind::Lsilogic => vcpus + 1,
        _ => cfg.vm_host_cpus(),
    };
    let vcpu_cores = all_vcpus.min(host_cores);
    // Host CPUs that more than one vCPU is pinned to.
    let mut pinned = vec![0u32; host_cores as usize];
    for v in 0..all_vcpus {
        pinned[(v % host_cores) as usize] += 1;
    }
    let mut host = Kernel {
        id: HOST,
        wakeup_latency_ns: cfg.cpu.wakeup_latency_ns,
        idle: crate::model::kernel::cpuidle::CpuIdle::new(cfg, host_cores as usize),
        cores: (0..host_cores).map(Core::new).collect(),
        // The cores after the vCPUs' take the NIC's (VirtIO) or the HBA's
        // (storage) interrupts; an assigned NIC's go to the vCPUs' cores.
        core_role: (0..host_cores)
            .map(|c| if c < vcpu_cores || !matches!(cfg.vm.kind, VmKind::Virtio | VmKind::Lsilogic) { CoreRole::Other } else { CoreRole::Irq })
            .collect(),
        vcpus: (0..all_vcpus)
            .map(|v| {
                let core = v % host_cores;
                let mut t = VcpuThread::new(core, guests[(v / vcpus) as usize].id, v % vcpus);
                t.shares_core = pinned[core as usize] > 1;
                t
            })
            .collect(),
        vcpu_base: 0,
        softirq: vec![Default::default(); host_cores as usize],
        softirq_buf: vec![Vec::with_capacity(64); host_cores as usize],
        ..Kernel::default()
    };
    if virtio {
        host.napis = (0..nq).map(|q| Napi::new(q, NapiConfig::default())).collect();
        host.napi_timer = vec![NapiTimer::default(); nq as usize];
        host.napi_queue = (0..nq).collect();
        host.queue_napi = (0..nq).collect();
        host.rx_sink = RxSink::Bridge;
        host.vhosts =
            (0..guest_queues).map(|q| VhostWorker::new(cfg.vm.vhost_core.unwrap_or_else(|| irq_core(q % nq)), q)).collect();
    }
    host
}
