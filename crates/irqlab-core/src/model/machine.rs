//! The machine around the active kernel (`Machine`): the other kernels,
//! the devices, the VM layer, the workloads, the components added from
//! outside and the run's statistics; the few paths that cross them (an
//! interrupt's route from the NIC to a kernel, a drop's consequence for
//! the workload, a component's requests); and the registration of every
//! component: the traits through which each reaches the rest
//! (`kernel/host.rs`, `vm/hypervisor.rs`, `devices/virtio_net.rs`,
//! `workloads/storage/mod.rs`, `workloads/bulk.rs`), implemented here once.

use crate::model::workloads::client::Clients;
use crate::model::kernel::cpu::IrqSrc;
use crate::model::kernel::{Device, Kernel, KernelId, HOST};
use crate::model::kernel::host::Host;
use crate::model::vm::hypervisor::Hypervisor;
use crate::model::devices::virtio_net::VirtioHost;
use crate::model::workloads::storage::StorageHost;
use crate::model::workloads::bulk::BulkHost;
use crate::model::kernel::steering::Steering;
use crate::model::workloads::bulk::ReaderPhase;
use crate::model::workloads::storage::StoragePhase;
use crate::model::kernel::cpu::{ThreadId, ThreadSeg};
use crate::model::kernel::gro::Skb;
use crate::model::kernel::sched::Seg;
use crate::model::devices::nic::RxPacket;
use crate::model::devices::nic::{Cq, IrqRoute, PhysicalNic, QueuePair, Signal};
use crate::model::devices::virtio_net::VirtioNet;
use crate::engine::{Nanos, RngStreams, Scheduler};
use crate::scenario::Config;
use crate::model::devices::nic::events::NicOut;
use crate::model::trace::TraceEvent;
use crate::model::component::{Component, ComponentCx, ComponentId};
use crate::model::workloads::client::ClientEv;
use crate::model::workloads::storage::StorageEv;
pub use crate::model::run::{Counters, DropSite, RunStats};
use crate::model::workloads::bulk::Bulk;
use crate::model::workloads::storage::Storage;
use crate::model::event::Ev;

/// Everything around the active kernel: the other kernels, the devices
/// (`devices/`), the virtualization layer (`vm/`), the workloads
/// (`workloads/`) and the run's statistics (`run.rs`). The kernel's code
/// reaches it as `m`; its own code gets the active kernel as `k`.
pub struct Machine {
    pub cfg: Config,
    pub freq_ghz: f64,
    /// Every kernel by [`KernelId`], the host's first ([`HOST`]); the
    /// active kernel's slot holds an empty placeholder meanwhile.
    pub(crate) kernels: Vec<Kernel>,
    pub(crate) active: KernelId,
    /// The kernel that runs the application and owns the sockets; with
    /// several VMs (`vm.count`), the first of theirs, the others following.
    pub app_kernel: KernelId,
    /// The guest's virtio-net device (`vm.kind = "virtio"`).
    pub virtio: Option<VirtioNet>,
    pub nic: PhysicalNic,
    pub clients: Clients,
    /// The run's window and what is measured in it (`run.rs`).
    pub run: RunStats,
    pub streams: RngStreams,
    pub(crate) profile: Option<String>,
    pub(crate) name: String,
    pub trace: Option<crate::model::trace::Trace>,
    /// The bulk TCP receiver and software steering (`model/workloads/bulk.rs`).
    pub bulk: Option<Box<Bulk>>,
    /// A guest's storage I/O path (`model/workloads/storage/`).
    pub storage: Option<Box<Storage>>,
    /// Components added to the machine (`Server::with_component`), by id.
    pub(crate) components: Vec<Box<dyn Component>>,
    /// A component's requests while it is called (`ComponentCx`).
    pub(crate) component_events: Vec<(Nanos, u64)>,
    pub(crate) component_irqs: Vec<u32>,
}

impl Machine {
    /// Make kernel `id` the active one: park the active kernel `k` in its
    /// slot and bring `id`'s into `k` (`model/kernel/mod.rs`). The kernel's
    /// code that called it goes on with the kernel now in `k`.
    #[inline]
    pub(crate) fn switch_to(&mut self, k: &mut Kernel, id: KernelId) {
        if id != self.active {
            self.switch_slow(k, id);
        }
    }

