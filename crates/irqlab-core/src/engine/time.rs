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

/// Convert seconds (as given in a scenario) to nanoseconds.
#[inline]
pub fn secs_to_ns(s: f64) -> Nanos {
    (s * NS_PER_S as f64).round() as Nanos
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn cycle_conversion_rounds_up() {
        assert_eq!(cycles_to_ns(0, 3.0), 0);
        assert_eq!(cycles_to_ns(1, 3.0), 1);
        assert_eq!(cycles_to_ns(3000, 3.0), 1000);
        assert_eq!(cycles_to_ns(3001, 3.0), 1001);
        assert_eq!(secs_to_ns(1.5), 1_500_000_000);
    }
}
