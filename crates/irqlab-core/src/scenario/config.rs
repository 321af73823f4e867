//! The typed scenario. Every section rejects unknown keys; every field has a
//! default so a scenario states only what differs. Knob names are the kernel's
//! and ethtool's (`rx-usecs`, `gro_flush_timeout`, `busy_poll_usecs`, …) and
//! keep the kernel's units (nanoseconds for `gro_flush_timeout` and
//! `irq_suspend_timeout`, microseconds for `rx-usecs` and `busy_poll_usecs`).
//! The interrupt-handling knobs' defaults (and ranges, `validate.rs`) are
//! the table's (`crates/irqlab-knobs`).
//! Cost constants are CPU cycles at the core frequency; each says where its
//! default comes from. Fitting them to the thesis is documented in
//! `docs/calibration.md`; until then they are first estimates.

use crate::workload::InterArrivalKind;
use irqlab_knobs::table as knob;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub name: String,
    pub description: String,
    pub run: RunCfg,
    pub cpu: CpuCfg,
    pub costs: Costs,
    /// How an operation's cycles follow from the core's recent history
    /// (fixed costs, or warm costs plus disruption).
    pub microarch: super::microarch::MicroarchCfg,
    pub nic: NicCfg,
    pub coalesce: CoalesceCfg,
    pub napi: NapiCfg,
    pub socket: SocketCfg,
    pub epoll: EpollCfg,
    pub app: AppCfg,
    pub load: LoadCfg,
    /// The application in a KVM guest (absent: bare metal).
    pub vm: super::vm::VmCfg,
    /// The 82599's interrupt throttling (`nic.kind = "82599"`).
    pub itr: super::itr::ItrCfg,
    /// RSS, RPS, RFS or IAPS (absent: the protocol runs where the queue
    /// was polled).
    pub steering: super::steering::SteeringCfg,
    /// `app.kind = "bulk"`: the TCP streams.
    pub bulk: super::bulk::BulkCfg,
    /// `app.kind = "iometer"`: the guest's storage I/O and its path.
    pub storage: super::storage::StorageCfg,
    /// Virtual interrupt coalescing of storage completions (`vm.kind =
    /// "lsilogic"`).
    pub vic: super::storage::VicCfg,
    /// `app.kind = "oltp"`: the TPC-C-like users.
    pub oltp: super::oltp::OltpCfg,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunCfg {
    /// Seed of every random stream of the run.
    pub seed: u64,
    /// Simulated time measured, after the warm-up, in seconds.
    pub duration_s: f64,
    /// Simulated time run before measuring, in seconds.
    pub warmup_s: f64,
    /// Profile applied when none is given on the command line.
    pub profile: Option<String>,
}
impl Default for RunCfg {
    fn default() -> Self {
        RunCfg { seed: 1, duration_s: 1.0, warmup_s: 0.05, profile: None }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CpuCfg {
    /// Cores running the application (one event-loop thread each).
    pub app_cores: u32,
    /// Core frequency; the thesis testbed runs at a constant 3 GHz turbo (thesis §4.1.1).
    pub freq_ghz: f64,
    /// Time for an idle core to start executing after an interrupt (C-state
    /// exit). Default 2 µs: C1E exit latency on Xeon, `drivers/idle/intel_idle.c`
    /// (C1 1–2 µs, C1E 2–10 µs); servers tuned for latency rarely reach C6.
    pub wakeup_latency_ns: u64,
    /// How long a runnable thread runs before another runnable thread of
    /// its core gets its turn, nanoseconds. It matters when the NET_RX
    /// softirq has been handed to ksoftirqd, which then shares the core with
    /// the application thread. Default 3 ms: EEVDF's `sysctl_sched_base_slice`
    /// (0.75 ms) scaled by 1 + ilog2(min(CPUs, 8)) = 4 on a machine of 8 or
    /// more CPUs (`kernel/sched/fair.c`, `get_update_sysctl_factor`).
    pub sched_base_slice_ns: u64,
    /// Time from another CPU's wake-up of a thread on a busy core to the
    /// IPI's handler there (threaded NAPI, `model/kernel/napi_thread.rs`). Default
    /// 0: on bare metal an IPI arrives in well under a microsecond; in a
    /// VM the host's delivery (an exit of the sender, a kick of the target)
    /// takes tens (`irqlab testbed probe` measures it).
    pub ipi_latency_ns: u64,
    /// The cores' idle states and governor (`model/kernel/cpuidle.rs`):
    /// `"fixed"` (the default: every wake-up pays `wakeup_latency_ns`), or
    /// intel_idle's table for `"ivb"` (Ivy Bridge), `"snb"` (Sandy Bridge)
    /// or `"hsw"` (Haswell), entered as the menu governor predicts.
    pub idle_states: IdleStatesKind,
    /// Where a woken bulk reader runs (`model/kernel/fair.rs`): `"pinned"`
    /// (the default: each on the core it started on) or `"fair"` (the fair
    /// class's wake-up placement, `select_task_rq_fair`).
    pub task_placement: TaskPlacement,
    /// How often the host preempts a busy core, per second of the core's
    /// time (`model/kernel/host_preempt.rs`): a VM's vCPU whose physical
    /// CPU the hypervisor gives to other work. Default 0: never (bare
    /// metal). `irqlab testbed probe` measures it (`host_preempt_per_s`).
    pub host_preempt_per_s: f64,
    /// How long each such preemption lasts, ns: its quantiles at evenly
    /// spaced probabilities (the first the shortest, the last the longest),
    /// drawn from linearly between them.
    pub host_preempt_ns: Vec<u64>,
    /// How often the host holds a *halted* core's wake-up back, per second
    /// of the core's halted time (`model/kernel/host_preempt.rs`): the
    /// hypervisor runs other work on a halted vCPU's physical CPU and gives
    /// it back late. Default 0: never. `irqlab testbed probe` measures it
    /// (`halted_late_per_s`). It applies to the cores' wake-ups from idle
    /// and to the load generator's (`load.client_ns_per_request`).
    pub host_halted_late_per_s: f64,
    /// How late such a wake-up ends, ns: quantiles as `host_preempt_ns`.
    pub host_halted_late_ns: Vec<u64>,
}

/// Where the scheduler runs a woken task (`cpu.task_placement`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskPlacement {
    /// On the core it was placed on when the run began.
    Pinned,
    /// Where `select_task_rq_fair` puts it at each wake-up.
    Fair,
}
impl Default for CpuCfg {
    fn default() -> Self {
        CpuCfg {
            app_cores: 1,
            freq_ghz: 3.0,
            wakeup_latency_ns: 2_000,
            sched_base_slice_ns: 3_000_000,
            ipi_latency_ns: 0,
            idle_states: IdleStatesKind::Fixed,
            task_placement: TaskPlacement::Pinned,
            host_preempt_per_s: 0.0,
            host_preempt_ns: Vec::new(),
            host_halted_late_per_s: 0.0,
            host_halted_late_ns: Vec::new(),
        }
    }
}

/// Which idle states a machine's cores have (`cpu.idle_states`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IdleStatesKind {
    /// No governor: every wake-up pays `cpu.wakeup_latency_ns`.
    Fixed,
    /// intel_idle's `ivb_cstates` (the ITR paper's Xeon E3-1230 v2).
    Ivb,
    /// intel_idle's `snb_cstates` (the thesis's Xeon E5-2670).
    Snb,
    /// intel_idle's `hsw_cstates` (the SR-IOV paper's Xeon E5-2699 v3).
    Hsw,
}

