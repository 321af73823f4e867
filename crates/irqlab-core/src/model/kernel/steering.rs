//! Software packet steering's state on a bare-metal host: each core's
//! backlog (`struct softnet_data`: `input_pkt_queue`, `process_queue`, the
//! backlog NAPI's SCHED bit, `input_queue_head`), each core's list of cores
//! to interrupt when its `net_rx_action` ends (`rps_ipi_list`), and the
//! policy that picks a packet's core (`irqlab_policy::steering`: RPS's
//! map, RFS's flow tables, IAPS's busy list). The code that moves packets
//! through it is `model/kernel/backlog.rs`.

use crate::model::kernel::gro::Skb;
use crate::scenario::{Config, SteeringScheme};
use irqlab_policy::steering::{Backlog, Iaps, IapsCase, Rfs, RfsParams, RpsMap};
use std::collections::VecDeque;

/// One core's backlog.
#[derive(Clone, Debug, Default)]
pub struct SoftnetBacklog {
    /// Packets steered here and not yet taken by `process_backlog`.
    pub input: VecDeque<Skb>,
    /// Packets spliced from `input`, being processed.
    pub process: VecDeque<Skb>,
    /// NAPI_STATE_SCHED of the backlog NAPI: set by the enqueue that found
    /// it idle, cleared by `process_backlog` when both queues are empty.
    pub scheduled: bool,
    /// `input_queue_head`: packets processed so far (wrapping).
    pub head: u32,
}

/// Counters over the measured window.
#[derive(Clone, Debug, Default)]
pub struct SteeringCounters {
    /// IPIs handled by their targets.
    pub ipis: u64,
    /// Packets (after GRO) enqueued to a backlog, and those to another core's.
    pub steered: u64,
    pub steered_remote: u64,
    /// Packets steered to a full backlog.
    pub backlog_drops: u64,
    /// IAPS decisions per case (`IapsCase::ALL` order).
    pub iaps_cases: [u64; 3],
    /// IPIs handled since the run began, warm-up included: what a policy
    /// sees (`model/policy.rs`); not in the summary.
    pub ipis_since_start: u64,
}

pub struct Steering {
    pub scheme: SteeringScheme,
    pub rps: RpsMap,
    /// RFS's tables; IAPS uses its socket table for the application's core.
    pub rfs: Rfs,
    pub iaps: Option<Iaps>,
    pub backlogs: Vec<SoftnetBacklog>,
    /// What RFS sees of each backlog, kept beside it.
    pub views: Vec<Backlog>,
    /// Per core: cores whose backlog NAPI this core scheduled and will
    /// interrupt at the end of its `net_rx_action` (`rps_ipi_list`).
    pub ipi_list: Vec<Vec<u32>>,
    /// Per core: the packets its `process_backlog` segment took.
    pub processing: Vec<Vec<Skb>>,
    pub max_backlog: usize,
    pub counters: SteeringCounters,
}

impl Steering {
    /// Software steering for `cfg`, or None when the scheme is not RPS,
    /// RFS or IAPS. The scenario was validated, so the policies' own checks
    /// cannot fail.
    pub fn new(cfg: &Config) -> Option<Steering> {
        let s = &cfg.steering;
        if !s.scheme.is_software() {
            return None;
        }
        let cores = cfg.cpu.app_cores;
        let cpus = if s.rps_cpus.is_empty() {
            (0..cores).collect()
        } else {
            s.rps_cpus.clone()
        };
        let rps = RpsMap::from_cpus(cpus).expect("validated rps_cpus");
        let rfs = Rfs::new(RfsParams {
            sock_flow_entries: s.rps_sock_flow_entries,
            flow_cnt: s.rps_flow_cnt,
            nr_cpus: cores,
        })
        .expect("validated RFS table sizes");
        let iaps = (s.scheme == SteeringScheme::Iaps)
            .then(|| Iaps::new(cores, s.iaps_flow_slots).expect("validated IAPS table"));
        let n = cores as usize;
        Some(Steering {
            scheme: s.scheme,
            rps,
            rfs,
            iaps,
            backlogs: vec![SoftnetBacklog::default(); n],
            views: vec![Backlog::default(); n],
            ipi_list: vec![Vec::new(); n],
            processing: vec![Vec::with_capacity(64); n],
            max_backlog: s.netdev_max_backlog as usize,
            counters: SteeringCounters::default(),
        })
    }

    /// `get_rps_cpu` (RPS, RFS) or IAPS's choice for a packet of a flow
    /// with hash `hash`; returns the core and, for RFS, the flow's slot in
    /// its table (to record the packet's queue position).
    pub fn target(&mut self, hash: u32, measuring: bool) -> (u32, Option<u32>) {
        match self.scheme {
            SteeringScheme::Rps => (self.rps.target(hash), None),
            SteeringScheme::Rfs => match self.rfs.target(hash, &self.views, Some(&self.rps)) {
                Some(t) => (t.cpu, t.flow),
                None => (self.rps.target(hash), None),
            },
            SteeringScheme::Iaps => {
                // Case 3 is RFS's choice: the core that last read the flow,
                // or RPS's for a flow nobody has read yet.
                let app = self
                    .rfs
                    .app_cpu(hash)
                    .unwrap_or_else(|| self.rps.target(hash));
                let (cpu, case) = self.iaps.as_mut().expect("IAPS state").decide(hash, app);
                if measuring {
                    let i = IapsCase::ALL
                        .iter()
                        .position(|&c| c == case)
                        .expect("a case");
                    self.counters.iaps_cases[i] += 1;
                }
                (cpu, None)
            }
            SteeringScheme::None | SteeringScheme::Rss => unreachable!("hardware or no steering"),
        }
    }
}
