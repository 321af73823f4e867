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
//!
//! **The minimum effect** (`min_effect`, not in the paper): each search
//! first measures two slices under the driver's own ITR (the "default
//! interrupt coalescing mechanism" the paper compares with), and once it
//! converges measures its answer for two slices more. The answer is held
//! only if its mean beats the default's by more than the tolerance, the
//! larger of `min_effect` of the default's throughput and twice the noise
//! (the root mean square of the two pairs' differences: a slice ends at an
//! interrupt, so it counts a whole number of polls); otherwise the default
//! policy runs until the restart. This is the rule of the product's tuners
//! (python/irqlab/tuning.py). On a flat objective the search's answer is
//! an accident of the slices, and holding it would change the rate for
//! nothing. None: the paper's algorithm as printed, the answer held
//! whatever it measured.

use super::{Eitr, ItrPolicy, ItrSample, IxgbeItr, IXGBE_MAX_INT_RATE, IXGBE_MIN_INT_RATE};
use crate::search::{Goal, GoldenSection, Reuse, Step};

/// The largest `min_effect`: a gain beyond half the throughput is no longer
/// a "minimum" (the product's tuners share it: python/irqlab/tuning.py).
pub const MAX_MIN_EFFECT: f64 = 0.5;
/// The tolerance in noises: a gain under twice the RMS difference of two
/// measurements of one value is a tie (python/irqlab/tuning.py's).
pub const NOISE_FACTOR: f64 = 2.0;
/// Slices measured of the default, and of the answer.
const REPEATS: usize = 2;

/// The golden-section ITR's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
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
    /// Hold the search's answer only if it beats the default's throughput
    /// by more than this fraction of it (None: always, as printed).
    pub min_effect: Option<f64>,
}

impl Default for GoldenItrParams {
    fn default() -> Self {
        GoldenItrParams {
            min_rate_per_s: 8_000,
            max_rate_per_s: 100_000,
            accept_rate_per_s: 2_000,
            slice_ns: 1_000_000,
            restart_irqs: 1_000,
            min_effect: None,
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
        if let Some(m) = self.min_effect {
            if !(0.0..=MAX_MIN_EFFECT).contains(&m) {
                return Err(format!("min_effect must be within 0..={MAX_MIN_EFFECT} (got {m})."));
            }
        }
        Ok(())
    }
}

/// Where a search with a minimum effect is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Measuring the default policy's throughput (two slices).
    Baseline,
    /// Probing rates.
    Search,
    /// Measuring the converged answer (two slices).
    Confirm,
    /// Holding the answer, which beat the default.
    Tuned,
    /// The default policy runs: the answer did not beat it.
    Default,
}

/// The golden-section ITR of one vector.
pub struct GoldenItr {
    params: GoldenItrParams,
    search: GoldenSection,
    current: Eitr,
    /// The driver's own ITR, with a minimum effect: the baseline, and what
    /// runs after a tie.
    default: Box<dyn ItrPolicy + Send>,
    stage: Stage,
    /// The slices measured in this stage (Baseline, Confirm): the first
    /// `measured` of `slices`; and the default's.
    slices: [f64; REPEATS],
    measured: usize,
    baseline: [f64; REPEATS],
    ties: u64,
    /// The slice in progress: when it began (None until the first call)
    /// and the bytes received since.
    slice_start_ns: Option<u64>,
    slice_bytes: u64,
    /// Interrupts since the search (re)started.
    irqs: u32,
    restarts: u64,
}

impl GoldenItr {
    /// With ixgbe's dynamic ITR as the default (ixgbevf's too).
    pub fn new(params: GoldenItrParams) -> Result<GoldenItr, String> {
        Self::with_default(params, Box::new(IxgbeItr::new()))
    }

