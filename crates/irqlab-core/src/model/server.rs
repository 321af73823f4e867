//! Assembly of the modelled server and the dispatch of the engine's events
//! to the components. `Server` owns the kernels (`kernel/`), the devices
//! (`devices/`), the workloads (`workloads/`) and the run's statistics
//! (`run.rs`); each component's events are its own sub-enum of [`Ev`]. The
//! workloads outside the machine (clients, bulk senders) handle theirs
//! through a narrow context (`workloads::WorkloadCx`); the kernel's code is
//! `impl Kernel` (`kernel/`), given the machine around it (`Machine`); the
//! VM layer's, the storage path's and virtio-net's code is still `impl
//! Machine` blocks in their own files, given the active kernel
//! (docs/architecture.md, "Tiers").

use crate::model::workloads::client::Clients;
use crate::model::kernel::cpu::{CpuClass, IrqSrc, CLASSES};
use crate::model::kernel::{CoreRole, Device, Kernel, KernelId, HOST};
use crate::model::kernel::host::Host;
use crate::model::vm::hypervisor::Hypervisor;
use crate::model::devices::virtio_net::VirtioHost;
use crate::model::workloads::storage::StorageHost;
use crate::model::workloads::bulk::BulkHost;
use crate::model::kernel::steering::Steering;
use crate::model::workloads::bulk::ReaderPhase;
use crate::model::workloads::storage::StoragePhase;
use crate::model::kernel::cpu::{ThreadId, ThreadSeg};
use crate::model::kernel::gro::Skb;
use crate::model::kernel::sched::Seg;
use crate::model::devices::nic::RxPacket;
use crate::model::devices::nic::{Cq, IrqRoute, PhysicalNic, QueuePair, Signal};
use crate::model::devices::virtio_net::VirtioNet;
use crate::engine::time::{secs_to_ns, CycleClock};
use crate::engine::EventQueue;
use crate::engine::{run_until, Nanos, RngStreams, Scheduler, Stopped, World};
use crate::error::Error;
use crate::scenario::{Config, Scenario, VmKind};
use crate::stats::cycles::CycleTable;
use crate::stats::dim_profiles;
use crate::stats::summary::{CpuPct, DimReport, Summary, VmReport};
use crate::model::devices::nic::events::{NicEv, NicOut, ReplyOnWire};
use crate::model::trace::TraceEvent;
use crate::model::component::{Component, ComponentCx, ComponentId};
use crate::model::kernel::events::KernelEv;
use crate::model::workloads::client::ClientEv;
use crate::model::workloads::WorkloadCx;
use crate::model::workloads::storage::StorageEv;
use crate::model::workloads::tcp_stream::TcpEv;
pub use crate::model::run::{Counters, DropSite, RunStats};
use crate::model::build::{self, Layout};
use crate::model::workloads::bulk::Bulk;
use crate::model::workloads::storage::Storage;

/// Every event of the model: one variant per component, whose sub-enum is
/// defined beside the code that handles it.
#[derive(Clone, Copy, Debug)]
pub enum Ev {
    /// A kernel's cores, NAPI watchdogs and NAPI threads (`kernel/events.rs`).
    Kernel(KernelEv),
    /// The physical NIC's rings, moderation and TX completions
    /// (`devices/nic/events.rs`).
    Nic(NicEv),
    /// memcached's clients (`workloads/client.rs`).
    Client(ClientEv),
    /// The bulk TCP senders (`workloads/tcp_stream.rs`).
    Tcp(TcpEv),
    /// A storage guest's I/O path (`workloads/storage/mod.rs`).
    Storage(StorageEv),
    /// A component added to the machine (`model/component.rs`): its id
    /// and the event it chose.
    Component { id: ComponentId, ev: u64 },
    /// Warm-up ends: statistics restart.
    WarmupEnd,
}

impl From<KernelEv> for Ev {
    #[inline]
    fn from(e: KernelEv) -> Self {
        Ev::Kernel(e)
    }
}

pub use crate::model::lane;

/// The modelled server: the active kernel, whose code runs now
/// (`model/kernel/`), and the machine around it.
pub struct Server {
    /// The active kernel: the one whose code runs now (see
    /// `model/kernel/mod.rs`).
    pub kernel: Kernel,
    pub m: Machine,
}

/// Everything around the active kernel: the other kernels, the devices
/// (`devices/`), the virtualization layer (`vm/`), the workloads
/// (`workloads/`) and the run's statistics (`run.rs`). The kernel's code
/// reaches it as `m`; its own code gets the active kernel as `k`.
pub struct Machine {
    pub cfg: Config,
    pub freq_ghz: f64,
    /// Cycles to nanoseconds at `freq_ghz`.
    clock: CycleClock,
    /// Every kernel by [`KernelId`], the host's first ([`HOST`]); the
    /// active kernel's slot holds an empty placeholder meanwhile.
    kernels: Vec<Kernel>,
    active: KernelId,
    /// The kernel that runs the application and owns the sockets; with
    /// several VMs (`vm.count`), the first of theirs, the others following.
    pub app_kernel: KernelId,
    /// The guest's virtio-net device (`vm.kind = "virtio"`).
    pub virtio: Option<VirtioNet>,
    pub nic: PhysicalNic,
    pub clients: Clients,
    /// The run's window and what is measured in it (`run.rs`).
    pub run: RunStats,
    pub streams: RngStreams,
    profile: Option<String>,
    name: String,
    pub trace: Option<crate::model::trace::Trace>,
    /// The bulk TCP receiver and software steering (`model/workloads/bulk.rs`).
    pub bulk: Option<Box<crate::model::workloads::bulk::Bulk>>,
    /// A guest's storage I/O path (`model/workloads/storage/`).
    pub storage: Option<Box<crate::model::workloads::storage::Storage>>,
    /// Components added to the machine (`Server::with_component`), by id.
    components: Vec<Box<dyn Component>>,
    /// A component's requests while it is called (`ComponentCx`).
    component_events: Vec<(Nanos, u64)>,
    component_irqs: Vec<u32>,
}

