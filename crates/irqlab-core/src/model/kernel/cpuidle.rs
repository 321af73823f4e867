//! Idle states and the governor that picks one (`drivers/cpuidle`,
//! `drivers/idle/intel_idle.c`, `drivers/cpuidle/governors/menu.c`).
//!
//! An idle core enters the deepest state the menu governor allows for the
//! idle time it predicts, and a wake-up pays that state's exit latency
//! before the core runs anything (`cpu.idle_states`). The states are
//! intel_idle's tables: exit latency and target residency in µs, the
//! numbers the driver gives the governor. With `cpu.idle_states = "fixed"`
//! (the default) every wake-up pays `cpu.wakeup_latency_ns` instead.
//!
//! The governor is menu's selection and update (docs/notes/
//! itr-82599-sources.md §5): the prediction is the time to the next timer
//! scaled by a correction factor learnt per bucket (the decade of that time),
//! or, if lower, the typical interval of the last eight idle periods when
//! they repeat (`get_typical_interval`: standard deviation at most 20 µs or
//! under a sixth of the mean, dropping the largest while three quarters
//! remain). It takes the deepest state whose target residency and exit
//! latency both fit the prediction; polling only for a prediction of 5 µs
//! or less (3.x menu's "we want to default to C1 (hlt), not to busy
//! polling"). What the model leaves out: the load average and I/O waiters
//! that scale the exit-latency limit (1 + 2·load + 10·iowaiters in 3.x,
//! 1 + 10·iowaiters in 6.x: the cores here wait for no I/O, and a
//! forwarding core runs no task), PM QoS requests, and the next timer
//! other than the periodic tick (`napi.hz`).

use crate::engine::Nanos;
use crate::scenario::{Config, IdleStatesKind};

/// One idle state as intel_idle declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdleState {
    pub name: &'static str,
    pub exit_latency_us: u32,
    pub target_residency_us: u32,
}

const fn state(name: &'static str, exit_latency_us: u32, target_residency_us: u32) -> IdleState {
    IdleState { name, exit_latency_us, target_residency_us }
}

/// The polling state cpuidle puts first (`CPUIDLE_DRIVER_STATE_START` 1):
/// the core spins, so leaving it costs nothing.
const POLL: IdleState = state("POLL", 0, 0);

/// intel_idle's `ivb_cstates` (Ivy Bridge, model 0x3a: the ITR paper's Xeon
/// E3-1230 v2). C7 is used only where CPUID leaf 5 enumerates it; the table
/// keeps it as the driver does.
pub const IVB: &[IdleState] =
    &[POLL, state("C1", 1, 1), state("C1E", 10, 20), state("C3", 59, 156), state("C6", 80, 300), state("C7", 87, 300)];

/// intel_idle's `snb_cstates` (Sandy Bridge; the thesis's E5-2670 is model
/// 0x2d, `idle_cpu_snb` in 3.10 and `idle_cpu_snx` later, same table).
pub const SNB: &[IdleState] =
    &[POLL, state("C1", 2, 2), state("C1E", 10, 20), state("C3", 80, 211), state("C6", 104, 345), state("C7", 109, 345)];

/// intel_idle's `hsw_cstates` (Haswell; the SR-IOV paper's E5-2699 v3 is
/// model 0x3f), its server states (C1-C6; C7s-C10 are client states that
/// a Xeon's CPUID does not enumerate).
pub const HSW: &[IdleState] =
    &[POLL, state("C1", 2, 2), state("C1E", 10, 20), state("C3", 33, 100), state("C6", 133, 400)];

/// The table of `kind` (None: the fixed wake-up latency).
pub fn table(kind: IdleStatesKind) -> Option<&'static [IdleState]> {
    match kind {
        IdleStatesKind::Fixed => None,
        IdleStatesKind::Ivb => Some(IVB),
        IdleStatesKind::Snb => Some(SNB),
        IdleStatesKind::Hsw => Some(HSW),
    }
}

/// A kernel's idle states: the table, and the governor of each core.
#[derive(Clone, Debug)]
pub struct CpuIdle {
    pub table: &'static [IdleState],
    pub menus: Vec<Menu>,
    /// The periodic tick, the next timer an idle core knows of.
    tick_ns: Nanos,
    window_start_ns: Nanos,
}

impl CpuIdle {
    /// For a kernel of `cores` with `cfg`'s idle states (None if fixed).
    pub fn new(cfg: &Config, cores: usize) -> Option<Box<CpuIdle>> {
        let table = table(cfg.cpu.idle_states)?;
        Some(Box::new(CpuIdle {
            table,
            menus: (0..cores).map(|_| Menu::new(table.len())).collect(),
            tick_ns: 1_000_000_000 / u64::from(cfg.napi.hz.max(1)),
            window_start_ns: 0,
        }))
    }

