//! What a core runs next. Priorities: hard IRQ > softirq > threads. A hard
//! IRQ preempts anything but another hard IRQ; the softirq raised by it runs
//! at IRQ exit unless bottom halves are disabled in the preempted context
//! (busy polling), in which case it runs at `local_bh_enable`; a thread runs
//! when neither is pending. An idle core pays the C-state exit latency before
//! it runs anything.

use crate::model::kernel::events::KernelEv;
use crate::model::kernel::cpu::{CpuClass, Frame, IrqSrc, Owner, Running, ThreadId, ThreadSeg};
use crate::model::kernel::{ThreadKind, HOST};
use crate::model::vm::vcpu_thread::VcpuPhase;
use crate::model::vm::vhost_worker::Work;
use crate::model::kernel::host::Host;
use crate::model::kernel::Kernel;
use crate::model::kernel::cpuidle::CpuIdle;
use crate::model::kernel::host_preempt::HostHold;
use crate::model::kernel::app::Phase;
use crate::model::trace::TraceEvent;
use crate::engine::{Nanos, Scheduler};

/// A segment a context asks the core to run.
#[derive(Clone, Copy, Debug)]
pub struct Seg {
    pub class: CpuClass,
    pub ns: Nanos,
    pub bh_disabled: bool,
}

impl Kernel {
    /// Start `owner`'s segment on `core` now.
    #[inline(always)]
    pub(crate) fn start_segment<E: From<KernelEv>>(&mut self, sched: &mut Scheduler<E>, core: u32, owner: Owner, mut seg: Seg) {
        let now = sched.now();
        let c = &mut self.cores[core as usize];
        if let Some(d) = &self.disruption {
            // Its code refills what others displaced (not a guest-mode
            // segment, whose guest core accounts its own).
            if let (Some(class), true) = (crate::model::kernel::disruption::class_of(owner), seg.ns != Nanos::MAX) {
                let cycles = d.refill_cycles(&mut c.displaced_by, class);
                if cycles != 0 {
                    c.disruption_cycles += cycles;
                    seg.ns += self.machine_clock.ns(cycles);
                }
            }
        }
        debug_assert!(c.running.is_none());
        // A frozen guest core executes nothing until its vCPU enters guest
        // mode again; a segment started on it would complete regardless
        // (caught late, in `core_segment_done`).
        debug_assert!(!c.frozen, "a segment starts on a frozen core");
        c.set_class(now, seg.class);
        c.waking_done = true;
        c.gen = c.gen.wrapping_add(1);
        let end_ns = now.saturating_add(seg.ns);
        c.running = Some(Running { owner, class: seg.class, end_ns, bh_disabled: seg.bh_disabled });
        // A guest-mode segment (Nanos::MAX) ends by preemption or halt only.
        if seg.ns != Nanos::MAX {
            let ev = E::from(KernelEv::CoreDone { kernel: self.id, core, gen: c.gen });
            // A host core has at most one live segment end: its own slot.
            // An end still there belongs to a segment this one superseded
            // (preempted, or cut short): `gen` has moved on, so
            // `kernel_event` would ignore it.
            if self.id == HOST && (core as usize) < sched.owners() {
                sched.at_owned_superseding(core as usize, end_ns, ev);
            } else {
                sched.at(end_ns, ev);
            }
        }
    }

    /// The cycles of `src`'s hard IRQ handler.
    #[inline(always)]
    pub(crate) fn irq_cycles<H: Host>(&self, m: &mut H, src: IrqSrc) -> u64 {
        match src {
            IrqSrc::Queue(_) => self.cfg.costs.hardirq_cycles,
            IrqSrc::NapiTimer(_) => self.cfg.costs.timer_irq_cycles,
            IrqSrc::RpsIpi | IrqSrc::NapiThreadIpi => self.cfg.costs.ipi_irq_cycles,
            IrqSrc::Vfio(_) | IrqSrc::VcpuKick(_) | IrqSrc::VirtioKick(_) => m.vm_irq_cycles(self, src),
            crate::model::kernel::cpu::storage_irq_src!() => m.storage_irq_cycles(src),
            IrqSrc::Component(id) => m.component_irq_cycles(id),
        }
    }