    /// With `default` as the driver's own ITR (used with a minimum effect).
    pub fn with_default(params: GoldenItrParams, default: Box<dyn ItrPolicy + Send>) -> Result<GoldenItr, String> {
        params.validate()?;
        let search = GoldenSection::new(
            params.min_rate_per_s as f64,
            params.max_rate_per_s as f64,
            params.accept_rate_per_s as f64,
            Goal::Maximize,
            Reuse::Never,
        )?;
        let (stage, current) = match params.min_effect {
            None => (Stage::Search, Self::eitr(search.probe())),
            Some(_) => (Stage::Baseline, default.current()),
        };
        Ok(GoldenItr {
            params,
            search,
            current,
            default,
            stage,
            slices: [0.0; REPEATS],
            measured: 0,
            baseline: [0.0; REPEATS],
            ties: 0,
            slice_start_ns: None,
            slice_bytes: 0,
            irqs: 0,
            restarts: 0,
        })
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

    /// Where the search is (always `Search` without a minimum effect).
    pub fn stage(&self) -> Stage {
        self.stage
    }

    /// Searches whose answer did not beat the default by the minimum effect.
    pub fn ties(&self) -> u64 {
        self.ties
    }

    /// One more slice of the stage's measurements: true when it has them all.
    fn measure(&mut self, bytes_per_s: f64) -> bool {
        self.slices[self.measured] = bytes_per_s;
        self.measured += 1;
        let all = self.measured == REPEATS;
        if all {
            self.measured = 0;
        }
        all
    }

    /// Whether the slice in progress is measured: the search's probes, and
    /// with a minimum effect the default's and the answer's slices.
    fn measuring(&self) -> bool {
        match self.params.min_effect {
            None => !self.search.done(),
            Some(_) => matches!(self.stage, Stage::Baseline | Stage::Search | Stage::Confirm),
        }
    }

    /// A slice ended with `bytes_per_s` under a minimum effect of
    /// `min_effect`: the next stage and the value in force.
    fn slice_done(&mut self, bytes_per_s: f64, min_effect: f64) {
        match self.stage {
            Stage::Baseline => {
                if self.measure(bytes_per_s) {
                    self.baseline = self.slices;
                    self.stage = Stage::Search;
                    self.current = Self::eitr(self.search.probe());
                }
            }
            Stage::Search => {
                self.current = Self::eitr(self.search.observe(bytes_per_s));
                if self.search.done() {
                    self.stage = Stage::Confirm;
                }
            }
            Stage::Confirm => {
                if !self.measure(bytes_per_s) {
                    return;
                }
                let sum = |m: [f64; REPEATS]| m[0] + m[1];
                let mean = |m: [f64; REPEATS]| sum(m) / 2.0;
                let (base, answer) = (self.baseline, self.slices);
                // The RMS of the two pairs' differences.
                let noise = (((base[0] - base[1]).powi(2) + (answer[0] - answer[1]).powi(2)) / 2.0).sqrt();
                let tolerance = (min_effect * sum(base) / 2.0).max(NOISE_FACTOR * noise);
                if mean(answer) > mean(base) + tolerance {
                    self.stage = Stage::Tuned;
                } else {
                    self.ties += 1;
                    self.stage = Stage::Default;
                    self.current = self.default.current();
                }
            }
            Stage::Tuned | Stage::Default => {}
        }
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
        if matches!(self.stage, Stage::Baseline | Stage::Default) {
            self.default.observe(s);
            self.current = self.default.current();
        }
        let start = *self.slice_start_ns.get_or_insert(s.time_ns);
        let elapsed = s.time_ns.saturating_sub(start);
        if self.irqs >= self.params.restart_irqs {
            // "restart the heuristic algorithm every 1000 interrupts"
            self.search.restart();
            self.restarts += 1;
            self.irqs = 0;
            if self.params.min_effect.is_some() {
                self.stage = Stage::Baseline;
                self.measured = 0;
                self.current = self.default.current();
            } else {
                self.current = Self::eitr(self.search.probe());
            }
            self.slice_start_ns = Some(s.time_ns);
            self.slice_bytes = 0;
        } else if elapsed >= self.params.slice_ns && self.measuring() {
            let throughput = self.slice_bytes as f64 * 1e9 / elapsed as f64;
            match self.params.min_effect {
                Some(min_effect) => self.slice_done(throughput, min_effect),
                None => self.current = Self::eitr(self.search.observe(throughput)),
            }
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
    fn a_flat_objective_keeps_the_default_and_a_peak_is_held() {
        let params = GoldenItrParams { restart_irqs: 100_000, min_effect: Some(0.01), ..GoldenItrParams::default() };
        // The first slice runs the default (ixgbe's dynamic ITR starts at
        // 20,000/s).
        let mut flat = GoldenItr::new(params).unwrap();
        assert_eq!(flat.stage(), Stage::Baseline);
        assert_eq!(flat.current(), Eitr(super::super::IXGBE_20K_ITR));
        // Throughput the same at every rate: the search converges, its
        // answer measures no better, and the default runs again.
        drive(&mut flat, 5_000, |_| 1e9);
        assert_eq!((flat.stage(), flat.ties()), (Stage::Default, 1));
        // 0.5 % better than the default everywhere is within 1 %: a tie too.
        let mut small = GoldenItr::new(params).unwrap();
        let mut t = 0;
        let gain = |p: &GoldenItr| if matches!(p.stage(), Stage::Baseline | Stage::Default) { 1.0 } else { 1.005 };
        for _ in 0..5_000 {
            t += 20_000;
            let bytes = (20_000.0 * gain(&small)) as u64;
            small.observe(ItrSample { time_ns: t, rx_bytes: bytes, ..Default::default() });
        }
        assert_eq!(small.stage(), Stage::Default);
        // A clear peak at 48,000/s beats the default's 20,000/s: held.
        let mut peaked = GoldenItr::new(params).unwrap();
        drive(&mut peaked, 5_000, |r| 1e9 / (1.0 + ((r - 48_000.0) / 15_000.0).powi(2)));
        assert_eq!((peaked.stage(), peaked.ties()), (Stage::Tuned, 0));
        let held = 1e9 / peaked.current().interval_ns() as f64;
        assert!((held / 48_000.0 - 1.0).abs() < 0.1, "{held}");
    }

    #[test]
    fn noisy_slices_of_a_flat_objective_tie() {
        // The same throughput at every rate, each poll's bytes off by up to
        // ±20 % (a fixed pseudo-random sequence): a slice's mean moves by a
        // few per cent, more than the 1 % minimum, and the noise term keeps
        // most searches from adopting their accidental answer.
        let params = GoldenItrParams { restart_irqs: 40_000, min_effect: Some(0.01), ..GoldenItrParams::default() };
        let mut p = GoldenItr::new(params).unwrap();
        let (mut t, mut x, mut searches, mut tuned) = (0u64, 12_345u64, 0, 0);
        let mut last = p.stage();
        for _ in 0..400_000 {
            t += 50_000;
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let jitter = (x >> 33) as f64 / (1u64 << 31) as f64 * 0.4 - 0.2;
            p.observe(ItrSample { time_ns: t, rx_bytes: (50_000.0 * (1.0 + jitter)) as u64, ..Default::default() });
            let now = p.stage();
            if now != last && matches!(now, Stage::Tuned | Stage::Default) {
                searches += 1;
                tuned += u32::from(now == Stage::Tuned);
            }
            last = now;
        }
        assert!(searches >= 8, "{searches} searches finished");
        assert!(tuned * 5 <= searches, "{tuned} of {searches} searches held a noisy answer");
        assert_eq!(p.ties() as u32, searches - tuned);
    }

    #[test]
    fn without_a_minimum_effect_the_search_starts_at_once() {
        let p = GoldenItr::new(GoldenItrParams::default()).unwrap();
        assert_eq!(p.stage(), Stage::Search);
        assert_ne!(p.current(), Eitr(super::super::IXGBE_20K_ITR));
    }

    #[test]
    fn bad_parameters_are_one_sentence() {
        let bad = [
            GoldenItrParams { min_rate_per_s: 100, ..Default::default() },
            GoldenItrParams { min_rate_per_s: 100_000, max_rate_per_s: 8_000, ..Default::default() },
            GoldenItrParams { accept_rate_per_s: 0, ..Default::default() },
            GoldenItrParams { slice_ns: 0, ..Default::default() },
            GoldenItrParams { min_effect: Some(0.6), ..Default::default() },
            GoldenItrParams { min_effect: Some(f64::NAN), ..Default::default() },
        ];
        for b in bad {
            let e = GoldenItr::new(b).map(|_| ()).unwrap_err();
            assert!(e.ends_with('.'), "{e}");
        }
    }
}
