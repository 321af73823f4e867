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
//! (`sched_balance_newidle`), unless every queued one is cache-hot. Each
//! core also balances periodically (`sched_balance_domains`, for a tickless
//! idle core by the idle load balancer): idle, every 8 ms (the domain's
//! size in ms, doubling to 16 while it finds nothing to do, and brought
//! forward when the core goes idle), it pulls as newidle does, a hot thread
//! after two failed passes, and after four has the source's running thread
//! pushed over at its next step (active balancing).
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
//! Where idleness does not decide, `wake_affine_weight` compares the two
//! cores' PELT loads (each thread's runnable average, ksoftirqd's on its
//! core; a sleeping thread's stays with its last core), and an idle
//! `recent_used_cpu` comes before the idle scan.
//! Not modelled (docs/model.md): autogroup's hierarchy (every thread's
//! `task_h_load` is its own load), a busy core's periodic balance (`migrate_load` between cores running
//! tasks; its interval at HZ 250 is 124 ms or more), the idle load
//! balancer's kick conditions (assumed met: other cores are busy) and the
//! balancing's own CPU time. Linux 6.10's code as read for this model:
//! docs/notes/cfs-placement-sources.md.

use crate::engine::{Nanos, RngStreams};
use crate::model::kernel::cpu::ThreadId;
use crate::model::kernel::Kernel;
use crate::engine::Scheduler;
use crate::model::kernel::events::KernelEv;
use crate::model::kernel::host::Host;
use irqlab_policy::sched::balance::{DomainBalance, Pass};
use irqlab_policy::sched::{balance, nr_idle_scan, select_task_rq_fair, wake_affine_weight, wake_wide, Flips, Loads, Wakeup};
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

/// One PELT average (0 to 1024, a nice-0 task's weight): it moves toward
/// 1024 while its condition holds and toward 0 while not, with a 32 ms
/// half-life.
#[derive(Clone, Copy, Debug, Default)]
pub struct Signal {
    value: f64,
    since_ns: Nanos,
    on: bool,
}

impl Signal {
    /// A signal at `value` whose condition holds (`on`) from time 0.
    fn new(value: f64, on: bool) -> Self {
        Signal { value, since_ns: 0, on }
    }

    /// The average at `now`.
    fn at(&self, now: Nanos) -> f64 {
        let periods = now.saturating_sub(self.since_ns) as f64 / PELT_PERIOD_NS;
        let keep = (-periods * std::f64::consts::LN_2 / PELT_HALF_LIFE_PERIODS).exp();
        let target = if self.on { 1024.0 } else { 0.0 };
        target + (self.value - target) * keep
    }

    /// The condition starts (true) or stops holding at `now`.
    fn set(&mut self, now: Nanos, on: bool) {
        if self.on != on {
            self.value = self.at(now);
            self.since_ns = now;
            self.on = on;
        }
    }
}

/// Each core's CFS utilisation (`cpu_util_cfs`, 0 to 1024) as PELT tracks
/// it: the running signal is 1 while an application thread or ksoftirqd is
/// the core's current task. Softirq time on top of a thread counts as the
/// thread's (no `CONFIG_IRQ_TIME_ACCOUNTING`, as in Ubuntu's
/// configurations); on top of the idle task it counts as idle.
#[derive(Clone, Debug, Default)]
pub struct Pelt {
    util: Vec<Signal>,
}

impl Pelt {
    pub fn new(cores: usize) -> Self {
        Pelt { util: vec![Signal::default(); cores] }
    }

    /// Core `c`'s utilisation at `now`.
    fn util_at(&self, c: usize, now: Nanos) -> f64 {
        self.util[c].at(now)
    }

