//! The two continuous distributions mutilate's Facebook ("ETC") generators are
//! built from: the generalized extreme value (GEV) and the generalized Pareto
//! (GPD). Both are sampled by inverse transform from one uniform `U`, with the
//! same expressions mutilate uses in `Generator.h` (`class GEV`,
//! `class GPareto`, each `generate(double U)`).
//!
//! Two deliberate departures from mutilate, neither of which changes the
//! distribution:
//! - mutilate asserts `shape != 0.0` in both constructors; here `shape == 0`
//!   is allowed and uses the analytic limit (Gumbel and exponential).
//! - mutilate takes `U` from `drand48()`, i.e. from `[0, 1)`, so `U == 0`
//!   yields an infinite sample. Here `U` comes from the open interval `(0, 1)`
//!   ([`rand::distributions::Open01`]), so every sample is finite.

use rand::distributions::Open01;
use rand::Rng;
use rand_distr::Distribution;

/// Generalized extreme value distribution with location `loc` (μ), scale
/// `scale` (σ > 0) and shape `shape` (ξ, mutilate's `k`).
///
/// CDF: `F(x) = exp(-(1 + ξ (x - μ)/σ)^(-1/ξ))` on the support
/// `1 + ξ (x - μ)/σ > 0`; for `ξ = 0` (Gumbel) `F(x) = exp(-exp(-(x - μ)/σ))`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gev {
    pub loc: f64,
    pub scale: f64,
    pub shape: f64,
}

impl Gev {
    /// A GEV with the given location, scale (> 0) and shape.
    pub const fn new(loc: f64, scale: f64, shape: f64) -> Self {
        Gev { loc, scale, shape }
    }

    /// Map one uniform `u` in `(0, 1)` to a sample, as mutilate's
    /// `GEV::generate(U)` (Generator.h) does: it first draws a unit
    /// exponential `E = -ln U` (its member `Exponential e(1.0)`), then returns
    /// `loc + scale * (E^(-shape) - 1) / shape`. For `shape == 0` this is the
    /// limit `loc - scale * ln E`.
    pub fn from_uniform(&self, u: f64) -> f64 {
        let e = -u.ln();
        if self.shape == 0.0 {
            self.loc - self.scale * e.ln()
        } else {
            self.loc + self.scale * (e.powf(-self.shape) - 1.0) / self.shape
        }
    }

    /// The analytic CDF at `x` (used to check the sampler).
    pub fn cdf(&self, x: f64) -> f64 {
        let z = (x - self.loc) / self.scale;
        if self.shape == 0.0 {
            return (-(-z).exp()).exp();
        }
        let t = 1.0 + self.shape * z;
        if t <= 0.0 {
            // Below the lower bound (shape > 0) or above the upper bound
            // (shape < 0) of the support.
            return if self.shape > 0.0 { 0.0 } else { 1.0 };
        }
        (-t.powf(-1.0 / self.shape)).exp()
    }
}

impl Distribution<f64> for Gev {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        let u: f64 = rng.sample(Open01);
        self.from_uniform(u)
    }
}

/// Generalized Pareto distribution with location `loc` (μ), scale `scale`
/// (σ > 0) and shape `shape` (ξ, mutilate's `k`).
///
/// CDF: `F(x) = 1 - (1 + ξ (x - μ)/σ)^(-1/ξ)` for `x >= μ` (and, if `ξ < 0`,
/// `x <= μ - σ/ξ`); for `ξ = 0` it is the exponential
/// `F(x) = 1 - exp(-(x - μ)/σ)`. Mean (for `ξ < 1`): `μ + σ / (1 - ξ)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GeneralizedPareto {
    pub loc: f64,
    pub scale: f64,
    pub shape: f64,
}

impl GeneralizedPareto {
    /// A generalized Pareto with the given location, scale (> 0) and shape.
    pub const fn new(loc: f64, scale: f64, shape: f64) -> Self {
        GeneralizedPareto { loc, scale, shape }
    }

    /// Map one uniform `u` in `(0, 1)` to a sample, as mutilate's
    /// `GPareto::generate(U)` (Generator.h) does:
    /// `loc + scale * (U^(-shape) - 1) / shape`. (mutilate uses `U` where the
    /// textbook inverse CDF uses `1 - U`; both are uniform, so the
    /// distribution is the same.) For `shape == 0` this is the limit
    /// `loc - scale * ln U`.
    pub fn from_uniform(&self, u: f64) -> f64 {
        if self.shape == 0.0 {
            self.loc - self.scale * u.ln()
        } else {
            self.loc + self.scale * (u.powf(-self.shape) - 1.0) / self.shape
        }
    }

