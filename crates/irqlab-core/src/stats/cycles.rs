//! Per-context time of a group of cores, as `/proc/stat` would report it.

use crate::engine::Nanos;
use crate::model::kernel::cpu::{CpuClass, CLASSES};
use crate::stats::summary::CpuPct;

/// Sum of per-class times (indexed like `model::cpu::CpuClass`).
#[derive(Clone, Copy, Debug, Default)]
pub struct CycleTable {
    pub ns: [Nanos; CLASSES],
}

impl CycleTable {
    pub fn add(&mut self, a: &[Nanos; CLASSES]) {
        for (s, x) in self.ns.iter_mut().zip(a) {
            *s += x;
        }
    }
    /// Time doing work: neither idle nor stolen by the host.
    pub fn busy_ns(&self) -> Nanos {
        self.ns.iter().sum::<Nanos>() - self.ns[CpuClass::Idle as usize] - self.ns[CpuClass::Steal as usize]
    }
    pub fn pct(&self) -> CpuPct {
        crate::model::server::pct_of(&self.ns)
    }
}