    /// Core `core` goes idle at `now`: the governor picks its state.
    pub fn enter(&mut self, core: usize, now: Nanos) {
        let table = self.table;
        let window = self.window_start_ns;
        let m = &mut self.menus[core];
        // A wake-up the governor was not told of (the core ran without
        // leaving idle through a wake path) ends the last period here.
        m.wake(table, now, window);
        let to_tick = self.tick_ns - now % self.tick_ns;
        m.select(table, now, to_tick);
    }

    /// Core `core` leaves idle at `now`: the exit latency it pays first
    /// (0 if it was not idle, or polled).
    pub fn wake(&mut self, core: usize, now: Nanos) -> Nanos {
        let table = self.table;
        let m = &mut self.menus[core];
        let state = m.state();
        if m.wake(table, now, self.window_start_ns) {
            table[state].exit_latency_us as Nanos * 1_000
        } else {
            0
        }
    }

    /// The measured window starts at `now`.
    pub fn reset_stats(&mut self, now: Nanos) {
        self.window_start_ns = now;
        self.menus.iter_mut().for_each(Menu::reset_counts);
    }

    /// Per state over the window ending at `now`: entries and core-ns.
    pub fn totals(&mut self, now: Nanos) -> Vec<(u64, u64)> {
        let window = self.window_start_ns;
        let mut out = vec![(0, 0); self.table.len()];
        for m in &mut self.menus {
            m.close(now, window);
            for (i, o) in out.iter_mut().enumerate() {
                o.0 += m.entries[i];
                o.1 += m.residency_ns[i];
            }
        }
        out
    }
}

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

/// The governor's state for one core (`struct menu_device`), and what the
/// core spent in each state.
#[derive(Clone, Debug)]
pub struct Menu {
    correction: [u64; BUCKETS],
    intervals: [u64; INTERVALS],
    interval_ptr: usize,
    bucket: usize,
    next_timer_us: u64,
    /// The state entered and when, while idle.
    state: usize,
    entered_ns: Option<Nanos>,
    /// Per state: entries and ns resident, over the measured window.
    pub entries: Vec<u64>,
    pub residency_ns: Vec<u64>,
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
    pub fn new(states: usize) -> Self {
        Menu {
            // `menu_enable_device`: every factor starts at "predicted = next timer".
            correction: [RESOLUTION * DECAY; BUCKETS],
            intervals: [0; INTERVALS],
            interval_ptr: 0,
            bucket: 0,
            next_timer_us: 0,
            state: 0,
            entered_ns: None,
            entries: vec![0; states],
            residency_ns: vec![0; states],
        }
    }

    /// `get_typical_interval`: the mean of the last eight idle periods if
    /// they repeat, outliers above dropped while three quarters remain.
    /// The kernel drops every value above `max - 1`, which with measured
    /// intervals (distinct, by their jitter) is one per pass; the model's
    /// intervals repeat exactly, so it drops one instance of the maximum
    /// per pass, lest a bimodal pattern lose its whole upper mode at once
    /// and predict the lower.
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

    /// `menu_select` at `now` with the next timer `next_timer_ns` away: the
    /// state to enter.
    pub fn select(&mut self, table: &[IdleState], now: Nanos, next_timer_ns: Nanos) -> usize {
        self.next_timer_us = next_timer_ns / 1_000;
        self.bucket = bucket(self.next_timer_us);
        let mut predicted_us = self.next_timer_us * self.correction[self.bucket] / (RESOLUTION * DECAY);
        if let Some(typical) = self.typical_interval_us() {
            predicted_us = predicted_us.min(typical);
        }
        let mut chosen = 0;
        if self.next_timer_us > POLL_TIMER_US {
            chosen = 1.min(table.len() - 1);
            for (i, s) in table.iter().enumerate().skip(1) {
                let (residency, latency) = (s.target_residency_us as u64, s.exit_latency_us as u64);
                if residency <= predicted_us && latency <= predicted_us {
                    chosen = i;
                }
            }
        }
        self.state = chosen;
        self.entered_ns = Some(now);
        self.entries[chosen] += 1;
        chosen
    }

    /// The state the core is in (its exit latency is paid on wake-up).
    pub fn state(&self) -> usize {
        self.state
    }

