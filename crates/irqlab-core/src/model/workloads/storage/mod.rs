//! A guest's storage I/O through an emulated SCSI adapter, the path of
//! Figure 1 of the vIC paper (Ahmad, Gulati and Mashtizadeh, USENIX ATC
//! 2011), on the virtualization layer of `model/vm/`: the host kernel plays
//! the VMkernel, the vCPU threads' exits and entries the VMM.
//!
//! - [`iometer`]: Iometer's worker in the guest: it keeps `storage.oio`
//!   reads outstanding, issuing one through the adapter's doorbell (an
//!   MMIO write that traps to the VMM, which issues it through vSCSI to
//!   the HBA) for each one it completes;
//! - [`array`]: the HBA's Fibre Channel path and the cached array;
//! - [`vmkernel`]: the HBA's interrupt on the host's storage core (1), the
//!   storage stack up to vSCSI's match to the VM (2), the post to the
//!   VM's completion queue (3) and the IPI to the core running the VM (4),
//!   or the wake-up of a halted VM; vIC's IPI deferral (§3.3) decides;
//! - [`vmm`]: the VMM, whenever it has control (an exit, a halt, the
//!   entry after a wake-up), picks up the posted completions (5),
//!   virtualizes them (6) and, as vIC's Algorithm 2 decides, fires the
//!   virtual interrupt (7);
//! - [`lsilogic`]: the adapter as the guest sees it: the level-triggered
//!   interrupt line (asserted once, however many completions wait, until
//!   the ISR acknowledges it), the ISR, which takes every completion the
//!   VMM has virtualized and acknowledges with a register access (another
//!   trap), and the guest's clock interrupt;
//! - [`background`]: a CPU-bound guest load at idle priority beside the
//!   I/O (§4.5's Hyper Pi);
//! - [`oltp`]: a TPC-C-like load instead of Iometer (§4.4): users that
//!   compute and read, and a checkpoint writer's bursts;
//! - [`windows`]: Windows Server 2003's completion of an I/O and readying
//!   of the thread waiting for it, with its IPIs, under
//!   `storage.guest_dispatcher = "windows-2003"`.
//!
//! Completions stay in issue order from the HBA on (first-come
//! first-served stations); each carries its issue time and the guest
//! thread that waits for it.

pub mod background;
pub mod iometer;
pub mod oltp;
pub mod windows;

use crate::engine::{Nanos, RngStreams, StreamRng};
use crate::model::kernel::host::Host;
use crate::model::vm::hypervisor::Hypervisor;
use crate::model::kernel::KernelId;
use crate::scenario::Config;
use irqlab_policy::vic::{IpiDeferral, Vic};
use std::collections::VecDeque;

/// Counters over the measured window.
#[derive(Clone, Debug, Default)]
pub struct StorageCounters {
    pub hba_irqs: u64,
    pub ipis: u64,
    pub ipis_deferred: u64,
    pub vm_wakeups: u64,
    /// Completions the VMM picked up, the CIF it saw summed over them, and
    /// those it saw below `cifThreshold`.
    pub vmm_completions: u64,
    pub cif_sum: u64,
    pub low_cif: u64,
    /// The delivery ratio in force at each of those, summed.
    pub ratio_sum: f64,
    /// Virtual interrupts the VMM fired, and the guest's interrupt
    /// handlers run (the adapter's and the clock's).
    pub virtual_irqs: u64,
    pub guest_irqs: u64,
    /// Windows' inter-processor interrupts in the guest
    /// (`storage.guest_dispatcher = "windows-2003"`), handled; not among
    /// `guest_irqs`, as Windows Server 2003's kernel does not count them
    /// in a processor's interrupts.
    pub guest_ipis: u64,
    /// Completions for which Algorithm 2 delivered.
    pub vic_delivered: u64,
    /// Completions the guest's ISR took, and their time in the reply
    /// queue summed (from the VMM's pickup to the ISR), ns.
    pub isr_taken: u64,
    pub reply_wait_ns: u64,
    /// Cycles of the adapter's emulation in the VMM (the doorbell's and
    /// the acknowledgement's traps) and of its pickups of completions.
    pub emulation_cycles: u64,
    pub pickup_cycles: u64,
    /// Chunks of work the background threads completed.
    pub background_chunks: u64,
    /// OLTP: transactions completed.
    pub transactions: u64,
    /// The delivery ratio chosen at each vIC epoch that ended.
    pub epoch_ratios: Vec<f64>,
}