/// CPU costs in cycles at the core frequency. The defaults are the thesis
/// fit; `docs/calibration.md` records it, with each constant's evidence and
/// how sensitive the results are to it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Costs {
    /// Hard IRQ entry, driver ISR (ack, `napi_schedule`) and exit. Larsen et
    /// al. 2009 measure > 3 µs of interrupt handling per frame on a 2.13 GHz
    /// Xeon, of which this is the top-half part.
    pub hardirq_cycles: u64,
    /// One `net_rx_action` invocation (softirq entry/exit, poll-list handling).
    pub softirq_entry_cycles: u64,
    /// Fixed cost of one `napi->poll` call, also paid when it finds nothing.
    pub napi_poll_cycles: u64,
    /// Per received packet: driver RX, GRO, IP, TCP up to the socket queue
    /// (Cai et al. 2021: tcp/ip 37 %, netdev 16 %, skb 7 %, … of RX time).
    pub rx_packet_cycles: u64,
    /// Waking a thread sleeping in `epoll_wait` (`ep_poll_callback`,
    /// `try_to_wake_up`), paid by the context that delivers the packet.
    pub wakeup_cycles: u64,
    /// One `epoll_wait` system call (entry, `ep_poll`, exit), excluding polling.
    pub epoll_wait_cycles: u64,
    /// Per ready event copied to user space by `ep_send_events`.
    pub epoll_event_cycles: u64,
    /// One `read` of a connection (syscall entry and exit, `lock_sock`,
    /// `tcp_recvmsg`'s fixed part, `tcp_cleanup_rbuf`). memcached reads
    /// whatever the socket holds into its read buffer in one `read`
    /// (`try_read_network`) and parses the requests from there.
    pub recv_cycles: u64,
    /// Per request that `read` takes from the socket: its skb copied to user
    /// space and freed (`skb_copy_datagram_iter`, `tcp_eat_recv_skb`). With
    /// mutilate's depth 1 every read returns one request, so only a
    /// pipelining client tells the two recv costs apart.
    pub recv_cycles_per_request: u64,
    /// One `sendmsg` of a reply including the TX stack and driver transmit.
    pub send_cycles: u64,
    /// Additional TX cost per 64 bytes of reply value (copy and checksum).
    pub send_cycles_per_64b: u64,
    /// Thread switch (`__schedule`, `context_switch`), paid on the core.
    pub context_switch_cycles: u64,
    /// Extra user cycles an application pays after each interruption (cache
    /// and pipeline disturbance; the thesis attributes much of the IPC gap to
    /// L1i misses, §5.3). Explicit so that it can be fitted and switched off.
    pub interrupt_penalty_cycles: u64,
    /// Extra cycles of a softirq round that interrupted a running thread:
    /// the receive path starts with caches the application evicted. The
    /// other half of the interruption cost; `interrupt_penalty_cycles` is
    /// the application's half (thesis §5.3, Table 5.1: 1627 vs 1025 L1i
    /// misses per query interrupt-driven vs polling).
    pub irq_cold_cycles: u64,
    /// Reaping one TX completion in the driver's poll (`mlx5e_poll_tx_cq`:
    /// unmap, free the skb).
    pub tx_clean_cycles: u64,
    /// An hrtimer expiry (the NAPI watchdog) in hard-IRQ context.
    pub timer_irq_cycles: u64,
    /// One iteration of the busy-poll loop around `napi->poll` (loop
    /// overhead besides the poll itself).
    pub busy_poll_iteration_cycles: u64,
    /// `app.kind = "forwarding"`: per packet, everything from the driver's
    /// RX to the transmit (`ixgbe_clean_rx_irq`, `netif_receive_skb`, Open
    /// vSwitch's datapath lookup and output, `dev_queue_xmit`,
    /// `ixgbe_xmit_frame`); it replaces `rx_packet_cycles` there. Default:
    /// the fit on the ITR paper's 2.1 Mpps maximum (docs/calibration.md,
    /// "The ITR paper").
    pub forward_packet_cycles: u64,
    /// `app.kind = "bulk"`: per MTU frame, the driver's RX and GRO's merge
    /// on the core that polls the queue (`ice_clean_rx_irq`,
    /// `napi_gro_receive` → `tcp4_gro_receive`); it replaces
    /// `rx_packet_cycles` there. Fit on the IAPS paper (docs/calibration.md).
    pub rx_frame_cycles: u64,
    /// `nic.rx_buffer_reuse = "split-page"`: per receive buffer whose page
    /// is not reused, the page allocator's work for it on the polling core:
    /// the new page's allocation (`dev_alloc_pages`) and the old page's
    /// free, which `skb_attempt_defer_free` brings back to that core. The
    /// DMA mapping is not in it (no IOMMU: a direct mapping).
    pub rx_page_alloc_cycles: u64,
    /// Per packet GRO hands to the stack (`napi_gro_complete`,
    /// `netif_receive_skb_list_internal`), on the same core.
    pub gro_skb_cycles: u64,
    /// Per packet software steering hands to a core: `get_rps_cpu` and
    /// `enqueue_to_backlog`, whose lock and queue are the target's.
    pub steer_skb_cycles: u64,
    /// Per IPI sent at the end of `net_rx_action` (`net_rps_send_ipi` →
    /// `smp_call_function_single_async`, an x2APIC ICR write).
    pub ipi_send_cycles: u64,
    /// The IPI on its target: hard IRQ entry and exit around
    /// `rps_trigger_softirq`, which schedules the backlog NAPI.
    pub ipi_irq_cycles: u64,
    /// `app.kind = "bulk"`: the protocol per packet after GRO (`ip_rcv`,
    /// `tcp_v4_rcv`, queueing to the socket and the ACK it sends), on the
    /// protocol-processing core.
    pub tcp_skb_cycles: u64,
    /// `app.kind = "bulk"`: copying received data to user space
    /// (`skb_copy_datagram_iter`), per KiB, on the reading thread's core.
    pub copy_cycles_per_kib: u64,
    /// Softirq work on the server's core after each reply it sends: the
    /// *peer's* receive, when the peer's device delivers on the sending CPU.
    /// A veth whose peer has no NAPI does (`veth_xmit` → `veth_forward_skb`
    /// → `__netif_rx` → `enqueue_to_backlog` on the current CPU; the
    /// `local_bh_enable` of `__dev_queue_xmit` then runs `process_backlog`
    /// and the client's TCP receive inside memcached's `sendmsg`). 0 (the
    /// default): the reply leaves on a wire.
    pub peer_rx_cycles: u64,
    /// What the waker pays to wake a thread that sleeps on another CPU (the
    /// IPI `try_to_wake_up` sends): the veth testbed's client waking the
    /// server's NAPI thread, and the server's `sendmsg` waking a sleeping
    /// client (`load.client_ns_per_request`). An APIC write on bare metal;
    /// in a VM an exit, tens of thousands of cycles (`irqlab testbed probe`).
    /// Default 0.
    pub remote_wake_cycles: u64,
    /// The CPU a core pays each time it leaves idle, beyond the work that
    /// woke it, as `/proc/stat` counts it: the idle loop's exit
    /// (`tick_nohz_idle_exit` restarting the tick, `cpuidle_reflect`), the
    /// interrupt that ended the idle period and the refill of what the
    /// idle period displaced. A TSC-deadline write on bare metal; in a VM
    /// the timer reprogramming is an exit and the halted vCPU's core ran
    /// the host meanwhile (`irqlab testbed probe`'s `idle_wake_cpu_ns`).
    /// Charged as system time after the C-state exit. Default 0: the
    /// thesis fit holds whatever its server paid in its other costs.
    pub idle_exit_cycles: u64,
}
impl Default for Costs {
    /// The thesis fit (docs/calibration.md, `tools/calibrate.py`): the
    /// constants marked "fit" were fitted once on thesis Table 4.1; the others
    /// are published or first estimates and were held fixed during the fit.
    fn default() -> Self {
        Costs {
            hardirq_cycles: 2_700,             // fit (irq_path group, 2000:1000:600 split)
            softirq_entry_cycles: 1_350,       // fit (irq_path group)
            napi_poll_cycles: 810,             // fit (irq_path group)
            rx_packet_cycles: 5_732,           // fit
            wakeup_cycles: 1_500,              // estimate (try_to_wake_up + ep_poll_callback)
            epoll_wait_cycles: 1_542,          // fit (syscalls group, 1500:3500:9500 split)
            epoll_event_cycles: 150,           // estimate
            recv_cycles: 2_598,                // fit (syscalls group; the fitted 3,598 less the per-request part)
            recv_cycles_per_request: 1_000,    // estimate (skb copy and free)
            send_cycles: 9_766,                // fit (syscalls group)
            send_cycles_per_64b: 20,           // estimate (copy + checksum of 64 B)
            context_switch_cycles: 2_500,      // estimate (~0.8 µs at 3 GHz)
            interrupt_penalty_cycles: 4_665,   // fit
            irq_cold_cycles: 787,              // fit
            tx_clean_cycles: 300,              // estimate
            timer_irq_cycles: 800,             // estimate (hrtimer interrupt)
            busy_poll_iteration_cycles: 200,   // estimate (loop + cpu_relax)
            forward_packet_cycles: FORWARD_PACKET_CYCLES_FIT,
            rx_frame_cycles: RX_FRAME_CYCLES_FIT,
            gro_skb_cycles: 400,               // estimate (skb completion and list receive)
            rx_page_alloc_cycles: 261,         // Brouer's bench_page_pool_simple (netdev, Jan 2025): page allocator release + put_page + alloc, 238-284 cycles; the midpoint (docs/notes/iaps-per-flow-cost-sources.md §2)
            steer_skb_cycles: 300,             // estimate (flow lookup, a remote lock and queue tail)
            ipi_send_cycles: 600,              // estimate (csd enqueue, ICR write)
            ipi_irq_cycles: 1_500,             // estimate (IRQ entry/exit, CSD queue flush)
            tcp_skb_cycles: 4_000,             // estimate (Cai et al. 2021: TCP/IP ~0.06-0.08 cycles/byte of a 64 KB GRO packet)
            copy_cycles_per_kib: 400,          // estimate (Cai et al. 2021: ~0.3-0.4 cycles/byte from the LLC)
            peer_rx_cycles: 0,                 // a wire: the peer receives elsewhere
            remote_wake_cycles: 0,             // only the veth testbed's paths use it
            idle_exit_cycles: 0,               // measured by the testbed's probe; not in the thesis fit
        }
    }
}