    /// The analytic mean `loc + scale / (1 - shape)`; infinite when
    /// `shape >= 1`.
    pub fn mean(&self) -> f64 {
        if self.shape >= 1.0 {
            f64::INFINITY
        } else {
            self.loc + self.scale / (1.0 - self.shape)
        }
    }

    /// This distribution rescaled to mean `1 / lambda`, keeping `loc` and
    /// `shape`, exactly as mutilate's `GPareto::set_lambda` (Generator.h)
    /// does: `scale = (1 - shape) / lambda - (1 - shape) * loc`, so that
    /// `loc + scale / (1 - shape) = 1 / lambda`. Like mutilate, a
    /// `lambda <= 0` gives `scale = 0` (every sample equals `loc`).
    pub fn with_lambda(&self, lambda: f64) -> Self {
        let scale = if lambda <= 0.0 {
            0.0
        } else {
            (1.0 - self.shape) / lambda - (1.0 - self.shape) * self.loc
        };
        GeneralizedPareto { scale, ..*self }
    }

    /// The analytic CDF at `x` (used to check the sampler).
    pub fn cdf(&self, x: f64) -> f64 {
        if x <= self.loc {
            return 0.0;
        }
        let z = (x - self.loc) / self.scale;
        if self.shape == 0.0 {
            return 1.0 - (-z).exp();
        }
        let t = 1.0 + self.shape * z;
        if t <= 0.0 {
            // Past the upper end of the support (shape < 0).
            return 1.0;
        }
        1.0 - t.powf(-1.0 / self.shape)
    }
}

impl Distribution<f64> for GeneralizedPareto {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        let u: f64 = rng.sample(Open01);
        self.from_uniform(u)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    /// Γ(x) for x > 0 by the Lanczos approximation (g = 7, 9 coefficients,
    /// the widely published set), with the reflection formula below 1/2.
    /// Accurate to ~1e-14 relative, far beyond what the tests need.
    pub(crate) fn gamma(x: f64) -> f64 {
        const G: f64 = 7.0;
        const C: [f64; 9] = [
            0.999_999_999_999_809_9,
            676.520_368_121_885_1,
            -1_259.139_216_722_402_8,
            771.323_428_777_653_1,
            -176.615_029_162_140_6,
            12.507_343_278_686_905,
            -0.138_571_095_265_720_12,
            9.984_369_578_019_572e-6,
            1.505_632_735_149_311_6e-7,
        ];
        if x < 0.5 {
            return std::f64::consts::PI / ((std::f64::consts::PI * x).sin() * gamma(1.0 - x));
        }
        let x = x - 1.0;
        let mut a = C[0];
        let t = x + G + 0.5;
        for (i, c) in C.iter().enumerate().skip(1) {
            a += c / (x + i as f64);
        }
        (2.0 * std::f64::consts::PI).sqrt() * t.powf(x + 0.5) * (-t).exp() * a
    }

    /// Euler–Mascheroni constant (mean of the standard Gumbel).
    const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;

    fn gev_mean(d: &Gev) -> f64 {
        if d.shape == 0.0 {
            d.loc + d.scale * EULER_GAMMA
        } else {
            d.loc + d.scale * (gamma(1.0 - d.shape) - 1.0) / d.shape
        }
    }

    fn gev_var(d: &Gev) -> f64 {
        if d.shape == 0.0 {
            d.scale * d.scale * std::f64::consts::PI.powi(2) / 6.0
        } else {
            let g1 = gamma(1.0 - d.shape);
            let g2 = gamma(1.0 - 2.0 * d.shape);
            d.scale * d.scale * (g2 - g1 * g1) / (d.shape * d.shape)
        }
    }

    fn gpd_var(d: &GeneralizedPareto) -> f64 {
        let k = d.shape;
        d.scale * d.scale / ((1.0 - k) * (1.0 - k) * (1.0 - 2.0 * k))
    }

    fn sample_mean<D: Distribution<f64>>(d: &D, n: usize, seed: u64) -> f64 {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        (0..n).map(|_| d.sample(&mut rng)).sum::<f64>() / n as f64
    }

