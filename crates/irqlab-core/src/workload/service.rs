//! A thread's request service times ([`ServiceDist`]), drawn from its own
//! stream.
//!
//! Exponential draws are made a batch at a time: the same uniforms in the
//! same order, turned into the same cycle counts, but the batch's `ln`
//! calls do not depend on one another, so they overlap instead of each
//! waiting on the event before it (on the thesis scenario the `ln` was
//! the largest single cost left, `docs/performance.md`). Nothing else
//! reads the stream, so drawing ahead changes no value.

use rand::Rng;

use crate::engine::StreamRng;
use crate::scenario::ServiceDist;

/// Draws made ahead at a time.
const BATCH: usize = 32;

pub struct ServiceDraws {
    rng: StreamRng,
    dist: ServiceDist,
    ahead: [u64; BATCH],
    /// The next unused draw in `ahead` (`BATCH`: none left).
    next: usize,
}

impl ServiceDraws {
    /// Fetch the line that says where the next draw is (a hint;
    /// `engine/prefetch.rs`); the draw itself is not fetched, since its
    /// address needs that line's value, and waiting for it here cost more
    /// than the fetch saved.
    #[inline(always)]
    pub fn prefetch(&self) {
        crate::engine::prefetch::line(&self.next);
    }

    pub fn new(rng: StreamRng, dist: ServiceDist) -> Self {
        ServiceDraws { rng, dist, ahead: [0; BATCH], next: BATCH }
    }

    /// One exponential draw of mean `mean_cycles`, rounded to whole cycles.
    #[inline(always)]
    fn exponential(rng: &mut StreamRng, mean_cycles: u64) -> u64 {
        let u: f64 = rng.gen::<f64>();
        (-(1.0 - u).ln() * mean_cycles as f64).round() as u64
    }

    #[cold]
    #[inline(never)]
    fn refill(&mut self, mean_cycles: u64) {
        for d in &mut self.ahead {
            *d = Self::exponential(&mut self.rng, mean_cycles);
        }
        self.next = 0;
    }

    /// The next request's service time in cycles.
    #[inline(always)]
    pub fn cycles(&mut self) -> u64 {
        match self.dist {
            ServiceDist::Fixed { cycles } => cycles,
            ServiceDist::Exponential { mean_cycles } => {
                if self.next == BATCH {
                    self.refill(mean_cycles);
                }
                let c = self.ahead[self.next];
                self.next += 1;
                c
            }
            ServiceDist::Uniform { min_cycles, max_cycles } => self.rng.gen_range(min_cycles..=max_cycles),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn batched_draws_are_the_draws_made_one_at_a_time() {
        for dist in [
            ServiceDist::Exponential { mean_cycles: 5534 },
            ServiceDist::Uniform { min_cycles: 10, max_cycles: 900 },
            ServiceDist::Fixed { cycles: 77 },
        ] {
            let mut one = StreamRng::seed_from_u64(9);
            let mut batched = ServiceDraws::new(StreamRng::seed_from_u64(9), dist);
            for i in 0..1_000 {
                let want = match dist {
                    ServiceDist::Fixed { cycles } => cycles,
                    ServiceDist::Exponential { mean_cycles } => ServiceDraws::exponential(&mut one, mean_cycles),
                    ServiceDist::Uniform { min_cycles, max_cycles } => one.gen_range(min_cycles..=max_cycles),
                };
                assert_eq!(batched.cycles(), want, "draw {i} of {dist:?}");
            }
        }
        // And the formula is the one the model always used.
        let mut a = StreamRng::seed_from_u64(3);
        let mut b = a.clone();
        let u: f64 = b.gen::<f64>();
        assert_eq!(ServiceDraws::exponential(&mut a, 5534), (-(1.0 - u).ln() * 5534.0).round() as u64);
    }
}