impl Server {
    /// The machine a scenario describes (its parts are assembled in
    /// `build.rs`).
    pub fn build(s: &Scenario) -> Result<Self, Error> {
        let cfg = s.config().clone();
        let streams = RngStreams::new(cfg.run.seed);
        let layout = Layout::new(&cfg);
        let bulk = layout.bulk.then(|| Box::new(Bulk::new(&cfg, &streams, layout.app_kernel, layout.nq)));
        let nconn = if layout.bulk { cfg.bulk_streams() } else { cfg.load.connections() as u32 };
        let nic = build::physical_nic(&cfg, &layout, nconn);
        let virtio = layout.virtio.then(|| {
            VirtioNet::new(layout.app_kernel, layout.guest_queues, cfg.vm.virtqueue_size, cfg.vm.tap_queue_len, nconn)
        });
        let conns = build::connections(&cfg, &layout, nconn, &nic, virtio.as_ref(), bulk.as_deref());
        let clients = Clients::new(&cfg, &streams)?;
        let (kernel, kernels) = build::kernels(&cfg, &layout, &streams, conns);
        // The HBA's core follows the vCPUs' (`vm::host_kernel`).
        let storage = layout.storage_io.then(|| {
            Box::new(Storage::new(&cfg, &streams, layout.app_kernel, cfg.vcpus(), layout.threads_of_vm(&cfg, 0)))
        });
        let warmup_end_ns = secs_to_ns(cfg.run.warmup_s);
        let end_ns = warmup_end_ns + secs_to_ns(cfg.run.duration_s);
        Ok(Server {
            kernel,
            m: Machine {
            freq_ghz: cfg.cpu.freq_ghz,
            clock: CycleClock::new(cfg.cpu.freq_ghz),
            kernels,
            active: HOST,
            app_kernel: layout.app_kernel,
            nic,
            virtio,
            clients,
            run: RunStats::new(warmup_end_ns, end_ns),
            streams,
            profile: s.profile().map(|p| p.name().to_string()),
            name: cfg.name.clone(),
            trace: None,
            bulk,
            storage,
            cfg,
            components: Vec::new(),
            component_events: Vec::new(),
            component_irqs: Vec::new(),
            },
        })
    }

    /// Record up to `limit` kernel-level events (see [`crate::model::trace`]).
    pub fn with_trace(mut self, limit: usize) -> Self {
        self.m.trace = Some(crate::model::trace::Trace::new(limit));
        self
    }

    /// Add `c` to the machine (`model/component.rs`): it starts with the
    /// run, handles its own events and may interrupt the host's cores.
    pub fn with_component(mut self, c: Box<dyn Component>) -> Self {
        assert!(self.m.components.len() < ComponentId::MAX as usize, "at most {} components", ComponentId::MAX);
        self.m.components.push(c);
        self
    }

    /// Run to the end and summarise.
    pub fn run(self) -> Result<Summary, Error> {
        self.run_traced().map(|(s, _)| s)
    }

    /// Run to the end; return the summary and the trace (empty unless
    /// [`Server::with_trace`] was called).
    pub fn run_traced(self) -> Result<(Summary, Vec<(Nanos, crate::model::trace::TraceEvent)>), Error> {
        self.run_checked(&mut || false)
    }

    /// Run to the end unless `interrupted` says stop (see [`run_until`]).
    pub fn run_checked(
        mut self,
        interrupted: &mut dyn FnMut() -> bool,
    ) -> Result<(Summary, Vec<(Nanos, crate::model::trace::TraceEvent)>), Error> {
        let wall = std::time::Instant::now();
        let mut sched = Scheduler::new();
        let Server { kernel: k, m } = &mut self;
        // A slot per host core for its segment end (engine/queue.rs).
        let host_cores = m.kernel_ref(k, HOST).cores.len();
        sched.set_owners(host_cores);
        // Guests first: their threads wait on their frozen cores until the
        // host's vCPU threads enter guest mode.
        for kid in (0..m.kernels.len()).rev() {
            m.switch_to(k, kid);
            let n = k.threads.len() + k.vcpus.len();
            for t in 0..n as u32 {
                k.thread_make_runnable(m, &mut sched, t);
            }
        }
        m.switch_to(k, HOST);
        if m.bulk.is_some() {
            let b = &mut **m.bulk.as_mut().expect("bulk workload");
            let mut cx = WorkloadCx { sched: &mut sched, nic: &mut m.nic, run: &mut m.run };
            b.senders.start(&mut cx, &b.unread);
        } else if m.storage.is_some() {
            // The worker issues its reads as it starts; the guest's clock ticks.
            if m.cfg.storage.guest_timer_hz > 0 {
                sched.at(1_000_000_000 / m.cfg.storage.guest_timer_hz as u64, Ev::Storage(StorageEv::GuestTick));
            }
            if m.cfg.storage.target_latency_us > 0 {
                sched.at(crate::model::workloads::storage::iometer::TUNE_INTERVAL_NS, Ev::Storage(StorageEv::OioTune));
            }
            if m.cfg.oltp.checkpoint_interval_ms > 0 && m.cfg.oltp.checkpoint_writes > 0 {
                sched.at(m.cfg.oltp.checkpoint_interval_ms * 1_000_000, Ev::Storage(StorageEv::Checkpoint));
            }
        } else {
            m.clients.start(&mut sched);
        }
        for id in 0..m.components.len() {
            m.component_call(k, &mut sched, id as ComponentId, |c, cx| c.start(cx));
        }
        if m.run.warmup_end_ns > 0 {
            sched.at(m.run.warmup_end_ns, Ev::WarmupEnd);
        }
        let end = m.run.end_ns;
        let ran = run_until(&mut self, &mut sched, end, interrupted);
        let Server { kernel: k, m } = &mut self;
        // TX completions and arrivals kept by the queues (QueuePair::
        // tx_defer, rx_defer) that were due by the end count as handled
        // events, as they would have been.
        let due = match ran {
            Ok(()) => EventQueue::<Ev>::key_after(end),
            Err(_) => sched.current_key(),
        };
        for q in &mut m.nic.queues {
            m.nic.deferred_handled += q.catch_up(due);
        }
        sched.count_handled(std::mem::take(&mut m.nic.deferred_handled));
        ran.map_err(|stop| match stop {
            Stopped::Interrupted { at_ns } => Error::Interrupted { at_s: at_ns as f64 / 1e9 },
            Stopped::Stalled { at_ns } => Error::Stalled(format!(
                "the simulation stopped advancing at simulated time {} ns: over {} events happened at that instant, \
                 so the scenario describes work that takes no time and never ends (give the request path a cost or a \
                 latency, e.g. nic.wire_latency_ns above 0)",
                at_ns,
                crate::engine::STALL_CHECKS * crate::engine::CHECK_EVERY_EVENTS
            )),
        })?;
        let wall_s = wall.elapsed().as_secs_f64();
        let summary = m.summary(k, &mut sched, wall_s);
        Ok((summary, m.trace.take().map(|t| t.events).unwrap_or_default()))
    }
}

