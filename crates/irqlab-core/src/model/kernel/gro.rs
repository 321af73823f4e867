//! Generic receive offload as the bulk receiver needs it
//! (`net/core/gro.c`): frames of one TCP flow taken by a poll are merged
//! into one large packet before the stack sees them, so the per-packet
//! work above GRO (steering, the protocol, the socket) is paid once per
//! merged packet.
//!
//! Held packets sit in `GRO_HASH_BUCKETS` (8) buckets by flow hash, at
//! most `MAX_GRO_SKBS` (8) per bucket; a full bucket flushes its oldest
//! (`gro_flush_oldest`). A packet that cannot grow by another frame within
//! `gro_max_size` is flushed and the frame starts a new one
//! (`skb_gro_receive` → -E2BIG). When the poll completes the NAPI
//! (`napi_complete_done`) everything held is flushed; a poll that used its
//! whole weight flushes only what was first held in an earlier jiffy
//! (`__napi_poll` → `napi_gro_flush(n, HZ >= 1000)`, whose
//! `__napi_gro_flush_chain` stops at a packet whose `age` is this jiffy,
//! at HZ = 1000; at a lower HZ everything is flushed, `napi.hz`). Not modelled: the
//! PSH flag that ends a merge early (iperf3 writes 128 KiB, so a PSH about
//! every 90 segments, above the 45 a merge can hold).

use crate::engine::Nanos;

/// A packet the stack sees: one frame, or several merged by GRO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Skb {
    pub conn: u32,
    /// TCP segments (frames) in it.
    pub segs: u32,
    /// Payload bytes.
    pub bytes: u32,
    /// When the sender sent its first segment.
    pub sent_ns: Nanos,
    /// When its first frame reached the RX ring.
    pub arrived_ns: Nanos,
}

const GRO_HASH_BUCKETS: usize = 8;
const MAX_GRO_SKBS: usize = 8;
/// One jiffy at HZ=1000: held packets from an earlier jiffy are flushed
/// even by a poll that used its whole weight.
const JIFFY_NS: Nanos = 1_000_000;

/// Per NAPI: the packets GRO holds (`napi->gro.hash`).
#[derive(Clone, Debug, Default)]
pub struct GroTable {
    buckets: [Vec<(Skb, Nanos)>; GRO_HASH_BUCKETS],
}

impl GroTable {
    /// `dev_gro_receive` of a frame of `conn` (flow hash `hash`) with
    /// `payload` bytes, at `now`; merges hold at most `max_segs` segments.
    /// Packets it flushes go to `out`.
    #[allow(clippy::too_many_arguments)]
    pub fn receive(
        &mut self,
        conn: u32,
        hash: u32,
        payload: u32,
        sent_ns: Nanos,
        arrived_ns: Nanos,
        now: Nanos,
        max_segs: u32,
        out: &mut Vec<Skb>,
    ) {
        let bucket = &mut self.buckets[hash as usize & (GRO_HASH_BUCKETS - 1)];
        if let Some(i) = bucket.iter().position(|(s, _)| s.conn == conn) {
            let held = &mut bucket[i].0;
            if held.segs < max_segs {
                held.segs += 1;
                held.bytes += payload;
                return;
            }
            // Full: flushed, the frame starts a new packet.
            out.push(bucket.remove(i).0);
        } else if bucket.len() == MAX_GRO_SKBS {
            out.push(bucket.remove(0).0);
        }
        bucket.push((
            Skb {
                conn,
                segs: 1,
                bytes: payload,
                sent_ns,
                arrived_ns,
            },
            now,
        ));
    }

    /// `napi_gro_flush`: everything (`all`), or what was first held in an
    /// earlier jiffy than `now`'s; oldest first within a bucket.
    pub fn flush(&mut self, now: Nanos, all: bool, out: &mut Vec<Skb>) {
        for bucket in &mut self.buckets {
            if all {
                out.extend(bucket.drain(..).map(|(s, _)| s));
            } else {
                bucket.retain(|&(s, born)| {
                    let old = born / JIFFY_NS < now / JIFFY_NS;
                    if old {
                        out.push(s);
                    }
                    !old
                });
            }
        }
    }

    /// Packets held.
    pub fn held(&self) -> usize {
        self.buckets.iter().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_of_a_flow_merge_up_to_the_limit_then_start_a_new_packet() {
        let mut g = GroTable::default();
        let mut out = Vec::new();
        for i in 0..7 {
            g.receive(3, 0xabc, 1448, i, i, i, 3, &mut out);
        }
        // 3 + 3 flushed when the 4th and 7th frames could not join; 1 held.
        assert_eq!(out.iter().map(|s| s.segs).collect::<Vec<_>>(), vec![3, 3]);
        assert_eq!(out[0].bytes, 3 * 1448);
        assert_eq!((out[0].sent_ns, out[1].sent_ns), (0, 3));
        assert_eq!(g.held(), 1);
        g.flush(10, true, &mut out);
        assert_eq!(out.len(), 3);
        assert_eq!(g.held(), 0);
    }

    #[test]
    fn a_full_bucket_flushes_its_oldest_and_old_packets_leave_after_a_jiffy() {
        let mut g = GroTable::default();
        let mut out = Vec::new();
        // Nine flows in one bucket (same low bits of the hash).
        for conn in 0..9 {
            g.receive(conn, 8 * conn, 1000, 0, 0, conn as u64, 45, &mut out);
        }
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].conn, 0);
        g.flush(JIFFY_NS - 1, false, &mut out);
        assert_eq!(out.len(), 1, "still the same jiffy: nothing is old");
        g.receive(9, 1, 1000, 0, 0, JIFFY_NS, 45, &mut out);
        g.flush(JIFFY_NS + 3, false, &mut out);
        // The eight held since the first jiffy go; the one of this jiffy stays.
        assert_eq!(
            out.iter().map(|s| s.conn).collect::<Vec<_>>(),
            vec![0, 1, 2, 3, 4, 5, 6, 7, 8]
        );
        assert_eq!(g.held(), 1);
    }
}