/// `costs.forward_packet_cycles` fitted on the ITR paper (docs/calibration.md).
pub const FORWARD_PACKET_CYCLES_FIT: u64 = 1_238;
/// `costs.rx_frame_cycles` fitted on the IAPS paper (docs/calibration.md,
/// "The IAPS paper"): the highest per-frame cost, on a 10-cycle grid, at
/// which `irqlab reproduce iaps` gives RPS a mean of at least 50 Gbit/s at
/// four connections (and below 50 at eight).
pub const RX_FRAME_CYCLES_FIT: u64 = 450;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IrqRouting {
    /// Queue i's MSI-X vector goes to application core i (thesis §3.1.2 one-to-one).
    Aligned,
    /// All vectors go to `nic.irq_cores` dedicated cores (IRQ packing).
    Packed,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NicCfg {
    /// The NIC's interrupt hardware: `"connectx-4"` (mlx5 CQ moderation,
    /// `[coalesce]`; the thesis's) or `"82599"` (ixgbe's per-vector
    /// interrupt throttling, `[itr]`; the ITR paper's).
    pub kind: super::itr::NicKind,
    /// RX/TX queue pairs; 0 means one per application core.
    pub queues: u32,
    /// Descriptors per RX ring; a packet arriving at a full ring is dropped.
    #[serde(rename = "rx-ring-size")]
    pub rx_ring_size: u32,
    #[serde(rename = "tx-ring-size")]
    pub tx_ring_size: u32,
    /// Packets the qdisc of each TX queue holds while the ring is full
    /// (`ip link set DEV txqueuelen N`; `DEFAULT_TX_QUEUE_LEN` 1000 set by
    /// `ether_setup`); a reply arriving at a full qdisc is dropped.
    pub txqueuelen: u32,
    pub irq_routing: IrqRouting,
    /// Dedicated IRQ cores when `irq_routing = "packed"`.
    pub irq_cores: u32,
    /// One-way latency between a client and the server's NIC (wire, switch,
    /// client stack), nanoseconds.
    pub wire_latency_ns: u64,
    /// Time the NIC takes to DMA a packet into the ring and post its
    /// completion (also a transmitted packet's completion); Larsen et al.
    /// 2009 put the hardware part at ≈ 0.6 µs.
    pub dma_latency_ns: u64,
    /// TX completions signal the pair's interrupt (mlx5: RX and TX CQs of a
    /// channel share its vector). Off: completions are only reaped by polls.
    pub tx_completion_irqs: bool,
    /// On-chip receive packet buffer, bytes: a frame that finds the RX ring
    /// without a free descriptor waits here (in wire bytes) and is dropped
    /// only when this is full too. 0: dropped at once (the default). The
    /// 82599 has 512 KiB (`RXPBSIZE`); with one queue ixgbe leaves
    /// `SRRCTL.DROP_EN` off, so frames wait there rather than drop.
    pub rx_packet_buffer_bytes: u64,
    /// What a buffered frame takes of that buffer (default `frame`).
    pub rx_packet_buffer_accounting: RxBufferAccounting,
    /// How the driver recycles its receive buffers (default `always`).
    pub rx_buffer_reuse: RxBufferReuse,
}

/// How the driver gets a buffer for a descriptor it refills
/// (`nic.rx_buffer_reuse`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RxBufferReuse {
    /// Every buffer is reused at no cost (the driver's per-frame cost
    /// covers its recycling).
    Always,
    /// Half-page buffers kept only if the stack freed the page's other
    /// half, which held the descriptor's frame one ring lap earlier; else
    /// a new page (`costs.rx_page_alloc_cycles`). ice in Linux 6.10, as
    /// ixgbe, i40e and iavf before page_pool (`model/devices/nic/split_page.rs`).
    /// `app.kind = "bulk"` only, whose frames are freed when read.
    SplitPage,
}

