//! Assembly of the machine's parts from a scenario: the layout the
//! scenario implies (kernels, queues, cores), the physical NIC, the
//! sockets of the connections, and the kernels (the application's, one per
//! VM, and the host's under them). `Server::build` (`server.rs`) puts the
//! parts together.

use crate::engine::rng::kind;
use crate::engine::RngStreams;
use crate::model::devices::nic::{vf, CqSettings, IrqRoute, PhysicalNic, QueuePair, TxTiming};
use crate::model::devices::virtio_net::VirtioNet;
use crate::model::kernel::app::{AppThread, Phase};
use crate::model::kernel::cpu::Core;
use crate::model::kernel::epoll::Epoll;
use crate::model::kernel::napi::{Napi, NapiConfig};
use crate::model::kernel::{Conn, CoreRole, Device, Kernel, KernelId, NapiTimer, RxSink, HOST};
use crate::model::workloads::bulk::{self, Bulk};
use crate::scenario::{AppKind, CoalesceCfg, Config, IrqRouting, NicKind, Profile, TaskPlacement, VmKind};

/// The machine's shape as the scenario gives it.
pub(crate) struct Layout {
    pub app_cores: u32,
    /// SR-IOV: each of `vm.count` VMs owns a virtual function of
    /// `nic.queues` queue pairs (`vf_nq`), numbered VM by VM on the NIC
    /// (`nq` in all).
    pub vms: u32,
    pub vf_nq: u32,
    pub nq: u32,
    pub guest: bool,
    pub virtio: bool,
    /// The kernel that runs the application and drives the NIC's queues:
    /// the host's on bare metal, else the (first) guest's.
    pub app_kernel: KernelId,
    /// The application kernel's cores: the vCPUs of a guest.
    pub ncores: u32,
    /// The guest's queues: the NIC's (assigned) or its virtio-net's.
    pub guest_queues: u32,
    /// Each application kernel's own queues: a VM's VF has `nic.queues`.
    pub app_nq: u32,
    /// A VirtIO host numbers its IRQ cores after the vCPUs' cores.
    pub first_irq_core: u32,
    pub irq_routing: IrqRouting,
    pub irq_cores: u32,
    pub oltp: bool,
    /// A storage guest (Iometer or OLTP), which has no network device.
    pub storage_io: bool,
    pub forwarding: bool,
    pub bulk: bool,
}

impl Layout {
    pub fn new(cfg: &Config) -> Self {
        let app_cores = cfg.cpu.app_cores;
        let vms = cfg.vm.count;
        let vf_nq = cfg.queues();
        let guest = cfg.vm.is_guest();
        let virtio = cfg.vm.kind == VmKind::Virtio;
        let guest_queues = if cfg.vm.guest_queues == 0 { app_cores } else { cfg.vm.guest_queues };
        let oltp = cfg.app.kind == AppKind::Oltp;
        Layout {
            app_cores,
            vms,
            vf_nq,
            nq: vf_nq * vms,
            guest,
            virtio,
            app_kernel: if guest { 1 } else { HOST },
            ncores: if guest { cfg.vcpus() } else { cfg.total_cores() },
            guest_queues,
            app_nq: if virtio { guest_queues } else { vf_nq },
            first_irq_core: if virtio { cfg.vcpus() } else { app_cores },
            irq_routing: cfg.nic.irq_routing,
            irq_cores: cfg.nic.irq_cores,
            oltp,
            storage_io: cfg.app.kind == AppKind::Iometer || oltp,
            forwarding: cfg.app.kind == AppKind::Forwarding,
            bulk: cfg.app.kind == AppKind::Bulk,
        }
    }

    /// The core (a guest's: of its VM) that takes queue `q`'s interrupts.
    pub fn irq_core(&self, q: u32) -> u32 {
        match self.irq_routing {
            IrqRouting::Aligned => q % self.vf_nq % self.app_cores,
            IrqRouting::Packed => self.first_irq_core + q % self.irq_cores,
        }
    }

    /// The application threads of VM `vm`'s kernel (of the host's on bare
    /// metal).
    pub fn threads_of_vm(&self, cfg: &Config, vm: u32) -> u32 {
        if self.forwarding {
            // A forwarding kernel runs no application thread.
            0
        } else if self.oltp {
            // The users, then the checkpoint writer (`workloads/storage/oltp.rs`).
            cfg.oltp.users + (cfg.oltp.checkpoint_writes > 0) as u32
        } else if self.storage_io {
            1 + cfg.storage.background_threads
        } else if self.bulk {
            Bulk::streams_into(cfg, vm)
        } else {
            self.app_cores
        }
    }
}