    /// Core `c` starts (true) or stops running a thread at `now`.
    pub fn set_running(&mut self, c: usize, now: Nanos, running: bool) {
        self.util[c].set(now, running);
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
    /// Per core, its periodic balancing of the cache domain.
    balance: Vec<DomainBalance>,
    /// Per core, the thread it runs that an active balance pushes, and
    /// where (`active_load_balance_cpu_stop`, at the thread's next step).
    push: Vec<Option<(ThreadId, u32)>>,
    /// Per core, the jiffy of its last periodic balance and of its next,
    /// and the generation of the event posted for the next (an earlier
    /// one replaces it).
    last_balance_j: Vec<u64>,
    next_balance_j: Vec<u64>,
    balance_gen: Vec<u32>,
    /// Per thread, its load (`se.avg.load_avg`: runnable, a new task's
    /// starting at its weight, `init_entity_runnable_average`) and its
    /// `recent_used_cpu` (its parent's core at first, `wake_up_new_task`);
    /// per core, ksoftirqd's load.
    task_load: Vec<Signal>,
    recent_used: Vec<Option<u32>>,
    ksoftirqd_load: Vec<Signal>,
}

impl Fair {
    /// Post core `core`'s next periodic balance for jiffy `due_j`; an
    /// event posted earlier for it is superseded (its generation is old).
    fn post_balance<E: From<KernelEv>>(&mut self, sched: &mut Scheduler<E>, core: u32, due_j: u64, jiffy_ns: Nanos) {
        let c = core as usize;
        self.next_balance_j[c] = due_j;
        self.balance_gen[c] = self.balance_gen[c].wrapping_add(1);
        sched.at(due_j * jiffy_ns, E::from(KernelEv::Balance { core, gen: self.balance_gen[c] }));
    }

    /// The state of `cores` cores, of which the first `domain` are the
    /// cache domain the application's threads are balanced over.
    pub fn new(cores: usize, domain: u32) -> Self {
        Fair {
            pelt: Pelt::new(cores),
            idle_flips: vec![Flips::default(); cores],
            balance: vec![DomainBalance::new(domain); cores],
            push: vec![None; cores],
            last_balance_j: vec![0; cores],
            next_balance_j: vec![0; cores],
            balance_gen: vec![0; cores],
            task_load: Vec::new(),
            recent_used: Vec::new(),
            ksoftirqd_load: vec![Signal::default(); cores],
        }
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
        let ksoftirqd = c.ksoftirqd_mode;
        if let Some(f) = self.fair.as_mut() {
            f.pelt.set_running(core as usize, now, running);
            f.ksoftirqd_load[core as usize].set(now, ksoftirqd);
        }
    }

    /// Application thread `t` becomes runnable (`on`, woken) or sleeps at
    /// `now`: its PELT load follows.
    pub(crate) fn fair_runnable(&mut self, t: ThreadId, now: Nanos, on: bool) {
        if let Some(l) = self.fair.as_mut().and_then(|f| f.task_load.get_mut(t as usize)) {
            l.set(now, on);
        }
    }

    /// `cpu_load` of core `c` at `now`: the loads of the threads whose run
    /// queue it is (a sleeping thread's stays with its last core until it
    /// moves) and of its ksoftirqd.
    fn cpu_load(&self, c: u32, now: Nanos) -> f64 {
        let f = self.fair.as_ref().expect("fair placement state");
        let threads: f64 = f.task_load.iter().zip(&self.threads).filter(|(_, th)| th.core == c).map(|(l, _)| l.at(now)).sum();
        threads + f.ksoftirqd_load[c as usize].at(now)
    }

    /// `task_h_load(current)` on core `c` at `now`: ksoftirqd if it has
    /// the core, else the thread the softirq interrupted, else the idle
    /// task's 0.
    fn current_load(&self, c: u32, now: Nanos) -> f64 {
        let f = self.fair.as_ref().expect("fair placement state");
        let core = &self.cores[c as usize];
        if core.ksoftirqd_mode && core.ksoftirqd_turn {
            return f.ksoftirqd_load[c as usize].at(now);
        }
        core.current_thread.map_or(0.0, |t| self.task_load_at(t, now))
    }

