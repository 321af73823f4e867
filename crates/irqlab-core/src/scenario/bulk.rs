//! The `[bulk]` section: long-lived TCP streams into the server
//! (`app.kind = "bulk"`), as iperf3 runs them: a sender per stream on
//! another host, one receiving thread per stream on the server doing large
//! blocking reads. The streams share one link whose rate is the bottleneck
//! of the sending host (the IAPS paper's NICs sit on 8 PCIe 3.0 lanes,
//! "a little over 50 Gbps", §IV-A). The model of the streams is
//! `model/workloads/tcp_stream.rs`; what it simplifies is said there.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BulkCfg {
    /// Parallel streams (iperf3 `-P`), each its own connection and thread.
    /// With several VMs (`vm.count`) stream i goes to VM i mod `vm.count`;
    /// 0 means one stream per VM.
    pub streams: u32,
    /// Rate of the link the streams share, Gbit/s of Ethernet frames with
    /// preamble and inter-frame gap.
    pub link_gbps: f64,
    /// TCP payload per segment: 1448 bytes, an MTU of 1500 less 20 bytes of
    /// IP, 20 of TCP and 12 of timestamps.
    pub mss_bytes: u32,
    /// Segments of one stream its TX queue sends in one burst at most (a
    /// TSO packet: `gso_max_size` 65536 bytes is 45 segments of 1448).
    pub tso_max_segments: u32,
    /// TX queues of the sending host the streams are spread over (stream i
    /// on queue i mod this); the link takes one frame of each queue with
    /// data in turn. Default 8: the IAPS paper limits both hosts' iperf3
    /// to eight cores, each with its own TX queue.
    pub sender_queues: u32,
    /// Largest GRO packet, bytes (`gro_max_size`, 65536).
    pub gro_max_bytes: u32,
    /// Bytes each `read` asks for (iperf3's TCP block, 128 KiB).
    pub read_bytes: u32,
    /// The receive window a socket can advertise, bytes: the most of
    /// `net.ipv4.tcp_rmem` (6 MiB) that autotuning grows it to.
    pub rcvbuf_bytes: u64,
    /// Congestion window of a new stream, segments (`TCP_INIT_CWND` 10).
    pub initial_cwnd: u32,
    /// Window kept after a loss (CUBIC's `beta` 717/1024 ≈ 0.7).
    pub beta: f64,
}

impl Default for BulkCfg {
    fn default() -> Self {
        BulkCfg {
            streams: 1,
            link_gbps: 50.0,
            mss_bytes: 1448,
            tso_max_segments: 45,
            sender_queues: 8,
            gro_max_bytes: 65_536,
            read_bytes: 131_072,
            rcvbuf_bytes: 6 * 1024 * 1024,
            initial_cwnd: 10,
            beta: 0.7,
        }
    }
}

/// Header bytes of a segment on the wire besides its payload: IP 20, TCP
/// 20, timestamps 12, Ethernet 14 and FCS 4, preamble 8, inter-frame gap 12.
pub const WIRE_OVERHEAD_BYTES: u32 = 20 + 20 + 12 + 14 + 4 + 8 + 12;
/// Of those, what the driver counts in `skb->len` (no FCS, preamble, gap).
pub const FRAME_OVERHEAD_BYTES: u32 = 20 + 20 + 12 + 14;
