//! What a kernel's code asks of the machine around it: the devices whose
//! queues its drivers poll, the VM layer whose threads and interrupts it
//! schedules, the workloads whose threads it runs, and the run's
//! statistics. The kernel's code (`impl Kernel` in this folder) is generic
//! over it and names no other part of the model; the machine implements it
//! once (`model/machine.rs`), so the calls compile to direct calls.
//!
//! Each method takes the active kernel `k` when the code behind it runs
//! kernel code in turn (a vCPU entering guest mode kicks the guest's core;
//! a reply sent raises an interrupt): the kernel passes itself.

use crate::engine::{Nanos, Scheduler};
use crate::model::devices::nic::{Cq, IrqRoute, QueuePair, RxPacket, Signal};
use crate::model::kernel::cpu::{IrqSrc, ThreadId, ThreadSeg};
use crate::model::kernel::events::KernelEv;
use crate::model::kernel::gro::Skb;
use crate::model::kernel::sched::Seg;
use crate::model::kernel::steering::Steering;
use crate::model::kernel::{Device, Kernel, KernelId};
use crate::model::run::{DropSite, RunStats};
use crate::model::trace::TraceEvent;
use crate::scenario::Config;

pub trait Host {
    /// The machine's events, of which the kernel's are one kind.
    type Ev: From<KernelEv>;

    // The machine.
    /// The run's window and counters.
    fn run(&mut self) -> &mut RunStats;
    /// Record a kernel-level event in the trace, if one is kept.
    fn tr(&mut self, now: Nanos, e: TraceEvent);
    /// The scenario's settings.
    fn cfg(&self) -> &Config;
    /// The first kernel that runs the application (the host on bare metal).
    fn app_kernel(&self) -> KernelId;
    /// Make kernel `id` the active one, in `k`'s place.
    fn switch_to(&mut self, k: &mut Kernel, id: KernelId);
    /// Kernel `id` while another is active (`id` is not `k.id`).
    fn parked(&self, id: KernelId) -> &Kernel;

    /// Run `f` with kernel `id` active in `k`'s place, then make `k`'s
    /// kernel active again.
    #[inline]
    fn in_kernel<R>(&mut self, k: &mut Kernel, id: KernelId, f: impl FnOnce(&mut Kernel, &mut Self) -> R) -> R
    where
        Self: Sized,
    {
        let prev = k.id;
        self.switch_to(k, id);
        let r = f(k, self);
        self.switch_to(k, prev);
        r
    }

    /// Kernel `id`, active (`k`) or parked.
    #[inline]
    fn kernel_ref<'a>(&'a self, k: &'a Kernel, id: KernelId) -> &'a Kernel {
        if id == k.id {
            k
        } else {
            self.parked(id)
        }
    }

    // The network devices.
    /// Where the interrupt of the physical NIC's queue `q` goes.
    fn irq_route(&self, q: u32) -> IrqRoute;
    /// Queue pair `q` of the kernel's device.
    fn queue(&mut self, device: Device, q: u32) -> &mut QueuePair;
    /// The physical NIC handled `n` events it had kept (`QueuePair::catch_up`).
    fn deferred_handled(&mut self, n: u64);
    /// The driver applies a completion queue's moderation decision.
    fn moderation(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, queue: u32, cq: Cq, signal: Signal);
    /// The kernel sends a reply through the NIC's TX queue `queue`.
    fn transmit(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, queue: u32, conn: u32, sent_ns: Nanos, bytes: u32);
    /// The driver reaped TX descriptors: the qdisc may send.
    fn tx_restart(&mut self, sched: &mut Scheduler<Self::Ev>, queue: u32);
    /// The NIC's queue `queue` is armed again after a poll: what it kept
    /// while disarmed becomes events again.
    fn nic_rearmed(&mut self, sched: &mut Scheduler<Self::Ev>, queue: u32);
    /// A request or reply was dropped at `site`.
    fn dropped(&mut self, sched: &mut Scheduler<Self::Ev>, site: DropSite, conn: u32, sent_ns: Nanos);
    /// A guest sends through its virtio-net device.
    #[allow(clippy::too_many_arguments)]
    fn virtio_transmit(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, gc: u32, q: u32, conn: u32, sent_ns: Nanos, bytes: u32);
    /// The guest's poll freed RX buffers of virtqueue `q`.
    fn virtio_refilled(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, q: u32);
    /// The guest's NAPI of virtqueue `q` completed: it enables callbacks.
    fn virtqueue_napi_complete(&mut self, k: &mut Kernel, core: u32, napi: u32, q: u32, now: Nanos);
    /// The VirtIO host's bridge takes received packets to the guests' taps.
    fn bridge_deliver(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, buf: &mut Vec<RxPacket>);

