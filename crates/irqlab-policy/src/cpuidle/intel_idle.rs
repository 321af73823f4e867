//! Idle states as intel_idle declares them to the governor: exit latency
//! and target residency in µs (`drivers/idle/intel_idle.c`'s per-model
//! tables; docs/notes/itr-82599-sources.md §5).

/// One idle state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdleState {
    pub name: &'static str,
    pub exit_latency_us: u32,
    pub target_residency_us: u32,
}

const fn state(name: &'static str, exit_latency_us: u32, target_residency_us: u32) -> IdleState {
    IdleState { name, exit_latency_us, target_residency_us }
}

/// The polling state cpuidle puts first (`CPUIDLE_DRIVER_STATE_START` 1):
/// the core spins, so leaving it costs nothing.
pub const POLL: IdleState = state("POLL", 0, 0);

/// intel_idle's `ivb_cstates` (Ivy Bridge, model 0x3a: the ITR paper's Xeon
/// E3-1230 v2). C7 is used only where CPUID leaf 5 enumerates it; the table
/// keeps it as the driver does.
pub const IVB: &[IdleState] =
    &[POLL, state("C1", 1, 1), state("C1E", 10, 20), state("C3", 59, 156), state("C6", 80, 300), state("C7", 87, 300)];

/// intel_idle's `snb_cstates` (Sandy Bridge; the thesis's E5-2670 is model
/// 0x2d, `idle_cpu_snb` in 3.10 and `idle_cpu_snx` later, same table).
pub const SNB: &[IdleState] =
    &[POLL, state("C1", 2, 2), state("C1E", 10, 20), state("C3", 80, 211), state("C6", 104, 345), state("C7", 109, 345)];

/// intel_idle's `hsw_cstates` (Haswell; the SR-IOV paper's E5-2699 v3 is
/// model 0x3f), its server states (C1-C6; C7s-C10 are client states that
/// a Xeon's CPUID does not enumerate).
pub const HSW: &[IdleState] =
    &[POLL, state("C1", 2, 2), state("C1E", 10, 20), state("C3", 33, 100), state("C6", 133, 400)];
