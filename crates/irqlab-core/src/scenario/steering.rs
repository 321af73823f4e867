//! The `[steering]` section: how received packets are spread over cores.
//! Hardware RSS spreads flows over the NIC's queues, each with its own
//! interrupt core; software steering (RPS, RFS, IAPS) runs on the core that
//! takes a queue's interrupt and hands each packet, after GRO, to a
//! protocol-processing core through that core's backlog (`net/core/dev.c`:
//! `get_rps_cpu` → `enqueue_to_backlog` → an IPI → `process_backlog`). The
//! policies are the policy tier's (`irqlab_policy::steering`); the
//! backlogs and IPIs are `model/kernel/backlog.rs`.

use serde::{Deserialize, Serialize};

/// Which steering decides the protocol-processing core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SteeringScheme {
    /// No software steering: the protocol runs on the core that polled the
    /// queue. With `nic.queues` equal to the cores this is RSS.
    None,
    /// Hardware RSS: the NIC hashes each flow to one of `nic.queues`
    /// queues (Toeplitz hash, the default indirection table); the protocol
    /// runs on the queue's interrupt core. The IAPS paper's baseline.
    Rss,
    /// Receive packet steering: flow hash → `rps_cpus`.
    Rps,
    /// Receive flow steering: the core that last read the flow
    /// (`rps_sock_flow_table`), kept while packets of the flow are queued
    /// on the old core (`rps_dev_flow_table`).
    Rfs,
    /// Interrupt avoidance packet steering (Helbig & Kim, ICOIN 2025, §III).
    Iaps,
}

impl SteeringScheme {
    /// Software steering through the backlogs (RPS, RFS, IAPS).
    pub fn is_software(self) -> bool {
        matches!(
            self,
            SteeringScheme::Rps | SteeringScheme::Rfs | SteeringScheme::Iaps
        )
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SteeringCfg {
    pub scheme: SteeringScheme,
    /// RPS's target cores (`/sys/class/net/DEV/queues/rx-N/rps_cpus`);
    /// empty: every application core. RFS and IAPS fall back on it for a
    /// flow no application has read yet.
    pub rps_cpus: Vec<u32>,
    /// Packets a core's backlog input queue holds (`net.core.netdev_max_backlog`,
    /// default 1000); a packet steered to a full one is dropped.
    pub netdev_max_backlog: u32,
    /// Entries of the global flow table (`net.core.rps_sock_flow_entries`;
    /// the kernel documentation suggests 32768).
    pub rps_sock_flow_entries: u32,
    /// Entries of the queue's flow table (`rps_flow_cnt`; 32768 divided by
    /// the queues, so 32768 for one queue).
    pub rps_flow_cnt: u32,
    /// IAPS: slots of its table of each flow's previous core.
    pub iaps_flow_slots: u32,
}

impl Default for SteeringCfg {
    fn default() -> Self {
        SteeringCfg {
            scheme: SteeringScheme::None,
            rps_cpus: Vec::new(),
            netdev_max_backlog: 1000,
            rps_sock_flow_entries: 32_768,
            rps_flow_cnt: 32_768,
            iaps_flow_slots: 32_768,
        }
    }
}
