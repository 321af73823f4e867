//! Range checks. Each error is one sentence naming the field and the
//! accepted range. Fields with a fixed range are listed once, in
//! [`INT_FIELDS`] and [`FLOAT_FIELDS`], so that a type error on one of them
//! (a string where a number belongs) can state the same range
//! ([`accepted_range`]). An interrupt-handling knob's range and sentence are
//! the knob table's (`crates/irqlab-knobs`, [`Knob::out_of_range`]).

use super::config::*;
use super::vm::VmKind;
use crate::error::Error;
use irqlab_knobs::table::{self as knob, Knob};
use irqlab_policy::itr::golden_itr::MAX_MIN_EFFECT;

const MAX_CYCLES: u64 = 1_000_000_000;
const MAX_NS: u64 = 10_000_000_000;
/// Requests that may be on their way at once (closed loop: connections ×
/// depth; open loop: rate × one-way latency). Each is an event in the queue
/// and a few dozen bytes of state; a million keeps a run under ~100 MB and
/// far below the event queue's 2^24 slots, which it must never reach.
pub const MAX_IN_FLIGHT: u64 = 1_000_000;

/// A field holding a whole number with a fixed accepted range.
pub(crate) struct IntField {
    pub path: &'static str,
    get: fn(&Config) -> u64,
    pub lo: u64,
    pub hi: u64,
    /// The knob table's entry, whose range `lo`..=`hi` is and whose
    /// sentence an out-of-range value gets.
    pub knob: Option<&'static Knob>,
}

/// A field holding a real number with a fixed accepted range.
pub(crate) struct FloatField {
    pub path: &'static str,
    get: fn(&Config) -> f64,
    pub lo: f64,
    pub hi: f64,
}

macro_rules! int_field {
    ($path:literal, |$c:ident| $e:expr, $lo:expr, $hi:expr) => {
        IntField { path: $path, get: |$c: &Config| ($e) as u64, lo: $lo, hi: $hi, knob: None }
    };
}

/// A field that is a knob of the table: its path and range are the table's.
macro_rules! knob_field {
    ($knob:path, |$c:ident| $e:expr) => {
        IntField { path: $knob.path, get: |$c: &Config| ($e) as u64, lo: $knob.sim.min, hi: $knob.sim.max, knob: Some(&$knob) }
    };
}

