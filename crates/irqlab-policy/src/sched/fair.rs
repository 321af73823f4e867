//! `select_task_rq_fair` for a wake-up (`WF_TTWU`) on one socket whose
//! cores share the last-level cache, as Linux 6.10 decides it
//! (docs/notes/cfs-placement-sources.md).
//!
//! 1. **`wake_affine`** chooses between the waker's core (`this`) and the
//!    task's previous one (`prev`), `wake_affine_idle` first: an idle
//!    waker core means the wake-up comes from an interrupt, and then the
//!    task stays on `prev` if that is idle, else moves to `this`; a
//!    synchronous wake-up (`WF_SYNC`, as `sock_def_readable`'s) from a core
//!    running one task moves it to `this`; else an idle `prev` keeps it.
//!    With none of these the load comparison of [`wake_affine_weight`]
//!    decides.
//! 2. **`select_idle_sibling`** then looks for an idle core: the target if
//!    idle, `prev` if idle, the task's `recent_used_cpu` if idle, else the
//!    first idle core after the target in the cache domain, testing no
//!    more cores than SIS_UTIL allows ([`nr_idle_scan`]), else the target.
//!    Not ported: the per-CPU kthread case (a kthread waking a task on its
//!    own core from task context; a softirq is not task context) and
//!    asymmetric capacities.
//!
//! "Idle" is `available_idle_cpu`: no task running or queued. A core that
//! only takes interrupts and runs softirqs is idle to the scheduler (its
//! current task is the idle task), which is how a task can land on the
//! core that takes a queue's interrupts.

/// A wake-up to place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wakeup {
    /// The task's previous core.
    pub prev: u32,
    /// The waker's core (`smp_processor_id()` in `try_to_wake_up`).
    pub this: u32,
    /// `WF_SYNC`: the waker says it will sleep soon.
    pub sync: bool,
    /// `want_affine`: not [`wake_wide`].
    pub affine: bool,
}

/// What `record_wakee` keeps of a task as a waker (`wakee_flips`,
/// `last_wakee`, `wakee_flip_decay_ts`): how often it switched between the
/// tasks it wakes. A softirq wakes on behalf of whatever task it
/// interrupted, the idle task included.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flips {
    pub flips: u32,
    pub last_wakee: Option<u32>,
    pub decay_ns: u64,
}

/// One second (`HZ` jiffies): `record_wakee` halves the flips at most once
/// per this ("only decay a single time").
pub const FLIP_DECAY_NS: u64 = 1_000_000_000;

impl Flips {
    /// `record_wakee(p)` on the waker at `now`, waking task `wakee`.
    pub fn record(&mut self, wakee: u32, now: u64) {
        if now > self.decay_ns + FLIP_DECAY_NS {
            self.flips >>= 1;
            self.decay_ns = now;
        }
        if self.last_wakee != Some(wakee) {
            self.last_wakee = Some(wakee);
            self.flips += 1;
        }
    }
}

/// `wake_wide`: true when the waker (`waker_flips`) and the wakee
/// (`wakee_flips`) both switch partners often enough, for a cache domain of
/// `llc_size` cores, that the wake-up should not be affine.
pub fn wake_wide(waker_flips: u32, wakee_flips: u32, llc_size: u32) -> bool {
    let (master, slave) = if waker_flips >= wakee_flips { (waker_flips, wakee_flips) } else { (wakee_flips, waker_flips) };
    !(slave < llc_size || master < slave.saturating_mul(llc_size))
}

/// The loads `wake_affine_weight` compares (PELT `load_avg`, 1024 for a
/// nice-0 task always runnable; cores of equal capacity).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Loads {
    /// `cpu_load` of the waker's core and of the task's previous core.
    pub this: f64,
    pub prev: f64,
    /// `task_h_load(current)`: the task the waker's softirq interrupted
    /// (0 for the idle task).
    pub current: f64,
    /// `task_h_load(p)`: the woken task's.
    pub task: f64,
}

