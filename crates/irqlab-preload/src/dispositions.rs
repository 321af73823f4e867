//! Which signals the kernel discards on arrival, for busy-wait's signal
//! mask (`busy_wait.rs`, issue 62, item 1).
//!
//! A signal whose action is `SIG_IGN`, or `SIG_DFL` with a default action
//! of "ignore" (`SIGCHLD`, `SIGCONT`, `SIGURG`, `SIGWINCH`: the kernel's
//! `SIG_KERNEL_IGNORE_MASK`, include/linux/signal.h), is dropped when it is
//! sent to a thread that does not block it (`prepare_signal` and
//! `sig_ignored`, kernel/signal.c): it never interrupts an `epoll_wait`.
//! Blocked, the same signal is queued (`sig_ignored`: "blocked signals are
//! never ignored, since the signal handler may change by the time it is
//! unblocked") and then makes the next wait that unblocks it fail with
//! `EINTR`. So busy-wait must never hold these back; this module says which
//! they are.
//!
//! Actions are process-wide and read with `sigaction(sig, NULL, &old)`, one
//! system call per signal: too many for every wait, so the set is kept and
//! read again when it is older than [`REFRESH_NS`] (one reader per
//! interval; the first call reads it at once). An action changed by another
//! thread during a wait is therefore seen up to 20 ms late: until then a
//! newly ignored signal can still end a spinning wait with `EINTR`, and a
//! signal that newly has a handler runs it without ending the wait. Nothing
//! here allocates; errno is changed (the callers put it back).

use core::sync::atomic::{AtomicU64, Ordering};
use libc::c_int;

/// How long a set read from the kernel is used: 20 ms.
pub const REFRESH_NS: u64 = 20_000_000;

/// The highest signal number (the kernel's `_NSIG` on 64-bit Linux).
const NSIG: c_int = 64;

/// The signals whose `SIG_DFL` is to ignore them (`SIG_KERNEL_IGNORE_MASK`).
const DEFAULT_IGNORED: [c_int; 4] = [libc::SIGCHLD, libc::SIGCONT, libc::SIGURG, libc::SIGWINCH];

/// The set last read: bit `sig - 1` for signal `sig`, as the kernel's `sigset_t`.
static IGNORED: AtomicU64 = AtomicU64::new(0);
/// When it is read again, on `CLOCK_MONOTONIC_COARSE`; 0 before the first read.
static NEXT_NS: AtomicU64 = AtomicU64::new(0);

/// Signal `sig`'s bit in a set.
pub const fn bit(sig: c_int) -> u64 {
    1u64 << (sig - 1)
}

/// The signals the kernel would discard on arrival now (see the module),
/// read again when the set is older than [`REFRESH_NS`].
pub fn ignored() -> u64 {
    let next = NEXT_NS.load(Ordering::Acquire);
    let now = crate::control::coarse_now_ns();
    // The first call reads the set whatever the race (reading is harmless
    // twice); later, one thread per interval.
    let due = next == 0
        || (now >= next
            && NEXT_NS
                .compare_exchange(next, now + REFRESH_NS, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok());
    if !due {
        return IGNORED.load(Ordering::Acquire);
    }
    let set = read();
    IGNORED.store(set, Ordering::Release);
    if next == 0 {
        let _ = NEXT_NS.compare_exchange(0, now.max(1) + REFRESH_NS, Ordering::AcqRel, Ordering::Relaxed);
    }
    set
}

/// Every signal's action, from the kernel.
fn read() -> u64 {
    let mut set = 0;
    for sig in 1..=NSIG {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue; // never ignored, never blocked
        }
        // SAFETY: a NULL new action only reads the old one into `old`.
        let mut old: libc::sigaction = unsafe { core::mem::zeroed() };
        if unsafe { libc::sigaction(sig, core::ptr::null(), &mut old) } != 0 {
            continue; // glibc's own signals (SIGCANCEL, SIGSETXID): handled
        }
        if ignores(sig, old.sa_sigaction) {
            set |= bit(sig);
        }
    }
    set
}

/// Whether a signal with this action is discarded on arrival.
fn ignores(sig: c_int, action: libc::sighandler_t) -> bool {
    action == libc::SIG_IGN || (action == libc::SIG_DFL && DEFAULT_IGNORED.contains(&sig))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_ignored_and_ignored_signals_only() {
        assert!(ignores(libc::SIGCHLD, libc::SIG_DFL));
        assert!(ignores(libc::SIGWINCH, libc::SIG_DFL));
        assert!(ignores(libc::SIGUSR1, libc::SIG_IGN));
        assert!(!ignores(libc::SIGUSR1, libc::SIG_DFL), "terminates");
        assert!(!ignores(libc::SIGTSTP, libc::SIG_DFL), "stops: the kernel's wait would end with EINTR");
        extern "C" fn handler(_: c_int) {}
        assert!(!ignores(libc::SIGCHLD, handler as extern "C" fn(c_int) as libc::sighandler_t));
        assert_eq!(bit(1), 1);
        assert_eq!(bit(64), 1 << 63);
    }

    #[test]
    fn read_matches_the_processs_actions() {
        // The test binary leaves SIGCHLD and SIGWINCH at their defaults and
        // SIGTERM at SIG_DFL (terminate); SIGPIPE is ignored by Rust's runtime.
        let set = read();
        assert_ne!(set & bit(libc::SIGCHLD), 0);
        assert_ne!(set & bit(libc::SIGWINCH), 0);
        assert_eq!(set & bit(libc::SIGTERM), 0);
        assert_eq!(set & bit(libc::SIGKILL), 0);
        assert_eq!(set & bit(libc::SIGPIPE), bit(libc::SIGPIPE), "Rust ignores SIGPIPE in its test binaries");
        assert_eq!(ignored(), set);
    }
}