impl Machine {

    /// Make kernel `id` the active one: park the active kernel `k` in its
    /// slot and bring `id`'s into `k` (`model/kernel/mod.rs`). The kernel's
    /// code that called it goes on with the kernel now in `k`.
    #[inline]
    pub(crate) fn switch_to(&mut self, k: &mut Kernel, id: KernelId) {
        if id != self.active {
            self.switch_slow(k, id);
        }
    }

    #[cold]
    #[inline(never)]
    fn switch_slow(&mut self, k: &mut Kernel, id: KernelId) {
        std::mem::swap(k, &mut self.kernels[self.active]);
        std::mem::swap(k, &mut self.kernels[id]);
        self.active = id;
    }

    /// Run `f` with kernel `id` active, then make the caller's kernel
    /// active again.
    #[inline]
    pub(crate) fn in_kernel<R>(&mut self, k: &mut Kernel, id: KernelId, f: impl FnOnce(&mut Kernel, &mut Self) -> R) -> R {
        let prev = self.active;
        self.switch_to(k, id);
        let r = f(k, self);
        self.switch_to(k, prev);
        r
    }

    /// Kernel `id`, active (`k`) or parked.
    pub fn kernel_ref<'a>(&'a self, k: &'a Kernel, id: KernelId) -> &'a Kernel {
        if id == self.active {
            k
        } else {
            &self.kernels[id]
        }
    }

    /// Number of kernels (1 on bare metal).
    pub fn kernel_count(&self) -> usize {
        self.kernels.len()
    }

    #[inline]
    pub fn ns(&self, cycles: u64) -> Nanos {
        self.clock.ns(cycles)
    }

    #[inline]
    pub(crate) fn tr(&mut self, now: Nanos, e: crate::model::trace::TraceEvent) {
        if let Some(t) = self.trace.as_mut() {
            t.push(now, e);
        }
    }

    /// Call component `id` with `f`, then carry out what it asked: its
    /// events, then its interrupts on the host's cores.
    fn component_call(
        &mut self,
        k: &mut Kernel,
        sched: &mut Scheduler<Ev>,
        id: ComponentId,
        f: impl FnOnce(&mut dyn Component, &mut ComponentCx),
    ) {
        let mut events = std::mem::take(&mut self.component_events);
        let mut irqs = std::mem::take(&mut self.component_irqs);
        let mut cx = ComponentCx { now: sched.now(), measuring: self.run.measuring, events: &mut events, irqs: &mut irqs };
        f(&mut *self.components[id as usize], &mut cx);
        for (at, ev) in events.drain(..) {
            sched.at(at, Ev::Component { id, ev });
        }
        for core in irqs.drain(..) {
            self.in_kernel(k, HOST, |k, m| k.raise_irq(m, sched, core, IrqSrc::Component(id)));
        }
        self.component_events = events;
        self.component_irqs = irqs;
    }

    /// A storage guest's I/O path's event (`workloads/storage/mod.rs`).
    fn storage_event(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, ev: StorageEv) {
        match ev {
            StorageEv::HbaComplete => crate::model::vm::vmkernel::hba_complete(self, k, sched),
            StorageEv::GuestTick => crate::model::devices::lsilogic::guest_tick(self, k, sched),
            StorageEv::Checkpoint => crate::model::workloads::storage::oltp::oltp_checkpoint(self, k, sched),
            StorageEv::OioTune => crate::model::workloads::storage::iometer::iometer_tune(self, k, sched),
        }
    }

    fn warmup_end(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>) {
        let now = sched.now();
        self.run.measuring = true;
        for kid in 0..self.kernels.len() {
            self.switch_to(k, kid);
            for c in &mut k.cores {
                c.reset_stats(now);
            }
        }
        self.switch_to(k, HOST);
        self.run.counters = Counters::default();
        self.run.latency.reset();
        for q in &mut self.nic.queues {
            q.rx.dim_time.restart(now);
            q.tx.dim_time.restart(now);
        }
        if let Some(b) = self.bulk.as_mut() {
            b.reset_counters();
        }
        if let Some(s) = self.storage.as_mut() {
            s.counters = Default::default();
        }
    }