/// `wake_affine_weight`: true if the waker's core takes the task, its
/// load with the task (less the waker's, on a synchronous wake-up) below
/// the previous core's without it, the previous core's raised by half the
/// domain's `imbalance_pct` margin (WA_BIAS); on a sync wake-up ties go to
/// the waker's core, and a waker heavier than its core's load takes it at
/// once.
pub fn wake_affine_weight(l: Loads, sync: bool, imbalance_pct: u64) -> bool {
    let mut this_eff = l.this;
    if sync {
        if l.current > this_eff {
            return true;
        }
        this_eff -= l.current;
    }
    let this_eff = (this_eff + l.task) * 100.0;
    let mut prev_eff = (l.prev - l.task) * (100 + (imbalance_pct - 100) / 2) as f64;
    if sync {
        prev_eff += 1.0;
    }
    this_eff < prev_eff
}

/// `wake_affine_idle`: Some(core) if idleness decides, None otherwise;
/// `nr_running(c)` counts the tasks running and queued on core c, and a
/// core with none is idle (`available_idle_cpu`).
fn wake_affine_idle(w: Wakeup, nr_running: &impl Fn(u32) -> u32) -> Option<u32> {
    let idle = |c: u32| nr_running(c) == 0;
    if idle(w.this) {
        return Some(if idle(w.prev) { w.prev } else { w.this });
    }
    if w.sync && nr_running(w.this) == 1 {
        return Some(w.this);
    }
    idle(w.prev).then_some(w.prev)
}

/// `select_idle_sibling(p, prev, target)` within one cache domain of
/// `cores` cores, whose idle scan tests at most `scan()` cores;
/// `recent_used` is the task's `recent_used_cpu`, which becomes `prev`
/// once the search gets that far.
fn select_idle_sibling(
    prev: u32,
    target: u32,
    recent_used: &mut Option<u32>,
    cores: u32,
    scan: impl FnOnce() -> u32,
    nr_running: &impl Fn(u32) -> u32,
) -> u32 {
    let idle = |c: u32| nr_running(c) == 0;
    if idle(target) {
        return target;
    }
    if prev != target && idle(prev) {
        return prev;
    }
    let recent = recent_used.replace(prev);
    if let Some(r) = recent.filter(|&r| r != prev && r != target && r < cores && idle(r)) {
        return r;
    }
    // `select_idle_cpu`: the cache domain from target + 1, wrapping round
    // to the target itself, at most `scan` cores.
    (1..=cores).map(|i| (target + i) % cores).take(scan() as usize).find(|&c| idle(c)).unwrap_or(target)
}

/// SIS_UTIL's `nr_idle_scan` (`update_idle_cpu_scan`): how many cores the
/// idle scan of a cache domain of `cores` cores may test, from the sum of
/// their CFS utilisation (`cpu_util_cfs`, 1024 a busy core) and the
/// domain's `imbalance_pct` (117 for the cores of one cache). The scan
/// narrows as the average utilisation grows and stops at about 85 %
/// ("the imbalance_pct(117) when a LLC sched group is overloaded").
pub fn nr_idle_scan(sum_util: u64, cores: u32, imbalance_pct: u64) -> u32 {
    let x = sum_util / u64::from(cores.max(1));
    let pct2 = imbalance_pct * imbalance_pct;
    let tmp = (x * x * pct2 / (10_000 * 1024)).min(1024);
    ((1024 - tmp) * u64::from(cores) / 1024) as u32
}

