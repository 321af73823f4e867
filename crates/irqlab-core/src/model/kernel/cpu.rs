//! Cores: one context at a time with priorities hard IRQ > softirq > threads,
//! preemption, and per-context time accounting (user / system / softirq /
//! irq / idle, and guest / steal where a VM runs, as `/proc/stat` splits
//! it).
//!
//! A core is physical or virtual. A virtual core (a guest's CPU) executes
//! only while its vCPU thread is in guest mode on a physical core of the
//! host (`model/vm/vcpu.rs`); meanwhile it is *frozen*: its running segment
//! waits on its stack and nothing starts.
//!
//! A core executes *segments*: a stretch of work of one accounting class
//! owned by a hard IRQ, the NET_RX softirq or a thread. Effects of a segment
//! (a packet reaching a socket, a reply leaving) happen when it completes.
//! A hard IRQ preempts whatever runs: the remainder of the preempted segment
//! is pushed on the core's stack and resumed after the IRQ (and the softirq
//! raised on its exit); a preempted thread then pays an explicit interruption
//! penalty (thesis §5.3: L1i disturbance).

use crate::engine::Nanos;

/// Accounting class of a stretch of core time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuClass {
    User = 0,
    System = 1,
    Softirq = 2,
    Irq = 3,
    Idle = 4,
    /// A host core running a vCPU thread in guest mode (`/proc/stat`'s
    /// guest column, counted apart from user here).
    Guest = 5,
    /// A guest core whose work waits while the host runs something else on
    /// its vCPU's core (the guest's steal time).
    Steal = 6,
    /// Host system time that `/proc/stat` counts as system but a VM's
    /// report splits out: KVM's exit handling and re-entry of a vCPU
    /// (`vm.exit_entry_cycles`, the VMM's work at entry), ...
    Exit = 7,
    /// ... KVM's halt polling of a halted vCPU, ...
    HaltPoll = 8,
    /// ... and a vhost worker's work.
    Vhost = 9,
}

/// Number of accounting classes.
pub const CLASSES: usize = 10;

pub type ThreadId = u32;
pub type CoreId = u32;

/// Sources of hard interrupts on a core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqSrc {
    /// The MSI-X vector of RX queue `q` (the NIC's completion event).
    Queue(u32),
    /// The NAPI watchdog hrtimer of NAPI `n` expired.
    NapiTimer(u32),
    /// Host: the MSI-X vector of a device queue assigned to a guest
    /// (`vfio_msihandler` → irqfd → KVM injection, `model/vm/kvm.rs`).
    Vfio(u32),
    /// Host: the reschedule IPI that makes vCPU thread `t`, running in
    /// guest mode on this core, exit so that KVM can inject (`kvm_vcpu_kick`).
    VcpuKick(u32),
    /// Host: a guest's TX notification of virtio queue `q`, an MMIO write
    /// trapped on the vCPU's core and handled by KVM's ioeventfd.
    VirtioKick(u32),
    /// The IPI of software packet steering (`net_rps_send_ipi`): the
    /// target's backlog NAPI was scheduled by another core
    /// (`model/kernel/backlog.rs`).
    RpsIpi,
    /// Threaded NAPI: the IPI of a wake-up of the core's NAPI thread from
    /// another CPU (`try_to_wake_up` → `ttwu_queue_wakelist`), whose
    /// handler makes the thread runnable (`model/kernel/napi_thread.rs`).
    NapiThreadIpi,
    /// Host: the guest's write of the storage adapter's doorbell, trapped
    /// on the vCPU's core: the VMM's emulation and vSCSI's issue to the HBA
    /// (`model/workloads/storage/`).
    ScsiIssue,
    /// Host: the guest ISR's acknowledgement of the storage adapter's
    /// interrupt, trapped on the vCPU's core.
    ScsiAck,
    /// Host: the HBA's interrupt for the completions in its response queue.
    Hba,
    /// Host: the interrupt of a component added to the machine
    /// (`model/component.rs`).
    Component(u16),
    /// Guest: the emulated storage adapter's (virtual) interrupt.
    Scsi,
    /// Guest: its clock's periodic interrupt (the storage guest's).
    GuestTimer,
    /// Host: the storage guest's write of its local APIC's interrupt
    /// command register, trapped on the sending vCPU's core, to interrupt
    /// guest CPU `c` (`devices/lsilogic.rs`).
    GuestIpiSend(u32),
    /// Guest: an inter-processor interrupt from another CPU of the storage
    /// guest, on guest CPU `c`.
    GuestIpi(u32),
}

/// The storage path's interrupt sources (`devices/lsilogic.rs` handles
/// them), as a pattern.
macro_rules! storage_irq_src {
    () => {
        IrqSrc::ScsiIssue
            | IrqSrc::ScsiAck
            | IrqSrc::Hba
            | IrqSrc::Scsi
            | IrqSrc::GuestTimer
            | IrqSrc::GuestIpiSend(_)
            | IrqSrc::GuestIpi(_)
    };
}
pub(crate) use storage_irq_src;

