//! The `[vm]` section: the application runs in a KVM guest instead of on
//! bare metal. Every other section then describes the guest: its kernel's
//! knobs (`napi`, `coalesce`, `epoll`, the profiles), its application, the
//! NIC queues its driver owns. `[vm]` describes the host around it: vCPUs,
//! how device interrupts reach the guest, and KVM's own costs and halt
//! polling. Sources for every default: `docs/notes/virtualization-sources.md`
//! and `docs/calibration.md` ("Virtual machines").

use serde::{Deserialize, Serialize};

/// How the guest gets its I/O device: a network device (thesis §2.4,
/// §4.6) or an emulated storage adapter (the vIC paper).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VmKind {
    /// No guest: the application runs on the host (bare metal).
    None,
    /// The whole NIC (its physical function) bound to `vfio-pci` and
    /// assigned to the guest (thesis §2.4.5, §4.6 "Full Passthrough").
    Passthrough,
    /// A virtual function of the NIC assigned to the guest through
    /// `vfio-pci` (thesis §2.4.6, §4.6 "Partial Passthrough"). With one
    /// VM its per-packet path is the passthrough path; the NIC's switching
    /// between the wire and the VF adds `eswitch_latency_ns`.
    Sriov,
    /// A paravirtual virtio-net device with vhost-net (thesis §2.4.2,
    /// §4.5, Appendix B): the host's NIC and stack receive, a bridge and a
    /// tap hand each packet to a vhost worker thread, which copies it into
    /// the guest's virtqueue and notifies the guest through irqfd. The
    /// scenario's `[nic]` and the host's interrupt routing then describe the
    /// host's NIC; the guest's device has no interrupt coalescing.
    Virtio,
    /// No network device: the guest's device is an emulated LSI Logic SCSI
    /// adapter (the vIC paper's ESX guests), whose I/O `[storage]`
    /// describes; the host's first core after the vCPUs' takes the HBA's
    /// interrupts (`model/workloads/storage/`).
    Lsilogic,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VmCfg {
    pub kind: VmKind,
    /// vCPUs of the guest; vCPU i is pinned to host core i (thesis §4.1.2:
    /// "each virtual CPU is explicitly pinned to a designated physical
    /// core"). The guest's application threads run on its first
    /// `cpu.app_cores` vCPUs. 0 means one per application core.
    pub vcpus: u32,
    /// SR-IOV: VMs on the host, each with `vcpus` vCPUs and its own
    /// virtual function of the NIC (`nic.queues` queue pairs each, its
    /// vectors throttled by its own driver); every other section describes
    /// each of them alike. Default 1; more only with `kind = "sriov"`.
    pub count: u32,
    /// Passthrough and SR-IOV: host CPUs the vCPU threads run on; VM g's
    /// vCPU j is pinned to host CPU `(g * vcpus + j) mod host_cpus`, so
    /// when the vCPUs outnumber the CPUs, vCPUs share a CPU and the host
    /// scheduler gives each a turn of `cpu.sched_base_slice_ns` while
    /// another waits. 0: one CPU per vCPU (the thesis's pinning, §4.1.2).
    pub host_cpus: u32,
    /// One VM exit and re-entry, the world switch alone, cycles; charged on
    /// the host core each time a vCPU enters guest mode again after an
    /// exit. Default 2,000: SplitX (Landau et al., WIOV 2011) on a Nehalem
    /// X5570, the nearest published Intel measurement; an estimate for
    /// Sandy Bridge-EP.
    pub exit_entry_cycles: u64,
    /// Under the disruption model (`[microarch] ipc_model`): the bytes of
    /// L1i the host's code touches on a vCPU's core between a VM exit and
    /// the next entry (KVM's exit handling, the host interrupt that caused
    /// it, the injection and the entry), which displace the guest's code
    /// on the same physical core (`model/kernel/disruption.rs`, `HOST`).
    /// Default EXIT_CODE_BYTES_DEFAULT: see its derivation there.
    pub exit_code_bytes: u64,
    /// The host's hard IRQ of an assigned device's MSI-X vector:
    /// interrupt entry, `vfio_msihandler` → `eventfd_signal` →
    /// `irqfd_wakeup` → `kvm_set_msi` → `kvm_vcpu_kick`, and exit, cycles.
    /// Default 2,700: taken equal to the host's own NIC hard IRQ
    /// (`costs.hardirq_cycles`, fitted on Table 4.1): the same entry and
    /// exit path with a handler of similar size. No measurement found.
    pub vfio_irq_cycles: u64,
    /// The host side of the reschedule IPI that makes a vCPU running in
    /// guest mode on another core exit (`smp_send_reschedule`, the exit's
    /// interrupt handling), cycles. Default 1,000: an estimate; no
    /// measurement on this hardware was found.
    pub ipi_cycles: u64,
    /// KVM halt polling (`virt/kvm/kvm_main.c`): the most a halted vCPU
    /// polls before it sleeps, ns (x86 `KVM_HALT_POLL_NS_DEFAULT` 200 µs);
    /// 0 turns halt polling off.
    pub halt_poll_ns: u64,
    /// `halt_poll_ns_grow` (2), `halt_poll_ns_grow_start` (10 µs) and
    /// `halt_poll_ns_shrink` (2 since Linux 6.11): a vCPU's poll window
    /// starts at 0, grows from `grow_start` by `grow` while wake-ups come
    /// sooner than the maximum, and shrinks by `shrink` when they do not.
    pub halt_poll_ns_grow: u32,
    pub halt_poll_ns_grow_start: u64,
    pub halt_poll_ns_shrink: u32,
    /// The guest stops its scheduler tick whenever one of its CPUs goes
    /// idle, and restarts it when the CPU leaves idle for a task: each
    /// reprograms the guest's local APIC timer (a TSC-deadline MSR write,
    /// or TMICT), which traps to KVM, so an idle period that ends in work
    /// costs two exits beyond the HLT's. A Linux guest has no cpuidle
    /// driver by default (no MWAIT under KVM, no ACPI _CST from QEMU), so
    /// `cpuidle_idle_call` calls `default_idle_call` after
    /// `tick_nohz_idle_stop_tick` unconditionally, and `do_idle` restarts
    /// the tick in `tick_nohz_idle_exit` (kernel/sched/idle.c,
    /// kernel/time/tick-sched.c). The tick stays on only when a timer is
    /// due within the next tick (`tick_nohz_next_event`); the model tracks
    /// no guest timers and takes none as due. Each exit costs
    /// `exit_entry_cycles`: the kvm-unit-tests `tscdeadline_immed` case
    /// (the write's exit, the injected timer interrupt and its EOI's exit)
    /// measured 3,851 cycles without APICv once KVM handled the write in
    /// its fastpath (Linux 5.8, Skylake-SP), about 1,900 per exit
    /// (docs/notes/vm-cost-sources.md §9). The `lsilogic` kind's guest is
    /// the vIC paper's Windows Server 2003, whose clock is periodic: never
    /// there. Default on: every Linux guest of the thesis and of the SR-IOV
    /// paper (Ubuntu 24.04, CentOS 6).
    pub guest_nohz_idle: bool,
    /// Extra DMA latency of a packet written by an assigned device through
    /// the IOMMU (an IOTLB miss's page walk), ns. VFIO maps the guest's
    /// memory once, so there is no per-packet CPU cost; no latency for the
    /// E5-2670's VT-d was found, so the default is 0.
    pub iommu_latency_ns: u64,
    /// Passthrough and SR-IOV: the device's interrupts for a vCPU in guest
    /// mode are posted (VT-d posted interrupts with APICv): delivered into
    /// the guest with no exit and no host handler; a vCPU out of guest mode
    /// is notified through the host as without. Default off: the thesis's
    /// Sandy Bridge-EP has neither APICv nor posted interrupts
    /// (`docs/notes/virtualization-sources.md` §3.2); ELI (ASPLOS 2012)
    /// reports exitless interrupts bring assigned-device guests to 97–100 %
    /// of bare metal.
    pub posted_interrupts: bool,
    /// SR-IOV: latency of the NIC's internal switch between the wire and a
    /// VF, ns. No measurement for the ConnectX-4 Lx was found; default 0.
    pub eswitch_latency_ns: u64,
    /// VirtIO: queue pairs the guest uses (0: one per application core,
    /// each on its application vCPU, as `ethtool -L combined` would set).
    pub guest_queues: u32,
    /// VirtIO: descriptors per virtqueue (`rx_queue_size`, Appendix B: 256).
    pub virtqueue_size: u32,
    /// VirtIO: packets a tap queue holds for its vhost worker
    /// (`TUN_READQ_SIZE` 500, `drivers/net/tun.c`); more are dropped.
    pub tap_queue_len: u32,
    /// VirtIO: the host core of every vhost worker; absent, each queue's
    /// worker runs on the host core that takes that queue's flows'
    /// interrupts (thesis §3.1.3: the I/O threads run where the interrupts
    /// are handled). Since Linux 6.4 a worker is a thread of the QEMU
    /// process and inherits its cgroup, so the emulator core
    /// (`<emulatorpin>`: 5 in Appendix B.1, 6 in B.2) is the other reading.
    pub vhost_core: Option<u32>,
    /// VirtIO: how long a vhost worker busy-polls once it runs out of work,
    /// before it re-enables the guest's notifications and sleeps: QEMU's
    /// `-netdev tap,vhost=on,poll-us=N`, which sets each virtqueue's
    /// `busyloop_timeout` (`VHOST_SET_VRING_BUSYLOOP_TIMEOUT`) in units of
    /// `busy_clock()`, `local_clock() >> 10`: N × 1.024 µs. While it polls
    /// the guest's TX notifications stay off (`vhost_net_busy_poll`:
    /// `vhost_disable_notify`); the poll ends when TX descriptors, or tap
    /// data with free RX buffers, appear, or when another task wants the
    /// core (`vhost_can_busy_poll`: `need_resched()`, which the model takes
    /// at once rather than at the scheduler's next tick). Default 0, off
    /// (`vhost_vq_reset`), as in the thesis's XML (Appendix B sets no
    /// poll-us).
    pub vhost_poll_us: u64,
    /// VirtIO: a vhost worker's cycles per packet moved between the tap
    /// and a virtqueue, either way (`handle_rx`: `tun_recvmsg` copy into
    /// guest memory and used-ring update; `handle_tx_copy`: building the
    /// buffer and `tun_sendmsg` into the host stack and the bridge).
    /// Default 2,000: an estimate (no measurement found); the host-side
    /// protocol work is charged apart (`costs.rx_packet_cycles` on the
    /// host's receive, `costs.send_cycles` on transmit).
    pub vhost_packet_cycles: u64,
    /// VirtIO: a vhost worker's cycles per batch (work dequeue, the
    /// `vhost_signal` → `eventfd_signal` → `irqfd_wakeup` → `kvm_set_msi`
    /// of its notification). Default 1,000: an estimate.
    pub vhost_batch_cycles: u64,
    /// VirtIO: the host's handling of the guest's TX notification (an
    /// MMIO write trapped to KVM's ioeventfd, which wakes the vhost worker),
    /// beyond the exit/entry itself. Default 1,600: QEMU's pci-testdev
    /// measures 3,609 cycles for the whole MMIO ioeventfd round trip
    /// (hardware not stated), less `exit_entry_cycles`.
    pub kick_cycles: u64,
    /// VirtIO: the coalescing of the host's NIC, as the profile of that
    /// name sets it (its `coalesce` knobs only). The thesis does not state
    /// the host's settings; default `adaptive-coalescing`, the mlx5
    /// driver's default (thesis A.2). Whatever the profile run in the
    /// guest, the host keeps this one.
    pub host_nic_coalescing: String,
}

