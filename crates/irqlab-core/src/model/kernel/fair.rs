//! The fair class's placement of application threads
//! (`cpu.task_placement = "fair"`; `irqlab_policy::sched::fair`).
//!
//! At each wake-up a sleeping thread goes where `select_task_rq_fair`
//! puts it: the waker's core or its own previous one by `wake_affine`,
//! then an idle core of the cache domain by `select_idle_sibling`. The
//! wakers here are softirqs (a bulk reader is woken by the protocol's
//! `sock_def_readable`, a synchronous wake-up), and a core that runs no
//! task is idle to the scheduler however many interrupts it takes, until
//! its softirqs are handed to ksoftirqd: a nice-0 task of the fair class,
//! counted in the core's tasks and its utilisation while runnable.
//!
//! A core about to go idle pulls a queued thread from the busiest core
//! (`sched_balance_newidle`), unless every queued one is cache-hot.
//!
//! Modelled: wake-up placement within one socket's cache domain, and each
//! thread's first core: `sched_balance_find_dst_cpu` places a new thread on
//! the idle core of least utilisation, ties going to the first core after
//! the parent's (the domain's groups are listed wrapping from it), so
//! threads created one after another on an idle machine go round the
//! cores from the one after iperf3's main thread, whose core is drawn from
//! the seed. `wake_wide` counts each waker's switches between wakees, the
//! waker being the task the softirq interrupted or the core's idle task.
//! SIS_UTIL's limit on the idle scan is computed from each core's PELT
//! utilisation at the wake-up rather than at the last periodic balance.
//! Not modelled (docs/model.md): `wake_affine_weight`'s load comparison
//! (the previous core is kept where it would decide), `recent_used_cpu`,
//! and the periodic and active load balancing (so a running thread never
//! moves). Linux 6.10's code as read for this model:
//! docs/notes/cfs-placement-sources.md.

use crate::engine::{Nanos, RngStreams};
use crate::model::kernel::cpu::ThreadId;
use crate::model::kernel::Kernel;
use irqlab_policy::sched::{balance, nr_idle_scan, select_task_rq_fair, wake_wide, Flips, Wakeup};
use rand::Rng;

/// The cores threads start on, in order (thread i on entry i mod n): every
/// core of `cores`, from the one after the parent's, which the run's seed
/// draws.
pub fn fork_cores(cores: u32, streams: &RngStreams) -> Vec<u32> {
    let parent = streams.stream(crate::engine::rng::kind::PLACEMENT, 0).gen_range(0..cores);
    (1..=cores).map(|i| (parent + i) % cores).collect()
}

/// PELT's period, ns (1024 us), and the decay per period, y with y^32 = 1/2
/// (`LOAD_AVG_PERIOD` 32: a 32 ms half-life).
const PELT_PERIOD_NS: f64 = 1_024_000.0;
const PELT_HALF_LIFE_PERIODS: f64 = 32.0;

/// Each core's CFS utilisation (`cpu_util_cfs`, 0 to 1024) as PELT tracks
/// it: the running signal is 1 while an application thread is the core's
/// current task. Softirq time on top of a thread counts as the thread's
/// (no `CONFIG_IRQ_TIME_ACCOUNTING`, as in Ubuntu's configurations); on
/// top of the idle task it counts as idle.
#[derive(Clone, Debug, Default)]
pub struct Pelt {
    util: Vec<f64>,
    since_ns: Vec<Nanos>,
    running: Vec<bool>,
}

impl Pelt {
    pub fn new(cores: usize) -> Self {
        Pelt { util: vec![0.0; cores], since_ns: vec![0; cores], running: vec![false; cores] }
    }

    /// Core `c`'s utilisation at `now`.
    fn util_at(&self, c: usize, now: Nanos) -> f64 {
        let periods = now.saturating_sub(self.since_ns[c]) as f64 / PELT_PERIOD_NS;
        let keep = (-periods * std::f64::consts::LN_2 / PELT_HALF_LIFE_PERIODS).exp();
        let target = if self.running[c] { 1024.0 } else { 0.0 };
        target + (self.util[c] - target) * keep
    }

    /// Core `c` starts (true) or stops running a thread at `now`.
    pub fn set_running(&mut self, c: usize, now: Nanos, running: bool) {
        if self.running[c] != running {
            self.util[c] = self.util_at(c, now);
            self.since_ns[c] = now;
            self.running[c] = running;
        }
    }

    /// The sum over the first `cores` cores at `now`.
    fn sum(&self, cores: usize, now: Nanos) -> u64 {
        (0..cores.min(self.util.len())).map(|c| self.util_at(c, now) as u64).sum()
    }
}

/// The fair class's state beside the cores: their utilisation, and what
/// `record_wakee` keeps of each core's idle task as a waker (a softirq on
/// an idle core wakes on its behalf); the threads keep their own.
#[derive(Clone, Debug, Default)]
pub struct Fair {
    pub pelt: Pelt,
    pub idle_flips: Vec<Flips>,
}

