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
    pub warmup_end_ns: Nanos,
    pub end_ns: Nanos,
    pub counters: Counters,
    /// Request latency, from the client's send to its reply's arrival.
    pub latency: LatencyHistogram,
}

impl RunStats {
    pub fn new(warmup_end_ns: Nanos, end_ns: Nanos) -> Self {
        RunStats {
            measuring: warmup_end_ns == 0,
            warmup_end_ns,
            end_ns,
            counters: Counters::default(),
            latency: LatencyHistogram::new(),
        }
    }

    /// A request sent at `sent_ns` completed at `now`.
    #[inline]
    pub fn record_reply(&mut self, now: Nanos, sent_ns: Nanos) {
        if self.measuring {
            self.counters.completed += 1;
            self.latency.record(now - sent_ns);
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