    /// `menu_reflect`/`menu_update` when the core leaves idle at `now`: the
    /// time it slept teaches the bucket's correction factor and joins the
    /// last eight intervals. Returns false if the core was not idle.
    pub fn wake(&mut self, table: &[IdleState], now: Nanos, window_start: Nanos) -> bool {
        let Some(entered) = self.entered_ns.take() else { return false };
        // The state's residency runs to the end of its exit, which the
        // wake-up pays from `now` (the core's idle time ends there too).
        let exit_ns = table[self.state].exit_latency_us as u64 * 1_000;
        self.residency_ns[self.state] += (now + exit_ns).saturating_sub(entered.max(window_start));
        // What menu learns: the residency less the exit latency ("we
        // correct for the exit latency"), the time from entry to `now`.
        let measured_us = now.saturating_sub(entered) / 1_000;
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
        true
    }

    /// The measured window starts: per-state counts restart.
    pub fn reset_counts(&mut self) {
        self.entries.iter_mut().for_each(|e| *e = 0);
        self.residency_ns.iter_mut().for_each(|r| *r = 0);
    }

    /// At the end of the run: a core still idle counts its time so far.
    pub fn close(&mut self, now: Nanos, window_start: Nanos) {
        if let Some(entered) = self.entered_ns {
            self.residency_ns[self.state] += now.saturating_sub(entered.max(window_start));
            self.entered_ns = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeating_idle_periods_pick_the_deepest_state_they_pay_for() {
        // Ivy Bridge, idle 45 µs again and again, the tick 1 ms away: the
        // typical interval (45) admits C1E (10/20), not C3 (target 156).
        let mut m = Menu::new(IVB.len());
        let mut now = 0;
        let mut chosen = 0;
        for _ in 0..20 {
            chosen = m.select(IVB, now, 1_000_000);
            now += 45_000;
            assert!(m.wake(IVB, now, 0));
            now += IVB[chosen].exit_latency_us as u64 * 1_000 + 5_000;
        }
        assert_eq!(IVB[chosen].name, "C1E");
        // Short gaps: C1; very short: poll.
        let mut short = Menu::new(IVB.len());
        for _ in 0..20 {
            let s = short.select(IVB, now, 1_000_000);
            now += 8_000;
            short.wake(IVB, now, 0);
            now += IVB[s].exit_latency_us as u64 * 1_000;
        }
        assert_eq!(IVB[short.select(IVB, now, 1_000_000)].name, "C1");
        // Short idle periods predict nothing deeper than C1; only a timer
        // at most 5 µs away makes it poll.
        let mut tiny = Menu::new(IVB.len());
        for _ in 0..20 {
            tiny.select(IVB, now, 1_000_000);
            now += 3_000;
            tiny.wake(IVB, now, 0);
        }
        assert_eq!(IVB[tiny.select(IVB, now, 1_000_000)].name, "C1");
        tiny.wake(IVB, now, 0);
        assert_eq!(IVB[tiny.select(IVB, now, 4_000)].name, "POLL");
    }

    #[test]
    fn a_bimodal_pattern_is_no_typical_interval() {
        // Four idle periods of 0 µs and four of 197 (two interrupts per
        // packet): dropping the long ones one by one stops at six samples,
        // still spread, so no pattern.
        let mut m = Menu::new(IVB.len());
        m.intervals = [0, 197, 0, 197, 0, 197, 0, 197];
        assert_eq!(m.typical_interval_us(), None);
        // One long outlier among seven equal ones is dropped.
        m.intervals = [45, 45, 45, 45, 45, 45, 45, 900];
        assert_eq!(m.typical_interval_us(), Some(45));
    }

    #[test]
    fn without_a_pattern_the_correction_factor_learns_the_timer_ratio() {
        // A fresh governor's eight intervals are zero (kzalloc), a
        // "typical" 0 µs: C1 until it has seen real ones.
        let mut m = Menu::new(SNB.len());
        assert_eq!(SNB[m.select(SNB, 0, 1_000_000)].name, "C1");
        m.wake(SNB, 0, 0);
        // Idle periods cycling through 30, 100, 250 and 400 µs: no typical
        // interval; the factor falls toward their share of the timer distance.
        let mut now = 0;
        for i in 0..200usize {
            m.select(SNB, now, 1_000_000);
            now += [30_000, 100_000, 250_000, 400_000][i % 4];
            m.wake(SNB, now, 0);
        }
        assert!(m.typical_interval_us().is_none());
        let predicted = 1_000 * m.correction[bucket(1_000)] / (RESOLUTION * DECAY);
        assert!((120..=300).contains(&predicted), "{predicted}");
    }

    #[test]
    fn residency_counts_only_the_measured_window() {
        let mut m = Menu::new(IVB.len());
        m.select(IVB, 1_000, 1_000_000);
        m.reset_counts();
        m.wake(IVB, 11_000, 5_000);
        // From the window's start to the end of C1's 1 µs exit.
        assert_eq!(m.residency_ns.iter().sum::<u64>(), 7_000);
        assert!(!m.wake(IVB, 12_000, 5_000), "not idle");
    }
}
