//! Periodic chains of an owned slot's events, passed by the queue itself.
//!
//! An owner whose events, for a while, change nothing but its own clock
//! (a core busy polling an empty ring: a poll, a `cpu_relax` spin, a poll,
//! ... each one ending a segment and starting the next) can hand the queue
//! the durations of its segments, alternating. When a chained event is the
//! next one, the queue passes every chained event below the next event of
//! any other kind, without calling the world, in one step per chain
//! ([`Chains::pass_below`]): each passed event counts as handled, the
//! sequence counter moves on by one per passed event as the owners' pushes
//! would have moved it, and the chains' new keys order among themselves and
//! every other key as passing the events one by one would have left them.
//! So the events handled, their order, and every other event's key stay
//! what they were; only the cost changes.
//!
//! A chain ends at its *end key*: the first event at or above it is handed
//! to the world, which then brings the owner's state up to date from
//! [`Chained`] (how many events passed, and when the pending one ends). The
//! owner sets the end key to the first event that could make a pass
//! different (a deferred arrival its next poll would take, its loop's
//! deadline); anything else that reaches the owner meanwhile ends the chain
//! first ([`super::Scheduler::unchain_owned`]), and a key the owner's
//! watched resource defers later lowers the end
//! ([`super::Scheduler::lower_chain_end`]).

use super::time::Nanos;

/// A chain in progress on one owned slot.
#[derive(Clone, Copy, Debug, Default)]
pub struct Chain {
    /// The durations of the segments the passed events start: the first
    /// passed event starts a segment of `durations_ns[0]`, the second one
    /// of `durations_ns[1]`, the third of `durations_ns[0]` again, ...
    pub durations_ns: [Nanos; 2],
    /// Events passed so far.
    pub passed: u64,
    /// The resource whose deferred keys end the chain (an id of the
    /// owner's choosing, [`super::Scheduler::lower_chain_end`]).
    pub watch: usize,
    /// The key of the owner's pending event (tagged with the owner).
    pub key: u128,
    /// The first key the chain does not pass.
    pub end_key: u128,
    /// The chain reached its end key: its event at `ended_ns` was handed
    /// to the world.
    pub ended_ns: Option<Nanos>,
}

/// What a chain did, for its owner to bring its state up to date.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chained {
    /// Events the queue passed for the owner.
    pub passed: u64,
    /// When the owner's pending event is due (the one the chain left in
    /// the slot, or the one handed to the world at the end key).
    pub next_ns: Nanos,
    /// The duration of the segment that pending event ends.
    pub segment_ns: Nanos,
}

/// No owner watches this resource.
pub const UNWATCHED: u32 = u32::MAX;

/// Bits of a key below the sequence number (the owner's tag).
const TAG_BITS: u32 = super::tournament::TAG_BITS;

/// The chains of a queue's owned slots. While a slot is chained its key
/// lives here, not among the slots' ([`super::queue`]).
#[derive(Default)]
pub struct Chains {
    /// Per owned slot (its chain, if `active` holds it).
    chains: Vec<Chain>,
    /// The chained slots.
    active: Vec<u32>,
    /// The smallest pending key of the chained slots and its slot.
    min: (u128, usize),
    /// Per watched resource, the owner whose chain it ends ([`UNWATCHED`]).
    watched_by: Vec<u32>,
    /// Events passed, over every chain.
    passed: u64,
    /// [`Chains::pass_below`]'s last passes (kept to reuse its memory).
    lasts: Vec<LastPass>,
}

/// A chain's last pass in a jump ([`Chains::pass_below`]), for ordering
/// the keys the passes give.
#[derive(Clone, Copy)]
struct LastPass {
    owner: u32,
    /// Its index among the chain's passes in the jump (0: the pending
    /// event the jump started from).
    index: u64,
    time_ns: Nanos,
    /// The chain's pending key when the jump started.
    first_key: u128,
    /// The duration of the segment this pass ends (index above 0).
    ended_ns: Nanos,
}