/// How many bytes of the on-chip receive buffer a waiting frame takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RxBufferAccounting {
    /// The frame and its FCS.
    Frame,
    /// The frame's time on the wire (frame, FCS, preamble and inter-frame
    /// gap: ixgbe's `IXGBE_ETH_FRAMING` 20) times 36/25: the rate at which
    /// the 82598/82599 buffer fills, which ixgbe's flow-control thresholds
    /// apply to every wire-time delay (`IXGBE_DV`, `IXGBE_LOW_DV` in
    /// `ixgbe_type.h`; first `IXGBE_FILL_RATE`, "as described in the data
    /// sheet": docs/notes/itr-82599-sources.md §6). A minimum-size frame
    /// (84 wire bytes) takes 121 bytes.
    FillRate,
}
impl Default for NicCfg {
    fn default() -> Self {
        NicCfg {
            queues: 0,
            rx_ring_size: 1024,
            tx_ring_size: 1024,
            txqueuelen: 1000,
            irq_routing: IrqRouting::Aligned,
            irq_cores: 1,
            wire_latency_ns: 10_000,
            dma_latency_ns: 600,
            tx_completion_irqs: true,
            kind: super::itr::NicKind::Connectx4,
            rx_packet_buffer_bytes: 0,
            rx_packet_buffer_accounting: RxBufferAccounting::Frame,
            rx_buffer_reuse: RxBufferReuse::Always,
        }
    }
}

