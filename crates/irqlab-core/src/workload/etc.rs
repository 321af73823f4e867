//! Key and value sizes of the Facebook "ETC" memcached pool, as mutilate
//! generates them for `--keysize=fb_key` and `--valuesize=fb_value`
//! (Generator.cc: `createFacebookKey`, `createFacebookValue`), and the
//! [`SizeDist`] a scenario uses to pick either those or a fixed size.

use std::fmt;

use rand::Rng;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::workload::distributions::{GeneralizedPareto, Gev};
use crate::workload::etc_table::{open01, EtcTables};

/// mutilate's `fb_key` generator (Generator.cc, `createFacebookKey`):
/// GEV(loc 30.7984, scale 8.20449, shape 0.078688), in bytes.
pub const FB_KEY: Gev = Gev::new(30.7984, 8.20449, 0.078688);

/// The continuous tail of mutilate's `fb_value` generator (Generator.cc,
/// `createFacebookValue`): GPareto(loc 15, scale 214.476, shape 0.348238),
/// in bytes. It is drawn when the discrete table [`FB_VALUE_TABLE`] does not
/// claim the uniform.
pub const FB_VALUE_TAIL: GeneralizedPareto = GeneralizedPareto::new(15.0, 214.476, 0.348238);

/// The discrete head of mutilate's `fb_value` generator, `(probability,
/// bytes)` in the order mutilate adds them (Generator.cc,
/// `createFacebookValue`). The probabilities sum to 0.44155; the remaining
/// 0.55845 goes to [`FB_VALUE_TAIL`].
pub const FB_VALUE_TABLE: [(f64, u32); 15] = [
    (0.00536, 0),
    (0.00047, 1),
    (0.17820, 2),
    (0.09239, 3),
    (0.00018, 4),
    (0.02740, 5),
    (0.00065, 6),
    (0.00606, 7),
    (0.00023, 8),
    (0.00837, 9),
    (0.00837, 10),
    (0.08989, 11),
    (0.00092, 12),
    (0.00326, 13),
    (0.01980, 14),
];

/// Longest key mutilate can produce: `KeyGenerator::generate` (Generator.h)
/// formats the key with `snprintf` into a 256-byte buffer, so at most 255
/// characters survive. (memcached itself accepts at most 250; a GEV draw
/// above 250 has probability below 1e-6.)
pub const MAX_KEY_LEN: u32 = 255;

/// Largest value size returned by [`EtcValueSize`]: 1 MiB, memcached's
/// default item size limit. This cap is ours, not mutilate's (mutilate passes
/// the truncated double straight to `issue_set`); the GPareto tail exceeds it
/// with probability about 6e-10.
pub const MAX_VALUE_LEN: u32 = 1 << 20;

/// ETC key sizes in bytes: mutilate's `fb_key` GEV turned into a length the
/// way `KeyGenerator::generate` (Generator.h) does it:
/// `keylen = max(round(G), floor(log10(records)) + 1)` with C `round` (half
/// away from zero), then cut to [`MAX_KEY_LEN`] by the key buffer.
///
/// mutilate draws `G` from a uniform derived by hashing the key index
/// (`fnv_64(ind) / ULLONG_MAX`), so a given key always has the same length;
/// since keys are chosen uniformly, drawing `U` from the RNG instead gives
/// the same size distribution per request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EtcKeySize {
    min_len: u32,
}

impl Default for EtcKeySize {
    fn default() -> Self {
        Self::new()
    }
}

impl EtcKeySize {
    /// Key sizes with the smallest possible minimum, 1 byte.
    pub const fn new() -> Self {
        EtcKeySize { min_len: 1 }
    }

    /// Key sizes for a key space of `records` keys: mutilate zero-pads the
    /// key index to at least the number of decimal digits of `records`
    /// (`floor(log10(records)) + 1`, the `max` argument of `KeyGenerator`),
    /// so that is the minimum length. `records == 0` gives a minimum of 1.
    pub fn for_records(records: u64) -> Self {
        let digits = if records == 0 {
            1
        } else {
            records.ilog10() + 1
        };
        EtcKeySize { min_len: digits.min(MAX_KEY_LEN) }
    }

    /// The minimum key length in bytes.
    pub fn min_len(&self) -> u32 {
        self.min_len
    }

