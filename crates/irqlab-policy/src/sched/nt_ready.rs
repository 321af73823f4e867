//! Where Windows Server 2003 runs a thread it readies: the processor
//! choice of `KiDeferredReadyThread` (`base/ntos/ke/thredsup.c` of the
//! Windows Research Kernel 1.2, Microsoft's Windows Server 2003 SP1 kernel
//! source; docs/notes/vic-guest-interrupts-sources.md §8).
//!
//! A readied thread goes to an idle processor if there is one, preferring
//! its ideal processor, then the processor it last ran on, then the one
//! readying it, then the leftmost (highest-numbered) idle one
//! (`KeFindFirstSetLeftAffinity`). A processor is idle while its bit is in
//! `KiIdleSummary`, which only the assignment of a thread clears: a
//! processor running interrupts and DPCs from its idle loop is idle. With
//! no idle processor the thread goes to its ideal processor, preempting
//! its thread if of lower priority, else on its ready list.
//!
//! Whether the choice costs an inter-processor interrupt: a thread given
//! to an idle processor other than the current one is signalled only if
//! that processor halted (`KeIsIdleHaltSet`; one that is busy in its idle
//! loop switches at its next iteration); a preemption of another
//! processor's thread needs one (`KiRequestDispatchInterrupt`).
//!
//! Pure decisions over a view of the processors; the caller moves the
//! thread and sends the interrupt.

/// What a processor is doing, as `KiDeferredReadyThread` sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NtCpu {
    /// In `KiIdleSummary` and halted (`Prcb->Sleeping`).
    IdleHalted,
    /// In `KiIdleSummary`, running its idle loop (or an interrupt or DPC
    /// from it).
    Idle,
    /// Running a thread of lower priority than the readied one.
    BusyLower,
    /// Running a thread of the same or higher priority.
    Busy,
}

impl NtCpu {
    fn idle(self) -> bool {
        matches!(self, NtCpu::IdleHalted | NtCpu::Idle)
    }
}

/// The decision: the processor, and whether it needs an IPI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NtReady {
    pub cpu: u32,
    pub ipi: bool,
}

/// `KiDeferredReadyThread` for a thread whose ideal processor is `ideal`
/// and which last ran on `last`, readied on processor `current`, among
/// `cpus` processors whose state `state` gives.
pub fn nt_ready_thread(ideal: u32, last: u32, current: u32, cpus: u32, state: impl Fn(u32) -> NtCpu) -> NtReady {
    let signal = |cpu: u32, s: NtCpu| cpu != current && matches!(s, NtCpu::IdleHalted | NtCpu::BusyLower);
    let idle_pick = [ideal, last, current]
        .into_iter()
        .find(|&c| c < cpus && state(c).idle())
        .or_else(|| (0..cpus).rev().find(|&c| state(c).idle()));
    let cpu = idle_pick.unwrap_or(ideal);
    NtReady { cpu, ipi: signal(cpu, state(cpu)) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use NtCpu::*;

    fn pick(ideal: u32, last: u32, current: u32, states: &[NtCpu]) -> NtReady {
        nt_ready_thread(ideal, last, current, states.len() as u32, |c| states[c as usize])
    }

    #[test]
    fn the_ideal_processor_first_if_idle() {
        assert_eq!(pick(1, 0, 0, &[Idle, IdleHalted]), NtReady { cpu: 1, ipi: true });
        // Busy in its idle loop: it picks the thread up without an IPI.
        assert_eq!(pick(1, 0, 0, &[Idle, Idle]), NtReady { cpu: 1, ipi: false });
    }

    #[test]
    fn then_the_last_processor_then_the_current_one() {
        assert_eq!(pick(1, 2, 0, &[Idle, Busy, IdleHalted]), NtReady { cpu: 2, ipi: true });
        // A processor running a DPC from its idle loop is idle: the thread
        // readied there stays, with no IPI.
        assert_eq!(pick(1, 1, 0, &[Idle, Busy]), NtReady { cpu: 0, ipi: false });
    }

    #[test]
    fn then_the_leftmost_idle_processor() {
        assert_eq!(pick(0, 0, 0, &[Busy, IdleHalted, IdleHalted, Busy]), NtReady { cpu: 2, ipi: true });
    }

    #[test]
    fn with_none_idle_the_ideal_processor_preempts_only_a_lower_priority() {
        assert_eq!(pick(1, 0, 0, &[Busy, BusyLower]), NtReady { cpu: 1, ipi: true });
        assert_eq!(pick(1, 0, 0, &[Busy, Busy]), NtReady { cpu: 1, ipi: false });
        // The readying processor itself needs no IPI.
        assert_eq!(pick(0, 1, 0, &[BusyLower, Busy]), NtReady { cpu: 0, ipi: false });
    }
}
