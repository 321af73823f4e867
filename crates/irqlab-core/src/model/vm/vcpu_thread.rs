//! A vCPU thread's state, as the host kernel keeps it among its threads
//! (`Kernel::vcpus`); what the thread does is `vcpu.rs`.

use crate::engine::Nanos;
use crate::model::ids::KernelId;
use crate::scenario::VmCfg;

/// Where a vCPU thread is in `vcpu_run`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VcpuPhase {
    /// Back from an exit (or woken): the world switch into guest mode is next.
    Entering,
    /// In guest mode: the guest core runs while this thread's host segment
    /// runs.
    InGuest,
    /// The guest stopped its tick on the way to HLT: the timer write's
    /// exit and entry (`vm.guest_nohz_idle`); the HLT follows.
    TickStop,
    /// `kvm_vcpu_halt` polling for a wake-up.
    HaltPoll,
    /// Asleep in `kvm_vcpu_block` until an interrupt for the guest wakes it.
    Blocked,
}

pub struct VcpuThread {
    /// Host core it is pinned to.
    pub core: u32,
    /// The guest and the guest CPU it runs.
    pub guest: KernelId,
    pub guest_core: u32,
    pub phase: VcpuPhase,
    /// KVM's per-vCPU poll window (`vcpu->halt_poll_ns`), starting at 0.
    pub halt_poll_ns: Nanos,
    /// When the guest last halted.
    pub halt_start_ns: Nanos,
    /// A poll segment preempted on the host stack was ended by a wake-up:
    /// it must not resume.
    pub poll_frame_stale: bool,
    /// Another vCPU is pinned to the same host CPU (`vm.host_cpus`): the
    /// two take turns of `cpu.sched_base_slice_ns` while both run.
    pub shares_core: bool,
    /// When its thread last got the CPU from another thread (or from
    /// idle), and the CPU's context-switch count then.
    pub turn_start_ns: Nanos,
    pub turn_switches: u64,
    /// A thread woken on its shared CPU preempts it at the coming exit.
    pub wake_preempted: bool,
    /// An interrupt for the guest arrived during `TickStop`: the HLT that
    /// follows exits and enters again at once (`kvm_vcpu_has_events`).
    pub tick_stop_kicked: bool,
}

impl VcpuThread {
    pub fn new(core: u32, guest: KernelId, guest_core: u32) -> Self {
        VcpuThread {
            core,
            guest,
            guest_core,
            phase: VcpuPhase::Entering,
            halt_poll_ns: 0,
            halt_start_ns: 0,
            poll_frame_stale: false,
            shares_core: false,
            turn_start_ns: 0,
            turn_switches: u64::MAX,
            wake_preempted: false,
            tick_stop_kicked: false,
        }
    }

    /// `kvm_vcpu_halt`'s adaptation after a halt of `halt_ns` (polling
    /// included) that ended with a wake-up.
    pub fn adapt_halt_poll(&mut self, halt_ns: Nanos, c: &VmCfg) {
        let max = c.halt_poll_ns;
        if self.halt_poll_ns > max {
            self.halt_poll_ns = max;
        }
        if halt_ns <= self.halt_poll_ns {
            // The poll caught the wake-up: keep the window.
        } else if self.halt_poll_ns > 0 && halt_ns > max {
            // shrink_halt_poll_ns
            let v = if c.halt_poll_ns_shrink == 0 { 0 } else { self.halt_poll_ns / c.halt_poll_ns_shrink as u64 };
            self.halt_poll_ns = if v < c.halt_poll_ns_grow_start { 0 } else { v };
        } else if self.halt_poll_ns < max && halt_ns < max {
            // grow_halt_poll_ns
            if c.halt_poll_ns_grow >= 1 {
                let v = (self.halt_poll_ns * c.halt_poll_ns_grow as u64).max(c.halt_poll_ns_grow_start);
                self.halt_poll_ns = v.min(max);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> VmCfg {
        VmCfg::default()
    }

    #[test]
    fn halt_poll_window_grows_from_grow_start_until_it_catches_the_wake_ups() {
        let c = cfg();
        let mut v = VcpuThread::new(0, 1, 0);
        let mut seen = vec![];
        for _ in 0..7 {
            // Every halt ends with a wake-up 150 µs later.
            v.adapt_halt_poll(150_000, &c);
            seen.push(v.halt_poll_ns);
        }
        assert_eq!(seen, [10_000, 20_000, 40_000, 80_000, 160_000, 160_000, 160_000]);
        // Grown past the maximum, the window is capped at it.
        let mut v = VcpuThread::new(0, 1, 0);
        v.halt_poll_ns = 160_000;
        v.adapt_halt_poll(190_000, &c);
        assert_eq!(v.halt_poll_ns, 200_000);
    }

    #[test]
    fn a_caught_wake_up_keeps_the_window_and_a_long_halt_halves_it() {
        let c = cfg();
        let mut v = VcpuThread::new(0, 1, 0);
        v.halt_poll_ns = 40_000;
        v.adapt_halt_poll(30_000, &c);
        assert_eq!(v.halt_poll_ns, 40_000);
        v.adapt_halt_poll(500_000, &c);
        assert_eq!(v.halt_poll_ns, 20_000);
        v.adapt_halt_poll(500_000, &c);
        assert_eq!(v.halt_poll_ns, 10_000);
        // Below grow_start it drops to 0 (shrink_halt_poll_ns).
        v.adapt_halt_poll(500_000, &c);
        assert_eq!(v.halt_poll_ns, 0);
        // A window of 0 does not shrink; a long halt does not grow it.
        v.adapt_halt_poll(500_000, &c);
        assert_eq!(v.halt_poll_ns, 0);
    }

    #[test]
    fn halt_polling_off_never_polls() {
        let c = VmCfg { halt_poll_ns: 0, ..cfg() };
        let mut v = VcpuThread::new(0, 1, 0);
        v.adapt_halt_poll(1_000, &c);
        assert_eq!(v.halt_poll_ns, 0);
    }
}
