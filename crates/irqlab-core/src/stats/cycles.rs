//! Per-context time of a group of cores, as `/proc/stat` would report it.

use crate::engine::Nanos;
use crate::model::kernel::cpu::{CpuClass, CLASSES};
use crate::stats::summary::{CpuPct, VmHostSplit};

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
    /// A host's time split by what it was for (`VmHostSplit`).
    pub fn host_split(&self) -> VmHostSplit {
        let total: Nanos = self.ns.iter().sum();
        let p = |c: CpuClass| if total > 0 { 100.0 * self.ns[c as usize] as f64 / total as f64 } else { 0.0 };
        VmHostSplit {
            guest: p(CpuClass::Guest),
            exit: p(CpuClass::Exit),
            halt_poll: p(CpuClass::HaltPoll),
            vhost: p(CpuClass::Vhost),
            irq: p(CpuClass::Irq),
            softirq: p(CpuClass::Softirq),
            other: p(CpuClass::System) + p(CpuClass::User) + p(CpuClass::Steal),
            idle: p(CpuClass::Idle),
        }
    }
}
