//! Searches of a knob's best value from measurements: the SR-IOV paper's
//! golden-section search of the interrupt throttle rate (Guan et al., §IV),
//! generalised to any scalar knob and objective.

pub mod golden_section;

pub use golden_section::{GoldenSection, Goal, Reuse, Step, CUT_RATE};
