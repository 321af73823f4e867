//! The event queue, ordered by `(time, sequence)`. The sequence number
//! increases monotonically with every push, so events scheduled for the
//! same instant leave in the order they were scheduled (as in SimPy's
//! `(time, priority, eid)` heap and nexosim's priority queue).
//!
//! Two structures hold the events, and a pop takes the smaller key of the
//! two (so the order is exactly the one a single heap would give):
//!
//! - A binary heap of 16-byte keys: the time in the upper 64 bits, and
//!   below it one word with the sequence number in its upper 40 bits and
//!   the index of the event's slot in its lower 24 bits. Events themselves
//!   stay put in a slab, so sifting moves keys, never payloads. Ordering by
//!   that word is ordering by sequence, since sequence numbers are unique.
//! - A few FIFO lanes ([`LANES`]) for events that a model schedules at a
//!   fixed delay after "now" (a reply on the wire, a DMA completion): since
//!   the clock never goes back, such events are scheduled in time order, so
//!   a lane is sorted by key just by appending. A push to a lane whose last
//!   event is later goes to the heap instead, so a lane is only ever a hint.
//!   On the thesis scenario (busy-wait) three events in six are lane
//!   events, and the heap keeps about 16 keys (a segment end per core, the
//!   NAPI watchdogs) instead of about 60.
//! - Owned slots ([`EventQueue::set_owners`]): one pending event per owner,
//!   for an owner that has at most one live event at a time (a core's
//!   segment end). Pushing to an occupied slot moves the older event into
//!   the heap (it is still handled, in its order: a model ignores it as
//!   stale), so a slot too is only a hint; or, with
//!   [`EventQueue::push_owned_superseding`], drops it, for an owner that
//!   would ignore it. The slots' keys are kept in a [`Tournament`] (a flat
//!   array up to [`super::tournament::SCAN_MAX`] slots, a tree above), so
//!   a pop from a slot costs `log2` of the core count, not the core count.
//! - Chains ([`super::chain`]): a slot whose owner handed the queue the
//!   durations of its next segments (a core busy polling an empty ring)
//!   keeps its key there instead; the queue passes its events itself, in
//!   their order, counting each as handled.

use super::time::Nanos;
use super::chain::{Chained, Chains};
use super::tournament::{Tournament, TAG_BITS};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

const SLOT_BITS: u32 = TAG_BITS;
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;
/// Events pending at once (2^24); far beyond any scenario's needs.
pub const MAX_PENDING: usize = 1 << SLOT_BITS;
/// FIFO lanes of a queue (see the module's doc).
pub const LANES: usize = 4;

/// Owners from which the engine asks after each pop which owner's event
/// likely comes next ([`EventQueue::owner_hint`]), for the world to fetch
/// its state ahead. Below, the owners' state mostly stays in the cache and
/// the hint's cost (the runner-up's walk up the tree, the fetches)
/// outweighs its gain: on the thesis run, measured with the hint at every
/// size above eight cores (docs/performance.md, "Prefetching the next
/// core's state"), busy-wait lost 3-4 % at 16 and 32 cores and gained
/// 2-5 % from 64 to 128 and 7 % at 256, no-coalescing lost 3-9 % from 16
/// to 128 cores and broke even at 256; at 512 they gained 22 % and 10 %.
pub const HINT_MIN_OWNERS: usize = 256;

/// Which FIFO lane an event is scheduled in (below [`LANES`]).
pub type Lane = usize;

pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<u128>>,
    slots: Vec<Option<E>>,
    free: Vec<u32>,
    /// Each lane sorted by key; its events carry their key (sequence in the
    /// same bits as the heap's, no slot).
    lanes: [VecDeque<(u128, E)>; LANES],
    /// The key of each lane's first event ([`EMPTY`] if none), and the
    /// smallest of them with its lane: finding the next event then compares
    /// two keys, and only a pop from a lane looks at every lane's head.
    heads: [u128; LANES],
    lane_min: (u128, Next),
    /// Owned slots: each one's key ([`EMPTY`] if none; the smallest with
    /// its slot) and event.
    owned_keys: Tournament,
    owned_events: Vec<Option<E>>,
    next_seq: u64,
    /// The key of the event popped last (0 before the first).
    current: u128,
    /// Owned slots whose events the queue passes itself ([`super::chain`]);
    /// their keys are kept there instead of in `owned_keys`.
    chains: Chains,
    /// [`EventQueue::owner_hint`] answers (set with the owners, from
    /// [`HINT_MIN_OWNERS`] on; [`EventQueue::stop_hints`]).
    hinting: bool,
}