impl Fair {
    pub fn new(cores: usize) -> Self {
        Fair { pelt: Pelt::new(cores), idle_flips: vec![Flips::default(); cores] }
    }
}

/// The cache domain's `imbalance_pct` (`sd_init`, `SD_SHARE_LLC`).
const LLC_IMBALANCE_PCT: u64 = 117;

impl Kernel {
    /// The cores the placement chooses among: the application's.
    fn placement_cores(&self) -> u32 {
        self.cfg.cpu.app_cores.min(self.cores.len() as u32)
    }

    /// Tasks running and queued on core `c` (`rq->nr_running`), ksoftirqd
    /// among them while it is runnable: a nice-0 thread of the fair class.
    fn nr_running(&self, c: u32) -> u32 {
        let core = &self.cores[c as usize];
        u32::from(core.current_thread.is_some()) + core.runqueue.len() as u32 + u32::from(core.ksoftirqd_mode)
    }

    /// Core `core`'s PELT running signal from what it runs at `now`: an
    /// application thread or ksoftirqd (a task of the fair class too, so
    /// softirq work handed to it counts as utilisation, while the same work
    /// at IRQ exit on an idle core does not).
    pub(crate) fn pelt_refresh(&mut self, core: u32, now: Nanos) {
        let c = &self.cores[core as usize];
        let running = c.current_thread.is_some() || c.ksoftirqd_mode;
        if let Some(f) = self.fair.as_mut() {
            f.pelt.set_running(core as usize, now, running);
        }
    }

    /// `try_to_wake_up`'s `select_task_rq` for sleeping application thread
    /// `t`, woken synchronously from core `waker`: moves it where the fair
    /// class puts it.
    pub(crate) fn select_task_rq(&mut self, t: ThreadId, waker: u32, now: Nanos) {
        let prev = self.threads[t as usize].core;
        let cores = self.placement_cores();
        let Some(fair) = self.fair.as_mut() else { return };
        // `record_wakee` on the task the waker's softirq interrupted (its
        // idle task if none), then `wake_wide`.
        let waker_flips = match self.cores[waker as usize].current_thread {
            Some(c) if (c as usize) < self.threads.len() => {
                let f = &mut self.threads[c as usize].flips;
                f.record(t, now);
                f.flips
            }
            _ => {
                let f = &mut fair.idle_flips[waker as usize];
                f.record(t, now);
                f.flips
            }
        };
        let affine = !wake_wide(waker_flips, self.threads[t as usize].flips.flips, cores);
        let wakeup = Wakeup { prev, this: waker, sync: true, affine };
        // SIS_UTIL's scan width from the cores' utilisation now (the
        // kernel refreshes it at each periodic balance of the domain).
        let pelt = &self.fair.as_ref().expect("fair placement state").pelt;
        let scan = || nr_idle_scan(pelt.sum(cores as usize, now), cores, LLC_IMBALANCE_PCT);
        let next = select_task_rq_fair(wakeup, cores, scan, |c| self.nr_running(c));
        if next != prev {
            self.threads[t as usize].core = next;
            self.migrations += 1;
        }
    }