/// ethtool coalescing (`ethtool -C`), one setting for every RX queue.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CoalesceCfg {
    /// Net DIM (`lib/dim`) chooses `rx-usecs`/`rx-frames` per queue.
    #[serde(rename = "adaptive-rx")]
    pub adaptive_rx: bool,
    /// Interrupt at most this long after the moderation timer starts, µs.
    #[serde(rename = "rx-usecs")]
    pub rx_usecs: u32,
    /// Interrupt once this many packets are pending (0 = no frame bound).
    #[serde(rename = "rx-frames")]
    pub rx_frames: u32,
    /// Moderation timer restarts at every completion (CQE mode) rather than
    /// starting at the first event (EQE mode); selects DIM's CQE profiles.
    #[serde(rename = "cqe-mode-rx")]
    pub cqe_mode_rx: bool,
    /// The same for TX completions (the thesis keeps adaptive-tx on, tx-usecs
    /// 8, tx-frames 128, cqe-mode-tx off in every profile: appendix A).
    #[serde(rename = "adaptive-tx")]
    pub adaptive_tx: bool,
    #[serde(rename = "tx-usecs")]
    pub tx_usecs: u32,
    #[serde(rename = "tx-frames")]
    pub tx_frames: u32,
    #[serde(rename = "cqe-mode-tx")]
    pub cqe_mode_tx: bool,
}
impl CoalesceCfg {
    /// A profile's RX coalescing with the default TX settings.
    pub fn from_profile(c: super::profile::Coalesce) -> Self {
        CoalesceCfg {
            adaptive_rx: c.adaptive_rx,
            rx_usecs: c.rx_usecs,
            rx_frames: c.rx_frames,
            cqe_mode_rx: c.cqe_mode_rx,
            ..CoalesceCfg::default()
        }
    }
}

