//! The `[itr]` section: the interrupt throttling rate of an Intel 82599
//! (`nic.kind = "82599"`, the ixgbe driver), as Emmerich et al. (SPECTS
//! 2015) study it. The throttling hardware is modelled in
//! `model/devices/nic/eitr.rs`; the policies that choose the rate live in the policy
//! tier (`irqlab_policy::itr`).

use irqlab_policy::itr::golden_itr::GoldenItrParams;
use irqlab_policy::itr::linear_itr::LinearItrParams;
use serde::{Deserialize, Serialize};

/// Which interrupt hardware the NIC has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NicKind {
    /// Mellanox ConnectX-4 Lx (mlx5, the thesis's NIC): per completion
    /// queue moderation with `rx-usecs`/`rx-frames`, optionally by DIM
    /// (`[coalesce]`).
    #[serde(rename = "connectx-4")]
    Connectx4,
    /// Intel 82599 (ixgbe, the ITR paper's X520): one throttling interval
    /// per MSI-X vector (EITR), chosen by the `[itr]` policy; `[coalesce]`
    /// does not apply.
    #[serde(rename = "82599")]
    I82599,
}

/// How ixgbe sets a vector's interrupt throttling rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ItrPolicyKind {
    /// No throttling (`InterruptThrottleRate=0`, `rx-usecs 0`): only NAPI
    /// limits the interrupt rate (paper §IV-A).
    Off,
    /// A fixed rate, `itr.rate` interrupts per second (paper §II-B, mode 2).
    Static,
    /// ixgbe's dynamic 3-state ITR from the byte rate, the driver's default
    /// (`InterruptThrottleRate=1`; paper §II-B, §IV-B).
    Ixgbe,
    /// The paper's linear ITR from the packet rate (§V).
    Linear,
    /// The SR-IOV paper's golden-section search of the rate between
    /// `itr.min_rate` and `itr.max_rate` on the receive throughput measured
    /// over `itr.slice_us` per probe, restarted every `itr.restart_irqs`
    /// interrupts (Guan et al., §IV).
    GoldenSection,
}

/// How the ITR regime was set: what ixgbe configured the TX ring with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ItrSetWith {
    /// `modprobe ixgbe InterruptThrottleRate=N` (the driver README's only
    /// way, the three modes the ITR paper describes in §II-B): the ring is
    /// configured with the regime's ITR, so WTHRESH is 1 when it is off.
    ModuleParameter,
    /// `ethtool -C DEV rx-usecs N` after the interface came up with the
    /// default dynamic ITR: ixgbe 3.14.5 rewrites EITR but resets (and
    /// reconfigures WTHRESH) only when RSC must change, which it never
    /// must on a port whose LRO is off (Open vSwitch disables it:
    /// `dev_disable_lro` in its `netdev_create`), so WTHRESH stays 8.
    Ethtool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ItrCfg {
    /// Default `ixgbe`: the driver's default dynamic ITR.
    pub policy: ItrPolicyKind,
    /// How the regime was set (default `module-parameter`); decides the TX
    /// ring's write-back threshold (`model/devices/nic/eitr.rs`,
    /// `tx_wthresh`).
    pub set_with: ItrSetWith,
    /// `static`: interrupts per second per vector, 978 to 488281
    /// (`IXGBE_MAX_INT_RATE`; below 978 the value overflows the EITR
    /// interval field).
    pub rate: u32,
    /// `linear`: the highest rate, r_max (paper §V-C: 100000, the 3-state
    /// ITR's highest); `golden-section`: the top of the search (MaxITR).
    pub max_rate: u32,
    /// `linear`: the lowest rate, r_min (8000, the 3-state ITR's lowest);
    /// `golden-section`: the bottom of the search (MinITR).
    pub min_rate: u32,
    /// `linear`: ρ_max, the packet rate from which the lowest rate
    /// applies, packets per second: the system's maximum before it drops
    /// (2.1 Mpps on the paper's DuT; its patch hard-codes 2.0 Mpps).
    pub rho_max_pps: u64,
    /// `linear`: the shortest time between two adaptations, ns (the
    /// patch's 50 µs).
    pub min_update_ns: u64,
    /// `golden-section`: the search stops when its interval is this narrow,
    /// interrupts per second (the paper's AcceptInternal, not given: 2000).
    pub accept_rate: u32,
    /// `golden-section`: how long each probe's throughput is measured, µs
    /// ("a very short time slice", not given: 1000).
    pub slice_us: u64,
    /// `golden-section`: a new search after this many interrupts (1000).
    pub restart_irqs: u32,
    /// `golden-section`: measure the driver's dynamic ITR for a slice before
    /// each search and keep it unless the search's answer beats it by more
    /// than this fraction of its throughput (0 to 0.5; absent: the paper's
    /// algorithm as printed, the answer held whatever it measured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_effect: Option<f64>,
}

impl Default for ItrCfg {
    fn default() -> Self {
        let p = LinearItrParams::default();
        let g = GoldenItrParams::default();
        ItrCfg {
            policy: ItrPolicyKind::Ixgbe,
            set_with: ItrSetWith::ModuleParameter,
            rate: irqlab_knobs::table::ITR_RATE.default_u64() as u32,
            max_rate: p.max_rate_per_s,
            min_rate: p.min_rate_per_s,
            rho_max_pps: p.rho_max_pps,
            min_update_ns: p.min_update_ns,
            accept_rate: g.accept_rate_per_s,
            slice_us: g.slice_ns / 1_000,
            restart_irqs: g.restart_irqs,
            min_effect: g.min_effect,
        }
    }
}

impl ItrCfg {
    /// The golden-section ITR's parameters.
    pub fn golden_params(&self) -> GoldenItrParams {
        GoldenItrParams {
            min_rate_per_s: self.min_rate,
            max_rate_per_s: self.max_rate,
            accept_rate_per_s: self.accept_rate,
            slice_ns: self.slice_us * 1_000,
            restart_irqs: self.restart_irqs,
            min_effect: self.min_effect,
        }
    }

    /// The linear ITR's parameters.
    pub fn linear_params(&self) -> LinearItrParams {
        LinearItrParams {
            max_rate_per_s: self.max_rate,
            min_rate_per_s: self.min_rate,
            rho_max_pps: self.rho_max_pps,
            min_update_ns: self.min_update_ns,
        }
    }
}
