//! The run's window and what is measured in it: statistics count only
//! after the warm-up (`run.warmup_s`) and until the end; every component
//! records into the same counters, which the summary reads.

use crate::engine::Nanos;
use crate::stats::latency::LatencyHistogram;
use crate::stats::summary::DropsBySite;

/// The measurement window and its statistics.
pub struct RunStats {
    /// The warm-up is over: events count.
    pub measuring: bool,
    /// The counters a policy sees count ([`RunStats::count_from_start`]):
    /// in the window, and from the start when a policy watches the run.
    pub counting: bool,
    pub warmup_end_ns: Nanos,
    pub end_ns: Nanos,
    pub counters: Counters,
    /// Request latency, from the client's send to its reply's arrival.
    pub latency: LatencyHistogram,
    /// What those counters counted before the window, when they counted
    /// from the start (`model/policy.rs`); boxed, so that a run without a
    /// policy keeps the machine's hot fields where they were.
    pub before_window: Option<Box<BeforeWindow>>,
}

/// The counts of a run watched by a policy before its window began.
#[derive(Default)]
pub struct BeforeWindow {
    pub counters: Counters,
    /// Each host core's time by class.
    pub core_ns: Vec<[Nanos; crate::model::kernel::cpu::CLASSES]>,
}

impl RunStats {
    pub fn new(warmup_end_ns: Nanos, end_ns: Nanos) -> Self {
        RunStats {
            measuring: warmup_end_ns == 0,
            counting: warmup_end_ns == 0,
            before_window: None,
            warmup_end_ns,
            end_ns,
            counters: Counters::default(),
            latency: LatencyHistogram::new(),
        }
    }

    /// Count `packets_polled`, `packets_busy_polled`, `hard_irqs`,
    /// `softirq_rounds`, `watchdog_fires`, `completed` and `latency_sum_ns`
    /// from the start, for a policy (`model/policy.rs`); the window's
    /// statistics still start with the window.
    pub fn count_from_start(&mut self) {
        self.counting = true;
    }

    /// A request sent at `sent_ns` completed at `now`.
    #[inline]
    pub fn record_reply(&mut self, now: Nanos, sent_ns: Nanos) {
        if self.counting {
            self.counters.completed += 1;
            self.counters.latency_sum_ns += (now - sent_ns) as u128;
            if self.measuring {
                self.latency.record(now - sent_ns);
            }
        }
    }
}

/// Counters over the measurement window.
#[derive(Default, Clone, Debug)]
pub struct Counters {
    pub hard_irqs: u64,
    pub packets_polled: u64,
    pub packets_busy_polled: u64,
    pub softirq_rounds: u64,
    pub watchdog_fires: u64,
    /// Threaded NAPI: the NAPI threads' turns on their cores.
    pub napi_thread_runs: u64,
    pub ring_wait_ns: u128,
    pub completed: u64,
    /// The completed requests' latencies summed, ns (a policy's mean).
    pub latency_sum_ns: u128,
    pub drops: DropsBySite,
    pub retransmits: u64,
    /// Open-loop arrivals that waited at the client for a free slot.
    pub held_at_client: u64,
    /// Entries of vCPUs into guest mode after an exit (halts included).
    pub vm_exits: u64,
    /// vCPU halts (HLT exits) and those ended during KVM's halt poll.
    pub vm_halts: u64,
    pub halt_poll_wakeups: u64,
    /// Exits of guests reprogramming their timer as a CPU enters or leaves
    /// idle (`vm.guest_nohz_idle`), counted in `vm_exits` too.
    pub timer_exits: u64,
    /// Interrupts KVM injected into guests.
    pub virtual_irqs: u64,
    /// VirtIO: TX notifications of the guest (MMIO exits to ioeventfd).
    pub virtio_kicks: u64,
}

/// Where a request or reply was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropSite {
    Ring,
    Socket,
    Qdisc,
}