/// One I/O: when its doorbell was written, the guest thread waiting for
/// it, and whether it writes (the OLTP checkpoint's) or reads.
#[derive(Clone, Copy, Debug, Default)]
pub struct Io {
    pub sent_ns: Nanos,
    pub owner: u32,
    pub write: bool,
}

/// A guest thread's I/O state (the worker's, a user's, the writer's).
#[derive(Clone, Debug, Default)]
pub struct IoThread {
    /// Where its loop is (the kernel sees `Phase::Workload`, `InWorkload`
    /// or `Sleeping`).
    pub phase: StoragePhase,
    /// Issued and not yet completed by the thread.
    pub outstanding: u32,
    /// Still to issue in the transaction or checkpoint in progress.
    pub to_issue: u32,
    /// Taken by the guest's ISR, for the thread to complete.
    pub done: VecDeque<Io>,
    /// The I/O it is completing now.
    pub completing: Io,
}

/// Where a thread of the storage guest is in its loop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StoragePhase {
    /// Iometer's worker (`iometer.rs`): complete a read or issue one next.
    #[default]
    IoNext,
    /// Issuing a read, up to the doorbell write.
    InIoIssue,
    /// Completing a read.
    InIoComplete,
    /// An OLTP user or the checkpoint writer (`oltp.rs`): what next;
    /// computing; issuing an I/O; completing one.
    TxnNext,
    InTxnCompute,
    InTxnIssue,
    InTxnComplete,
    /// A CPU-bound background thread (`background.rs`): its next chunk, or
    /// giving way; in a chunk.
    Spin,
    InSpin,
}

/// The storage path's state (`Machine::storage`).
pub struct Storage {
    /// The guest, the guest CPU of the worker and the one the adapter
    /// interrupts, and the host core that takes the HBA's interrupts.
    pub guest: KernelId,
    pub worker_cpu: u32,
    pub irq_cpu: u32,
    pub hba_core: u32,
    pub array: crate::model::devices::array::Array,
    /// Per vCPU (vCPU i runs on host core i): the I/O whose doorbell
    /// write is being trapped there, before the VMM issues it to the HBA.
    pub trapped: Vec<VecDeque<Io>>,
    /// At the array, in completion order.
    pub in_array: VecDeque<Io>,
    /// In the HBA's response queue, waiting for its interrupt handler; an
    /// interrupt is raised and not yet taken by a handler.
    pub hba_response: VecDeque<Io>,
    pub hba_irq_raised: bool,
    /// The HBA's handler is walking the response queue (a completion that
    /// arrives now joins it).
    pub hba_draining: bool,
    /// Taken by the handler running now.
    pub in_handler: VecDeque<Io>,
    /// The VM's completion queue in the area it shares with the VMkernel.
    pub posted: VecDeque<Io>,
    /// Virtualized by the VMM: in the adapter's reply queue, visible to
    /// the guest's ISR; with the time the VMM picked each up.
    pub replies: VecDeque<(Io, Nanos)>,
    /// The virtual interrupt line is asserted (the ISR has not yet
    /// acknowledged it).
    pub line_asserted: bool,
    /// Per guest thread: its I/O state.
    pub threads: Vec<IoThread>,
    /// The guest ISR's list of threads to wake (kept to spare an
    /// allocation per interrupt).
    pub woken: Vec<u32>,
    /// Windows' dispatcher (`storage.guest_dispatcher = "windows-2003"`):
    /// per guest CPU, an IPI sent and not yet accepted (its local APIC
    /// holds one per vector: another merges with it), and the threads
    /// readied for it, which it runs once the IPI is taken.
    pub ipi_pending: Vec<bool>,
    pub ready_on_ipi: Vec<Vec<u32>>,
    /// `app.kind = "oltp"`: the users' computation times.
    pub compute_rng: StreamRng,
    /// The outstanding I/Os the worker keeps now (`storage.oio`, or what
    /// its latency target has tuned), and the latency of the reads it
    /// completed since the last tuning.
    pub oio_now: u32,
    pub tune_latency_ns: u64,
    pub tune_reads: u64,
    /// Commands in flight as the VMM counts them: issued to the HBA, not
    /// yet picked up from the completion queue.
    pub cif: u32,
    /// vIC (None when `vic.enabled` is false) and the VMkernel's IPI check.
    pub vic: Option<Vic>,
    pub ipi: IpiDeferral,
    pub counters: StorageCounters,
}