pub(crate) const INT_FIELDS: &[IntField] = &[
    int_field!("run.seed", |c| c.run.seed, 0, i64::MAX as u64),
    int_field!("cpu.app_cores", |c| c.cpu.app_cores, 1, 1024),
    int_field!("microarch.line_bytes", |c| c.microarch.line_bytes, 16, 256),
    int_field!("microarch.l1i_bytes", |c| c.microarch.l1i_bytes, 1_024, 1 << 24),
    int_field!("microarch.l2_latency_cycles", |c| c.microarch.l2_latency_cycles, 1, 1_000),
    int_field!("microarch.flush_cycles", |c| c.microarch.flush_cycles, 0, MAX_CYCLES),
    int_field!("microarch.thread_code_bytes", |c| c.microarch.thread_code_bytes, 0, 1 << 30),
    int_field!("microarch.softirq_code_bytes", |c| c.microarch.softirq_code_bytes, 0, 1 << 30),
    int_field!("microarch.hardirq_code_bytes", |c| c.microarch.hardirq_code_bytes, 0, 1 << 30),
    int_field!("cpu.wakeup_latency_ns", |c| c.cpu.wakeup_latency_ns, 0, MAX_NS),
    int_field!("cpu.ipi_latency_ns", |c| c.cpu.ipi_latency_ns, 0, MAX_NS),
    // EEVDF's base slice is tunable from 0.1 ms (`sched_base_slice_ns` in
    // debugfs); the model needs a slice of at least 1 µs to make progress.
    int_field!("cpu.sched_base_slice_ns", |c| c.cpu.sched_base_slice_ns, 1_000, MAX_NS),
    int_field!("costs.hardirq_cycles", |c| c.costs.hardirq_cycles, 0, MAX_CYCLES),
    int_field!("costs.softirq_entry_cycles", |c| c.costs.softirq_entry_cycles, 0, MAX_CYCLES),
    int_field!("costs.napi_poll_cycles", |c| c.costs.napi_poll_cycles, 0, MAX_CYCLES),
    int_field!("costs.rx_packet_cycles", |c| c.costs.rx_packet_cycles, 0, MAX_CYCLES),
    int_field!("costs.wakeup_cycles", |c| c.costs.wakeup_cycles, 0, MAX_CYCLES),
    int_field!("costs.epoll_wait_cycles", |c| c.costs.epoll_wait_cycles, 0, MAX_CYCLES),
    int_field!("costs.epoll_event_cycles", |c| c.costs.epoll_event_cycles, 0, MAX_CYCLES),
    int_field!("costs.recv_cycles", |c| c.costs.recv_cycles, 0, MAX_CYCLES),
    int_field!("costs.send_cycles", |c| c.costs.send_cycles, 0, MAX_CYCLES),
    int_field!("costs.recv_cycles_per_request", |c| c.costs.recv_cycles_per_request, 0, MAX_CYCLES),
    int_field!("costs.send_cycles_per_64b", |c| c.costs.send_cycles_per_64b, 0, MAX_CYCLES),
    int_field!("costs.context_switch_cycles", |c| c.costs.context_switch_cycles, 0, MAX_CYCLES),
    int_field!("costs.interrupt_penalty_cycles", |c| c.costs.interrupt_penalty_cycles, 0, MAX_CYCLES),
    int_field!("costs.irq_cold_cycles", |c| c.costs.irq_cold_cycles, 0, MAX_CYCLES),
    int_field!("costs.timer_irq_cycles", |c| c.costs.timer_irq_cycles, 0, MAX_CYCLES),
    int_field!("costs.tx_clean_cycles", |c| c.costs.tx_clean_cycles, 0, MAX_CYCLES),
    int_field!("costs.busy_poll_iteration_cycles", |c| c.costs.busy_poll_iteration_cycles, 0, MAX_CYCLES),
    int_field!("costs.forward_packet_cycles", |c| c.costs.forward_packet_cycles, 0, MAX_CYCLES),
    int_field!("costs.rx_frame_cycles", |c| c.costs.rx_frame_cycles, 0, MAX_CYCLES),
    int_field!("costs.rx_page_alloc_cycles", |c| c.costs.rx_page_alloc_cycles, 0, MAX_CYCLES),
    int_field!("costs.gro_skb_cycles", |c| c.costs.gro_skb_cycles, 0, MAX_CYCLES),
    int_field!("costs.steer_skb_cycles", |c| c.costs.steer_skb_cycles, 0, MAX_CYCLES),
    int_field!("costs.ipi_send_cycles", |c| c.costs.ipi_send_cycles, 0, MAX_CYCLES),
    int_field!("costs.ipi_irq_cycles", |c| c.costs.ipi_irq_cycles, 0, MAX_CYCLES),
    int_field!("costs.tcp_skb_cycles", |c| c.costs.tcp_skb_cycles, 0, MAX_CYCLES),
    int_field!("costs.copy_cycles_per_kib", |c| c.costs.copy_cycles_per_kib, 0, MAX_CYCLES),
    int_field!("nic.queues", |c| c.nic.queues, 0, 1024),
    int_field!("nic.rx-ring-size", |c| c.nic.rx_ring_size, 1, 65_536),
    int_field!("nic.tx-ring-size", |c| c.nic.tx_ring_size, 1, 65_536),
    int_field!("nic.txqueuelen", |c| c.nic.txqueuelen, 1, 1_000_000),
    int_field!("nic.wire_latency_ns", |c| c.nic.wire_latency_ns, 0, MAX_NS),
    int_field!("nic.dma_latency_ns", |c| c.nic.dma_latency_ns, 0, MAX_NS),
    // Up to 1 GiB: far above any NIC's on-chip buffer (the 82599's is 512 KiB).
    int_field!("nic.rx_packet_buffer_bytes", |c| c.nic.rx_packet_buffer_bytes, 0, 1 << 30),
    knob_field!(knob::RX_USECS, |c| c.coalesce.rx_usecs),
    knob_field!(knob::RX_FRAMES, |c| c.coalesce.rx_frames),
    // The TX side has mlx5's RX limits (the same CQ moderation fields).
    int_field!("coalesce.tx-usecs", |c| c.coalesce.tx_usecs, 0, knob::RX_USECS.sim.max),
    int_field!("coalesce.tx-frames", |c| c.coalesce.tx_frames, 0, knob::RX_FRAMES.sim.max),
    knob_field!(knob::DEFER_HARD_IRQS, |c| c.napi.napi_defer_hard_irqs),
    knob_field!(knob::GRO_FLUSH_TIMEOUT, |c| c.napi.gro_flush_timeout),
    knob_field!(knob::IRQ_SUSPEND_TIMEOUT, |c| c.napi.irq_suspend_timeout),
    int_field!("napi.weight", |c| c.napi.weight, 1, 1024),
    int_field!("napi.netdev_budget", |c| c.napi.netdev_budget, 1, 1_000_000),
    int_field!("napi.netdev_budget_usecs", |c| c.napi.netdev_budget_usecs, 1, 1_000_000),
    int_field!("napi.max_softirq_restart", |c| c.napi.max_softirq_restart, 1, 1000),
    // The kernel clamps SO_RCVBUF to [SOCK_MIN_RCVBUF, rmem_max]; 2 KiB is
    // about SOCK_MIN_RCVBUF, 2 GiB the int it is stored in.
    int_field!("socket.rcvbuf_bytes", |c| c.socket.rcvbuf_bytes, 2_048, i32::MAX as u64),
    knob_field!(knob::BUSY_POLL_USECS, |c| c.epoll.busy_poll_usecs),
    // EPIOCSPARAMS refuses budgets above NAPI_POLL_WEIGHT without
    // CAP_NET_ADMIN; the model allows the kernel's u16 range.
    knob_field!(knob::BUSY_POLL_BUDGET, |c| c.epoll.busy_poll_budget),
    int_field!("epoll.maxevents", |c| c.epoll.maxevents, 1, 1 << 20),
    int_field!("app.service_cycles_per_64b", |c| c.app.service_cycles_per_64b, 0, MAX_CYCLES),
    int_field!("load.clients", |c| c.load.clients, 1, 10_000),
    int_field!("load.threads_per_client", |c| c.load.threads_per_client, 1, 10_000),
    int_field!("load.connections_per_thread", |c| c.load.connections_per_thread, 1, 100_000),
    int_field!("load.connections", |c| c.load.connections(), 1, MAX_CONNECTIONS),
    int_field!("load.depth", |c| c.load.depth, 1, 1024),
    int_field!("load.think_time_ns", |c| c.load.think_time_ns, 0, MAX_NS),
    int_field!("load.client_ns_per_request", |c| c.load.client_ns_per_request, 0, MAX_NS),
    int_field!("load.client_timer_lag_ns", |c| c.load.client_timer_lag_ns, 0, MAX_NS),
    int_field!("app.background_wakeup_cycles", |c| c.app.background_wakeup_cycles, 0, MAX_CYCLES),
    int_field!("costs.peer_rx_cycles", |c| c.costs.peer_rx_cycles, 0, MAX_CYCLES),
    int_field!("costs.remote_wake_cycles", |c| c.costs.remote_wake_cycles, 0, MAX_CYCLES),
    int_field!("costs.idle_exit_cycles", |c| c.costs.idle_exit_cycles, 0, MAX_CYCLES),
    int_field!("load.retransmit_timeout_ns", |c| c.load.retransmit_timeout_ns, 1_000, MAX_NS),
    // A minimum-size Ethernet frame without FCS up to a 9000-byte jumbo frame.
    int_field!("load.frame_bytes", |c| c.load.frame_bytes, 60, 9_014),
    // The policies' rates have the static rate's range (the table's
    // `itr.rate`: ixgbe's, from the lowest rate whose interval fits EITR).
    knob_field!(knob::ITR_RATE, |c| c.itr.rate),
    int_field!("itr.max_rate", |c| c.itr.max_rate, knob::ITR_RATE.sim.min, knob::ITR_RATE.sim.max),
    int_field!("itr.min_rate", |c| c.itr.min_rate, knob::ITR_RATE.sim.min, knob::ITR_RATE.sim.max),
    int_field!("itr.rho_max_pps", |c| c.itr.rho_max_pps, 1_000, 1_000_000_000),
    int_field!("itr.min_update_ns", |c| c.itr.min_update_ns, 0, MAX_NS),
    int_field!("itr.accept_rate", |c| c.itr.accept_rate, 1, knob::ITR_RATE.sim.max),
    int_field!("itr.slice_us", |c| c.itr.slice_us, 1, 10_000_000),
    int_field!("itr.restart_irqs", |c| c.itr.restart_irqs, 1, 1_000_000_000),
    // The kernel's sysctl takes an int; a million packets per core is far
    // beyond any buffer a real host configures.
    int_field!("steering.netdev_max_backlog", |c| c.steering.netdev_max_backlog, 1, 1_000_000),
    // The kernel rounds both tables up to a power of two and caps them at 2^29 and 2^27.
    int_field!("steering.rps_sock_flow_entries", |c| c.steering.rps_sock_flow_entries, 1, 1 << 24),
    int_field!("steering.rps_flow_cnt", |c| c.steering.rps_flow_cnt, 1, 1 << 24),
    int_field!("steering.iaps_flow_slots", |c| c.steering.iaps_flow_slots, 1, 1 << 24),
    int_field!("storage.oio", |c| c.storage.oio, 0, 1024),
    int_field!("storage.background_threads", |c| c.storage.background_threads, 0, 1024),
    int_field!("storage.target_latency_us", |c| c.storage.target_latency_us, 0, 10_000_000),
    // A sector up to 1 MiB (the LSI Logic adapter's largest transfer is smaller still).
    int_field!("storage.block_bytes", |c| c.storage.block_bytes, 512, 1 << 20),
    int_field!("storage.array_service_ns", |c| c.storage.array_service_ns, 0, MAX_NS),
    int_field!("storage.array_latency_ns", |c| c.storage.array_latency_ns, 0, MAX_NS),
    int_field!("storage.guest_timer_hz", |c| c.storage.guest_timer_hz, 0, 10_000),
    int_field!("storage.guest_issue_cycles", |c| c.storage.guest_issue_cycles, 0, MAX_CYCLES),
    int_field!("storage.guest_complete_cycles", |c| c.storage.guest_complete_cycles, 0, MAX_CYCLES),
    int_field!("storage.guest_isr_cycles", |c| c.storage.guest_isr_cycles, 0, MAX_CYCLES),
    int_field!("storage.issue_trap_cycles", |c| c.storage.issue_trap_cycles, 0, MAX_CYCLES),
    int_field!("storage.ack_trap_cycles", |c| c.storage.ack_trap_cycles, 0, MAX_CYCLES),
    int_field!("storage.vmm_complete_cycles", |c| c.storage.vmm_complete_cycles, 0, MAX_CYCLES),
    int_field!("storage.vmm_intr_cycles", |c| c.storage.vmm_intr_cycles, 0, MAX_CYCLES),
    int_field!("storage.hba_irq_cycles", |c| c.storage.hba_irq_cycles, 0, MAX_CYCLES),
    int_field!("storage.vmk_complete_cycles", |c| c.storage.vmk_complete_cycles, 0, MAX_CYCLES),
    // Algorithm 1 computes skipUp = CIF / (2 cifThreshold) in 32 bits.
    int_field!("vic.cif_threshold", |c| c.vic.cif_threshold, 1, 1 << 20),
    int_field!("vic.iops_threshold", |c| c.vic.iops_threshold, 0, 1_000_000_000),
    int_field!("vic.epoch_ms", |c| c.vic.epoch_ms, 1, 60_000),
    int_field!("vic.ipi_threshold_us", |c| c.vic.ipi_threshold_us, 0, 1_000_000),
    int_field!("oltp.users", |c| c.oltp.users, 1, 100_000),
    int_field!("oltp.compute_cycles", |c| c.oltp.compute_cycles, 0, MAX_CYCLES),
    int_field!("oltp.reads_per_txn", |c| c.oltp.reads_per_txn, 1, 1024),
    int_field!("oltp.checkpoint_interval_ms", |c| c.oltp.checkpoint_interval_ms, 0, 3_600_000),
    int_field!("oltp.checkpoint_writes", |c| c.oltp.checkpoint_writes, 0, 10_000_000),
    int_field!("oltp.checkpoint_depth", |c| c.oltp.checkpoint_depth, 1, 1024),
    int_field!("bulk.streams", |c| c.bulk.streams, 0, 1024),
    // From the IPv4 minimum MSS to a 9000-byte jumbo frame's payload.
    int_field!("bulk.mss_bytes", |c| c.bulk.mss_bytes, 536, 8_948),
    int_field!("bulk.tso_max_segments", |c| c.bulk.tso_max_segments, 1, 1024),
    int_field!("bulk.sender_queues", |c| c.bulk.sender_queues, 1, 1024),
    // Up to BIG TCP's 512 KiB.
    int_field!("bulk.gro_max_bytes", |c| c.bulk.gro_max_bytes, 536, 524_288),
    int_field!("bulk.read_bytes", |c| c.bulk.read_bytes, 1, 1 << 26),
    int_field!("bulk.rcvbuf_bytes", |c| c.bulk.rcvbuf_bytes, 2_048, i32::MAX as u64),
    int_field!("bulk.initial_cwnd", |c| c.bulk.initial_cwnd, 1, 10_000),
    int_field!("vm.vcpus", |c| c.vm.vcpus, 0, 1024),
    int_field!("vm.count", |c| c.vm.count, 1, 64),
    int_field!("vm.host_cpus", |c| c.vm.host_cpus, 0, 4096),
    int_field!("vm.exit_entry_cycles", |c| c.vm.exit_entry_cycles, 0, MAX_CYCLES),
    int_field!("vm.exit_code_bytes", |c| c.vm.exit_code_bytes, 0, 1 << 30),
    int_field!("vm.vfio_irq_cycles", |c| c.vm.vfio_irq_cycles, 0, MAX_CYCLES),
    int_field!("vm.ipi_cycles", |c| c.vm.ipi_cycles, 0, MAX_CYCLES),
    int_field!("vm.halt_poll_ns", |c| c.vm.halt_poll_ns, 0, MAX_NS),
    // kvm_main.c takes these as unsigned ints; a grow of 0 or 1 never grows.
    int_field!("vm.halt_poll_ns_grow", |c| c.vm.halt_poll_ns_grow, 0, 1024),
    int_field!("vm.halt_poll_ns_grow_start", |c| c.vm.halt_poll_ns_grow_start, 0, MAX_NS),
    int_field!("vm.halt_poll_ns_shrink", |c| c.vm.halt_poll_ns_shrink, 0, 1024),
    int_field!("vm.iommu_latency_ns", |c| c.vm.iommu_latency_ns, 0, MAX_NS),
    int_field!("vm.eswitch_latency_ns", |c| c.vm.eswitch_latency_ns, 0, MAX_NS),
    int_field!("vm.guest_queues", |c| c.vm.guest_queues, 0, 1024),
    int_field!("vm.virtqueue_size", |c| c.vm.virtqueue_size, 1, 32_768),
    int_field!("vm.tap_queue_len", |c| c.vm.tap_queue_len, 1, 1_000_000),
    int_field!("vm.vhost_poll_us", |c| c.vm.vhost_poll_us, 0, 1_000_000),
    int_field!("vm.vhost_packet_cycles", |c| c.vm.vhost_packet_cycles, 0, MAX_CYCLES),
    int_field!("vm.vhost_batch_cycles", |c| c.vm.vhost_batch_cycles, 0, MAX_CYCLES),
    int_field!("vm.kick_cycles", |c| c.vm.kick_cycles, 0, MAX_CYCLES),
];

