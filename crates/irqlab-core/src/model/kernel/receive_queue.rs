//! A socket's receive queue (`sk_receive_queue`): the requests delivered
//! and not yet read, oldest first.
//!
//! Why not a plain `VecDeque`: in a closed loop a connection holds one
//! request at a time, and a server of hundreds of cores touches tens of
//! thousands of connections between two requests of one. A `VecDeque`'s
//! packets live in an allocation of their own, one more cache miss per
//! request at delivery and one at the read (at 512 cores `perf` put a
//! sixth of the event loop's samples on the read's load). Here the oldest
//! request lives in the connection itself, on the cache line the delivery
//! and the read touch anyway; only a second request and later go to an
//! allocation.

use crate::model::devices::nic::RxPacket;
use std::collections::VecDeque;

const NONE: RxPacket = RxPacket { conn: 0, sent_ns: 0, arrived_ns: 0, bytes: 0, reply_bytes: 0 };

#[derive(Clone, Debug)]
pub struct ReceiveQueue {
    /// The oldest request, when `len` > 0.
    head: RxPacket,
    len: u32,
    /// The requests after `head`, oldest first (kept once allocated).
    more: Option<Box<VecDeque<RxPacket>>>,
}

impl Default for ReceiveQueue {
    fn default() -> Self {
        ReceiveQueue { head: NONE, len: 0, more: None }
    }
}

impl ReceiveQueue {
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Queue `p` behind every request already here.
    #[inline(always)]
    pub fn push_back(&mut self, p: RxPacket) {
        if self.len == 0 {
            self.head = p;
        } else {
            self.more.get_or_insert_with(Default::default).push_back(p);
        }
        self.len += 1;
    }

    /// Move every request, oldest first, to the back of `out`.
    #[inline(always)]
    pub fn move_into(&mut self, out: &mut VecDeque<RxPacket>) {
        if self.len == 0 {
            return;
        }
        out.push_back(self.head);
        if self.len > 1 {
            out.extend(self.more.as_mut().expect("requests after the head").drain(..));
        }
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(i: u64) -> RxPacket {
        RxPacket { conn: i as u32, sent_ns: i, arrived_ns: i + 1, bytes: 10, reply_bytes: 20 }
    }

    #[test]
    fn requests_leave_in_the_order_they_came_however_many() {
        let mut q = ReceiveQueue::default();
        let mut out = VecDeque::new();
        let mut next = 0;
        let mut expect = 0;
        // One at a time, then bursts of up to five, the allocation reused.
        for burst in [1, 1, 3, 1, 5, 2, 1] {
            for _ in 0..burst {
                q.push_back(pkt(next));
                next += 1;
            }
            assert_eq!(q.len(), burst);
            q.move_into(&mut out);
            assert!(q.is_empty());
            while let Some(p) = out.pop_front() {
                assert_eq!(p.sent_ns, expect);
                expect += 1;
            }
        }
        assert_eq!(expect, next);
        q.move_into(&mut out);
        assert!(out.is_empty(), "an empty queue moves nothing");
    }

    #[test]
    fn a_connection_stays_on_one_cache_line() {
        assert!(std::mem::size_of::<crate::model::kernel::Conn>() <= 64);
        assert_eq!(std::mem::align_of::<crate::model::kernel::Conn>(), 64);
    }
}
