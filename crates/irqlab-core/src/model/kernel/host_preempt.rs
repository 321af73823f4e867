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
//! One that finds the core idle does nothing: a halted vCPU's delays are
//! in the wake-up latency the probe measures (`cpu.wakeup_latency_ns`).

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

    /// A length drawn from the quantiles: the inverse of the piecewise
    /// linear distribution function through them.
    fn length_ns(&mut self, core: u32) -> Nanos {
        let q = &self.quantiles_ns;
        if q.len() == 1 {
            return q[0];
        }
        let x = self.rng[core as usize].gen::<f64>() * (q.len() - 1) as f64;
        let i = (x as usize).min(q.len() - 2);
        let f = x - i as f64;
        (q[i] as f64 + f * (q[i + 1] - q[i]) as f64).round() as Nanos
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
