//! Net DIM (`irqlab_policy::dim`, the port of Linux `lib/dim` the
//! simulator's completion queues run) as a Python class, so that a policy
//! written in Python (`irqlab.policy.Dim`) drives the same code. Conversion
//! only.

use irqlab_policy::dim::{DimCqPeriodMode, DimDirection, DimSample, NetDim as Inner};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// `NetDim(mode="cqe", direction="rx")`: one completion queue's DIM, in the
/// state mlx5 allocates it (`NetDim::zeroed`: the first window opens at the
/// first sample, the default profile in force).
#[pyclass(module = "irqlab._core")]
pub struct NetDim {
    inner: Inner,
}

#[pymethods]
impl NetDim {
    #[new]
    #[pyo3(signature = (mode="cqe", direction="rx"))]
    fn new(mode: &str, direction: &str) -> PyResult<Self> {
        let mode = match mode {
            "cqe" => DimCqPeriodMode::StartFromCqe,
            "eqe" => DimCqPeriodMode::StartFromEqe,
            _ => return Err(PyValueError::new_err(format!("mode must be \"cqe\" or \"eqe\" (got {mode:?})"))),
        };
        let direction = match direction {
            "rx" => DimDirection::Rx,
            "tx" => DimDirection::Tx,
            _ => return Err(PyValueError::new_err(format!("direction must be \"rx\" or \"tx\" (got {direction:?})"))),
        };
        Ok(NetDim { inner: Inner::zeroed(mode, direction) })
    }

    /// `net_dim(dim, sample)` with the CQ's counters so far (interrupts,
    /// packets, bytes; DIM keeps their low 16, 32 and 32 bits as the kernel
    /// does): the new moderation `(usec, frames)` when DIM changes profile
    /// (then call `work_done()` once it is applied), else None.
    fn on_sample(&mut self, time_ns: u64, events: u64, packets: u64, bytes: u64) -> Option<(u16, u16)> {
        self.inner.on_sample(DimSample::new(time_ns, events as u16, packets, bytes)).map(|m| (m.usec, m.pkts))
    }

    /// The driver applied the moderation (`dim->state = DIM_START_MEASURE`).
    fn work_done(&mut self) {
        self.inner.work_done()
    }

    /// The profile in force (0 to 4).
    #[getter]
    fn profile_ix(&self) -> u8 {
        self.inner.profile_ix()
    }

    /// The moderation in force, `(usec, frames)`.
    #[getter]
    fn moderation(&self) -> (u16, u16) {
        let m = self.inner.current_moderation();
        (m.usec, m.pkts)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NetDim>()
}