impl Chains {
    /// `n` owned slots, none chained.
    pub fn new(n: usize) -> Self {
        Chains {
            chains: vec![Chain::default(); n],
            active: Vec::new(),
            min: (u128::MAX, 0),
            watched_by: Vec::new(),
            passed: 0,
            lasts: Vec::new(),
        }
    }

    /// Slots chained now.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.active.len()
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.active.is_empty()
    }

    /// The smallest chained key ([`u128::MAX`] if none) and its slot.
    #[inline(always)]
    pub fn min(&self) -> (u128, usize) {
        self.min
    }

    /// Events passed so far, over every chain.
    pub fn passed(&self) -> u64 {
        self.passed
    }

    /// Chain `owner`, whose pending event has `key` (see
    /// [`super::queue::EventQueue::chain_owned`]); false, changing
    /// nothing, if other chains run with other durations (the order of
    /// their passes is computed for equal durations only).
    pub fn start(&mut self, owner: usize, key: u128, durations_ns: [Nanos; 2], end_key: u128, watch: usize) -> bool {
        debug_assert!(durations_ns[0] > 0 && durations_ns[1] > 0, "time advances along a chain");
        debug_assert!(!self.active.contains(&(owner as u32)), "one chain per slot at a time");
        if self.active.first().is_some_and(|&o| self.chains[o as usize].durations_ns != durations_ns) {
            return false;
        }
        self.chains[owner] = Chain { durations_ns, passed: 0, watch, key, end_key, ended_ns: None };
        self.active.push(owner as u32);
        if key < self.min.0 {
            self.min = (key, owner);
        }
        if watch >= self.watched_by.len() {
            self.watched_by.resize(watch + 1, UNWATCHED);
        }
        self.watched_by[watch] = owner as u32;
        true
    }

    /// End `owner`'s chain; its pending key if it was not handed to the
    /// world (it goes back to the slot), and what it did.
    pub fn stop(&mut self, owner: usize) -> (Option<u128>, Chained) {
        let c = std::mem::take(&mut self.chains[owner]);
        if let Some(w) = self.watched_by.get_mut(c.watch) {
            if *w == owner as u32 {
                *w = UNWATCHED;
            }
        }
        // The pending event ends the segment the last passed event started
        // (none passed: the segment before the first, durations_ns[1]).
        let segment_ns = c.durations_ns[((c.passed + 1) & 1) as usize];
        let chained = |next_ns| Chained { passed: c.passed, next_ns, segment_ns };
        match c.ended_ns {
            Some(t) => (None, chained(t)),
            None => {
                self.remove(owner);
                (Some(c.key), chained((c.key >> 64) as Nanos))
            }
        }
    }

    /// The owner whose chain resource `watch` ends, if one runs.
    #[inline(always)]
    pub fn watcher(&self, watch: usize) -> Option<usize> {
        if self.active.is_empty() {
            return None;
        }
        match self.watched_by.get(watch) {
            Some(&o) if o != UNWATCHED => Some(o as usize),
            _ => None,
        }
    }

    /// Resource `watch` deferred an event with `key`: a chain it ends
    /// stops before that key.
    #[inline(always)]
    pub fn lower_end(&mut self, watch: usize, key: u128) {
        if let Some(o) = self.watcher(watch) {
            let c = &mut self.chains[o];
            c.end_key = c.end_key.min(key);
        }
    }

    /// The chained slot with the smallest key reached its end key: hand
    /// its event to the world (the slot leaves the chained ones; its owner
    /// learns what the chain did from [`Chains::stop`]).
    pub fn hand_over_min(&mut self) -> (usize, u128) {
        let (key, owner) = self.min;
        debug_assert!(key >= self.chains[owner].end_key, "handed over at its end only");
        self.chains[owner].ended_ns = Some((key >> 64) as Nanos);
        self.remove(owner);
        (owner, key)
    }

    fn remove(&mut self, owner: usize) {
        if let Some(at) = self.active.iter().position(|&o| o as usize == owner) {
            self.active.swap_remove(at);
            self.rescan();
        }
    }

    fn rescan(&mut self) {
        self.min = (u128::MAX, 0);
        for &o in &self.active {
            let k = self.chains[o as usize].key;
            if k < self.min.0 {
                self.min = (k, o as usize);
            }
        }
    }

    /// Pass every chained event below `bound` (and below its chain's end
    /// key), in one step per chain: what passing them one by one in the
    /// merged order would leave, with sequence numbers from `next_seq` on.
    /// Returns how many sequence numbers the passes took (one per event).
    ///
    /// A chain's events after its pending one get their keys in the jump,
    /// above every existing key's sequence number; so its events passed
    /// are its pending one if below the bound, then those whose time is
    /// below the bound's, a count that is arithmetic. Of the keys the
    /// passes took only each chain's last survives (its new pending key):
    /// their order is that of the passes that gave them, the chains' last
    /// passes, which is by time and, for passes at one instant, by the
    /// order of the passes before them (see [`LastPass`]'s comparison).
    /// Sequence numbers that keep that order, all within the range the
    /// passes took, order every key as the passes one by one would have:
    /// no other key falls in that range.
    pub fn pass_below(&mut self, bound: u128, next_seq: u64) -> u64 {
        let mut lasts = std::mem::take(&mut self.lasts);
        lasts.clear();
        let mut taken = 0u64;
        for &o in &self.active {
            let c = &mut self.chains[o as usize];
            let b = bound.min(c.end_key);
            if c.key >= b {
                continue;
            }
            let t0 = (c.key >> 64) as Nanos;
            let span = ((b >> 64) as Nanos) - t0;
            let phase = (c.passed & 1) as usize;
            let first = c.durations_ns[phase];
            let period = c.durations_ns[0] + c.durations_ns[1];
            // Events j >= 1 after the pending one, at t0 + (j / 2) * period
            // (+ first if j is odd), passed while below the bound's time:
            // with span - 1 = q * period + r, q even ones, and q odd ones
            // plus one if r reaches first.
            let n = if span == 0 {
                1
            } else {
                let q = (span - 1) / period;
                let r = span - 1 - q * period;
                1 + 2 * q + (r >= first) as u64
            };
            let offset = |j: u64| (j / 2) * period + if j % 2 == 1 { first } else { 0 };
            let last = n - 1;
            lasts.push(LastPass {
                owner: o,
                index: last,
                time_ns: t0 + offset(last),
                first_key: c.key,
                ended_ns: if last == 0 { 0 } else { c.durations_ns[(phase + last as usize - 1) & 1] },
            });
            c.key = ((t0 + offset(n)) as u128) << 64;
            c.passed += n;
            taken += n;
        }
        lasts.sort_unstable_by_key(LastPass::order);
        for (rank, l) in lasts.iter().enumerate() {
            let c = &mut self.chains[l.owner as usize];
            c.key |= (((next_seq + rank as u64) << TAG_BITS) as u128) | l.owner as u128;
        }
        self.lasts = lasts;
        self.passed += taken;
        self.rescan();
        taken
    }
}

