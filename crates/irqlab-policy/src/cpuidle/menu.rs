//! The menu governor (`drivers/cpuidle/governors/menu.c`): which idle state
//! a core enters for the idle time it predicts, and what it learns from the
//! time the core really slept (docs/notes/itr-82599-sources.md §5).
//!
//! The prediction is the time to the next timer scaled by a correction
//! factor learnt per bucket (the decade of that time), or, if lower, the
//! typical interval of the last eight idle periods when they repeat
//! (`get_typical_interval`: standard deviation at most 20 µs or under a
//! sixth of the mean, dropping the largest while three quarters remain).
//! The governor takes the deepest state whose target residency and exit
//! latency both fit the prediction; polling only with the next timer 5 µs
//! away or less (3.x menu's "we want to default to C1 (hlt), not to busy
//! polling"). Left out: the load average and I/O waiters that scale the
//! exit-latency limit (1 + 2·load + 10·iowaiters in 3.x, 1 + 10·iowaiters
//! in 6.x) and PM QoS requests.

use super::IdleState;

/// menu.c's constants.
const BUCKETS: usize = 12;
const INTERVALS: usize = 8;
const RESOLUTION: u64 = 1024;
const DECAY: u64 = 8;
/// Idle periods this long count as a perfect prediction (`MAX_INTERESTING`).
const MAX_INTERESTING_US: u64 = 50_000;
/// With the next timer at most this far, menu polls rather than halting
/// (3.x's "default to C1 (hlt), not to busy polling unless the timer is
/// happening really really soon": the timer's distance, not the
/// prediction).
const POLL_TIMER_US: u64 = 5;

/// The governor's state for one core (`struct menu_device`).
#[derive(Clone, Debug)]
pub struct Menu {
    correction: [u64; BUCKETS],
    intervals: [u64; INTERVALS],
    interval_ptr: usize,
    bucket: usize,
    next_timer_us: u64,
}

impl Default for Menu {
    fn default() -> Self {
        Self::new()
    }
}

/// `which_bucket`: by the decade of the time to the next timer.
fn bucket(next_timer_us: u64) -> usize {
    match next_timer_us {
        0..10 => 0,
        10..100 => 1,
        100..1_000 => 2,
        1_000..10_000 => 3,
        10_000..100_000 => 4,
        _ => 5,
    }
}

