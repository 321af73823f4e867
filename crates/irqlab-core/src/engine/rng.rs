//! Per-stream seeded random number generators. Every source of randomness in
//! the model (each client connection's arrivals, each core's service times,
//! RSS hashing, …) draws from its own stream, derived from the run seed and a
//! stable stream id. Adding a stream therefore never perturbs the others, and
//! the same seed always yields the same run.


use rand_pcg::Pcg64Mcg;

pub type StreamRng = Pcg64Mcg;

/// Derives independent generators from one run seed.
#[derive(Clone, Copy, Debug)]
pub struct RngStreams {
    seed: u64,
}

/// SplitMix64 finaliser: spreads (seed, stream) pairs over the whole state space.
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl RngStreams {
    pub fn new(seed: u64) -> Self {
        RngStreams { seed }
    }

    /// The generator of stream `(kind, index)`; `kind` names the model part
    /// (a small constant per part), `index` the instance.
    pub fn stream(&self, kind: u32, index: u64) -> StreamRng {
        let a = splitmix64(self.seed ^ splitmix64(((kind as u64) << 48) ^ index));
        let b = splitmix64(a ^ 0xD1B5_4A32_D192_ED03);
        let state = ((a as u128) << 64) | (b as u128) | 1;
        Pcg64Mcg::new(state)
    }
}

/// Stream kinds: one constant per model part, never renumbered.
pub mod kind {
    pub const CLIENT_ARRIVALS: u32 = 1;
    pub const CLIENT_REQUESTS: u32 = 2;
    pub const SERVICE: u32 = 3;
    pub const RSS: u32 = 4;
    pub const WIRE: u32 = 5;
    /// The storage array's service times (`model/devices/array.rs`).
    pub const STORAGE: u32 = 6;
    /// Where the scheduler first puts each thread (`model/kernel/fair.rs`).
    pub const PLACEMENT: u32 = 7;
    /// When the host preempts each core, and for how long
    /// (`model/kernel/host_preempt.rs`).
    pub const HOST_PREEMPT: u32 = 8;
    /// Which halted cores' wake-ups the host holds back, and how long
    /// (`HostHold` in `model/kernel/host_preempt.rs`): a core's index, or
    /// the load generator's `u32::MAX`.
    pub const HOST_HALTED_LATE: u32 = 9;
}

impl Default for RngStreams {
    fn default() -> Self {
        RngStreams::new(1)
    }
}


#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;
    #[test]
    fn streams_are_reproducible_and_distinct() {
        let s = RngStreams::new(42);
        let a: Vec<u64> = (0..4).map(|_| 0).scan(s.stream(1, 0), |r, _| Some(r.gen())).collect();
        let b: Vec<u64> = (0..4).map(|_| 0).scan(s.stream(1, 0), |r, _| Some(r.gen())).collect();
        let c: Vec<u64> = (0..4).map(|_| 0).scan(s.stream(1, 1), |r, _| Some(r.gen())).collect();
        let d: Vec<u64> = (0..4).map(|_| 0).scan(RngStreams::new(43).stream(1, 0), |r, _| Some(r.gen())).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
    }
}