    /// Turn one GEV draw into a key length (see the type's doc).
    pub fn len_from_draw(&self, g: f64) -> u32 {
        // `f64 as u32` saturates (negative → 0, NaN → 0), then clamp.
        (g.round() as u32).clamp(self.min_len, MAX_KEY_LEN)
    }

    /// One key size in bytes, in `min_len..=MAX_KEY_LEN`.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        // The `u64` the GEV's `Open01` uniform is made of; most draws are
        // read from a table with the formula's exact result (`etc_table`).
        let x: u64 = rng.gen();
        if let Some(len) = EtcTables::get().key(x) {
            // The table clamps to 1..=255; min_len >= 1 only raises it.
            return len.max(self.min_len);
        }
        self.len_from_draw(FB_KEY.from_uniform(open01(x)))
    }
}

/// ETC value sizes in bytes: mutilate's `fb_value`, a `Discrete` generator
/// (Generator.h) whose table is [`FB_VALUE_TABLE`] and whose default is
/// [`FB_VALUE_TAIL`].
///
/// How mutilate picks: `Discrete::generate` draws one uniform `U` in
/// `[0, 1)`, walks the table accumulating probabilities and returns the first
/// size whose running sum exceeds `U`; if none does (probability 0.55845) it
/// calls the GPareto default with no uniform, so the tail gets a fresh,
/// independent draw. The double is then turned into a length by the `int
/// length` parameter of `Connection::issue_set`, i.e. truncated toward zero;
/// tail sizes are therefore at least 15. Sizes are capped at
/// [`MAX_VALUE_LEN`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EtcValueSize;

impl Default for EtcValueSize {
    fn default() -> Self {
        Self::new()
    }
}

impl EtcValueSize {
    pub const fn new() -> Self {
        EtcValueSize
    }

    /// Probability that a value size comes from the discrete table (the sum
    /// of its probabilities, accumulated in mutilate's order).
    pub fn table_mass() -> f64 {
        FB_VALUE_TABLE.iter().map(|&(p, _)| p).sum()
    }

    /// One value size in bytes, in `0..=MAX_VALUE_LEN`.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        // Uniform in [0, 1), as drand48() in Discrete::generate: rand's
        // `Standard` of this u64 (`etc_table::standard01`).
        let x: u64 = rng.gen();
        let tables = EtcTables::get();
        // The first entry whose running sum exceeds u (the sums increase, so
        // it is the entry mutilate's walk stops at), from a bucket table
        // where no sum falls inside the bucket, else by binary search.
        let cum = &tables.value_cum;
        if let Some(&(_, bytes)) = cum.get(tables.value_head(x)) {
            return bytes;
        }
        // The tail's `Open01` uniform, as a table entry when its bucket has
        // one (`etc_table`).
        let x: u64 = rng.gen();
        if let Some(v) = tables.value_tail(x) {
            return v;
        }
        let x = FB_VALUE_TAIL.from_uniform(open01(x));
        // Truncation toward zero as C's double → int conversion; `as`
        // saturates, so a huge draw cannot wrap.
        (x.trunc() as u32).min(MAX_VALUE_LEN)
    }
}

/// Which of a request's two sizes a [`SizeDist`] describes; it selects the
/// ETC distribution for [`SizeDist::Etc`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SizeField {
    Key,
    Value,
}

/// A key or value size as a scenario gives it: a fixed number of bytes, or
/// the ETC distribution (mutilate's `fb_key` for keys, `fb_value` for
/// values).
///
/// In a scenario file it is written as a non-negative integer (`Fixed`) or
/// the string `"etc"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SizeDist {
    Fixed(u32),
    Etc,
}

impl SizeDist {
    /// One size in bytes for `field`. `Fixed(n)` returns `n` without drawing
    /// from `rng`; `Etc` samples [`EtcKeySize::new`] (minimum 1 byte) for
    /// keys and [`EtcValueSize`] for values.
    pub fn sample<R: Rng + ?Sized>(&self, field: SizeField, rng: &mut R) -> u32 {
        match (*self, field) {
            (SizeDist::Fixed(n), _) => n,
            (SizeDist::Etc, SizeField::Key) => EtcKeySize::new().sample(rng),
            (SizeDist::Etc, SizeField::Value) => EtcValueSize::new().sample(rng),
        }
    }
}

impl Serialize for SizeDist {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SizeDist::Fixed(n) => s.serialize_u32(*n),
            SizeDist::Etc => s.serialize_str("etc"),
        }
    }
}

