//! Every error that crosses into Python is made here, and nothing else
//! crosses: core errors become `ScenarioError`, real-kernel errors
//! (irqlab-linux) become `LinuxError`, a panic inside the core becomes
//! `RuntimeError` instead of unwinding into the interpreter.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::PyErr;

create_exception!(
    irqlab._core,
    ScenarioError,
    PyValueError,
    "A scenario, profile or override was rejected. The message is one sentence naming the offending field."
);

create_exception!(
    irqlab._core,
    LinuxError,
    PyRuntimeError,
    "A real-kernel operation (irqlab linux show/apply/restore) was refused: not root, unknown device, \
     device without NAPI, kernel without the feature, or the kernel said no. The message is one sentence."
);

create_exception!(
    irqlab._core,
    PolicyError,
    PyRuntimeError,
    "A policy given to a run raised, returned what is not a knob setting, or set a knob out of its range. \
     The message is one sentence naming the policy and the knob; the policy's own exception is its __cause__."
);

/// What can go wrong behind the boundary, before it is turned into a `PyErr`.
/// Kept free of Python objects so it can leave a `py.allow_threads` closure.
pub enum Failure {
    /// The core refused the scenario, a profile or an override.
    Core(irqlab_core::Error),
    /// A real-kernel operation failed.
    Linux(irqlab_linux::Error),
    /// A result could not be encoded as JSON (a bug: the core's types are plain data).
    Json(serde_json::Error),
    /// Python raised while the core was running (a signal handler's
    /// KeyboardInterrupt): passed on as it is.
    Python(PyErr),
}

impl From<irqlab_core::Error> for Failure {
    fn from(e: irqlab_core::Error) -> Self {
        Failure::Core(e)
    }
}

impl From<irqlab_linux::Error> for Failure {
    fn from(e: irqlab_linux::Error) -> Self {
        Failure::Linux(e)
    }
}

impl From<serde_json::Error> for Failure {
    fn from(e: serde_json::Error) -> Self {
        Failure::Json(e)
    }
}

impl From<Failure> for PyErr {
    fn from(f: Failure) -> PyErr {
        match f {
            Failure::Core(e @ irqlab_core::Error::Policy(_)) => PolicyError::new_err(e.to_string()),
            Failure::Core(e) => ScenarioError::new_err(e.to_string()),
            Failure::Python(e) => e,
            Failure::Linux(e) => LinuxError::new_err(e.to_string()),
            Failure::Json(e) => PyRuntimeError::new_err(format!(
                "the result could not be encoded as JSON: {e} (this is a bug in irqlab; please report it)"
            )),
        }
    }
}

/// Run `f`, turning a panic into a `RuntimeError` that says what was being
/// done (`during`, e.g. "running the simulation") and carries the panic message.
pub fn guard<T>(during: &str, f: impl FnOnce() -> Result<T, Failure>) -> Result<T, PyErr> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result.map_err(PyErr::from),
        Err(payload) => Err(panic_error(during, payload)),
    }
}

/// Like [`guard`], but with the GIL released for the duration of `f`, so that
/// other Python threads run while the simulation does.
pub fn guard_without_gil<T: Send>(
    py: pyo3::Python<'_>,
    during: &str,
    f: impl FnOnce() -> Result<T, Failure> + Send,
) -> Result<T, PyErr> {
    match py.allow_threads(|| catch_unwind(AssertUnwindSafe(f))) {
        Ok(result) => result.map_err(PyErr::from),
        Err(payload) => Err(panic_error(during, payload)),
    }
}

fn panic_error(during: &str, payload: Box<dyn Any + Send>) -> PyErr {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string());
    PyRuntimeError::new_err(format!(
        "the core panicked while {during}: {message} \
         (this is a bug in irqlab; please report it with the scenario and command)"
    ))
}