pub(crate) const FLOAT_FIELDS: &[FloatField] = &[
    FloatField { path: "run.duration_s", get: |c| c.run.duration_s, lo: 1e-6, hi: 3600.0 },
    FloatField { path: "run.warmup_s", get: |c| c.run.warmup_s, lo: 0.0, hi: 3600.0 },
    FloatField { path: "cpu.freq_ghz", get: |c| c.cpu.freq_ghz, lo: 0.1, hi: 10.0 },
    FloatField { path: "cpu.host_preempt_per_s", get: |c| c.cpu.host_preempt_per_s, lo: 0.0, hi: 10_000.0 },
    FloatField { path: "cpu.host_halted_late_per_s", get: |c| c.cpu.host_halted_late_per_s, lo: 0.0, hi: 10_000.0 },
    FloatField { path: "app.background_wakeups_per_s", get: |c| c.app.background_wakeups_per_s, lo: 0.0, hi: 1_000_000.0 },
    FloatField { path: "microarch.cpi_warm", get: |c| c.microarch.cpi_warm, lo: 0.1, hi: 10.0 },
    FloatField { path: "microarch.costs_cpi", get: |c| c.microarch.costs_cpi, lo: 0.1, hi: 10.0 },
    FloatField { path: "microarch.instructions_scale", get: |c| c.microarch.instructions_scale, lo: 0.01, hi: 100.0 },
    FloatField { path: "load.qps", get: |c| c.load.qps.unwrap_or(1.0), lo: 1.0, hi: 1e9 },
    FloatField { path: "load.get_fraction", get: |c| c.load.get_fraction, lo: 0.0, hi: 1.0 },
    FloatField { path: "bulk.link_gbps", get: |c| c.bulk.link_gbps, lo: 0.01, hi: 1000.0 },
    FloatField { path: "bulk.beta", get: |c| c.bulk.beta, lo: 0.1, hi: 0.95 },
    // From 1 MB/s to a 128GFC link's ~13 GB/s and beyond.
    FloatField { path: "storage.link_mb_per_s", get: |c| c.storage.link_mb_per_s, lo: 1.0, hi: 100_000.0 },
];

