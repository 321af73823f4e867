//! The smallest of `n` keys, kept as they change: the engine's owned slots
//! (a segment end per core, [`super::queue`]).
//!
//! Each key carries its own index in its low bits (below the sequence
//! number, so ordering by key is ordering by `(time, sequence)`), or is
//! [`EMPTY`]; the smallest key therefore names its slot, and the tree
//! below tracks no indices.
//!
//! Above [`SCAN_MAX`] slots the keys form a tournament tree (a winner tree
//! whose nodes hold the winning key itself, not its index): leaf `i` at
//! `m + i` for `m` the power of two at or above `n`, node `j` the smaller of
//! `2j` and `2j + 1`, the root at 1. A change replays the leaf's path,
//! `log2(m)` branch-free minima, so the cost per event grows with the
//! logarithm of the number of cores where a rescan of every slot grew
//! linearly (at 128 cores the rescan cost about 380 instructions per event;
//! docs/performance.md, "Scale"). Up to [`SCAN_MAX`] slots they are a flat
//! array, rescanned when its minimum leaves, as before.
//!
//! In the tree, a slot emptied by a pop is usually filled again while its
//! event is handled (a core's next segment end), so its replay waits for
//! the next change ([`Tournament::vacate`], [`Tournament::settle`]): one replay then
//! does for both. Without that wait the thesis run took 9 % more
//! instructions.

/// The key of an empty slot: above every real key.
pub const EMPTY: u128 = u128::MAX;

/// Bits of a key below the sequence number that hold a slot's index.
pub const TAG_BITS: u32 = 24;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;

pub struct Tournament {
    /// `2m` nodes, leaves from `m` (node 0 unused).
    nodes: Vec<u128>,
    n: usize,
    /// Where leaf 0 is: `m`.
    leaf0: usize,
    /// The smallest key and its slot (slot 0 when every slot is empty),
    /// once the slot emptied last (if [`NONE`]) is replayed.
    min: (u128, usize),
    vacated: usize,
}

/// Slots kept as a flat array, rescanned when its minimum leaves, at most:
/// at 8 cores under busy-wait below saturation an idle polling core pops
/// and pushes its slot back at every step, and the tree's replay, three
/// dependent minima, made that regime 6 % slower in wall time than the
/// rescan's independent compares (docs/performance.md, "Scale").
pub const SCAN_MAX: usize = 8;

/// No slot awaits its replay.
const NONE: usize = usize::MAX;

#[inline(always)]
fn tag_of(key: u128) -> usize {
    if key == EMPTY { 0 } else { (key as u64 & TAG_MASK) as usize }
}

impl Default for Tournament {
    fn default() -> Self {
        Self::new(0)
    }
}

impl Tournament {
    /// `n` empty slots.
    pub fn new(n: usize) -> Self {
        let leaf0 = if n <= SCAN_MAX { 0 } else { n.next_power_of_two() };
        let len = if leaf0 == 0 { n } else { 2 * leaf0 };
        Tournament { nodes: vec![EMPTY; len], n, leaf0, min: (EMPTY, 0), vacated: NONE }
    }

    /// Whether the keys are kept in a tree (more than [`SCAN_MAX`] slots).
    pub fn is_tree(&self) -> bool {
        self.leaf0 != 0
    }

    /// Slots.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Slot `i`'s key ([`EMPTY`] if none).
    #[inline(always)]
    pub fn get(&self, i: usize) -> u128 {
        self.nodes[self.leaf0 + i]
    }

    /// The smallest key and its slot, as of the last [`Tournament::settle`].
    #[inline(always)]
    pub fn min(&self) -> (u128, usize) {
        debug_assert!(self.vacated == NONE, "settled");
        self.min
    }

    /// Replay the slot emptied last, if its replay waits (see
    /// [`Tournament::vacate`]), so that [`Tournament::min`] is current.
    #[inline(always)]
    pub fn settle(&mut self) {
        if self.vacated != NONE {
            self.replay(self.vacated);
            self.vacated = NONE;
        }
    }

    /// Empty slot `i`; its replay waits for the next change or
    /// [`Tournament::settle`] (see the module's doc).
    #[inline(always)]
    pub fn vacate(&mut self, i: usize) {
        if self.leaf0 == 0 {
            // Flat: the rescan is cheap and its branch-free compares do
            // not wait on each other; waiting would only add a branch.
            return self.set(i, EMPTY);
        }
        if self.vacated != NONE && self.vacated != i {
            self.replay(self.vacated);
        }
        self.nodes[self.leaf0 + i] = EMPTY;
        self.vacated = i;
    }

    /// Set slot `i`'s key: `key` tagged with `i`, or [`EMPTY`].
    #[inline(always)]
    pub fn set(&mut self, i: usize, key: u128) {
        debug_assert!(i < self.n, "slot {i} of {}", self.n);
        debug_assert!(key == EMPTY || tag_of(key) == i, "a key tagged with its slot");
        if self.leaf0 == 0 && self.vacated == NONE {
            // Flat: a smaller key is the new minimum; the minimum's slot
            // taking a larger one needs a rescan; any other change neither.
            self.nodes[i] = key;
            if key < self.min.0 {
                self.min = (key, i);
            } else if self.min.1 == i {
                self.replay(i);
            }
            return;
        }
        if self.vacated != NONE && self.vacated != i {
            self.replay(self.vacated);
        }
        self.vacated = NONE;
        self.nodes[self.leaf0 + i] = key;
        self.replay(i);
    }