/// What a thread segment is, so completion knows whether the thread's
/// program advances.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadSeg {
    /// A step of the thread's program; completing it applies its effects.
    Step,
    /// Overhead with no effect on the program (context switch, interruption
    /// penalty).
    Overhead,
    /// A vCPU thread in guest mode: open-ended, it lasts until the guest
    /// halts or the host preempts it (`model/vm/vcpu.rs`).
    Guest,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    HardIrq(IrqSrc),
    Softirq,
    Thread(ThreadId, ThreadSeg),
    /// C-state exit after an idle period.
    Waking,
}

/// The segment a core is executing.
#[derive(Clone, Copy, Debug)]
pub struct Running {
    pub owner: Owner,
    pub class: CpuClass,
    pub end_ns: Nanos,
    /// Bottom halves disabled (busy polling runs under `local_bh_disable`):
    /// a softirq raised meanwhile runs only when the segment ends.
    pub bh_disabled: bool,
}

/// A preempted segment, resumed later with what remained of it.
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    pub owner: Owner,
    pub class: CpuClass,
    pub remaining_ns: Nanos,
    pub bh_disabled: bool,
    /// Preempted by a hard IRQ (a thread then pays the interruption penalty).
    pub interrupted: bool,
}

pub struct Core {
    pub id: CoreId,
    pub running: Option<Running>,
    pub stack: Vec<Frame>,
    pub irq_pending: std::collections::VecDeque<IrqSrc>,
    /// NET_RX_SOFTIRQ raised.
    pub softirq_pending: bool,
    /// A `net_rx_action` round is in progress (its next poll is due).
    pub softirq_in_round: bool,
    /// NAPIs scheduled on this core (`softnet_data.poll_list`).
    pub poll_list: std::collections::VecDeque<u32>,
    /// Softirq work has been handed to ksoftirqd (`wakeup_softirqd`): it
    /// is runnable, and NET_RX runs in its thread until the poll list is
    /// empty.
    pub ksoftirqd_mode: bool,
    /// While ksoftirqd is runnable: it has the core's turn (else the
    /// application thread has it), since `turn_start_ns`.
    pub ksoftirqd_turn: bool,
    pub turn_start_ns: Nanos,
    /// Threaded NAPI: the NAPI thread's next segment starts with the
    /// switch to it (`model/kernel/napi_thread.rs`).
    pub napi_thread_switch_due: bool,
    /// Threaded NAPI: the NAPI thread was woken and preempts the current
    /// thread at its next segment boundary.
    pub napi_thread_woken: bool,
    /// Threaded NAPI: an IPI to wake the NAPI thread is on its way.
    pub napi_thread_ipi_in_flight: bool,
    /// Runnable threads waiting for this core.
    pub runqueue: std::collections::VecDeque<ThreadId>,
    /// Thread whose context is on the core (running or preempted).
    pub current_thread: Option<ThreadId>,
    /// Last thread that ran here (a switch to another costs cycles).
    pub last_thread: Option<ThreadId>,
    /// Segment-completion events carry this; a preemption bumps it so the
    /// stale completion is ignored.
    pub gen: u32,
    /// The core paid its C-state exit since it last went idle.
    pub waking_done: bool,
    /// When the core last went idle (for the host's hold on a halted vCPU).
    pub idle_since_ns: Nanos,
    /// The core went idle and has yet to pay `costs.idle_exit_cycles` for
    /// leaving it (after its C-state exit).
    pub idle_exit_due: bool,
    /// The last thread was switched out for the idle task.
    pub switched_out: bool,
    /// A virtual core: the host thread of its vCPU (None: physical core).
    pub vcpu: Option<ThreadId>,
    /// A virtual core whose vCPU is not in guest mode now (exited, halted
    /// or preempted on the host): nothing runs on it.
    pub frozen: bool,
    /// A virtual core's scheduler tick is stopped: it went idle and has not
    /// run a task since (`vm.guest_nohz_idle`).
    pub tick_stopped: bool,
    acct_ns: [Nanos; CLASSES],
    acct_class: CpuClass,
    acct_since: Nanos,
    pub context_switches: u64,
    pub interruptions: u64,
    pub wakeups_from_idle: u64,
    /// Per code class, the classes that ran here since it last ran
    /// (`kernel/disruption.rs`; bits by class).
    pub displaced_by: [u8; crate::model::kernel::disruption::CLASSES],
    /// Cycles spent refilling displaced code and on interrupted contexts'
    /// flushes, over the measured window (`[microarch] ipc_model =
    /// "disruption"`).
    pub disruption_cycles: u64,
    /// The engine passes this core's empty busy polls (`busy_chain.rs`):
    /// its phase, running segment and accounting are as of the chain's
    /// start until `Kernel::unchain`.
    pub chained: bool,
}

