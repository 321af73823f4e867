//! The golden-section search policy (`irqlab_policy::search`) as a Python
//! class, so that `irqlab tune` (and a real controller) drive the same code
//! the simulator's controllers use. Conversion only.

use irqlab_policy::search::{Goal, GoldenSection as Policy, Reuse, Step};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// `GoldenSection(min, max, accept, maximize=True, reuse=False)`: the
/// search over [min, max] that stops when the interval is no wider than
/// `accept`; `reuse` keeps the surviving probe's measurement (one
/// measurement per iteration, for a system that does not change).
#[pyclass(module = "irqlab._core")]
pub struct GoldenSection {
    inner: Policy,
}

fn step(s: Step) -> (bool, f64) {
    match s {
        Step::Measure(x) => (false, x),
        Step::Hold(x) => (true, x),
    }
}

#[pymethods]
impl GoldenSection {
    #[new]
    #[pyo3(signature = (min, max, accept, maximize=true, reuse=false))]
    fn new(min: f64, max: f64, accept: f64, maximize: bool, reuse: bool) -> PyResult<Self> {
        let goal = if maximize { Goal::Maximize } else { Goal::Minimize };
        let reuse = if reuse { Reuse::Surviving } else { Reuse::Never };
        Policy::new(min, max, accept, goal, reuse).map(|inner| GoldenSection { inner }).map_err(PyValueError::new_err)
    }

    /// `(done, value)`: measure the objective at `value`, or (done) hold it.
    fn probe(&self) -> (bool, f64) {
        step(self.inner.probe())
    }

    /// The objective measured where `probe` said; the next `(done, value)`.
    fn observe(&mut self, value: f64) -> (bool, f64) {
        step(self.inner.observe(value))
    }

    /// Search the whole range again.
    fn restart(&mut self) {
        self.inner.restart()
    }

    #[getter]
    fn evaluations(&self) -> u64 {
        self.inner.evaluations()
    }

    #[getter]
    fn done(&self) -> bool {
        self.inner.done()
    }

    #[getter]
    fn best(&self) -> f64 {
        self.inner.best()
    }

    #[getter]
    fn interval(&self) -> (f64, f64) {
        self.inner.interval()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<GoldenSection>()
}
