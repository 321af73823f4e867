//! Asking the CPU for memory before the code reads it: a hint, with no
//! effect on what runs.
//!
//! At hundreds of simulated cores each event reads state that the events
//! of every other core evicted from the level-1 and level-2 caches since
//! its own core's last event (its core, thread and service draws, the
//! connection it serves); each such read waited on its own, one after
//! another. Fetching them while the event before is handled
//! (`EventQueue::owner_hint`, `World::prefetch_owner`) or a segment ahead
//! lets those waits overlap (docs/performance.md, "Prefetching the next
//! core's state").

/// Fetch the cache line holding `v` into every level of the cache.
#[inline(always)]
pub fn line<T>(v: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and reads nothing into the program;
    // the address is that of a live reference anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch(v as *const T as *const i8, std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = v;
}

/// Fetch the cache line of `s[i]`, without checking `i` (a prefetch of
/// any address is harmless: it never faults, and a line outside `s` is
/// only a wasted fetch), so that the hint costs no bounds check.
#[inline(always)]
pub fn at<T>(s: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `wrapping_add` computes an address without dereferencing it,
    // and a prefetch neither faults nor reads anything into the program.
    unsafe {
        std::arch::x86_64::_mm_prefetch(s.as_ptr().wrapping_add(i) as *const i8, std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (s, i);
}

#[cfg(test)]
mod tests {
    /// A hint changes nothing it points at (and compiles on every target).
    #[test]
    fn a_prefetch_leaves_the_value_as_it_was() {
        let v = [7u64; 40];
        super::line(&v[3]);
        super::at(&v, 39);
        super::at(&v, usize::MAX / 16);
        assert_eq!(v, [7u64; 40]);
    }
}
