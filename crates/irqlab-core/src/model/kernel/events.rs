//! A kernel's own events and where they enter its code: a core's running
//! segment ends (`sched.rs`), a NAPI watchdog hrtimer expires (`napi.rs`,
//! `softirq.rs`), and the IPI that wakes a NAPI thread arrives
//! (`napi_thread.rs`).

use crate::engine::timer::{TimerFire, TimerPost};
use crate::engine::{Nanos, Scheduler};
use crate::model::kernel::cpu::IrqSrc;
use crate::model::kernel::{KernelId, HOST};
use crate::model::kernel::host::Host;
use crate::model::kernel::Kernel;
use crate::model::trace::{TimerReason, TraceEvent};

/// A kernel's events.
#[derive(Clone, Copy, Debug)]
pub enum KernelEv {
    /// The running segment of `kernel`'s `core` completes (ignored if
    /// `gen` is stale).
    CoreDone { kernel: KernelId, core: u32, gen: u32 },
    /// The NAPI watchdog hrtimer of `kernel`'s NAPI `napi` expires.
    NapiTimer { kernel: KernelId, napi: u32, gen: u32 },
    /// Threaded NAPI: the IPI of a wake-up of `core`'s NAPI thread from
    /// another CPU arrives (`napi_thread.rs`).
    NapiThreadIpi { core: u32 },
    /// The host's `core` is due for its periodic load balance
    /// (`cpu.task_placement = "fair"`, `fair.rs`).
    Balance { core: u32, gen: u32 },
    /// The host takes the host's `core` (`host_preempt.rs`) ...
    HostPreempt { core: u32 },
    /// ... and gives it back.
    HostResume { core: u32 },
}

impl Kernel {
    #[inline]
    pub(crate) fn kernel_event<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, ev: KernelEv) {
        match ev {
            KernelEv::CoreDone { kernel, core, gen } => {
                m.switch_to(self, kernel);
                if self.cores[core as usize].gen != gen && self.cores[core as usize].chained {
                    // The chain's last event (`busy_chain.rs`).
                    self.unchain(sched, core);
                }
                if self.cores[core as usize].gen == gen && !self.thread_step_fast(m, sched, core) && !self.irq_step_fast(m, sched, core) {
                    self.core_segment_done(m, sched, core);
                }
            }
            KernelEv::NapiTimer { kernel, napi, gen } => {
                m.switch_to(self, kernel);
                let t = &mut self.napi_timer[napi as usize];
                match t.timer.on_event(sched.now(), gen) {
                    TimerFire::Ignore => {}
                    TimerFire::Repost(at, gen) => sched.at(at, H::Ev::from(KernelEv::NapiTimer { kernel, napi, gen })),
                    TimerFire::Expire => {
                        let core = t.core;
                        if kernel == HOST {
                            self.raise_irq(m, sched, core, IrqSrc::NapiTimer(napi));
                        } else {
                            // A guest hrtimer is emulated by the host: it
                            // expires as an injected interrupt.
                            m.kvm_inject(self, sched, kernel, core, IrqSrc::NapiTimer(napi));
                        }
                    }
                }
            }
            KernelEv::NapiThreadIpi { core } => self.napi_thread_ipi(m, sched, core),
            KernelEv::Balance { core, gen } => {
                m.switch_to(self, HOST);
                self.periodic_balance(m, sched, core, gen);
            }
            KernelEv::HostPreempt { core } => {
                m.switch_to(self, HOST);
                self.host_preempt(sched, core);
            }
            KernelEv::HostResume { core } => {
                m.switch_to(self, HOST);
                self.host_resume(m, sched, core);
            }
        }
    }

    /// Arm the NAPI watchdog of `napi` on `core` to fire after `delay_ns`
    /// (`hrtimer_start` replaces any earlier expiry).
    pub fn napi_timer_start<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, napi: u32, core: u32, delay_ns: Nanos, reason: TimerReason) {
        m.tr(sched.now(), TraceEvent::TimerArmed { napi, delay_ns, reason });
        let t = &mut self.napi_timer[napi as usize];
        if t.core != core && t.timer.is_armed() {
            // Re-armed from another CPU: the old expiry must not fire there.
            t.timer.cancel();
        }
        t.core = core;
        if let TimerPost::At(at, gen) = t.timer.start(sched.now() + delay_ns) {
            sched.at(at, H::Ev::from(KernelEv::NapiTimer { kernel: self.id, napi, gen }));
        }
    }

}
