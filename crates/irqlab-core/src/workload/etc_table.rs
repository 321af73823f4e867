//! ETC key and value sizes without `ln` and `pow` for most draws, with
//! exactly the results of the formulas in [`super::etc`].
//!
//! Both continuous ETC draws turn one uniform into an integer by a monotone
//! function: a key length is `round(G(u))` (GEV, increasing in `u`), a tail
//! value `trunc(V(u))` (GPareto, decreasing). The uniform is rand's `Open01`,
//! which is exactly `(2i + 1) · 2^-53` for `i`, the top 52 bits of one
//! `u64` ([`open01`]). Split the `i` range into equal buckets by their top
//! bits: where the function's value at both ends of a bucket is more than
//! [`MARGIN`] away from every rounding boundary and both ends round to the
//! same integer, every `u` in between rounds to that integer too, and the
//! bucket's table entry holds it. Other buckets hold 0 and their draws are
//! computed as before.
//!
//! Why a bucket's entry is exact: the true function is monotone, so its
//! value anywhere in the bucket lies between its values at the ends; the
//! computed values (glibc's `log` and `pow` are within one unit in the last
//! place, so `G` and `V` are within about 1e-11 of the true values over the
//! table's range) differ from the true ones by far less than [`MARGIN`];
//! hence the computed value anywhere in the bucket lies strictly between
//! the same two boundaries as at its ends. The tests check the entries
//! against the formulas at bucket ends and on a million random draws.
//!
//! On the thesis scenario about 98 % of key draws and 80 % of tail value
//! draws take the table (`docs/performance.md`).

use std::sync::OnceLock;

use super::distributions::{GeneralizedPareto, Gev};
use super::etc::{FB_KEY, FB_VALUE_TABLE, FB_VALUE_TAIL, MAX_KEY_LEN, MAX_VALUE_LEN};

/// Buckets of the key table: 2^12 (4 KiB of `u8`).
const KEY_BITS: u32 = 12;
/// Buckets of the value tail's table: 2^13 (16 KiB of `u16`).
const VALUE_BITS: u32 = 13;
/// Buckets of the value head's table: 2^12 (4 KiB of `u8`).
const HEAD_BITS: u32 = 12;
/// A value-head bucket that holds a running sum: search it.
const HEAD_MIXED: u8 = u8::MAX;
/// How far from a rounding boundary a bucket's end values must be: many
/// orders of magnitude above the formulas' floating-point error.
const MARGIN: f64 = 1e-6;