    /// A hard interrupt is raised on `core`.
    pub(crate) fn raise_irq<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32, src: IrqSrc) {
        let now = sched.now();
        self.unchain(sched, core);
        if self.irq_enters_fast(m, sched, core, src) {
            return;
        }
        let c = &mut self.cores[core as usize];
        c.irq_pending.push_back(src);
        match c.running {
            Some(Running { owner: Owner::HardIrq(_), .. }) | Some(Running { owner: Owner::Waking, .. }) => {}
            Some(Running { owner, .. }) => {
                // Preempt; a thread interrupted here pays the penalty later.
                let is_thread = matches!(owner, Owner::Thread(..));
                c.preempt(now, true);
                if is_thread {
                    c.interruptions += 1;
                }
                if let Owner::Thread(t, ThreadSeg::Guest) = owner {
                    // A VM exit: the guest stops where it is.
                    m.vcpu_preempted(self, sched, t);
                }
                self.kick(m, sched, core);
            }
            None => self.kick(m, sched, core),
        }
    }

    /// Decide what `core` runs now that nothing is running on it.
    pub(crate) fn kick<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32) {
        let now = sched.now();
        let c = &self.cores[core as usize];
        if c.running.is_some() || c.frozen {
            return;
        }
        loop {
            let c = &mut self.cores[core as usize];
            if c.running.is_some() {
                return;
            }
            // 0. Leaving idle costs CPU (`costs.idle_exit_cycles`), once
            // per idle period that ended in work: after the C-state exit's
            // latency, or after the first segment where there is none
            // (`waking_done` is set by a segment's start only).
            if c.idle_exit_due && c.waking_done {
                c.idle_exit_due = false;
                let ns = self.machine_clock.ns(self.cfg.costs.idle_exit_cycles);
                let seg = Seg { class: CpuClass::System, ns, bh_disabled: false };
                self.start_segment(sched, core, Owner::Waking, seg);
                return;
            }
            // 1. Hard IRQs, after waking from idle if the core slept.
            if let Some(&src) = c.irq_pending.front() {
                if !c.waking_done {
                    let since = c.idle_since_ns;
                    let lat = exit_latency_ns(&mut self.idle, self.wakeup_latency_ns, core, now);
                    let lat = held_back_ns(&mut self.halted_late, lat, core, now - since);
                    if lat > 0 {
                        self.start_wakeup(sched, core, lat);
                        return;
                    }
                }
                c.irq_pending.pop_front();
                let cycles = self.irq_cycles(m, src);
                let seg = Seg { class: CpuClass::Irq, ns: self.ns(cycles), bh_disabled: false };
                self.start_segment(sched, core, Owner::HardIrq(src), seg);
                return;
            }
            // 2. The NET_RX softirq at IRQ exit / bottom-half enable.
            if c.softirq_can_run() {
                if let Some(seg) = self.softirq_next(m, sched, core) {
                    self.start_segment(sched, core, Owner::Softirq, seg);
                    return;
                }
                continue;
            }
            let c = &mut self.cores[core as usize];
            // 3. Resume what was preempted.
            if let Some(f) = c.stack.pop() {
                self.resume_frame(m, sched, core, f);
                // A step completed here (preempted at its very end) may have
                // taken a VM exit: a guest's virtio or SCSI doorbell traps
                // on its own vCPU's core (`vcpu_preempted`), and the frozen
                // guest core starts nothing until the vCPU enters again
                // (`vcpu_entered` kicks it). Only here does the loop
                // complete a segment; `start_segment` asserts that nothing
                // else starts on a frozen core.
                let c = &self.cores[core as usize];
                if c.running.is_some() || c.frozen {
                    return;
                }
                continue;
            }
            // Work handed to ksoftirqd: a thread of its own, which the
            // scheduler alternates with the application thread, a slice
            // each, while both are runnable (two nice-0 tasks under
            // EEVDF/CFS share the core equally). Meanwhile NET_RX does not
            // run at IRQ exit (`softirq_can_run`), as with
            // `ksoftirqd_running()` (Linux 4.10–6.4); later kernels may
            // also run it at IRQ exits and `local_bh_enable`, which is not
            // modelled. A slice ends only at a segment boundary. With
            // `napi.threaded` the same thread is the core's NAPI thread,
            // which a wake-up lets preempt and whose switches cost cycles
            // (`model/kernel/napi_thread.rs`).
            let c = if c.ksoftirqd_mode {
                let mut thread_turn = false;
                let app_runnable = c.current_thread.is_some() || !c.runqueue.is_empty();
                let slice_over = now - c.turn_start_ns >= self.cfg.cpu.sched_base_slice_ns;
                if c.ksoftirqd_turn && app_runnable && slice_over {
                    c.ksoftirqd_turn = false;
                    c.turn_start_ns = now;
                    c.context_switches += 1;
                } else if !c.ksoftirqd_turn && (!app_runnable || slice_over || c.napi_thread_woken) {
                    c.ksoftirqd_turn = true;
                    c.turn_start_ns = now;
                    c.context_switches += 1;
                    thread_turn = self.cfg.napi.threaded;
                }
                if thread_turn {
                    self.napi_thread_turn(m, core);
                }
                if self.cores[core as usize].ksoftirqd_turn {
                    if let Some(mut seg) = self.ksoftirqd_next(m, sched, core) {
                        if self.cfg.napi.threaded {
                            seg = self.napi_thread_segment(core, seg);
                        }
                        self.start_segment(sched, core, Owner::Softirq, seg);
                        return;
                    }
                    // Nothing left: ksoftirqd sleeps; switch away from it.
                    let c = &mut self.cores[core as usize];
                    c.ksoftirqd_mode = false;
                    c.ksoftirqd_turn = false;
                    c.context_switches += 1;
                    if self.cfg.napi.threaded {
                        // The application's thread pays a switch back in.
                        c.switched_out = true;
                    }
                    self.pelt_refresh(core, now);
                    continue;
                }
                &mut self.cores[core as usize]
            } else {
                c
            };
            // 4. The current thread's next step, or another runnable thread.
            if let Some(t) = c.current_thread {
                // An active balance pushes it to another core
                // (`cpu.task_placement = "fair"`, `fair.rs`).
                if self.fair.is_some() && self.take_push(m, sched, core, t) {
                    continue;
                }
                let next = match self.thread_kind(t) {
                    ThreadKind::App(_) => self.thread_next(m, sched, t),
                    ThreadKind::Vcpu(v) => m.vcpu_next(self, sched, v),
                    ThreadKind::Vhost(w) => m.vhost_next(self, w),
                };
                match next {
                    Some(seg) if seg.class == CpuClass::Guest => {
                        self.start_segment(sched, core, Owner::Thread(t, ThreadSeg::Guest), seg);
                        let v = self.vcpu_index(t).expect("only a vCPU runs guest mode");
                        m.vcpu_entered(self, sched, v);
                        return;
                    }
                    Some(seg) => {
                        self.start_segment(sched, core, Owner::Thread(t, ThreadSeg::Step), seg);
                        if self.chain_ok && matches!(self.threads[t as usize].phase, Phase::InBusySpin { owned: true }) {
                            self.try_chain_busy_poll(m, sched, core, t);
                        }
                        return;
                    }
                    None => {
                        // Blocked: the core looks for other work.
                        self.cores[core as usize].current_thread = None;
                        self.pelt_refresh(core, now);
                        continue;
                    }
                }
            }
            let c = &mut self.cores[core as usize];
            if c.tick_stopped && !c.runqueue.is_empty() {
                // A guest core leaves idle for a task: its tick restarts
                // through an exit (`vm.guest_nohz_idle`).
                m.vcpu_tick_restart(self, sched, core);
                if self.cores[core as usize].frozen {
                    return;
                }
                continue;
            }
            if let Some(t) = c.runqueue.pop_front() {
                c.current_thread = Some(t);
                self.pelt_refresh(core, now);
                let c = &mut self.cores[core as usize];
                if c.last_thread != Some(t) || c.switched_out {
                    c.context_switches += 1;
                }
                let switched = c.last_thread != Some(t) || c.switched_out;
                c.last_thread = Some(t);
                c.switched_out = false;
                if switched && self.cfg.costs.context_switch_cycles > 0 {
                    let seg = Seg { class: CpuClass::System, ns: self.ns(self.cfg.costs.context_switch_cycles), bh_disabled: false };
                    self.start_segment(sched, core, Owner::Thread(t, ThreadSeg::Overhead), seg);
                    return;
                }
                continue;
            }
            // 5. Nothing to do: pull a queued thread from a busier core
            // (`cpu.task_placement = "fair"`), else sleep.
            // (`fair` is kept exactly when the placement is "fair".)
            if self.fair.is_some() {
                if self.newidle_balance(core, now) {
                    continue;
                }
                self.balance_sooner_when_idle(sched, core);
            }
            let c = &mut self.cores[core as usize];
            c.set_class(now, CpuClass::Idle);
            c.waking_done = false;
            c.idle_since_ns = now;
            if let Some(idle) = self.idle.as_mut() {
                idle_enter(idle, core, now);
            }
            c.idle_exit_due = self.cfg.costs.idle_exit_cycles > 0;
            if c.last_thread.is_some() && !c.switched_out {
                // Switch to the idle task.
                c.context_switches += 1;
                c.switched_out = true;
            }
            if let Some(t) = c.vcpu {
                // A guest CPU idles by halting its vCPU.
                m.vcpu_halt(self, sched, t, core);
            }
            return;
        }
    }

    pub(crate) fn resume_frame<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32, f: Frame) {
        if let Owner::Thread(t, seg) = f.owner {
            if let Some(v) = self.vcpu_index(t) {
                if seg == ThreadSeg::Guest {
                    // Back to a vCPU that was in guest mode: it enters again.
                    m.vcpu_resume(self, t, sched.now());
                    return;
                }
                if std::mem::take(&mut self.vcpus[v].poll_frame_stale) {
                    // A halt poll that a wake-up ended while it was preempted.
                    return;
                }
                let c = &mut self.cores[core as usize];
                if self.vcpus[v].phase == VcpuPhase::HaltPoll && !c.runqueue.is_empty() {
                    // Another task became runnable: the poll stops and the
                    // vCPU sleeps (`kvm_vcpu_can_poll`).
                    c.current_thread = None;
                    self.vcpus[v].phase = VcpuPhase::Blocked;
                    return;
                }
                // The host's own entry or poll: no penalty (the guest's
                // threads pay theirs on the guest core).
                let seg = Seg { class: f.class, ns: f.remaining_ns, bh_disabled: f.bh_disabled };
                self.start_segment(sched, core, f.owner, seg);
                return;
            }
        }
        if let Owner::Thread(t, ThreadSeg::Step) = f.owner {
            if let ThreadKind::Vhost(w) = self.thread_kind(t) {
                let stale = std::mem::take(&mut self.vhosts[w].poll_stale);
                if self.vhosts[w].work == Work::Poll && (stale || !self.cores[core as usize].runqueue.is_empty()) {
                    // A busy poll that work or another task ended while
                    // it was preempted: the worker goes on from there.
                    self.vhosts[w].work = Work::None;
                    return;
                }
            }
        }
        let penalty = match f.owner {
            // Cache and pipeline disturbance after an interruption.
            Owner::Thread(..) if f.interrupted => match &self.disruption {
                None => self.ns(self.cfg.costs.interrupt_penalty_cycles),
                // The flush; the refill comes with the segment (`start_segment`).
                Some(d) => {
                    self.cores[core as usize].disruption_cycles += d.flush_cycles;
                    self.machine_clock.ns(d.flush_cycles)
                }
            },
            _ => 0,
        };
        if f.remaining_ns > 0 {
            let seg = Seg { class: f.class, ns: f.remaining_ns + penalty, bh_disabled: f.bh_disabled };
            self.start_segment(sched, core, f.owner, seg);
            return;
        }
        // Preempted at the very instant it ended: complete it, then pay
        // the penalty as overhead before the thread's next step.
        self.apply_effects(m, sched, core, f.owner);
        if let (Owner::Thread(t, _), true) = (f.owner, penalty > 0) {
            let c = &mut self.cores[core as usize];
            if c.frozen {
                // The step's effects took a VM exit on this guest core's
                // vCPU (a doorbell write): the core stops here, so the
                // penalty waits on its stack and is paid once the vCPU has
                // entered again, after whatever was injected meanwhile.
                // Started now, it would run (and complete) on a core that
                // executes nothing. Not marked interrupted: it is the
                // penalty itself, owed once.
                c.stack.push(Frame {
                    owner: Owner::Thread(t, ThreadSeg::Overhead),
                    class: CpuClass::User,
                    remaining_ns: penalty,
                    bh_disabled: false,
                    interrupted: false,
                });
            } else if c.running.is_none() {
                let seg = Seg { class: CpuClass::User, ns: penalty, bh_disabled: false };
                self.start_segment(sched, core, Owner::Thread(t, ThreadSeg::Overhead), seg);
            }
        }
    }

    /// The running segment of `core` completed.
    pub(crate) fn core_segment_done<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32) {
        let r = self.cores[core as usize].running.take().expect("a segment was running");
        debug_assert!(!self.cores[core as usize].frozen, "a frozen core completes nothing");
        self.segment_effects(m, sched, core, r.owner);
    }

    fn segment_effects<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32, owner: Owner) {
        self.apply_effects(m, sched, core, owner);
        self.kick(m, sched, core);
    }

    fn apply_effects<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32, owner: Owner) {
        match owner {
            Owner::Waking => {}
            Owner::HardIrq(src) => self.hardirq_done(m, sched, core, src),
            Owner::Softirq => self.softirq_step_done(m, sched, core),
            Owner::Thread(t, ThreadSeg::Step) => match self.thread_kind(t) {
                ThreadKind::App(_) => self.thread_step_done(m, sched, t),
                ThreadKind::Vcpu(v) => m.vcpu_step_done(self, v),
                ThreadKind::Vhost(w) => m.vhost_step_done(self, sched, w),
            },
            Owner::Thread(_, ThreadSeg::Overhead) => {}
            // Only a turn on a shared CPU ends a guest-mode segment.
            Owner::Thread(t, ThreadSeg::Guest) => m.vcpu_turn_over(self, sched, core, t),
        }
    }

    /// End of a hard IRQ handler: the driver schedules NAPI (mlx5e
    /// completion handler → `napi_schedule`), or the hrtimer runs
    /// `napi_watchdog`.
    fn hardirq_done<H: Host>(&mut self, m: &mut H, _sched: &mut Scheduler<H::Ev>, core: u32, src: IrqSrc) {
        match src {
            IrqSrc::Queue(q) => {
                let napi = self.queue_napi[q as usize];
                if self.napis[napi as usize].schedule_prep() {
                    self.napi_enqueue(core, napi);
                }
            }
            IrqSrc::Vfio(_) | IrqSrc::VcpuKick(_) | IrqSrc::VirtioKick(_) => m.vm_hardirq_done(self, _sched, src),
            IrqSrc::RpsIpi => self.rps_ipi_handled(m, _sched, core),
            IrqSrc::NapiThreadIpi => self.cores[core as usize].napi_thread_wake(),
            crate::model::kernel::cpu::storage_irq_src!() => m.storage_irq_done(self, _sched, core, src),
            IrqSrc::Component(id) => m.component_irq_done(self, _sched, core, id),
            IrqSrc::NapiTimer(n) => {
                if m.run().counting {
                    m.run().counters.watchdog_fires += 1;
                }
                let scheduled = self.napis[n as usize].watchdog();
                m.tr(_sched.now(), TraceEvent::WatchdogFired { napi: n, scheduled });
                if scheduled {
                    self.napi_enqueue(core, n);
                }
            }
        }
    }

    /// `____napi_schedule`: put NAPI on this core's poll list, raise NET_RX
    /// (or, threaded, wake the NAPI thread).
    pub(crate) fn napi_enqueue(&mut self, core: u32, napi: u32) {
        let c = &mut self.cores[core as usize];
        debug_assert!(!c.chained, "a NAPI scheduled on a chained core");
        c.poll_list.push_back(napi);
        if self.cfg.napi.threaded {
            c.napi_thread_wake();
        } else {
            c.softirq_pending = true;
        }
    }

    /// A thread becomes runnable on its core (`try_to_wake_up`).
    pub(crate) fn thread_make_runnable<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, t: ThreadId) {
        let core = self.thread_core(t);
        self.unchain(sched, core);
        let c = &mut self.cores[core as usize];
        if c.current_thread == Some(t) || c.runqueue.contains(&t) {
            return;
        }
        c.runqueue.push_back(t);
        if c.frozen {
            // A guest CPU out of guest mode: its vCPU must enter first.
            m.guest_core_wake(self, sched, core);
            return;
        }
        if let Some(Running { owner: Owner::Thread(other, seg), .. }) = c.running {
            if !self.vcpus.is_empty() && other != t && self.vcpu_index(other).is_some() {
                // The core runs a vCPU: the woken thread takes it.
                m.vcpu_contended(self, sched, core, other, seg);
                return;
            }
            if let ThreadKind::Vhost(w) = self.thread_kind(other) {
                if self.vhosts[w].work == Work::Poll {
                    // A busy-polling vhost worker stops for it
                    // (`vhost_can_busy_poll`: `need_resched()`).
                    m.vhost_poll_end(self, sched, w);
                    return;
                }
            }
        }
        let c = &mut self.cores[core as usize];
        if !c.waking_done {
            // A wake-up of a sleeping core: IPI, then C-state exit.
            self.kick_after_wakeup(m, sched, core);
        }
    }

    /// Wake an idle core for a thread (IPI + C-state exit), or run at once.
    pub(crate) fn kick_after_wakeup<H: Host>(&mut self, m: &mut H, sched: &mut Scheduler<H::Ev>, core: u32) {
        let now = sched.now();
        let lat = if now > 0 {
            let since = self.cores[core as usize].idle_since_ns;
            let lat = exit_latency_ns(&mut self.idle, self.wakeup_latency_ns, core, now);
            held_back_ns(&mut self.halted_late, lat, core, now - since)
        } else {
            0
        };
        if lat > 0 {
            self.start_wakeup(sched, core, lat);
            return;
        }
        self.kick(m, sched, core);
    }

    /// A sleeping core leaves idle: `lat` of exit latency (idle time) before
    /// it runs anything.
    fn start_wakeup<E: From<KernelEv>>(&mut self, sched: &mut Scheduler<E>, core: u32, lat: Nanos) {
        let c = &mut self.cores[core as usize];
        c.wakeups_from_idle += 1;
        c.waking_done = true;
        let seg = Seg { class: CpuClass::Idle, ns: lat, bh_disabled: false };
        self.start_segment(sched, core, Owner::Waking, seg);
    }
}

