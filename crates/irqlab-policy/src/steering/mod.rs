//! Packet steering: which core processes a received packet, as Linux and
//! the IAPS paper (Helbig & Kim, ICOIN 2025) decide it.
//!
//! - [`rss`]: receive side scaling in the NIC, the baseline: the Toeplitz
//!   hash of a flow's addresses and ports picks an RX queue through the
//!   indirection table, and the queue's interrupt picks the core.
//! - [`rps`]: receive packet steering (`get_rps_cpu`'s `rps_map` path):
//!   the flow hash picks a core of the RX queue's `rps_cpus`.
//! - [`rfs`]: receive flow steering (`get_rps_cpu`'s flow-table path):
//!   the core where the application last read the flow, switched only once
//!   the flow's earlier packets have left the old core's backlog.
//! - [`iaps`]: interrupt avoidance packet steering (paper §III): a core
//!   whose backlog is already non-empty, so that no inter-processor
//!   interrupt is needed.
//!
//! Each is a pure decision function over what the kernel would see at that
//! moment (the flow's hash, per-CPU backlog counters), with the tables it
//! keeps as its own state; no engine, no I/O, no clock.

pub mod iaps;
pub mod rfs;
pub mod rps;
pub mod rss;

pub use iaps::{Iaps, IapsCase};
pub use rfs::{Rfs, RfsParams};
pub use rps::RpsMap;
pub use rss::RssTable;

/// A CPU number, as the kernel's `int cpu`.
pub type Cpu = u32;

/// `reciprocal_scale(val, ep_ro)` (`include/linux/math.h`): maps a 32-bit
/// hash uniformly onto `0..n` with a multiply and a shift, as
/// `get_rps_cpu` indexes `rps_map->cpus`.
#[inline]
pub fn reciprocal_scale(hash: u32, n: u32) -> u32 {
    ((u64::from(hash) * u64::from(n)) >> 32) as u32
}

/// What steering sees of one CPU's backlog (`struct softnet_data`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backlog {
    /// `input_queue_head`: packets dequeued from this CPU's backlog so far
    /// (wrapping), the counter RFS compares a flow's `last_qtail` with.
    pub input_queue_head: u32,
    /// Packets enqueued to it and not yet processed (its
    /// `input_pkt_queue` and `process_queue`): `input_queue_tail` less
    /// `input_queue_head`.
    pub len: u32,
}

impl Backlog {
    /// `input_queue_tail` as `enqueue_to_backlog` computes it after adding
    /// a packet: head plus the queue's length.
    pub fn tail(&self) -> u32 {
        self.input_queue_head.wrapping_add(self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reciprocal_scale_spreads_the_hash_range_evenly() {
        // (inputs → output) as the kernel computes them.
        for (hash, n, want) in [
            (0u32, 8u32, 0u32),
            (u32::MAX, 8, 7),
            (0x8000_0000, 8, 4),
            (0x1fff_ffff, 8, 0),
            (0x2000_0000, 8, 1),
            (0x5555_5555, 3, 0),
            (0x5555_5556, 3, 1),
            (12345, 1, 0),
        ] {
            assert_eq!(reciprocal_scale(hash, n), want, "reciprocal_scale({hash:#x}, {n})");
        }
    }
}
