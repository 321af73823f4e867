//! Errors of the core, each a whole sentence naming the offending field.

/// Every error the core can return. Non-exhaustive: new variants may appear.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A scenario field is missing, unknown or out of range.
    #[error("{0}")]
    Scenario(String),
    /// A scenario file could not be parsed as TOML.
    #[error("the scenario is not valid TOML {0}")]
    Toml(String),
    /// An override given as `key=value` is malformed or names no field.
    #[error("{0}")]
    Override(String),
    /// The run was stopped by its interruption check (Ctrl-C) before its end.
    #[error("the run was interrupted at simulated time {at_s:.6} s")]
    Interrupted { at_s: f64 },
    /// The modelled world stopped advancing time (a loop of zero-time work).
    #[error("{0}")]
    Stalled(String),
    /// A policy (`model/policy.rs`) failed, or asked for what cannot be:
    /// one sentence naming the policy and, where one is at fault, the knob.
    #[error("{0}")]
    Policy(String),
}

impl Error {
    pub(crate) fn field(field: &str, msg: impl std::fmt::Display) -> Self {
        Error::Scenario(one_line(&format!("scenario field `{field}` {msg}")))
    }
}

/// A message on one line: runs of whitespace (newlines included) become one
/// space, as the command line prints it.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