impl Core {
    pub fn new(id: CoreId) -> Self {
        Core {
            id,
            running: None,
            stack: Vec::new(),
            irq_pending: Default::default(),
            softirq_pending: false,
            softirq_in_round: false,
            poll_list: Default::default(),
            ksoftirqd_mode: false,
            ksoftirqd_turn: false,
            turn_start_ns: 0,
            napi_thread_switch_due: false,
            napi_thread_woken: false,
            napi_thread_ipi_in_flight: false,
            runqueue: Default::default(),
            current_thread: None,
            last_thread: None,
            gen: 0,
            waking_done: false,
            idle_since_ns: 0,
            idle_exit_due: false,
            switched_out: false,
            vcpu: None,
            frozen: false,
            tick_stopped: false,
            acct_ns: [0; CLASSES],
            acct_class: CpuClass::Idle,
            acct_since: 0,
            context_switches: 0,
            interruptions: 0,
            wakeups_from_idle: 0,
            displaced_by: [0; crate::model::kernel::disruption::CLASSES],
            disruption_cycles: 0,
            chained: false,
        }
    }

    /// Charge the time since the last change to the class in effect, then
    /// switch the class.
    #[inline]
    pub fn set_class(&mut self, now: Nanos, class: CpuClass) {
        self.acct_ns[self.acct_class as usize] += now - self.acct_since;
        self.acct_since = now;
        self.acct_class = class;
    }

    /// Time per class so far (charging up to `now`).
    pub fn accounted(&mut self, now: Nanos) -> [Nanos; CLASSES] {
        let c = self.acct_class;
        self.set_class(now, c);
        self.acct_ns
    }

    /// Forget accounting and counters (end of warm-up).
    pub fn reset_stats(&mut self, now: Nanos) {
        let c = self.acct_class;
        self.set_class(now, c);
        self.acct_ns = [0; CLASSES];
        self.context_switches = 0;
        self.interruptions = 0;
        self.wakeups_from_idle = 0;
        self.disruption_cycles = 0;
    }

    /// Nothing runs, nothing is preempted: the core sleeps.
    pub fn is_idle(&self) -> bool {
        self.running.is_none() && self.stack.is_empty()
    }

    /// Stop the running segment now and keep its remainder on the stack.
    pub fn preempt(&mut self, now: Nanos, interrupted: bool) {
        if let Some(r) = self.running.take() {
            self.gen = self.gen.wrapping_add(1);
            self.stack.push(Frame {
                owner: r.owner,
                class: r.class,
                remaining_ns: r.end_ns.saturating_sub(now),
                bh_disabled: r.bh_disabled,
                interrupted,
            });
        }
    }

    /// End the running segment now, unfinished and without effects (a halt
    /// poll cut short, a guest-mode segment left at HLT): its pending
    /// completion event goes stale.
    pub fn abandon(&mut self) -> Option<Running> {
        self.gen = self.gen.wrapping_add(1);
        self.running.take()
    }

    /// Nothing but thread `t`'s next step would run after the running
    /// segment: what `kick` looks at first (hard IRQs, NET_RX, a preempted
    /// context, ksoftirqd, a frozen guest core) holds nothing, and `t` is
    /// the core's thread.
    #[inline(always)]
    pub fn runs_only_thread(&self, t: ThreadId) -> bool {
        self.irq_pending.is_empty()
            && !self.softirq_pending
            && !self.softirq_in_round
            && self.stack.is_empty()
            && !self.ksoftirqd_mode
            && !self.frozen
            && self.current_thread == Some(t)
    }

    /// A softirq may run now: none is in progress and no bottom-half-disabled
    /// segment is preempted.
    pub fn softirq_can_run(&self) -> bool {
        (self.softirq_pending || self.softirq_in_round)
            && !self.ksoftirqd_mode
            && !self.stack.iter().any(|f| f.owner == Owner::Softirq || f.bh_disabled)
            && !matches!(self.running, Some(Running { owner: Owner::Softirq, .. }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounting_charges_each_stretch_to_its_class() {
        let mut c = Core::new(0);
        c.set_class(10, CpuClass::User);
        c.set_class(25, CpuClass::Irq);
        c.set_class(30, CpuClass::User);
        let a = c.accounted(40);
        assert_eq!(a, [25, 0, 0, 5, 10, 0, 0, 0, 0, 0]);
        c.reset_stats(40);
        assert_eq!(c.accounted(50), [10, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn preemption_keeps_the_remainder_and_invalidates_completion() {
        let mut c = Core::new(0);
        c.running = Some(Running {
            owner: Owner::Thread(3, ThreadSeg::Step),
            class: CpuClass::User,
            end_ns: 100,
            bh_disabled: false,
        });
        let g = c.gen;
        c.preempt(40, true);
        assert!(c.running.is_none());
        assert_ne!(c.gen, g);
        let f = c.stack.last().unwrap();
        assert_eq!(f.remaining_ns, 60);
        assert!(f.interrupted);
    }

    #[test]
    fn softirq_waits_for_bh_enable() {
        let mut c = Core::new(0);
        c.softirq_pending = true;
        assert!(c.softirq_can_run());
        c.stack.push(Frame {
            owner: Owner::Thread(0, ThreadSeg::Step),
            class: CpuClass::System,
            remaining_ns: 5,
            bh_disabled: true,
            interrupted: true,
        });
        assert!(!c.softirq_can_run());
    }
}
