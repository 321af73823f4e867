//! Receive packet steering: `get_rps_cpu`'s `rps_map` path
//! (`net/core/dev.c`). The RX queue's `rps_cpus` mask, as a list of CPUs in
//! ascending order (`store_rps_map`), is indexed by the flow hash scaled
//! onto its length, so a flow always lands on the same core.

use super::{reciprocal_scale, Cpu};

/// One RX queue's `rps_map`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpsMap {
    cpus: Vec<Cpu>,
}

impl RpsMap {
    /// The map of an `rps_cpus` bitmask (bit i: CPU i), as
    /// `/sys/class/net/DEV/queues/rx-N/rps_cpus` sets it. An empty mask
    /// disables RPS on the queue (None).
    pub fn from_mask(mask: u64) -> Option<RpsMap> {
        let cpus: Vec<Cpu> = (0..64).filter(|i| mask & (1u64 << i) != 0).collect();
        (!cpus.is_empty()).then_some(RpsMap { cpus })
    }

    /// The map of a list of CPUs, in the order given.
    pub fn from_cpus(cpus: Vec<Cpu>) -> Option<RpsMap> {
        (!cpus.is_empty()).then_some(RpsMap { cpus })
    }

    pub fn cpus(&self) -> &[Cpu] {
        &self.cpus
    }

    /// The target CPU of a packet with flow hash `hash`: the map's only CPU,
    /// or `cpus[reciprocal_scale(hash, len)]`.
    pub fn target(&self, hash: u32) -> Cpu {
        if self.cpus.len() == 1 {
            return self.cpus[0];
        }
        self.cpus[reciprocal_scale(hash, self.cpus.len() as u32) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mask_lists_its_cpus_in_order_and_the_hash_picks_one() {
        // CPUs 1-7 (mask 0xfe), as the paper's setup would steer away from
        // the interrupt processing core 0.
        let m = RpsMap::from_mask(0xfe).unwrap();
        assert_eq!(m.cpus(), &[1, 2, 3, 4, 5, 6, 7]);
        for (hash, want) in [(0u32, 1u32), (u32::MAX, 7), (0x8000_0000, 4), (0x2492_4925, 2), (0x2492_4924, 1)] {
            assert_eq!(m.target(hash), want, "hash {hash:#x}");
        }
        assert_eq!(RpsMap::from_mask(0), None, "an empty mask is RPS off");
        assert_eq!(RpsMap::from_mask(1 << 5).unwrap().target(0xdead_beef), 5);
        assert_eq!(RpsMap::from_cpus(vec![]), None);
    }

    #[test]
    fn a_flow_keeps_its_cpu() {
        let m = RpsMap::from_mask(0xff).unwrap();
        let hash = 0x51cc_c178;
        assert!((0..100).all(|_| m.target(hash) == m.target(hash)));
        // Over many hashes every CPU gets about an eighth.
        let mut counts = [0u32; 8];
        for i in 0..80_000u32 {
            counts[m.target(i.wrapping_mul(0x9e37_79b9)) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| (9_000..11_000).contains(&c)), "{counts:?}");
    }
}