    #[cold]
    #[inline(never)]
    fn switch_slow(&mut self, k: &mut Kernel, id: KernelId) {
        std::mem::swap(k, &mut self.kernels[self.active]);
        std::mem::swap(k, &mut self.kernels[id]);
        self.active = id;
    }

    #[inline]
    pub(crate) fn tr(&mut self, now: Nanos, e: crate::model::trace::TraceEvent) {
        if let Some(t) = self.trace.as_mut() {
            t.push(now, e);
        }
    }

    /// Call component `id` with `f`, then carry out what it asked: its
    /// events, then its interrupts on the host's cores.
    pub(crate) fn component_call(
        &mut self,
        k: &mut Kernel,
        sched: &mut Scheduler<Ev>,
        id: ComponentId,
        f: impl FnOnce(&mut dyn Component, &mut ComponentCx),
    ) {
        let mut events = std::mem::take(&mut self.component_events);
        let mut irqs = std::mem::take(&mut self.component_irqs);
        let mut cx = ComponentCx { now: sched.now(), measuring: self.run.measuring, events: &mut events, irqs: &mut irqs };
        f(&mut *self.components[id as usize], &mut cx);
        for (at, ev) in events.drain(..) {
            sched.at(at, Ev::Component { id, ev });
        }
        for core in irqs.drain(..) {
            self.in_kernel(k, HOST, |k, m| k.raise_irq(m, sched, core, IrqSrc::Component(id)));
        }
        self.component_events = events;
        self.component_irqs = irqs;
    }

    /// A storage guest's I/O path's event (`workloads/storage/mod.rs`).
    pub(crate) fn storage_event(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, ev: StorageEv) {
        match ev {
            StorageEv::HbaComplete => crate::model::vm::vmkernel::hba_complete(self, k, sched),
            StorageEv::GuestTick => crate::model::devices::lsilogic::guest_tick(self, k, sched),
            StorageEv::Checkpoint => crate::model::workloads::storage::oltp::oltp_checkpoint(self, k, sched),
            StorageEv::OioTune => crate::model::workloads::storage::iometer::iometer_tune(self, k, sched),
        }
    }

    pub(crate) fn warmup_end(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>) {
        let now = sched.now();
        self.run.measuring = true;
        // Counting before the window: for a policy, which goes on seeing
        // counts since the start (`model/policy.rs`).
        let carry = std::mem::replace(&mut self.run.counting, true);
        let mut before = carry.then(|| Box::new(crate::model::run::BeforeWindow { counters: self.run.counters.clone(), core_ns: Vec::new() }));
        // The cores' accounting restarts from where their chains are
        // (`kernel/busy_chain.rs`).
        k.unchain_all(sched);
        for kid in 0..self.kernels.len() {
            self.switch_to(k, kid);
            if let (Some(b), HOST) = (before.as_mut(), kid) {
                b.core_ns = k.cores.iter_mut().map(|c| c.accounted(now)).collect();
            }
            for c in &mut k.cores {
                c.reset_stats(now);
            }
            if let Some(idle) = k.idle.as_mut() {
                idle.reset_stats(now);
            }
            k.migrations = 0;
        }
        self.switch_to(k, HOST);
        self.run.before_window = before;
        self.run.counters = Counters::default();
        self.run.latency.reset();
        for q in &mut self.nic.queues {
            q.rx.dim_time.restart(now);
            q.tx.dim_time.restart(now);
        }
        if let Some(b) = self.bulk.as_mut() {
            b.reset_counters();
        }
        if let Some(s) = self.storage.as_mut() {
            s.counters = Default::default();
        }
    }

    /// What the NIC asked for: an interrupt along its queue's route, or a
    /// drop for the workload to learn of.
    #[inline]
    pub(crate) fn nic_out(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, out: NicOut) {
        match out {
            NicOut::Nothing => {}
            NicOut::Irq { queue } => self.queue_irq(k, sched, queue),
            NicOut::Dropped { site, conn, sent_ns } => self.dropped(sched, site, conn, sent_ns),
        }
    }