/// Fields holding one of a few names.
const NAME_FIELDS: &[(&str, &str)] = &[
    ("nic.irq_routing", "\"aligned\" or \"packed\""),
    ("load.interarrival", "\"exponential\", \"fb_ia\" or \"constant\""),
    ("load.open_loop_backlog", "\"client\" or \"server\""),
    ("load.latency_from", "\"send\" or \"schedule\""),
    ("vm.kind", "\"none\", \"passthrough\", \"sriov\", \"virtio\" or \"lsilogic\""),
    ("nic.kind", "\"connectx-4\" or \"82599\""),
    ("itr.policy", "\"off\", \"static\", \"ixgbe\", \"linear\" or \"golden-section\""),
    ("itr.set_with", "\"module-parameter\" or \"ethtool\""),
    ("cpu.idle_states", "\"fixed\", \"ivb\", \"snb\" or \"hsw\""),
    ("cpu.task_placement", "\"pinned\" or \"fair\""),
    ("nic.rx_buffer_reuse", "\"always\" or \"split-page\""),
    ("app.kind", "\"memcached\", \"forwarding\", \"bulk\", \"iometer\" or \"oltp\""),
    ("storage.array_service", "\"fixed\" or \"exponential\""),
    ("storage.guest_dispatcher", "\"pinned\" or \"windows-2003\""),
    ("steering.scheme", "\"none\", \"rss\", \"rps\", \"rfs\" or \"iaps\""),
];

/// The accepted range of a field with a fixed one, in words ("a whole
/// number from 1 to 1024"), for messages about a value of the wrong type.
pub(crate) fn accepted_range(path: &str) -> Option<String> {
    if let Some((_, names)) = NAME_FIELDS.iter().find(|(p, _)| *p == path) {
        return Some(names.to_string());
    }
    if let Some(f) = INT_FIELDS.iter().find(|f| f.path == path) {
        return Some(match f.knob {
            Some(k) => k.accepted(),
            None => format!("a whole number from {} to {}", f.lo, f.hi),
        });
    }
    FLOAT_FIELDS.iter().find(|f| f.path == path).map(|f| format!("a number from {} to {}", f.lo, f.hi))
}

fn int_range(field: &str, v: u64, lo: u64, hi: u64) -> Result<(), Error> {
    if v < lo || v > hi {
        return Err(Error::field(field, format!("must be between {lo} and {hi} (got {v})")));
    }
    Ok(())
}

fn float_range(field: &str, v: f64, lo: f64, hi: f64) -> Result<(), Error> {
    if !v.is_finite() || v < lo || v > hi {
        return Err(Error::field(field, format!("must be between {lo} and {hi} (got {v})")));
    }
    Ok(())
}

