//! The run summary. Field names are stable: the CLI's `--json`, the Python
//! API, plots and reports read them (docs/architecture.md, "What every run reports").

use crate::dim::net_dim::NET_DIM_PARAMS_NUM_PROFILES;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Latency of the requests completed in the measurement window, µs; every
/// field is `None` (JSON null) when none completed, never a made-up 0.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyUs {
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
}

/// Requests and replies dropped in the measurement window, by where.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DropsBySite {
    /// A request reached a full RX ring.
    pub ring: u64,
    /// A request reached a socket whose receive buffer was full.
    pub socket: u64,
    /// A reply reached a full qdisc (TX ring full, `txqueuelen` packets queued).
    pub qdisc: u64,
}

/// Share of the application cores' time per context, percent (sums to 100).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuPct {
    pub user: f64,
    pub system: f64,
    pub softirq: f64,
    pub irq: f64,
    pub idle: f64,
    /// Host cores: time a vCPU thread ran in guest mode. Absent when 0
    /// (bare metal, and every guest core).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub guest: f64,
    /// Guest cores: time their work waited while the host ran something
    /// else on their vCPU's core. Absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub steal: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// One idle state over the measured window (`Summary::idle_states`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IdleStateReport {
    pub name: String,
    pub exit_latency_us: u32,
    pub target_residency_us: u32,
    pub entries_per_s: f64,
    /// Time in the state, % of the cores' time.
    pub residency_pct: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub scenario: String,
    pub profile: Option<String>,
    pub seed: u64,
    /// "closed" or "open".
    pub mode: String,
    /// Open loop: the offered rate; closed loop: null.
    pub offered_qps: Option<f64>,
    pub throughput_qps: f64,
    pub latency_us: LatencyUs,
    pub cpu_pct: CpuPct,
    /// Same breakdown for dedicated IRQ cores, when routing is packed.
    pub irq_cores_cpu_pct: Option<CpuPct>,
    pub irqs_per_s: f64,
    pub packets_per_irq: f64,
    pub context_switches_per_s: f64,
    pub context_switches_per_query: f64,
    /// Busy cycles (all but idle) on the application cores per completed query.
    pub cycles_per_query: f64,
    /// `[microarch] ipc_model = "disruption"`: instructions per cycle on
    /// the application cores, as `perf stat -C` counts them (the warm
    /// cycles over `microarch.cpi_warm`, over all busy cycles); null under
    /// fixed costs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipc: Option<f64>,
    /// The host's cores' idle states (`cpu.idle_states` other than
    /// "fixed"): per state, entries per second and the share of the cores'
    /// time spent in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_states: Option<Vec<IdleStateReport>>,
    /// The same instructions per completed query; null under fixed costs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions_per_query: Option<f64>,
    /// The load-latency product of Emmerich et al. (SPECTS 2015, §V-E),
    /// `P_ll = c_pkt · t`: the busy cycles per completed query or packet
    /// (`c_pkt = l · f_CPU / r`, here `cycles_per_query`) times the mean
    /// latency in µs, so in cycle·µs; lower is a better trade-off between
    /// CPU cost and latency. Null when nothing completed.
    pub load_latency_product: Option<f64>,
    /// Requests and replies dropped, wherever it happened (the sum of
    /// `drops_by_site`).
    pub drops: u64,
    pub drops_by_site: DropsBySite,
    /// Requests sent again after a drop (TCP retransmission): closed loop,
    /// and open loop with the backlog at the client.
    pub retransmits: u64,
    /// Open loop with `load.open_loop_backlog = "client"`: arrivals that
    /// waited at the client because their connection had `load.depth`
    /// requests outstanding (mutilate's `WAITING_FOR_OPQ`). Their latency
    /// counts from the actual send, as mutilate measures it.
    pub held_at_client: u64,
    /// Share of received packets taken from the ring by busy polling, percent.
    pub busy_poll_pct: f64,
    /// NET_RX softirq rounds (`net_rx_action`) per second.
    pub softirqs_per_s: f64,
    /// NAPI watchdog (hrtimer) expiries per second.
    pub watchdog_fires_per_s: f64,
    /// Threaded NAPI (`napi.threaded`): times per second a NAPI thread got
    /// its core (woken, or back from the application after a slice), which
    /// is what the thread's context switches in `/proc/PID/status` count.
    /// Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub napi_thread_wakeups_per_s: Option<f64>,
    /// Mean time a packet waits in the RX ring before a poll takes it, µs.
    pub rx_ring_wait_us: f64,
    /// What net DIM (adaptive coalescing) did in the measured window; null
    /// when no completion queue runs DIM.
    pub dim: Option<DimReport>,
    /// The application runs in a guest (`vm.kind`): what the
    /// virtualization layer did. Absent on bare metal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm: Option<VmReport>,
    /// The bulk TCP receiver (`app.kind = "bulk"`): what its streams did.
    /// Absent otherwise. There `throughput_qps` counts TCP segments read
    /// by the application per second and `latency_us` is each GRO packet's
    /// delivery, from the send of its first segment to its socket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bulk: Option<BulkReport>,
    /// Packet steering (`steering.scheme`): what it did. Absent when no
    /// scheme is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steering: Option<SteeringReport>,
    /// A guest's storage I/O (`app.kind = "iometer"`): what its path did.
    /// Absent otherwise. There `throughput_qps` counts reads completed by
    /// the worker per second and `latency_us` runs from a read's doorbell
    /// write to the end of its completion in the worker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<StorageReport>,
    /// What a policy the user brought did (`model/policy.rs`); absent
    /// without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<crate::model::policy::PolicyReport>,
    pub requests_completed: u64,
    pub sim_time_s: f64,
    pub sim_events: u64,
    /// Of `sim_events`, those the engine passed without the model: a
    /// core's empty busy polls (`model/kernel/busy_chain.rs`). Like
    /// `wall_s`, what the simulator did rather than what it simulated.
    #[serde(default)]
    pub sim_events_passed: u64,
    pub wall_s: f64,
    /// What the reader should know to read the numbers right, one sentence
    /// each (e.g. that no request completed, so latency is not reported).
    pub warnings: Vec<String>,
}