    /// The kernel's driver applies a completion queue's moderation decision
    /// (re-arming after a poll).
    #[inline]
    pub(crate) fn moderation(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, queue: u32, cq: Cq, signal: Signal) {
        let out = self.nic.moderation(sched, queue, cq, signal);
        self.nic_out(k, sched, out)
    }

    /// The kernel sends a reply through the NIC's TX queue `queue`.
    pub(crate) fn transmit(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, queue: u32, conn: u32, sent_ns: Nanos, bytes: u32) {
        // A reply through a queue another core busy polls (`kernel/busy_chain.rs`).
        if sched.chains_running() {
            k.unchain_queue(sched, queue);
        }
        let out = self.nic.transmit(sched, queue, conn, sent_ns, bytes);
        self.nic_out(k, sched, out)
    }

    /// The kernel's driver reaped TX descriptors: the qdisc may send.
    pub(crate) fn tx_restart(&mut self, sched: &mut Scheduler<Ev>, queue: u32) {
        self.nic.tx_restart(sched, queue);
    }

    /// Queue pair `queue`'s vector fired: its interrupt goes along its route.
    fn queue_irq(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, queue: u32) {
        self.tr(sched.now(), TraceEvent::IrqFired { queue });
        if self.run.counting {
            self.run.counters.hard_irqs += 1;
        }
        match self.nic.route(queue) {
            // Threaded NAPI on a veth: the sender's `napi_schedule` wakes the
            // NAPI thread; no interrupt runs on the core.
            IrqRoute::Host { core } if self.cfg.napi.threaded => k.napi_thread_schedule(self, sched, core, queue),
            IrqRoute::Host { core } => self.in_kernel(k, HOST, |k, s| k.raise_irq(s, sched, core, IrqSrc::Queue(queue))),
            IrqRoute::Vfio { host_core, guest, guest_core } => {
                if self.cfg.vm.posted_interrupts && crate::model::vm::kvm::vcpu_in_guest_mode(self, k, guest, guest_core) {
                    // VT-d posted interrupt: straight into the running guest.
                    crate::model::vm::kvm::posted_inject(self, k, sched, guest, guest_core, IrqSrc::Queue(queue));
                } else {
                    self.in_kernel(k, HOST, |k, s| k.raise_irq(s, sched, host_core, IrqSrc::Vfio(queue)))
                }
            }
        }
    }

    /// A request (or its reply) was dropped at `site`: count it; in a
    /// closed loop the client's TCP sends the request again after the
    /// retransmission timeout (an open-loop request is lost).
    pub(crate) fn dropped(&mut self, sched: &mut Scheduler<Ev>, site: DropSite, conn: u32, sent_ns: Nanos) {
        if self.bulk.is_some() {
            // A frame of a bulk stream: its sender's TCP reacts.
            if self.run.measuring {
                self.run.counters.drops.ring += 1;
            }
            return self.bulk.as_ref().expect("bulk workload").senders.lost(sched, conn, 1);
        }
        if self.run.measuring {
            let d = &mut self.run.counters.drops;
            match site {
                DropSite::Ring => d.ring += 1,
                DropSite::Socket => d.socket += 1,
                DropSite::Qdisc => d.qdisc += 1,
            }
        }
        if self.cfg.load.qps.is_none() || crate::model::workloads::client::holds_at_client(&self.cfg) {
            let at = (sent_ns + self.cfg.load.retransmit_timeout_ns).max(sched.now());
            sched.at(at, Ev::Client(ClientEv::Retransmit { conn, sent_ns }));
        }
    }

    pub fn record_reply(&mut self, now: Nanos, sent_ns: Nanos) {
        self.run.record_reply(now, sent_ns);
    }
}

/// The machine as the kernel's code sees it (`model/kernel/host.rs`).
impl Host for Machine {
    type Ev = Ev;

    #[inline]
    fn run(&mut self) -> &mut RunStats {
        &mut self.run
    }