    /// Recompute the path from leaf `i` to the root, and the minimum (flat:
    /// rescan every key).
    #[inline(always)]
    fn replay(&mut self, i: usize) {
        if self.leaf0 == 0 {
            let m = self.nodes.iter().copied().fold(EMPTY, u128::min);
            self.min = (m, tag_of(m));
            return;
        }
        let mut j = self.leaf0 + i;
        let nodes = &mut self.nodes[..2 * self.leaf0];
        let mut w = nodes[j];
        while j > 1 {
            // SAFETY: 1 < j < 2 * leaf0 = nodes.len(), so j ^ 1 and j / 2
            // are in range too.
            unsafe {
                w = w.min(*nodes.get_unchecked(j ^ 1));
                j >>= 1;
                *nodes.get_unchecked_mut(j) = w;
            }
        }
        self.min = (w, tag_of(w));
    }

    /// The slot a pop emptied whose replay waits ([`Tournament::vacate`]),
    /// if any.
    #[inline(always)]
    pub fn waiting(&self) -> Option<usize> {
        (self.vacated != NONE).then_some(self.vacated)
    }

    /// Tree only, with nothing waiting for its replay but slot `i` (which
    /// held the smallest key before it was vacated, or holds it): the
    /// smallest key of the other slots ([`EMPTY`] if none), from the keys
    /// `i`'s key beat on its way up (its path's siblings, each loaded
    /// independently of the others, none of them on `i`'s path).
    #[inline(always)]
    pub fn runner_up(&self, i: usize) -> u128 {
        debug_assert!(self.leaf0 != 0 && (self.vacated == NONE || self.vacated == i), "a settled tree but slot i");
        let nodes = &self.nodes[..2 * self.leaf0];
        let mut j = self.leaf0 + i;
        let mut w = EMPTY;
        while j > 1 {
            // SAFETY: 1 < j < 2 * leaf0 = nodes.len(), so j ^ 1 is too.
            w = w.min(unsafe { *nodes.get_unchecked(j ^ 1) });
            j >>= 1;
        }
        w
    }

    /// Slots holding a key.
    pub fn occupied(&self) -> usize {
        (0..self.n).filter(|&i| self.get(i) != EMPTY).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(t: u64, i: usize) -> u128 {
        ((t as u128) << 64) | i as u128
    }

    #[test]
    fn both_layouts_track_the_minimum_through_random_changes() {
        // Against a plain scan, for powers of two and not.
        let mut rng = <crate::engine::StreamRng as rand::SeedableRng>::seed_from_u64(7);
        let mut rand = || rand::RngCore::next_u64(&mut rng);
        for n in [1, 3, SCAN_MAX, SCAN_MAX + 1, 16, 17, 100, 512] {
            assert_eq!(Tournament::new(n).is_tree(), n > SCAN_MAX);
            let mut t = Tournament::new(n);
            let mut want = vec![EMPTY; n];
            for _ in 0..5_000 {
                let i = (rand() % n as u64) as usize;
                let k = if rand() % 4 == 0 { EMPTY } else { key(rand() % 64, i) };
                if k == EMPTY && rand() % 2 == 0 {
                    t.vacate(i);
                } else {
                    t.set(i, k);
                }
                want[i] = k;
                let m = want.iter().copied().min().unwrap();
                t.settle();
                assert_eq!(t.min().0, m, "n = {n}");
                if m != EMPTY {
                    assert_eq!(t.min().1, tag_of(m));
                    let at = t.min().1;
                    assert_eq!(t.get(at), m);
                }
                assert_eq!(t.occupied(), want.iter().filter(|&&k| k != EMPTY).count());
            }
        }
    }

    #[test]
    fn the_runner_up_is_the_smallest_key_but_the_minimum() {
        let mut rng = <crate::engine::StreamRng as rand::SeedableRng>::seed_from_u64(11);
        let mut rand = || rand::RngCore::next_u64(&mut rng);
        for n in [SCAN_MAX + 1, 17, 64, 100, 512] {
            let mut t = Tournament::new(n);
            let mut want = vec![EMPTY; n];
            for _ in 0..2_000 {
                let i = (rand() % n as u64) as usize;
                let k = if rand() % 5 == 0 { EMPTY } else { key(rand() % 1000, i) };
                t.set(i, k);
                want[i] = k;
                t.settle();
                let (m, at) = t.min();
                if m == EMPTY {
                    continue;
                }
                let second = (0..n).filter(|&j| j != at).map(|j| want[j]).min().unwrap_or(EMPTY);
                assert_eq!(t.runner_up(at), second, "n = {n}");
                // And once the minimum's slot is vacated, its replay waiting.
                if rand() % 2 == 0 {
                    t.vacate(at);
                    want[at] = EMPTY;
                    assert_eq!(t.waiting(), Some(at));
                    assert_eq!(t.runner_up(at), second, "n = {n}, vacated");
                }
            }
        }
    }

    #[test]
    fn the_smallest_growing_in_place_is_replaced_by_the_next() {
        for n in [4, 40] {
            let mut t = Tournament::new(n);
            t.set(1, key(5, 1));
            t.set(2, key(7, 2));
            t.set(1, key(9, 1));
            assert_eq!(t.min(), (key(7, 2), 2));
            t.vacate(2);
            t.settle();
            assert_eq!(t.min(), (key(9, 1), 1));
            t.set(1, EMPTY);
            assert_eq!(t.min().0, EMPTY);
        }
    }
}
