//! The cost of disruption (`[microarch] ipc_model = "disruption"`;
//! `scenario/microarch.rs`, docs/notes/ipc-disruption-design.md). Three
//! code classes share each core's L1 instruction cache. When one resumes
//! after others ran there, it refills the lines they displaced from L2.
//! Each core records, per class, which other classes ran since that class
//! last ran (`Core::displaced_by`).

use crate::model::kernel::cpu::Owner;
use crate::scenario::MicroarchCfg;

/// The code classes whose footprints displace each other.
pub const THREAD: usize = 0;
pub const SOFTIRQ: usize = 1;
pub const HARDIRQ: usize = 2;
pub const CLASSES: usize = 3;

/// The class of the code `owner` runs (None: the C-state exit runs none).
#[inline]
pub fn class_of(owner: Owner) -> Option<usize> {
    match owner {
        Owner::Thread(..) => Some(THREAD),
        Owner::Softirq => Some(SOFTIRQ),
        Owner::HardIrq(_) => Some(HARDIRQ),
        Owner::Waking => None,
    }
}

/// The disruption model's parameters, taken from the scenario.
#[derive(Clone, Copy, Debug)]
pub struct Disruption {
    pub cpi_warm: f64,
    /// Cycles an interrupted context loses once when it resumes.
    pub flush_cycles: u64,
    /// The refill of class `c` when the classes in bit set `m` ran since it
    /// last did: `refill[c][m]` cycles, worked out once from the
    /// footprints (a segment start then costs a lookup).
    refill: [[u64; 1 << CLASSES]; CLASSES],
}

impl Disruption {
    pub fn new(c: &MicroarchCfg) -> Self {
        let footprint = [c.thread_code_bytes, c.softirq_code_bytes, c.hardirq_code_bytes];
        let mut refill = [[0u64; 1 << CLASSES]; CLASSES];
        for (class, row) in refill.iter_mut().enumerate() {
            for (others, cycles) in row.iter_mut().enumerate() {
                let foreign: u64 = (0..CLASSES).filter(|j| others & (1 << j) != 0).map(|j| footprint[j]).sum();
                // What of its code the cache held when it stopped: a class
                // larger than the cache misses on the rest anyway (that is
                // in cpi_warm), so only the held lines can be displaced.
                let own = footprint[class].min(c.l1i_bytes);
                // LRU stack distance: its lines survive while the foreign
                // code and its own fit the cache together.
                let lost = own.min((foreign + own).saturating_sub(c.l1i_bytes));
                *cycles = lost.div_ceil(c.line_bytes) * c.l2_latency_cycles;
            }
        }
        Disruption { cpi_warm: c.cpi_warm, flush_cycles: c.flush_cycles, refill }
    }

    /// Class `class` starts running on a core whose record is
    /// `displaced_by`: the cycles its refill costs. The record is updated
    /// (the class is warm again, and displaces the others' code).
    #[inline(always)]
    pub fn refill_cycles(&self, displaced_by: &mut [u8; CLASSES], class: usize) -> u64 {
        let others = displaced_by[class];
        let bit = 1u8 << class;
        for d in displaced_by.iter_mut() {
            *d |= bit;
        }
        displaced_by[class] = 0;
        self.refill[class][others as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(thread: u64, softirq: u64, hardirq: u64) -> Disruption {
        let c = MicroarchCfg {
            thread_code_bytes: thread,
            softirq_code_bytes: softirq,
            hardirq_code_bytes: hardirq,
            ..MicroarchCfg::default()
        };
        Disruption::new(&c)
    }

    #[test]
    fn a_class_that_runs_again_with_nothing_between_refills_nothing() {
        let d = model(24_576, 16_384, 4_096);
        let mut rec = [0u8; CLASSES];
        assert_eq!(d.refill_cycles(&mut rec, THREAD), 0);
        assert_eq!(d.refill_cycles(&mut rec, THREAD), 0);
    }

    /// 32 KiB L1i, 64-byte lines, 12 cycles a line: the thread (24 KiB)
    /// after a hard IRQ (4 KiB) and a softirq (16 KiB) loses 24 + 20 − 32 =
    /// 12 KiB, 192 lines, 2,304 cycles; the softirq after the thread and
    /// the next hard IRQ loses 16 + 28 − 32 = 12 KiB too.
    #[test]
    fn the_lost_lines_are_the_lru_stack_distance() {
        let d = model(24_576, 16_384, 4_096);
        let mut rec = [0u8; CLASSES];
        d.refill_cycles(&mut rec, THREAD);
        d.refill_cycles(&mut rec, HARDIRQ);
        d.refill_cycles(&mut rec, SOFTIRQ);
        assert_eq!(d.refill_cycles(&mut rec, THREAD), 192 * 12);
        d.refill_cycles(&mut rec, HARDIRQ);
        assert_eq!(d.refill_cycles(&mut rec, SOFTIRQ), 192 * 12);
    }

    #[test]
    fn code_that_fits_together_is_never_displaced() {
        let d = model(16_384, 8_192, 4_096);
        let mut rec = [0u8; CLASSES];
        for _ in 0..3 {
            for class in [THREAD, HARDIRQ, SOFTIRQ] {
                assert_eq!(d.refill_cycles(&mut rec, class), 0);
            }
        }
    }

    /// A thread of 48 KiB in a 32 KiB L1i misses on 16 KiB of it in any
    /// case (its warm CPI); a 4 KiB hard IRQ displaces 4 KiB of what the
    /// cache held, 64 lines, not 48 + 4 − 32 = 20 KiB.
    #[test]
    fn a_class_larger_than_the_cache_loses_what_the_others_displaced() {
        let d = model(49_152, 0, 4_096);
        let mut rec = [0u8; CLASSES];
        d.refill_cycles(&mut rec, THREAD);
        d.refill_cycles(&mut rec, HARDIRQ);
        assert_eq!(d.refill_cycles(&mut rec, THREAD), 64 * 12);
    }

    #[test]
    fn a_class_loses_at_most_its_own_footprint() {
        let d = model(8_192, 65_536, 0);
        let mut rec = [0u8; CLASSES];
        d.refill_cycles(&mut rec, THREAD);
        d.refill_cycles(&mut rec, SOFTIRQ);
        assert_eq!(d.refill_cycles(&mut rec, THREAD), 128 * 12);
    }
}
