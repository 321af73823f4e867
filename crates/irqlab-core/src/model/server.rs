//! The modelled server and the dispatch of the engine's events to the
//! components. `Server` is the active kernel (`kernel/`) and the machine
//! around it (`machine.rs`: the other kernels, the devices, the VM layer,
//! the workloads, the run's statistics); it is built from a scenario
//! (`build.rs`), runs, and reports (`report.rs`). Each component's events
//! are its own sub-enum of [`Ev`], handled by its own code: the kernel's
//! (`impl Kernel`, generic over `kernel/host.rs`), the devices', the VM
//! layer's and the workloads' (functions of the machine through the
//! traits they declare, and of the active kernel), the workloads outside
//! the machine through `workloads::WorkloadCx` (docs/architecture.md,
//! "Tiers").

use crate::model::workloads::client::Clients;
use crate::model::kernel::cpu::{CpuClass, CLASSES};
use crate::model::kernel::{Kernel, HOST};
use crate::model::devices::virtio_net::VirtioNet;
use crate::engine::time::secs_to_ns;
use crate::model::kernel::host::Host;
use crate::engine::EventQueue;
use crate::engine::{run_until, Nanos, RngStreams, Scheduler, Stopped, World};
use crate::error::Error;
use crate::scenario::Scenario;
use crate::stats::summary::{CpuPct, Summary};
use crate::model::component::{Component, ComponentId};
use crate::model::workloads::WorkloadCx;
use crate::model::workloads::storage::StorageEv;
pub use crate::model::run::{Counters, DropSite, RunStats};
pub use crate::model::machine::Machine;
pub use crate::model::event::Ev;
use crate::model::build::{self, Layout};
use crate::model::policy::{Policy, PolicyReport};
use crate::model::workloads::bulk::Bulk;
use crate::model::workloads::storage::Storage;