/// The bulk TCP streams over the measured window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BulkReport {
    pub streams: u32,
    /// Data the application read, Gbit/s (iperf3's receiver figure).
    pub throughput_gbps: f64,
    /// Several VMs (`vm.count`): each VM's share of that, Gbit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm_gbps: Option<Vec<f64>>,
    /// Frames per packet GRO handed to the stack.
    pub frames_per_gro_packet: f64,
    /// Segments lost (ring, backlog or socket drops) and the window
    /// reductions they caused.
    pub losses: u64,
    pub window_reductions: u64,
    /// Packets dropped because their socket had no room.
    pub socket_drops: u64,
    /// Mean congestion window at the end, segments.
    pub mean_cwnd_segments: f64,
    /// Each core's busy share (all but idle), percent, core 0 first: the
    /// interrupt core of a single queue is core 0. In a VM run, the host's
    /// cores.
    pub core_busy_pct: Vec<f64>,
    /// Wake-ups that moved a reader to another core, per second
    /// (`cpu.task_placement = "fair"`; 0 when pinned).
    #[serde(default)]
    pub reader_migrations_per_s: f64,
    /// Each core's share of the readers' CPU time, percent, core 0 first.
    #[serde(default)]
    pub reader_core_pct: Vec<f64>,
    /// Of the frames the driver polled, the share whose descriptor's page
    /// could not be reused, percent (`nic.rx_buffer_reuse = "split-page"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_page_alloc_pct: Option<f64>,
}

/// A guest's storage I/O over the measured window (the vIC paper's
/// metrics, Tables 2-6).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StorageReport {
    /// Reads completed per second and their data rate, MB/s.
    pub iops: f64,
    pub mb_per_s: f64,
    /// Busy cycles of every host core per read: the vCPUs' (guest, VMM and
    /// the VMkernel's issue) and the HBA's core (the paper's "CPU cost
    /// cycles/IO").
    pub cycles_per_io: f64,
    /// Interrupts the guest handled per second: the adapter's and its
    /// clock's (the paper's "Int/sec Guest").
    pub guest_irqs_per_s: f64,
    /// `storage.guest_dispatcher = "windows-2003"`: the inter-processor
    /// interrupts the guest's CPUs took per second (APC and dispatch
    /// interrupts of its I/O completions), which Windows Server 2003 does
    /// not count among a processor's interrupts; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_ipis_per_s: Option<f64>,
    /// The adapter's virtual interrupts the VMM fired per second.
    pub virtual_irqs_per_s: f64,
    /// The HBA's interrupts per second.
    pub hba_irqs_per_s: f64,
    /// IPIs the VMkernel sent to the core running the VM, and those vIC's
    /// deferral held back, per second.
    pub ipis_per_s: f64,
    pub ipis_deferred_per_s: f64,
    /// Wake-ups of the halted VM by the VMkernel per second.
    pub vm_wakeups_per_s: f64,
    /// Commands in flight the VMM counted at each completion (the read
    /// just completed excluded), averaged.
    pub mean_cif: f64,
    /// Mean time a completion waited in the adapter's reply queue, from the
    /// VMM's pickup to the guest ISR that took it, µs: what vIC's holding
    /// adds to (the ISR's own start is in it with vIC off too).
    pub reply_wait_us: f64,
    /// Share of the time the worker's vCPU was halted, percent (ESX's
    /// `VMK_VCPU_HALT`). Under `storage.guest_dispatcher =
    /// "windows-2003"`, where the worker moves, this and the three below
    /// are means over the guest's vCPUs.
    pub vcpu_halt_pct: f64,
    /// The worker's vCPU's core in guest mode (the guest's kernel and
    /// Iometer; ESX's `TC64_IDENT` is the kernel's part), the VMM's
    /// emulation of the adapter's registers (`device_Priv_Lsilogic_IO`)
    /// and its pickups of completions (`DrainMonitorActions`), percent of
    /// one core (the paper's Table 6).
    pub guest_pct: f64,
    pub emulation_pct: f64,
    pub pickup_pct: f64,
    /// `storage.background_threads` above 0: the share of their guest
    /// CPUs' time the background threads computed, percent (their run time
    /// for a fixed job is inversely proportional to it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background_cpu_pct: Option<f64>,
    /// Busy share of the host core that takes the HBA's interrupts, percent.
    pub hba_core_busy_pct: f64,
    /// vIC's choices; absent when it is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vic: Option<VicReport>,
    /// `app.kind = "oltp"`: transactions completed per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions_per_s: Option<f64>,
}

