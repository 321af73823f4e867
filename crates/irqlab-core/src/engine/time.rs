//! Simulated time: one absolute type, integer nanoseconds since the start of
//! the run. Integer time keeps runs bit-identical across machines.

/// Absolute simulated time or a duration, in nanoseconds.
pub type Nanos = u64;

pub const NS_PER_US: Nanos = 1_000;
pub const NS_PER_MS: Nanos = 1_000_000;
pub const NS_PER_S: Nanos = 1_000_000_000;

/// Convert cycles at `freq_ghz` to nanoseconds, rounding up so that a
/// non-zero amount of work never takes zero time.
#[inline]
pub fn cycles_to_ns(cycles: u64, freq_ghz: f64) -> Nanos {
    if cycles == 0 {
        return 0;
    }
    ((cycles as f64 / freq_ghz).ceil() as Nanos).max(1)
}

/// [`cycles_to_ns`] at one frequency, faster and with the same results.
///
/// At a whole number of GHz `f` from 2 on (the thesis's 3 GHz), `ceil(c / f)` in
/// doubles equals the integer `ceil(c / f)` for every `c` below 2^48: `c`
/// converts exactly, and when `f` does not divide `c` the quotient lies at
/// least `1/f` away from both neighbouring integers, far more than the
/// division's rounding error (half an ulp, below 2^-4 there), so rounding
/// never lands on an integer. The integer quotient is a multiplication by
/// a precomputed reciprocal (`floor(c * m / 2^64)` with `m = floor(2^64 /
/// f) + 1` is `floor(c / f)` for `c < 2^64 / f`), instead of a division and
/// two conversions on a segment's critical path. Any other frequency, or a
/// larger `c`, takes [`cycles_to_ns`].
#[derive(Clone, Copy, Debug, Default)]
pub struct CycleClock {
    freq_ghz: f64,
    /// `(f, m)` when the frequency is a whole number `f` of GHz.
    whole: Option<(u64, u64)>,
}

/// Below this many cycles the whole-GHz path is exact (see [`CycleClock`]).
const WHOLE_GHZ_MAX_CYCLES: u64 = 1 << 48;

impl CycleClock {
    pub fn new(freq_ghz: f64) -> Self {
        let whole = ((2.0..=1024.0).contains(&freq_ghz) && freq_ghz.fract() == 0.0).then(|| {
            let f = freq_ghz as u64;
            (f, (u64::MAX / f).wrapping_add(1))
        });
        CycleClock { freq_ghz, whole }
    }

    /// Exactly `cycles_to_ns(cycles, freq_ghz)`.
    #[inline(always)]
    pub fn ns(&self, cycles: u64) -> Nanos {
        match self.whole {
            Some((f, m)) if cycles < WHOLE_GHZ_MAX_CYCLES => {
                let q = ((cycles as u128 * m as u128) >> 64) as u64;
                // q = floor(cycles / f); the ceiling, at least 1 if cycles > 0.
                q + (q * f != cycles) as u64
            }
            _ => cycles_to_ns(cycles, self.freq_ghz),
        }
    }
}

/// Convert seconds (as given in a scenario) to nanoseconds.
#[inline]
pub fn secs_to_ns(s: f64) -> Nanos {
    (s * NS_PER_S as f64).round() as Nanos
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn the_cycle_clock_agrees_with_the_conversion_everywhere_it_is_used() {
        let mut rng = <crate::engine::StreamRng as rand::SeedableRng>::seed_from_u64(2);
        let mut rand = || rand::RngCore::next_u64(&mut rng);
        for freq in [1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 2.6, 2.1, 3.5, 0.5, 1.8, 9.99] {
            let clock = CycleClock::new(freq);
            for c in 0..100_000u64 {
                assert_eq!(clock.ns(c), cycles_to_ns(c, freq), "{c} cycles at {freq} GHz");
            }
            for _ in 0..200_000 {
                // Every magnitude up to 2^50 (past the whole-GHz bound).
                let c = rand() >> (14 + rand() % 50);
                assert_eq!(clock.ns(c), cycles_to_ns(c, freq), "{c} cycles at {freq} GHz");
                let f = freq as u64;
                if freq.fract() == 0.0 && c < 1 << 47 {
                    // Multiples and their neighbours, where a ceiling could slip.
                    let k = c / f * f;
                    for d in [k.saturating_sub(1), k, k + 1] {
                        assert_eq!(clock.ns(d), cycles_to_ns(d, freq), "{d} cycles at {freq} GHz");
                    }
                }
            }
        }
    }

    #[test]
    fn cycle_conversion_rounds_up() {
        assert_eq!(cycles_to_ns(0, 3.0), 0);
        assert_eq!(cycles_to_ns(1, 3.0), 1);
        assert_eq!(cycles_to_ns(3000, 3.0), 1000);
        assert_eq!(cycles_to_ns(3001, 3.0), 1001);
        assert_eq!(secs_to_ns(1.5), 1_500_000_000);
    }
}