impl Storage {
    pub fn new(cfg: &Config, streams: &RngStreams, guest: KernelId, hba_core: u32, guest_threads: u32) -> Self {
        let s = &cfg.storage;
        Storage {
            guest,
            worker_cpu: s.worker_vcpu,
            irq_cpu: s.interrupt_vcpu,
            hba_core,
            array: crate::model::devices::array::Array::new(s, streams.stream(crate::engine::rng::kind::STORAGE, 0)),
            trapped: vec![VecDeque::new(); cfg.vcpus() as usize],
            in_array: VecDeque::with_capacity(s.oio as usize),
            hba_response: VecDeque::new(),
            hba_irq_raised: false,
            hba_draining: false,
            in_handler: VecDeque::new(),
            posted: VecDeque::new(),
            replies: VecDeque::new(),
            line_asserted: false,
            // Iometer's worker is thread 0, the background threads follow;
            // under OLTP every thread is a user or the writer.
            threads: (0..guest_threads)
                .map(|t| IoThread {
                    phase: match (cfg.app.kind == crate::scenario::AppKind::Oltp, t) {
                        (true, _) => StoragePhase::TxnNext,
                        (false, 0) => StoragePhase::IoNext,
                        (false, _) => StoragePhase::Spin,
                    },
                    ..IoThread::default()
                })
                .collect(),
            woken: Vec::new(),
            ipi_pending: vec![false; cfg.vcpus() as usize],
            ready_on_ipi: vec![Vec::new(); cfg.vcpus() as usize],
            compute_rng: streams.stream(crate::engine::rng::kind::STORAGE, 1),
            oio_now: if s.target_latency_us > 0 { s.oio.min(1) } else { s.oio },
            tune_latency_ns: 0,
            tune_reads: 0,
            cif: 0,
            vic: cfg.vic.enabled.then(|| Vic::new(cfg.vic.params(), 0).expect("validated vIC parameters")),
            // vIC off is ESX before it: every IPI is sent.
            ipi: IpiDeferral { threshold_ns: if cfg.vic.enabled { cfg.vic.ipi_threshold_us * 1_000 } else { 0 } },
            counters: StorageCounters::default(),
        }
    }
}

/// The storage path's events.
#[derive(Clone, Copy, Debug)]
pub enum StorageEv {
    /// The status of the oldest read at the array reaches the HBA
    /// (`vm/vmkernel.rs`).
    HbaComplete,
    /// The guest's clock ticks (`devices/lsilogic.rs`).
    GuestTick,
    /// OLTP: the database's checkpoint is due (`oltp.rs`).
    Checkpoint,
    /// SQLIOSim-like tuning of the outstanding I/Os is due (`iometer.rs`).
    OioTune,
}

/// What the storage path's code (the guest's workloads here, the
/// emulated adapter `devices/lsilogic.rs`, the VMkernel and the VMM
/// `vm/vmkernel.rs`, `vm/vmm.rs`) asks of the machine beyond a kernel's
/// `Host`: the path's state and its own events; it runs in a VM
/// (`Hypervisor`). The machine implements it
/// once (`model/machine.rs`).
pub trait StorageHost: Hypervisor + Host<Ev: From<StorageEv>> {
    /// The storage path's state.
    fn storage(&mut self) -> &mut Storage;
}