/// The modelled server: the active kernel, whose code runs now
/// (`model/kernel/`), and the machine around it.
pub struct Server {
    /// The active kernel: the one whose code runs now (see
    /// `model/kernel/mod.rs`).
    pub kernel: Kernel,
    pub m: Machine,
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
        let components = build::background_threads(&cfg);
        let warmup_end_ns = secs_to_ns(cfg.run.warmup_s);
        let end_ns = warmup_end_ns + secs_to_ns(cfg.run.duration_s);
        Ok(Server {
            kernel,
            m: Machine {
            freq_ghz: cfg.cpu.freq_ghz,
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
            components,
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
        self,
        interrupted: &mut dyn FnMut() -> bool,
    ) -> Result<(Summary, Vec<(Nanos, crate::model::trace::TraceEvent)>), Error> {
        self.run_with_policy(None, interrupted)
    }

    /// Run to the end as [`Server::run_checked`] does, calling `policy` (if
    /// any) once before the run starts and then at every multiple of its
    /// period (`model/policy.rs`); its report goes in `summary.policy`.
    pub fn run_with_policy(
        mut self,
        mut policy: Option<&mut (dyn Policy + '_)>,
        interrupted: &mut dyn FnMut() -> bool,
    ) -> Result<(Summary, Vec<(Nanos, crate::model::trace::TraceEvent)>), Error> {
        let wall = std::time::Instant::now();
        let mut sched = Scheduler::new();
        let Server { kernel: k, m } = &mut self;
        // A slot per host core for its segment end (engine/queue.rs).
        let host_cores = m.kernel_ref(k, HOST).cores.len();
        sched.set_owners(host_cores);
        let mut report = match policy.as_deref_mut() {
            Some(p) => Some(m.policy_start(k, p)?),
            None => None,
        };
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
        k.balance_start(&mut sched);
        k.host_preempt_start(&mut sched);
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
        // The engine may pass empty busy polls (`kernel/busy_chain.rs`)
        // where only the kernel's own hooks read a core: a bare-metal host
        // serving sockets through the NIC, nothing traced.
        k.chain_ok = m.trace.is_none()
            && m.kernels.len() <= 1
            && m.bulk.is_none()
            && m.storage.is_none()
            && m.components.is_empty()
            && k.vcpus.is_empty()
            && k.vhosts.is_empty()
            && k.device == crate::model::kernel::Device::Nic
            && k.rx_sink == crate::model::kernel::RxSink::Sockets
            && k.fair.is_none()
            && !m.cfg.napi.threaded;
        k.irq_fast = m.trace.is_none();
        // Nor does the engine hint the next core (`engine/prefetch.rs`):
        // the reference the hint's test compares with.
        if m.trace.is_some() {
            sched.stop_owner_hints();
        }
        let end = m.run.end_ns;
        let ran = self.run_stretches(&mut sched, end, policy.as_deref_mut().zip(report.as_mut()), interrupted)?;
        let Server { kernel: k, m } = &mut self;
        k.unchain_all(&mut sched);
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
        let mut summary = m.summary(k, &mut sched, wall_s);
        if let (Some(p), Some(r)) = (policy, report.as_mut()) {
            r.fields = p.fields().into_iter().collect();
        }
        summary.policy = report;
        Ok((summary, m.trace.take().map(|t| t.events).unwrap_or_default()))
    }

    /// The run to `end_ns`: in one stretch without a policy; with one, in
    /// stretches of its period, calling it between them. At a call every
    /// event due by then has been handled and the cores' passed busy polls
    /// are accounted up to it, as at the warm-up's end, so a call changes
    /// nothing it does not set. The interruption check, which [`run_until`]
    /// makes every [`crate::engine::CHECK_EVERY_EVENTS`] events of one
    /// stretch, is made here as often over all of them. Err: the policy
    /// failed.
    fn run_stretches<'p>(
        &mut self,
        sched: &mut Scheduler<Ev>,
        end_ns: Nanos,
        mut policy: Option<(&mut (dyn Policy + 'p), &mut PolicyReport)>,
        interrupted: &mut dyn FnMut() -> bool,
    ) -> Result<Result<(), Stopped>, Error> {
        let period = policy.as_ref().map_or(end_ns, |(p, _)| p.period_ns());
        let mut next = period;
        let mut checked = sched.processed();
        loop {
            let stretch_end = next.min(end_ns);
            if let Err(stop) = run_until(self, sched, stretch_end, interrupted) {
                return Ok(Err(stop));
            }
            let Some((p, report)) = policy.as_mut().filter(|_| stretch_end < end_ns) else {
                return Ok(Ok(()));
            };
            if sched.processed() - checked >= crate::engine::CHECK_EVERY_EVENTS as u64 {
                checked = sched.processed();
                if interrupted() {
                    return Ok(Err(Stopped::Interrupted { at_ns: sched.now() }));
                }
            }
            let Server { kernel: k, m } = self;
            k.unchain_all(sched);
            m.policy_call(k, sched.now(), &mut **p, report)?;
            next = next.saturating_add(period);
        }
    }
}

impl World for Server {
    type Event = Ev;

    /// What a segment end on the likely next core reads, fetched while
    /// this event is handled (`engine/prefetch.rs`; owner `i` is host core
    /// `i`).
    #[inline(always)]
    fn prefetch_owner(&self, core: usize) {
        self.kernel.prefetch_core(core as u32);
    }

    #[inline]
    fn handle(&mut self, sched: &mut Scheduler<Ev>, ev: Ev) {
        let Server { kernel: k, m } = self;
        match ev {
            Ev::Kernel(e) => k.kernel_event(m, sched, e),
            Ev::Nic(e) => {
                // An arrival, completion or timer of a queue a core busy
                // polls (`kernel/busy_chain.rs`).
                if sched.chains_running() {
                    k.unchain_queue(sched, e.queue());
                }
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
        // KVM's and vhost's time is the host's system time.
        system: {
            let ns = a[CpuClass::System as usize]
                + a[CpuClass::Exit as usize]
                + a[CpuClass::HaltPoll as usize]
                + a[CpuClass::Vhost as usize];
            if total > 0 { 100.0 * ns as f64 / total as f64 } else { 0.0 }
        },
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
