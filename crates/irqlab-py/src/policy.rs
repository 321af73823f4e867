//! A Python object as the run's policy (`irqlab_core::model::policy`):
//! its `observe(sample)` is called with the GIL at its period, its answer
//! (None, or a dict of knob settings by kernel name) becomes the core's
//! changes. Conversion only: the core checks the knobs and their ranges.

use irqlab_core::model::policy::{refusal, Change, Policy, PolicyError as CoreError, Sample as CoreSample};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};

/// What a policy saw at one call (`irqlab.policy`'s doc lists the fields).
#[pyclass(module = "irqlab._core", frozen, name = "Sample")]
pub struct Sample {
    inner: CoreSample,
}

#[pymethods]
impl Sample {
    /// Simulated time of the call, ns.
    #[getter]
    fn time_ns(&self) -> u64 {
        self.inner.time_ns
    }
    #[getter]
    fn measuring(&self) -> bool {
        self.inner.measuring
    }
    #[getter]
    fn packets(&self) -> u64 {
        self.inner.packets
    }
    #[getter]
    fn packets_busy_polled(&self) -> u64 {
        self.inner.packets_busy_polled
    }
    #[getter]
    fn hard_irqs(&self) -> u64 {
        self.inner.hard_irqs
    }
    #[getter]
    fn softirq_rounds(&self) -> u64 {
        self.inner.softirq_rounds
    }
    #[getter]
    fn watchdog_fires(&self) -> u64 {
        self.inner.watchdog_fires
    }
    #[getter]
    fn requests_completed(&self) -> u64 {
        self.inner.requests_completed
    }
    #[getter]
    fn latency_sum_ns(&self) -> u128 {
        self.inner.latency_sum_ns
    }
    /// The RPS mask in force where the run steers in software, else None.
    #[getter]
    fn rps_cpus(&self) -> Option<u64> {
        self.inner.rps_cpus
    }
    /// Software steering's IPIs handled, where the run steers in software.
    #[getter]
    fn rps_ipis(&self) -> Option<u64> {
        self.inner.rps_ipis
    }
    #[getter]
    fn busy_poll_usecs(&self) -> Vec<u32> {
        self.inner.busy_poll_usecs.clone()
    }
    /// Per queue: irqs, packets, bytes, tx_packets, tx_bytes, ring_packets, drops, rx_usecs, rx_frames, itr_interval_ns.
    #[getter]
    fn queues<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.inner
            .queues
            .iter()
            .map(|q| {
                let d = PyDict::new(py);
                d.set_item("irqs", q.irqs)?;
                d.set_item("packets", q.packets)?;
                d.set_item("bytes", q.bytes)?;
                d.set_item("tx_packets", q.tx_packets)?;
                d.set_item("tx_bytes", q.tx_bytes)?;
                d.set_item("ring_packets", q.ring_packets)?;
                d.set_item("drops", q.drops)?;
                d.set_item("rx_usecs", q.rx_usecs)?;
                d.set_item("rx_frames", q.rx_frames)?;
                d.set_item("itr_interval_ns", q.itr_interval_ns)?;
                Ok(d)
            })
            .collect()
    }
    /// Per NAPI: defer_hard_irqs, gro_flush_timeout_ns, irq_suspend_timeout_ns.
    #[getter]
    fn napis<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.inner
            .napis
            .iter()
            .map(|n| {
                let d = PyDict::new(py);
                d.set_item("defer_hard_irqs", n.defer_hard_irqs)?;
                d.set_item("gro_flush_timeout_ns", n.gro_flush_timeout_ns)?;
                d.set_item("irq_suspend_timeout_ns", n.irq_suspend_timeout_ns)?;
                Ok(d)
            })
            .collect()
    }
    /// Per application thread: batches, batch_ns, batch_max_ns.
    #[getter]
    fn threads<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.inner
            .threads
            .iter()
            .map(|t| {
                let d = PyDict::new(py);
                d.set_item("batches", t.batches)?;
                d.set_item("batch_ns", t.batch_ns)?;
                d.set_item("batch_max_ns", t.batch_max_ns)?;
                Ok(d)
            })
            .collect()
    }
    /// Per core: user_ns, system_ns, softirq_ns, irq_ns, idle_ns, backlog_packets.
    #[getter]
    fn cores<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.inner
            .cores
            .iter()
            .map(|c| {
                let d = PyDict::new(py);
                d.set_item("user_ns", c.user_ns)?;
                d.set_item("system_ns", c.system_ns)?;
                d.set_item("softirq_ns", c.softirq_ns)?;
                d.set_item("irq_ns", c.irq_ns)?;
                d.set_item("idle_ns", c.idle_ns)?;
                d.set_item("backlog_packets", c.backlog_packets)?;
                Ok(d)
            })
            .collect()
    }
    fn __repr__(&self) -> String {
        format!(
            "Sample(time_ns={}, packets={}, hard_irqs={}, requests_completed={}, {} queues)",
            self.inner.time_ns,
            self.inner.packets,
            self.inner.hard_irqs,
            self.inner.requests_completed,
            self.inner.queues.len()
        )
    }
}

/// The policy object and what its calls left for the caller: the exception
/// it raised (or Ctrl-C's), to chain under the one-sentence error.
pub struct PyPolicy {
    obj: PyObject,
    name: String,
    period_ns: u64,
    pub raised: Option<PyErr>,
}

