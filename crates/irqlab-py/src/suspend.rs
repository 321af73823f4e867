//! The adaptive `irq-suspend-timeout` (`irqlab_policy::suspend`) as a
//! Python class, so that `irqlab.policy.irq_suspend.AdaptiveIrqSuspend`
//! drives the same code. Conversion only.

use irqlab_policy::suspend::BatchTimeout as Inner;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// `BatchTimeout(margin, floor_ns, ceiling_ns)`: the timeout from the
/// longest batch of each window.
#[pyclass(module = "irqlab._core")]
pub struct BatchTimeout {
    inner: Inner,
}

#[pymethods]
impl BatchTimeout {
    #[new]
    fn new(margin: f64, floor_ns: u64, ceiling_ns: u64) -> PyResult<Self> {
        Inner::new(margin, floor_ns, ceiling_ns).map(|inner| BatchTimeout { inner }).map_err(PyValueError::new_err)
    }

    /// The longest batch of the last window, ns (0: none) → the timeout to
    /// set, ns, when it changes, else None.
    fn observe(&mut self, longest_batch_ns: u64) -> Option<u64> {
        self.inner.observe(longest_batch_ns)
    }

    /// The timeout in force, ns (None before the first decision).
    #[getter]
    fn current_ns(&self) -> Option<u64> {
        self.inner.current_ns()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BatchTimeout>()
}