pub(crate) fn validate(c: &Config) -> Result<(), Error> {
    for f in FLOAT_FIELDS {
        float_range(f.path, (f.get)(c), f.lo, f.hi)?;
    }
    for f in INT_FIELDS {
        let v = (f.get)(c);
        match f.knob {
            Some(k) if !k.sim.contains(v) => return Err(Error::field(f.path, k.out_of_range(v))),
            Some(_) => {}
            None => int_range(f.path, v, f.lo, f.hi)?,
        }
    }

    if c.microarch.ipc_model == super::microarch::IpcModel::Disruption
        && c.microarch.thread_code_bytes == 0
        && c.microarch.softirq_code_bytes == 0
        && c.microarch.hardirq_code_bytes == 0
    {
        return Err(Error::field(
            "microarch.thread_code_bytes",
            "must be given (with softirq_code_bytes and hardirq_code_bytes) when microarch.ipc_model is \"disruption\": \
             they have no default (the thesis's fit is in scenarios/thesis/bare-metal.toml's [microarch])",
        ));
    }

    // Fixed costs are cycles, not instructions: a scale or a CPI would be
    // silently ignored.
    if c.microarch.ipc_model == super::microarch::IpcModel::Fixed {
        let d = super::microarch::MicroarchCfg::default();
        for (path, v, dv) in [
            ("microarch.costs_cpi", c.microarch.costs_cpi, d.costs_cpi),
            ("microarch.instructions_scale", c.microarch.instructions_scale, d.instructions_scale),
        ] {
            if v != dv {
                return Err(Error::field(path, format!(
                    "applies only when microarch.ipc_model is \"disruption\" (got {v} under \"fixed\", whose costs are cycles)"
                )));
            }
        }
    }

    let k = &c.costs;
    // A spinning busy-poll loop must take time, or simulated time would
    // never advance.
    if k.busy_poll_iteration_cycles == 0 && c.epoll.busy_poll_usecs > 0 {
        return Err(Error::field(
            "costs.busy_poll_iteration_cycles",
            "must be at least 1 when epoll.busy_poll_usecs is above 0",
        ));
    }
    if k.epoll_wait_cycles == 0 && !c.epoll.blocking {
        return Err(Error::field(
            "costs.epoll_wait_cycles",
            "must be at least 1 when epoll.blocking is false, or a non-blocking loop would spin in zero time",
        ));
    }

    if c.nic.irq_routing == IrqRouting::Packed {
        int_range("nic.irq_cores", c.nic.irq_cores as u64, 1, 1024)?;
    }
    // Threaded NAPI and the peer's receive on the server core are the veth
    // testbed's: a memcached server on bare metal.
    if c.napi.threaded && (c.app.kind != AppKind::Memcached || c.vm.kind != VmKind::None) {
        return Err(Error::field(
            "napi.threaded",
            "must be false unless app.kind is \"memcached\" and vm.kind is \"none\" (threaded NAPI is modelled for a bare-metal memcached server)",
        ));
    }
    if c.cpu.task_placement == super::TaskPlacement::Fair && (c.app.kind != AppKind::Bulk || c.vm.kind != VmKind::None) {
        return Err(Error::field(
            "cpu.task_placement",
            "must be \"pinned\" unless app.kind is \"bulk\" and vm.kind is \"none\" (the fair class's wake-up placement is modelled for a bare-metal bulk receiver's readers)",
        ));
    }
    if c.nic.rx_buffer_reuse == super::RxBufferReuse::SplitPage && c.app.kind != AppKind::Bulk {
        return Err(Error::field(
            "nic.rx_buffer_reuse",
            "must be \"always\" unless app.kind is \"bulk\" (when the stack frees a frame is modelled for a bulk receiver's streams)",
        ));
    }
    if c.costs.peer_rx_cycles > 0 && (c.app.kind != AppKind::Memcached || c.vm.kind != VmKind::None) {
        return Err(Error::field(
            "costs.peer_rx_cycles",
            "must be 0 unless app.kind is \"memcached\" and vm.kind is \"none\" (the peer's receive on the sending core is modelled for a bare-metal memcached server)",
        ));
    }
    if c.load.client_ns_per_request > 0 && c.app.kind != AppKind::Memcached {
        return Err(Error::field(
            "load.client_ns_per_request",
            "must be 0 unless app.kind is \"memcached\" (the request-reply clients are memcached's)",
        ));
    }
    if c.app.background_wakeups_per_s > 0.0 && (c.app.kind != AppKind::Memcached || c.vm.kind != crate::scenario::VmKind::None) {
        return Err(Error::field(
            "app.background_wakeups_per_s",
            "must be 0 unless app.kind is \"memcached\" and vm.kind is \"none\" (the background thread is a bare-metal memcached's)",
        ));
    }
    for (rate, per_s, q, lengths) in [
        (c.cpu.host_preempt_per_s, "cpu.host_preempt_per_s", &c.cpu.host_preempt_ns, "cpu.host_preempt_ns"),
        (c.cpu.host_halted_late_per_s, "cpu.host_halted_late_per_s", &c.cpu.host_halted_late_ns, "cpu.host_halted_late_ns"),
    ] {
        if rate <= 0.0 {
            continue;
        }
        if q.is_empty() || q.len() > 101 || q.iter().any(|&ns| ns > 1_000_000_000) || q.windows(2).any(|w| w[0] > w[1]) {
            return Err(Error::field(
                lengths,
                &format!("must list 1 to 101 lengths of at most 1 s (1000000000 ns), in increasing order, when {per_s} is above 0"),
            ));
        }
        if c.vm.kind != crate::scenario::VmKind::None {
            return Err(Error::field(
                per_s,
                "must be 0 unless vm.kind is \"none\" (a guest's vCPUs are the host model's own threads)",
            ));
        }
    }
    if c.load.client_timer_lag_ns > 0 && c.load.client_ns_per_request == 0 {
        return Err(Error::field(
            "load.client_timer_lag_ns",
            "must be 0 unless load.client_ns_per_request is above 0 (only a modelled load-generator thread sleeps until an open loop's next send)",
        ));
    }
    // The bulk receiver may leave cores without a queue (the IAPS paper's
    // software schemes: one queue, eight cores).
    let fewer_queues_ok = c.app.kind == AppKind::Bulk && c.queues() <= c.cpu.app_cores;
    if c.nic.irq_routing == IrqRouting::Aligned && c.queues() != c.cpu.app_cores && !fewer_queues_ok {
        return Err(Error::field(
            "nic.queues",
            format!(
                "must equal cpu.app_cores ({}) or be 0 with irq_routing = \"aligned\" (got {})",
                c.cpu.app_cores, c.nic.queues
            ),
        ));
    }

    if c.vm.is_guest() {
        if c.vcpus() < c.cpu.app_cores {
            return Err(Error::field(
                "vm.vcpus",
                format!("must be at least cpu.app_cores ({}) or 0 (got {})", c.cpu.app_cores, c.vm.vcpus),
            ));
        }
        if c.vm.count > 1 && c.vm.kind != VmKind::Sriov {
            return Err(Error::field(
                "vm.count",
                format!(
                    "must be 1 unless vm.kind is \"sriov\": only virtual functions give several VMs their own \
                     queues (got {})",
                    c.vm.count
                ),
            ));
        }
        if c.vm.count > 1 && c.app.kind != AppKind::Bulk {
            return Err(Error::field(
                "vm.count",
                "must be 1 unless app.kind is \"bulk\" (several VMs each receive their own streams)",
            ));
        }
        if c.vm.host_cpus > 0 && !matches!(c.vm.kind, VmKind::Passthrough | VmKind::Sriov) {
            return Err(Error::field(
                "vm.host_cpus",
                "must be 0 unless vm.kind is \"passthrough\" or \"sriov\" (the VirtIO and storage hosts place their own cores)",
            ));
        }
        if c.nic.irq_routing == IrqRouting::Packed && c.vm.kind != VmKind::Virtio {
            return Err(Error::field(
                "nic.irq_routing",
                "must be \"aligned\" when vm.kind is \"passthrough\" or \"sriov\": the guest's driver takes \
                 its queues' interrupts on its application vCPUs",
            ));
        }
        if c.vm.kind == VmKind::Virtio {
            if super::Profile::by_name(&c.vm.host_nic_coalescing).is_err() {
                let names: Vec<&str> = super::Profile::ALL.iter().map(|p| p.name()).collect();
                return Err(Error::field(
                    "vm.host_nic_coalescing",
                    format!("must name a profile ({}), got {:?}", names.join(", "), c.vm.host_nic_coalescing),
                ));
            }
            if c.vm.guest_queues > c.vcpus() {
                return Err(Error::field(
                    "vm.guest_queues",
                    format!("must be at most the vCPUs ({}) or 0 (got {})", c.vcpus(), c.vm.guest_queues),
                ));
            }
            let host_cores = c.vcpus() + if c.nic.irq_routing == IrqRouting::Packed { c.nic.irq_cores } else { 0 };
            if let Some(core) = c.vm.vhost_core {
                if core >= host_cores {
                    return Err(Error::field(
                        "vm.vhost_core",
                        format!("must name a host core from 0 to {} (got {core})", host_cores - 1),
                    ));
                }
            }
        }
    }

    if ![100, 250, 300, 1000].contains(&c.napi.hz) {
        return Err(Error::field("napi.hz", format!("must be 100, 250, 300 or 1000 (got {})", c.napi.hz)));
    }
    itr(c)?;
    idle_states(c)?;
    forwarding(c)?;
    bulk(c)?;
    steering(c)?;
    storage(c)?;

    match c.app.service {
        ServiceDist::Fixed { cycles } => int_range("app.service.cycles", cycles, 0, MAX_CYCLES)?,
        ServiceDist::Exponential { mean_cycles } => {
            int_range("app.service.mean_cycles", mean_cycles, 1, MAX_CYCLES)?
        }
        ServiceDist::Uniform { min_cycles, max_cycles } => {
            int_range("app.service.min_cycles", min_cycles, 0, MAX_CYCLES)?;
            int_range("app.service.max_cycles", max_cycles, min_cycles, MAX_CYCLES)?;
        }
    }

    let l = &c.load;
    for (name, s) in [("load.key_size", l.key_size), ("load.value_size", l.value_size)] {
        if let SizeCfg::Fixed { bytes } = s {
            int_range(&format!("{name}.bytes"), bytes as u64, 1, 1 << 20)?;
        }
    }
    in_flight(c)?;
    progress(c)?;
    Ok(())
}