    /// `task_h_load` of application thread `t` at `now`.
    fn task_load_at(&self, t: ThreadId, now: Nanos) -> f64 {
        self.fair.as_ref().and_then(|f| f.task_load.get(t as usize)).map_or(0.0, |l| l.at(now))
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
        let weight = || {
            let loads = Loads {
                this: self.cpu_load(waker, now),
                prev: self.cpu_load(prev, now),
                current: self.current_load(waker, now),
                task: self.task_load_at(t, now),
            };
            wake_affine_weight(loads, wakeup.sync, LLC_IMBALANCE_PCT)
        };
        let fair = self.fair.as_ref().expect("fair placement state");
        let mut recent = fair.recent_used.get(t as usize).copied().flatten();
        let scan = || nr_idle_scan(fair.pelt.sum(cores as usize, now), cores, LLC_IMBALANCE_PCT);
        let next = select_task_rq_fair(wakeup, &mut recent, cores, weight, scan, |c| self.nr_running(c));
        if let Some(r) = self.fair.as_mut().and_then(|f| f.recent_used.get_mut(t as usize)) {
            *r = recent;
        }
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
        let Some(i) = self.pull_candidate(src, now, false) else { return false };
        let t = self.detach(src, i, core);
        self.cores[core as usize].runqueue.push_back(t);
        true
    }

    /// Take the `i`th queued thread off core `src`'s run queue for core
    /// `dst` (`detach_task`); the caller queues it there.
    fn detach(&mut self, src: u32, i: usize, dst: u32) -> ThreadId {
        let t = self.cores[src as usize].runqueue.remove(i).expect("a queued thread");
        self.threads[t as usize].core = dst;
        self.threads[t as usize].slice_start_ns = None;
        self.migrations += 1;
        t
    }

    /// Post each application core's first periodic balance.
    pub(crate) fn balance_start<E: From<KernelEv>>(&mut self, sched: &mut Scheduler<E>) {
        let n = self.placement_cores();
        let threads = self.threads.len();
        // The threads' parent: the core before the first thread's.
        let parent = self.threads.first().map(|t| (t.core + n - 1) % n);
        let Some(fair) = self.fair.as_mut() else { return };
        fair.task_load = vec![Signal::new(1024.0, true); threads];
        fair.recent_used = vec![parent; threads];
        for core in 0..n {
            self.balance_next(sched, core);
        }
    }

    /// Core `core`'s jiffy length (ns) and the jiffy of `now`.
    fn jiffy(&self, now: Nanos) -> (Nanos, u64) {
        let jiffy_ns = 1_000_000_000 / self.cfg.napi.hz.max(1) as u64;
        (jiffy_ns, now / jiffy_ns)
    }

    /// Core `core` balanced at `now`: its next periodic balance is one
    /// interval later, on a tick (`rq->next_balance`, checked at each).
    fn balance_next<E: From<KernelEv>>(&mut self, sched: &mut Scheduler<E>, core: u32) {
        let hz = self.cfg.napi.hz.max(1);
        let (jiffy_ns, now_j) = self.jiffy(sched.now());
        let busy = self.nr_running(core) > 0;
        let Some(fair) = self.fair.as_mut() else { return };
        let c = core as usize;
        fair.last_balance_j[c] = now_j;
        let due_j = now_j + fair.balance[c].interval_jiffies(busy, hz);
        fair.post_balance(sched, core, due_j, jiffy_ns);
    }

    /// Core `core` goes idle: its next balance comes no later than one
    /// idle interval after its last (`sched_balance_newidle`'s
    /// `update_next_balance`), at the next tick if that is past.
    pub(crate) fn balance_sooner_when_idle<E: From<KernelEv>>(&mut self, sched: &mut Scheduler<E>, core: u32) {
        let hz = self.cfg.napi.hz.max(1);
        let (jiffy_ns, now_j) = self.jiffy(sched.now());
        let c = core as usize;
        if core >= self.placement_cores() {
            return;
        }
        let Some(fair) = self.fair.as_mut() else { return };
        let sooner = (fair.last_balance_j[c] + fair.balance[c].interval_jiffies(false, hz)).max(now_j + 1);
        if sooner < fair.next_balance_j[c] {
            fair.post_balance(sched, core, sooner, jiffy_ns);
        }
    }