    #[inline]
    fn tr(&mut self, now: Nanos, e: TraceEvent) {
        Machine::tr(self, now, e)
    }

    #[inline]
    fn cfg(&self) -> &Config {
        &self.cfg
    }

    #[inline]
    fn app_kernel(&self) -> KernelId {
        self.app_kernel
    }

    #[inline]
    fn parked(&self, id: KernelId) -> &Kernel {
        debug_assert_ne!(id, self.active);
        &self.kernels[id]
    }

    #[inline]
    fn irq_route(&self, q: u32) -> IrqRoute {
        self.nic.route(q)
    }

    #[inline]
    fn switch_to(&mut self, k: &mut Kernel, id: KernelId) {
        Machine::switch_to(self, k, id)
    }

    #[inline]
    fn queue(&mut self, device: Device, q: u32) -> &mut QueuePair {
        match device {
            Device::Nic => &mut self.nic.queues[q as usize],
            Device::Virtio => &mut self.virtio.as_mut().expect("virtio device").queues[q as usize],
        }
    }

    #[inline]
    fn deferred_handled(&mut self, n: u64) {
        self.nic.deferred_handled += n;
    }

    #[inline]
    fn moderation(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, queue: u32, cq: Cq, signal: Signal) {
        Machine::moderation(self, k, sched, queue, cq, signal)
    }

    #[inline]
    fn transmit(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, queue: u32, conn: u32, sent_ns: Nanos, bytes: u32) {
        Machine::transmit(self, k, sched, queue, conn, sent_ns, bytes)
    }

    #[inline]
    fn tx_restart(&mut self, sched: &mut Scheduler<Ev>, queue: u32) {
        Machine::tx_restart(self, sched, queue)
    }

    #[inline]
    fn nic_rearmed(&mut self, sched: &mut Scheduler<Ev>, queue: u32) {
        self.nic.rearmed(sched, queue)
    }

    #[inline]
    fn dropped(&mut self, sched: &mut Scheduler<Ev>, site: DropSite, conn: u32, sent_ns: Nanos) {
        Machine::dropped(self, sched, site, conn, sent_ns)
    }

    #[inline]
    fn virtio_transmit(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, gc: u32, q: u32, conn: u32, sent_ns: Nanos, bytes: u32) {
        crate::model::devices::virtio_net::virtio_transmit(self, k, sched, gc, q, conn, sent_ns, bytes)
    }

    #[inline]
    fn virtio_refilled(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, q: u32) {
        crate::model::devices::virtio_net::virtio_refilled(self, k, sched, q)
    }

    #[inline]
    fn virtqueue_napi_complete(&mut self, k: &mut Kernel, core: u32, napi: u32, q: u32, now: Nanos) {
        crate::model::devices::virtio_net::virtqueue_napi_complete(self, k, core, napi, q, now)
    }

    #[inline]
    fn bridge_deliver(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, buf: &mut Vec<RxPacket>) {
        crate::model::devices::virtio_net::bridge_deliver(self, k, sched, buf)
    }

    #[inline]
    fn vm_irq_cycles(&self, k: &Kernel, src: IrqSrc) -> u64 {
        crate::model::vm::kvm::vm_irq_cycles(self, k, src)
    }

    #[inline]
    fn vm_hardirq_done(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, src: IrqSrc) {
        crate::model::vm::kvm::vm_hardirq_done(self, k, sched, src)
    }

    #[inline]
    fn kvm_inject(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, guest: KernelId, gc: u32, src: IrqSrc) {
        crate::model::vm::kvm::kvm_inject(self, k, sched, guest, gc, src)
    }

    #[inline]
    fn guest_core_wake(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, gc: u32) {
        crate::model::vm::kvm::guest_core_wake(self, k, sched, gc)
    }

    #[inline]
    fn vcpu_next(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, v: usize) -> Option<Seg> {
        crate::model::vm::vcpu::vcpu_next(self, k, sched, v)
    }

    #[inline]
    fn vcpu_step_done(&mut self, k: &mut Kernel, v: usize) {
        crate::model::vm::vcpu::vcpu_step_done(k, v)
    }

