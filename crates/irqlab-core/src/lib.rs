//! irqlab-core: a deterministic discrete-event model of a server's receive path.
//!
//! Layout (one concept per module):
//! - [`engine`]: the simulation kernel — integer-nanosecond time, an event queue
//!   ordered by `(time, sequence)`, per-stream seeded RNGs. It knows nothing of
//!   networking.
//! - [`model`]: the modelled world around the kernel — cores, the NIC, the Linux
//!   receive path (hard IRQ → NAPI → NET_RX softirq, busy polling, epoll), the
//!   application and the clients.
//! - [`dim`]: a port of Linux `lib/dim` (dynamic interrupt moderation), which
//!   lives in the policy tier (`irqlab-policy`) and is re-exported here.
//! - [`workload`]: mutilate's ETC key/value sizes and inter-arrival generators.
//! - [`scenario`]: the validated scenario (TOML), overrides and profiles.
//! - [`stats`]: histograms and the run summary every tool reads.

pub use irqlab_policy::dim;
pub mod engine;
pub mod error;
pub mod model;
pub mod scenario;
pub mod stats;
pub mod workload;

pub use error::Error;
pub use scenario::Scenario;
pub use model::trace::{TimerReason, TraceEvent};
pub use stats::summary::Summary;

/// Run one scenario to completion and return its summary.
pub fn run(scenario: &Scenario) -> Result<Summary, Error> {
    model::server::Server::build(scenario)?.run()
}

/// Run one scenario, asking `interrupted` every few million events whether
/// to stop (the Python binding checks for Ctrl-C there); a stopped run
/// returns [`Error::Interrupted`].
pub fn run_interruptible(scenario: &Scenario, interrupted: &mut dyn FnMut() -> bool) -> Result<Summary, Error> {
    model::server::Server::build(scenario)?.run_checked(interrupted).map(|(s, _)| s)
}

/// Run one scenario with a policy the user brings (`model/policy.rs`),
/// called once before the run starts and then at every multiple of its
/// period; otherwise as [`run_interruptible`].
pub fn run_with_policy(
    scenario: &Scenario,
    policy: &mut dyn model::policy::Policy,
    interrupted: &mut dyn FnMut() -> bool,
) -> Result<Summary, Error> {
    model::server::Server::build(scenario)?.run_with_policy(Some(policy), interrupted).map(|(s, _)| s)
}

/// Run one scenario and also return up to `limit` kernel-level events
/// (interrupts, NAPI timers, busy polls, IRQ suspension, sleeps, wake-ups).
pub fn run_traced(scenario: &Scenario, limit: usize) -> Result<(Summary, Vec<(engine::Nanos, TraceEvent)>), Error> {
    model::server::Server::build(scenario)?.with_trace(limit).run_traced()
}