    /// What the NIC asked for: an interrupt along its queue's route, or a
    /// drop for the workload to learn of.
    #[inline]
    fn nic_out(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, out: NicOut) {
        match out {
            NicOut::Nothing => {}
            NicOut::Irq { queue } => self.queue_irq(k, sched, queue),
            NicOut::Dropped { site, conn, sent_ns } => self.dropped(sched, site, conn, sent_ns),
        }
    }

    /// The kernel's driver applies a completion queue's moderation decision
    /// (re-arming after a poll).
    #[inline]
    pub(crate) fn moderation(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, queue: u32, cq: Cq, signal: Signal) {
        let out = self.nic.moderation(sched, queue, cq, signal);
        self.nic_out(k, sched, out)
    }

    /// The kernel sends a reply through the NIC's TX queue `queue`.
    pub(crate) fn transmit(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, queue: u32, conn: u32, sent_ns: Nanos, bytes: u32) {
        let out = self.nic.transmit(sched, queue, conn, sent_ns, bytes);
        self.nic_out(k, sched, out)
    }

    /// The kernel's driver reaped TX descriptors: the qdisc may send.
    pub(crate) fn tx_restart(&mut self, sched: &mut Scheduler<Ev>, queue: u32) {
        self.nic.tx_restart(sched, queue);
    }

    /// Queue pair `queue`'s vector fired: its interrupt goes along its route.
    fn queue_irq(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, queue: u32) {
        self.tr(sched.now(), TraceEvent::IrqFired { queue });
        if self.run.measuring {
            self.run.counters.hard_irqs += 1;
        }
        match self.nic.route(queue) {
            // Threaded NAPI on a veth: the sender's `napi_schedule` wakes the
            // NAPI thread; no interrupt runs on the core.
            IrqRoute::Host { core } if self.cfg.napi.threaded => k.napi_thread_schedule(self, sched, core, queue),
            IrqRoute::Host { core } => self.in_kernel(k, HOST, |k, s| k.raise_irq(s, sched, core, IrqSrc::Queue(queue))),
            IrqRoute::Vfio { host_core, guest, guest_core } => {
                if self.cfg.vm.posted_interrupts && crate::model::vm::kvm::vcpu_in_guest_mode(self, k, guest, guest_core) {
                    // VT-d posted interrupt: straight into the running guest.
                    crate::model::vm::kvm::posted_inject(self, k, sched, guest, guest_core, IrqSrc::Queue(queue));
                } else {
                    self.in_kernel(k, HOST, |k, s| k.raise_irq(s, sched, host_core, IrqSrc::Vfio(queue)))
                }
            }
        }
    }

    /// A request (or its reply) was dropped at `site`: count it; in a
    /// closed loop the client's TCP sends the request again after the
    /// retransmission timeout (an open-loop request is lost).
    pub(crate) fn dropped(&mut self, sched: &mut Scheduler<Ev>, site: DropSite, conn: u32, sent_ns: Nanos) {
        if self.bulk.is_some() {
            // A frame of a bulk stream: its sender's TCP reacts.
            if self.run.measuring {
                self.run.counters.drops.ring += 1;
            }
            return self.bulk.as_ref().expect("bulk workload").senders.lost(sched, conn, 1);
        }
        if self.run.measuring {
            let d = &mut self.run.counters.drops;
            match site {
                DropSite::Ring => d.ring += 1,
                DropSite::Socket => d.socket += 1,
                DropSite::Qdisc => d.qdisc += 1,
            }
        }
        if self.cfg.load.qps.is_none() || crate::model::workloads::client::holds_at_client(&self.cfg) {
            let at = (sent_ns + self.cfg.load.retransmit_timeout_ns).max(sched.now());
            sched.at(at, Ev::Client(ClientEv::Retransmit { conn, sent_ns }));
        }
    }

    pub fn record_reply(&mut self, now: Nanos, sent_ns: Nanos) {
        self.run.record_reply(now, sent_ns);
    }

