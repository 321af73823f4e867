//! Dynamic Interrupt Moderation: a port of Linux `lib/dim` (`dim.c`, `net_dim.c`).
//! Shared primitives live in `dim.rs`, the network policy in `net_dim.rs`.
//! The algorithm never touches hardware: it observes samples and decides a
//! moderation profile; the NIC model applies it.

#[allow(clippy::module_inception)]
pub mod dim;
pub mod net_dim;

pub use dim::{
    dim_calc_stats, dim_calc_stats_with_comps, dim_event_gap, is_significant_diff, Dim, DimCqModer,
    DimCqPeriodMode, DimSample, DimState, DimStats, DimStatsCompare, DimStepResult, DimTuneState,
    DIM_NEVENTS, DIM_SIGNIFICANT_DIFF_PERCENT,
};
pub use net_dim::{
    net_dim_def_profile_ix, net_dim_get_def_rx_moderation, net_dim_get_def_tx_moderation,
    net_dim_get_rx_moderation, net_dim_get_tx_moderation, net_dim_stats_compare, DimDirection,
    NetDim, NET_DIM_PARAMS_NUM_PROFILES, NET_DIM_TIRED_THRESHOLD,
};
