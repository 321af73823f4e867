//! One probe figure from many short samples: their trimmed mean, with
//! their median and quartiles.
//!
//! Why a median of short samples rather than one long mean or the best
//! of a few long ones: on a paravirtual guest a vCPU can be preempted by
//! its host for milliseconds, and timers, IPIs and idle wake-ups cost
//! exits whose price moves with what the host runs. One long loop's mean
//! takes every such stretch into its one number, and the best of a few
//! rounds takes the luckiest one; samples shorter than a host's
//! time slice (a few hundred microseconds to a few milliseconds each)
//! confine a preemption to the samples it hit, a trimmed mean drops them
//! (as a median would, without jumping between the modes of a mixture:
//! see `trimmed`), and the quartiles say how much the figure itself moves.

use serde::Serialize;

/// A figure's samples summarised.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// The mean of the samples between the 10th and the 90th percentile:
    /// the figure. On this project's KVM guest a quiet host makes the
    /// cross-CPU wake-ups a mixture of a cheap and a dearer mode whose
    /// proportion moves from second to second; the median jumps from one
    /// mode to the other when the proportion crosses a half, a trimmed
    /// mean follows the proportion, and drops the preempted samples as
    /// the median does.
    pub trimmed: f64,
    /// The first quartile of the samples.
    pub q1: f64,
    /// The median of the samples.
    pub median: f64,
    /// The third quartile of the samples.
    pub q3: f64,
    /// How many samples.
    pub samples: u32,
}

impl Spread {
    /// The summary of `samples` (non-finite values are left out); all
    /// zero when none is left.
    pub fn of(samples: &[f64]) -> Spread {
        let mut s: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        s.sort_by(f64::total_cmp);
        Spread {
            trimmed: trimmed_mean(&s, 0.1),
            q1: quantile(&s, 0.25),
            median: quantile(&s, 0.5),
            q3: quantile(&s, 0.75),
            samples: s.len() as u32,
        }
    }

    /// The same spread with every value shifted by `offset` and clamped at
    /// `floor` (a figure reported less a fixed part, never below 0).
    pub fn shifted(self, offset: f64, floor: f64) -> Spread {
        let f = |x: f64| (x + offset).max(floor);
        Spread { trimmed: f(self.trimmed), q1: f(self.q1), median: f(self.median), q3: f(self.q3), samples: self.samples }
    }

    /// The interquartile range over the median (0 for a zero median).
    pub fn relative_iqr(&self) -> f64 {
        if self.median == 0.0 {
            0.0
        } else {
            (self.q3 - self.q1) / self.median.abs()
        }
    }
}

/// The mean of sorted `s` without its lowest and highest `cut` fraction
/// (at least one sample kept); 0 for an empty slice.
pub fn trimmed_mean(s: &[f64], cut: f64) -> f64 {
    if s.is_empty() {
        return 0.0;
    }
    let k = ((s.len() as f64 * cut.clamp(0.0, 0.49)).floor() as usize).min((s.len() - 1) / 2);
    let kept = &s[k..s.len() - k];
    kept.iter().sum::<f64>() / kept.len() as f64
}

/// The `p` quantile of sorted `s`, linear between neighbours (the
/// "type 7" definition); 0 for an empty slice.
pub fn quantile(s: &[f64], p: f64) -> f64 {
    match s.len() {
        0 => 0.0,
        1 => s[0],
        n => {
            let h = p.clamp(0.0, 1.0) * (n - 1) as f64;
            let lo = h.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            s[lo] + (h - lo as f64) * (s[hi] - s[lo])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quartiles_interpolate_between_samples() {
        let s = Spread::of(&[4.0, 1.0, 3.0, 2.0, 5.0]);
        assert_eq!((s.q1, s.median, s.q3, s.samples), (2.0, 3.0, 4.0, 5));
        let even = Spread::of(&[10.0, 20.0, 30.0, 40.0]);
        assert_eq!((even.q1, even.median, even.q3), (17.5, 25.0, 32.5));
    }

    #[test]
    fn a_few_preempted_samples_move_the_median_little_and_the_mean_much() {
        // 40 samples of 10 us and 3 that a 2 ms preemption hit.
        let mut samples = vec![10_000.0; 40];
        samples.extend([2_010_000.0, 2_010_000.0, 2_010_000.0]);
        let s = Spread::of(&samples);
        assert_eq!(s.median, 10_000.0);
        assert_eq!(s.relative_iqr(), 0.0);
        let mean = samples.iter().sum::<f64>() / samples.len() as f64;
        assert!(mean > 100_000.0, "{mean}");
    }

    #[test]
    fn the_trimmed_mean_follows_a_mixtures_proportion_where_the_median_jumps() {
        // Two modes, 9 and 12 us: 45 % and then 55 % of the samples in the dearer one.
        let mix = |dear: usize| {
            let mut v = vec![9_000.0; 100 - dear];
            v.extend(vec![12_000.0; dear]);
            Spread::of(&v)
        };
        let (a, b) = (mix(45), mix(55));
        assert_eq!((a.median, b.median), (9_000.0, 12_000.0));
        // Without the 10 lowest and 10 highest: 35 and 45 of 80 dear.
        assert!((a.trimmed - (45.0 * 9_000.0 + 35.0 * 12_000.0) / 80.0).abs() < 1e-6, "{a:?}");
        assert!((b.trimmed - (35.0 * 9_000.0 + 45.0 * 12_000.0) / 80.0).abs() < 1e-6, "{b:?}");
        assert!((b.trimmed / a.trimmed - 1.0) < 0.1);
        // Preempted samples beyond the 90th percentile do not count.
        let mut v = vec![10_000.0; 95];
        v.extend([5e6; 5]);
        assert_eq!(Spread::of(&v).trimmed, 10_000.0);
        assert_eq!(trimmed_mean(&[1.0, 2.0, 30.0], 0.4), 2.0);
    }

    #[test]
    fn non_finite_samples_and_empty_sets_are_harmless() {
        let s = Spread::of(&[f64::NAN, 1.0, f64::INFINITY, 3.0]);
        assert_eq!((s.median, s.samples), (2.0, 2));
        assert_eq!(Spread::of(&[]), Spread { trimmed: 0.0, q1: 0.0, median: 0.0, q3: 0.0, samples: 0 });
        assert_eq!(Spread::of(&[7.0]).q3, 7.0);
    }

    #[test]
    fn a_shift_moves_every_quantile_and_clamps_at_the_floor() {
        let s = Spread::of(&[1.0, 2.0, 3.0, 4.0, 5.0]).shifted(-2.5, 0.0);
        assert_eq!((s.q1, s.median, s.q3), (0.0, 0.5, 1.5));
        assert_eq!(Spread::of(&[1.0, 2.0, 3.0]).relative_iqr(), 0.5);
    }
}
