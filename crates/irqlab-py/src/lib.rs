//! `irqlab._core`: the Python face of irqlab-core. This crate only converts
//! (Python values in, JSON text out, core errors to Python exceptions); every
//! decision about scenarios and runs is the core's, every decision about the
//! user experience is the Python package's (docs/architecture.md, "Tiers").

mod dim;
mod error;
mod itr;
mod knobs;
mod linux;
mod policy;
mod search;
mod suspend;

use irqlab_core::scenario::Profile;
use irqlab_core::Scenario;
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;

use error::{guard, guard_without_gil, Failure, LinuxError, PolicyError, ScenarioError};

/// Build a scenario from its text, a profile and `key=value` overrides, in
/// the core's layering order (file, profile, overrides).
fn build(toml_text: &str, profile: Option<&str>, overrides: &[String]) -> Result<Scenario, Failure> {
    let mut scenario = Scenario::from_toml_str(toml_text)?;
    if let Some(name) = profile {
        scenario.set_profile(name)?;
    }
    // Overrides are validated together: a combination valid only as a whole
    // (cpu.app_cores with nic.queues) is accepted.
    scenario.set_pairs(overrides)?;
    Ok(scenario)
}

/// A float as a TOML value (`repr`-like; TOML spells non-finite values in lower case).
fn toml_float(x: f64) -> String {
    if x.is_nan() {
        "nan".to_string()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format!("{x:?}")
    }
}

/// Run a scenario and return its summary as JSON text.
///
/// `seed` and `duration_s` are the overrides `run.seed` and `run.duration_s`,
/// applied after `overrides`. The GIL is released while the simulation runs.
///
/// `cancel`, if given, is an object with an `is_set()` method (a
/// `threading.Event`): when it is set the run stops at its next check and
/// raises `KeyboardInterrupt`. Signals reach only the main thread, so this is
/// how a sweep stops the runs of its worker threads on Ctrl-C.
#[pyfunction]
#[pyo3(signature = (toml_text, profile=None, overrides=Vec::new(), seed=None, duration_s=None, cancel=None, policy=None))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    toml_text: String,
    profile: Option<String>,
    overrides: Vec<String>,
    seed: Option<u64>,
    duration_s: Option<f64>,
    cancel: Option<PyObject>,
    policy: Option<PyObject>,
) -> PyResult<String> {
    let mut policy = match policy {
        Some(obj) => Some(policy::PyPolicy::new(py, obj).map_err(PolicyError::new_err)?),
        None => None,
    };
    let policy_ref = &mut policy;
    let result = guard_without_gil(py, "running the simulation", move || {
        let mut scenario = build(&toml_text, profile.as_deref(), &overrides)?;
        if let Some(seed) = seed {
            scenario.set("run.seed", &seed.to_string())?;
        }
        if let Some(duration_s) = duration_s {
            scenario.set("run.duration_s", &toml_float(duration_s))?;
        }
        // Ctrl-C: the core asks every few million events; the signal's
        // Python handler runs here (with the GIL) and its exception, usually
        // KeyboardInterrupt, is what the caller gets.
        let mut pending: Option<PyErr> = None;
        let mut interrupted = || {
            match Python::with_gil(|py| {
                py.check_signals()?;
                match &cancel {
                    Some(flag) if flag.call_method0(py, "is_set")?.is_truthy(py)? => {
                        Err(PyKeyboardInterrupt::new_err("the run was cancelled"))
                    }
                    _ => Ok(()),
                }
            }) {
                Ok(()) => false,
                Err(e) => {
                    pending = Some(e);
                    true
                }
            }
        };
        let result = match policy_ref.as_mut() {
            Some(p) => irqlab_core::run_with_policy(&scenario, p, &mut interrupted),
            None => irqlab_core::run_interruptible(&scenario, &mut interrupted),
        };
        if let Some(e) = pending {
            return Err(Failure::Python(e));
        }
        Ok(serde_json::to_string(&result?)?)
    });
    // A policy's failure is one sentence; the exception it raised (its
    // traceback) is chained beneath, and Ctrl-C in a call is itself.
    match (result, policy.and_then(|p| p.raised)) {
        (Err(e), Some(raised)) if e.is_instance_of::<PolicyError>(py) => {
            if raised.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
                return Err(raised);
            }
            e.set_cause(py, Some(raised));
            Err(e)
        }
        (result, _) => result,
    }
}

/// Validate a scenario with its profile and overrides and return the
/// resolved configuration as JSON text.
#[pyfunction]
#[pyo3(signature = (toml_text, profile=None, overrides=Vec::new()))]
fn resolve(toml_text: &str, profile: Option<&str>, overrides: Vec<String>) -> PyResult<String> {
    guard("resolving the scenario", || {
        let scenario = build(toml_text, profile, &overrides)?;
        Ok(serde_json::to_string(scenario.config())?)
    })
}

/// The profile names, in the core's order.
#[pyfunction]
fn profiles() -> Vec<&'static str> {
    Profile::ALL.iter().map(|p| p.name()).collect()
}

/// The scenario fields a profile sets (`Profile::settings`, the same for
/// every profile), in the knob table's order: what `irqlab profiles` lists,
/// even a field every profile sets to its default (`coalesce.rx-frames`).
#[pyfunction]
fn profile_fields() -> Vec<&'static str> {
    let mut fields: Vec<&'static str> = Vec::new();
    for p in Profile::ALL {
        for (k, _) in p.settings() {
            if !fields.contains(&k.path) {
                fields.push(k.path);
            }
        }
    }
    fields
}

/// Panic inside the guard. Exists only so that tests can check that a panic
/// in Rust reaches Python as a `RuntimeError`.
#[pyfunction]
fn _selftest_panic(message: String) -> PyResult<()> {
    guard("running the panic self-test", || -> Result<(), Failure> { panic!("{message}") })
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("MAX_SCENARIO_BYTES", irqlab_core::scenario::MAX_SCENARIO_BYTES)?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("LinuxError", m.py().get_type::<LinuxError>())?;
    m.add("PolicyError", m.py().get_type::<PolicyError>())?;
    linux::register(m)?;
    policy::register(m)?;
    dim::register(m)?;
    itr::register(m)?;
    search::register(m)?;
    suspend::register(m)?;
    knobs::register(m)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(resolve, m)?)?;
    m.add_function(wrap_pyfunction!(profiles, m)?)?;
    m.add_function(wrap_pyfunction!(profile_fields, m)?)?;
    m.add_function(wrap_pyfunction!(_selftest_panic, m)?)?;
    Ok(())
}