fn isqrt(v: u64) -> u64 {
    let mut r = (v as f64).sqrt() as u64;
    while r * r > v {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= v {
        r += 1;
    }
    r
}

impl Menu {
    pub fn new() -> Self {
        Menu {
            // `menu_enable_device`: every factor starts at "predicted = next
            // timer"; the intervals start at zero (kzalloc), a "typical" 0 µs
            // until eight real ones are seen.
            correction: [RESOLUTION * DECAY; BUCKETS],
            intervals: [0; INTERVALS],
            interval_ptr: 0,
            bucket: 0,
            next_timer_us: 0,
        }
    }

    /// `get_typical_interval`: the mean of the last eight idle periods if
    /// they repeat, outliers above dropped while three quarters remain.
    /// The kernel drops every value above `max - 1`, which with measured
    /// intervals (distinct, by their jitter) is one per pass; a simulator's
    /// intervals can repeat exactly, so this drops one instance of the
    /// maximum per pass, lest a bimodal pattern lose its whole upper mode
    /// at once and predict the lower.
    fn typical_interval_us(&self) -> Option<u64> {
        let mut kept = self.intervals;
        let mut len = INTERVALS;
        loop {
            let k = &kept[..len];
            let n = len as u64;
            let avg = k.iter().sum::<u64>() / n;
            let var = k.iter().map(|&v| (v as i64 - avg as i64).pow(2) as u64).sum::<u64>() / n;
            let stddev = isqrt(var);
            if (avg > stddev * 6 && n * 4 >= INTERVALS as u64 * 3) || stddev <= 20 {
                return Some(avg);
            }
            if n * 4 <= INTERVALS as u64 * 3 {
                return None;
            }
            let max_at = (0..len).max_by_key(|&i| kept[i]).expect("not empty");
            kept[max_at] = kept[len - 1];
            len -= 1;
        }
    }

    /// `menu_select` with the next timer `next_timer_us` away: the index in
    /// `table` of the state to enter.
    pub fn select(&mut self, table: &[IdleState], next_timer_us: u64) -> usize {
        self.next_timer_us = next_timer_us;
        self.bucket = bucket(next_timer_us);
        let mut predicted_us = next_timer_us * self.correction[self.bucket] / (RESOLUTION * DECAY);
        if let Some(typical) = self.typical_interval_us() {
            predicted_us = predicted_us.min(typical);
        }
        let mut chosen = 0;
        if next_timer_us > POLL_TIMER_US {
            chosen = 1.min(table.len() - 1);
            for (i, s) in table.iter().enumerate().skip(1) {
                let (residency, latency) = (s.target_residency_us as u64, s.exit_latency_us as u64);
                if residency <= predicted_us && latency <= predicted_us {
                    chosen = i;
                }
            }
        }
        chosen
    }

    /// `menu_reflect`/`menu_update` after the last selection: the core
    /// slept `measured_us` (to its wake-up, not counting the exit: "we
    /// correct for the exit latency"), which teaches the bucket's
    /// correction factor and joins the last eight intervals.
    pub fn reflect(&mut self, measured_us: u64) {
        let old = self.correction[self.bucket];
        let mut factor = old - old / DECAY;
        if self.next_timer_us > 0 && measured_us < MAX_INTERESTING_US {
            factor += RESOLUTION * measured_us / self.next_timer_us;
        } else {
            factor += RESOLUTION;
        }
        self.correction[self.bucket] = factor.max(1);
        self.intervals[self.interval_ptr] = measured_us;
        self.interval_ptr = (self.interval_ptr + 1) % INTERVALS;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuidle::{IVB, SNB};

    /// Sleeps `period_us` after each selection, `n` times; the last choice.
    fn settle(m: &mut Menu, table: &[IdleState], next_timer_us: u64, period_us: u64, n: usize) -> usize {
        let mut chosen = 0;
        for _ in 0..n {
            chosen = m.select(table, next_timer_us);
            m.reflect(period_us);
        }
        chosen
    }

    #[test]
    fn repeating_idle_periods_pick_the_deepest_state_they_pay_for() {
        // Ivy Bridge, idle 45 µs again and again, the tick 1 ms away: the
        // typical interval (45) admits C1E (10/20), not C3 (target 156).
        assert_eq!(IVB[settle(&mut Menu::new(), IVB, 1_000, 45, 20)].name, "C1E");
        // Short gaps: C1.
        let mut short = Menu::new();
        settle(&mut short, IVB, 1_000, 8, 20);
        assert_eq!(IVB[short.select(IVB, 1_000)].name, "C1");
        // Short idle periods predict nothing deeper than C1; only a timer
        // at most 5 µs away makes it poll.
        let mut tiny = Menu::new();
        settle(&mut tiny, IVB, 1_000, 3, 20);
        assert_eq!(IVB[tiny.select(IVB, 1_000)].name, "C1");
        tiny.reflect(0);
        assert_eq!(IVB[tiny.select(IVB, 4)].name, "POLL");
    }

    #[test]
    fn a_bimodal_pattern_is_no_typical_interval() {
        // Four idle periods of 0 µs and four of 197 (two interrupts per
        // packet): dropping the long ones one by one stops at six samples,
        // still spread, so no pattern.
        let mut m = Menu::new();
        m.intervals = [0, 197, 0, 197, 0, 197, 0, 197];
        assert_eq!(m.typical_interval_us(), None);
        // One long outlier among seven equal ones is dropped.
        m.intervals = [45, 45, 45, 45, 45, 45, 45, 900];
        assert_eq!(m.typical_interval_us(), Some(45));
    }

    #[test]
    fn without_a_pattern_the_correction_factor_learns_the_timer_ratio() {
        // A fresh governor's eight intervals are zero, a "typical" 0 µs:
        // C1 until it has seen real ones.
        let mut m = Menu::new();
        assert_eq!(SNB[m.select(SNB, 1_000)].name, "C1");
        m.reflect(0);
        // Idle periods cycling through 30, 100, 250 and 400 µs: no typical
        // interval; the factor falls toward their share of the timer distance.
        for i in 0..200usize {
            m.select(SNB, 1_000);
            m.reflect([30, 100, 250, 400][i % 4]);
        }
        assert!(m.typical_interval_us().is_none());
        let predicted = 1_000 * m.correction[bucket(1_000)] / (RESOLUTION * DECAY);
        assert!((120..=300).contains(&predicted), "{predicted}");
    }
}
