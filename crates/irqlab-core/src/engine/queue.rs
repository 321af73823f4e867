//! The event queue: a binary heap keyed by `(time, sequence)`. The sequence
//! number increases monotonically with every push, so events scheduled for the
//! same instant leave in the order they were scheduled (as in SimPy's
//! `(time, priority, eid)` heap and nexosim's priority queue).
//!
//! For speed the heap holds 16-byte keys only: the time in the upper 64 bits,
//! and below it one word with the sequence number in its upper 40 bits and
//! the index of the event's slot in its lower 24 bits. Events themselves stay put in a slab, so sifting
//! moves keys, never payloads. Ordering by that word is ordering by sequence,
//! since sequence numbers are unique.

use super::time::Nanos;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const SLOT_BITS: u32 = 24;
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;
/// Events pending at once (2^24); far beyond any scenario's needs.
pub const MAX_PENDING: usize = 1 << SLOT_BITS;

pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<u128>>,
    slots: Vec<Option<E>>,
    free: Vec<u32>,
    next_seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(4096), slots: Vec::with_capacity(4096), free: Vec::new(), next_seq: 0 }
    }

    #[inline]
    pub fn push(&mut self, time: Nanos, event: E) {
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(event);
                s
            }
            None => {
                assert!(self.slots.len() < MAX_PENDING, "more than {MAX_PENDING} events pending");
                self.slots.push(Some(event));
                (self.slots.len() - 1) as u32
            }
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse(((time as u128) << 64) | ((seq << SLOT_BITS) | slot as u64) as u128));
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        let Reverse(key) = self.heap.pop()?;
        let (time, word) = ((key >> 64) as Nanos, key as u64);
        let slot = (word & SLOT_MASK) as u32;
        self.free.push(slot);
        let ev = self.slots[slot as usize].take().expect("slot of a pending event");
        Some((time, ev))
    }

    #[inline]
    pub fn peek_time(&self) -> Option<Nanos> {
        self.heap.peek().map(|Reverse(k)| (*k >> 64) as Nanos)
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn orders_by_time_then_sequence() {
        let mut q = EventQueue::new();
        for (t, e) in [(7, 'a'), (3, 'b'), (7, 'c'), (3, 'd'), (0, 'e')] {
            q.push(t, e);
        }
        let out: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(out, vec![(0, 'e'), (3, 'b'), (3, 'd'), (7, 'a'), (7, 'c')]);
    }

    #[test]
    fn a_random_interleaving_pops_in_key_order() {
        // Pushes and pops mixed, many equal times: the pops must come out
        // sorted by (time, push order), as a reference sort says.
        let mut q = EventQueue::new();
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut rand = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut pending: Vec<(u64, u64)> = Vec::new();
        let mut now = 0u64;
        let mut id = 0u64;
        for _ in 0..20_000 {
            if rand() % 3 != 0 || pending.is_empty() {
                let t = now + rand() % 50;
                q.push(t, id);
                pending.push((t, id));
                id += 1;
            } else {
                pending.sort_unstable();
                let want = pending.remove(0);
                let got = q.pop().unwrap();
                assert_eq!(got, want);
                now = got.0;
            }
        }
        pending.sort_unstable();
        let rest: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(rest, pending);
    }

    #[test]
    fn slots_are_reused_and_order_survives_reuse() {
        let mut q = EventQueue::new();
        q.push(5, 1);
        q.push(5, 2);
        assert_eq!(q.pop(), Some((5, 1)));
        // Slot 0 is reused by a later event at the same time: it must still
        // leave after the earlier-scheduled one.
        q.push(5, 3);
        assert_eq!(q.slots.len(), 2);
        assert_eq!(q.pop(), Some((5, 2)));
        assert_eq!(q.pop(), Some((5, 3)));
        assert!(q.is_empty());
    }
}