/// The head key of an empty lane: above every real key (a time below
/// `Nanos::MAX`, or a sequence number below 2^40, keeps a key under it).
const EMPTY: u128 = super::tournament::EMPTY;

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

/// Chains pass events up to this time at most (a run without an end
/// would otherwise pass them forever).
const CHAIN_TIME_MAX_NS: Nanos = Nanos::MAX / 4;

/// Where the next event is: a lane, or [`HEAP`].
type Next = usize;
const HEAP: Next = LANES;
/// `OWNED + i`: owned slot `i`.
const OWNED: Next = LANES + 1;

/// The smallest of `keys` and its index, for keys that carry their own
/// index in the slot bits (lane heads, owned slots: `key | i`; below the
/// sequence number, so the order is unchanged), or `EMPTY`: then finding
/// the index needs no tracking, and the scan no branch per key (which key
/// is smallest changes at random, and a mispredicted branch per key cost
/// more than the compare).
#[inline(always)]
fn min_tagged(keys: &[u128]) -> (u128, usize) {
    let min = keys.iter().copied().fold(EMPTY, u128::min);
    (min, if min == EMPTY { 0 } else { (min as u64 & SLOT_MASK) as usize })
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(4096),
            slots: Vec::with_capacity(4096),
            free: Vec::new(),
            lanes: std::array::from_fn(|_| VecDeque::new()),
            heads: [EMPTY; LANES],
            lane_min: (EMPTY, HEAP),
            owned_keys: Tournament::new(0),
            owned_events: Vec::new(),
            next_seq: 0,
            current: 0,
            chains: Chains::new(0),
            hinting: false,
        }
    }

    /// A key at `time` as a push would give it now, for an event the model
    /// keeps itself and may hand to [`EventQueue::push_key`] later: its
    /// order among all events is that of an event pushed now.
    #[inline(always)]
    pub fn reserve(&mut self, time: Nanos) -> u128 {
        self.next_key(time)
    }

    /// Push `event` with a key from [`EventQueue::reserve`] (into the heap).
    pub fn push_key(&mut self, key: u128, event: E) {
        debug_assert!(key & SLOT_MASK as u128 == 0, "a key from reserve");
        self.push_heap(key, event);
    }

    /// The key of the event popped last: a reserved key below it belongs to
    /// an event that would have been handled before this one.
    #[inline(always)]
    pub fn current_key(&self) -> u128 {
        self.current
    }

    /// The smallest key of an event after `time`: reserved keys below it
    /// are due at or before `time`.
    pub fn key_after(time: Nanos) -> u128 {
        ((time as u128) + 1) << 64
    }

    /// Give the queue `n` owned slots (see the module's doc); any events
    /// already in slots stay pending.
    pub fn set_owners(&mut self, n: usize) {
        assert!(self.chains.is_empty(), "no chain runs while the slots change");
        self.chains = Chains::new(n);
        let mut keys = Tournament::new(n);
        let old = std::mem::replace(&mut self.owned_keys, Tournament::new(0));
        for (i, ev) in std::mem::take(&mut self.owned_events).into_iter().enumerate() {
            let k = old.get(i);
            match ev {
                Some(ev) if i >= n => {
                    // Without its slot tag: the heap's slot bits index the slab.
                    self.push_heap(k & !(SLOT_MASK as u128), ev);
                }
                ev if i < n => {
                    keys.set(i, k);
                    self.owned_events.push(ev);
                }
                _ => {}
            }
        }
        self.owned_events.resize_with(n, || None);
        self.owned_keys = keys;
        self.hinting = n >= HINT_MIN_OWNERS;
    }

    /// [`EventQueue::owner_hint`] answers None from now on (a reference run
    /// for the hint's tests: it must change nothing).
    pub fn stop_hints(&mut self) {
        self.hinting = false;
    }

    /// Owned slots available.
    pub fn owners(&self) -> usize {
        self.owned_keys.len()
    }

    /// Pass `owner`'s events from its pending one on, until one at or above
    /// `end_key` (see [`super::chain`]): the first passed event starts a
    /// segment of `durations_ns[0]`, the next one of `durations_ns[1]`, and
    /// so on. A key that `watch` defers later ends the chain before it
    /// ([`EventQueue::lower_chain_end`]). Both durations must be above 0
    /// (else the chain would pass events without time advancing). False,
    /// changing nothing, if chains with other durations run.
    pub fn chain_owned(&mut self, owner: usize, durations_ns: [Nanos; 2], end_key: u128, watch: usize) -> bool {
        self.owned_keys.settle();
        let key = self.owned_keys.get(owner);
        debug_assert!(key != EMPTY, "a chain starts from a pending event");
        if !self.chains.start(owner, key, durations_ns, end_key, watch) {
            return false;
        }
        self.owned_keys.set(owner, EMPTY);
        true
    }

    /// End `owner`'s chain (if it reached its end key, the event handed to
    /// the world was its last) and say what it did; its pending event, if
    /// any, is back in its slot.
    pub fn unchain_owned(&mut self, owner: usize) -> Chained {
        let (key, chained) = self.chains.stop(owner);
        if let Some(key) = key {
            self.owned_keys.set(owner, key);
        }
        chained
    }

    /// Whether any chain runs.
    #[inline(always)]
    pub fn chains_running(&self) -> bool {
        !self.chains.is_empty()
    }

    /// The owner whose chain resource `watch` ends, if one runs.
    #[inline(always)]
    pub fn chain_watcher(&self, watch: usize) -> Option<usize> {
        self.chains.watcher(watch)
    }

    /// Resource `watch` deferred an event with `key` (from
    /// [`EventQueue::reserve`]): a chain it ends stops before that key.
    #[inline(always)]
    pub fn lower_chain_end(&mut self, watch: usize, key: u128) {
        self.chains.lower_end(watch, key);
    }

    /// Events the chains passed (counted as handled).
    pub fn passed(&self) -> u64 {
        self.chains.passed()
    }

    #[inline(always)]
    pub fn push_owned(&mut self, owner: usize, time: Nanos, event: E) {
        debug_assert!((owner as u64) < SLOT_MASK, "an owner's index fits the slot bits");
        let key = self.next_key(time) | owner as u128;
        let old = self.owned_keys.get(owner);
        let old_ev = self.owned_events[owner].replace(event);
        if old != EMPTY {
            self.push_heap(old & !(SLOT_MASK as u128), old_ev.expect("an event with its key"));
        }
        self.owned_keys.set(owner, key);
    }

    /// Push `event` at `time` into `owner`'s slot, where an event already
    /// there is void (its owner ignores it when handled: a core's segment
    /// end superseded by the next segment's): it is dropped, and its time
    /// returned for the caller to count it as handled if it was due in the
    /// run. The order of the other events is the same as with
    /// [`EventQueue::push_owned`].
    #[inline(always)]
    pub fn push_owned_superseding(&mut self, owner: usize, time: Nanos, event: E) -> Option<Nanos> {
        debug_assert!((owner as u64) < SLOT_MASK, "an owner's index fits the slot bits");
        let key = self.next_key(time) | owner as u128;
        let old = self.owned_keys.get(owner);
        self.owned_events[owner] = Some(event);
        self.owned_keys.set(owner, key);
        (old != EMPTY).then_some((old >> 64) as Nanos)
    }

    #[inline(always)]
    fn next_key(&mut self, time: Nanos) -> u128 {
        let seq = self.next_seq;
        self.next_seq += 1;
        ((time as u128) << 64) | (seq << SLOT_BITS) as u128
    }

    #[inline(always)]
    pub fn push(&mut self, time: Nanos, event: E) {
        let key = self.next_key(time);
        self.push_heap(key, event);
    }

    #[inline(always)]
    fn push_heap(&mut self, key: u128, event: E) {
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
        self.heap.push(Reverse(key | slot as u128));
    }

    /// Push `event` at `time` into FIFO lane `lane`, or into the heap if the
    /// lane's last event is later (the order of events is the same either
    /// way).
    #[inline(always)]
    pub fn push_fifo(&mut self, lane: Lane, time: Nanos, event: E) {
        let key = self.next_key(time);
        let l = &mut self.lanes[lane];
        match l.back() {
            Some(&(last, _)) if last > key => self.push_heap(key, event),
            Some(_) => l.push_back((key, event)),
            None => {
                l.push_back((key, event));
                self.heads[lane] = key | lane as u128;
                if key < self.lane_min.0 {
                    self.lane_min = (key | lane as u128, lane);
                }
            }
        }
    }

    /// The smallest key and where it is.
    #[inline(always)]
    fn next(&self) -> Option<(u128, Next)> {
        let owned = self.owned_keys.min();
        let lanes = if owned.0 < self.lane_min.0 { (owned.0, OWNED + owned.1) } else { self.lane_min };
        match self.heap.peek() {
            Some(&Reverse(k)) if k < lanes.0 => Some((k, HEAP)),
            _ => (lanes.0 != EMPTY).then_some(lanes),
        }
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        self.pop_until(Nanos::MAX)
    }

    /// Pop the next event if it is due at or before `end_ns`.
    #[inline]
    pub fn pop_until(&mut self, end_ns: Nanos) -> Option<(Nanos, E)> {
        self.owned_keys.settle();
        let next = self.next();
        let next_key = next.map_or(EMPTY, |(k, _)| k);
        if self.chains.min().0 < next_key {
            // Passing chained events pushes nothing else: `next` stays
            // the next event of any other kind.
            if let Some(handed) = self.pass_chained(next_key, end_ns) {
                return handed;
            }
        }
        let (key, from) = next?;
        let time = (key >> 64) as Nanos;
        if time > end_ns {
            return None;
        }
        self.current = key;
        if from == HEAP {
            self.heap.pop();
            let slot = (key as u64 & SLOT_MASK) as u32;
            self.free.push(slot);
            let ev = self.slots[slot as usize].take().expect("slot of a pending event");
            return Some((time, ev));
        }
        if from >= OWNED {
            let i = from - OWNED;
            self.owned_keys.vacate(i);
            let ev = self.owned_events[i].take().expect("an owned slot with a key");
            return Some((time, ev));
        }
        let l = &mut self.lanes[from];
        let (_, ev) = l.pop_front().expect("a lane with a head key");
        self.heads[from] = l.front().map_or(EMPTY, |&(k, _)| k | from as u128);
        self.lane_min = min_tagged(&self.heads);
        Some((time, ev))
    }

    /// Whether [`EventQueue::owner_hint`] answers: from
    /// [`HINT_MIN_OWNERS`] owners on, unless stopped.
    #[inline(always)]
    pub fn hints(&self) -> bool {
        self.hinting
    }

    /// Right after a pop (from [`HINT_MIN_OWNERS`] owners on; None below,
    /// or if no slot holds a key): the owner whose slot holds the smallest
    /// key, its slot's event fetched into the cache. That event is the
    /// next owned one unless the popped event's handling pushes an earlier
    /// one, and the next of all unless a lane's or the heap's comes first,
    /// in which case it usually comes right after. For the world to fetch
    /// the owner's state while it handles the popped event
    /// ([`super::World::prefetch_owner`]).
    ///
    /// After an owned slot's pop the tree still waits to replay that slot
    /// (`Tournament::vacate`): the keys its key beat on its way up give
    /// the smallest of the others (`Tournament::runner_up`); after any
    /// other pop the tree is settled. Out of line, and asked by the
    /// engine's loop only while hinting, so that below the loop's code is
    /// laid out as without it (the hint's code inlined in the pop cost
    /// 2-4 % of the wall time at 8 to 32 cores, where it never ran).
    #[inline(never)]
    pub fn owner_hint(&self) -> Option<usize> {
        if !self.hinting {
            return None;
        }
        let owned = match self.owned_keys.waiting() {
            Some(i) => self.owned_keys.runner_up(i),
            None => self.owned_keys.min().0,
        };
        let owner = (owned != EMPTY).then(|| (owned as u64 & SLOT_MASK) as usize)?;
        super::prefetch::line(self.owned_events.get(owner)?);
        Some(owner)
    }

    /// A chained slot's event is the next: pass every chained event below
    /// `next_key` (the next event of every other kind) and the run's end.
    /// None: the next event is `next_key`'s; Some(None): none is due by
    /// `end_ns`; Some(event): a chained slot's event at its chain's end,
    /// handed to the world.
    #[cold]
    #[inline(never)]
    fn pass_chained(&mut self, next_key: u128, end_ns: Nanos) -> Option<Option<(Nanos, E)>> {
        let run_end = Self::key_after(end_ns.min(CHAIN_TIME_MAX_NS));
        let taken = self.chains.pass_below(next_key.min(run_end), self.next_seq);
        self.next_seq += taken;
        let (key, _) = self.chains.min();
        if key >= next_key {
            return None;
        }
        // Not passed: at its chain's end key, or beyond the run's end.
        if (key >> 64) as Nanos > end_ns || key >= run_end {
            return Some(None);
        }
        let (owner, key) = self.chains.hand_over_min();
        self.current = key;
        let ev = self.owned_events[owner].take().expect("a chained slot holds its event");
        Some(Some(((key >> 64) as Nanos, ev)))
    }

    #[inline]
    pub fn peek_time(&mut self) -> Option<Nanos> {
        self.owned_keys.settle();
        let next = self.next().map_or(EMPTY, |(k, _)| k).min(self.chains.min().0);
        (next != EMPTY).then_some((next >> 64) as Nanos)
    }
    pub fn len(&self) -> usize {
        self.heap.len()
            + self.lanes.iter().map(VecDeque::len).sum::<usize>()
            + self.owned_keys.occupied()
            + self.chains.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
        // sorted by (time, push order), as a reference sort says; with few
        // owned slots and many.
        for owners in [3, 40] {
            random_interleaving(owners);
        }
    }

    fn random_interleaving(owners: u64) {
        let mut q = EventQueue::new();
        let mut rng = <crate::engine::StreamRng as rand::SeedableRng>::seed_from_u64(1);
        let mut rand = || rand::RngCore::next_u64(&mut rng);
        q.set_owners(owners as usize);
        let mut pending: Vec<(u64, u64)> = Vec::new();
        let mut now = 0u64;
        let mut id = 0u64;
        for _ in 0..20_000 {
            if rand() % 3 != 0 || pending.is_empty() {
                // Into the heap, into a lane at a fixed delay (in order) or
                // at a random one (out of order: the heap takes it), or into
                // an owner's slot (an occupied one hands its event to the
                // heap).
                let r = rand() % 10;
                let t = match r {
                    0 => now + 7,
                    1 => now + 20,
                    2 => now,
                    _ => now + rand() % 50,
                };
                match r {
                    0..=3 => q.push_fifo(r as usize, t, id),
                    4 | 5 => q.push_owned((rand() % owners) as usize, t, id),
                    _ => q.push(t, id),
                }
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
        assert!(q.is_empty());
    }

    #[test]
    fn lanes_and_heap_merge_by_time_then_sequence() {
        let mut q = EventQueue::new();
        q.push_fifo(0, 5, 'a');
        q.push(5, 'b');
        q.push_fifo(1, 3, 'c');
        q.push_fifo(0, 9, 'd');
        // Earlier than the lane's last: the heap takes it, order unchanged.
        q.push_fifo(0, 4, 'e');
        q.push_fifo(2, 5, 'f');
        assert_eq!(q.len(), 6);
        assert_eq!(q.peek_time(), Some(3));
        assert_eq!(q.pop_until(2), None);
        let out: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(out, vec![(3, 'c'), (4, 'e'), (5, 'a'), (5, 'b'), (5, 'f'), (9, 'd')]);
    }

    #[test]
    fn an_owned_slot_hands_an_older_event_to_the_heap() {
        let mut q = EventQueue::new();
        q.set_owners(2);
        q.push_owned(0, 9, 'a');
        q.push_owned(1, 4, 'b');
        q.push(4, 'c');
        // Slot 1 is taken: 'b' moves to the heap and keeps its place.
        q.push_owned(1, 2, 'd');
        q.push_owned(0, 4, 'e');
        assert_eq!(q.len(), 5);
        let out: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(out, vec![(2, 'd'), (4, 'b'), (4, 'c'), (4, 'e'), (9, 'a')]);
        // Fewer slots: their events stay pending, in the heap.
        q.push_owned(1, 20, 'f');
        q.set_owners(1);
        assert_eq!(q.owners(), 1);
        assert_eq!(q.pop(), Some((20, 'f')));
        assert!(q.is_empty());
        // More slots than a flat array keeps: the events already in slots
        // stay there, in order.
        q.push_owned(0, 30, 'g');
        q.set_owners(100);
        q.push_owned(99, 25, 'h');
        q.push_owned(50, 30, 'i');
        assert_eq!(q.len(), 3);
        let out: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(out, vec![(25, 'h'), (30, 'g'), (30, 'i')]);
    }

    #[test]
    fn a_superseded_slot_event_is_dropped_and_its_time_returned() {
        for owners in [2, 40] {
            let mut q = EventQueue::new();
            q.set_owners(owners);
            assert_eq!(q.push_owned_superseding(1, 9, 'a'), None);
            q.push(5, 'b');
            // 'a' is void: dropped, its time returned; 'c' keeps its order.
            assert_eq!(q.push_owned_superseding(1, 5, 'c'), Some(9));
            assert_eq!(q.len(), 2);
            let out: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
            assert_eq!(out, vec![(5, 'b'), (5, 'c')]);
        }
    }

    #[test]
    fn a_reserved_key_orders_as_a_push_made_when_it_was_reserved() {
        let mut q = EventQueue::new();
        q.push(5, 'a');
        let k = q.reserve(5);
        q.push(5, 'c');
        q.push(3, 'x');
        assert_eq!(q.pop(), Some((3, 'x')));
        // Handling 'x': the reserved key is not due yet.
        assert!(k > q.current_key());
        q.push_key(k, 'b');
        let out: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(out, vec![(5, 'a'), (5, 'b'), (5, 'c')]);
        assert!(k < q.current_key(), "after 'c', the reserved key is past");
        assert!(k < EventQueue::<char>::key_after(5) && k > EventQueue::<char>::key_after(4));
    }

    #[test]
    fn the_owner_hint_names_the_next_owned_event_from_many_owners_on() {
        // 300 owners: after each pop the hint is the owner whose
        // event the next pop takes when the handling pushes nothing earlier;
        // a lane's event in between leaves it naming the next owned one.
        let mut q: EventQueue<u32> = EventQueue::new();
        q.set_owners(300);
        for o in 0..300u64 {
            q.push_owned(o as usize, 1_000 + (o * 7919) % 300 * 10, o as u32);
        }
        q.push_fifo(0, 1_105, 1000);
        let mut last = None;
        while let Some((t, ev)) = q.pop() {
            if ev < 1000 {
                if let Some(h) = last {
                    assert_eq!(h, ev as usize, "at {t}");
                }
            }
            last = q.owner_hint();
            assert!(last.is_some() || q.is_empty());
        }
        // Stopped (a traced run): no hint.
        let mut q: EventQueue<u32> = EventQueue::new();
        q.set_owners(300);
        q.push_owned(3, 10, 3);
        q.push_owned(4, 20, 4);
        q.pop();
        assert_eq!(q.owner_hint(), Some(4));
        q.stop_hints();
        assert_eq!(q.owner_hint(), None);
        // Below HINT_MIN_OWNERS owners: no hint.
        for owners in [8, HINT_MIN_OWNERS - 1] {
            let mut q: EventQueue<u32> = EventQueue::new();
            q.set_owners(owners);
            q.push_owned(3, 10, 3);
            q.push_owned(4, 20, 4);
            q.pop();
            assert_eq!(q.owner_hint(), None);
        }
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
