//! A Linux kernel as the model runs it: its CPUs (scheduler, hard IRQ >
//! softirq > threads), NET_RX softirq state and poll lists, NAPI instances
//! and their watchdog timers, the application's threads, their epoll
//! instances and sockets. The code that runs on it is in `sched.rs`,
//! `softirq.rs`, `epoll.rs` and `app.rs`; the devices that raise its
//! interrupts and the clients are outside it (`Server`). A bare-metal
//! machine has one kernel; a guest is another instance of the same
//! struct, run by the same code.
//!
//! The code of a kernel is `impl Kernel`: it runs on the *active* kernel
//! (`Server::kernel`), as a CPU runs one address space at a time, and
//! reaches the machine around it (devices, VMs, workloads, the run's
//! statistics: `Machine`) as its argument `m`. `Machine::switch_to` parks
//! the active kernel in its slot of `Machine::kernels` and brings another
//! into the same place, so the kernel code that called it goes on with the
//! other kernel.
//! The alternative, a kernel id on every call and `kernels[k]` at every
//! access, cost the bare-metal scenario 6-9 % more instructions
//! (callgrind, codegen-units=1); a switch happens only where a path
//! crosses from one kernel to another (an event of a guest core, an
//! interrupt routed into a guest, a vCPU exit), never on bare metal.


pub mod app;
pub mod backlog;
pub mod busy_chain;
pub mod cpu;
pub mod cpuidle;
pub mod disruption;
pub mod epoll;
pub mod fair;
pub mod events;
pub mod gro;
pub mod host;
pub mod host_preempt;
pub mod irq_fast;
pub mod napi;
pub mod napi_thread;
pub mod receive_queue;
pub mod sched;
pub mod softirq;
pub mod steering;

use crate::model::kernel::app::AppThread;
use crate::model::kernel::cpu::Core;
use crate::model::kernel::epoll::Epoll;
use crate::model::kernel::napi::Napi;
use crate::model::devices::nic::RxPacket;
use crate::model::kernel::softirq::SoftirqState;
use crate::model::vm::vcpu_thread::VcpuThread;
use crate::model::vm::vhost_worker::VhostWorker;
use crate::engine::time::CycleClock;
use crate::engine::timer::LazyTimer;
use crate::engine::Nanos;
use crate::scenario::Config;
use std::rc::Rc;

pub use crate::model::ids::{KernelId, HOST};

/// What a core is for, as the summary groups them: the application's
/// cores (`cpu_pct`) or cores that only take interrupts (`irq_cores_cpu_pct`,
/// IRQ packing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreRole {
    App,
    Irq,
    /// Neither: a guest's vCPU with no application thread, or a host core
    /// running a vCPU (the host's cores are summarised apart).
    Other,
}

