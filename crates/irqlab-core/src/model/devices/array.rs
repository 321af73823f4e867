//! The HBA's path to the array and back, as Fibre Channel Protocol
//! exchanges on a full-duplex link. A command reaches the array's storage
//! processor, which serves commands one at a time from its cache
//! (`storage.array_service_ns` each, fixed or exponential). A read's data
//! then crosses the link towards the host, followed by its status; a
//! write's transfer-ready goes towards the host, its data towards the
//! array, then its status towards the host. Each direction carries one
//! frame at a time at `storage.link_mb_per_s` of 8b/10b characters. The
//! rest of the response time (fabric, ports, cache lookup) overlaps
//! between commands (`storage.array_latency_ns`).
//!
//! The frames (docs/notes/vic-storage-path-sources.md, §1): a read is
//! FCP_CMND (32-byte payload) to the target, FCP_DATA frames of up to 2048
//! bytes and one FCP_RSP (24 bytes on good status) back; a write adds
//! FCP_XFER_RDY (12 bytes) towards the host, and its FCP_DATA frames go
//! towards the target. Every frame adds its start and end delimiters (4
//! bytes each), its 24-byte header and CRC (4), and at least six idle
//! words (24 bytes) before the next one. The command frames (92 bytes,
//! 0.2 µs) are folded into `array_latency_ns`.
//!
//! The storage processor and each direction are first come, first served,
//! and statuses reach the HBA in the order their commands were issued (a
//! status that would overtake an earlier command's waits for it), so the
//! completion time is known at the issue: one event per command.

use crate::engine::{Nanos, StreamRng};
use crate::scenario::{ArrayService, StorageCfg};
use rand::Rng;

/// FCP_DATA frames carry up to 2048 bytes of payload each.
pub const FC_FRAME_PAYLOAD_BYTES: u64 = 2048;
/// Per frame on the wire besides the payload: the 24-byte header, CRC 4,
/// SOF and EOF 4 each, and at least six 4-byte idle words between frames.
pub const FC_FRAME_OVERHEAD_BYTES: u64 = 24 + 4 + 4 + 4 + 24;
/// FCP_RSP's payload on good status with no sense data: reserved 8,
/// status 4, residual 4, the sense and response lengths 4 each.
pub const FCP_RSP_PAYLOAD_BYTES: u64 = 24;
/// FCP_XFER_RDY's payload: the relative offset, the burst length and a
/// reserved word.
pub const FCP_XFER_RDY_PAYLOAD_BYTES: u64 = 12;

/// Bytes on the wire for `payload` bytes of FCP_DATA.
pub fn data_wire_bytes(payload: u64) -> u64 {
    payload + payload.div_ceil(FC_FRAME_PAYLOAD_BYTES) * FC_FRAME_OVERHEAD_BYTES
}

/// One frame of `payload` bytes on the wire.
pub fn frame_wire_bytes(payload: u64) -> u64 {
    payload + FC_FRAME_OVERHEAD_BYTES
}

pub struct Array {
    service_ns: Nanos,
    exponential: bool,
    latency_ns: Nanos,
    /// Wire time of one command's data frames, and of its status (with a
    /// write's transfer-ready).
    data_ns: Nanos,
    rsp_ns: Nanos,
    xfer_rdy_ns: Nanos,
    /// When the storage processor, the link towards the host and the link
    /// towards the array are next free; the last status delivered.
    sp_free_ns: Nanos,
    to_host_free_ns: Nanos,
    to_array_free_ns: Nanos,
    last_done_ns: Nanos,
    rng: StreamRng,
}

impl Array {
    pub fn new(c: &StorageCfg, rng: StreamRng) -> Self {
        // MB/s is bytes per µs.
        let ns = |bytes: u64| (bytes as f64 * 1e3 / c.link_mb_per_s).round() as Nanos;
        Array {
            service_ns: c.array_service_ns,
            exponential: c.array_service == ArrayService::Exponential,
            latency_ns: c.array_latency_ns,
            data_ns: ns(data_wire_bytes(c.block_bytes as u64)),
            rsp_ns: ns(frame_wire_bytes(FCP_RSP_PAYLOAD_BYTES)),
            xfer_rdy_ns: ns(frame_wire_bytes(FCP_XFER_RDY_PAYLOAD_BYTES)),
            sp_free_ns: 0,
            to_host_free_ns: 0,
            to_array_free_ns: 0,
            last_done_ns: 0,
            rng,
        }
    }