/// `vm.exit_code_bytes`'s default: 29,354 bytes. The functions the host
/// runs on an external-interrupt exit for a VFIO vector on the vCPU's own
/// core, through the re-entry that injects it (Linux 6.1 VMX without
/// APICv, a Linux guest with PV EOI), span 35,098 bytes of code in Debian's
/// 6.1.176 build; the bare-metal mlx5 hard IRQ's path spans 6,330 bytes in
/// the same build, of which the thesis's fit of `microarch.hardirq_code_bytes`
/// (5,294) is 83.6 %; the same share of the exit path is taken
/// (docs/notes/kvm-exit-footprint.md). No VM result was fitted.
pub const EXIT_CODE_BYTES_DEFAULT: u64 = 29_354;

impl Default for VmCfg {
    fn default() -> Self {
        VmCfg {
            kind: VmKind::None,
            vcpus: 0,
            count: 1,
            host_cpus: 0,
            exit_entry_cycles: 2_000,
            exit_code_bytes: EXIT_CODE_BYTES_DEFAULT,
            vfio_irq_cycles: 2_700,
            ipi_cycles: 1_000,
            halt_poll_ns: 200_000,
            halt_poll_ns_grow: 2,
            halt_poll_ns_grow_start: 10_000,
            halt_poll_ns_shrink: 2,
            guest_nohz_idle: true,
            iommu_latency_ns: 0,
            posted_interrupts: false,
            eswitch_latency_ns: 0,
            guest_queues: 0,
            virtqueue_size: 256,
            tap_queue_len: 500,
            vhost_core: None,
            vhost_poll_us: 0,
            vhost_packet_cycles: 2_000,
            vhost_batch_cycles: 1_000,
            kick_cycles: 1_600,
            host_nic_coalescing: "adaptive-coalescing".to_string(),
        }
    }
}

impl VmCfg {
    /// The application runs in a guest.
    pub fn is_guest(&self) -> bool {
        self.kind != VmKind::None
    }

    /// The guest's idle entry and exit reprogram its timer through KVM
    /// (`guest_nohz_idle`; a Linux guest only).
    pub fn idle_tick_exits(&self) -> bool {
        self.guest_nohz_idle && self.is_guest() && self.kind != VmKind::Lsilogic
    }
}