#[derive(Default)]
pub struct Kernel {
    pub id: KernelId,
    /// C-state exit latency of an idle core before it runs anything: the
    /// host's `cpu.wakeup_latency_ns`; 0 in a guest, whose idle vCPU
    /// halts into the host, which pays the wake-up (`model/vm/`).
    pub wakeup_latency_ns: Nanos,
    /// The cores' idle states and their governor (`cpu.idle_states`); None:
    /// every wake-up pays `wakeup_latency_ns`.
    pub idle: Option<Box<cpuidle::CpuIdle>>,
    /// Application threads the scheduler moved to another core
    /// (`cpu.task_placement = "fair"`, `fair.rs`) since the window began.
    pub migrations: u64,
    /// The fair class's placement state (the cores' CFS utilisation, the
    /// idle tasks' wake-up flips), with `cpu.task_placement = "fair"`.
    pub fair: Option<Box<fair::Fair>>,
    /// The host's preemptions of this machine's cores (`cpu.host_preempt_per_s`,
    /// `host_preempt.rs`); None: never.
    pub host_preempt: Option<Box<host_preempt::HostPreempt>>,
    /// The host holding this machine's halted cores' wake-ups back
    /// (`cpu.host_halted_late_per_s`, `host_preempt.rs`); None: never.
    pub halted_late: Option<Box<host_preempt::HostHold>>,
    pub cores: Vec<Core>,
    /// Per core, its group (set by the builder, not implied by its index).
    pub core_role: Vec<CoreRole>,
    pub napis: Vec<Napi>,
    /// The device queue each NAPI polls: the driver registers one NAPI per
    /// channel (`mlx5e_open_channel` → `netif_napi_add`) and its poll
    /// reaps that channel's queues.
    pub napi_queue: Vec<u32>,
    /// The NAPI a device queue's interrupt schedules (the handler's
    /// channel, `mlx5e_completion_event` → `napi_schedule`).
    pub queue_napi: Vec<u32>,
    /// Per NAPI: the watchdog hrtimer and the core it is pinned to.
    pub napi_timer: Vec<NapiTimer>,
    pub threads: Vec<AppThread>,
    /// The host's vCPU threads (`model/vm/vcpu.rs`), then its vhost
    /// workers (`model/vm/vhost.rs`); their thread ids follow the
    /// application's threads, from `vcpu_base` on.
    pub vcpus: Vec<VcpuThread>,
    pub vhosts: Vec<VhostWorker>,
    pub vcpu_base: u32,
    /// The device whose queues this kernel's NAPIs poll.
    pub device: Device,
    /// Where received packets go after the protocol: sockets, or (a VirtIO
    /// host) the bridge to the guest's tap.
    pub rx_sink: RxSink,
    pub epolls: Vec<Epoll>,
    /// The sockets of the client connections, by connection.
    pub conns: Vec<Conn>,
    /// The application thread that reads each connection, by connection:
    /// apart from `conns`, 4 bytes each, so that a poll that needs only
    /// whom to wake does not bring the connection's line in (at hundreds
    /// of cores the delivery a segment later misses it again).
    pub conn_thread: Vec<u32>,
    /// Per core: `net_rx_action`'s state and poll list.
    pub softirq: Vec<SoftirqState>,
    /// Per core: the packets of the poll in progress.
    pub softirq_buf: Vec<Vec<RxPacket>>,
    /// Per application thread: its service-time stream.
    pub service: Vec<crate::workload::ServiceDraws>,
    /// The operations' cycles (`costs.*_cycles`, the service) to
    /// nanoseconds: at `cpu.freq_ghz`, slowed by the warm factor when the
    /// costs were counted at another CPI (set by the builder).
    pub clock: CycleClock,
    /// The core's own cycles (the disruption's refill and flush): `clock`
    /// unless the warm costs run at another CPI (`MicroarchCfg::warm_factor`).
    pub machine_clock: CycleClock,
    /// The scenario's settings: the kernel's sysctls and the costs of its
    /// code (shared by every kernel of the machine; set by the builder).
    pub cfg: Rc<Config>,
    /// `[microarch] ipc_model = "disruption"`: the cost of displaced code
    /// (`disruption.rs`); None under fixed costs. Shared by every kernel,
    /// behind a pointer: a VM run moves the active kernel at every crossing
    /// between guest and host, so the kernel itself stays small.
    pub disruption: Option<std::rc::Rc<crate::model::kernel::disruption::Disruption>>,
    /// The engine may pass a core's empty busy polls (`busy_chain.rs`):
    /// set by the server where nothing outside the kernel's hooks reads a
    /// core meanwhile (a bare-metal host serving sockets, no trace).
    pub chain_ok: bool,
    /// The interrupt path may take its fast path (`irq_fast.rs`): off in
    /// a traced run, which so handles every step the general way (the
    /// reference the fast path's tests compare with).
    pub irq_fast: bool,
}

/// A kernel's network device: the physical NIC (bare metal, the VirtIO
/// host, a passthrough or SR-IOV guest) or a virtio-net device (a VirtIO
/// guest).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Device {
    #[default]
    Nic,
    Virtio,
}

