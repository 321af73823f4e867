//! The HBA's path to the array and back: a read command reaches the
//! array's storage processor, which serves commands one at a time from its
//! cache (`storage.array_service_ns` each, fixed or exponential), then the
//! data crosses the Fibre Channel link, which carries one transfer at a
//! time at `storage.link_mb_per_s`; the rest of the response time
//! (fabric, ports, cache lookup) overlaps between commands
//! (`storage.array_latency_ns`). Both stations are first come, first
//! served, so reads complete in the order they were issued, and the
//! completion time is known at the issue: one event per read.

use crate::engine::{Nanos, StreamRng};
use crate::scenario::{ArrayService, StorageCfg};
use rand::Rng;

/// FCP_DATA frames carry 2048 bytes of payload each.
pub const FC_FRAME_PAYLOAD_BYTES: u64 = 2048;
/// Per frame on the wire besides the payload: the 24-byte header, CRC 4,
/// SOF and EOF 4 each, and at least six 4-byte idle words between frames.
pub const FC_FRAME_OVERHEAD_BYTES: u64 = 24 + 4 + 4 + 4 + 24;

pub struct Array {
    service_ns: Nanos,
    exponential: bool,
    latency_ns: Nanos,
    /// Transfer time of one read's data frames on the link.
    transfer_ns: Nanos,
    /// When the storage processor and the link are next free.
    sp_free_ns: Nanos,
    link_free_ns: Nanos,
    rng: StreamRng,
}

impl Array {
    pub fn new(c: &StorageCfg, rng: StreamRng) -> Self {
        let frames = (c.block_bytes as u64).div_ceil(FC_FRAME_PAYLOAD_BYTES);
        let wire_bytes = c.block_bytes as u64 + frames * FC_FRAME_OVERHEAD_BYTES;
        // MB/s is bytes per µs.
        let transfer_ns = (wire_bytes as f64 * 1e3 / c.link_mb_per_s).round() as Nanos;
        Array {
            service_ns: c.array_service_ns,
            exponential: c.array_service == ArrayService::Exponential,
            latency_ns: c.array_latency_ns,
            transfer_ns,
            sp_free_ns: 0,
            link_free_ns: 0,
            rng,
        }
    }

    /// A read issued by the HBA at `now`: when its status reaches the HBA.
    pub fn submit(&mut self, now: Nanos) -> Nanos {
        let service = if self.exponential && self.service_ns > 0 {
            let u: f64 = self.rng.gen::<f64>();
            (-(1.0 - u).ln() * self.service_ns as f64).round() as Nanos
        } else {
            self.service_ns
        };
        let start = now.max(self.sp_free_ns);
        self.sp_free_ns = start + service;
        let xfer = self.sp_free_ns.max(self.link_free_ns);
        self.link_free_ns = xfer + self.transfer_ns;
        self.link_free_ns + self.latency_ns
    }

    pub fn transfer_ns(&self) -> Nanos {
        self.transfer_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::RngStreams;

    fn cfg(service: ArrayService) -> StorageCfg {
        StorageCfg { array_service: service, array_service_ns: 20_000, array_latency_ns: 100_000, ..StorageCfg::default() }
    }

    fn rng() -> StreamRng {
        RngStreams::new(1).stream(crate::engine::rng::kind::SERVICE, 99)
    }

    #[test]
    fn a_4k_read_on_4gfc_takes_its_frames_time() {
        let a = Array::new(&cfg(ArrayService::Fixed), rng());
        // 4096 bytes in two frames of 60 bytes' overhead at 400 bytes/µs.
        assert_eq!(a.transfer_ns(), ((4096 + 120) as f64 * 1e3 / 400.0).round() as u64);
    }

    #[test]
    fn one_read_alone_sees_service_transfer_and_latency() {
        let mut a = Array::new(&cfg(ArrayService::Fixed), rng());
        let t = a.transfer_ns();
        assert_eq!(a.submit(1_000), 1_000 + 20_000 + t + 100_000);
    }

    #[test]
    fn reads_issued_together_leave_one_service_time_apart_in_order() {
        let mut a = Array::new(&cfg(ArrayService::Fixed), rng());
        let done: Vec<_> = (0..4).map(|_| a.submit(0)).collect();
        for w in done.windows(2) {
            assert_eq!(w[1] - w[0], 20_000);
        }
    }

    #[test]
    fn saturated_throughput_is_one_over_the_mean_service_time() {
        for kind in [ArrayService::Fixed, ArrayService::Exponential] {
            let mut a = Array::new(&cfg(kind), rng());
            let n = 20_000u64;
            let mut prev = 0;
            for _ in 0..n {
                let d = a.submit(0);
                assert!(d >= prev, "in order");
                prev = d;
            }
            let per_read = (prev - 100_000) as f64 / n as f64;
            assert!((per_read - 20_000.0).abs() < 20_000.0 * 0.03, "{kind:?}: {per_read}");
        }
    }
}