    /// Core `core`'s periodic balance (`sched_balance_domains`; for a
    /// tickless idle core the idle load balancer's, `nohz_idle_balance`,
    /// assumed kicked: other cores of the domain are busy). An idle core
    /// pulls one queued thread from the core running the most tasks (two at
    /// least), a cache-hot one after two failed passes; after four it has
    /// that core's running thread pushed over instead. A busy core's pass
    /// (`migrate_load` between cores running tasks, every 124 ms or more
    /// at HZ 250) is not modelled: it only schedules the next.
    pub(crate) fn periodic_balance<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32, gen: u32) {
        if self.fair.as_ref().map(|f| f.balance_gen[core as usize]) != Some(gen) {
            // Superseded by an earlier balance (the core went idle).
            return;
        }
        if let Some(t) = self.periodic_pass(core, sched.now()) {
            self.thread_make_runnable(m, sched, t);
        }
        self.balance_next(sched, core);
    }

    /// The pass of [`Kernel::periodic_balance`] at `now`: the thread
    /// pulled to `core` (to be made runnable there), if any.
    fn periodic_pass(&mut self, core: u32, now: Nanos) -> Option<ThreadId> {
        if self.nr_running(core) > 0 {
            return None;
        }
        let d = self.fair.as_ref().expect("fair placement state").balance[core as usize];
        let mut pulled = None;
        let pass = match balance::find_src(core, self.placement_cores(), |c| self.nr_running(c)) {
            None => Pass::Balanced,
            Some(src) => match self.pull_candidate(src, now, d.may_pull_hot()) {
                Some(i) => {
                    pulled = Some(self.detach(src, i, core));
                    Pass::Moved
                }
                None => match self.cores[src as usize].current_thread {
                    Some(t) if d.active() && (t as usize) < self.threads.len() => {
                        self.fair.as_mut().expect("fair placement state").push[src as usize] = Some((t, core));
                        Pass::Active
                    }
                    _ => Pass::Failed,
                },
            },
        };
        self.fair.as_mut().expect("fair placement state").balance[core as usize].after(pass);
        pulled
    }

    /// The queued application thread of core `src` that `detach_tasks`
    /// would take at `now` (cache-hot ones too if `hot_ok`): its index in
    /// the run queue.
    fn pull_candidate(&self, src: u32, now: Nanos, hot_ok: bool) -> Option<usize> {
        let threads = &self.threads;
        let queued = self.cores[src as usize]
            .runqueue
            .iter()
            .enumerate()
            .filter(|&(_, &t)| (t as usize) < threads.len())
            .map(|(i, &t)| (i, threads[t as usize].exec_start_ns));
        balance::pick_task(queued, now, hot_ok)
    }