impl<'de> Deserialize<'de> for SizeDist {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct SizeVisitor;

        impl Visitor<'_> for SizeVisitor {
            type Value = SizeDist;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size in bytes (an integer from 0 to 4294967295) or \"etc\"")
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<SizeDist, E> {
                u32::try_from(v)
                    .map(SizeDist::Fixed)
                    .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<SizeDist, E> {
                u32::try_from(v)
                    .map(SizeDist::Fixed)
                    .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<SizeDist, E> {
                if v == "etc" {
                    Ok(SizeDist::Etc)
                } else {
                    Err(E::invalid_value(de::Unexpected::Str(v), &self))
                }
            }
        }

        d.deserialize_any(SizeVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::distributions::tests::gamma;
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    #[test]
    fn value_table_mass_matches_mutilate() {
        let m = EtcValueSize::table_mass();
        assert!((m - 0.44155).abs() < 1e-12, "{m}");
    }

    #[test]
    fn value_size_table_probabilities() {
        // Each size 0..=14 must occur with its table probability, and
        // sizes >= 15 (only the tail produces them) with 1 - 0.44155; each
        // within 5 binomial standard errors sqrt(p(1-p)/n).
        let n = 1_000_000;
        let v = EtcValueSize::new();
        let mut rng = Pcg64Mcg::seed_from_u64(101);
        let mut counts = [0usize; 16];
        for _ in 0..n {
            let s = v.sample(&mut rng);
            assert!(s <= MAX_VALUE_LEN);
            counts[(s as usize).min(15)] += 1;
        }
        let mut expected: Vec<f64> = FB_VALUE_TABLE.iter().map(|&(p, _)| p).collect();
        expected.push(1.0 - EtcValueSize::table_mass());
        for (i, (&c, &p)) in counts.iter().zip(&expected).enumerate() {
            let f = c as f64 / n as f64;
            let tol = 5.0 * (p * (1.0 - p) / n as f64).sqrt();
            assert!((f - p).abs() < tol, "size {i}: {f} vs {p}");
        }
    }

    #[test]
    fn value_size_tail_cdf_matches_truncated_gpareto() {
        // Given size >= 15, P(size <= m) = P(floor(X) <= m) = F(m + 1) for
        // the GPareto X. DKW bound: with ~220k tail samples and eps = 0.006,
        // P(sup gap > eps) <= 2 exp(-2 * 220e3 * 0.006^2) ≈ 3e-7.
        let n = 400_000;
        let v = EtcValueSize::new();
        let mut rng = Pcg64Mcg::seed_from_u64(102);
        let pts = [15u32, 20, 50, 100, 300, 1000, 5000];
        let mut below = [0usize; 7];
        let mut tail_n = 0usize;
        for _ in 0..n {
            let s = v.sample(&mut rng);
            if s >= 15 {
                tail_n += 1;
                for (c, &m) in below.iter_mut().zip(&pts) {
                    if s <= m {
                        *c += 1;
                    }
                }
            }
        }
        assert!(tail_n > 200_000);
        for (&c, &m) in below.iter().zip(&pts) {
            let emp = c as f64 / tail_n as f64;
            let ana = FB_VALUE_TAIL.cdf(m as f64 + 1.0);
            assert!((emp - ana).abs() < 0.006, "m={m}: {emp} vs {ana}");
        }
    }

    #[test]
    fn key_size_mean_and_cdf() {
        // Rounding a continuous draw to the nearest integer leaves the mean
        // unchanged up to a small smoothing term, and the clamps to [1, 255]
        // have probability < 1e-6 here, so the mean of key sizes must match
        // the GEV mean loc + scale (Γ(1-ξ) - 1)/ξ ≈ 36.2231 within 5 standard
        // errors (sd ≈ 11.81 from the analytic variance) plus 0.01 for
        // rounding.
        let n = 400_000;
        let k = EtcKeySize::new();
        let mut rng = Pcg64Mcg::seed_from_u64(103);
        let mut sum = 0u64;
        let pts = [25u32, 30, 35, 40, 50, 70];
        let mut below = [0usize; 6];
        for _ in 0..n {
            let s = k.sample(&mut rng);
            assert!((1..=MAX_KEY_LEN).contains(&s));
            sum += s as u64;
            for (c, &m) in below.iter_mut().zip(&pts) {
                if s <= m {
                    *c += 1;
                }
            }
        }
        let g1 = gamma(1.0 - FB_KEY.shape);
        let g2 = gamma(1.0 - 2.0 * FB_KEY.shape);
        let mean = FB_KEY.loc + FB_KEY.scale * (g1 - 1.0) / FB_KEY.shape;
        let sd = FB_KEY.scale * (g2 - g1 * g1).sqrt() / FB_KEY.shape;
        let m = sum as f64 / n as f64;
        assert!(
            (m - mean).abs() < 5.0 * sd / (n as f64).sqrt() + 0.01,
            "{m} vs {mean}"
        );
        // P(round(G) <= m) = P(G < m + 0.5) = F(m + 0.5); DKW with
        // n = 400k and eps = 0.004 gives a bound of 2 exp(-12.8) ≈ 6e-6.
        for (&c, &m) in below.iter().zip(&pts) {
            let emp = c as f64 / n as f64;
            let ana = FB_KEY.cdf(m as f64 + 0.5);
            assert!((emp - ana).abs() < 0.004, "m={m}: {emp} vs {ana}");
        }
    }

    #[test]
    fn key_len_rounding_and_clamping() {
        let k = EtcKeySize::new();
        assert_eq!(k.len_from_draw(30.4), 30);
        assert_eq!(k.len_from_draw(30.5), 31); // C round: half away from zero
        assert_eq!(k.len_from_draw(0.2), 1);
        assert_eq!(k.len_from_draw(-7.0), 1);
        assert_eq!(k.len_from_draw(1e9), MAX_KEY_LEN);
        assert_eq!(k.len_from_draw(f64::NAN), 1);
        let k = EtcKeySize::for_records(1_000_000);
        assert_eq!(k.min_len(), 7);
        assert_eq!(k.len_from_draw(3.0), 7);
        assert_eq!(EtcKeySize::for_records(999_999).min_len(), 6);
        assert_eq!(EtcKeySize::for_records(0).min_len(), 1);
        assert_eq!(EtcKeySize::for_records(u64::MAX).min_len(), 20);
    }

    #[test]
    fn sizes_are_deterministic() {
        let mut a = Pcg64Mcg::seed_from_u64(5);
        let mut b = Pcg64Mcg::seed_from_u64(5);
        let (k, v) = (EtcKeySize::new(), EtcValueSize::new());
        let sa: Vec<u32> = (0..5000)
            .flat_map(|_| [k.sample(&mut a), v.sample(&mut a)])
            .collect();
        let sb: Vec<u32> = (0..5000)
            .flat_map(|_| [k.sample(&mut b), v.sample(&mut b)])
            .collect();
        assert_eq!(sa, sb);
    }

    #[test]
    fn size_dist_samples_and_parses() {
        let mut rng = Pcg64Mcg::seed_from_u64(9);
        assert_eq!(SizeDist::Fixed(42).sample(SizeField::Key, &mut rng), 42);
        assert_eq!(SizeDist::Fixed(0).sample(SizeField::Value, &mut rng), 0);
        // Etc keys follow fb_key, Etc values follow fb_value: same stream as
        // the samplers themselves.
        let mut a = Pcg64Mcg::seed_from_u64(10);
        let mut b = Pcg64Mcg::seed_from_u64(10);
        for _ in 0..1000 {
            assert_eq!(
                SizeDist::Etc.sample(SizeField::Key, &mut a),
                EtcKeySize::new().sample(&mut b)
            );
            assert_eq!(
                SizeDist::Etc.sample(SizeField::Value, &mut a),
                EtcValueSize::new().sample(&mut b)
            );
        }

        let d: SizeDist = serde_json::from_str("\"etc\"").unwrap();
        assert_eq!(d, SizeDist::Etc);
        let d: SizeDist = serde_json::from_str("200").unwrap();
        assert_eq!(d, SizeDist::Fixed(200));
        assert!(serde_json::from_str::<SizeDist>("-1").is_err());
        assert!(serde_json::from_str::<SizeDist>("4294967296").is_err());
        assert!(serde_json::from_str::<SizeDist>("\"fb_value\"").is_err());
        assert_eq!(serde_json::to_string(&SizeDist::Etc).unwrap(), "\"etc\"");
        assert_eq!(serde_json::to_string(&SizeDist::Fixed(7)).unwrap(), "7");
    }
}