    fn summary(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, wall_s: f64) -> Summary {
        let now = sched.now();
        let dur_s = self.cfg.run.duration_s;
        let vm = self.vm_report(k, now);
        // The application's cores, as the kernels that run them (every VM's)
        // see them.
        let mut app_tab = CycleTable::default();
        let mut irq_tab = CycleTable::default();
        let mut ctx_switches = 0u64;
        let mut has_irq_cores = false;
        for kid in self.app_kernel..self.kernels.len() {
            self.switch_to(k, kid);
            let kernel = &mut *k;
            for (i, c) in kernel.cores.iter_mut().enumerate() {
                let a = c.accounted(now);
                match kernel.core_role[i] {
                    CoreRole::App => {
                        app_tab.add(&a);
                        ctx_switches += c.context_switches;
                    }
                    CoreRole::Irq => irq_tab.add(&a),
                    CoreRole::Other => {}
                }
            }
            has_irq_cores |= k.core_role.contains(&CoreRole::Irq);
        }
        self.switch_to(k, HOST);
        let bulk = self.bulk.as_ref().map(|b| b.report(k, now, dur_s));
        let steering = self.bulk.as_ref().and_then(|b| b.steering_report(dur_s));
        let storage = if self.storage.is_some() { crate::model::workloads::storage::storage_report(self, k, now, dur_s) } else { None };
        if let Some(b) = &self.bulk {
            // Segments the readers read (whole ones).
            self.run.counters.completed = b.bytes_read / self.cfg.bulk.mss_bytes as u64;
        }
        let completed = self.run.counters.completed;
        let polled = self.run.counters.packets_polled;
        let irqs = self.run.counters.hard_irqs;
        let d = self.run.counters.drops.clone();
        let drops = d.ring + d.socket + d.qdisc;
        let busy_cycles = app_tab.busy_ns() as f64 * self.freq_ghz;
        let per = |x: u64| x as f64 / dur_s;
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        let latency_us = self.run.latency.summary_us();
        let cycles_per_query = ratio(busy_cycles, completed as f64);
        Summary {
            scenario: self.name.clone(),
            profile: self.profile.clone(),
            seed: self.cfg.run.seed,
            mode: if self.cfg.load.qps.is_some() { "open" } else { "closed" }.to_string(),
            offered_qps: self.cfg.load.qps,
            throughput_qps: per(completed),
            load_latency_product: latency_us.mean.map(|t| cycles_per_query * t),
            latency_us,
            cpu_pct: app_tab.pct(),
            irq_cores_cpu_pct: has_irq_cores.then(|| irq_tab.pct()),
            irqs_per_s: per(irqs),
            packets_per_irq: ratio(polled as f64, irqs as f64),
            context_switches_per_s: per(ctx_switches),
            context_switches_per_query: ratio(ctx_switches as f64, completed as f64),
            cycles_per_query,
            drops,
            drops_by_site: d,
            retransmits: self.run.counters.retransmits,
            held_at_client: self.run.counters.held_at_client,
            busy_poll_pct: 100.0 * ratio(self.run.counters.packets_busy_polled as f64, polled as f64),
            softirqs_per_s: per(self.run.counters.softirq_rounds),
            watchdog_fires_per_s: per(self.run.counters.watchdog_fires),
            napi_thread_wakeups_per_s: self.cfg.napi.threaded.then(|| per(self.run.counters.napi_thread_runs)),
            rx_ring_wait_us: ratio(self.run.counters.ring_wait_ns as f64, polled as f64) / 1e3,
            dim: self.dim_report(now),
            vm,
            bulk,
            steering,
            storage,
            requests_completed: completed,
            sim_time_s: now as f64 / 1e9,
            sim_events: sched.processed(),
            wall_s,
            warnings: self.warnings(completed, drops),
        }
    }

    /// What the virtualization layer did (None on bare metal): counters
    /// and the host's view of the vCPU cores.
    fn vm_report(&mut self, k: &mut Kernel, now: Nanos) -> Option<VmReport> {
        if !self.cfg.vm.is_guest() {
            return None;
        }
        // Group each host core by what the guest CPUs of its vCPUs are for.
        self.switch_to(k, HOST);
        let mut runs_app = vec![false; k.cores.len()];
        for v in &k.vcpus {
            let role = self.kernels[v.guest].core_role[v.guest_core as usize];
            runs_app[v.core as usize] |= role == CoreRole::App;
        }
        let mut host = CycleTable::default();
        let mut host_irq = CycleTable::default();
        let mut busy_ns: Nanos = 0;
        for (i, c) in k.cores.iter_mut().enumerate() {
            let a = c.accounted(now);
            busy_ns += a.iter().sum::<Nanos>() - a[CpuClass::Idle as usize];
            match (k.core_role[i], runs_app[i]) {
                (CoreRole::Irq, _) => host_irq.add(&a),
                (_, true) => host.add(&a),
                // A vCPU that runs no application thread.
                _ => {}
            }
        }
        let has_irq_cores = k.core_role.contains(&CoreRole::Irq);
        let virtio = self.cfg.vm.kind == VmKind::Virtio;
        let per = |x: u64| x as f64 / self.cfg.run.duration_s;
        let n = &self.run.counters;
        let kind = serde_json::to_value(self.cfg.vm.kind).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
        Some(VmReport {
            kind,
            vm_exits_per_s: per(n.vm_exits),
            virtual_irqs_per_s: per(n.virtual_irqs),
            halts_per_s: per(n.vm_halts),
            halt_poll_success_pct: if n.vm_halts > 0 { 100.0 * n.halt_poll_wakeups as f64 / n.vm_halts as f64 } else { 0.0 },
            host_cpu_pct: host.pct(),
            host_irq_cores_cpu_pct: has_irq_cores.then(|| host_irq.pct()),
            tx_kicks_per_s: virtio.then(|| per(n.virtio_kicks)),
            vms: self.cfg.vm.count,
            host_cpus: k.cores.len() as u32,
            host_busy_cpus: busy_ns as f64 / 1e9 / self.cfg.run.duration_s,
        })
    }

    /// What net DIM did on the RX and TX completion queues over the measured
    /// window (`Summary::dim`); None when no CQ runs DIM. Every queue has the
    /// same coalescing settings, so one mode and table per direction.
    fn dim_report(&self, now: Nanos) -> Option<DimReport> {
        if self.storage.is_some() {
            // The storage guest has no network device.
            return None;
        }
        let cq = |cq: Cq| {
            // An 82599's vector is throttled by its ITR policy, not DIM.
            let active =
                |q: &&QueuePair| q.eitr.is_none() && q.cq_ref(cq).dim.is_some() && (cq == Cq::Rx || q.tx_irqs());
            let dim = self.nic.queues.iter().find(active)?.cq_ref(cq).dim.as_ref()?;
            let (mode, direction) = (dim.mode(), dim.direction());
            let queues = self.nic.queues.iter().filter(active).map(|q| (q.id, &q.cq_ref(cq).dim_time));
            Some(dim_profiles::cq_report(mode, direction, queues, now))
        };
        let (rx, tx) = (cq(Cq::Rx), cq(Cq::Tx));
        (rx.is_some() || tx.is_some()).then_some(DimReport { rx, tx })
    }