impl PyPolicy {
    /// Read the object's name and `period_us` (before the run, with the GIL).
    pub fn new(py: Python<'_>, obj: PyObject) -> Result<Self, String> {
        let b = obj.bind(py);
        let name = b.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "policy".into());
        if !b.hasattr("observe").unwrap_or(false) {
            return Err(format!("policy `{name}` has no observe(sample) method"));
        }
        let period = b
            .getattr("period_us")
            .map_err(|_| format!("policy `{name}` has no `period_us` (the simulated microseconds between its calls)"))?;
        let us: f64 = if period.is_instance_of::<PyBool>() {
            f64::NAN
        } else if period.is_instance_of::<PyInt>() || period.is_instance_of::<PyFloat>() {
            period.extract().unwrap_or(f64::NAN)
        } else {
            f64::NAN
        };
        if !us.is_finite() || us <= 0.0 {
            let shown = period.repr().map(|r| r.to_string()).unwrap_or_default();
            return Err(format!("policy `{name}` has `period_us` = {shown}; it must be a number of microseconds above 0"));
        }
        Ok(PyPolicy { obj, name, period_ns: (us * 1e3).round() as u64, raised: None })
    }
}

fn changes(name: &str, out: &Bound<'_, PyAny>) -> Result<Vec<Change>, String> {
    if out.is_none() {
        return Ok(Vec::new());
    }
    let Ok(d) = out.downcast::<PyDict>() else {
        return Err(format!(
            "policy `{name}` returned {} from observe; it must return None or a dict of knob settings such as \
             {{\"rx-usecs\": 8}} or, per queue, NAPI or thread, {{\"rx-usecs\": {{0: 8}}}}",
            out.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ));
    };
    let mut v = Vec::with_capacity(d.len());
    for (k, x) in d.iter() {
        let Ok(knob) = k.downcast::<PyString>().map(|s| s.to_string()) else {
            return Err(format!("policy `{name}` returned a setting keyed by {}; a knob is named by a str such as \"rx-usecs\"", k.repr().map(|r| r.to_string()).unwrap_or_default()));
        };
        match x.downcast::<PyDict>() {
            Ok(per) => {
                for (t, y) in per.iter() {
                    let target = whole(&t).ok_or_else(|| {
                        format!("policy `{name}` set `{knob}` on {}; a target is a queue, NAPI or thread index (0, 1, ...)", t.repr().map(|r| r.to_string()).unwrap_or_default())
                    })?;
                    v.push(Change { knob: knob.clone(), target: Some(target.min(u32::MAX as u64) as u32), value: value(name, &knob, &y)? });
                }
            }
            Err(_) => v.push(Change { knob: knob.clone(), target: None, value: value(name, &knob, &x)? }),
        }
    }
    Ok(v)
}

/// A non-negative int (not a bool).
fn whole(x: &Bound<'_, PyAny>) -> Option<u64> {
    if x.is_instance_of::<PyBool>() || !x.is_instance_of::<PyInt>() {
        return None;
    }
    x.extract::<u64>().ok()
}

fn value(name: &str, knob: &str, x: &Bound<'_, PyAny>) -> Result<u64, String> {
    whole(x).ok_or_else(|| {
        format!(
            "policy `{name}` set `{knob}` to {}; a knob's value is a whole number of its unit, 0 or more",
            x.repr().map(|r| r.to_string()).unwrap_or_default()
        )
    })
}

impl Policy for PyPolicy {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn period_ns(&self) -> u64 {
        self.period_ns
    }

    fn observe(&mut self, sample: &CoreSample) -> Result<Vec<Change>, CoreError> {
        Python::with_gil(|py| {
            // Ctrl-C: the signal's handler runs here, between two calls.
            if let Err(e) = py.check_signals() {
                self.raised = Some(e);
                return Err(CoreError(format!("policy `{}` was interrupted", self.name)));
            }
            let s = Bound::new(py, Sample { inner: sample.clone() }).map_err(|e| CoreError(e.to_string()))?;
            match self.obj.bind(py).call_method1("observe", (s,)) {
                Ok(out) => changes(&self.name, &out).map_err(CoreError),
                Err(e) => {
                    let msg = refusal(
                        &self.name,
                        format_args!(
                            "raised {} in observe at simulated time {} µs: {}",
                            e.get_type(py).name().map(|n| n.to_string()).unwrap_or_default(),
                            sample.time_ns as f64 / 1e3,
                            e.value(py).str().map(|s| s.to_string()).unwrap_or_default()
                        ),
                    );
                    self.raised = Some(e);
                    Err(CoreError(msg))
                }
            }
        })
    }

    fn fields(&mut self) -> Vec<(String, f64)> {
        Python::with_gil(|py| {
            let b = self.obj.bind(py);
            let Ok(f) = b.call_method0("fields") else { return Vec::new() };
            let Ok(d) = f.downcast::<PyDict>() else { return Vec::new() };
            d.iter()
                .filter_map(|(k, v)| {
                    let k = k.downcast::<PyString>().ok()?.to_string();
                    if v.is_instance_of::<PyBool>() {
                        return Some((k, if v.is_truthy().ok()? { 1.0 } else { 0.0 }));
                    }
                    Some((k, v.extract::<f64>().ok()?))
                })
                .collect()
        })
    }
}

/// `policy_changes(name, answer)`: a policy's answer as `(knob, target,
/// value)` triples, as a run reads it (for `irqlab linux control`, which
/// applies the same answers to a real device); PolicyError as a run raises.
#[pyfunction]
fn policy_changes(name: &str, answer: &Bound<'_, PyAny>) -> PyResult<Vec<(String, Option<u32>, u64)>> {
    changes(name, answer)
        .map(|v| v.into_iter().map(|c| (c.knob, c.target, c.value)).collect())
        .map_err(crate::error::PolicyError::new_err)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Sample>()?;
    m.add_function(wrap_pyfunction!(policy_changes, m)?)
}