/// The core task `w` wakes on, among `cores` cores sharing one cache
/// (`prev` and `this` below it); `nr_running(c)` counts the tasks running
/// and queued on core c, and the idle scan tests at most `scan()` cores
/// (`nr_idle_scan`, asked only if the scan is reached; `cores` for no
/// limit). `weight()` is [`wake_affine_weight`]'s verdict, asked only if
/// idleness does not decide; `recent_used` is the task's
/// `recent_used_cpu`, updated.
pub fn select_task_rq_fair(
    w: Wakeup,
    recent_used: &mut Option<u32>,
    cores: u32,
    weight: impl FnOnce() -> bool,
    scan: impl FnOnce() -> u32,
    nr_running: impl Fn(u32) -> u32,
) -> u32 {
    assert!(w.prev < cores && w.this < cores, "cores outside the domain");
    let affine = w.affine && w.this != w.prev;
    let target = if !affine {
        w.prev
    } else {
        match wake_affine_idle(w, &nr_running) {
            Some(c) => c,
            None if weight() => w.this,
            None => w.prev,
        }
    };
    select_idle_sibling(w.prev, target, recent_used, cores, scan, &nr_running)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Place `w` on cores running `running[c]` tasks each.
    /// (`wake_affine_weight` keeping `prev`, no recently used core.)
    fn place(w: Wakeup, running: &[u32]) -> u32 {
        let n = running.len() as u32;
        select_task_rq_fair(w, &mut None, n, || false, || n, |c| running[c as usize])
    }

    #[test]
    fn the_idle_scan_narrows_with_utilisation_and_stops_near_85_percent() {
        // The kernel comment's table for eight cores: util share -> cores.
        let scan = |pct: u64| nr_idle_scan(8 * 1024 * pct / 100, 8, 117);
        let got: Vec<u32> = [0, 10, 30, 40, 50, 60, 70, 75, 80, 85, 100].iter().map(|&p| scan(p)).collect();
        assert_eq!(got, vec![8, 7, 7, 6, 5, 4, 2, 1, 1, 0, 0]);
        // A scan of one core from target 1 tests core 2 only.
        let running = [0, 1, 1, 1];
        let w = Wakeup { prev: 1, this: 1, sync: true, affine: true };
        assert_eq!(select_task_rq_fair(w, &mut None, 4, || false, || 1, |c| running[c as usize]), 1);
        assert_eq!(select_task_rq_fair(w, &mut None, 4, || false, || 3, |c| running[c as usize]), 0);
    }

    #[test]
    fn an_interrupt_core_with_no_task_is_idle_to_the_scheduler() {
        // Core 0 runs only softirqs (no task); the woken task's previous
        // core 3 is busy: it moves to the waker's core.
        let cpus = &[0, 1, 1, 1];
        assert_eq!(place(Wakeup { prev: 3, this: 0, sync: true, affine: true }, cpus), 0);
        // Its previous core idle too: it stays.
        let cpus = &[0, 1, 1, 0];
        assert_eq!(place(Wakeup { prev: 3, this: 0, sync: true, affine: true }, cpus), 3);
    }

    #[test]
    fn a_sync_wakeup_from_a_core_running_one_task_joins_it() {
        // The waker's core runs one task (its softirq interrupted it): a
        // sync wake-up targets it, but select_idle_sibling prefers an idle
        // previous core, else the first idle one after the target.
        assert_eq!(place(Wakeup { prev: 2, this: 1, sync: true, affine: true }, &[1, 1, 0, 1]), 2);
        assert_eq!(place(Wakeup { prev: 2, this: 1, sync: true, affine: true }, &[1, 1, 1, 0]), 3);
        // Nothing idle: the waker's core.
        assert_eq!(place(Wakeup { prev: 2, this: 1, sync: true, affine: true }, &[1, 1, 1, 1]), 1);
        // Not sync, nothing idle: its previous core.
        assert_eq!(place(Wakeup { prev: 2, this: 1, sync: false, affine: true }, &[1, 1, 1, 1]), 2);
        // Two tasks on the waker's core: no pull.
        assert_eq!(place(Wakeup { prev: 2, this: 1, sync: true, affine: true }, &[1, 2, 1, 1]), 2);
    }

    #[test]
    fn a_waker_and_wakee_that_both_switch_partners_often_wake_wide() {
        assert!(!wake_wide(100, 7, 8), "a wakee with fewer flips than the cache's cores");
        assert!(!wake_wide(63, 8, 8), "a waker under 8 times the wakee's");
        assert!(wake_wide(64, 8, 8) && wake_wide(8, 64, 8));
        // Not affine: the previous core is the target, then an idle core
        // from the one after it (here the scan wraps to the waker's).
        assert_eq!(place(Wakeup { prev: 2, this: 0, sync: true, affine: false }, &[1, 1, 1, 1]), 2);
        assert_eq!(place(Wakeup { prev: 2, this: 0, sync: true, affine: false }, &[1, 1, 1, 0]), 3);
        assert_eq!(place(Wakeup { prev: 2, this: 0, sync: true, affine: false }, &[0, 1, 1, 1]), 0);
        // Affine, the waker's core running one task: it is the target.
        assert_eq!(place(Wakeup { prev: 2, this: 0, sync: true, affine: true }, &[1, 1, 1, 1]), 0);
        // Flips count switches between wakees, halved at most once a second.
        let mut f = Flips::default();
        for (wakee, now) in [(1, 0), (1, 10), (2, 20), (1, 30)] {
            f.record(wakee, now);
        }
        assert_eq!(f.flips, 3);
        f.record(1, FLIP_DECAY_NS + 31);
        assert_eq!(f.flips, 1, "halved, and the same wakee again adds nothing");
    }

    #[test]
    fn the_idle_scan_wraps_from_the_target() {
        // Target 2 busy, previous 2 (the waker is the task's own core),
        // idle cores 0 and 3: the scan from 3 finds 3 first.
        assert_eq!(place(Wakeup { prev: 2, this: 2, sync: true, affine: true }, &[0, 1, 1, 0]), 3);
        assert_eq!(place(Wakeup { prev: 3, this: 3, sync: true, affine: true }, &[0, 1, 1, 1]), 0);
    }

    #[test]
    fn the_load_comparison_decides_when_idleness_does_not() {
        // Both cores busy, the waker's running two tasks: weight decides.
        let w = Wakeup { prev: 2, this: 1, sync: true, affine: true };
        let running = [1, 2, 1, 1];
        let place = |weight: bool| select_task_rq_fair(w, &mut None, 4, || weight, || 4, |c| running[c as usize]);
        assert_eq!((place(true), place(false)), (1, 2));
        // The waker's core lighter than the previous one by more than the
        // bias: it takes the task.
        let l = |this, prev| Loads { this, prev, current: 0.0, task: 100.0 };
        assert!(wake_affine_weight(l(300.0, 600.0), false, 117));
        // Within the bias the previous core keeps it.
        assert!(!wake_affine_weight(l(300.0, 450.0), false, 117), "400*100 > 350*108");
        assert!(!wake_affine_weight(l(500.0, 550.0), false, 117), "600*100 > 450*108");
        // Sync: the waker's own load comes off, and a waker heavier than
        // its core's load takes the task at once.
        let s = Loads { this: 500.0, prev: 550.0, current: 400.0, task: 100.0 };
        assert!(wake_affine_weight(s, true, 117), "200*100 < 450*108+1");
        assert!(wake_affine_weight(Loads { current: 600.0, ..s }, true, 117));
        // Equal loads: a sync wake-up's tie goes to the waker's core.
        let tie = Loads { this: 0.0, prev: 0.0, current: 0.0, task: 0.0 };
        assert!(wake_affine_weight(tie, true, 117) && !wake_affine_weight(tie, false, 117));
    }

    #[test]
    fn an_idle_recently_used_core_comes_before_the_scan() {
        // Target 0 and previous 2 busy; the task last ran on 3 before 2.
        let w = Wakeup { prev: 2, this: 0, sync: true, affine: true };
        let running = [1, 0, 1, 0];
        let mut recent = Some(3);
        assert_eq!(select_task_rq_fair(w, &mut recent, 4, || false, || 4, |c| running[c as usize]), 3);
        assert_eq!(recent, Some(2), "the previous core is now the recent one");
        // Not idle: the scan from the target finds core 1.
        let running = [1, 0, 1, 1];
        let mut recent = Some(3);
        assert_eq!(select_task_rq_fair(w, &mut recent, 4, || false, || 4, |c| running[c as usize]), 1);
    }
}
