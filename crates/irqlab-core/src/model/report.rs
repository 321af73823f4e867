//! What a run reports (`Summary`): the machine's counters and every
//! kernel's CPU accounting over the measured window, with the sentences a
//! reader needs to read it right.

use crate::model::kernel::cpu::CpuClass;
use crate::model::kernel::{CoreRole, Kernel, HOST};
use crate::model::devices::nic::{Cq, QueuePair};
use crate::engine::{Nanos, Scheduler};
use crate::scenario::VmKind;
use crate::stats::cycles::CycleTable;
use crate::stats::dim_profiles;
use crate::stats::summary::{DimReport, Summary, VmReport};
pub use crate::model::run::{Counters, DropSite, RunStats};
use crate::model::event::Ev;
use crate::model::machine::Machine;

impl Machine {
    pub(crate) fn summary(&mut self, k: &mut Kernel, sched: &mut Scheduler<Ev>, wall_s: f64) -> Summary {
        let now = sched.now();
        let dur_s = self.cfg.run.duration_s;
        let vm = self.vm_report(k, now);
        // The application's cores, as the kernels that run them (every VM's)
        // see them.
        let mut app_tab = CycleTable::default();
        let mut irq_tab = CycleTable::default();
        let mut ctx_switches = 0u64;
        let mut disruption_cycles = 0u64;
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
                        disruption_cycles += c.disruption_cycles;
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
        // Instructions: the warm cycles at the warm CPI (`kernel/disruption.rs`).
        let instructions = k
            .disruption
            .as_ref()
            .map(|d| (busy_cycles - disruption_cycles as f64).max(0.0) / d.cpi_warm);
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
            ipc: instructions.map(|i| ratio(i, busy_cycles)),
            idle_states: self.idle_states_report(k, now),
            instructions_per_query: instructions.map(|i| ratio(i, completed as f64)),
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
            policy: None,
            requests_completed: completed,
            sim_time_s: now as f64 / 1e9,
            sim_events: sched.processed(),
            sim_events_passed: sched.passed(),
            wall_s,
            warnings: self.warnings(completed, drops),
        }
    }

    /// The host's idle states over the window (None with fixed wake-ups).
    fn idle_states_report(&mut self, k: &mut Kernel, now: Nanos) -> Option<Vec<crate::stats::summary::IdleStateReport>> {
        let idle = k.idle.as_mut()?;
        let cores = idle.cores.len() as f64;
        let window_ns = self.cfg.run.duration_s * 1e9 * cores;
        let table = idle.table;
        let totals = idle.totals(now);
        Some(
            table
                .iter()
                .zip(totals)
                .map(|(s, (entries, ns))| crate::stats::summary::IdleStateReport {
                    name: s.name.to_string(),
                    exit_latency_us: s.exit_latency_us,
                    target_residency_us: s.target_residency_us,
                    entries_per_s: entries as f64 / self.cfg.run.duration_s,
                    residency_pct: if window_ns > 0.0 { 100.0 * ns as f64 / window_ns } else { 0.0 },
                })
                .collect(),
        )
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
            timer_exits_per_s: per(n.timer_exits),
            halt_poll_success_pct: if n.vm_halts > 0 { 100.0 * n.halt_poll_wakeups as f64 / n.vm_halts as f64 } else { 0.0 },
            host_cpu_pct: host.pct(),
            host_irq_cores_cpu_pct: has_irq_cores.then(|| host_irq.pct()),
            tx_kicks_per_s: virtio.then(|| per(n.virtio_kicks)),
            vms: self.cfg.vm.count,
            host_cpus: k.cores.len() as u32,
            host_busy_cpus: busy_ns as f64 / 1e9 / self.cfg.run.duration_s,
            host_split_pct: host.host_split(),
            host_irq_cores_split_pct: has_irq_cores.then(|| host_irq.host_split()),
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
                 counts from {}",
                self.cfg.load.qps.unwrap_or(0.0),
                match self.cfg.load.latency_from {
                    crate::scenario::LatencyFrom::Send => "when it was sent, not from when it was due",
                    crate::scenario::LatencyFrom::Schedule => "when it was due (load.latency_from = \"schedule\")",
                }
            ));
        }
        w
    }
}