impl Default for CoalesceCfg {
    fn default() -> Self {
        CoalesceCfg {
            adaptive_rx: knob::ADAPTIVE_RX.default_bool(),
            rx_usecs: knob::RX_USECS.default_u64() as u32,
            rx_frames: knob::RX_FRAMES.default_u64() as u32,
            cqe_mode_rx: knob::CQE_MODE_RX.default_bool(),
            adaptive_tx: true,
            tx_usecs: 8,
            tx_frames: 128,
            cqe_mode_tx: false,
        }
    }
}

/// Per-NAPI configuration (Linux ≥ 6.13, `napi-set`) and the softirq limits.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NapiCfg {
    /// Empty polls tolerated before hard IRQs are re-enabled.
    pub napi_defer_hard_irqs: u32,
    /// NAPI watchdog (hrtimer) delay, nanoseconds; 0 disables deferral.
    pub gro_flush_timeout: u64,
    /// Safety timeout while the application suspends IRQs, nanoseconds.
    pub irq_suspend_timeout: u64,
    /// Packets per `napi->poll` (`NAPI_POLL_WEIGHT` 64).
    pub weight: u32,
    /// Packets per `net_rx_action` round (`net.core.netdev_budget` 300).
    pub netdev_budget: u32,
    /// Time per `net_rx_action` round, µs (`net.core.netdev_budget_usecs` 2000).
    pub netdev_budget_usecs: u32,
    /// Softirq restarts before deferring to ksoftirqd (`MAX_SOFTIRQ_RESTART` 10).
    pub max_softirq_restart: u32,
    /// The kernel's `CONFIG_HZ` (100, 250, 300 or 1000). It matters to GRO
    /// (`app.kind = "bulk"`): a poll that used its whole weight flushes only
    /// packets held since an earlier jiffy when HZ is 1000, and everything
    /// otherwise (`__napi_poll`: `napi_gro_flush(n, HZ >= 1000)`).
    pub hz: u32,
    /// Threaded NAPI (`/sys/class/net/DEV/threaded` = 1): `____napi_schedule`
    /// wakes the NAPI's kernel thread (`napi_threaded_poll`) instead of
    /// raising NET_RX, and the polls run in that thread, scheduled against
    /// the application on the core (see `model/kernel/napi_thread.rs`).
    pub threaded: bool,
}
impl Default for NapiCfg {
    fn default() -> Self {
        NapiCfg {
            napi_defer_hard_irqs: knob::DEFER_HARD_IRQS.default_u64() as u32,
            gro_flush_timeout: knob::GRO_FLUSH_TIMEOUT.default_u64(),
            irq_suspend_timeout: knob::IRQ_SUSPEND_TIMEOUT.default_u64(),
            weight: 64,
            netdev_budget: 300,
            netdev_budget_usecs: 2_000,
            max_softirq_restart: 10,
            hz: 1000,
            threaded: false,
        }
    }
}

/// The server's TCP sockets.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SocketCfg {
    /// Receive buffer of each connection's socket (`sk_rcvbuf`), bytes: a
    /// request arriving when the requests already queued hold this many
    /// bytes is dropped (`tcp_data_queue` when `tcp_try_rmem_schedule`
    /// fails, counted as TCPRcvQDrop). Charged at the request's wire size,
    /// as if `tcp_collapse` had packed the small segments. Default 131072:
    /// the middle value of `net.ipv4.tcp_rmem`; autotuning is not modelled.
    pub rcvbuf_bytes: u64,
}
impl Default for SocketCfg {
    fn default() -> Self {
        SocketCfg { rcvbuf_bytes: 131_072 }
    }
}