    /// Sentences the reader of a summary needs to read it right.
    fn warnings(&self, completed: u64, drops: u64) -> Vec<String> {
        let mut w = Vec::new();
        let dur_s = self.cfg.run.duration_s;
        if completed == 0 {
            w.push(format!(
                "no request completed in the measured {dur_s} s, so latency is not reported (null); \
                 lengthen run.duration_s or check that the server can serve the load"
            ));
        }
        if drops > 0 {
            let d = &self.run.counters.drops;
            let lost = self.cfg.load.qps.is_some() && !crate::model::workloads::client::holds_at_client(&self.cfg);
            let fate = if lost { "were lost" } else { "were retransmitted after load.retransmit_timeout_ns" };
            w.push(format!(
                "{drops} requests or replies were dropped (ring {}, socket {}, qdisc {}) and {fate}; \
                 latency covers completed requests only",
                d.ring, d.socket, d.qdisc
            ));
        }
        if self.cfg.vm.kind == VmKind::Virtio && self.cfg.coalesce.adaptive_rx {
            w.push(
                "the guest's virtio-net device has no interrupt coalescing (no VIRTIO_NET_F_NOTF_COAL with vhost-net), \
                 so adaptive-rx and the other coalesce settings have no effect in the guest"
                    .to_string(),
            );
        }
        // A request held for a moment is normal at any load (the next
        // arrival on a connection whose reply is on its way); a backlog
        // still held at the end that is more than 1 % of the replies (and
        // more than a handful) means the client could not offer the rate.
        let backlog = self.clients.held_backlog();
        if backlog > 10 && backlog as f64 > 0.01 * completed as f64 {
            let served = completed as f64 / dur_s;
            w.push(format!(
                "the client could not offer load.qps ({:.0}/s; {served:.0} replies/s): {backlog} requests were still \
                 waiting at the client at the end because their connection had load.depth requests outstanding \
                 (mutilate's behaviour, load.open_loop_backlog = \"client\"), and the latency of a held request \
                 counts from when it was sent, not from when it was due",
                self.cfg.load.qps.unwrap_or(0.0)
            ));
        }
        w
    }
}

/// The machine as the kernel's code sees it (`model/kernel/host.rs`).
impl Host for Machine {
    type Ev = Ev;


    #[inline]
    fn run(&mut self) -> &mut RunStats {
        &mut self.run
    }

    #[inline]
    fn tr(&mut self, now: Nanos, e: TraceEvent) {
        Machine::tr(self, now, e)
    }

    #[inline]
    fn cfg(&self) -> &Config {
        &self.cfg
    }

    #[inline]
    fn app_kernel(&self) -> KernelId {
        self.app_kernel
    }

    #[inline]
    fn parked(&self, id: KernelId) -> &Kernel {
        debug_assert_ne!(id, self.active);
        &self.kernels[id]
    }

    #[inline]
    fn irq_route(&self, q: u32) -> IrqRoute {
        self.nic.route(q)
    }

    #[inline]
    fn switch_to(&mut self, k: &mut Kernel, id: KernelId) {
        Machine::switch_to(self, k, id)
    }

    #[inline]
    fn queue(&mut self, device: Device, q: u32) -> &mut QueuePair {
        match device {
            Device::Nic => &mut self.nic.queues[q as usize],
            Device::Virtio => &mut self.virtio.as_mut().expect("virtio device").queues[q as usize],
        }
    }

    #[inline]
    fn deferred_handled(&mut self, n: u64) {
        self.nic.deferred_handled += n;
    }

    #[inline]
    fn moderation(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, queue: u32, cq: Cq, signal: Signal) {
        Machine::moderation(self, k, sched, queue, cq, signal)
    }

    #[inline]
    fn transmit(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, queue: u32, conn: u32, sent_ns: Nanos, bytes: u32) {
        Machine::transmit(self, k, sched, queue, conn, sent_ns, bytes)
    }

    #[inline]
    fn tx_restart(&mut self, sched: &mut Scheduler<Ev>, queue: u32) {
        Machine::tx_restart(self, sched, queue)
    }

    #[inline]
    fn nic_rearmed(&mut self, sched: &mut Scheduler<Ev>, queue: u32) {
        self.nic.rearmed(sched, queue)
    }

    #[inline]
    fn dropped(&mut self, sched: &mut Scheduler<Ev>, site: DropSite, conn: u32, sent_ns: Nanos) {
        Machine::dropped(self, sched, site, conn, sent_ns)
    }

    #[inline]
    fn virtio_transmit(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, gc: u32, q: u32, conn: u32, sent_ns: Nanos, bytes: u32) {
        crate::model::devices::virtio_net::virtio_transmit(self, k, sched, gc, q, conn, sent_ns, bytes)
    }

    #[inline]
    fn virtio_refilled(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, q: u32) {
        crate::model::devices::virtio_net::virtio_refilled(self, k, sched, q)
    }

    #[inline]
    fn virtqueue_napi_complete(&mut self, k: &mut Kernel, core: u32, napi: u32, q: u32, now: Nanos) {
        crate::model::devices::virtio_net::virtqueue_napi_complete(self, k, core, napi, q, now)
    }

    #[inline]
    fn bridge_deliver(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, buf: &mut Vec<RxPacket>) {
        crate::model::devices::virtio_net::bridge_deliver(self, k, sched, buf)
    }

    #[inline]
    fn vm_irq_cycles(&self, k: &Kernel, src: IrqSrc) -> u64 {
        crate::model::vm::kvm::vm_irq_cycles(self, k, src)
    }

    #[inline]
    fn vm_hardirq_done(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, src: IrqSrc) {
        crate::model::vm::kvm::vm_hardirq_done(self, k, sched, src)
    }

    #[inline]
    fn kvm_inject(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, guest: KernelId, gc: u32, src: IrqSrc) {
        crate::model::vm::kvm::kvm_inject(self, k, sched, guest, gc, src)
    }

