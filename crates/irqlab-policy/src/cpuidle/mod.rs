//! Idle states and the governor that picks one (`drivers/cpuidle`,
//! `drivers/idle/intel_idle.c`, `drivers/cpuidle/governors/menu.c`).
//!
//! - [`intel_idle`]: the processors' idle states as intel_idle declares
//!   them (exit latency and target residency, in µs).
//! - [`menu`]: the menu governor's choice of a state from the idle time it
//!   predicts, and what it learns from the time a core really slept.
//!
//! Pure decisions: the caller says when a core goes idle, how far its next
//! timer is and how long it slept; what a state costs and how long a core
//! stays in it is the caller's (the simulator's kernel, or a real host's
//! `cpuidle` sysfs counters).

pub mod intel_idle;
pub mod menu;

pub use intel_idle::{IdleState, HSW, IVB, SNB};
pub use menu::Menu;