/// Per-epoll-instance busy polling (`EPIOCSPARAMS`) and how the application waits.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EpollCfg {
    pub busy_poll_usecs: u32,
    /// Packets per busy-poll `napi->poll`; 0 means `BUSY_POLL_BUDGET` (8).
    pub busy_poll_budget: u32,
    pub prefer_busy_poll: bool,
    /// `epoll_wait` sleeps when nothing is ready (timeout -1); when false the
    /// application never sleeps and calls `epoll_wait` again at once.
    pub blocking: bool,
    /// `maxevents` of each `epoll_wait` call.
    pub maxevents: u32,
}
impl Default for EpollCfg {
    fn default() -> Self {
        EpollCfg {
            busy_poll_usecs: knob::BUSY_POLL_USECS.default_u64() as u32,
            busy_poll_budget: knob::BUSY_POLL_BUDGET.default_u64() as u32,
            prefer_busy_poll: knob::PREFER_BUSY_POLL.default_bool(),
            blocking: knob::BLOCKING.default_bool(),
            maxevents: 64,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "dist", deny_unknown_fields)]
pub enum ServiceDist {
    Fixed { cycles: u64 },
    Exponential { mean_cycles: u64 },
    /// Uniform between `min_cycles` and `max_cycles`.
    Uniform { min_cycles: u64, max_cycles: u64 },
}

/// What runs on the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AppKind {
    /// memcached-like event-loop threads, one per application core:
    /// `epoll_wait` → read → process → send.
    Memcached,
    /// No application thread: the kernel forwards every packet back out of
    /// the NIC inside NAPI (Open vSwitch's kernel datapath, the ITR paper's
    /// DuT), at `costs.forward_packet_cycles` per packet. Needs an open
    /// loop with `load.open_loop_backlog = "server"` (a packet generator).
    Forwarding,
    /// iperf3's receiver: one thread per `[bulk]` stream doing blocking
    /// reads of `bulk.read_bytes`, fed by TCP senders on another host.
    Bulk,
    /// Iometer's one worker in a guest (`vm.kind = "lsilogic"`): reads
    /// with `storage.oio` outstanding through the emulated SCSI adapter
    /// (`[storage]`, `model/workloads/storage/`).
    Iometer,
    /// A TPC-C-like load in the storage guest (`vm.kind = "lsilogic"`):
    /// `[oltp]`'s users compute and read (`model/workloads/storage/oltp.rs`).
    Oltp,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AppCfg {
    pub kind: AppKind,
    /// User-space cycles to process one request (memcached's parse, hash
    /// lookup and reply build).
    pub service: ServiceDist,
    /// Extra user cycles per 64 bytes of value returned.
    pub service_cycles_per_64b: u64,
    /// The server's own background thread on each application core
    /// (memcached's LRU maintainer, `lru_maintainer_thread` in items.c: a
    /// loop of `usleep`s of a few hundred microseconds while items move
    /// between its LRUs): how often it wakes, per second. 0 (the default):
    /// none. `irqlab testbed run` measures it on the testbed's memcached.
    pub background_wakeups_per_s: f64,
    /// What each of its wake-ups costs its core, cycles: the thread's own
    /// CPU per wake-up (its work, the `usleep`, the switches it sees). It
    /// comes as a timer interrupt of that length (`devices/periodic`): it
    /// takes the core from whatever runs there, and wakes an idle core.
    pub background_wakeup_cycles: u64,
}
impl Default for AppCfg {
    fn default() -> Self {
        AppCfg {
            kind: AppKind::Memcached,
            service: ServiceDist::Fixed { cycles: 5_000 },
            service_cycles_per_64b: 0,
            background_wakeups_per_s: 0.0,
            background_wakeup_cycles: 0,
        }
    }
}

/// Where an open-loop request waits while its connection has `load.depth`
/// requests outstanding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpenLoopBacklog {
    /// At the client, as mutilate does (`Connection::drive_write_machine`:
    /// `WAITING_FOR_OPQ` while `op_queue` holds `depth` requests): it is
    /// sent when a reply frees a slot, and its latency counts from that
    /// send (mutilate's `start_time`), so the client's wait is not in the
    /// latency. A dropped request is retransmitted, as TCP would.
    Client,
    /// Nowhere: it is sent on time whatever is outstanding (a pipelining
    /// client) and queues in the server's socket; a dropped one is lost.
    Server,
}

/// Open loop: where a request's latency is timed from (a closed loop's
/// from its send either way).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LatencyFrom {
    /// Its send, as mutilate times it (`start_time`, set when the request
    /// is written): a request held at the client for a free slot, or a
    /// send the load generator made late, is timed from when it left.
    Send,
    /// Its scheduled arrival, as `irqlab-loadgen` times an open loop
    /// (crates/irqlab-loadgen/src/schedule.rs: no coordinated omission): a
    /// held request's wait for a slot and the load generator's own lateness
    /// are in its latency.
    Schedule,
}