    /// Largest |F_n(x) - F(x)| over `points`, from `n` samples.
    fn max_cdf_gap<D: Distribution<f64>>(
        d: &D,
        cdf: impl Fn(f64) -> f64,
        points: &[f64],
        n: usize,
        seed: u64,
    ) -> f64 {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let mut below = vec![0usize; points.len()];
        for _ in 0..n {
            let x = d.sample(&mut rng);
            for (c, &p) in below.iter_mut().zip(points) {
                if x <= p {
                    *c += 1;
                }
            }
        }
        below
            .iter()
            .zip(points)
            .map(|(&c, &p)| (c as f64 / n as f64 - cdf(p)).abs())
            .fold(0.0, f64::max)
    }

    /// DKW inequality: P(sup |F_n - F| > eps) <= 2 exp(-2 n eps^2). With
    /// n = 200_000 and eps = 0.005 that bound is 2e^-10 ≈ 9e-5.
    const CDF_N: usize = 200_000;
    const CDF_EPS: f64 = 0.005;

    #[test]
    fn lanczos_gamma_is_accurate() {
        assert!((gamma(5.0) - 24.0).abs() < 1e-12);
        assert!((gamma(0.5) - std::f64::consts::PI.sqrt()).abs() < 1e-13);
        assert!((gamma(1.0) - 1.0).abs() < 1e-13);
        // Γ(1 - 0.078688) = Γ(0.921312), needed for the fb_key mean.
        // Reference value from Python's math.gamma(0.921312).
        assert!((gamma(0.921312) - 1.052_026_983_155_57).abs() < 1e-12);
    }

    #[test]
    fn from_uniform_matches_mutilate_formulas() {
        // GPareto(0, 1, 0.5) at U = 0.25: (0.25^-0.5 - 1) / 0.5 = 2.
        let p = GeneralizedPareto::new(0.0, 1.0, 0.5);
        assert!((p.from_uniform(0.25) - 2.0).abs() < 1e-12);
        // GPareto(3, 2, 0) at U = e^-1: 3 - 2 ln(e^-1) = 5.
        let p0 = GeneralizedPareto::new(3.0, 2.0, 0.0);
        assert!((p0.from_uniform((-1.0f64).exp()) - 5.0).abs() < 1e-12);
        // GEV(0, 1, 0.5) at U = e^-4: E = 4, (4^-0.5 - 1) / 0.5 = -1.
        let g = Gev::new(0.0, 1.0, 0.5);
        assert!((g.from_uniform((-4.0f64).exp()) + 1.0).abs() < 1e-12);
        // Gumbel(1, 2) at U = e^-1: E = 1, 1 - 2 ln 1 = 1.
        let g0 = Gev::new(1.0, 2.0, 0.0);
        assert!((g0.from_uniform((-1.0f64).exp()) - 1.0).abs() < 1e-12);
        // The inverse transform inverts the CDF (GEV is increasing in U; the
        // GPD as mutilate writes it is decreasing in U, so F(x(U)) = 1 - U).
        let key = Gev::new(30.7984, 8.20449, 0.078688);
        let val = GeneralizedPareto::new(15.0, 214.476, 0.348238);
        for &u in &[0.01, 0.2, 0.5, 0.8, 0.99] {
            assert!((key.cdf(key.from_uniform(u)) - u).abs() < 1e-12);
            assert!((val.cdf(val.from_uniform(u)) - (1.0 - u)).abs() < 1e-12);
        }
    }

    #[test]
    fn gev_sample_mean_matches_analytic() {
        // Within 5 standard errors, SE = sd / sqrt(n) from the analytic
        // variance σ²(Γ(1-2ξ) - Γ(1-ξ)²)/ξ² (π²σ²/6 for ξ = 0).
        let n = 400_000;
        for (i, d) in [
            Gev::new(30.7984, 8.20449, 0.078688), // mutilate fb_key
            Gev::new(0.0, 1.0, 0.0),
            Gev::new(5.0, 2.0, -0.2),
        ]
        .iter()
        .enumerate()
        {
            let m = sample_mean(d, n, 11 + i as u64);
            let tol = 5.0 * (gev_var(d) / n as f64).sqrt();
            assert!(
                (m - gev_mean(d)).abs() < tol,
                "{d:?}: {m} vs {}",
                gev_mean(d)
            );
        }
        // fb_key: Γ(0.921312) ≈ 1.052027, so the mean is
        // 30.7984 + 8.20449 * 0.052027 / 0.078688 ≈ 36.2231.
        let key = Gev::new(30.7984, 8.20449, 0.078688);
        assert!((gev_mean(&key) - 36.2231).abs() < 1e-3);
    }

