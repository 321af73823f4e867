//! The SR-IOV paper's heuristic interrupt coalescing (Guan et al., §IV) as
//! an ITR policy of a vector: a golden-section search
//! ([`crate::search::GoldenSection`]) of the interrupt throttle rate
//! between `min_rate` and `max_rate`, each probe held for one measurement
//! slice whose receive throughput (bytes per second, "statistics collected
//! by the network interface driver") is the objective, restarted every
//! `restart_irqs` interrupts "since the environment is changing". Once
//! converged it holds the middle of the last interval until the restart.
//!
//! The driver asks the policy when it leaves polling mode, about once per
//! interrupt, so those calls count the interrupts. A slice ends at the
//! first call after `slice_ns` have passed since it began; its throughput
//! is the bytes the calls reported over the time between them. The paper
//! gives neither the slice's length nor the search's stopping width; both
//! are parameters.

use super::{Eitr, ItrPolicy, ItrSample, IXGBE_MAX_INT_RATE, IXGBE_MIN_INT_RATE};
use crate::search::{Goal, GoldenSection, Reuse, Step};

/// The golden-section ITR's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GoldenItrParams {
    /// The search range, interrupts per second (the paper's MinITR and
    /// MaxITR, "determined by the hardware").
    pub min_rate_per_s: u32,
    pub max_rate_per_s: u32,
    /// Stop when the interval is this narrow, interrupts per second (the
    /// paper's AcceptInternal).
    pub accept_rate_per_s: u32,
    /// How long each probe is measured, ns.
    pub slice_ns: u64,
    /// Start a new search after this many interrupts (the paper's 1000).
    pub restart_irqs: u32,
}

impl Default for GoldenItrParams {
    fn default() -> Self {
        GoldenItrParams {
            min_rate_per_s: 8_000,
            max_rate_per_s: 100_000,
            accept_rate_per_s: 2_000,
            slice_ns: 1_000_000,
            restart_irqs: 1_000,
        }
    }
}

impl GoldenItrParams {
    /// One sentence naming the field and its accepted range, if any is out.
    pub fn validate(&self) -> Result<(), String> {
        let range = IXGBE_MIN_INT_RATE..=IXGBE_MAX_INT_RATE;
        for (name, v) in [("min_rate_per_s", self.min_rate_per_s), ("max_rate_per_s", self.max_rate_per_s)] {
            if !range.contains(&v) {
                return Err(format!(
                    "{name} must be within {}..={} (got {v}).",
                    IXGBE_MIN_INT_RATE, IXGBE_MAX_INT_RATE
                ));
            }
        }
        if self.min_rate_per_s >= self.max_rate_per_s {
            return Err(format!(
                "min_rate_per_s must be below max_rate_per_s ({}) (got {}).",
                self.max_rate_per_s, self.min_rate_per_s
            ));
        }
        let width = self.max_rate_per_s - self.min_rate_per_s;
        if self.accept_rate_per_s == 0 || self.accept_rate_per_s >= width {
            return Err(format!(
                "accept_rate_per_s must be within 1..{width}, below the range's width (got {}).",
                self.accept_rate_per_s
            ));
        }
        if self.slice_ns == 0 || self.restart_irqs == 0 {
            return Err("slice_ns and restart_irqs must be at least 1.".to_string());
        }
        Ok(())
    }
}

/// The golden-section ITR of one vector.
pub struct GoldenItr {
    params: GoldenItrParams,
    search: GoldenSection,
    current: Eitr,
    /// The slice in progress: when it began (None until the first call)
    /// and the bytes received since.
    slice_start_ns: Option<u64>,
    slice_bytes: u64,
    /// Interrupts since the search (re)started.
    irqs: u32,
    restarts: u64,
}

impl GoldenItr {
    pub fn new(params: GoldenItrParams) -> Result<GoldenItr, String> {
        params.validate()?;
        let search = GoldenSection::new(
            params.min_rate_per_s as f64,
            params.max_rate_per_s as f64,
            params.accept_rate_per_s as f64,
            Goal::Maximize,
            Reuse::Never,
        )?;
        let current = Self::eitr(search.probe());
        Ok(GoldenItr { params, search, current, slice_start_ns: None, slice_bytes: 0, irqs: 0, restarts: 0 })
    }

    fn eitr(step: Step) -> Eitr {
        let (Step::Measure(rate) | Step::Hold(rate)) = step;
        Eitr::from_rate(rate.round() as u32)
    }

