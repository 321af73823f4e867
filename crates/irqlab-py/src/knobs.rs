//! The knob table (`crates/irqlab-knobs`) for Python: one dict per knob,
//! and the README's tables as text. Only converts.

use irqlab_knobs::{Knob, Profile, Value, KNOBS};
use pyo3::prelude::*;
use pyo3::types::PyDict;

fn value<'py>(py: Python<'py>, v: Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Int(n) => n.into_pyobject(py)?.into_any(),
    })
}

fn knob<'py>(py: Python<'py>, k: &Knob) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("path", k.path)?;
    d.set_item("kernel_name", k.kernel_name)?;
    d.set_item("linux_name", k.linux_name)?;
    d.set_item("part", k.part.name())?;
    d.set_item("unit", k.unit.name())?;
    d.set_item("kernel_range", (k.kernel.min, k.kernel.max))?;
    d.set_item("sim_range", (k.sim.min, k.sim.max))?;
    d.set_item("sim_why", k.sim_why)?;
    d.set_item("default", value(py, k.default)?)?;
    d.set_item("doc", k.doc)?;
    d.set_item("source", k.source)?;
    let profiles = PyDict::new(py);
    for p in Profile::ALL {
        if let Some(v) = p.value(k.path) {
            profiles.set_item(p.name(), value(py, v)?)?;
        }
    }
    d.set_item("profiles", profiles)?;
    Ok(d)
}

/// Every knob of the table, in its order, as a dict.
#[pyfunction]
fn knobs(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    KNOBS.iter().map(|k| knob(py, k)).collect()
}

/// The README's knob tables with their begin and end lines.
#[pyfunction]
fn knobs_markdown() -> String {
    irqlab_knobs::markdown::block()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(knobs, m)?)?;
    m.add_function(wrap_pyfunction!(knobs_markdown, m)?)?;
    Ok(())
}