    #[test]
    fn gpd_sample_mean_matches_analytic() {
        // Within 5 standard errors, from the analytic variance
        // σ²/((1-ξ)²(1-2ξ)), finite for ξ < 1/2.
        let n = 400_000;
        for (i, d) in [
            GeneralizedPareto::new(15.0, 214.476, 0.348238), // fb_value tail
            GeneralizedPareto::new(0.0, 16.0292, 0.154971),  // fb_ia
            GeneralizedPareto::new(2.0, 3.0, 0.0),
            GeneralizedPareto::new(0.0, 1.0, -0.3),
        ]
        .iter()
        .enumerate()
        {
            let m = sample_mean(d, n, 21 + i as u64);
            let tol = 5.0 * (gpd_var(d) / n as f64).sqrt();
            assert!((m - d.mean()).abs() < tol, "{d:?}: {m} vs {}", d.mean());
        }
        assert_eq!(GeneralizedPareto::new(0.0, 1.0, 1.0).mean(), f64::INFINITY);
    }

    #[test]
    fn gev_empirical_cdf_matches_analytic() {
        let key = Gev::new(30.7984, 8.20449, 0.078688);
        let pts = [20.0, 28.0, 31.0, 35.0, 40.0, 50.0, 70.0];
        let gap = max_cdf_gap(&key, |x| key.cdf(x), &pts, CDF_N, 31);
        assert!(gap < CDF_EPS, "gap {gap}");
        let gumbel = Gev::new(0.0, 1.0, 0.0);
        let pts = [-1.0, 0.0, 0.5, 1.0, 3.0];
        let gap = max_cdf_gap(&gumbel, |x| gumbel.cdf(x), &pts, CDF_N, 32);
        assert!(gap < CDF_EPS, "gap {gap}");
    }

    #[test]
    fn gpd_empirical_cdf_matches_analytic() {
        let tail = GeneralizedPareto::new(15.0, 214.476, 0.348238);
        let pts = [20.0, 50.0, 100.0, 200.0, 500.0, 2000.0];
        let gap = max_cdf_gap(&tail, |x| tail.cdf(x), &pts, CDF_N, 41);
        assert!(gap < CDF_EPS, "gap {gap}");
        let expo = GeneralizedPareto::new(0.0, 1.0, 0.0);
        let pts = [0.1, 0.5, 1.0, 2.0, 4.0];
        let gap = max_cdf_gap(&expo, |x| expo.cdf(x), &pts, CDF_N, 42);
        assert!(gap < CDF_EPS, "gap {gap}");
    }

    #[test]
    fn with_lambda_keeps_loc_and_shape_and_sets_mean() {
        let d = GeneralizedPareto::new(0.0, 16.0292, 0.154971);
        for &lambda in &[1e-6, 1e5, 1e6, 3.3e7] {
            let r = d.with_lambda(lambda);
            assert_eq!((r.loc, r.shape), (d.loc, d.shape));
            assert!((r.mean() * lambda - 1.0).abs() < 1e-12);
        }
        // A non-zero loc is kept too (mutilate subtracts (1 - k) * loc).
        let r = GeneralizedPareto::new(1e-6, 1.0, 0.2).with_lambda(1e5);
        assert!((r.mean() - 1e-5).abs() < 1e-18);
        assert_eq!(d.with_lambda(0.0).scale, 0.0);
    }

    #[test]
    fn samples_are_finite_and_deterministic() {
        let key = Gev::new(30.7984, 8.20449, 0.078688);
        let val = GeneralizedPareto::new(15.0, 214.476, 0.348238);
        let mut a = Pcg64Mcg::seed_from_u64(7);
        let mut b = Pcg64Mcg::seed_from_u64(7);
        for _ in 0..10_000 {
            let (x, y) = (key.sample(&mut a), val.sample(&mut a));
            assert!(x.is_finite() && y.is_finite() && y >= 15.0);
            assert_eq!(x.to_bits(), key.sample(&mut b).to_bits());
            assert_eq!(y.to_bits(), val.sample(&mut b).to_bits());
        }
    }
}