/// The physical NIC: its queue pairs with their coalescing (or the 82599's
/// vector), RSS over `nconn` connections and each queue's interrupt route.
pub(crate) fn physical_nic(cfg: &Config, l: &Layout, nconn: u32) -> PhysicalNic {
    // A VirtIO host's NIC keeps its own coalescing (by default the
    // driver's, DIM: thesis A.2) under every profile: the profiles
    // apply inside the guest.
    let host_profile = Profile::by_name(&cfg.vm.host_nic_coalescing).unwrap_or(Profile::AdaptiveCoalescing);
    let host_default = CoalesceCfg::from_profile(host_profile.knobs().coalesce);
    let c = if l.virtio { &host_default } else { &cfg.coalesce };
    let rx = CqSettings { usecs: c.rx_usecs, frames: c.rx_frames, cqe_mode: c.cqe_mode_rx, adaptive: c.adaptive_rx, irqs: true };
    let tx = CqSettings {
        usecs: c.tx_usecs,
        frames: c.tx_frames,
        cqe_mode: c.cqe_mode_tx,
        adaptive: c.adaptive_tx,
        irqs: cfg.nic.tx_completion_irqs,
    };
    let queues: Vec<QueuePair> = (0..l.nq)
        .map(|q| {
            let pair = QueuePair::new(q, cfg.nic.rx_ring_size as usize, cfg.nic.tx_ring_size, rx, tx);
            match cfg.nic.kind {
                NicKind::Connectx4 => pair,
                NicKind::I82599 => {
                    pair.with_eitr(crate::model::devices::nic::eitr::vector(&cfg.itr), cfg.nic.rx_packet_buffer_bytes, cfg.nic.rx_packet_buffer_accounting)
                }
            }
        })
        .collect();
    let routes: Vec<IrqRoute> = if l.guest && !l.virtio && !l.storage_io {
        vf::vfio_routes(l.nq, l.vf_nq, l.app_kernel, cfg.vcpus(), cfg.vm_host_cpus(), |q| l.irq_core(q))
    } else {
        (0..l.nq).map(|q| IrqRoute::Host { core: l.irq_core(q) }).collect()
    };
    let (vm_dma_extra_ns, vm_wire_extra_ns) = vf::extra_latency_ns(cfg);
    // RSS spreads connections over the queues evenly (an ideal indirection
    // table, `PhysicalNic::new`).
    PhysicalNic::new(queues, nconn, routes).with_timing(TxTiming {
        reply_wire_ns: cfg.nic.wire_latency_ns + vm_dma_extra_ns + vm_wire_extra_ns,
        tx_dma_ns: cfg.nic.dma_latency_ns + vm_dma_extra_ns,
        txqueuelen: cfg.nic.txqueuelen,
    })
}

/// The sockets of the connections: each is served by the thread of its
/// queue's core when routing is aligned (thesis §3.1.2 with
/// SO_INCOMING_NAPI_ID), and round-robin over the application threads
/// when packed; a bulk stream by its reader. The sockets, and each one's
/// thread (`Kernel::conn_thread`).
pub(crate) fn connections(
    cfg: &Config,
    l: &Layout,
    nconn: u32,
    nic: &PhysicalNic,
    virtio: Option<&VirtioNet>,
    bulk: Option<&Bulk>,
) -> (Vec<Conn>, Vec<u32>) {
    (0..nconn)
        .map(|i| {
            if let Some(b) = bulk {
                // Every kernel of the run knows every stream; its reader
                // is thread i / vm.count of its VM's kernel.
                let queue = b.senders.streams[i as usize].queue;
                return (Conn { tx_queue: queue, rx: Default::default(), rx_bytes: 0, on_ready: false }, i / l.vms);
            }
            let queue = match virtio {
                Some(v) => v.conn_queue[i as usize],
                None => nic.rss_queue(i),
            };
            let thread = match (cfg.nic.irq_routing, l.virtio) {
                (_, true) => queue % l.app_cores,
                (IrqRouting::Aligned, false) => queue,
                (IrqRouting::Packed, false) => i % l.app_cores,
            };
            (Conn { tx_queue: queue, rx: Default::default(), rx_bytes: 0, on_ready: false }, thread)
        })
        .unzip()
}

