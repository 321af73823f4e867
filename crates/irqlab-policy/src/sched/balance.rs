//! Load balancing within one cache domain of single-core groups
//! (`kernel/sched/fair.c`, Linux 6.10; docs/notes/cfs-placement-sources.md
//! §5). An idle core, about to go idle (`sched_balance_newidle`) or at its
//! periodic balance (`sched_balance_domains`, done for a tickless core by
//! the idle load balancer), pulls one task, "2 against 0 moves 1"
//! (`calculate_imbalance`'s `migrate_task`), from the core running the
//! most, choosing the task that ran least recently (`detach_tasks` walks
//! `cfs_tasks` from its tail) among those not cache-hot (`task_hot`); a
//! periodic balance that keeps failing takes hot tasks too, and then the
//! running one ([`DomainBalance`]).

/// `sysctl_sched_migration_cost`: a task that ran this recently is
/// cache-hot, and the balancer leaves it.
pub const MIGRATION_COST_NS: u64 = 500_000;

/// The MC domain's `cache_nice_tries` (`sd_init` with `SD_SHARE_LLC`):
/// periodic balances that may fail before a cache-hot task is moved.
pub const CACHE_NICE_TRIES: u32 = 1;
/// `sd_init`'s `busy_factor`: a busy core balances this many times less
/// often.
pub const BUSY_FACTOR: u64 = 16;

/// One core's view of its cache domain for periodic balancing
/// (`sd->balance_interval`, `sd->nr_balance_failed`): the interval starts
/// at `min_interval`, the domain's size in ms, doubles after a pass that
/// found the domain balanced up to `max_interval` (twice that), and
/// returns to the minimum after one that found an imbalance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DomainBalance {
    /// The domain's cores (`sd_weight`).
    cores: u32,
    pub interval_ms: u64,
    pub failed: u32,
}

/// What a periodic balance pass found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// No core to pull from (`out_balanced`).
    Balanced,
    /// A task was pulled.
    Moved,
    /// A busiest core, but none of its tasks could be detached.
    Failed,
    /// None could be detached and the running one is pushed instead
    /// (`stop_one_cpu_nowait`): the failures are set to `cache_nice_tries
    /// + 1`, so a hot task may go at the next pass.
    Active,
}

impl DomainBalance {
    pub fn new(cores: u32) -> Self {
        DomainBalance { cores, interval_ms: cores as u64, failed: 0 }
    }

    /// `get_sd_balance_interval`: jiffies to the core's next periodic
    /// balance, times `BUSY_FACTOR` less one jiffy when the core is busy,
    /// within 1 and `max_load_balance_interval` (HZ times the online cores
    /// over 10).
    pub fn interval_jiffies(&self, busy: bool, hz: u32) -> u64 {
        let ms = self.interval_ms * if busy { BUSY_FACTOR } else { 1 };
        let mut j = (ms * hz as u64).div_ceil(1000);
        if busy {
            j = j.saturating_sub(1);
        }
        j.clamp(1, (hz as u64 * self.cores as u64 / 10).max(1))
    }

    /// Hot tasks may be pulled: `nr_balance_failed > cache_nice_tries`.
    pub fn may_pull_hot(&self) -> bool {
        self.failed > CACHE_NICE_TRIES
    }

    /// The running task is to be pushed (`need_active_balance`'s
    /// `imbalanced_active_balance`: `migrate_task` with
    /// `nr_balance_failed > cache_nice_tries + 2`).
    pub fn active(&self) -> bool {
        self.failed > CACHE_NICE_TRIES + 2
    }

    /// `sched_balance_rq`'s bookkeeping after a pass.
    pub fn after(&mut self, pass: Pass) {
        match pass {
            Pass::Balanced => {
                self.failed = 0;
                if self.interval_ms < 2 * self.cores as u64 {
                    self.interval_ms *= 2;
                }
            }
            Pass::Moved => {
                self.failed = 0;
                self.interval_ms = self.cores as u64;
            }
            Pass::Failed => {
                self.failed += 1;
                self.interval_ms = self.cores as u64;
            }
            Pass::Active => {
                self.failed = CACHE_NICE_TRIES + 1;
                self.interval_ms = self.cores as u64;
            }
        }
    }
}

