//! `irqlab linux show|apply|restore` (crate irqlab-linux) for Python:
//! device and profile names in, JSON text out (dicts for the per-queue
//! statistics), errors as `LinuxError`. The GIL is released while the
//! kernel is asked.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::error::{guard_without_gil, Failure};

/// Every NAPI of device `dev` and its coalescing, as JSON text.
#[pyfunction]
fn linux_show(py: Python<'_>, dev: String) -> PyResult<String> {
    guard_without_gil(py, "reading a device", move || Ok(serde_json::to_string(&irqlab_linux::show(&dev)?)?))
}

/// What applying `profile` to `dev` (all NAPIs, or `napi_id`) would change, as JSON text.
#[pyfunction]
#[pyo3(signature = (dev, profile, napi_id=None))]
fn linux_plan(py: Python<'_>, dev: String, profile: String, napi_id: Option<u32>) -> PyResult<String> {
    guard_without_gil(py, "planning a profile", move || {
        Ok(serde_json::to_string(&irqlab_linux::plan(&dev, &profile, napi_id)?)?)
    })
}

/// Apply `profile` to `dev` (or, with `dry_run`, only say what would
/// change); the report of changes made and skipped as JSON text.
#[pyfunction]
#[pyo3(signature = (dev, profile, napi_id=None, dry_run=false))]
fn linux_apply(py: Python<'_>, dev: String, profile: String, napi_id: Option<u32>, dry_run: bool) -> PyResult<String> {
    guard_without_gil(py, "applying a profile", move || {
        let plan = irqlab_linux::plan(&dev, &profile, napi_id)?;
        let report = if dry_run { irqlab_linux::dry_run(&plan) } else { irqlab_linux::apply(&plan)? };
        Ok(serde_json::to_string(&report)?)
    })
}

/// Set one knob (`irqlab_linux::tunable()`) of `dev` to `value` (every NAPI,
/// or `napi_id`), saving the device's settings first unless an earlier
/// change saved them; the report as JSON text (`dry_run`: only say).
#[pyfunction]
#[pyo3(signature = (dev, knob, value, napi_id=None, dry_run=false))]
fn linux_set_knob(py: Python<'_>, dev: String, knob: String, value: u64, napi_id: Option<u32>, dry_run: bool) -> PyResult<String> {
    guard_without_gil(py, "setting a knob", move || {
        let plan = irqlab_linux::plan_knob(&dev, &knob, value, napi_id)?;
        let report = if dry_run { irqlab_linux::dry_run(&plan) } else { irqlab_linux::apply(&plan)? };
        Ok(serde_json::to_string(&report)?)
    })
}

/// Put back the settings `dev` had before the first apply; the report as JSON text.
#[pyfunction]
fn linux_restore(py: Python<'_>, dev: String) -> PyResult<String> {
    guard_without_gil(py, "restoring a device", move || -> Result<String, Failure> {
        Ok(serde_json::to_string(&irqlab_linux::restore(&dev)?)?)
    })
}

/// Delete the saved state of `dev` in this namespace without restoring
/// anything (`irqlab linux restore DEV --forget`); the report as JSON text.
#[pyfunction]
fn linux_forget(py: Python<'_>, dev: String) -> PyResult<String> {
    guard_without_gil(py, "forgetting a saved state", move || -> Result<String, Failure> {
        Ok(serde_json::to_string(&irqlab_linux::forget(&dev)?)?)
    })
}

/// The file of the state saved for `dev` in this namespace, or `None`;
/// `LinuxError` for a file under its name that is not its own.
#[pyfunction]
fn linux_state_file(py: Python<'_>, dev: String) -> PyResult<Option<String>> {
    guard_without_gil(py, "reading a saved state", move || -> Result<Option<String>, Failure> {
        let store = irqlab_linux::StateStore::from_env();
        Ok(irqlab_linux::saved_state_file(&dev, &store)?.map(|p| p.display().to_string()))
    })
}

/// The per-queue statistics of `dev` (`qstats-get`), one dict per queue
/// (RX queues first), or `None` when the device keeps none.
#[pyfunction]
fn linux_queue_stats(py: Python<'_>, dev: String) -> PyResult<Option<Vec<Bound<'_, PyDict>>>> {
    let stats = guard_without_gil(py, "reading per-queue statistics", move || Ok(irqlab_linux::queue_stats(&dev)?))?;
    let Some(stats) = stats else { return Ok(None) };
    stats
        .iter()
        .map(|q| {
            let d = PyDict::new(py);
            d.set_item("queue_type", &q.queue_type)?;
            d.set_item("queue_id", q.queue_id)?;
            d.set_item("rx_packets", q.rx_packets)?;
            d.set_item("rx_bytes", q.rx_bytes)?;
            d.set_item("tx_packets", q.tx_packets)?;
            d.set_item("tx_bytes", q.tx_bytes)?;
            d.set_item("rx_hw_drops", q.rx_hw_drops)?;
            d.set_item("rx_alloc_fail", q.rx_alloc_fail)?;
            Ok(d)
        })
        .collect::<PyResult<Vec<_>>>()
        .map(Some)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(linux_show, m)?)?;
    m.add_function(wrap_pyfunction!(linux_queue_stats, m)?)?;
    m.add_function(wrap_pyfunction!(linux_set_knob, m)?)?;
    m.add("TUNABLE_KNOBS", irqlab_linux::tunable())?;
    // (kernel or ethtool name, the scenario field a profile sets it through):
    // how the text output names a knob, as `irqlab profiles` does.
    m.add("LINUX_KNOB_FIELDS", irqlab_linux::change::profile_fields())?;
    m.add_function(wrap_pyfunction!(linux_plan, m)?)?;
    m.add_function(wrap_pyfunction!(linux_apply, m)?)?;
    m.add_function(wrap_pyfunction!(linux_restore, m)?)?;
    m.add_function(wrap_pyfunction!(linux_forget, m)?)?;
    m.add_function(wrap_pyfunction!(linux_state_file, m)?)?;
    Ok(())
}