/// What vIC chose over the measured window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VicReport {
    /// R̂: the delivery ratio in force at each completion, averaged (the
    /// paper's "average delivery ratio set dynamically by the algorithm").
    pub mean_ratio: f64,
    /// Completions for which Algorithm 2 delivered, per completion.
    pub delivered_ratio: f64,
    /// Completions seen below `cifThreshold` (delivered at once), percent.
    pub low_cif_pct: f64,
    /// The ratio Algorithm 1 chose at each epoch that ended in the window,
    /// in order (the paper's Figures 3 and 4).
    pub epoch_ratios: Vec<f64>,
}

/// Packet steering over the measured window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SteeringReport {
    /// `steering.scheme`.
    pub scheme: String,
    /// Steering IPIs handled per second (0 for RSS).
    pub ipis_per_s: f64,
    /// Packets (after GRO) steered through a backlog per IPI.
    pub packets_per_ipi: f64,
    /// Packets steered through a backlog per second, and the share that
    /// went to another core than the one that polled the queue.
    pub steered_per_s: f64,
    pub remote_pct: f64,
    /// Packets steered to a full backlog (`netdev_max_backlog`), counted
    /// apart from the ring's drops.
    pub backlog_drops: u64,
    /// IAPS only: the share of each decision case (paper Fig. 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iaps: Option<IapsShares>,
}

/// How IAPS chose, percent of its decisions (paper §IV-C, Fig. 3a-c).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IapsShares {
    /// Case 1: the flow's previous core was still busy.
    pub previous_busy_pct: f64,
    /// Case 2: another busy core.
    pub new_busy_pct: f64,
    /// Case 3: no busy core; the application's core, with an IPI.
    pub no_busy_pct: f64,
}

/// What the virtualization layer did over the measured window. In a VM run
/// `cpu_pct` is the guests' own view of their application vCPUs (with the
/// time the host took from them as `steal`; all VMs together); `host_cpu_pct`
/// is the host's view of the cores running the vCPUs, guest mode as `guest`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VmReport {
    /// `vm.kind`: "passthrough", "sriov" or "virtio".
    pub kind: String,
    /// VM exits per second, all vCPUs: each return to guest mode after an
    /// exit (interrupt, IPI, halt) counts one.
    pub vm_exits_per_s: f64,
    /// Interrupts KVM injected into the guest per second (device vectors
    /// and the guest's timers).
    pub virtual_irqs_per_s: f64,
    /// vCPU halts (the guest idled) per second, and the share of them that
    /// KVM's halt poll ended (the vCPU never slept), percent.
    pub halts_per_s: f64,
    pub halt_poll_success_pct: f64,
    /// Exits per second for the guest's timer as its CPUs enter and leave
    /// idle (`vm.guest_nohz_idle`); part of `vm_exits_per_s`.
    #[serde(default)]
    pub timer_exits_per_s: f64,
    /// The host's cores that run the guest's application vCPUs (the
    /// cores of vCPUs that run no application thread are left out).
    pub host_cpu_pct: CpuPct,
    /// VirtIO with IRQ packing: the host's cores that take the NIC's
    /// interrupts (and, unless placed elsewhere, run the vhost workers).
    pub host_irq_cores_cpu_pct: Option<CpuPct>,
    /// VirtIO: the guest's TX notifications (MMIO exits) per second.
    pub tx_kicks_per_s: Option<f64>,
    /// VMs (`vm.count`) and the host CPUs their vCPUs run on.
    pub vms: u32,
    pub host_cpus: u32,
    /// Busy time summed over all host CPUs, in CPUs (what `top` shows as
    /// the %CPU of every process, over 100): guest mode, exits, interrupts
    /// and halt polling; idle excluded.
    pub host_busy_cpus: f64,
    /// What the host did on the cores of `host_cpu_pct` (the application's
    /// vCPUs), by what it costs: guest mode, exits, halt polling, vhost,
    /// the host's own interrupts and softirqs.
    pub host_split_pct: VmHostSplit,
    /// The same on the cores of `host_irq_cores_cpu_pct`.
    pub host_irq_cores_split_pct: Option<VmHostSplit>,
}