/// `sched_balance_find_src_rq` for `migrate_task`, balancing for core
/// `this` among `cores`: the core running the most tasks, two at least;
/// of equals, the first after `this` (the domain's groups are listed
/// wrapping from it). `nr_running(c)` counts the tasks running and queued
/// on core c.
pub fn find_src(this: u32, cores: u32, nr_running: impl Fn(u32) -> u32) -> Option<u32> {
    (1..cores)
        .map(|i| (this + i) % cores)
        .filter(|&c| nr_running(c) >= 2)
        .max_by_key(|&c| (nr_running(c), std::cmp::Reverse((c + cores - this) % cores)))
}

/// `detach_tasks`' choice at `now` among a core's queued tasks, given as
/// (their index, when they last started running): the one that ran least
/// recently, of those not run within [`MIGRATION_COST_NS`] unless `hot_ok`;
/// its index.
pub fn pick_task(queued: impl IntoIterator<Item = (usize, u64)>, now: u64, hot_ok: bool) -> Option<usize> {
    queued
        .into_iter()
        .filter(|&(_, ran)| hot_ok || now.saturating_sub(ran) >= MIGRATION_COST_NS)
        .min_by_key(|&(_, ran)| ran)
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busiest_core_of_two_tasks_or_more_the_first_after_this_of_equals() {
        let running = [0, 2, 3, 3, 1];
        let nr = |c: u32| running[c as usize];
        assert_eq!(find_src(0, 5, nr), Some(2));
        assert_eq!(find_src(2, 5, nr), Some(3), "core 2 itself is not a source");
        assert_eq!(find_src(3, 5, nr), Some(2));
        assert_eq!(find_src(0, 5, |c| [0, 1, 1, 1, 1][c as usize]), None, "one task each: balanced");
    }

    #[test]
    fn the_least_recently_run_task_that_is_not_cache_hot() {
        let now = 1_000_000;
        assert_eq!(pick_task([(0, 900_000), (1, 100_000), (2, 200_000)], now, false), Some(1));
        assert_eq!(pick_task([(0, 900_000)], now, false), None, "ran 100 us ago: hot");
        assert_eq!(pick_task([(0, 900_000)], now + MIGRATION_COST_NS, false), Some(0));
        assert_eq!(pick_task([(4, 10), (5, 10)], now, false), Some(4), "of equals, the first");
    }

    #[test]
    fn a_hot_task_moves_once_periodic_balances_have_failed_twice() {
        assert_eq!(pick_task([(0, 900_000)], 1_000_000, true), Some(0));
        let mut d = DomainBalance::new(8);
        d.after(Pass::Failed);
        assert!(!d.may_pull_hot());
        d.after(Pass::Failed);
        assert!(d.may_pull_hot() && !d.active());
        d.after(Pass::Failed);
        d.after(Pass::Failed);
        assert!(d.active(), "the fourth failure pushes the running task");
        d.after(Pass::Moved);
        assert_eq!(d, DomainBalance::new(8));
    }

    #[test]
    fn the_interval_is_the_domain_size_in_ms_doubling_while_balanced_and_16_times_when_busy() {
        let mut d = DomainBalance::new(8);
        // HZ 250: 8 ms are 2 jiffies; busy, 128 ms less a jiffy.
        assert_eq!((d.interval_jiffies(false, 250), d.interval_jiffies(true, 250)), (2, 31));
        d.after(Pass::Balanced);
        assert_eq!(d.interval_jiffies(false, 250), 4);
        d.after(Pass::Balanced);
        assert_eq!(d.interval_ms, 16, "at most max_interval, twice the minimum");
        // 256 ms less a jiffy, under max_load_balance_interval (HZ * 8 / 10
        // = 200 jiffies).
        assert_eq!(d.interval_jiffies(true, 250), 63);
        d.after(Pass::Failed);
        assert_eq!((d.interval_ms, d.failed), (8, 1));
    }
}