/// Key or value sizes: mutilate's ETC generators or a fixed size.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "dist", deny_unknown_fields)]
pub enum SizeCfg {
    Etc,
    Fixed { bytes: u32 },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoadCfg {
    /// Client machines × threads per client × connections per thread.
    pub clients: u32,
    pub threads_per_client: u32,
    pub connections_per_thread: u32,
    /// Closed loop: requests outstanding per connection.
    pub depth: u32,
    /// Closed loop: pause between a reply and the next request, ns.
    pub think_time_ns: u64,
    /// Open loop at this many queries per second (over all connections);
    /// absent means closed loop.
    pub qps: Option<f64>,
    /// Open loop: where a request waits when its connection already has
    /// `depth` requests outstanding.
    pub open_loop_backlog: OpenLoopBacklog,
    /// Open loop: what a request's latency is timed from.
    pub latency_from: LatencyFrom,
    pub interarrival: InterArrivalKind,
    pub key_size: SizeCfg,
    pub value_size: SizeCfg,
    /// Fraction of requests that are gets (the rest are sets); mutilate's
    /// default `--update 0.0` makes every request a get.
    pub get_fraction: f64,
    /// Closed loop: a request or reply dropped on the server (ring, socket,
    /// qdisc) is sent again this long after the request was first sent, as
    /// TCP retransmits it; latency still counts from the first send.
    /// Default 200 ms: `TCP_RTO_MIN`. An open-loop request that is dropped
    /// is lost (counted in `drops`), which keeps an overloaded open loop's
    /// state bounded.
    pub retransmit_timeout_ns: u64,
    /// `app.kind = "forwarding"`: length of each generated frame as the
    /// driver counts it (`skb->len`, without the 4-byte FCS); 60 is a
    /// minimum-size Ethernet frame, the ITR paper's load.
    pub frame_bytes: u32,
    /// The load generator's own CPU per request, ns, on one client thread
    /// that does one thing at a time: half to write the request, half to
    /// read the reply. A request or reply that finds the thread busy waits
    /// for it, so a busy client delays sends and stretches latencies. 0 (the
    /// default): the clients are never the bottleneck (the thesis's eight
    /// client machines).
    pub client_ns_per_request: u64,
    /// Open loop with the load-generator thread modelled: how late its
    /// timed wait for the next send ends when the thread sleeps until it,
    /// ns (the timer's expiry on its idle core, the exit from idle, the
    /// wake-up and the switch). `irqlab testbed probe` measures it
    /// (`timer_wake_ns`); 0 (the default): on time. A closed loop's thread
    /// waits for replies, not for a time, and does not take it.
    pub client_timer_lag_ns: u64,
}
impl Default for LoadCfg {
    fn default() -> Self {
        LoadCfg {
            clients: 1,
            threads_per_client: 1,
            connections_per_thread: 1,
            depth: 1,
            think_time_ns: 0,
            qps: None,
            open_loop_backlog: OpenLoopBacklog::Client,
            latency_from: LatencyFrom::Send,
            interarrival: InterArrivalKind::Exponential,
            key_size: SizeCfg::Etc,
            value_size: SizeCfg::Etc,
            get_fraction: 1.0,
            retransmit_timeout_ns: 200_000_000,
            frame_bytes: 60,
            client_ns_per_request: 0,
            client_timer_lag_ns: 0,
        }
    }
}

/// Client connections a scenario may open (`load.connections`).
pub const MAX_CONNECTIONS: u64 = 1_000_000;

impl LoadCfg {
    /// Client connections: clients × threads per client × connections per
    /// thread, in 64 bits (validation keeps it at most [`MAX_CONNECTIONS`],
    /// so a validated scenario's count also fits in 32).
    pub fn connections(&self) -> u64 {
        self.clients as u64 * self.threads_per_client as u64 * self.connections_per_thread as u64
    }
}

impl Config {
    /// RX/TX queue pairs in effect.
    pub fn queues(&self) -> u32 {
        if self.nic.queues == 0 {
            self.cpu.app_cores
        } else {
            self.nic.queues
        }
    }
    /// vCPUs of the guest, when the application runs in one.
    pub fn vcpus(&self) -> u32 {
        if self.vm.vcpus == 0 {
            self.cpu.app_cores
        } else {
            self.vm.vcpus
        }
    }
    /// Bulk TCP streams: `bulk.streams`, or one per VM when it is 0.
    pub fn bulk_streams(&self) -> u32 {
        if self.bulk.streams == 0 {
            self.vm.count
        } else {
            self.bulk.streams
        }
    }
    /// Host CPUs of a passthrough or SR-IOV run: `vm.host_cpus`, or one
    /// per vCPU of every VM when it is 0.
    pub fn vm_host_cpus(&self) -> u32 {
        if self.vm.host_cpus == 0 {
            self.vm.count * self.vcpus()
        } else {
            self.vm.host_cpus
        }
    }
    /// Total cores modelled: application cores plus dedicated IRQ cores.
    pub fn total_cores(&self) -> u32 {
        match self.nic.irq_routing {
            IrqRouting::Aligned => self.cpu.app_cores,
            IrqRouting::Packed => self.cpu.app_cores + self.nic.irq_cores,
        }
    }
}
