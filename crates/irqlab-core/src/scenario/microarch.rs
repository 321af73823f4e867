//! The `[microarch]` section: how an operation's cycles follow from the
//! core's recent history (docs/notes/ipc-disruption-design.md).
//!
//! Under `ipc_model = "fixed"` (the default, and the thesis's
//! calibration) every operation costs its `costs.*_cycles`. The
//! disruption of an interrupt is two fitted penalties
//! (`costs.interrupt_penalty_cycles`, `costs.irq_cold_cycles`).
//!
//! Under `"disruption"` those cycles are the operation's *warm* cost.
//! Three code classes share each core's L1 instruction cache: the
//! application's thread (with its syscalls and busy polls), the NET_RX
//! softirq and the hard-IRQ handlers. When a class resumes after the others
//! ran, the lines they displaced are refilled from L2. The loss is the LRU
//! stack distance of its footprint: `min(F, max(0, D + F − C))` bytes,
//! where `D` is the other classes' footprints that ran meanwhile, `C` the
//! cache's size and `F` the class's footprint, at most `C` (a class larger
//! than the cache misses on the rest whatever ran, which `cpi_warm` holds). An interrupted context also pays `flush_cycles` once
//! (pipeline and branch-predictor state). These replace the two fitted
//! penalties, and the summary reports instructions and IPC as
//! `perf stat -C` counts them on the application's cores. The footprints
//! and the flush are a fit (thesis Table 4.1, `tools/calibrate.py
//! --ipc-model disruption`), kept in the thesis's scenarios, not defaults:
//! this model must be given them. A machine description is this table
//! with its sources (`scenarios/thesis/bare-metal.toml` for the E5-2670,
//! `scenarios/cover-letter/epyc-7662.toml` for the EPYC 7662).

use serde::{Deserialize, Serialize};

/// How an operation's cycles are found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IpcModel {
    /// Each operation costs its `costs.*_cycles`, plus the two fitted
    /// penalties for an interruption.
    #[default]
    Fixed,
    /// `costs.*_cycles` are warm costs; disruption adds the refill of the
    /// displaced L1i lines and a flush per interruption.
    Disruption,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MicroarchCfg {
    pub ipc_model: IpcModel,
    /// Cycles per instruction of warm code. Default 1.116: busy-wait's
    /// CPI in the thesis's Table 5.1 (IPC 0.896), whose path an interrupt
    /// almost never disrupts; an upper bound for the E5-2670 (a fit).
    pub cpi_warm: f64,
    /// Cache line, bytes: 64 on every x86 core since the Pentium 4.
    pub line_bytes: u64,
    /// L1 instruction cache per core, bytes. Default 32 KiB: Sandy Bridge's
    /// (Intel 64 and IA-32 Architectures Optimization Reference Manual,
    /// "Intel microarchitecture code name Sandy Bridge").
    pub l1i_bytes: u64,
    /// Cycles to refill one line from L2. Default 12: the thesis's L2 hit
    /// cost (Table 5.1).
    pub l2_latency_cycles: u64,
    /// Cycles an interrupted context loses once when it resumes: pipeline
    /// refill and branch-predictor state. The thesis's fit: 244.
    pub flush_cycles: u64,
    /// L1i footprint of the application's thread between two
    /// interruptions (its syscalls and busy polls included), bytes. The
    /// thesis's fit (memcached): 27,842.
    pub thread_code_bytes: u64,
    /// L1i footprint of one NET_RX softirq run, bytes. The thesis's fit: 22,064.
    pub softirq_code_bytes: u64,
    /// L1i footprint of a hard-IRQ handler, bytes. The thesis's fit: 5,294.
    pub hardirq_code_bytes: u64,
    /// The CPI at which `costs.*_cycles` and the application's service
    /// cycles were counted. Default 1.116, `cpi_warm`'s default: the costs
    /// are the thesis's E5-2670 fit. On another core the same instructions
    /// take `cpi_warm / costs_cpi` times the cycles.
    pub costs_cpi: f64,
    /// The instructions of every operation relative to those the costs
    /// were counted with (another kernel build or application version runs
    /// more or fewer). Default 1.
    pub instructions_scale: f64,
}

impl Default for MicroarchCfg {
    fn default() -> Self {
        MicroarchCfg {
            ipc_model: IpcModel::Fixed,
            cpi_warm: 1.116,
            line_bytes: 64,
            l1i_bytes: 32 * 1024,
            l2_latency_cycles: 12,
            flush_cycles: 0,
            thread_code_bytes: 0,
            softirq_code_bytes: 0,
            hardirq_code_bytes: 0,
            costs_cpi: 1.116,
            instructions_scale: 1.0,
        }
    }
}

impl MicroarchCfg {
    /// Machine cycles per cycle of `costs.*_cycles`: the operations'
    /// instructions (`costs / costs_cpi`, times `instructions_scale`) at
    /// this core's `cpi_warm`. 1 under fixed costs.
    pub fn warm_factor(&self) -> f64 {
        match self.ipc_model {
            IpcModel::Fixed => 1.0,
            IpcModel::Disruption => self.instructions_scale * self.cpi_warm / self.costs_cpi,
        }
    }
}