/// The keys of `load.key_size` and `load.value_size` in the scenario's
/// table before it is typed: serde ignores unknown keys beside the tag of a
/// unit variant (`dist = "etc"`) despite `deny_unknown_fields`, so they are
/// refused here (issue 62, item 12), in the words of the typed check.
pub(crate) fn size_tables(table: &toml::Table) -> Result<(), Error> {
    let Some(load) = table.get("load").and_then(|l| l.as_table()) else {
        return Ok(());
    };
    for name in ["key_size", "value_size"] {
        let Some(size) = load.get(name).and_then(|s| s.as_table()) else {
            continue;
        };
        if size.get("dist").and_then(|d| d.as_str()) != Some("etc") {
            continue; // `fixed` is checked by serde, anything else refused by it
        }
        if let Some(key) = size.keys().find(|k| k.as_str() != "dist") {
            let what = if key == "bytes" { "applies to dist = \"fixed\" only" } else { "is not a field" };
            return Err(Error::field(
                &format!("load.{name}.{key}"),
                format!(
                    "{what}: with dist = \"etc\" the sizes are mutilate's ETC distribution and the table takes \
                     dist only (or give dist = \"fixed\" with bytes = 1 to 1048576)"
                ),
            ));
        }
    }
    Ok(())
}

/// With an idle-state table the exit latency is the chosen state's, so a
/// fixed `cpu.wakeup_latency_ns` other than its default would be ignored:
/// it is refused instead.
fn idle_states(c: &Config) -> Result<(), Error> {
    let default = super::CpuCfg::default().wakeup_latency_ns;
    if c.cpu.idle_states != super::IdleStatesKind::Fixed && c.cpu.wakeup_latency_ns != default {
        return Err(Error::field(
            "cpu.wakeup_latency_ns",
            format!(
                "applies to cpu.idle_states = \"fixed\" only; with an idle-state table each wake-up pays its state's exit latency (leave it at {default}, got {})",
                c.cpu.wakeup_latency_ns
            ),
        ));
    }
    Ok(())
}