    #[inline]
    fn guest_core_wake(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, gc: u32) {
        crate::model::vm::kvm::guest_core_wake(self, k, sched, gc)
    }

    #[inline]
    fn vcpu_next(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, v: usize) -> Option<Seg> {
        crate::model::vm::vcpu::vcpu_next(self, k, sched, v)
    }

    #[inline]
    fn vcpu_step_done(&mut self, k: &mut Kernel, v: usize) {
        crate::model::vm::vcpu::vcpu_step_done(k, v)
    }

    #[inline]
    fn vcpu_entered(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, v: usize) {
        crate::model::vm::vcpu::vcpu_entered(self, k, sched, v)
    }

    #[inline]
    fn vcpu_preempted(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, t: ThreadId) {
        crate::model::vm::vcpu::vcpu_preempted(self, k, sched, t)
    }

    #[inline]
    fn vcpu_halt(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, host_thread: ThreadId, gc: u32) {
        crate::model::vm::vcpu::vcpu_halt(self, k, sched, host_thread, gc)
    }

    #[inline]
    fn vcpu_resume(&mut self, k: &mut Kernel, t: ThreadId, now: Nanos) {
        crate::model::vm::vcpu::vcpu_resume(k, t, now)
    }

    #[inline]
    fn vcpu_contended(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, core: u32, t: ThreadId, seg: ThreadSeg) {
        crate::model::vm::vcpu::vcpu_contended(self, k, sched, core, t, seg)
    }

    #[inline]
    fn vcpu_turn_over(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, core: u32, t: ThreadId) {
        crate::model::vm::vcpu::vcpu_turn_over(self, k, sched, core, t)
    }

    #[inline]
    fn vhost_next(&mut self, k: &mut Kernel, w: usize) -> Option<Seg> {
        crate::model::vm::vhost::vhost_next(self, k, w)
    }

    #[inline]
    fn vhost_step_done(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, w: usize) {
        crate::model::vm::vhost::vhost_step_done(self, k, sched, w)
    }

    #[inline]
    fn storage_irq_cycles(&mut self, src: IrqSrc) -> u64 {
        crate::model::devices::lsilogic::storage_irq_cycles(self, src)
    }

    #[inline]
    fn storage_irq_done(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, core: u32, src: IrqSrc) {
        crate::model::devices::lsilogic::storage_irq_done(self, k, sched, core, src)
    }










    fn workload_next(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, t: ThreadId) -> Option<Seg> {
        if let Some(b) = self.bulk.as_ref() {
            debug_assert_eq!(b.readers[b.stream_of(k.id, t)], ReaderPhase::ReadCheck);
            return crate::model::workloads::bulk::reader_next(self, k, sched, t);
        }
        match self.storage.as_ref().expect("a workload with threads of its own").threads[t as usize].phase {
            StoragePhase::IoNext => crate::model::workloads::storage::iometer::iometer_next(self, k, sched, t),
            StoragePhase::TxnNext => crate::model::workloads::storage::oltp::oltp_next(self, k, sched, t),
            StoragePhase::Spin => crate::model::workloads::storage::background::background_next(self, k, t),
            p => unreachable!("a storage thread's next step in phase {p:?}"),
        }
    }

    fn workload_step_done(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, t: ThreadId) {
        if let Some(b) = self.bulk.as_ref() {
            return match b.readers[b.stream_of(k.id, t)] {
                ReaderPhase::InRead(bytes) => crate::model::workloads::bulk::reader_done(self, k, sched, t, bytes),
                p => unreachable!("a reader's step done in phase {p:?}"),
            };
        }
        match self.storage.as_ref().expect("a workload with threads of its own").threads[t as usize].phase {
            StoragePhase::InIoIssue => crate::model::workloads::storage::iometer::iometer_issued(self, k, sched, t),
            StoragePhase::InIoComplete => crate::model::workloads::storage::iometer::iometer_completed(self, k, sched, t),
            StoragePhase::InSpin => crate::model::workloads::storage::background::background_done(self, k, sched, t),
            p @ (StoragePhase::InTxnCompute | StoragePhase::InTxnIssue | StoragePhase::InTxnComplete) => {
                crate::model::workloads::storage::oltp::oltp_step_done(self, k, sched, t, p)
            }
            p => unreachable!("a storage thread's step done in phase {p:?}"),
        }
    }

    #[inline]
    fn stream_poll_take(&mut self, k: &mut Kernel, now: Nanos, napi: u32, budget: u32) -> (u32, u64) {
        crate::model::workloads::bulk::stream_poll_take(self, k, now, napi, budget)
    }

    #[inline]
    fn stream_deliver(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, napi: u32) {
        crate::model::workloads::bulk::stream_deliver(self, k, sched, napi)
    }

    #[inline]
    fn tcp_rcv(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, skb: Skb) {
        crate::model::workloads::bulk::tcp_rcv(self, k, sched, skb)
    }

    #[inline]
    fn tcp_rx_cycles(&self, k: &Kernel, skbs: &[Skb]) -> u64 {
        crate::model::workloads::bulk::tcp_rx_cycles(k, skbs)
    }

    fn stream_lost(&mut self, sched: &mut Scheduler<Ev>, conn: u32, segs: u32) {
        self.bulk.as_ref().expect("bulk workload").senders.lost(sched, conn, segs)
    }

    #[inline]
    fn forward_deliver(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, napi: u32, buf: &mut Vec<RxPacket>) {
        crate::model::workloads::forward::forward_deliver(self, k, sched, napi, buf)
    }

    #[inline]
    fn steering(&mut self) -> Option<&mut Steering> {
        self.bulk.as_mut().and_then(|b| b.steering.as_mut())
    }