    /// The search (for reports and tests).
    pub fn search(&self) -> &GoldenSection {
        &self.search
    }

    /// Searches started again after `restart_irqs` interrupts.
    pub fn restarts(&self) -> u64 {
        self.restarts
    }
}

impl ItrPolicy for GoldenItr {
    fn current(&self) -> Eitr {
        self.current
    }

    fn observe(&mut self, s: ItrSample) -> Option<Eitr> {
        let before = self.current;
        self.irqs += 1;
        self.slice_bytes += s.rx_bytes;
        let start = *self.slice_start_ns.get_or_insert(s.time_ns);
        let elapsed = s.time_ns.saturating_sub(start);
        if self.irqs >= self.params.restart_irqs {
            // "restart the heuristic algorithm every 1000 interrupts"
            self.search.restart();
            self.restarts += 1;
            self.irqs = 0;
            self.current = Self::eitr(self.search.probe());
            self.slice_start_ns = Some(s.time_ns);
            self.slice_bytes = 0;
        } else if elapsed >= self.params.slice_ns && !self.search.done() {
            let throughput = self.slice_bytes as f64 * 1e9 / elapsed as f64;
            self.current = Self::eitr(self.search.observe(throughput));
            self.slice_start_ns = Some(s.time_ns);
            self.slice_bytes = 0;
        }
        (self.current != before).then_some(self.current)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drive the policy with a vector whose throughput depends on its
    /// rate (`thpt(rate)`, bytes per second) and that interrupts at that
    /// rate: `n` interrupts; the rates it ran at.
    fn drive(p: &mut GoldenItr, n: u32, thpt: impl Fn(f64) -> f64) -> Vec<f64> {
        let mut t = 0u64;
        let mut rates = Vec::new();
        for _ in 0..n {
            let rate = 1e9 / p.current().interval_ns().max(1) as f64;
            let gap_ns = (1e9 / rate) as u64;
            t += gap_ns;
            let bytes = (thpt(rate) * gap_ns as f64 / 1e9) as u64;
            p.observe(ItrSample { time_ns: t, rx_bytes: bytes, ..Default::default() });
            rates.push(rate);
        }
        rates
    }

    #[test]
    fn converges_near_the_peak_and_holds_it_until_the_restart() {
        // Throughput peaks at 48,000 interrupts/s (Figure I's shape).
        let peak = |r: f64| 1e9 / (1.0 + ((r - 48_000.0) / 15_000.0).powi(2));
        let params = GoldenItrParams { restart_irqs: 100_000, ..GoldenItrParams::default() };
        let mut p = GoldenItr::new(params).unwrap();
        drive(&mut p, 5_000, peak);
        assert!(p.search().done(), "converged within 5000 interrupts");
        let held = 1e9 / p.current().interval_ns() as f64;
        // EITR's 2.048 us steps quantise the rate: within 10 % of the peak.
        assert!((held / 48_000.0 - 1.0).abs() < 0.1, "{held}");
        let rates = drive(&mut p, 1_000, peak);
        assert!(rates.iter().all(|&r| r == rates[0]), "holds while converged");
    }

    #[test]
    fn restarts_every_n_interrupts_and_follows_a_moved_peak() {
        let params = GoldenItrParams { restart_irqs: 3_000, ..GoldenItrParams::default() };
        let mut p = GoldenItr::new(params).unwrap();
        drive(&mut p, 2_900, |r| 1e9 / (1.0 + ((r - 30_000.0) / 10_000.0).powi(2)));
        let first = 1e9 / p.current().interval_ns() as f64;
        drive(&mut p, 2_900, |r| 1e9 / (1.0 + ((r - 80_000.0) / 10_000.0).powi(2)));
        let second = 1e9 / p.current().interval_ns() as f64;
        assert_eq!(p.restarts(), 1);
        assert!(first < 40_000.0 && second > 70_000.0, "{first} then {second}");
    }

    #[test]
    fn bad_parameters_are_one_sentence() {
        let bad = [
            GoldenItrParams { min_rate_per_s: 100, ..Default::default() },
            GoldenItrParams { min_rate_per_s: 100_000, max_rate_per_s: 8_000, ..Default::default() },
            GoldenItrParams { accept_rate_per_s: 0, ..Default::default() },
            GoldenItrParams { slice_ns: 0, ..Default::default() },
        ];
        for b in bad {
            let e = GoldenItr::new(b).map(|_| ()).unwrap_err();
            assert!(e.ends_with('.'), "{e}");
        }
    }
}
