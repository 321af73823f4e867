//! Workload generators as mutilate builds them: ETC key and value sizes and
//! the inter-arrival distributions (exponential, `fb_ia`); and the
//! server's service times.

pub mod distributions;
pub mod etc;
pub mod etc_table;
pub mod interarrival;
pub mod service;

pub use distributions::{GeneralizedPareto, Gev};
pub use etc::{EtcKeySize, EtcValueSize, SizeDist, SizeField};
pub use interarrival::{InterArrival, InterArrivalKind};
pub use service::ServiceDraws;
