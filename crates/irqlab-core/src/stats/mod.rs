//! Measurement: latency histograms, per-context cycle accounting and the run
//! summary every tool reads.

pub mod cycles;
pub mod latency;
pub mod summary;