/// `[itr]` describes the 82599's throttling: it is refused on another NIC
/// rather than silently ignored.
fn itr(c: &Config) -> Result<(), Error> {
    // Checked whatever the policy (issue 62, item 12): only `golden-section`
    // reads it, but a NaN or a negative minimum is a mistake under any.
    if let Some(m) = c.itr.min_effect {
        if !(0.0..=MAX_MIN_EFFECT).contains(&m) {
            return Err(Error::field(
                "itr.min_effect",
                format!("must be a number from 0 to {MAX_MIN_EFFECT}, the fraction of the dynamic ITR's throughput a search's answer must beat it by (got {m})"),
            ));
        }
    }
    if c.nic.kind != super::itr::NicKind::I82599 {
        if c.itr != super::itr::ItrCfg::default() {
            return Err(Error::field(
                "itr",
                "applies to nic.kind = \"82599\" only (the ConnectX-4's moderation is set in [coalesce])",
            ));
        }
        return Ok(());
    }
    if c.itr.min_rate >= c.itr.max_rate {
        return Err(Error::field(
            "itr.min_rate",
            format!("must be below itr.max_rate ({}) (got {})", c.itr.max_rate, c.itr.min_rate),
        ));
    }
    if c.vm.is_guest() && !matches!(c.vm.kind, VmKind::Passthrough | VmKind::Sriov) {
        return Err(Error::field(
            "nic.kind",
            "must be \"connectx-4\" when vm.kind is \"virtio\" or \"lsilogic\" (an 82599 is assigned to guests \
             with \"passthrough\" or \"sriov\")",
        ));
    }
    // The policy's own check, behind the ranges above.
    c.itr.linear_params().validate().map_err(|e| Error::field("itr", e))?;
    if c.itr.policy == super::itr::ItrPolicyKind::GoldenSection {
        c.itr.golden_params().validate().map_err(|e| Error::field("itr", e))?;
    }
    Ok(())
}

/// The forwarding workload is a packet generator's open loop on bare metal.
fn forwarding(c: &Config) -> Result<(), Error> {
    if c.app.kind != AppKind::Forwarding {
        return Ok(());
    }
    if c.load.qps.is_none() {
        return Err(Error::field(
            "load.qps",
            "must be set when app.kind is \"forwarding\": the forwarded packets come from a generator at a rate (open loop)",
        ));
    }
    if c.load.open_loop_backlog != OpenLoopBacklog::Server {
        return Err(Error::field(
            "load.open_loop_backlog",
            "must be \"server\" when app.kind is \"forwarding\": a packet generator sends on time whatever is outstanding",
        ));
    }
    if c.vm.is_guest() {
        return Err(Error::field("app.kind", "must be \"memcached\" when vm.kind is not \"none\""));
    }
    Ok(())
}

/// The bulk TCP receiver runs on bare metal behind a ConnectX-4-like NIC,
/// driven by its own senders.
fn bulk(c: &Config) -> Result<(), Error> {
    if c.app.kind != AppKind::Bulk {
        if c.bulk != super::bulk::BulkCfg::default() {
            return Err(Error::field("bulk", "applies to app.kind = \"bulk\" only"));
        }
        return Ok(());
    }
    if c.load.qps.is_some() {
        return Err(Error::field(
            "load.qps",
            "must be absent when app.kind is \"bulk\": the streams send as fast as their windows and bulk.link_gbps allow",
        ));
    }
    if c.vm.is_guest() && !matches!(c.vm.kind, VmKind::Passthrough | VmKind::Sriov) {
        return Err(Error::field(
            "app.kind",
            "must be \"memcached\" when vm.kind is \"virtio\" (\"bulk\" runs on bare metal or behind an assigned NIC)",
        ));
    }
    if c.vm.is_guest() && c.steering.scheme.is_software() {
        return Err(Error::field("steering.scheme", "must be \"none\" or \"rss\" when the streams run in guests"));
    }
    if c.nic.irq_routing != IrqRouting::Aligned {
        return Err(Error::field("nic.irq_routing", "must be \"aligned\" when app.kind is \"bulk\""));
    }
    if c.epoll.busy_poll_usecs > 0 {
        return Err(Error::field(
            "epoll.busy_poll_usecs",
            "must be 0 when app.kind is \"bulk\": its threads block in read, not in epoll_wait",
        ));
    }
    let b = &c.bulk;
    if b.rcvbuf_bytes < 2 * b.mss_bytes as u64 {
        return Err(Error::field(
            "bulk.rcvbuf_bytes",
            format!("must be at least two segments, 2 x bulk.mss_bytes = {} (got {})", 2 * b.mss_bytes, b.rcvbuf_bytes),
        ));
    }
    if (b.gro_max_bytes as u64) < b.mss_bytes as u64 {
        return Err(Error::field(
            "bulk.gro_max_bytes",
            format!("must be at least bulk.mss_bytes ({}) (got {})", b.mss_bytes, b.gro_max_bytes),
        ));
    }
    Ok(())
}

