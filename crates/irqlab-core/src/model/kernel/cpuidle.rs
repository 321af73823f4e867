//! A kernel's idle states (`cpu.idle_states`): which state each idle core
//! is in, what leaving it costs and how long the cores spent in each.
//!
//! An idle core enters the state the menu governor chooses
//! (`irqlab_policy::cpuidle`: intel_idle's tables, menu's prediction), and
//! a wake-up pays that state's exit latency before the core runs anything.
//! With `cpu.idle_states = "fixed"` (the default) there is no table and
//! every wake-up pays `cpu.wakeup_latency_ns` instead. The next timer an
//! idle core knows of is the periodic tick (`napi.hz`); the model's other
//! timers (NAPI's, the ITR's) are not the governor's to see.

use irqlab_policy::cpuidle::{IdleState, Menu, HSW, IVB, SNB};

use crate::engine::Nanos;
use crate::scenario::{Config, IdleStatesKind};

/// The table of `kind` (None: the fixed wake-up latency).
pub fn table(kind: IdleStatesKind) -> Option<&'static [IdleState]> {
    match kind {
        IdleStatesKind::Fixed => None,
        IdleStatesKind::Ivb => Some(IVB),
        IdleStatesKind::Snb => Some(SNB),
        IdleStatesKind::Hsw => Some(HSW),
    }
}

/// A kernel's idle states: the table, and each core's governor and stay.
#[derive(Clone, Debug)]
pub struct CpuIdle {
    pub table: &'static [IdleState],
    pub cores: Vec<CoreIdle>,
    /// The periodic tick, the next timer an idle core knows of.
    tick_ns: Nanos,
    window_start_ns: Nanos,
}

/// One core: its governor, the state it is in while idle, and what it
/// spent in each state over the measured window.
#[derive(Clone, Debug)]
pub struct CoreIdle {
    menu: Menu,
    state: usize,
    entered_ns: Option<Nanos>,
    pub entries: Vec<u64>,
    pub residency_ns: Vec<u64>,
}

impl CpuIdle {
    /// For a kernel of `cores` with `cfg`'s idle states (None if fixed).
    pub fn new(cfg: &Config, cores: usize) -> Option<Box<CpuIdle>> {
        let table = table(cfg.cpu.idle_states)?;
        Some(Box::new(CpuIdle {
            table,
            cores: (0..cores).map(|_| CoreIdle::new(table.len())).collect(),
            tick_ns: 1_000_000_000 / u64::from(cfg.napi.hz.max(1)),
            window_start_ns: 0,
        }))
    }

    /// Core `core` goes idle at `now`: the governor picks its state.
    pub fn enter(&mut self, core: usize, now: Nanos) {
        let c = &mut self.cores[core];
        // Every way out of idle passes `wake` (the scheduler's wake-up or
        // its first segment), so a core entering idle is not idle already.
        debug_assert!(c.entered_ns.is_none(), "core {core} enters idle twice");
        let to_tick = self.tick_ns - now % self.tick_ns;
        let chosen = c.menu.select(self.table, to_tick / 1_000);
        c.state = chosen;
        c.entered_ns = Some(now);
        c.entries[chosen] += 1;
    }

    /// Core `core` leaves idle at `now`: the exit latency it pays first
    /// (0 if it was not idle, or polled).
    pub fn wake(&mut self, core: usize, now: Nanos) -> Nanos {
        let c = &mut self.cores[core];
        let Some(entered) = c.entered_ns.take() else { return 0 };
        // The state's residency runs to the end of its exit, which the
        // wake-up pays from `now` (the core's idle time ends there too).
        let exit_ns = self.table[c.state].exit_latency_us as Nanos * 1_000;
        c.residency_ns[c.state] += (now + exit_ns).saturating_sub(entered.max(self.window_start_ns));
        // What menu learns: the time from entry to `now`, without the exit.
        c.menu.reflect(now.saturating_sub(entered) / 1_000);
        exit_ns
    }

    /// The measured window starts at `now`.
    pub fn reset_stats(&mut self, now: Nanos) {
        self.window_start_ns = now;
        for c in &mut self.cores {
            c.entries.iter_mut().for_each(|e| *e = 0);
            c.residency_ns.iter_mut().for_each(|r| *r = 0);
        }
    }

    /// Per state over the window ending at `now`: entries and core-ns. A
    /// core still idle counts its time so far.
    pub fn totals(&mut self, now: Nanos) -> Vec<(u64, u64)> {
        let window = self.window_start_ns;
        let mut out = vec![(0, 0); self.table.len()];
        for c in &mut self.cores {
            if let Some(entered) = c.entered_ns {
                c.residency_ns[c.state] += now.saturating_sub(entered.max(window));
                c.entered_ns = Some(now);
            }
            for (i, o) in out.iter_mut().enumerate() {
                o.0 += c.entries[i];
                o.1 += c.residency_ns[i];
            }
        }
        out
    }
}

impl CoreIdle {
    fn new(states: usize) -> Self {
        CoreIdle { menu: Menu::new(), state: 0, entered_ns: None, entries: vec![0; states], residency_ns: vec![0; states] }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ivb() -> CpuIdle {
        CpuIdle { table: IVB, cores: vec![CoreIdle::new(IVB.len())], tick_ns: 1_000_000, window_start_ns: 0 }
    }

    #[test]
    fn residency_counts_only_the_measured_window() {
        let mut idle = ivb();
        idle.enter(0, 1_000);
        idle.reset_stats(5_000);
        // A fresh governor enters C1; from the window's start to the end of
        // C1's 1 µs exit.
        assert_eq!(idle.wake(0, 11_000), 1_000);
        assert_eq!(idle.cores[0].residency_ns.iter().sum::<u64>(), 7_000);
        assert_eq!(idle.wake(0, 12_000), 0, "not idle");
    }

    #[test]
    fn a_core_still_idle_counts_its_time_at_the_end() {
        let mut idle = ivb();
        idle.enter(0, 0);
        let totals = idle.totals(30_000);
        assert_eq!(totals.iter().map(|t| t.1).sum::<u64>(), 30_000);
        assert_eq!(totals.iter().map(|t| t.0).sum::<u64>(), 1);
    }
}