/// Host CPU time of a group of cores by what it was for, percent of their
/// time; `host_cpu_pct` counts `exit`, `halt_poll`, `vhost` and `other` as
/// system time, as `/proc/stat` does.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VmHostSplit {
    /// vCPU threads in guest mode: the guests' own work.
    pub guest: f64,
    /// KVM between a VM exit and the re-entry (`vm.exit_entry_cycles`, the
    /// VMM's work at entry); the host interrupt that caused the exit is in
    /// `irq`.
    pub exit: f64,
    /// KVM's halt polling of halted vCPUs.
    pub halt_poll: f64,
    /// vhost workers moving packets and notifying (VirtIO).
    pub vhost: f64,
    /// The host's hard IRQs: VFIO vectors, kick IPIs, MMIO notifications,
    /// the NIC's vectors (VirtIO).
    pub irq: f64,
    /// The host's softirqs: its NIC's NAPI polls and the bridge (VirtIO).
    pub softirq: f64,
    /// Other host work: context switches, wake-ups, leaving idle.
    pub other: f64,
    pub idle: f64,
}

/// Net DIM over the measured window, per direction: `rx` when `adaptive-rx`
/// is on, `tx` when `adaptive-tx` is on and TX completions signal
/// interrupts; null otherwise.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DimReport {
    pub rx: Option<DimCqReport>,
    pub tx: Option<DimCqReport>,
}

/// DIM of one direction's completion queues: which profile (the kernel's
/// `dim->profile_ix`) was in force how long.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DimCqReport {
    /// `"cqe"` or `"eqe"`: the CQ period mode (`cqe-mode-rx`/`cqe-mode-tx`),
    /// which selects DIM's profile table.
    pub cq_period_mode: String,
    /// The profile table, in index order (0 = least moderation).
    pub profiles: [DimProfileModer; NET_DIM_PARAMS_NUM_PROFILES],
    /// Share of the measured time each profile was in force, over all
    /// queues, percent (sums to 100).
    pub time_share_pct: PerProfile<f64>,
    /// Profile changes in the measured window, all queues together.
    pub changes: u64,
    /// The same per queue, in queue order.
    pub queues: Vec<DimQueueReport>,
}

/// DIM of one queue's completion queue.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DimQueueReport {
    pub queue: u32,
    /// Share of the measured time each profile was in force, percent (sums to 100).
    pub time_share_pct: PerProfile<f64>,
    /// Profile changes in the measured window.
    pub changes: u64,
}

/// One DIM profile's moderation (`struct dim_cq_moder`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DimProfileModer {
    /// Moderation timer, µs (`rx-usecs`/`tx-usecs`).
    pub usecs: u16,
    /// Completion-count bound (`rx-frames`/`tx-frames`).
    pub frames: u16,
}

/// One value per DIM profile, in JSON an object keyed by the profile index
/// (`"0"` … `"4"`), so that a flattened summary has a column per profile
/// (`dim.rx.time_share_pct.4`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PerProfile<T>(pub [T; NET_DIM_PARAMS_NUM_PROFILES]);

const PROFILE_KEYS: [&str; NET_DIM_PARAMS_NUM_PROFILES] = ["0", "1", "2", "3", "4"];

impl<T: Serialize> Serialize for PerProfile<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in PROFILE_KEYS.iter().zip(&self.0) {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de, T: Deserialize<'de> + Copy + Default> Deserialize<'de> for PerProfile<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de> + Copy + Default> Visitor<'de> for V<T> {
            type Value = PerProfile<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "an object with the keys \"0\" to \"{}\"", NET_DIM_PARAMS_NUM_PROFILES - 1)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = [T::default(); NET_DIM_PARAMS_NUM_PROFILES];
                let mut seen = [false; NET_DIM_PARAMS_NUM_PROFILES];
                while let Some(key) = map.next_key::<String>()? {
                    let ix = PROFILE_KEYS
                        .iter()
                        .position(|k| *k == key)
                        .ok_or_else(|| de::Error::unknown_field(&key, &PROFILE_KEYS))?;
                    out[ix] = map.next_value()?;
                    seen[ix] = true;
                }
                match seen.iter().position(|s| !s) {
                    Some(ix) => Err(de::Error::missing_field(PROFILE_KEYS[ix])),
                    None => Ok(PerProfile(out)),
                }
            }
        }
        deserializer.deserialize_map(V(std::marker::PhantomData))
    }
}