impl LastPass {
    /// Passes of other chains (one duration pair) in the merged order sort
    /// by this. At one instant: a pending event the jump started from
    /// (index 0) has the older key, so it comes first (its "segment" sorts
    /// as the longest); two such by their keys; else the passes before
    /// them, at each one's time less the segment it ends, decide: the
    /// longer segment's started earlier. With equal segments they tie
    /// again, back to whichever chain reaches its starting event first:
    /// the smaller index.
    #[inline(always)]
    fn order(&self) -> (Nanos, Nanos, u64, u128) {
        let segment = if self.index == 0 { Nanos::MAX } else { self.ended_ns };
        (self.time_ns, Nanos::MAX - segment, self.index, self.first_key)
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::{run_until, Nanos, Scheduler, World};

    /// `OWNERS` owners each alternate segments of 3 and 4 ns (so that their
    /// events often fall on one instant); other events arrive at
    /// pseudo-random times (often on the owners' instants too) and schedule
    /// more, and now and then one "defers" a key for an owner's resource
    /// (as a NIC queue keeps an arrival), which that owner must handle for
    /// real. With `chain`, each owner hands its events to the queue and
    /// takes them back at such keys.
    struct Periodic {
        chain: bool,
        passes: u64,
        /// Per owner, its events handled or passed (parity picks the next
        /// duration) and whether a chain runs.
        owner_events: [u64; OWNERS],
        chained: [bool; OWNERS],
        rng: u64,
        /// (time, key, id) of every other event handled.
        seen: Vec<(Nanos, u128, u32)>,
        /// (time, id) of every event handled, in order.
        log: Vec<(Nanos, u32)>,
        /// Per owner, the deferred keys of its resource (applied by its
        /// next event).
        deferred: [Vec<u128>; OWNERS],
    }

    const OWNERS: usize = 4;
    const DURATIONS: [Nanos; 2] = [3, 4];
    const OTHER: u32 = 100;

    impl Periodic {
        fn rand(&mut self) -> u64 {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            self.rng
        }
        /// Owner `o`'s event: its effects, then its next segment.
        fn owner(&mut self, s: &mut Scheduler<u32>, o: usize) {
            if std::mem::take(&mut self.chained[o]) {
                // Take back what the chain did.
                let c = s.unchain_owned(o);
                self.passes += c.passed;
                self.owner_events[o] += c.passed;
                assert_eq!(c.next_ns, s.now());
            }
            let key = s.current_key();
            self.deferred[o].retain(|&k| k > key);
            let d = DURATIONS[(self.owner_events[o] & 1) as usize];
            self.owner_events[o] += 1;
            s.at_owned_superseding(o, s.now() + d, o as u32);
            // As a core does, chain from the second segment of the pair on,
            // so that every chain's passes start with DURATIONS[0].
            if self.chain && d == DURATIONS[1] {
                let end = self.deferred[o].iter().copied().min().unwrap_or(u128::MAX);
                self.chained[o] = s.chain_owned(o, DURATIONS, end, o);
                assert!(self.chained[o], "chains of equal durations always start");
            }
        }
    }

    impl World for Periodic {
        type Event = u32;
        fn handle(&mut self, s: &mut Scheduler<u32>, e: u32) {
            self.log.push((s.now(), e));
            if (e as usize) < OWNERS {
                return self.owner(s, e as usize);
            }
            self.seen.push((s.now(), s.current_key(), e));
            let now = s.now();
            for _ in 0..2 {
                let r = self.rand();
                let at = now + r % 23;
                if r % 5 == 0 {
                    let o = (r / 5 % OWNERS as u64) as usize;
                    let key = s.reserve(at);
                    self.deferred[o].push(key);
                    s.lower_chain_end(o, key);
                } else if s.processed() < 40_000 {
                    s.at(at, e + 1);
                }
            }
        }
    }

    fn run(chain: bool) -> (Periodic, u64) {
        let mut w = Periodic {
            chain,
            passes: 0,
            owner_events: [0; OWNERS],
            chained: [false; OWNERS],
            rng: 88172645463325252,
            seen: vec![],
            log: vec![],
            deferred: Default::default(),
        };
        let mut s = Scheduler::new();
        s.set_owners(OWNERS);
        // Owners 0 and 1 start together (their events tie all along), 2
        // and 3 at other instants.
        for (o, at) in [(0, 0), (1, 0), (2, 3), (3, 5)] {
            s.at_owned_superseding(o, at, o as u32);
        }
        s.at(0, OTHER);
        run_until(&mut w, &mut s, 40_000, &mut || false).unwrap();
        for o in 0..OWNERS {
            if w.chained[o] {
                w.passes += s.unchain_owned(o).passed;
            }
        }
        (w, s.processed())
    }

    #[test]
    fn chains_pass_events_in_their_order() {
        let (plain, plain_events) = run(false);
        let (chained, chained_events) = run(true);
        // Every other event is handled at the same instant with the same
        // key (so as many sequence numbers were taken in between), and both
        // count the same events as handled.
        assert!(plain.seen.len() > 1_000);
        assert_eq!(plain.seen, chained.seen);
        assert_eq!(plain_events, chained_events);
        // The chains passed most of the owners' events; the ones they
        // handed back (at a deferred key) came in the plain run's order
        // among all the others, ties at one instant included.
        let handled: std::collections::HashSet<(Nanos, u32)> = chained.log.iter().copied().collect();
        let plain_seen_by_chained: Vec<_> = plain.log.iter().copied().filter(|e| handled.contains(e)).collect();
        assert_eq!(plain_seen_by_chained, chained.log);
        assert_eq!(plain.log.len() as u64, chained.log.len() as u64 + chained.passes);
        assert!(chained.passes > 5 * (chained.log.len() - chained.seen.len()) as u64, "{} passed", chained.passes);
    }

    /// [`super::Chains::pass_below`] against passing the chained events one
    /// by one in key order (each pass taking the next sequence number), on
    /// chains that often tie: the same events passed, and the chains' keys
    /// in the same order afterwards.
    #[test]
    fn a_jump_leaves_what_passing_one_by_one_leaves() {
        use super::{Chains, TAG_BITS};
        let mut rng = <crate::engine::StreamRng as rand::SeedableRng>::seed_from_u64(3);
        let mut rand = || rand::RngCore::next_u64(&mut rng);
        let key = |t: u64, seq: u64, o: usize| ((t as u128) << 64) | ((seq << TAG_BITS) as u128) | o as u128;
        for round in 0..2_000 {
            let m = 1 + (rand() % 8) as usize;
            let durations = [[3, 4], [3, 3], [2, 5], [4, 1]][round % 4];
            let mut seq = 1_000u64;
            let mut chains = Chains::new(m);
            // (key, passed, end) per chain, for the reference.
            let mut want: Vec<(u128, u64, u128)> = Vec::new();
            for o in 0..m {
                let k = key(rand() % 6, seq - 1 - o as u64 * 7, o);
                let end = if rand() % 3 == 0 { key(5 + rand() % 60, rand() % 900, 0) } else { u128::MAX };
                assert!(chains.start(o, k, durations, end, o));
                want.push((k, 0, end));
            }
            let mut t = 0;
            for _ in 0..6 {
                t += rand() % 30;
                // The next event of another kind: one scheduled before the
                // chains' last keys, or since (a later sequence number; a
                // key never falls among those a jump took).
                let bound = if rand() % 2 == 0 {
                    key(t, rand() % 900, 0)
                } else {
                    seq += 1;
                    key(t, seq - 1, 0)
                };
                // One by one.
                let mut next = seq;
                loop {
                    let i = (0..m).filter(|&i| want[i].0 < bound.min(want[i].2)).min_by_key(|&i| want[i].0);
                    let Some(i) = i else { break };
                    let (k, p, _) = want[i];
                    want[i].0 = key((k >> 64) as u64 + durations[(p & 1) as usize], next, i);
                    want[i].1 += 1;
                    next += 1;
                }
                let taken = chains.pass_below(bound, seq);
                assert_eq!(taken, next - seq, "round {round}");
                seq = next;
                let got: Vec<(u128, u64)> = (0..m).map(|o| (chains.chains[o].key, chains.chains[o].passed)).collect();
                for o in 0..m {
                    assert_eq!(got[o].0 >> 64, want[o].0 >> 64, "round {round}: chain {o}'s time");
                    assert_eq!(got[o].1, want[o].1, "round {round}: chain {o}'s passes");
                }
                let mut by_got: Vec<usize> = (0..m).collect();
                by_got.sort_by_key(|&o| got[o].0);
                let mut by_want: Vec<usize> = (0..m).collect();
                by_want.sort_by_key(|&o| want[o].0);
                assert_eq!(by_got, by_want, "round {round}: the chains' order");
                assert_eq!(chains.min().0, got.iter().map(|g| g.0).min().unwrap());
            }
        }
    }
}
