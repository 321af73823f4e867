//! Interrupt throttling rate (ITR) policies of an Intel 82599 interrupt
//! vector, as the ixgbe driver computes them (Emmerich et al., "Optimizing
//! Latency and CPU Load in Packet Processing Systems", SPECTS 2015, §II-B
//! and §V).
//!
//! The driver keeps one value per vector, `q_vector->itr`, and writes it to
//! the vector's EITR register (`ixgbe_write_eitr`). The value is in units
//! of 0.25 µs as the driver reads it (`itr >> 2` is microseconds, ethtool's
//! `rx-usecs` is stored as `usecs << 2`); the 82599 takes bits 11:3 as the
//! minimum gap between two interrupts of the vector in 2.048 µs units, so
//! the hardware interval is `(itr & 0xFF8) × 256 ns` ([`Eitr::interval_ns`]).
//!
//! A policy is asked when the driver leaves polling mode (`ixgbe_poll`:
//! "all work done", `napi_complete`, then `ixgbe_set_itr` when the ITR is
//! dynamic, then the vector is re-enabled). The sample carries what the
//! vector's rings completed since the previous sample and the time; the
//! policy keeps the running totals the driver keeps in its ring containers.
//!
//! - [`static_itr`]: a fixed rate (`InterruptThrottleRate=N`, or `ethtool
//!   -C rx-usecs N`), or throttling off (0).
//! - [`ixgbe_itr`]: ixgbe's dynamic 3-state ITR (`ixgbe_update_itr` and
//!   `ixgbe_set_itr` of ixgbe 3.14.5/3.23.2, the paper's version).
//! - [`linear_itr`]: the paper's linear packet-rate ITR (§V-C, the authors'
//!   patch to `ixgbe_update_itr` for ixgbe 3.23.2).
//! - [`golden_itr`]: the SR-IOV paper's golden-section search of the rate
//!   on measured throughput (Guan et al., §IV).

pub mod golden_itr;
pub mod ixgbe_itr;
pub mod linear_itr;
pub mod static_itr;

pub use golden_itr::{GoldenItr, GoldenItrParams};
pub use ixgbe_itr::IxgbeItr;
pub use linear_itr::LinearItr;
pub use static_itr::StaticItr;

/// `IXGBE_MAX_EITR`: the interval bits of the EITR register (11:3).
pub const IXGBE_MAX_EITR: u16 = 0x0FF8;
/// `IXGBE_100K_ITR`, `IXGBE_20K_ITR`, `IXGBE_8K_ITR` (ixgbe.h): the three
/// values of the dynamic ITR, in the driver's 0.25 µs units.
pub const IXGBE_100K_ITR: u16 = 40;
pub const IXGBE_20K_ITR: u16 = 200;
pub const IXGBE_8K_ITR: u16 = 500;
/// `IXGBE_MIN_INT_RATE` and `IXGBE_MAX_INT_RATE` (ixgbe.h): the rates
/// `InterruptThrottleRate` accepts besides 0 (off) and 1 (dynamic).
pub const IXGBE_MIN_INT_RATE: u32 = 956;
pub const IXGBE_MAX_INT_RATE: u32 = 488_281;

/// A vector's ITR value as ixgbe keeps it (`q_vector->itr`, 0.25 µs units).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Eitr(pub u16);

impl Eitr {
    /// Throttling off: the vector may interrupt at any time.
    pub const OFF: Eitr = Eitr(0);

    /// The value ixgbe programs for a rate of `per_s` interrupts per second
    /// (`ixgbe_param.c`: `(1000000 / itr) << 2`); 0 is off.
    pub fn from_rate(per_s: u32) -> Eitr {
        if per_s == 0 {
            return Eitr::OFF;
        }
        Eitr((((1_000_000 / per_s) << 2).min(u16::MAX as u32)) as u16)
    }

    /// The minimum gap between two interrupts of the vector the 82599
    /// enforces, ns: bits 11:3 of the value in 2.048 µs units.
    pub fn interval_ns(self) -> u64 {
        (self.0 & IXGBE_MAX_EITR) as u64 * 256
    }

    /// The most interrupts per second the vector can raise (0: unbounded).
    pub fn max_rate_per_s(self) -> f64 {
        match self.interval_ns() {
            0 => 0.0,
            ns => 1e9 / ns as f64,
        }
    }
}

/// What a vector's rings completed since the previous sample, and when the
/// driver looked (`ring_container->total_packets` / `total_bytes` of its RX
/// and TX rings, which `ixgbe_clean_rx_irq` and `ixgbe_clean_tx_irq` add
/// to at every poll).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ItrSample {
    /// The caller's monotonic clock, ns (the simulated time, or
    /// `CLOCK_MONOTONIC_RAW` on a real host).
    pub time_ns: u64,
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
}

/// An interrupt throttling policy: told what the vector did, it returns the
/// new ITR value to write to the EITR register, or None to leave it.
pub trait ItrPolicy {
    /// The value in force (as initialised, or as last decided).
    fn current(&self) -> Eitr;
    /// The driver leaves polling mode: decide.
    fn observe(&mut self, s: ItrSample) -> Option<Eitr>;
}