/// What the storage path did (`Summary::storage`); None without it.
pub(crate) fn storage_report<M: StorageHost>(m: &mut M, k: &mut crate::model::kernel::Kernel, now: Nanos, dur_s: f64) -> Option<crate::stats::summary::StorageReport> {
    use crate::model::kernel::HOST;
    use crate::stats::summary::{StorageReport, VicReport};
    let st = m.storage();
    let (hba_core, worker_cpu) = (st.hba_core as usize, st.worker_cpu as usize);
    let c = st.counters.clone();
    let vic_on = st.vic.is_some();
    let freq = k.cfg.cpu.freq_ghz;
    let completed = m.run().counters.completed;
    // The vCPUs whose cores Table 6's rows average over: the worker's, or
    // every one when Windows' dispatcher moves it.
    let windows = k.cfg.storage.guest_dispatcher == crate::scenario::GuestDispatcher::Windows2003;
    let profiled = if windows { 0..k.cfg.vcpus() as usize } else { worker_cpu..worker_cpu + 1 };
    let n_profiled = profiled.len() as f64;
    let (busy_ns, halt_pct, guest_pct, hba_pct) = m.in_kernel(k, HOST, |k, _| {
        let mut busy = 0;
        let (mut halt, mut guest, mut hba) = (0.0, 0.0, 0.0);
        for (i, core) in k.cores.iter_mut().enumerate() {
            let a = core.accounted(now);
            let total: Nanos = a.iter().sum();
            let idle = a[crate::model::kernel::cpu::CpuClass::Idle as usize];
            busy += total - idle;
            let pct = |x: Nanos| if total > 0 { 100.0 * x as f64 / total as f64 } else { 0.0 };
            // vCPU i runs on host core i.
            if profiled.contains(&i) {
                halt += pct(idle) / n_profiled;
                guest += pct(a[crate::model::kernel::cpu::CpuClass::Guest as usize]) / n_profiled;
            }
            if i == hba_core {
                hba = pct(total - idle);
            }
        }
        (busy, halt, guest, hba)
    });
    // Percent of one core over the measured window.
    let core_pct = |cycles: u64| 100.0 * cycles as f64 / (freq * 1e9 * dur_s);
    let per = |x: u64| x as f64 / dur_s;
    let ratio = |a: f64, b: u64| if b > 0 { a / b as f64 } else { 0.0 };
    let s = &k.cfg.storage;
    let iops = per(completed);
    let vic = vic_on.then(|| VicReport {
        epoch_ratios: c.epoch_ratios.clone(),
        mean_ratio: ratio(c.ratio_sum, c.vmm_completions),
        delivered_ratio: ratio(c.vic_delivered as f64, c.vmm_completions),
        low_cif_pct: 100.0 * ratio(c.low_cif as f64, c.vmm_completions),
    });
    Some(StorageReport {
        iops,
        mb_per_s: iops * s.block_bytes as f64 / 1e6,
        cycles_per_io: ratio(busy_ns as f64 * freq, completed),
        guest_irqs_per_s: per(c.guest_irqs),
        guest_ipis_per_s: windows.then(|| per(c.guest_ipis)),
        virtual_irqs_per_s: per(c.virtual_irqs),
        hba_irqs_per_s: per(c.hba_irqs),
        ipis_per_s: per(c.ipis),
        ipis_deferred_per_s: per(c.ipis_deferred),
        vm_wakeups_per_s: per(c.vm_wakeups),
        mean_cif: ratio(c.cif_sum as f64, c.vmm_completions),
        reply_wait_us: ratio(c.reply_wait_ns as f64, c.isr_taken) / 1e3,
        vcpu_halt_pct: halt_pct,
        guest_pct,
        emulation_pct: core_pct(c.emulation_cycles) / n_profiled,
        pickup_pct: core_pct(c.pickup_cycles) / n_profiled,
        background_cpu_pct: (k.cfg.storage.background_threads > 0).then(|| {
            let per_thread_ns = dur_s * 1e9 * k.cfg.storage.background_threads as f64;
            100.0 * (c.background_chunks * background::CHUNK_NS) as f64 / per_thread_ns
        }),
        hba_core_busy_pct: hba_pct,
        vic,
        transactions_per_s: (k.cfg.app.kind == crate::scenario::AppKind::Oltp).then(|| per(c.transactions)),
    })
}

