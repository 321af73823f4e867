//! The SR-IOV paper's heuristic interrupt coalescing algorithm (§IV): a
//! golden-section search of the interrupt throttle rate between the
//! hardware's bounds, on throughput measured over a short slice at each
//! probe, restarted every 1000 interrupts because the best rate moves with
//! the load. Generalised here to any scalar knob and any objective, to be
//! maximised or minimised.
//!
//! The paper's loop, per iteration, probes two points of the interval,
//! `TestLow = Low + (1 - 0.618)·Internal` and `TestHigh = Low +
//! 0.618·Internal`, measures both afresh, keeps the part of the interval on
//! the better point's side and stops when the interval is narrower than
//! `AcceptInternal`, answering its middle. Printed literally, its
//! comparison (`if ThptLow < ThptHigh then High = TestHigh`) keeps the side
//! of the *worse* point, which converges to the lowest throughput; the
//! policy keeps the better side, as its text says it does ("exclude
//! intervals where the best interrupt throttle rate cannot exist").
//!
//! Measuring both points afresh (the paper's way, [`Reuse::Never`]) costs
//! two slices per iteration but tolerates a load that changes between
//! iterations; an offline tuner of a fixed system can keep the surviving
//! probe's measurement, as classic golden-section search does
//! ([`Reuse::Surviving`]): one slice per iteration.
//!
//! The policy is an ask/tell state machine: [`GoldenSection::probe`] names
//! the value to apply and measure next, [`GoldenSection::observe`] takes
//! the measurement; once converged it answers the best value until
//! [`GoldenSection::restart`].

/// The golden ratio's conjugate, (√5 − 1)/2 (the paper's `CutRate` 0.618).
pub const CUT_RATE: f64 = 0.618_033_988_749_894_9;

/// Maximise the objective (throughput) or minimise it (latency, CPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Goal {
    Maximize,
    Minimize,
}

/// Whether an iteration measures both probes afresh (the paper) or keeps
/// the surviving probe's measurement (classic golden-section search).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reuse {
    Never,
    Surviving,
}

/// Where the search stands.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Step {
    /// Apply this value and measure the objective: call `observe`.
    Measure(f64),
    /// Converged: apply this value until a restart.
    Hold(f64),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// Waiting for the low probe's measurement.
    Low,
    /// Waiting for the high probe's measurement (the low one's known).
    High { low: f64 },
    Done,
}

/// The search over [`min`, `max`] with stopping width `accept`.
#[derive(Clone, Debug, PartialEq)]
pub struct GoldenSection {
    min: f64,
    max: f64,
    accept: f64,
    goal: Goal,
    reuse: Reuse,
    low: f64,
    high: f64,
    phase: Phase,
    /// `Reuse::Surviving`: the next high probe's measurement, kept from the
    /// iteration before (the next low probe's goes straight into `Phase::High`).
    kept_high: Option<f64>,
    best: f64,
    evaluations: u64,
}

impl GoldenSection {
    /// A search over [`min`, `max`] that stops when the interval is no
    /// wider than `accept`. One sentence naming the bad argument if any.
    pub fn new(min: f64, max: f64, accept: f64, goal: Goal, reuse: Reuse) -> Result<GoldenSection, String> {
        if !(min.is_finite() && max.is_finite()) || min >= max {
            return Err(format!("the range must be finite with min below max (got {min} to {max})."));
        }
        if !(accept.is_finite() && accept > 0.0) {
            return Err(format!("accept must be a finite width above 0 (got {accept})."));
        }
        let mut s = GoldenSection {
            min,
            max,
            accept,
            goal,
            reuse,
            low: min,
            high: max,
            phase: Phase::Low,
            kept_high: None,
            best: (min + max) / 2.0,
            evaluations: 0,
        };
        s.restart();
        Ok(s)
    }

    /// Start again over the whole range (the paper: every 1000 interrupts).
    pub fn restart(&mut self) {
        self.low = self.min;
        self.high = self.max;
        self.kept_high = None;
        self.phase = if self.high - self.low > self.accept { Phase::Low } else { Phase::Done };
        self.best = (self.low + self.high) / 2.0;
    }

