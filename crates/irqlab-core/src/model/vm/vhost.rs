//! A vhost-net worker: a host thread per guest queue pair
//! (`vhost_task`, `drivers/vhost/net.c`) that moves packets between the
//! tap and the virtqueues. Woken by the tap (`sk_data_ready` →
//! `vhost_poll_queue`) or by the guest's TX notification (ioeventfd), it
//! runs `handle_tx` and `handle_rx` in batches of up to `VHOST_NET_BATCH`
//! (64) packets until both are empty, then sleeps. Each packet costs
//! `vm.vhost_packet_cycles`, each batch `vm.vhost_batch_cycles` (its
//! dequeue and the signal of its used buffers). Out of work, it may
//! busy-poll first (`vm.vhost_poll_us`, QEMU's `poll-us`; off in the
//! thesis's XML): `vhost_net_busy_poll` keeps the guest's notifications
//! off and ends when work appears or another task wants the core.
//!
//! A worker woken on a core where a vCPU runs in guest mode takes the core
//! from it (the wake-up's reschedule IPI makes the vCPU exit) and gives it
//! back when it sleeps: the thesis's "incoming hardware interrupts trigger
//! context switches from the VM application to the IRQ handler. Once the
//! I/O threads complete packet polling, the system restores the VM
//! context" (§3.1.3).

use crate::model::kernel::cpu::{CpuClass, Owner, ThreadSeg};
use crate::model::kernel::HOST;
use crate::model::kernel::sched::Seg;
use crate::model::kernel::Kernel;
use crate::engine::Scheduler;
use crate::model::devices::virtio_net::{virtio_rx_used, VirtioHost};
pub use crate::model::vm::vhost_worker::{VhostWorker, Work, VHOST_NET_BATCH};

/// Wake the worker of queue `q` if it sleeps (host kernel active).
pub(crate) fn vhost_wake<M: VirtioHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, q: u32) {
    debug_assert_eq!(k.id, HOST);
    let w = q as usize;
    if k.vhosts[w].awake {
        if k.vhosts[w].work == Work::Poll {
            vhost_poll_found(m, k, sched, w);
        }
        return;
    }
    k.vhosts[w].awake = true;
    let t = k.vhost_thread(w);
    k.thread_make_runnable(m, sched, t);
}

/// `busy_clock()`'s unit: `local_clock() >> 10`, ns.
const BUSY_CLOCK_NS: u64 = 1 << 10;

/// Worker `w` busy-polls and its queue may have work: if it has
/// (TX descriptors, or tap data with free RX buffers) the poll loop sees
/// it and the worker handles it at once.
fn vhost_poll_found<M: VirtioHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, w: usize) {
    let q = k.vhosts[w].queue;
    let v = m.virtio();
    let found = !v.tx[q as usize].is_empty() || (!v.tap[q as usize].is_empty() && v.rx_room(q) > 0);
    if found {
        vhost_poll_end(m, k, sched, w);
    }
}

/// End worker `w`'s busy poll now (work appeared, or another task wants
/// its core): it goes on at once, or, preempted, when it resumes.
pub(crate) fn vhost_poll_end<H: crate::model::kernel::host::Host>(m: &mut H, k: &mut Kernel, sched: &mut Scheduler<H::Ev>, w: usize) {
    let core = k.vhosts[w].core;
    let t = k.vhost_thread(w);
    let c = &mut k.cores[core as usize];
    if matches!(c.running, Some(r) if r.owner == Owner::Thread(t, ThreadSeg::Step)) {
        c.abandon();
        k.vhosts[w].work = Work::None;
        k.kick(m, sched, core);
    } else {
        k.vhosts[w].poll_stale = true;
    }
}

/// The worker's next batch, or None when the tap and the TX
/// virtqueue are empty (it sleeps).
#[inline(never)]
pub(crate) fn vhost_next<M: VirtioHost>(m: &mut M, k: &mut Kernel, w: usize) -> Option<Seg> {
    let q = k.vhosts[w].queue as usize;
    let v = m.virtio();
    let worker = &mut k.vhosts[w];
    let n = if !v.tx[q].is_empty() {
        let n = v.tx[q].len().min(VHOST_NET_BATCH);
        worker.tx_batch.extend(v.tx[q].drain(..n));
        worker.work = Work::Tx;
        n
    } else {
        let n = v.tap[q].len().min(VHOST_NET_BATCH).min(v.rx_room(q as u32));
        if n == 0 {
            // Out of work: busy-poll once (`vhost_net_busy_poll`) unless
            // another task waits for the core (`need_resched()`).
            let poll_ns = k.cfg.vm.vhost_poll_us * BUSY_CLOCK_NS;
            if poll_ns > 0 && !worker.polled && k.cores[worker.core as usize].runqueue.is_empty() {
                worker.polled = true;
                worker.work = Work::Poll;
                return Some(Seg { class: CpuClass::Vhost, ns: poll_ns, bh_disabled: false });
            }
            // handle_rx found nothing it can copy (or no free guest
            // buffers): sleep until the tap or the guest wakes it.
            worker.polled = false;
            worker.awake = false;
            worker.work = Work::None;
            return None;
        }
        worker.rx_batch.extend(v.tap[q].drain(..n));
        worker.work = Work::Rx;
        n
    };
    worker.polled = false;
    let vm = &k.cfg.vm;
    let cycles = vm.vhost_batch_cycles + n as u64 * vm.vhost_packet_cycles;
    Some(Seg { class: CpuClass::Vhost, ns: k.ns(cycles), bh_disabled: false })
}

/// A batch is done: replies go to the host's NIC; packets become used
/// buffers of the guest's RX virtqueue.
#[inline(never)]
pub(crate) fn vhost_step_done<M: VirtioHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, w: usize) {
    let q = k.vhosts[w].queue;
    match k.vhosts[w].work {
        Work::Tx => {
            let mut batch = std::mem::take(&mut k.vhosts[w].tx_batch);
            for (conn, sent_ns, bytes) in batch.drain(..) {
                let queue = m.rss_queue(conn);
                m.transmit(k, sched, queue, conn, sent_ns, bytes);
            }
            k.vhosts[w].tx_batch = batch;
        }
        Work::Rx => {
            let mut batch = std::mem::take(&mut k.vhosts[w].rx_batch);
            for p in batch.drain(..) {
                virtio_rx_used(m, k, sched, q, p);
            }
            k.vhosts[w].rx_batch = batch;
        }
        // The poll ran to its end and found nothing.
        Work::Poll => {}
        Work::None => unreachable!("a worker segment without work"),
    }
    k.vhosts[w].work = Work::None;
}

