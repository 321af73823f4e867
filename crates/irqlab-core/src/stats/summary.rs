//! The run summary. Field names are stable: the CLI's `--json`, the Python
//! API, plots and reports read them (SYSTEM.md "What every run reports").

use serde::{Deserialize, Serialize};

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
    /// Requests and replies dropped, wherever it happened (the sum of
    /// `drops_by_site`).
    pub drops: u64,
    pub drops_by_site: DropsBySite,
    /// Closed loop: requests sent again after a drop (TCP retransmission).
    pub retransmits: u64,
    /// Share of received packets taken from the ring by busy polling, percent.
    pub busy_poll_pct: f64,
    /// NET_RX softirq rounds (`net_rx_action`) per second.
    pub softirqs_per_s: f64,
    /// NAPI watchdog (hrtimer) expiries per second.
    pub watchdog_fires_per_s: f64,
    /// Mean time a packet waits in the RX ring before a poll takes it, µs.
    pub rx_ring_wait_us: f64,
    pub requests_completed: u64,
    pub sim_time_s: f64,
    pub sim_events: u64,
    pub wall_s: f64,
    /// What the reader should know to read the numbers right, one sentence
    /// each (e.g. that no request completed, so latency is not reported).
    pub warnings: Vec<String>,
}
