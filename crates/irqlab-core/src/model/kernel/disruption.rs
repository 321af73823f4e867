//! The cost of disruption (`[microarch] ipc_model = "disruption"`;
//! `scenario/microarch.rs`, docs/notes/ipc-disruption-design.md). Three
//! code classes share each core's L1 instruction cache. When one resumes
//! after others ran there, it refills the lines they displaced from L2.
//! Each core records, per class, which other classes ran since that class
//! last ran (`Core::displaced_by`).
//!
//! A guest's core is a vCPU on a host core: the host's code that runs
//! there at each VM exit (KVM's exit handling and re-entry, the host
//! interrupt that caused it) shares the same L1i, so it is a fourth class,
//! [`HOST`], that displaces the guest's three and never runs on a guest
//! core itself (`model/vm/vcpu.rs`).

use crate::model::kernel::cpu::Owner;
use crate::scenario::MicroarchCfg;

/// The code classes whose footprints displace each other.
pub const THREAD: usize = 0;
pub const SOFTIRQ: usize = 1;
pub const HARDIRQ: usize = 2;
/// The host's code on a vCPU's core between a VM exit and the entry.
pub const HOST: usize = 3;
pub const CLASSES: usize = 4;

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
    /// (Rows for the classes that run on a core: `HOST` only displaces.
    /// u32: at most the L1i's lines times the L2 latency, within 2^32 for
    /// any L1i and latency the scenario accepts: the table fits in three
    /// cache lines.)
    refill: [[u32; 1 << CLASSES]; HOST],
}

impl Disruption {
    /// The model of `c`, where the host's code at a VM exit touches
    /// `host_exit_bytes` (0 on bare metal, where no exit is taken).
    pub fn new(c: &MicroarchCfg, host_exit_bytes: u64) -> Self {
        let footprint = [c.thread_code_bytes, c.softirq_code_bytes, c.hardirq_code_bytes, host_exit_bytes];
        let mut refill = [[0u32; 1 << CLASSES]; HOST];
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
                *cycles = u32::try_from(lost.div_ceil(c.line_bytes) * c.l2_latency_cycles).unwrap_or(u32::MAX);
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
        // Every class's record gains this class's bit at once (four bytes
        // as one word), and its own is cleared.
        let bit = 1u32 << class;
        *displaced_by = (u32::from_ne_bytes(*displaced_by) | bit * 0x0101_0101).to_ne_bytes();
        displaced_by[class] = 0;
        self.refill[class][others as usize] as u64
    }

    /// The refill of `class` when nothing ran since it last did (its next
    /// segment right after its last).
    pub fn refill_after_itself(&self, class: usize) -> u64 {
        self.refill[class][0] as u64
    }

    /// The host ran its exit code on the core of this guest core's vCPU:
    /// every guest class has had it run since it last did.
    #[inline(always)]
    pub fn host_ran(displaced_by: &mut [u8; CLASSES]) {
        *displaced_by = (u32::from_ne_bytes(*displaced_by) | (1u32 << HOST) * 0x0101_0101).to_ne_bytes();
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
        Disruption::new(&c, 0)
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

    /// A guest thread (24 KiB) resumed after an exit whose host code
    /// (6 KiB) and a guest hard IRQ (4 KiB) ran: 24 + 10 − 32 = 2 KiB lost,
    /// 32 lines; with no exit between, the 4 KiB IRQ fits beside it.
    #[test]
    fn the_host_code_at_an_exit_displaces_the_guest_code() {
        let c = MicroarchCfg {
            thread_code_bytes: 24_576,
            softirq_code_bytes: 16_384,
            hardirq_code_bytes: 4_096,
            ..MicroarchCfg::default()
        };
        let d = Disruption::new(&c, 6_144);
        let mut rec = [0u8; CLASSES];
        d.refill_cycles(&mut rec, THREAD);
        d.refill_cycles(&mut rec, HARDIRQ);
        assert_eq!(d.refill_cycles(&mut rec, THREAD), 0);
        Disruption::host_ran(&mut rec);
        d.refill_cycles(&mut rec, HARDIRQ);
        assert_eq!(d.refill_cycles(&mut rec, THREAD), 32 * 12);
        // Bare metal's model never sees the class: its table is as before.
        assert_eq!(model(24_576, 16_384, 4_096).refill[THREAD][1 << HARDIRQ | 1 << SOFTIRQ], 192 * 12);
    }
}
