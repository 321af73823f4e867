//! A vCPU preempted by its host (`cpu.host_preempt_per_s`,
//! `cpu.host_preempt_ns`): on a guest whose host runs other work, the
//! hypervisor now and then takes a busy vCPU's physical CPU for a while,
//! and the guest core executes nothing meanwhile. From inside the guest it
//! is a gap in time: a thread spinning on the clock sees it jump.
//! `irqlab testbed probe` measures it that way (`host_preempt_per_s` and
//! the gaps' quantiles, `host_preempt_ns`: every gap of 200 µs or more of
//! a spinner on each CPU, both spinning at once; crates/irqlab-loadgen/src/
//! probe.rs), and most of it is not in `/proc/stat`'s steal (on the 2-vCPU
//! KVM guest of docs/calibration.md, 30 ms of steal against ~80 ms of gaps
//! of 1 ms or more in 10 s).
//!
//! The model: per host core, preemptions come as a Poisson process at that
//! rate; one that finds the core running something freezes it for a length
//! drawn from the measured quantiles (linear between them). The running
//! segment waits on the core's stack, as under a hard IRQ, and a thread
//! pays the interruption penalty when it resumes; under the disruption
//! model the host's work displaces the core's cache. The time is steal.
//! Interrupts, wake-ups and timers that come meanwhile wait for the core.
//! One that finds the core idle does nothing: a halted vCPU is held back
//! another way, below.
//!
//! A *halted* vCPU gives its physical CPU back to the host, which runs
//! other work there and returns it late now and then: a wake-up that would
//! have taken `cpu.wakeup_latency_ns` ends when the host gives the CPU
//! back. The probe measures it with timed waits 200 µs apart on each CPU
//! (`halted_late_per_s`, `halted_late_ns`: every wait that ended 200 µs or
//! more late, and how many per second of waiting): on the 2-vCPU KVM guest
//! of docs/calibration.md 2–28 a second of 0.2–1.2 ms (a few up to 10 ms),
//! from hour to hour, where a spinning vCPU is taken 2.5–4 times a second.
//! The model
//! ([`HostHold`]): a core halted for `t` wakes late with probability
//! `1 - exp(-cpu.host_halted_late_per_s · t)`, by a lateness drawn from
//! `cpu.host_halted_late_ns`, and the wake-up takes the longer of that and
//! its usual latency. It applies to a server core's wake-ups from idle and
//! to the load generator's (`workloads/client.rs`).

use crate::engine::rng::kind;
use crate::engine::{Nanos, RngStreams, Scheduler, StreamRng};
use crate::model::kernel::cpu::{CpuClass, Owner};
use crate::model::kernel::disruption::Disruption;
use crate::model::kernel::events::KernelEv;
use crate::model::kernel::host::Host;
use crate::model::kernel::Kernel;
use crate::scenario::Config;
use rand::Rng;

/// The preemption process of a machine's host cores.
pub struct HostPreempt {
    /// Mean time between preemptions of one core, ns.
    mean_gap_ns: f64,
    /// The lengths' quantiles at evenly spaced probabilities, ns.
    quantiles_ns: Vec<Nanos>,
    /// One stream per core, so that a core's preemptions do not move when
    /// another core's do.
    rng: Vec<StreamRng>,
}

impl HostPreempt {
    /// The process for `cores` cores, or None where `cpu.host_preempt_per_s` is 0.
    pub fn new(cfg: &Config, cores: usize, streams: &RngStreams) -> Option<Box<Self>> {
        (cfg.cpu.host_preempt_per_s > 0.0).then(|| {
            Box::new(HostPreempt {
                mean_gap_ns: 1e9 / cfg.cpu.host_preempt_per_s,
                quantiles_ns: cfg.cpu.host_preempt_ns.clone(),
                rng: (0..cores).map(|c| streams.stream(kind::HOST_PREEMPT, c as u64)).collect(),
            })
        })
    }

    fn gap_ns(&mut self, core: u32) -> Nanos {
        let u: f64 = self.rng[core as usize].gen();
        (-(1.0 - u).ln() * self.mean_gap_ns) as Nanos
    }

    fn length_ns(&mut self, core: u32) -> Nanos {
        draw_quantiles(&self.quantiles_ns, &mut self.rng[core as usize])
    }
}

/// A length drawn from quantiles at evenly spaced probabilities: the
/// inverse of the piecewise linear distribution function through them.
fn draw_quantiles(q: &[Nanos], rng: &mut StreamRng) -> Nanos {
    if q.len() == 1 {
        return q[0];
    }
    let x = rng.gen::<f64>() * (q.len() - 1) as f64;
    let i = (x as usize).min(q.len() - 2);
    let f = x - i as f64;
    (q[i] as f64 + f * (q[i + 1] - q[i]) as f64).round() as Nanos
}

/// The host holding a core back at random, as a rate per ns of some
/// state of the core and a lateness drawn from quantiles: a halted core's
/// wake-ups ([`HostHold::halted`], see the module), or the load
/// generator's busy time ([`HostHold::busy`], which the kernel's cores
/// take as events instead).
pub struct HostHold {
    /// The rate per ns of the core's time in that state.
    per_ns: f64,
    quantiles_ns: Vec<Nanos>,
    /// One stream per core.
    rng: Vec<StreamRng>,
}

impl HostHold {
    /// Halted cores' wake-ups (`cpu.host_halted_late_per_s`) for `n` cores
    /// whose streams are `(kind, first .. first + n)`, or None where the
    /// rate is 0.
    pub fn halted(cfg: &Config, streams: &RngStreams, kind: u32, first: u64, n: usize) -> Option<Box<Self>> {
        Self::new(cfg.cpu.host_halted_late_per_s, &cfg.cpu.host_halted_late_ns, streams, kind, first, n)
    }

