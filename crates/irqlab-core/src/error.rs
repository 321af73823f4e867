//! Errors of the core, each a whole sentence naming the offending field.

/// Every error the core can return. Non-exhaustive: new variants may appear.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A scenario field is missing, unknown or out of range.
    #[error("{0}")]
    Scenario(String),
    /// A scenario file could not be parsed as TOML.
    #[error("the scenario is not valid TOML: {0}")]
    Toml(String),
    /// An override given as `key=value` is malformed or names no field.
    #[error("{0}")]
    Override(String),
}

impl Error {
    pub(crate) fn field(field: &str, msg: impl std::fmt::Display) -> Self {
        Error::Scenario(format!("scenario field `{field}` {msg}"))
    }
}