    fn test_low(&self) -> f64 {
        self.low + (1.0 - CUT_RATE) * (self.high - self.low)
    }

    fn test_high(&self) -> f64 {
        self.low + CUT_RATE * (self.high - self.low)
    }

    /// What to do now.
    pub fn probe(&self) -> Step {
        match self.phase {
            Phase::Low => Step::Measure(self.test_low()),
            Phase::High { .. } => Step::Measure(self.test_high()),
            Phase::Done => Step::Hold(self.best),
        }
    }

    /// The objective measured at the value [`probe`](Self::probe) asked
    /// for. A NaN measurement counts as the worst possible.
    pub fn observe(&mut self, value: f64) -> Step {
        let value = match (value.is_nan(), self.goal) {
            (true, Goal::Maximize) => f64::NEG_INFINITY,
            (true, Goal::Minimize) => f64::INFINITY,
            (false, _) => value,
        };
        match self.phase {
            Phase::Done => Step::Hold(self.best),
            Phase::Low => {
                self.evaluations += 1;
                match self.kept_high.take() {
                    Some(high) => self.decide(value, high),
                    None => {
                        self.phase = Phase::High { low: value };
                        self.probe()
                    }
                }
            }
            Phase::High { low } => {
                self.evaluations += 1;
                self.decide(low, value)
            }
        }
    }

    /// One iteration's choice from the two probes' measurements. The
    /// optimum of a unimodal objective cannot lie beyond the worse probe,
    /// so the better probe's side is kept (on a tie, the low side). By the
    /// golden ratio, the surviving probe is where the next iteration's
    /// other probe falls: `TestHigh` becomes the next `TestLow`, or
    /// `TestLow` the next `TestHigh`.
    fn decide(&mut self, at_low: f64, at_high: f64) -> Step {
        let high_better = match self.goal {
            Goal::Maximize => at_high > at_low,
            Goal::Minimize => at_high < at_low,
        };
        let keep = self.reuse == Reuse::Surviving;
        if high_better {
            self.low = self.test_low();
        } else {
            self.high = self.test_high();
        }
        if self.high - self.low <= self.accept {
            self.phase = Phase::Done;
            self.best = (self.low + self.high) / 2.0;
            return Step::Hold(self.best);
        }
        self.phase = match (high_better, keep) {
            (true, true) => Phase::High { low: at_high },
            (false, true) => {
                self.kept_high = Some(at_low);
                Phase::Low
            }
            _ => Phase::Low,
        };
        self.probe()
    }

    /// The interval still searched.
    pub fn interval(&self) -> (f64, f64) {
        (self.low, self.high)
    }

    /// Measurements taken since the search was created.
    pub fn evaluations(&self) -> u64 {
        self.evaluations
    }