/// The storage workload runs in a guest behind the emulated SCSI adapter,
/// and that adapter carries nothing else; `[storage]` and `[vic]` describe
/// it and nothing else.
fn storage(c: &Config) -> Result<(), Error> {
    let oltp = c.app.kind == AppKind::Oltp;
    let iometer = c.app.kind == AppKind::Iometer || oltp;
    let lsilogic = c.vm.kind == VmKind::Lsilogic;
    if !oltp && c.oltp != super::oltp::OltpCfg::default() {
        return Err(Error::field("oltp", "applies to app.kind = \"oltp\" only"));
    }
    if !iometer {
        if lsilogic {
            return Err(Error::field("app.kind", "must be \"iometer\" or \"oltp\" when vm.kind is \"lsilogic\""));
        }
        if c.storage != super::storage::StorageCfg::default() {
            return Err(Error::field("storage", "applies to app.kind = \"iometer\" only"));
        }
        if c.vic != super::storage::VicCfg::default() {
            return Err(Error::field("vic", "applies to vm.kind = \"lsilogic\" only"));
        }
        return Ok(());
    }
    if !lsilogic {
        return Err(Error::field(
            "vm.kind",
            "must be \"lsilogic\" when app.kind is \"iometer\" or \"oltp\": the I/O goes through the guest's emulated SCSI adapter",
        ));
    }
    if oltp {
        let d = super::storage::StorageCfg::default();
        for (name, set) in [
            ("storage.oio", c.storage.oio != d.oio),
            ("storage.worker_vcpu", c.storage.worker_vcpu != d.worker_vcpu),
            ("storage.background_threads", c.storage.background_threads != d.background_threads),
            ("storage.target_latency_us", c.storage.target_latency_us != d.target_latency_us),
        ] {
            if set {
                return Err(Error::field(name, "applies to app.kind = \"iometer\" only"));
            }
        }
        if c.oltp.checkpoint_writes > 0 && c.oltp.checkpoint_interval_ms == 0 {
            return Err(Error::field(
                "oltp.checkpoint_writes",
                "must be 0 unless oltp.checkpoint_interval_ms is above 0 (set the interval first)",
            ));
        }
    }
    if oltp && c.vcpus() != c.cpu.app_cores {
        return Err(Error::field(
            "cpu.app_cores",
            format!(
                "must equal vm.vcpus ({}) when app.kind is \"oltp\": the users run on every guest CPU (got {})",
                c.vcpus(),
                c.cpu.app_cores
            ),
        ));
    }
    if !oltp && c.cpu.app_cores != 1 {
        return Err(Error::field(
            "cpu.app_cores",
            format!("must be 1 when app.kind is \"iometer\": Iometer runs one worker (got {})", c.cpu.app_cores),
        ));
    }
    let s = &c.storage;
    let vcpus = c.vcpus();
    for (name, v) in [("storage.worker_vcpu", s.worker_vcpu), ("storage.interrupt_vcpu", s.interrupt_vcpu)] {
        if v >= vcpus {
            return Err(Error::field(name, format!("must name a guest CPU from 0 to {} (got {v})", vcpus - 1)));
        }
    }
    if oltp && s.guest_dispatcher != crate::scenario::GuestDispatcher::Pinned {
        return Err(Error::field(
            "storage.guest_dispatcher",
            "must be \"pinned\" when app.kind is \"oltp\": the OLTP users' placement under Windows' dispatcher is not modelled",
        ));
    }
    if s.block_bytes % 512 != 0 {
        return Err(Error::field(
            "storage.block_bytes",
            format!("must be a whole number of 512-byte sectors (got {})", s.block_bytes),
        ));
    }
    if s.array_latency_ns == 0 && s.array_service_ns == 0 {
        return Err(Error::field(
            "storage.array_latency_ns",
            "must be above 0 when storage.array_service_ns is 0, or a read would complete in the instant it was issued",
        ));
    }
    c.vic.params().validate().map_err(|e| Error::field("vic", e))
}

/// Steering needs the bulk receiver (the only workload that spreads over
/// protocol cores) and cores that exist.
fn steering(c: &Config) -> Result<(), Error> {
    use super::steering::SteeringScheme;
    let s = &c.steering;
    if s.scheme == SteeringScheme::None {
        return Ok(());
    }
    if c.app.kind != AppKind::Bulk {
        return Err(Error::field("steering.scheme", "must be \"none\" unless app.kind is \"bulk\""));
    }
    if s.scheme == SteeringScheme::Rss && c.queues() != c.cpu.app_cores {
        return Err(Error::field(
            "nic.queues",
            format!(
                "must equal cpu.app_cores ({}) or be 0 with steering.scheme = \"rss\" (got {})",
                c.cpu.app_cores, c.nic.queues
            ),
        ));
    }
    let mut seen = vec![false; c.cpu.app_cores as usize];
    for &cpu in &s.rps_cpus {
        if cpu >= c.cpu.app_cores {
            return Err(Error::field(
                "steering.rps_cpus",
                format!("must list cores from 0 to {} (got {cpu})", c.cpu.app_cores - 1),
            ));
        }
        if std::mem::replace(&mut seen[cpu as usize], true) {
            return Err(Error::field("steering.rps_cpus", format!("must list each core once (core {cpu} twice)")));
        }
    }
    Ok(())
}

/// Bound what can be on its way at once, so that the event queue and the
/// model's state stay bounded (the queue has 2^24 slots).
fn in_flight(c: &Config) -> Result<(), Error> {
    let l = &c.load;
    match l.qps {
        None => {
            let n = l.connections() * l.depth as u64;
            if n > MAX_IN_FLIGHT {
                return Err(Error::Scenario(format!(
                    "scenario fields `load.connections` ({}) × `load.depth` ({}) put {n} requests in flight at once; \
                     at most {MAX_IN_FLIGHT} are allowed",
                    l.connections(),
                    l.depth
                )));
            }
        }
        Some(qps) => {
            let one_way_ns = c.nic.wire_latency_ns + c.nic.dma_latency_ns;
            let n = (qps * one_way_ns as f64 / 1e9).ceil();
            if n > MAX_IN_FLIGHT as f64 {
                return Err(Error::Scenario(format!(
                    "scenario fields `load.qps` ({qps}) × (`nic.wire_latency_ns` + `nic.dma_latency_ns`) ({one_way_ns} ns) \
                     put {n} requests in flight at once; at most {MAX_IN_FLIGHT} are allowed"
                )));
            }
        }
    }
    Ok(())
}

/// A closed loop whose requests cost neither time on the way nor cycles on
/// the server would circulate forever at one instant: reject it.
fn progress(c: &Config) -> Result<(), Error> {
    if c.load.qps.is_some() {
        return Ok(());
    }
    let on_the_way_ns = 2 * c.nic.wire_latency_ns + c.nic.dma_latency_ns + c.load.think_time_ns;
    let k = &c.costs;
    let service_min = match c.app.service {
        ServiceDist::Fixed { cycles } => cycles,
        ServiceDist::Exponential { mean_cycles } => mean_cycles,
        ServiceDist::Uniform { min_cycles, .. } => min_cycles,
    };
    let per_request_cycles =
        k.rx_packet_cycles + k.recv_cycles + k.recv_cycles_per_request + k.send_cycles + service_min;
    if on_the_way_ns == 0 && per_request_cycles == 0 {
        return Err(Error::field(
            "nic.wire_latency_ns",
            "must be above 0 in a closed loop whose requests cost no cycles (costs.rx_packet_cycles, \
             costs.recv_cycles, costs.recv_cycles_per_request, costs.send_cycles and the service minimum are all 0, and so are \
             nic.dma_latency_ns and load.think_time_ns), or requests would circulate forever at one instant",
        ));
    }
    Ok(())
}
