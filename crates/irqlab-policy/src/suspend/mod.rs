//! IRQ suspension (Linux 6.13, the thesis's mechanism): how long the
//! application may keep its NAPI's interrupts suspended.
//!
//! - [`batch_timeout`]: `irq-suspend-timeout` from the application's
//!   observed batch times.

pub mod batch_timeout;

pub use batch_timeout::BatchTimeout;
