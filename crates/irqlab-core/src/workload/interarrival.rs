//! Request inter-arrival gaps for one open-loop load stream, as mutilate
//! draws them (`--iadist`): exponential (Poisson arrivals) or Facebook's
//! `fb_ia`, both rescaled to a target request rate; or constant, the
//! constant-bit-rate stream of a packet generator such as MoonGen (the ITR
//! paper's load, Emmerich et al. §III-A).
//!
//! mutilate builds the generator from the `--iadist` name (Generator.cc,
//! `createGenerator`) and then calls `set_lambda(lambda)` on it with the
//! per-connection rate (`Connection` constructor in Connection.cc;
//! `lambda = qps / lambda_denom * lambda_mul` in mutilate.cc, where
//! `lambda_denom` counts connections). The gap it returns is in seconds.
//! Here the caller passes that per-stream rate directly.

use rand::Rng;
use rand_distr::{Distribution, Exp};
use serde::{Deserialize, Serialize};

use crate::workload::distributions::GeneralizedPareto;

/// mutilate's `fb_ia` generator before rescaling (Generator.cc,
/// `createFacebookIA`): GPareto(loc 0, scale 16.0292, shape 0.154971). Only
/// its shape (and zero location) survive [`GeneralizedPareto::with_lambda`].
pub const FB_IA: GeneralizedPareto = GeneralizedPareto::new(0.0, 16.0292, 0.154971);

/// Which inter-arrival distribution a scenario asks for; written
/// `"exponential"`, `"fb_ia"` or `"constant"` in scenario files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InterArrivalKind {
    /// Poisson arrivals: exponential gaps with mean `1 / rate`.
    Exponential,
    /// mutilate's `fb_ia` generalized Pareto, rescaled to mean `1 / rate`.
    FbIa,
    /// Constant bit rate: every gap is `1 / rate` (rounded to whole ns).
    Constant,
}

/// An inter-arrival gap generator at a fixed rate (requests per second).
///
/// Build it with [`InterArrival::new`], which checks the rate. A value built
/// directly with a rate that is not finite and > 0 never fails either:
/// [`InterArrival::sample_ns`] then returns `u64::MAX` ("no next arrival"),
/// the limit of the gap as the rate goes to 0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InterArrival {
    Exponential { rate_per_s: f64 },
    FbIa { rate_per_s: f64 },
    Constant { rate_per_s: f64 },
}

impl InterArrival {
    /// A generator of `kind` with mean gap `1 / rate_per_s` seconds.
    pub fn new(kind: InterArrivalKind, rate_per_s: f64) -> Result<Self, String> {
        if !(rate_per_s.is_finite() && rate_per_s > 0.0) {
            return Err(format!(
                "inter-arrival rate must be a finite number of requests per second greater than 0, got {rate_per_s}"
            ));
        }
        Ok(match kind {
            InterArrivalKind::Exponential => InterArrival::Exponential { rate_per_s },
            InterArrivalKind::FbIa => InterArrival::FbIa { rate_per_s },
            InterArrivalKind::Constant => InterArrival::Constant { rate_per_s },
        })
    }

    pub fn kind(&self) -> InterArrivalKind {
        match self {
            InterArrival::Exponential { .. } => InterArrivalKind::Exponential,
            InterArrival::FbIa { .. } => InterArrivalKind::FbIa,
            InterArrival::Constant { .. } => InterArrivalKind::Constant,
        }
    }

    pub fn rate_per_s(&self) -> f64 {
        match *self {
            InterArrival::Exponential { rate_per_s }
            | InterArrival::FbIa { rate_per_s }
            | InterArrival::Constant { rate_per_s } => rate_per_s,
        }
    }

    /// The `fb_ia` distribution (gaps in seconds) rescaled to `rate_per_s`
    /// the way mutilate's `GPareto::set_lambda` (Generator.h) does: keep loc
    /// (0) and shape (0.154971), set `scale = (1 - shape) / rate - (1 -
    /// shape) * loc`, so the mean `loc + scale / (1 - shape)` is exactly
    /// `1 / rate`.
    pub fn fb_ia_at(rate_per_s: f64) -> GeneralizedPareto {
        FB_IA.with_lambda(rate_per_s)
    }

