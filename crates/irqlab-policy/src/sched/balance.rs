//! `sched_balance_newidle` within one cache domain of single-core groups
//! (`kernel/sched/fair.c`, Linux 6.10; docs/notes/cfs-placement-sources.md
//! §5): a core about to go idle pulls one task, "2 against 0 moves 1"
//! (`calculate_imbalance`'s `migrate_task`), from the core running the
//! most, choosing the task that ran least recently (`detach_tasks` walks
//! `cfs_tasks` from its tail) among those not cache-hot (`task_hot`).

/// `sysctl_sched_migration_cost`: a task that ran this recently is
/// cache-hot, and the balancer leaves it.
pub const MIGRATION_COST_NS: u64 = 500_000;

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
/// recently, of those not run within [`MIGRATION_COST_NS`]; its index.
pub fn pick_task(queued: impl IntoIterator<Item = (usize, u64)>, now: u64) -> Option<usize> {
    queued
        .into_iter()
        .filter(|&(_, ran)| now.saturating_sub(ran) >= MIGRATION_COST_NS)
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
        assert_eq!(pick_task([(0, 900_000), (1, 100_000), (2, 200_000)], now), Some(1));
        assert_eq!(pick_task([(0, 900_000)], now), None, "ran 100 us ago: hot");
        assert_eq!(pick_task([(0, 900_000)], now + MIGRATION_COST_NS), Some(0));
        assert_eq!(pick_task([(4, 10), (5, 10)], now), Some(4), "of equals, the first");
    }
}