    // The VM layer (`model/vm/`).
    /// Host cycles of a VM interrupt source's handler (VFIO, vCPU kick, virtio kick).
    fn vm_irq_cycles(&self, k: &Kernel, src: IrqSrc) -> u64;
    /// A VM interrupt source's host handler ended.
    fn vm_hardirq_done(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, src: IrqSrc);
    /// Deliver `src` to CPU `gc` of guest `guest` (`kvm_set_msi`).
    fn kvm_inject(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, guest: KernelId, gc: u32, src: IrqSrc);
    /// A thread became runnable on guest core `gc`, whose vCPU is out of guest mode.
    fn guest_core_wake(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, gc: u32);
    /// vCPU thread `v`'s next host segment (None: it sleeps).
    fn vcpu_next(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, v: usize) -> Option<Seg>;
    /// vCPU thread `v`'s host segment ended.
    fn vcpu_step_done(&mut self, k: &mut Kernel, v: usize);
    /// vCPU thread `v` entered guest mode: its guest core runs again.
    fn vcpu_entered(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, v: usize);
    /// The host preempted vCPU thread `t` in guest mode (a VM exit).
    fn vcpu_preempted(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, t: ThreadId);
    /// Guest core `gc`, run by host thread `host_thread`, has nothing to run: HLT.
    fn vcpu_halt(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, host_thread: ThreadId, gc: u32);
    /// Guest core `gc` leaves idle for a task with its tick stopped: the
    /// timer write's exit.
    fn vcpu_tick_restart(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, gc: u32);
    /// A preempted guest-mode segment of `t` is back on top of its core's stack.
    fn vcpu_resume(&mut self, k: &mut Kernel, t: ThreadId, now: Nanos);
    /// Another host thread became runnable on `core`, where vCPU thread `t` runs.
    fn vcpu_contended(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, core: u32, t: ThreadId, seg: ThreadSeg);
    /// vCPU thread `t`'s turn on a shared host CPU is over.
    fn vcpu_turn_over(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, core: u32, t: ThreadId);
    /// vhost worker `w`'s next batch (None: it sleeps).
    fn vhost_next(&mut self, k: &mut Kernel, w: usize) -> Option<Seg>;
    /// vhost worker `w`'s busy poll ends now (another task wants its core).
    fn vhost_poll_end(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, w: usize);
    /// vhost worker `w`'s batch ended.
    fn vhost_step_done(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, w: usize);

    // The storage path (`model/workloads/storage/`, `devices/lsilogic.rs`).
    /// Cycles of a storage interrupt source's handler.
    fn storage_irq_cycles(&mut self, src: IrqSrc) -> u64;
    /// A storage interrupt source's handler ended on `core`.
    fn storage_irq_done(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, core: u32, src: IrqSrc);

    // The threads of a workload with a loop of its own (`Phase::Workload`).
    /// Thread `t`'s next step (None: it blocks or gives way).
    fn workload_next(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, t: ThreadId) -> Option<Seg>;
    /// Thread `t`'s step ended (`Phase::InWorkload`).
    fn workload_step_done(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, t: ThreadId);

    // Bulk TCP and forwarding (`model/workloads/bulk.rs`, `forward.rs`).
    /// Bulk TCP's driver poll of `napi` with GRO: (frames, cycles).
    fn stream_poll_take(&mut self, k: &mut Kernel, now: Nanos, napi: u32, budget: u32) -> (u32, u64);
    /// Bulk TCP's poll segment ended: its packets go to the protocol or to steering.
    fn stream_deliver(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, napi: u32);
    /// `tcp_v4_rcv` of `skb` after its protocol work on `core` (steered or not).
    fn tcp_rcv(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, core: u32, skb: Skb);
    /// The protocol's cycles for `skbs`, with the wake-ups they cause.
    fn tcp_rx_cycles(&self, k: &Kernel, skbs: &[Skb]) -> u64;
    /// The stack dropped `skb`: its frames are freed, and its stream's
    /// sender learns that its segments were lost.
    fn stream_lost(&mut self, sched: &mut Scheduler<Self::Ev>, skb: &Skb);
    /// Forwarding: send the packets a poll of `napi` took back out.
    fn forward_deliver(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, napi: u32, buf: &mut Vec<RxPacket>);
    /// Software steering's state (RPS, RFS, IAPS), if a scheme is set.
    fn steering(&mut self) -> Option<&mut Steering>;
    /// Software steering's state, read only.
    fn steering_ref(&self) -> Option<&Steering>;

    // A component added to the machine (`model/component.rs`).
    /// Cycles of component `id`'s interrupt handler.
    fn component_irq_cycles(&self, id: u16) -> u64;
    /// Component `id`'s interrupt handler ended on `core`.
    fn component_irq_done(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, core: u32, id: u16);

    // The load generator's thread where it shares the server's CPUs
    // (`model/workloads/client.rs`).
    /// It sleeps at `now` (waking it costs an IPI).
    fn peer_asleep(&self, now: Nanos) -> bool;
    /// Its CPU time is modelled.
    fn peer_modelled(&self) -> bool;
    /// It spends `ns` of its CPU from `now`.
    fn peer_spends(&mut self, now: Nanos, ns: Nanos);
}