    /// The analytic mean gap in nanoseconds, `1e9 / rate`.
    pub fn mean_ns(&self) -> f64 {
        1e9 / self.rate_per_s()
    }

    /// One gap in seconds (unrounded).
    pub fn sample_secs<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        let rate = self.rate_per_s();
        if !(rate.is_finite() && rate > 0.0) {
            return f64::INFINITY;
        }
        match self {
            // mutilate's Exponential::generate is -ln(U) / lambda; rand_distr's
            // Exp samples the same distribution (by ziggurat).
            InterArrival::Exponential { .. } => match Exp::new(rate) {
                Ok(exp) => exp.sample(rng),
                Err(_) => f64::INFINITY,
            },
            InterArrival::FbIa { .. } => Self::fb_ia_at(rate).sample(rng),
            // No draw: the stream of random numbers is left untouched.
            InterArrival::Constant { .. } => 1.0 / rate,
        }
    }

    /// One gap in integer nanoseconds, rounded to nearest (never negative;
    /// `u64::MAX` if the gap does not fit, or the rate is invalid).
    pub fn sample_ns<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let ns = (self.sample_secs(rng) * 1e9).round();
        // `as` saturates: +inf → u64::MAX; negatives and NaN cannot occur
        // (both samplers are >= 0), but would give 0.
        ns.max(0.0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    fn mean_gap_ns(ia: &InterArrival, n: usize, seed: u64) -> f64 {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        (0..n).map(|_| ia.sample_ns(&mut rng) as f64).sum::<f64>() / n as f64
    }

    #[test]
    fn constant_gaps_are_the_period_and_draw_nothing() {
        let ia = InterArrival::new(InterArrivalKind::Constant, 2_000_000.0).unwrap();
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        let before = rng.clone();
        assert!((0..100).all(|_| ia.sample_ns(&mut rng) == 500));
        assert_eq!(rng, before, "a constant gap takes no random number");
        // 3 Mpps: 333.3 ns, rounded.
        let ia = InterArrival::new(InterArrivalKind::Constant, 3e6).unwrap();
        assert_eq!(ia.sample_ns(&mut rng), 333);
        assert_eq!(serde_json::to_string(&InterArrivalKind::Constant).unwrap(), "\"constant\"");
    }

    #[test]
    fn serde_names() {
        assert_eq!(
            serde_json::to_string(&InterArrivalKind::FbIa).unwrap(),
            "\"fb_ia\""
        );
        assert_eq!(
            serde_json::to_string(&InterArrivalKind::Exponential).unwrap(),
            "\"exponential\""
        );
        let k: InterArrivalKind = serde_json::from_str("\"fb_ia\"").unwrap();
        assert_eq!(k, InterArrivalKind::FbIa);
        let k: InterArrivalKind = serde_json::from_str("\"exponential\"").unwrap();
        assert_eq!(k, InterArrivalKind::Exponential);
        assert!(serde_json::from_str::<InterArrivalKind>("\"poisson\"").is_err());
    }

    #[test]
    fn rejects_bad_rates() {
        for kind in [InterArrivalKind::Exponential, InterArrivalKind::FbIa] {
            for bad in [0.0, -1.0, -0.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                let e = InterArrival::new(kind, bad).unwrap_err();
                assert!(e.contains("greater than 0"), "{e}");
            }
            let ia = InterArrival::new(kind, 1e5).unwrap();
            assert_eq!(ia.kind(), kind);
            assert_eq!(ia.rate_per_s(), 1e5);
        }
        // Built directly with a bad rate: no panic, "never".
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        for bad in [0.0, -5.0, f64::NAN] {
            assert_eq!(
                InterArrival::Exponential { rate_per_s: bad }.sample_ns(&mut rng),
                u64::MAX
            );
            assert_eq!(
                InterArrival::FbIa { rate_per_s: bad }.sample_ns(&mut rng),
                u64::MAX
            );
        }
    }

    #[test]
    fn fb_ia_rescaling_keeps_shape_and_sets_mean() {
        for rate in [1e3, 1e5, 1e6, 7.5e6] {
            let d = InterArrival::fb_ia_at(rate);
            assert_eq!(d.loc, 0.0);
            assert_eq!(d.shape, 0.154971);
            assert!((d.scale - (1.0 - 0.154971) / rate).abs() <= 1e-15 * d.scale);
            assert!((d.mean() * rate - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn exponential_mean_is_one_over_rate() {
        // sd of an exponential equals its mean; tolerance 5 SE plus 0.5 ns
        // for rounding to integer nanoseconds.
        let n = 400_000;
        for (i, rate) in [1e5, 1e6].into_iter().enumerate() {
            let ia = InterArrival::new(InterArrivalKind::Exponential, rate).unwrap();
            let want = 1e9 / rate;
            let m = mean_gap_ns(&ia, n, 200 + i as u64);
            let tol = 5.0 * want / (n as f64).sqrt() + 0.5;
            assert!((m - want).abs() < tol, "rate {rate}: {m} vs {want}");
            assert_eq!(ia.mean_ns(), want);
        }
    }

    #[test]
    fn fb_ia_mean_is_one_over_rate() {
        // Rescaled GPareto: sd = mean / sqrt(1 - 2 * shape) ≈ 1.204 * mean.
        // Tolerance 5 SE plus 0.5 ns for rounding.
        let n = 400_000;
        for (i, rate) in [1e5, 1e6].into_iter().enumerate() {
            let ia = InterArrival::new(InterArrivalKind::FbIa, rate).unwrap();
            let want = 1e9 / rate;
            let sd = want / (1.0 - 2.0 * FB_IA.shape).sqrt();
            let m = mean_gap_ns(&ia, n, 300 + i as u64);
            let tol = 5.0 * sd / (n as f64).sqrt() + 0.5;
            assert!((m - want).abs() < tol, "rate {rate}: {m} vs {want}");
        }
    }

    #[test]
    fn fb_ia_cdf_in_nanoseconds() {
        // At 1M/s the gap CDF in ns is that of GPareto(0, 845.029, 0.154971)
        // (scale (1 - shape) / rate, in ns), up to ±0.5 ns rounding; compare
        // at half-integers so rounding does not matter. DKW with n = 200k,
        // eps = 0.005: bound 2 exp(-10) ≈ 9e-5.
        let n = 200_000;
        let ia = InterArrival::new(InterArrivalKind::FbIa, 1e6).unwrap();
        let d = GeneralizedPareto::new(0.0, (1.0 - FB_IA.shape) * 1e3, FB_IA.shape);
        let pts = [100u64, 300, 700, 1000, 2000, 5000];
        let mut below = [0usize; 6];
        let mut rng = Pcg64Mcg::seed_from_u64(400);
        for _ in 0..n {
            let g = ia.sample_ns(&mut rng);
            for (c, &p) in below.iter_mut().zip(&pts) {
                if g <= p {
                    *c += 1;
                }
            }
        }
        for (&c, &p) in below.iter().zip(&pts) {
            let emp = c as f64 / n as f64;
            let ana = d.cdf(p as f64 + 0.5);
            assert!((emp - ana).abs() < 0.005, "{p} ns: {emp} vs {ana}");
        }
    }

    #[test]
    fn gaps_are_deterministic() {
        for kind in [InterArrivalKind::Exponential, InterArrivalKind::FbIa] {
            let ia = InterArrival::new(kind, 250_000.0).unwrap();
            let mut a = Pcg64Mcg::seed_from_u64(77);
            let mut b = Pcg64Mcg::seed_from_u64(77);
            let sa: Vec<u64> = (0..10_000).map(|_| ia.sample_ns(&mut a)).collect();
            let sb: Vec<u64> = (0..10_000).map(|_| ia.sample_ns(&mut b)).collect();
            assert_eq!(sa, sb);
            let mut c = Pcg64Mcg::seed_from_u64(78);
            let sc: Vec<u64> = (0..10_000).map(|_| ia.sample_ns(&mut c)).collect();
            assert_ne!(sa, sc);
        }
    }
}