/// The active kernel at the start (the host's) and every kernel by id (the
/// active one's slot a placeholder): on bare metal the host runs the
/// application; in a VM each guest does and the host runs the vCPUs.
pub(crate) fn kernels(cfg: &Config, l: &Layout, streams: &RngStreams, conns: (Vec<Conn>, Vec<u32>)) -> (Kernel, Vec<Kernel>) {
    let (mut active, mut parked) = kernels_of(cfg, l, streams, conns);
    let machine_clock = crate::engine::time::CycleClock::new(cfg.cpu.freq_ghz);
    // The operations' warm costs at this core's CPI (`MicroarchCfg::warm_factor`;
    // exactly the machine's clock under fixed costs).
    let factor = cfg.microarch.warm_factor();
    let clock = if factor == 1.0 { machine_clock } else { crate::engine::time::CycleClock::new(cfg.cpu.freq_ghz / factor) };
    let shared = std::rc::Rc::new(cfg.clone());
    // In a VM the host's code at each exit shares the vCPU's core's L1i.
    let host_exit_bytes = if cfg.vm.is_guest() { cfg.vm.exit_code_bytes } else { 0 };
    let disruption = (cfg.microarch.ipc_model == crate::scenario::IpcModel::Disruption)
        .then(|| std::rc::Rc::new(crate::model::kernel::disruption::Disruption::new(&cfg.microarch, host_exit_bytes)));
    for k in std::iter::once(&mut active).chain(parked.iter_mut()) {
        k.clock = clock;
        k.machine_clock = machine_clock;
        k.cfg = shared.clone();
        k.disruption = disruption.clone();
    }
    (active, parked)
}

fn kernels_of(cfg: &Config, l: &Layout, streams: &RngStreams, conns: (Vec<Conn>, Vec<u32>)) -> (Kernel, Vec<Kernel>) {
    let first = app_kernel(cfg, l, streams, 0, l.threads_of_vm(cfg, 0), conns);
    if !l.guest {
        return (first, vec![Kernel::default()]);
    }
    let mut guests = vec![first];
    for vm in 1..l.vms {
        let g = &guests[0];
        let conns = (g.conns.iter().map(|c| Conn { rx: Default::default(), ..*c }).collect(), g.conn_thread.clone());
        guests.push(app_kernel(cfg, l, streams, vm, l.threads_of_vm(cfg, vm), conns));
    }
    let host = crate::model::vm::host_kernel(cfg, &mut guests, l.nq, l.guest_queues, |q| l.irq_core(q));
    (host, std::iter::once(Kernel::default()).chain(guests).collect())
}

/// The application's threads: memcached's event loops, or a workload's
/// (`workloads/`) in its first phase.
fn app_threads(cfg: &Config, l: &Layout, streams: &RngStreams, nthreads: u32) -> Vec<AppThread> {
    let reader_cores = match cfg.cpu.task_placement {
        TaskPlacement::Pinned => bulk::reader_cores(l.app_cores, l.app_nq),
        TaskPlacement::Fair => crate::model::kernel::fair::fork_cores(l.app_cores, streams),
    };
    (0..nthreads)
        .map(|t| {
            // A workload's own loop starts where its state says
            // (`Storage::threads`, `Bulk::readers`).
            if l.oltp {
                let mut th = AppThread::new(t, t % cfg.vcpus());
                th.phase = Phase::Workload;
                th
            } else if l.storage_io && t == 0 {
                // Iometer's worker (`workloads/storage/iometer.rs`).
                let mut th = AppThread::new(t, cfg.storage.worker_vcpu);
                th.phase = Phase::Workload;
                th
            } else if l.storage_io {
                // A background thread (`workloads/storage/background.rs`).
                let mut th = AppThread::new(t, (t - 1) % cfg.vcpus());
                th.phase = Phase::Workload;
                th
            } else if l.bulk {
                // iperf3's reader of stream t (`workloads/bulk.rs`).
                let mut th = AppThread::new(t, reader_cores[t as usize % reader_cores.len()]);
                th.phase = Phase::Workload;
                th
            } else {
                AppThread::new(t, t)
            }
        })
        .collect()
}

