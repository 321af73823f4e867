//! A virtio-net device with a vhost-net backend (thesis §2.4.2, §4.5,
//! Appendix B; `drivers/net/virtio_net.c`, `drivers/vhost/net.c`,
//! `drivers/net/tun.c`).
//!
//! Receive: the host's NIC and NAPI take the packet, the host's stack
//! bridges it to the guest's tap (`br_handle_frame` → `tun_net_xmit`,
//! charged as the host's per-packet receive cost), the tap queue chosen by
//! the flow's hash holds it (`TUN_READQ_SIZE`) and wakes that queue's vhost
//! worker (`model/vm/vhost.rs`), which copies it into the guest's RX
//! virtqueue and signals the used buffers: when the guest has its callback
//! enabled, `vhost_notify` → irqfd → KVM injects the queue's vector into
//! the guest CPU that owns it (`model/vm/kvm.rs`).
//!
//! The guest's driver is the same NAPI code as on bare metal: the
//! virtqueue is a queue whose "interrupt armed" state is the virtqueue
//! callback (`virtqueue_napi_complete` keeps it disabled whenever
//! `napi_complete_done` returns false, so deferral, busy polling and IRQ
//! suspension suppress notifications as they mask an mlx5 IRQ). The device
//! has no coalescing: without `VIRTIO_NET_F_NOTF_COAL` (vhost-net does not
//! offer it) every notification is an interrupt, which is the thesis's
//! "the No Coalescing mode is configured to trigger an interrupt for every
//! individual packet". libvirt's `rx frames max` sets the tap's
//! `rx_batched`, which does not act on this path
//! (`docs/notes/virtualization-sources.md` §3.5).
//!
//! Transmit: the guest queues the reply on its TX virtqueue and, unless the
//! worker is already awake (vhost suppresses notifications while it drains
//! a queue), notifies the device: an MMIO write that exits to KVM's
//! ioeventfd on the vCPU's core (`vm.kick_cycles` plus the exit/entry),
//! which wakes the worker; the worker hands the reply to the host's stack
//! and NIC. TX completions are reclaimed by the guest's next transmit
//! (`free_old_xmit_skbs`); TX interrupts are not modelled.

use crate::model::kernel::{Kernel, KernelId, HOST};
use crate::model::devices::nic::{Cq, CqSettings, Post, QueuePair, RxPacket, Signal};
use crate::model::run::DropSite;
use crate::engine::{Nanos, Scheduler};
use crate::model::kernel::host::Host;
use crate::model::kernel::cpu::IrqSrc;
use crate::model::vm::vhost_worker::Work;
use std::collections::VecDeque;

pub struct VirtioNet {
    pub guest: KernelId,
    /// The guest's queue pairs: the RX virtqueue's used ring (packets the
    /// worker has copied in) and its callback state.
    pub queues: Vec<QueuePair>,
    /// Per queue: the guest CPU its vector is routed to.
    pub irq_core: Vec<u32>,
    /// Per queue: packets the tap holds for the worker.
    pub tap: Vec<VecDeque<RxPacket>>,
    pub tap_capacity: usize,
    /// Per queue: replies on the TX virtqueue not yet taken by the worker
    /// (connection, client send time, bytes).
    pub tx: Vec<VecDeque<(u32, Nanos, u32)>>,
    /// Per queue: a TX notification is on its way to the worker.
    pub kick_pending: Vec<bool>,
    /// Per connection: its queue (the tap queue its flow hashes to, which
    /// the guest's aligned setup also transmits on).
    pub conn_queue: Vec<u32>,
}

impl VirtioNet {
    pub fn new(guest: KernelId, nq: u32, virtqueue_size: u32, tap_len: u32, connections: u32) -> Self {
        // No coalescing: interrupt on every signal while the callback is on.
        let none = CqSettings { usecs: 0, frames: 0, cqe_mode: false, adaptive: false, irqs: true };
        let no_tx = CqSettings { irqs: false, ..none };
        VirtioNet {
            guest,
            queues: (0..nq).map(|q| QueuePair::new(q, virtqueue_size as usize, virtqueue_size, none, no_tx)).collect(),
            irq_core: (0..nq).collect(),
            tap: vec![VecDeque::new(); nq as usize],
            tap_capacity: tap_len as usize,
            tx: vec![VecDeque::new(); nq as usize],
            kick_pending: vec![false; nq as usize],
            conn_queue: (0..connections).map(|c| c % nq).collect(),
        }
    }

    /// Free descriptors of RX virtqueue `q`.
    pub fn rx_room(&self, q: u32) -> usize {
        let vq = &self.queues[q as usize];
        vq.capacity - vq.ring.len()
    }
}