    #[inline]
    fn vcpu_entered(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, v: usize) {
        crate::model::vm::vcpu::vcpu_entered(self, k, sched, v)
    }

    #[inline]
    fn vcpu_preempted(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, t: ThreadId) {
        crate::model::vm::vcpu::vcpu_preempted(self, k, sched, t)
    }

    #[inline]
    fn vcpu_halt(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, host_thread: ThreadId, gc: u32) {
        crate::model::vm::vcpu::vcpu_halt(self, k, sched, host_thread, gc)
    }

    #[inline]
    fn vcpu_tick_restart(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, gc: u32) {
        crate::model::vm::vcpu::vcpu_tick_restart(self, k, sched, gc)
    }

    #[inline]
    fn vcpu_resume(&mut self, k: &mut Kernel, t: ThreadId, now: Nanos) {
        crate::model::vm::vcpu::vcpu_resume(k, t, now)
    }

    #[inline]
    fn vcpu_contended(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, core: u32, t: ThreadId, seg: ThreadSeg) {
        crate::model::vm::vcpu::vcpu_contended(self, k, sched, core, t, seg)
    }

    #[inline]
    fn vcpu_turn_over(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, core: u32, t: ThreadId) {
        crate::model::vm::vcpu::vcpu_turn_over(self, k, sched, core, t)
    }

    #[inline]
    fn vhost_next(&mut self, k: &mut Kernel, w: usize) -> Option<Seg> {
        crate::model::vm::vhost::vhost_next(self, k, w)
    }

    #[inline]
    fn vhost_poll_end(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, w: usize) {
        crate::model::vm::vhost::vhost_poll_end(self, k, sched, w)
    }

    #[inline]
    fn vhost_step_done(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, w: usize) {
        crate::model::vm::vhost::vhost_step_done(self, k, sched, w)
    }

    #[inline]
    fn storage_irq_cycles(&mut self, src: IrqSrc) -> u64 {
        crate::model::devices::lsilogic::storage_irq_cycles(self, src)
    }

    #[inline]
    fn storage_irq_done(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, core: u32, src: IrqSrc) {
        crate::model::devices::lsilogic::storage_irq_done(self, k, sched, core, src)
    }

    fn workload_next(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, t: ThreadId) -> Option<Seg> {
        if let Some(b) = self.bulk.as_ref() {
            debug_assert_eq!(b.readers[b.stream_of(k.id, t)], ReaderPhase::ReadCheck);
            return crate::model::workloads::bulk::reader_next(self, k, sched, t);
        }
        match self.storage.as_ref().expect("a workload with threads of its own").threads[t as usize].phase {
            StoragePhase::IoNext => crate::model::workloads::storage::iometer::iometer_next(self, k, sched, t),
            StoragePhase::TxnNext => crate::model::workloads::storage::oltp::oltp_next(self, k, sched, t),
            StoragePhase::Spin => crate::model::workloads::storage::background::background_next(self, k, t),
            p => unreachable!("a storage thread's next step in phase {p:?}"),
        }
    }

    fn workload_step_done(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, t: ThreadId) {
        if let Some(b) = self.bulk.as_ref() {
            return match b.readers[b.stream_of(k.id, t)] {
                ReaderPhase::InRead(bytes) => crate::model::workloads::bulk::reader_done(self, k, sched, t, bytes),
                p => unreachable!("a reader's step done in phase {p:?}"),
            };
        }
        match self.storage.as_ref().expect("a workload with threads of its own").threads[t as usize].phase {
            StoragePhase::InIoIssue => crate::model::workloads::storage::iometer::iometer_issued(self, k, sched, t),
            StoragePhase::InIoComplete => crate::model::workloads::storage::iometer::iometer_completed(self, k, sched, t),
            StoragePhase::InSpin => crate::model::workloads::storage::background::background_done(self, k, sched, t),
            p @ (StoragePhase::InTxnCompute | StoragePhase::InTxnIssue | StoragePhase::InTxnComplete) => {
                crate::model::workloads::storage::oltp::oltp_step_done(self, k, sched, t, p)
            }
            p => unreachable!("a storage thread's step done in phase {p:?}"),
        }
    }

