//! The run summary. Field names are stable: the CLI's `--json`, the Python
//! API, plots and reports read them (SYSTEM.md "What every run reports").

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyUs {
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
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
    /// RX packets dropped at a full ring.
    pub drops: u64,
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
}