    /// `sched_balance_newidle` (`irqlab_policy::sched::balance`): core
    /// `core`, about to go idle at `now`, pulls one queued thread from the
    /// core running the most tasks, the least recently run one not
    /// cache-hot. True if it pulled one. Not modelled: the `avg_idle`
    /// against `max_newidle_lb_cost` gate (the pull is always tried) and
    /// its cost.
    pub(crate) fn newidle_balance(&mut self, core: u32, now: Nanos) -> bool {
        let n = self.placement_cores();
        if core >= n {
            return false;
        }
        let Some(src) = balance::find_src(core, n, |c| self.nr_running(c)) else { return false };
        let threads = &self.threads;
        let queued = self.cores[src as usize]
            .runqueue
            .iter()
            .enumerate()
            .filter(|&(_, &t)| (t as usize) < threads.len())
            .map(|(i, &t)| (i, threads[t as usize].exec_start_ns));
        let Some(i) = balance::pick_task(queued, now) else { return false };
        let t = self.cores[src as usize].runqueue.remove(i).expect("a queued thread");
        self.threads[t as usize].core = core;
        self.threads[t as usize].slice_start_ns = None;
        self.cores[core as usize].runqueue.push_back(t);
        self.migrations += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::kernel::app::AppThread;
    use crate::model::kernel::cpu::Core;
    use crate::scenario::Config;
    use std::rc::Rc;

    /// Four cores; core 2 runs thread 0 with threads 1-3 queued behind it.
    fn stacked() -> Kernel {
        let mut cfg = Config::default();
        cfg.cpu.app_cores = 4;
        let mut k = Kernel { cfg: Rc::new(cfg), ..Kernel::default() };
        k.cores = (0..4).map(Core::new).collect();
        k.threads = (0..4).map(|t| AppThread::new(t, 2)).collect();
        k.cores[2].current_thread = Some(0);
        k.cores[2].runqueue.extend([1, 2, 3]);
        for (t, ran) in [(1, 900_000), (2, 100_000), (3, 200_000)] {
            k.threads[t].exec_start_ns = ran;
        }
        k
    }

    #[test]
    fn a_core_going_idle_pulls_the_least_recently_run_thread_that_is_not_cache_hot() {
        let mut k = stacked();
        let now = 1_000_000;
        assert!(k.newidle_balance(0, now));
        assert_eq!((k.threads[2].core, k.cores[0].runqueue.iter().copied().collect::<Vec<_>>()), (0, vec![2]));
        assert!(k.newidle_balance(1, now));
        assert_eq!(k.threads[3].core, 1);
        // Thread 1 ran 100 us ago (under sysctl_sched_migration_cost): hot.
        assert!(!k.newidle_balance(3, now));
        assert_eq!(k.threads[1].core, 2);
        assert_eq!(k.migrations, 2);
        // Later it is cold, and core 2 still runs two tasks: it moves.
        assert!(k.newidle_balance(3, now + balance::MIGRATION_COST_NS));
        assert_eq!(k.threads[1].core, 3);
        // Core 2 now runs one: nothing left to pull.
        k.cores[3].runqueue.clear();
        assert!(!k.newidle_balance(3, now + balance::MIGRATION_COST_NS));
    }

    #[test]
    fn a_softirq_wakes_on_behalf_of_the_task_it_interrupted() {
        // Core 0 runs no task: its idle task is the waker, and each switch
        // between woken readers is a flip; on core 2, thread 0 is.
        let mut k = stacked();
        k.fair = Some(Box::new(Fair::new(4)));
        for t in [1, 2, 1, 1] {
            k.select_task_rq(t, 0, 1_000);
        }
        assert_eq!(k.fair.as_ref().unwrap().idle_flips[0].flips, 3);
        k.select_task_rq(3, 2, 2_000);
        assert_eq!(k.threads[0].flips.flips, 1);
        // Core 0 is idle to the scheduler and core 2 runs a task: the
        // readers moved there.
        assert_eq!(k.threads[1].core, 0);
    }

    #[test]
    fn a_core_whose_softirqs_went_to_ksoftirqd_is_busy_to_the_scheduler() {
        // Core 0 runs no application thread. A reader whose core 2 is busy,
        // woken from core 1 (two tasks: no stacking there), goes to an idle
        // core: none while ksoftirqd is runnable on core 0, else core 0.
        let mut k = stacked();
        k.fair = Some(Box::new(Fair::new(4)));
        k.cores[1].current_thread = Some(0);
        k.cores[1].runqueue.push_back(0);
        k.cores[3].current_thread = Some(0);
        k.cores[0].ksoftirqd_mode = true;
        k.pelt_refresh(0, 0);
        assert_eq!(k.nr_running(0), 1);
        k.select_task_rq(1, 1, 1_000);
        assert_eq!(k.threads[1].core, 2, "no idle core: it stays");
        // ksoftirqd's time is utilisation, as a thread's is.
        let half = 32 * 1_024_000;
        assert!((k.fair.as_ref().unwrap().pelt.util_at(0, half) - 512.0).abs() < 1e-6);
        k.cores[0].ksoftirqd_mode = false;
        k.pelt_refresh(0, half);
        k.select_task_rq(1, 1, half);
        assert_eq!(k.threads[1].core, 0);
    }

    #[test]
    fn utilisation_rises_and_decays_with_a_32_ms_half_life() {
        let mut p = Pelt::new(2);
        p.set_running(0, 0, true);
        // 32 periods of 1024 us running: half-way from 0 to 1024.
        let half = 32 * 1_024_000;
        assert!((p.util_at(0, half) - 512.0).abs() < 1e-6, "{}", p.util_at(0, half));
        p.set_running(0, half, false);
        assert!((p.util_at(0, 2 * half) - 256.0).abs() < 1e-6);
        assert_eq!(p.sum(2, 2 * half), 256, "core 1 never ran");
        // Setting the same state again changes nothing.
        p.set_running(1, half, false);
        assert_eq!(p.util_at(1, 2 * half), 0.0);
    }

    #[test]
    fn threads_start_round_the_cores_after_the_parents() {
        let order = fork_cores(8, &RngStreams::new(3));
        let parent = (order[0] + 7) % 8;
        assert_eq!(order, (1..=8).map(|i| (parent + i) % 8).collect::<Vec<_>>());
        let parents: std::collections::BTreeSet<u32> =
            (0..32).map(|seed| (fork_cores(8, &RngStreams::new(seed))[0] + 7) % 8).collect();
        assert!(parents.len() > 4, "the seed draws the parent's core: {parents:?}");
    }
}
