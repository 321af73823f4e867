//! Per-context time of a group of cores, as `/proc/stat` would report it.

use crate::engine::Nanos;
use crate::stats::summary::CpuPct;

/// Sum of per-class times (indexed like `model::cpu::CpuClass`).
#[derive(Clone, Copy, Debug, Default)]
pub struct CycleTable {
    pub ns: [Nanos; 5],
}

impl CycleTable {
    pub fn add(&mut self, a: &[Nanos; 5]) {
        for (s, x) in self.ns.iter_mut().zip(a) {
            *s += x;
        }
    }
    /// Time not idle.
    pub fn busy_ns(&self) -> Nanos {
        self.ns[..4].iter().sum()
    }
    pub fn pct(&self) -> CpuPct {
        crate::model::server::pct_of(&self.ns)
    }
}