/// What a sleeping core pays before it runs anything: the fixed
/// `wakeup_latency_ns`, or the exit latency of the idle state the governor
/// chose (`cpu.idle_states`), the first time after it went idle. A free
/// function, so that the caller keeps its borrow of the core.
#[inline]
fn exit_latency_ns(idle: &mut Option<Box<CpuIdle>>, fixed_ns: Nanos, core: u32, now: Nanos) -> Nanos {
    match idle {
        None => fixed_ns,
        Some(idle) => idle_wake(idle, core, now),
    }
}

/// A wake-up of `lat` after `halted_ns` halted, or the longer lateness the
/// host holds it back by (`cpu.host_halted_late_per_s`, `host_preempt.rs`).
#[inline]
fn held_back_ns(hl: &mut Option<Box<HostHold>>, lat: Nanos, core: u32, halted_ns: Nanos) -> Nanos {
    match hl {
        None => lat,
        Some(hl) => lat.max(late_draw(hl, core, halted_ns)),
    }
}

#[cold]
#[inline(never)]
fn late_draw(hl: &mut HostHold, core: u32, halted_ns: Nanos) -> Nanos {
    hl.late_ns(core as usize, halted_ns)
}

#[cold]
#[inline(never)]
fn idle_wake(idle: &mut CpuIdle, core: u32, now: Nanos) -> Nanos {
    idle.wake(core as usize, now)
}

#[cold]
#[inline(never)]
fn idle_enter(idle: &mut CpuIdle, core: u32, now: Nanos) {
    idle.enter(core as usize, now);
}