    #[inline]
    fn steering_ref(&self) -> Option<&Steering> {
        self.bulk.as_ref().and_then(|b| b.steering.as_ref())
    }

    fn component_irq_cycles(&self, id: u16) -> u64 {
        self.components[id as usize].irq_cycles()
    }

    fn component_irq_done(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, core: u32, id: u16) {
        self.component_call(k, sched, id, |c, cx| c.irq_done(cx, core));
    }

    #[inline]
    fn peer_asleep(&self, now: Nanos) -> bool {
        self.clients.thread_asleep(now)
    }

    #[inline]
    fn peer_modelled(&self) -> bool {
        self.clients.thread_modelled()
    }

    #[inline]
    fn peer_spends(&mut self, now: Nanos, ns: Nanos) {
        self.clients.spends(now, ns)
    }

}

/// The machine as KVM's code sees it (`model/vm/hypervisor.rs`).
impl Hypervisor for Machine {
    #[inline]
    fn vmm_entry(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, now: Nanos) -> u64 {
        if self.storage.is_some() {
            crate::model::vm::vmm::vmm_drain(self, k, sched, now)
        } else {
            0
        }
    }

    #[inline]
    fn vmm_halt(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, gc: u32) {
        if self.storage.is_some() {
            crate::model::vm::vmm::vmm_halt_check(self, k, sched, gc);
        }
    }

    #[inline]
    fn virtio_kicked(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, q: u32) {
        crate::model::devices::virtio_net::virtio_kicked(self, k, sched, q)
    }
}

/// The machine as virtio-net's code sees it (`model/devices/virtio_net.rs`).
impl VirtioHost for Machine {
    #[inline]
    fn virtio(&mut self) -> &mut VirtioNet {
        self.virtio.as_mut().expect("a VirtIO run has a virtio-net device")
    }

    #[inline]
    fn vhost_wake(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, q: u32) {
        crate::model::vm::vhost::vhost_wake(self, k, sched, q)
    }

    #[inline]
    fn rss_queue(&self, conn: u32) -> u32 {
        self.nic.rss_queue(conn)
    }
}

/// The machine as the storage path's code sees it (`model/workloads/storage/mod.rs`).
impl StorageHost for Machine {
    #[inline]
    fn storage(&mut self) -> &mut Storage {
        self.storage.as_mut().expect("a storage run has a storage path")
    }
}

impl From<StorageEv> for Ev {
    #[inline]
    fn from(e: StorageEv) -> Self {
        Ev::Storage(e)
    }
}

/// The machine as bulk TCP's code sees it (`model/workloads/bulk.rs`).
impl BulkHost for Machine {
    #[inline]
    fn bulk(&mut self) -> &mut Bulk {
        self.bulk.as_mut().expect("a bulk run has its streams")
    }
}

impl From<ReplyOnWire> for Ev {
    /// A reply on the wire reaches its client.
    #[inline]
    fn from(r: ReplyOnWire) -> Self {
        Ev::Client(ClientEv::ReplyArrive { conn: r.conn, sent_ns: r.sent_ns })
    }
}

impl From<ClientEv> for Ev {
    #[inline]
    fn from(e: ClientEv) -> Self {
        Ev::Client(e)
    }
}

impl From<TcpEv> for Ev {
    #[inline]
    fn from(e: TcpEv) -> Self {
        Ev::Tcp(e)
    }
}

impl From<NicEv> for Ev {
    #[inline]
    fn from(e: NicEv) -> Self {
        Ev::Nic(e)
    }
}

impl World for Server {
    type Event = Ev;

    #[inline]
    fn handle(&mut self, sched: &mut Scheduler<Ev>, ev: Ev) {
        let Server { kernel: k, m } = self;
        match ev {
            Ev::Kernel(e) => k.kernel_event(m, sched, e),
            Ev::Nic(e) => {
                let out = m.nic.on_event(sched, e);
                m.nic_out(k, sched, out)
            }
            Ev::Client(e) => {
                let mut cx = WorkloadCx { sched, nic: &mut m.nic, run: &mut m.run };
                m.clients.on_event(&mut cx, e)
            }
            Ev::Tcp(e) => {
                let b = &mut **m.bulk.as_mut().expect("bulk workload");
                let mut cx = WorkloadCx { sched, nic: &mut m.nic, run: &mut m.run };
                b.senders.on_event(&mut cx, &b.unread, e)
            }
            Ev::Storage(e) => m.storage_event(k, sched, e),
            Ev::WarmupEnd => m.warmup_end(k, sched),
            Ev::Component { id, ev } => m.component_call(k, sched, id, |c, cx| c.on_event(cx, ev)),
        }
    }
}

/// Accounting helper for the summary (kept here: it only reshapes numbers).
pub fn pct_of(a: &[Nanos; CLASSES]) -> CpuPct {
    let total: Nanos = a.iter().sum();
    let p = |i: usize| if total > 0 { 100.0 * a[i] as f64 / total as f64 } else { 0.0 };
    CpuPct {
        user: p(CpuClass::User as usize),
        system: p(CpuClass::System as usize),
        softirq: p(CpuClass::Softirq as usize),
        irq: p(CpuClass::Irq as usize),
        idle: p(CpuClass::Idle as usize),
        guest: p(CpuClass::Guest as usize),
        steal: p(CpuClass::Steal as usize),
    }
}
#[cfg(test)]
mod tests {
    /// The engine's queue moves every event several times (into a slot, a
    /// lane or a core's slot, then out): a component's sub-enum that grew
    /// `Ev` past the NIC's packet arrival (a 32-byte packet and its queue)
    /// would cost every event, not only its own.
    #[test]
    fn an_event_is_no_bigger_than_a_packet_arrival() {
        assert_eq!(std::mem::size_of::<super::Ev>(), 40);
    }
}