    /// Core `core` is about to run its current thread `t`'s next step: if
    /// an active balance pushes `t`, it moves to its new core instead
    /// (true).
    pub(crate) fn take_push<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32, t: ThreadId) -> bool {
        let Some(fair) = self.fair.as_mut() else { return false };
        match fair.push[core as usize] {
            Some((p, dst)) if p == t => {
                fair.push[core as usize] = None;
                let now = sched.now();
                self.cores[core as usize].current_thread = None;
                self.pelt_refresh(core, now);
                self.threads[t as usize].core = dst;
                self.threads[t as usize].slice_start_ns = None;
                self.migrations += 1;
                self.thread_make_runnable(m, sched, t);
                true
            }
            Some(_) => {
                // It ran something else meanwhile: the stopper finds the
                // pushed task no longer running and does nothing.
                fair.push[core as usize] = None;
                false
            }
            None => false,
        }
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
        k.fair = Some(Box::new(Fair::new(4, 4)));
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
        // woken from that core, goes to an idle core: none while ksoftirqd
        // is runnable on core 0, else core 0.
        let mut k = stacked();
        k.fair = Some(Box::new(Fair::new(4, 4)));
        k.cores[1].current_thread = Some(0);
        k.cores[1].runqueue.push_back(0);
        k.cores[3].current_thread = Some(0);
        k.cores[0].ksoftirqd_mode = true;
        k.pelt_refresh(0, 0);
        assert_eq!(k.nr_running(0), 1);
        k.select_task_rq(1, 2, 1_000);
        assert_eq!(k.threads[1].core, 2, "no idle core: it stays");
        // ksoftirqd's time is utilisation, as a thread's is.
        let half = 32 * 1_024_000;
        assert!((k.fair.as_ref().unwrap().pelt.util_at(0, half) - 512.0).abs() < 1e-6);
        k.cores[0].ksoftirqd_mode = false;
        k.pelt_refresh(0, half);
        k.select_task_rq(1, 2, half);
        assert_eq!(k.threads[1].core, 0);
    }

    #[test]
    fn an_idle_core_at_its_periodic_balance_takes_hot_threads_after_two_failures_then_pushes_the_running_one() {
        // Core 2 runs thread 0 with threads 1-3 queued, all run 100 us ago.
        let mut k = stacked();
        k.fair = Some(Box::new(Fair::new(4, 4)));
        let now = 1_000_000;
        for t in 1..4 {
            k.threads[t].exec_start_ns = now - 100_000;
        }
        k.cores[1].current_thread = Some(0);
        k.cores[3].current_thread = Some(0);
        assert_eq!(k.periodic_pass(1, now), None, "core 1 is busy");
        assert_eq!(k.periodic_pass(0, now), None, "hot: a failed pass");
        assert_eq!(k.periodic_pass(0, now), None);
        assert_eq!(k.periodic_pass(0, now), Some(1), "the third pass takes a hot thread");
        assert_eq!((k.threads[1].core, k.migrations), (0, 1));
        // Only the running thread left to move: after four failures it is
        // pushed, at its next step.
        k.cores[2].runqueue.clear();
        k.cores[2].ksoftirqd_mode = true;
        for _ in 0..4 {
            assert_eq!(k.periodic_pass(0, now), None);
        }
        assert_eq!(k.fair.as_ref().unwrap().push[2], None);
        assert_eq!(k.periodic_pass(0, now), None);
        assert_eq!(k.fair.as_ref().unwrap().push[2], Some((0, 0)));
        // A balanced domain: nothing to do, the interval doubles.
        k.cores[2].ksoftirqd_mode = false;
        k.fair.as_mut().unwrap().push[2] = None;
        assert_eq!(k.periodic_pass(0, now), None);
        assert_eq!(k.fair.as_ref().unwrap().balance[0].interval_ms, 8);
    }

    #[test]
    fn with_both_cores_busy_the_load_comparison_moves_a_reader_off_a_heavier_previous_core() {
        // Core 1 runs thread 0 with thread 3 queued (no sync stacking);
        // reader 1's previous core 2 runs thread 2 and holds the blocked
        // load of `sleepers` more; cores 0 and 3 are busy too.
        let place = |sleepers: u32| {
            let mut cfg = Config::default();
            cfg.cpu.app_cores = 4;
            let mut k = Kernel { cfg: Rc::new(cfg), ..Kernel::default() };
            k.cores = (0..4).map(Core::new).collect();
            let n = 4 + sleepers;
            k.threads = (0..n).map(|t| AppThread::new(t, if t == 0 || t == 3 { 1 } else { 2 })).collect();
            k.cores[1].current_thread = Some(0);
            k.cores[1].runqueue.push_back(3);
            for c in [0, 2, 3] {
                k.cores[c].current_thread = Some(2);
            }
            let mut f = Fair::new(4, 4);
            f.task_load = vec![Signal::new(1024.0, true); n as usize];
            f.recent_used = vec![None; n as usize];
            k.fair = Some(Box::new(f));
            k.select_task_rq(1, 1, 1_000);
            k.threads[1].core
        };
        // (2048 - 1024 + 1024) * 100 against (4096 - 1024) * 108: moves.
        assert_eq!(place(2), 1);
        // Against (2048 - 1024) * 108: stays.
        assert_eq!(place(0), 2);
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