/// Where `deliver` puts a received packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RxSink {
    /// Its connection's socket (`tcp_v4_rcv` → `ep_poll_callback`).
    #[default]
    Sockets,
    /// The bridge, the tap and the guest's vhost worker (`br_handle_frame`
    /// → `tun_net_xmit`).
    Bridge,
    /// Back out of the NIC it came from, inside the poll (Open vSwitch's
    /// kernel datapath: `netdev_frame_hook` → `ovs_dp_process_packet` →
    /// `dev_queue_xmit`), with no application thread (`model/workloads/forward.rs`).
    Forward,
    /// GRO, then the protocol or software steering, then iperf3's readers
    /// (`model/workloads/bulk.rs`).
    Stream,
}

/// What a thread is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadKind {
    /// The application's event loop `threads[i]`.
    App(u32),
    /// vCPU thread `vcpus[i]`.
    Vcpu(usize),
    /// vhost worker `vhosts[i]`.
    Vhost(usize),
}

impl Kernel {
    /// Fetch what a segment end on `core` reads first (for the engine's
    /// `World::prefetch_owner`): the core's running segment, and the thread
    /// of the same index (the one pinned there in the thesis's layout; a
    /// hint, so a thread placed elsewhere costs only the fetch): its phase,
    /// its queue of requests read and where its next service draw is.
    #[inline(always)]
    pub fn prefetch_core(&self, core: u32) {
        use crate::engine::prefetch::line;
        let c = core as usize;
        if let Some(k) = self.cores.get(c) {
            line(&k.running);
            line(&k.gen);
        }
        if let (Some(th), Some(draws)) = (self.threads.get(c), self.service.get(c)) {
            line(&th.phase);
            line(&th.reqs);
            draws.prefetch();
        }
    }

    /// `cycles` of this kernel's CPUs in nanoseconds.
    #[inline]
    pub fn ns(&self, cycles: u64) -> Nanos {
        self.clock.ns(cycles)
    }

    #[inline]
    pub fn thread_kind(&self, t: u32) -> ThreadKind {
        if t < self.vcpu_base {
            return ThreadKind::App(t);
        }
        let i = (t - self.vcpu_base) as usize;
        if i < self.vcpus.len() {
            ThreadKind::Vcpu(i)
        } else {
            ThreadKind::Vhost(i - self.vcpus.len())
        }
    }

    /// The core thread `t` runs on.
    #[inline]
    pub fn thread_core(&self, t: u32) -> u32 {
        match self.thread_kind(t) {
            ThreadKind::App(i) => self.threads[i as usize].core,
            ThreadKind::Vcpu(i) => self.vcpus[i].core,
            ThreadKind::Vhost(i) => self.vhosts[i].core,
        }
    }

    /// The index of vCPU thread `t` in `vcpus`, if it is one.
    #[inline]
    pub fn vcpu_index(&self, t: u32) -> Option<usize> {
        match self.thread_kind(t) {
            ThreadKind::Vcpu(v) => Some(v),
            _ => None,
        }
    }

    /// The thread id of vhost worker `i`.
    pub fn vhost_thread(&self, i: usize) -> u32 {
        self.vcpu_base + (self.vcpus.len() + i) as u32
    }
}

/// The NAPI watchdog (`napi->timer`, HRTIMER_MODE_REL_PINNED): it fires on
/// the core that armed it.
#[derive(Clone, Copy, Debug, Default)]
pub struct NapiTimer {
    pub timer: LazyTimer,
    pub core: u32,
}

/// A socket of one client connection on the server: one cache line, which
/// the delivery of a request and its read touch (`receive_queue.rs`).
#[repr(align(64))]
pub struct Conn {
    /// The TX queue its replies leave by: the flow's RX queue, which is the
    /// sending core's queue under the thesis's aligned routing (XPS maps
    /// each core to its own queue); with packed routing the model keeps the
    /// flow's queue.
    pub tx_queue: u32,
    /// Requests received and not yet read by the application.
    pub rx: crate::model::kernel::receive_queue::ReceiveQueue,
    /// Bytes of the requests in `rx`, charged against `socket.rcvbuf_bytes`.
    pub rx_bytes: u64,
    /// On its epoll instance's ready list.
    pub on_ready: bool,
}