/// rand 0.8's `Standard` for `f64` from the `u64` it draws: the top 53
/// bits times 2^-53, in [0, 1).
#[inline]
pub fn standard01(x: u64) -> f64 {
    (x >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// rand 0.8's `Open01` for `f64` from the `u64` it draws: the top 52 bits
/// as the fraction of a number in [1, 2), minus `1 - 2^-53`; exactly
/// `(2i + 1) · 2^-53`, strictly increasing in `i = x >> 12`.
#[inline]
pub fn open01(x: u64) -> f64 {
    f64::from_bits((x >> 12) | (1023u64 << 52)) - (1.0 - f64::EPSILON / 2.0)
}

pub struct EtcTables {
    /// Key length (clamped to 1..=255) per bucket of `x >> (64 - KEY_BITS)`;
    /// 0: compute.
    key: Vec<u8>,
    /// Tail value size per bucket of `x >> (64 - VALUE_BITS)`; 0: compute
    /// (tail sizes are at least 15).
    value_tail: Vec<u16>,
    /// The running sums of [`FB_VALUE_TABLE`]'s probabilities, added in
    /// mutilate's order (the same additions `EtcValueSize::sample` made);
    /// strictly increasing, since every probability is positive.
    pub value_cum: [(f64, u32); FB_VALUE_TABLE.len()],
    /// Per bucket of `x >> (64 - HEAD_BITS)`, the index into `value_cum`
    /// that `value_cum.partition_point(|c| c.0 <= u)` gives for every
    /// uniform `u` of the bucket (`FB_VALUE_TABLE.len()`: the tail), or
    /// [`HEAD_MIXED`] where a running sum falls inside the bucket. Exact:
    /// `u` increases with `x`, so one index at both ends is the index
    /// throughout.
    value_head: Vec<u8>,
}

/// The first and last `u64` of bucket `j` of a table indexed by the top
/// `bits` bits.
fn bucket_bounds(j: u64, bits: u32) -> (u64, u64) {
    let shift = 64 - bits;
    let lo = j << shift;
    (lo, lo | ((1u64 << shift) - 1))
}

/// The `Open01` uniforms at both ends of bucket `j` of `bits` bits.
fn bucket_ends(j: u64, bits: u32) -> (f64, f64) {
    let (lo, hi) = bucket_bounds(j, bits);
    (open01(lo), open01(hi))
}

/// Whether no rounding boundary lies within [`MARGIN`] of `[lo, hi]`; the
/// boundaries are `first`, `first + 1`, …, `last`.
fn uniform_in(lo: f64, hi: f64, first: f64, last: f64) -> bool {
    if !(lo.is_finite() && hi.is_finite()) {
        return false;
    }
    let (lo, hi) = (lo - MARGIN, hi + MARGIN);
    // The first boundary at or above lo.
    let next = first + (lo - first).ceil().max(0.0);
    next > last || next > hi
}

impl EtcTables {
    fn build() -> Self {
        let gev: Gev = FB_KEY;
        // Key lengths change at k + 0.5 for k = 1..=254 (below 1.5 and above
        // 254.5 the clamps hold them at 1 and 255).
        let key = (0..1u64 << KEY_BITS)
            .map(|j| {
                let (ulo, uhi) = bucket_ends(j, KEY_BITS);
                let (glo, ghi) = (gev.from_uniform(ulo), gev.from_uniform(uhi));
                if uniform_in(glo, ghi, 1.5, MAX_KEY_LEN as f64 - 0.5) {
                    (glo.round() as u32).clamp(1, MAX_KEY_LEN) as u8
                } else {
                    0
                }
            })
            .collect();
        let tail: GeneralizedPareto = FB_VALUE_TAIL;
        // Tail sizes change at every integer (truncation); kept as u16.
        let value_tail = (0..1u64 << VALUE_BITS)
            .map(|j| {
                let (ulo, uhi) = bucket_ends(j, VALUE_BITS);
                // Decreasing in u: the bucket's low end has the largest value.
                let (vmin, vmax) = (tail.from_uniform(uhi), tail.from_uniform(ulo));
                if vmax < u16::MAX as f64 && uniform_in(vmin, vmax, 1.0, MAX_VALUE_LEN as f64) {
                    (vmin.trunc() as u32).min(MAX_VALUE_LEN) as u16
                } else {
                    0
                }
            })
            .collect();
        let mut cum = 0.0;
        let value_cum = FB_VALUE_TABLE.map(|(p, bytes)| {
            cum += p;
            (cum, bytes)
        });
        let value_head = (0..1u64 << HEAD_BITS)
            .map(|j| {
                let (lo, hi) = bucket_bounds(j, HEAD_BITS);
                let at = |x: u64| value_cum.partition_point(|&(c, _)| c <= standard01(x));
                let (a, b) = (at(lo), at(hi));
                if a == b {
                    a as u8
                } else {
                    HEAD_MIXED
                }
            })
            .collect();
        EtcTables { key, value_tail, value_cum, value_head }
    }

    /// The tables, built on first use.
    pub fn get() -> &'static EtcTables {
        static TABLES: OnceLock<EtcTables> = OnceLock::new();
        TABLES.get_or_init(EtcTables::build)
    }

    /// The key length (clamped to 1..=255) the GEV draw from `x` gives, if
    /// its bucket is uniform.
    #[inline]
    pub fn key(&self, x: u64) -> Option<u32> {
        match self.key[(x >> (64 - KEY_BITS)) as usize] {
            0 => None,
            k => Some(k as u32),
        }
    }

    /// The tail value size the GPareto draw from `x` gives, if its bucket
    /// is uniform.
    #[inline]
    pub fn value_tail(&self, x: u64) -> Option<u32> {
        match self.value_tail[(x >> (64 - VALUE_BITS)) as usize] {
            0 => None,
            v => Some(v as u32),
        }
    }

    /// The index into `value_cum` of the first running sum above the
    /// `Standard` uniform drawn as `x` (`value_cum.len()`: none, the tail).
    #[inline]
    pub fn value_head(&self, x: u64) -> usize {
        match self.value_head[(x >> (64 - HEAD_BITS)) as usize] {
            HEAD_MIXED => {
                let u = standard01(x);
                self.value_cum.partition_point(|&(c, _)| c <= u)
            }
            i => i as usize,
        }
    }

    /// Share of buckets the key and value tables answer (each bucket is
    /// equally likely).
    pub fn coverage(&self) -> (f64, f64) {
        let share = |n: usize, of: usize| n as f64 / of as f64;
        (
            share(self.key.iter().filter(|&&k| k != 0).count(), self.key.len()),
            share(self.value_tail.iter().filter(|&&v| v != 0).count(), self.value_tail.len()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::distributions::Open01;
    use rand::rngs::mock::StepRng;
    use rand::{Rng, RngCore, SeedableRng};
    use rand_pcg::Pcg64Mcg;

    fn key_exact(x: u64) -> u32 {
        (FB_KEY.from_uniform(open01(x)).round() as u32).clamp(1, MAX_KEY_LEN)
    }

    fn tail_exact(x: u64) -> u32 {
        (FB_VALUE_TAIL.from_uniform(open01(x)).trunc() as u32).min(MAX_VALUE_LEN)
    }

    #[test]
    fn open01_is_rands() {
        let mut src = Pcg64Mcg::seed_from_u64(3);
        for x in (0..100_000).map(|_| src.next_u64()).chain([0, 1 << 12, u64::MAX, u64::MAX >> 1]) {
            let u: f64 = StepRng::new(x, 0).sample(Open01);
            assert_eq!(u.to_bits(), open01(x).to_bits(), "{x:#x}");
        }
        assert_eq!(open01(0), f64::EPSILON / 2.0);
    }

    #[test]
    fn table_entries_are_the_formulas_values() {
        let t = EtcTables::get();
        // Both ends of every bucket, and their neighbours across the edge.
        for (bits, n) in [(KEY_BITS, 1u64 << KEY_BITS), (VALUE_BITS, 1u64 << VALUE_BITS)] {
            for j in 0..n {
                let (lo, hi) = bucket_bounds(j, bits);
                for x in [lo, lo + (1 << 12), hi, hi - (1 << 12), lo + (hi - lo) / 2] {
                    if bits == KEY_BITS {
                        if let Some(k) = t.key(x) {
                            assert_eq!(k, key_exact(x), "key at {x:#x}");
                        }
                    } else if let Some(v) = t.value_tail(x) {
                        assert_eq!(v, tail_exact(x), "value at {x:#x}");
                    }
                }
            }
        }
        // A million random draws.
        let mut src = Pcg64Mcg::seed_from_u64(4);
        let (mut keys, mut tails) = (0, 0);
        for _ in 0..1_000_000 {
            let x = src.next_u64();
            if let Some(k) = t.key(x) {
                assert_eq!(k, key_exact(x), "key at {x:#x}");
                keys += 1;
            }
            if let Some(v) = t.value_tail(x) {
                assert_eq!(v, tail_exact(x), "value at {x:#x}");
                tails += 1;
            }
        }
        // The tables answer most draws (else they would not be worth it).
        assert!(keys > 950_000 && tails > 750_000, "{keys} {tails}");
        let (k, v) = t.coverage();
        assert!(k > 0.95 && v > 0.75, "{k} {v}");
    }

    #[test]
    fn value_running_sums_are_the_samplers() {
        let mut cum = 0.0;
        for (&(p, bytes), &(c, b)) in FB_VALUE_TABLE.iter().zip(&EtcTables::get().value_cum) {
            cum += p;
            assert_eq!((cum.to_bits(), bytes), (c.to_bits(), b));
        }
        let sums = &EtcTables::get().value_cum;
        assert!(sums.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn the_value_head_table_is_the_search_it_replaces() {
        let t = EtcTables::get();
        let search = |x: u64| {
            let u: f64 = StepRng::new(x, 0).sample(rand::distributions::Standard);
            assert_eq!(u.to_bits(), standard01(x).to_bits(), "{x:#x}");
            t.value_cum.partition_point(|&(c, _)| c <= u)
        };
        for j in 0..1u64 << HEAD_BITS {
            let (lo, hi) = bucket_bounds(j, HEAD_BITS);
            for x in [lo, lo + (1 << 11), hi, hi - (1 << 11), lo + (hi - lo) / 2] {
                assert_eq!(t.value_head(x), search(x), "{x:#x}");
            }
        }
        // Each running sum's own neighbourhood: the draws just below and at it.
        for &(c, _) in &t.value_cum {
            let i = (c * (1u64 << 53) as f64) as u64;
            for k in i.saturating_sub(2)..=i + 2 {
                let x = k << 11;
                assert_eq!(t.value_head(x), search(x), "{x:#x}");
            }
        }
        let mut src = Pcg64Mcg::seed_from_u64(5);
        for _ in 0..1_000_000 {
            let x = src.next_u64();
            assert_eq!(t.value_head(x), search(x), "{x:#x}");
        }
        // At most one bucket per running sum is mixed.
        let mixed = t.value_head.iter().filter(|&&i| i == HEAD_MIXED).count();
        assert!(mixed <= t.value_cum.len(), "{mixed}");
    }

    #[test]
    fn a_boundary_within_the_margin_makes_a_bucket_mixed() {
        assert!(uniform_in(2.6, 3.4, 1.5, 254.5));
        assert!(!uniform_in(2.5 + MARGIN / 2.0, 3.4, 1.5, 254.5));
        assert!(!uniform_in(2.6, 3.5 - MARGIN / 2.0, 1.5, 254.5));
        assert!(!uniform_in(2.4, 2.6, 1.5, 254.5));
        assert!(uniform_in(-3.0, 1.4, 1.5, 254.5));
        assert!(uniform_in(254.6, 900.0, 1.5, 254.5));
        assert!(!uniform_in(f64::NAN, 2.6, 1.5, 254.5));
        assert!(uniform_in(15.1, 15.9, 1.0, 1e6));
        assert!(!uniform_in(15.1, 16.0, 1.0, 1e6));
    }
}