/// What virtio-net's code and the host's vhost workers (`vm/vhost.rs`)
/// ask of the machine beyond a kernel's `Host`: the device, the worker of
/// a queue to wake, and the NIC's queue for a flow's replies. The machine
/// implements it once (`model/machine.rs`).
pub trait VirtioHost: Host {
    /// The guest's virtio-net device.
    fn virtio(&mut self) -> &mut VirtioNet;
    /// Wake queue `q`'s vhost worker if it sleeps (the host active).
    fn vhost_wake(&mut self, k: &mut Kernel, sched: &mut Scheduler<Self::Ev>, q: u32);
    /// The physical NIC's queue for connection `conn` (RSS).
    fn rss_queue(&self, conn: u32) -> u32;
}

/// The host's stack delivers received packets to the bridge: each goes
/// to its flow's tap queue and wakes that queue's vhost worker.
pub(crate) fn bridge_deliver<M: VirtioHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, buf: &mut Vec<RxPacket>) {
    for p in buf.drain(..) {
        let v = m.virtio();
        let q = v.conn_queue[p.conn as usize];
        if v.tap[q as usize].len() >= v.tap_capacity {
            m.dropped(sched, DropSite::Ring, p.conn, p.sent_ns);
            continue;
        }
        v.tap[q as usize].push_back(p);
        m.vhost_wake(k, sched, q);
    }
}

/// The worker copied `p` into RX virtqueue `q`: a used buffer, and a
/// notification if the guest's callback is on.
pub(crate) fn virtio_rx_used<M: VirtioHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, q: u32, mut p: RxPacket) {
    let now = sched.now();
    p.arrived_ns = now;
    let vq = &mut m.virtio().queues[q as usize];
    let posted = vq.post(p);
    debug_assert!(posted == Post::Ring, "the worker copies only into free descriptors");
    let signal = vq.completion(now, Cq::Rx);
    virtio_signal(m, k, sched, q, Cq::Rx, signal);
}

/// `vhost_notify` → irqfd → KVM: the queue's vector into its guest CPU.
pub(crate) fn virtio_signal<M: VirtioHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, q: u32, cq: Cq, signal: Signal) {
    match signal {
        Signal::Nothing => {}
        Signal::FireNow => {
            let v = m.virtio();
            v.queues[q as usize].fire(sched.now(), cq);
            let (guest, gc) = (v.guest, v.irq_core[q as usize]);
            m.kvm_inject(k, sched, guest, gc, IrqSrc::Queue(q));
        }
        Signal::PostTimer(..) => unreachable!("a virtqueue has no coalescing timer"),
    }
}

/// The guest's `start_xmit` on queue `q`: queue the reply and, unless
/// the worker is awake or already notified, notify it (an MMIO exit on
/// the vCPU's core). Called with the guest active, on guest CPU `gc`.
pub(crate) fn virtio_transmit<M: VirtioHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, gc: u32, q: u32, conn: u32, sent_ns: Nanos, bytes: u32) {
    m.virtio().tx[q as usize].push_back((conn, sent_ns, bytes));
    let worker = q as usize;
    let w = &m.kernel_ref(k, HOST).vhosts[worker];
    let (awake, polling) = (w.awake, w.work == Work::Poll);
    if polling {
        // A busy-polling worker sees the descriptor itself: no exit.
        m.in_kernel(k, HOST, |k, m| m.vhost_wake(k, sched, q));
        return;
    }
    if awake || m.virtio().kick_pending[q as usize] {
        return;
    }
    m.virtio().kick_pending[q as usize] = true;
    if m.run().measuring {
        m.run().counters.virtio_kicks += 1;
    }
    let t = k.cores[gc as usize].vcpu.expect("a guest core has a vCPU");
    m.in_kernel(k, HOST, |k, m| {
        let core = k.thread_core(t);
        k.raise_irq(m, sched, core, IrqSrc::VirtioKick(q));
    });
}

/// The host handled the TX notification of queue `q` (ioeventfd):
/// wake the worker.
pub(crate) fn virtio_kicked<M: VirtioHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, q: u32) {
    m.virtio().kick_pending[q as usize] = false;
    m.vhost_wake(k, sched, q);
}

/// `virtqueue_napi_complete` after `napi_complete_done` returned true:
/// enable the callback; if buffers were used meanwhile
/// (`virtqueue_poll`), disable it again and schedule NAPI here, with no
/// interrupt.
pub(crate) fn virtqueue_napi_complete<M: VirtioHost>(m: &mut M, k: &mut Kernel, core: u32, napi: u32, q: u32, now: Nanos) {
    let vq = &mut m.virtio().queues[q as usize];
    let mut pending = false;
    for (cq, signal) in vq.arm(now) {
        if signal == Signal::FireNow {
            vq.fire(now, cq);
            pending = true;
        }
    }
    if pending && k.napis[napi as usize].schedule_prep() {
        k.napi_enqueue(core, napi);
    }
}

/// The guest's driver took buffers from RX virtqueue `q`: a worker
/// waiting for room goes on (the refill notification, taken as free:
/// vhost suppresses most of them while it works).
pub(crate) fn virtio_refilled<M: VirtioHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, q: u32) {
    if !m.virtio().tap[q as usize].is_empty() {
        m.in_kernel(k, HOST, |k, m| m.vhost_wake(k, sched, q));
    }
}

