//! Measurement: latency histograms, per-context cycle accounting, the time
//! each DIM profile was in force, and the run summary every tool reads.

pub mod cycles;
pub mod dim_profiles;
pub mod latency;
pub mod summary;
