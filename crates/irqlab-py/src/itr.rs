//! The 82599's ITR policies (`irqlab_policy::itr`: ixgbe's 3-state ITR and
//! the ITR paper's linear one) as a Python class, so that a policy written
//! in Python (`irqlab.policy.itr.Itr`) drives the code the simulated
//! vectors run. Conversion only.

use irqlab_policy::itr::linear_itr::LinearItrParams;
use irqlab_policy::itr::{Eitr, ItrPolicy, ItrSample, IxgbeItr, LinearItr};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// `ItrPolicy(kind)`: `"ixgbe"` (the driver's dynamic 3-state ITR) or
/// `"linear"` (the paper's, with its defaults: 100 000/s at no load, 8 000/s
/// at 2.1 Mpps and above, adapting at most every 50 µs).
#[pyclass(module = "irqlab._core", name = "ItrPolicy")]
pub struct PyItrPolicy {
    inner: Box<dyn ItrPolicy + Send + Sync>,
}

fn rate(itr: Eitr) -> Option<u32> {
    // ixgbe's value is (1000000 / rate) << 2 (ixgbe_param.c); 0 is off.
    (itr.0 > 0).then(|| 4_000_000 / itr.0 as u32)
}

#[pymethods]
impl PyItrPolicy {
    #[new]
    fn new(kind: &str) -> PyResult<Self> {
        let inner: Box<dyn ItrPolicy + Send + Sync> = match kind {
            "ixgbe" => Box::new(IxgbeItr::new()),
            "linear" => Box::new(LinearItr::new(LinearItrParams::default()).map_err(PyValueError::new_err)?),
            _ => return Err(PyValueError::new_err(format!("kind must be \"ixgbe\" or \"linear\" (got {kind:?})"))),
        };
        Ok(PyItrPolicy { inner })
    }

    /// `ixgbe_set_itr` with what the vector's rings completed since the last
    /// call: the new rate in interrupts per second when the policy writes a
    /// new value (None: unchanged, or throttling off).
    fn observe(&mut self, time_ns: u64, rx_packets: u64, rx_bytes: u64, tx_packets: u64, tx_bytes: u64) -> Option<u32> {
        let s = ItrSample { time_ns, rx_packets, rx_bytes, tx_packets, tx_bytes };
        self.inner.observe(s).and_then(rate)
    }

    /// The rate in force, interrupts per second (None: off).
    #[getter]
    fn rate_per_s(&self) -> Option<u32> {
        rate(self.inner.current())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyItrPolicy>()
}
