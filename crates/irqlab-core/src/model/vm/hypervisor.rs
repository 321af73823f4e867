//! What KVM's code (`kvm.rs`, `vcpu.rs`) asks of the machine beyond what a
//! kernel asks (`kernel/host.rs`): the VMM's work when a vCPU enters guest
//! mode or halts (the storage path's, `vmm.rs`), and the host's vhost
//! worker when a guest's TX kick arrives. The machine implements it once
//! (`model/machine.rs`).

use crate::engine::{Nanos, Scheduler};
use crate::model::kernel::host::Host;
use crate::model::kernel::Kernel;

pub trait Hypervisor: Host {
    /// The VMM has control as a vCPU enters guest mode at `now` (the host
    /// active): its cycles for what it does then.
    fn vmm_entry(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, now: Nanos) -> u64;
    /// The vCPU of guest CPU `gc` halts (the guest active).
    fn vmm_halt(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, gc: u32);
    /// The host's handler of a guest's TX kick on queue `q` ended.
    fn virtio_kicked(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, q: u32);
}