    /// Converged, holding [`best`](Self::best).
    pub fn done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// The middle of the last interval (meaningful once [`done`](Self::done)).
    pub fn best(&self) -> f64 {
        self.best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run the search to convergence on `f`; the value held and the evaluations.
    fn run(s: &mut GoldenSection, mut f: impl FnMut(f64) -> f64) -> (f64, u64) {
        let mut step = s.probe();
        for _ in 0..10_000 {
            match step {
                Step::Measure(x) => {
                    assert!(x >= s.min && x <= s.max, "probe {x} outside the range");
                    step = s.observe(f(x));
                }
                Step::Hold(x) => return (x, s.evaluations()),
            }
        }
        panic!("did not converge");
    }

    #[test]
    fn finds_the_maximum_of_a_parabola_both_ways() {
        for reuse in [Reuse::Never, Reuse::Surviving] {
            let mut s = GoldenSection::new(1_000.0, 100_000.0, 100.0, Goal::Maximize, reuse).unwrap();
            let (x, n) = run(&mut s, |x| -(x - 48_000.0).powi(2));
            assert!((x - 48_000.0).abs() <= 100.0, "{reuse:?}: {x}");
            // ln(99000/100)/ln(1/0.618) = 14.3 iterations.
            let per_iteration = if reuse == Reuse::Never { 2 } else { 1 };
            assert!(n <= 15 * per_iteration + 1, "{reuse:?}: {n} evaluations");
        }
    }

    #[test]
    fn minimises_too_and_finds_an_optimum_at_the_edge() {
        let mut s = GoldenSection::new(0.0, 256.0, 0.5, Goal::Minimize, Reuse::Surviving).unwrap();
        let (x, _) = run(&mut s, |x| (x - 37.0).abs());
        assert!((x - 37.0).abs() <= 0.5, "{x}");
        // Monotone: the optimum is the range's end.
        let mut s = GoldenSection::new(0.0, 256.0, 0.5, Goal::Maximize, Reuse::Never).unwrap();
        let (x, _) = run(&mut s, |x| x);
        assert!(x > 255.0, "{x}");
    }

    #[test]
    fn the_papers_literal_comparison_would_find_the_minimum() {
        // Its `if ThptLow < ThptHigh then High = TestHigh` keeps the worse
        // side; the policy keeps the better one (documented above).
        let mut s = GoldenSection::new(0.0, 100.0, 0.1, Goal::Maximize, Reuse::Never).unwrap();
        let (x, _) = run(&mut s, |x| -(x - 70.0).powi(2));
        assert!((x - 70.0).abs() < 0.1);
        let mut literal = GoldenSection::new(0.0, 100.0, 0.1, Goal::Minimize, Reuse::Never).unwrap();
        let (y, _) = run(&mut literal, |x| -(x - 70.0).powi(2));
        assert!(y < 1.0 || y > 99.0, "the literal reading runs to an end: {y}");
    }

    #[test]
    fn with_noise_the_answer_lands_near_the_optimum() {
        // A broad peak with ±2 % multiplicative noise from a fixed LCG.
        let mut seed = 12345u64;
        let mut noise = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 0.04
        };
        let f = |x: f64| 1.0 / (1.0 + ((x - 48_000.0) / 20_000.0).powi(2));
        let mut misses = 0;
        for _ in 0..50 {
            let mut s = GoldenSection::new(1_000.0, 100_000.0, 500.0, Goal::Maximize, Reuse::Never).unwrap();
            let (x, _) = run(&mut s, |x| f(x) * (1.0 + noise()));
            // Within 20 % of the optimum's value means within ~10,000 here.
            if (x - 48_000.0).abs() > 10_000.0 {
                misses += 1;
            }
        }
        assert!(misses <= 5, "{misses} of 50 searches far off");
    }

    #[test]
    fn restart_searches_the_whole_range_again_and_nan_counts_as_worst() {
        let mut s = GoldenSection::new(0.0, 10.0, 1.0, Goal::Maximize, Reuse::Surviving).unwrap();
        let (x, n) = run(&mut s, |x| -(x - 2.0).powi(2));
        assert!((x - 2.0).abs() <= 1.0 && s.done());
        assert_eq!(s.observe(5.0), Step::Hold(x), "a measurement after convergence changes nothing");
        s.restart();
        assert!(!s.done() && s.interval() == (0.0, 10.0));
        let (y, m) = run(&mut s, |x| -(x - 8.0).powi(2));
        assert!((y - 8.0).abs() <= 1.0 && m > n);
        // A probe that measured nothing (NaN) loses.
        let mut s = GoldenSection::new(0.0, 10.0, 1.0, Goal::Maximize, Reuse::Never).unwrap();
        let (z, _) = run(&mut s, |x| if x < 5.0 { f64::NAN } else { -(x - 6.0).powi(2) });
        assert!(z >= 5.0, "{z}");
    }

    #[test]
    fn bad_arguments_are_one_sentence() {
        for (lo, hi, acc) in [(5.0, 5.0, 1.0), (f64::NAN, 1.0, 1.0), (0.0, 1.0, 0.0), (0.0, 1.0, f64::INFINITY)] {
            let e = GoldenSection::new(lo, hi, acc, Goal::Maximize, Reuse::Never).unwrap_err();
            assert!(e.ends_with('.') && !e.contains('\n'), "{e}");
        }
    }
}