    /// A command issued by the HBA at `now` (a write if `write`): when its
    /// status reaches the HBA.
    pub fn submit(&mut self, now: Nanos, write: bool) -> Nanos {
        let service = if self.exponential && self.service_ns > 0 {
            let u: f64 = self.rng.gen::<f64>();
            (-(1.0 - u).ln() * self.service_ns as f64).round() as Nanos
        } else {
            self.service_ns
        };
        let start = now.max(self.sp_free_ns);
        self.sp_free_ns = start + service;
        let status_ns = if write {
            // Transfer-ready towards the host, the data towards the array,
            // then the status. The two small frames towards the host are
            // charged there at the command's turn, so that no later read
            // waits behind the status of a write whose data is still on
            // the other direction.
            let ready = self.sp_free_ns.max(self.to_host_free_ns) + self.xfer_rdy_ns;
            self.to_host_free_ns = ready + self.rsp_ns;
            let data = ready.max(self.to_array_free_ns) + self.data_ns;
            self.to_array_free_ns = data;
            data + self.rsp_ns
        } else {
            self.to_host_free_ns = self.sp_free_ns.max(self.to_host_free_ns) + self.data_ns + self.rsp_ns;
            self.to_host_free_ns
        };
        self.last_done_ns = (status_ns + self.latency_ns).max(self.last_done_ns);
        self.last_done_ns
    }

    /// A read's frames (data and status) on the link towards the host.
    pub fn read_transfer_ns(&self) -> Nanos {
        self.data_ns + self.rsp_ns
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
    fn fcp_reads_take_their_frames_bytes() {
        // docs/notes/vic-storage-path-sources.md §1.5: 4,300 bytes per 4 KB
        // read and 8,516 per 8 KB read towards the host, with 2048-byte frames.
        assert_eq!(data_wire_bytes(4096) + frame_wire_bytes(FCP_RSP_PAYLOAD_BYTES), 4300);
        assert_eq!(data_wire_bytes(8192) + frame_wire_bytes(FCP_RSP_PAYLOAD_BYTES), 8516);
        assert_eq!(data_wire_bytes(512), 572);
    }

    #[test]
    fn a_4k_read_on_4gfc_takes_its_frames_time() {
        let a = Array::new(&cfg(ArrayService::Fixed), rng());
        // 4,300 bytes at 425 characters per µs.
        assert_eq!(a.read_transfer_ns(), 10_118);
    }

    #[test]
    fn one_read_alone_sees_service_transfer_and_latency() {
        let mut a = Array::new(&cfg(ArrayService::Fixed), rng());
        let t = a.read_transfer_ns();
        assert_eq!(a.submit(1_000, false), 1_000 + 20_000 + t + 100_000);
    }

    #[test]
    fn one_write_alone_sees_service_both_directions_and_latency() {
        let mut a = Array::new(&cfg(ArrayService::Fixed), rng());
        let c = StorageCfg::default();
        let ns = |b: u64| (b as f64 * 1e3 / c.link_mb_per_s).round() as u64;
        let expect = 20_000 + ns(frame_wire_bytes(12)) + ns(data_wire_bytes(4096)) + ns(frame_wire_bytes(24)) + 100_000;
        assert_eq!(a.submit(0, true), expect);
    }

    #[test]
    fn writes_data_does_not_queue_behind_reads_data() {
        // With no service time, four reads are limited by the link towards
        // the host; writes' data goes the other way, so reads and writes
        // interleaved finish sooner than reads alone.
        let c = StorageCfg { array_service_ns: 0, array_latency_ns: 0, ..cfg(ArrayService::Fixed) };
        let mut reads = Array::new(&c, rng());
        let mut mixed = Array::new(&c, rng());
        let r = (0..8).map(|_| reads.submit(0, false)).max().unwrap();
        let m = (0..8).map(|i| mixed.submit(0, i % 2 == 1)).max().unwrap();
        assert!(m < r * 3 / 4, "mixed {m} reads {r}");
    }

    #[test]
    fn statuses_arrive_in_issue_order() {
        let c = StorageCfg { array_service_ns: 0, ..cfg(ArrayService::Fixed) };
        let mut a = Array::new(&c, rng());
        // A write then a read: the read's status would come first; it waits.
        let w = a.submit(0, true);
        let r = a.submit(0, false);
        assert!(r >= w);
    }

    #[test]
    fn reads_issued_together_leave_one_service_time_apart_in_order() {
        let mut a = Array::new(&cfg(ArrayService::Fixed), rng());
        let done: Vec<_> = (0..4).map(|_| a.submit(0, false)).collect();
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
                let d = a.submit(0, false);
                assert!(d >= prev, "in order");
                prev = d;
            }
            let per_read = (prev - 100_000) as f64 / n as f64;
            assert!((per_read - 20_000.0).abs() < 20_000.0 * 0.03, "{kind:?}: {per_read}");
        }
    }
}