/// The application's kernel of VM `vm` (the host's on bare metal).
fn app_kernel(cfg: &Config, l: &Layout, streams: &RngStreams, vm: u32, nthreads: u32, (conns, conn_thread): (Vec<Conn>, Vec<u32>)) -> Kernel {
    let ncfg = NapiConfig {
        defer_hard_irqs: cfg.napi.napi_defer_hard_irqs,
        gro_flush_timeout: cfg.napi.gro_flush_timeout,
        irq_suspend_timeout: cfg.napi.irq_suspend_timeout,
    };
    let threads = app_threads(cfg, l, streams, nthreads);
    let epolls: Vec<Epoll> = (0..nthreads).map(|_| Epoll::new(&cfg.epoll)).collect();
    let service = (0..l.app_cores)
        .map(|t| {
            let rng = streams.stream(crate::engine::rng::kind::SERVICE, (vm * l.app_cores + t) as u64);
            crate::workload::ServiceDraws::new(rng, cfg.app.service)
        })
        .collect();
    // VM `vm`'s queues on the NIC and its NAPIs, one per queue pair.
    let first_queue = if l.virtio { 0 } else { vm * l.vf_nq };
    let mut queue_napi: Vec<u32> = (0..l.app_nq).collect();
    if l.vms > 1 {
        queue_napi = vec![0; l.nq as usize];
        for i in 0..l.app_nq {
            queue_napi[(first_queue + i) as usize] = i;
        }
    }
    Kernel {
        id: l.app_kernel + vm as KernelId,
        // A guest's idle vCPU halts into the host, which pays the wake-up.
        wakeup_latency_ns: if l.guest { 0 } else { cfg.cpu.wakeup_latency_ns },
        idle: if l.guest { None } else { crate::model::kernel::cpuidle::CpuIdle::new(cfg, l.ncores as usize) },
        migrations: 0,
        // Set by the server once the machine is built (`busy_chain.rs`).
        chain_ok: false,
        irq_fast: true,
        fair: (cfg.cpu.task_placement == TaskPlacement::Fair)
            .then(|| Box::new(crate::model::kernel::fair::Fair::new(l.ncores as usize, l.app_cores.min(l.ncores)))),
        host_preempt: if l.guest { None } else { crate::model::kernel::host_preempt::HostPreempt::new(cfg, l.ncores as usize, streams) },
        halted_late: if l.guest {
            None
        } else {
            crate::model::kernel::host_preempt::HostHold::halted(cfg, streams, kind::HOST_HALTED_LATE, 0, l.ncores as usize)
        },
        // The application's threads run on the first cores; packed routing
        // adds the IRQ cores after them; a guest's other vCPUs run nothing.
        core_role: (0..l.ncores)
            .map(|c| match (c < l.app_cores, l.guest) {
                _ if l.oltp => CoreRole::App,
                _ if l.storage_io => {
                    // Under Windows' dispatcher the worker may run on any.
                    if c == cfg.storage.worker_vcpu
                        || cfg.storage.guest_dispatcher == crate::scenario::GuestDispatcher::Windows2003
                    {
                        CoreRole::App
                    } else {
                        CoreRole::Other
                    }
                }
                (true, _) => CoreRole::App,
                (false, false) => CoreRole::Irq,
                (false, true) => CoreRole::Other,
            })
            .collect(),
        cores: (0..l.ncores).map(Core::new).collect(),
        napi_timer: vec![NapiTimer::default(); l.app_nq as usize],
        napis: (0..l.app_nq).map(|q| Napi::new(q, ncfg)).collect(),
        // One NAPI per queue pair, as mlx5, ixgbevf and virtio-net register
        // them.
        napi_queue: (first_queue..first_queue + l.app_nq).collect(),
        queue_napi,
        vcpu_base: threads.len() as u32,
        threads,
        vcpus: Vec::new(),
        vhosts: Vec::new(),
        device: if l.virtio { Device::Virtio } else { Device::Nic },
        rx_sink: if l.forwarding {
            RxSink::Forward
        } else if l.bulk {
            RxSink::Stream
        } else {
            RxSink::Sockets
        },
        epolls,
        conns,
        conn_thread,
        softirq: vec![Default::default(); l.ncores as usize],
        softirq_buf: vec![Vec::with_capacity(64); l.ncores as usize],
        service,
        clock: Default::default(),
        machine_clock: Default::default(),
        cfg: Default::default(),
        disruption: None,
    }
}

/// The server's background thread on each application core
/// (`app.background_wakeups_per_s`), as a periodic interrupt of its cost
/// (`devices/periodic`), each core's first one period after the start.
pub(crate) fn background_threads(cfg: &Config) -> Vec<Box<dyn crate::model::component::Component>> {
    use crate::model::devices::periodic::PeriodicIrq;
    let rate = cfg.app.background_wakeups_per_s;
    if rate <= 0.0 || cfg.app.background_wakeup_cycles == 0 {
        return Vec::new();
    }
    let period_ns = ((1e9 / rate).round() as crate::engine::Nanos).max(1);
    (0..cfg.cpu.app_cores)
        .map(|core| {
            let counts = std::rc::Rc::new(std::cell::Cell::new(Default::default()));
            Box::new(PeriodicIrq::new(core, period_ns, cfg.app.background_wakeup_cycles, counts))
                as Box<dyn crate::model::component::Component>
        })
        .collect()
}