    /// Busy time's preemptions (`cpu.host_preempt_per_s`), as `halted`.
    pub fn busy(cfg: &Config, streams: &RngStreams, kind: u32, first: u64, n: usize) -> Option<Box<Self>> {
        Self::new(cfg.cpu.host_preempt_per_s, &cfg.cpu.host_preempt_ns, streams, kind, first, n)
    }

    fn new(per_s: f64, q: &[Nanos], streams: &RngStreams, kind: u32, first: u64, n: usize) -> Option<Box<Self>> {
        (per_s > 0.0).then(|| {
            Box::new(HostHold {
                per_ns: per_s * 1e-9,
                quantiles_ns: q.to_vec(),
                rng: (0..n as u64).map(|i| streams.stream(kind, first + i)).collect(),
            })
        })
    }

    /// How long the host holds core `i` back over `ns` in the state: 0 or
    /// one drawn lateness (at these rates two in one stretch are rare).
    pub fn late_ns(&mut self, i: usize, ns: Nanos) -> Nanos {
        let rng = &mut self.rng[i];
        let p = 1.0 - (-self.per_ns * ns as f64).exp();
        if rng.gen::<f64>() >= p {
            return 0;
        }
        draw_quantiles(&self.quantiles_ns, rng)
    }
}

impl Kernel {
    /// Post each core's first preemption.
    pub(crate) fn host_preempt_start<E: From<KernelEv>>(&mut self, sched: &mut Scheduler<E>) {
        let Some(hp) = self.host_preempt.as_mut() else { return };
        for core in 0..self.cores.len() as u32 {
            let at = sched.now() + hp.gap_ns(core);
            sched.at(at, E::from(KernelEv::HostPreempt { core }));
        }
    }

    /// The host takes `core`'s CPU now if the core is running something,
    /// and the next preemption is posted.
    #[cold]
    #[inline(never)]
    pub(crate) fn host_preempt<E: From<KernelEv>>(&mut self, sched: &mut Scheduler<E>, core: u32) {
        let now = sched.now();
        let hp = self.host_preempt.as_mut().expect("posted only with the process");
        let next = now + hp.gap_ns(core);
        sched.at(next, E::from(KernelEv::HostPreempt { core }));
        let c = &self.cores[core as usize];
        let busy = matches!(c.running, Some(r) if r.owner != Owner::Waking);
        if c.frozen || !busy {
            return;
        }
        let len = self.host_preempt.as_mut().expect("checked").length_ns(core);
        if len == 0 {
            return;
        }
        self.unchain(sched, core);
        let c = &mut self.cores[core as usize];
        let thread = matches!(c.running, Some(r) if matches!(r.owner, Owner::Thread(..)));
        c.preempt(now, true);
        if thread {
            c.interruptions += 1;
        }
        c.frozen = true;
        if self.disruption.is_some() {
            Disruption::host_ran(&mut c.displaced_by);
        }
        c.set_class(now, CpuClass::Steal);
        sched.at(now + len, E::from(KernelEv::HostResume { core }));
    }

    /// The host gives `core`'s CPU back.
    #[cold]
    #[inline(never)]
    pub(crate) fn host_resume<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32) {
        let c = &mut self.cores[core as usize];
        c.frozen = false;
        c.set_class(sched.now(), CpuClass::Idle);
        self.kick(m, sched, core);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(per_s: f64, quantiles_ns: Vec<Nanos>) -> Box<HostHold> {
        let mut cfg = Config::default();
        cfg.cpu.host_halted_late_per_s = per_s;
        cfg.cpu.host_halted_late_ns = quantiles_ns;
        HostHold::halted(&cfg, &RngStreams::new(7), kind::HOST_HALTED_LATE, 0, 2).expect("a rate above 0")
    }

    #[test]
    fn a_halted_core_is_held_back_with_the_probability_of_its_halted_time() {
        // 100 a second over 1 ms halted: 1 - e^-0.1 = 9.5 % of wake-ups,
        // each by a lateness between the quantiles (mean 1.5 ms).
        let mut hl = process(100.0, vec![1_000_000, 2_000_000]);
        let n = 200_000;
        let lates: Vec<Nanos> = (0..n).map(|_| hl.late_ns(1, 1_000_000)).filter(|&l| l > 0).collect();
        let share = lates.len() as f64 / n as f64;
        let expected = 1.0 - (-0.1f64).exp();
        assert!((share - expected).abs() < 0.003, "{share} vs {expected}");
        assert!(lates.iter().all(|&l| (1_000_000..=2_000_000).contains(&l)));
        let mean = lates.iter().sum::<Nanos>() as f64 / lates.len() as f64;
        assert!((mean - 1.5e6).abs() < 2e4, "{mean}");
        // A core that did not halt is never held back; one that halted
        // long almost always is.
        assert!((0..1000).all(|_| hl.late_ns(0, 0) == 0));
        assert!((0..1000).filter(|_| hl.late_ns(0, 1_000_000_000) > 0).count() > 990);
    }

    #[test]
    fn no_rate_no_process() {
        let cfg = Config::default();
        assert!(HostHold::halted(&cfg, &RngStreams::new(1), kind::HOST_HALTED_LATE, 0, 1).is_none());
        assert!(HostHold::busy(&cfg, &RngStreams::new(1), kind::HOST_PREEMPT, 0, 1).is_none());
    }
}