    #[inline]
    fn stream_poll_take(&mut self, k: &mut Kernel, now: Nanos, napi: u32, budget: u32) -> (u32, u64) {
        crate::model::workloads::bulk::stream_poll_take(self, k, now, napi, budget)
    }

    #[inline]
    fn stream_deliver(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, napi: u32) {
        crate::model::workloads::bulk::stream_deliver(self, k, sched, napi)
    }

    #[inline]
    fn tcp_rcv(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, core: u32, skb: Skb) {
        crate::model::workloads::bulk::tcp_rcv(self, k, sched, core, skb)
    }

    #[inline]
    fn tcp_rx_cycles(&self, k: &Kernel, skbs: &[Skb]) -> u64 {
        crate::model::workloads::bulk::tcp_rx_cycles(k, skbs)
    }

    fn stream_lost(&mut self, sched: &mut Scheduler<Ev>, skb: &Skb) {
        let b = self.bulk.as_mut().expect("bulk workload");
        b.dropped(skb);
        b.senders.lost(sched, skb.conn, skb.segs)
    }

    #[inline]
    fn forward_deliver(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, napi: u32, buf: &mut Vec<RxPacket>) {
        crate::model::workloads::forward::forward_deliver(self, k, sched, napi, buf)
    }

    #[inline]
    fn steering(&mut self) -> Option<&mut Steering> {
        self.bulk.as_mut().and_then(|b| b.steering.as_mut())
    }

    #[inline]
    fn steering_ref(&self) -> Option<&Steering> {
        self.bulk.as_ref().and_then(|b| b.steering.as_ref())
    }

    fn component_irq_cycles(&self, id: u16) -> u64 {
        self.components[id as usize].irq_cycles()
    }

    fn component_irq_done(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, core: u32, id: u16) {
        self.component_call(k, sched, id, |c, cx| c.irq_done(cx, core));
    }

    #[inline]
    fn peer_asleep(&self, now: Nanos) -> bool {
        self.clients.thread_asleep(now)
    }

    #[inline]
    fn peer_modelled(&self) -> bool {
        self.clients.thread_modelled()
    }

    #[inline]
    fn peer_spends(&mut self, now: Nanos, ns: Nanos) {
        self.clients.spends(now, ns)
    }

}

/// The machine as KVM's code sees it (`model/vm/hypervisor.rs`).
impl Hypervisor for Machine {
    #[inline]
    fn vmm_entry(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, now: Nanos) -> u64 {
        if self.storage.is_some() {
            crate::model::vm::vmm::vmm_drain(self, k, sched, now)
        } else {
            0
        }
    }

    #[inline]
    fn vmm_halt(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, gc: u32) {
        if self.storage.is_some() {
            crate::model::vm::vmm::vmm_halt_check(self, k, sched, gc);
        }
    }

    #[inline]
    fn virtio_kicked(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, q: u32) {
        crate::model::devices::virtio_net::virtio_kicked(self, k, sched, q)
    }
}

/// The machine as virtio-net's code sees it (`model/devices/virtio_net.rs`).
impl VirtioHost for Machine {
    #[inline]
    fn virtio(&mut self) -> &mut VirtioNet {
        self.virtio.as_mut().expect("a VirtIO run has a virtio-net device")
    }

    #[inline]
    fn vhost_wake(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, q: u32) {
        crate::model::vm::vhost::vhost_wake(self, k, sched, q)
    }

    #[inline]
    fn rss_queue(&self, conn: u32) -> u32 {
        self.nic.rss_queue(conn)
    }
}

/// The machine as the storage path's code sees it (`model/workloads/storage/mod.rs`).
impl StorageHost for Machine {
    #[inline]
    fn storage(&mut self) -> &mut Storage {
        self.storage.as_mut().expect("a storage run has a storage path")
    }
}

/// The machine as bulk TCP's code sees it (`model/workloads/bulk.rs`).
impl BulkHost for Machine {
    #[inline]
    fn bulk(&mut self) -> &mut Bulk {
        self.bulk.as_mut().expect("a bulk run has its streams")
    }
}
