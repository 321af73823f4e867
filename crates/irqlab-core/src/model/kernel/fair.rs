//! The fair class's placement of application threads
//! (`cpu.task_placement = "fair"`; `irqlab_policy::sched::fair`).
//!
//! At each wake-up a sleeping thread goes where `select_task_rq_fair`
//! puts it: the waker's core or its own previous one by `wake_affine`,
//! then an idle core of the cache domain by `select_idle_sibling`. The
//! wakers here are softirqs (a bulk reader is woken by the protocol's
//! `sock_def_readable`, a synchronous wake-up), and a core that runs no
//! task is idle to the scheduler however many interrupts it takes.
//!
//! Modelled: wake-up placement within one socket's cache domain, and each
//! thread's first core: `sched_balance_find_dst_cpu` places a new thread on
//! the idle core of least utilisation, ties going to the first core after
//! the parent's (the domain's groups are listed wrapping from it), so
//! threads created one after another on an idle machine go round the
//! cores from the one after iperf3's main thread, whose core is drawn from
//! the seed. Not modelled (docs/model.md): `wake_affine_weight`'s load
//! comparison (the previous core is kept where it would decide),
//! `wake_wide`, `recent_used_cpu`, SIS_UTIL's limit on the idle scan, the
//! periodic, newidle and active load balancing, and migrations of a
//! running or queued thread. Linux 6.10's code as read for this model:
//! docs/notes/cfs-placement-sources.md.

use crate::engine::RngStreams;
use crate::model::kernel::cpu::ThreadId;
use crate::model::kernel::Kernel;
use irqlab_policy::sched::{select_task_rq_fair, Wakeup};
use rand::Rng;

/// The cores threads start on, in order (thread i on entry i mod n): every
/// core of `cores`, from the one after the parent's, which the run's seed
/// draws.
pub fn fork_cores(cores: u32, streams: &RngStreams) -> Vec<u32> {
    let parent = streams.stream(crate::engine::rng::kind::PLACEMENT, 0).gen_range(0..cores);
    (1..=cores).map(|i| (parent + i) % cores).collect()
}

impl Kernel {
    /// `try_to_wake_up`'s `select_task_rq` for sleeping application thread
    /// `t`, woken synchronously from core `waker` among the first `cores`:
    /// moves it there; true if it changed core.
    pub(crate) fn select_task_rq(&mut self, t: ThreadId, waker: u32, cores: u32) -> bool {
        let prev = self.threads[t as usize].core;
        let wakeup = Wakeup { prev, this: waker, sync: true };
        let next = select_task_rq_fair(wakeup, cores, |c| {
            let core = &self.cores[c as usize];
            u32::from(core.current_thread.is_some()) + core.runqueue.len() as u32
        });
        self.threads[t as usize].core = next;
        next != prev
    }
}
