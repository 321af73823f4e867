//! Busy-wait: an `epoll_wait` that never sleeps (profile `busy-wait`,
//! `IRQLAB_NONBLOCKING=1`).
//!
//! # Why the shim loops on a 1 ns timeout
//!
//! The thesis (§3.2.1) runs busy-wait with a *non-blocking* `epoll_wait`:
//! the timeout must not be 0, because `ep_poll` (fs/eventpoll.c) returns at
//! once for a 0 timeout without ever calling `ep_busy_loop`, so nothing
//! would busy poll the NIC; and it must be no longer than the busy-poll
//! time, because once the busy loop ends without events `ep_poll` sleeps
//! until the timeout expires. `ep_poll` computes the timeout as an absolute
//! expiry on entry and the busy loop is bounded by `busy_poll_usecs`, not by
//! that expiry, so the shortest non-zero timeout satisfies both rules for
//! any `busy_poll_usecs`:
//!
//! * with a NAPI id learned, `ep_poll` busy polls for up to
//!   `busy_poll_usecs` (returning as soon as an event is ready), then finds
//!   the expiry already past and returns 0 without sleeping
//!   (`ep_schedule_timeout`, Linux 6.15+; earlier kernels arm an
//!   already-expired hrtimer, which wakes the thread at once);
//! * with no NAPI id — loopback and other devices without NAPI ids, and,
//!   importantly, right after every fruitless busy poll, since `ep_busy_loop`
//!   then sets `ep->napi_id = 0` until a socket wakeup teaches it again —
//!   `ep_poll` returns 0 at once instead of sleeping.
//!
//! The shim therefore calls `epoll_pwait2` with a timeout of 1 ns in a loop
//! until it returns events or an error, or until the caller's own timeout
//! has elapsed on `CLOCK_MONOTONIC` (the clock `ep_poll` uses), and then
//! returns 0 as the kernel would. The 1 ms timeout that `epoll_wait` can
//! express (its unit is the millisecond) was rejected: it satisfies the rule
//! only while the instance knows a NAPI id, and sleeps a full millisecond
//! otherwise — on an idle server, every time, since the id is forgotten
//! after each fruitless busy poll. A caller's timeout of 0 is passed through
//! untouched (it asked for a poll, and gets exactly one).
//!
//! # What the caller still sees
//!
//! The return value and errno are those of the last real call (events,
//! `-1`/`EBADF`, `EINVAL`, `EFAULT`, ...), or 0 with errno untouched when the
//! caller's timeout elapses. Signals keep their `epoll_wait` meaning: a
//! handler that runs during the wait makes it fail with `EINTR` (epoll_wait
//! is never restarted, whatever `SA_RESTART` says: signal(7)), and a signal
//! the kernel discards on arrival does not end it. Each kernel call installs
//! the mask the caller would have waited under (its `sigmask` argument for
//! `epoll_pwait`/`epoll_pwait2`, its own mask otherwise) for the duration of
//! the call, as `epoll_pwait` is made to do. Between two calls, in user
//! space, the shim blocks every signal but those the kernel discards on
//! arrival (`SIG_IGN`, or a default action of ignore: SIGCHLD, SIGWINCH,
//! SIGURG, SIGCONT; [`crate::dispositions`]):
//!
//! * a signal with a handler (or a default action that stops or ends the
//!   process) that arrives between two calls stays pending and makes the
//!   next call fail with `EINTR` after its handler ran, so no handler runs
//!   without the wait reporting it, and none is delayed by more than one
//!   call;
//! * a discarded signal is never held back: held, it would stay pending and
//!   make the next call fail with `EINTR` where the kernel's wait goes on
//!   (issue 62, item 1: a child exiting during a server's wait). Those the
//!   thread's own mask blocks stay blocked until the first call (one pending
//!   from before the wait ends it with `EINTR`, as the kernel's wait
//!   would), then follow the caller's `sigmask`.
//!
//! glibc's `pthread_sigmask` never blocks its internal cancellation and
//! set*id signals, so thread cancellation and `setuid` keep working.
//!
//! Everything here is async-signal-safe (`pthread_sigmask`, `clock_gettime`,
//! `epoll_pwait2`), allocates nothing and cannot panic.

use core::sync::atomic::{AtomicBool, Ordering};
use libc::{c_int, epoll_event, sigset_t, timespec};

use crate::{dispositions, real};

/// The timeout of each kernel call in the loop: the shortest non-zero one.
const SPIN_TIMEOUT: timespec = timespec {
    tv_sec: 0,
    tv_nsec: 1,
};

/// Set when `epoll_pwait2` turned out to be missing (libc before 2.35 and a
/// kernel before 5.11); the loop then uses `epoll_pwait` with 1 ms, the
/// shortest non-zero timeout it can express.
static NO_PWAIT2: AtomicBool = AtomicBool::new(false);

/// When the caller's wait ends, on `CLOCK_MONOTONIC`, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deadline {
    /// A negative `epoll_wait` timeout, or a NULL `epoll_pwait2` one.
    Never,
    At(i128),
}

impl Deadline {
    /// The deadline of an `epoll_wait` timeout in ms (not 0), from now.
    pub fn after_ms(timeout_ms: c_int) -> Deadline {
        if timeout_ms < 0 {
            return Deadline::Never;
        }
        Deadline::At(now_ns() + i128::from(timeout_ms) * 1_000_000)
    }

    /// The deadline of an `epoll_pwait2` timeout (valid, not zero, not NULL), from now.
    pub fn after(timeout: &timespec) -> Deadline {
        Deadline::At(
            now_ns() + i128::from(timeout.tv_sec) * 1_000_000_000 + i128::from(timeout.tv_nsec),
        )
    }

    fn passed(self) -> bool {
        match self {
            Deadline::Never => false,
            Deadline::At(ns) => now_ns() >= ns,
        }
    }
}

/// Wait for events on `epfd` until `deadline` without ever sleeping.
/// `sigmask` is the caller's `epoll_pwait` mask, or NULL for its own.
///
/// # Safety
/// The arguments are the caller's, passed on unchanged to the kernel.
pub unsafe fn wait(
    epfd: c_int,
    events: *mut epoll_event,
    maxevents: c_int,
    deadline: Deadline,
    sigmask: *const sigset_t,
) -> c_int {
    let entry_errno = errno();
    let mut ignored = dispositions::ignored();
    // Block what is not discarded on arrival, on top of the thread's own
    // mask: a discarded signal the thread blocks stays blocked for now.
    let mut own: sigset_t = core::mem::zeroed();
    let hold = from_bits(!ignored);
    if libc::pthread_sigmask(libc::SIG_BLOCK, &hold, &mut own) != 0 {
        // Cannot happen with valid arguments; never spin without the
        // signal guarantee: fall back to the caller's blocking wait.
        return blocking_fallback(epfd, events, maxevents, deadline, sigmask);
    }
    let wait_mask: *const sigset_t = if sigmask.is_null() { &own } else { sigmask };
    // The discarded signals the thread and the wait both block, which stay
    // held; read once the first call has shown the caller's mask readable
    // (a bad pointer fails there with EFAULT, as without the shim).
    let mut kept: Option<u64> = None;
    let (result, result_errno) = loop {
        let n = poll_once(epfd, events, maxevents, wait_mask);
        if n != 0 {
            break (n, if n < 0 { errno() } else { entry_errno });
        }
        if deadline.passed() {
            break (0, entry_errno);
        }
        // After the first call (which found no such signal pending, or it
        // would have failed with EINTR), the discarded signals the caller's
        // mask lets through are let through between calls too; and an
        // action changed since goes into the mask.
        let now_ignored = dispositions::ignored();
        let first = kept.is_none();
        let held = *kept.get_or_insert_with(|| bits(&own) & bits(&*wait_mask));
        // Unchanged after the first call unless the caller's mask lets
        // through a discarded signal the thread's own mask blocks.
        if (first && ignored & bits(&own) & !held != 0) || now_ignored != ignored {
            ignored = now_ignored;
            let between = from_bits(!(ignored & !held));
            libc::pthread_sigmask(libc::SIG_SETMASK, &between, core::ptr::null_mut());
        }
    };

    libc::pthread_sigmask(libc::SIG_SETMASK, &own, core::ptr::null_mut());
    set_errno(result_errno);
    result
}

/// The first 64 signals of `set` (bit `sig - 1`): the whole of the kernel's
/// `sigset_t` on 64-bit Linux, where glibc's first word is the kernel's.
fn bits(set: &sigset_t) -> u64 {
    // SAFETY: glibc's sigset_t is an array of unsigned longs, at least 8 bytes.
    unsafe { *(set as *const sigset_t).cast::<u64>() }
}

/// A `sigset_t` holding the signals of `bits` (see [`bits`]).
fn from_bits(bits: u64) -> sigset_t {
    // SAFETY: an all-zero sigset_t is the empty set; the first word is written.
    unsafe {
        let mut set: sigset_t = core::mem::zeroed();
        *(&mut set as *mut sigset_t).cast::<u64>() = bits;
        set
    }
}

const _: () = assert!(core::mem::size_of::<sigset_t>() >= 8);

/// One kernel call that may busy poll but never sleeps.
unsafe fn poll_once(
    epfd: c_int,
    events: *mut epoll_event,
    maxevents: c_int,
    mask: *const sigset_t,
) -> c_int {
    if !NO_PWAIT2.load(Ordering::Relaxed) {
        let n = match real::epoll_pwait2() {
            Some(pwait2) => pwait2(epfd, events, maxevents, &SPIN_TIMEOUT, mask),
            None => libc::syscall(
                libc::SYS_epoll_pwait2,
                epfd,
                events,
                maxevents,
                &SPIN_TIMEOUT as *const timespec,
                mask,
                core::mem::size_of::<u64>(), // the kernel's sigset size (_NSIG / 8)
            ) as c_int,
        };
        if !(n < 0 && errno() == libc::ENOSYS) {
            return n;
        }
        NO_PWAIT2.store(true, Ordering::Relaxed);
    }
    match real::epoll_pwait() {
        Some(pwait) => pwait(epfd, events, maxevents, 1, mask),
        None => {
            set_errno(libc::ENOSYS);
            -1
        }
    }
}

/// The caller's own blocking wait, for the impossible case where the
/// signal mask cannot be changed.
unsafe fn blocking_fallback(
    epfd: c_int,
    events: *mut epoll_event,
    maxevents: c_int,
    deadline: Deadline,
    sigmask: *const sigset_t,
) -> c_int {
    let timeout_ms = match deadline {
        Deadline::Never => -1,
        Deadline::At(ns) => {
            ((ns - now_ns()).max(0) / 1_000_000).min(i128::from(c_int::MAX)) as c_int
        }
    };
    match real::epoll_pwait() {
        Some(pwait) => pwait(epfd, events, maxevents, timeout_ms, sigmask),
        None => {
            set_errno(libc::ENOSYS);
            -1
        }
    }
}

/// `CLOCK_MONOTONIC` now, in nanoseconds (the vDSO: no system call).
fn now_ns() -> i128 {
    let mut ts = timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
}

pub fn errno() -> c_int {
    // SAFETY: glibc's thread-local errno.
    unsafe { *libc::__errno_location() }
}

pub fn set_errno(value: c_int) {
    // SAFETY: glibc's thread-local errno.
    unsafe { *libc::__errno_location() = value };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines() {
        assert_eq!(Deadline::after_ms(-1), Deadline::Never);
        assert!(!Deadline::Never.passed());
        let Deadline::At(at) = Deadline::after_ms(1000) else {
            panic!("finite")
        };
        assert!(at - now_ns() > 900_000_000);
        let huge = timespec {
            tv_sec: i64::MAX,
            tv_nsec: 999_999_999,
        };
        assert!(
            !Deadline::after(&huge).passed(),
            "no overflow on the longest timeout"
        );
    }

    #[test]
    fn spins_until_the_deadline_then_returns_0_with_errno_kept() {
        unsafe {
            let ep = libc::epoll_create1(libc::EPOLL_CLOEXEC);
            assert!(ep >= 0);
            let mut ev: [epoll_event; 4] = core::mem::zeroed();
            let start = now_ns();
            set_errno(1234);
            let n = wait(
                ep,
                ev.as_mut_ptr(),
                4,
                Deadline::after_ms(30),
                core::ptr::null(),
            );
            let waited = now_ns() - start;
            assert_eq!((n, errno()), (0, 1234));
            assert!(
                (30_000_000..1_000_000_000).contains(&waited),
                "waited {waited} ns"
            );
            libc::close(ep);
        }
    }

    #[test]
    fn returns_ready_events_and_real_errors() {
        unsafe {
            let ep = libc::epoll_create1(libc::EPOLL_CLOEXEC);
            let efd = libc::eventfd(1, libc::EFD_CLOEXEC);
            let mut add = epoll_event {
                events: libc::EPOLLIN as u32,
                u64: 7,
            };
            assert_eq!(libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, efd, &mut add), 0);
            let mut ev: [epoll_event; 4] = core::mem::zeroed();
            assert_eq!(
                wait(ep, ev.as_mut_ptr(), 4, Deadline::Never, core::ptr::null()),
                1
            );
            let data = ev[0].u64;
            assert_eq!(data, 7);
            assert_eq!(
                wait(-1, ev.as_mut_ptr(), 4, Deadline::Never, core::ptr::null()),
                -1
            );
            assert_eq!(errno(), libc::EBADF);
            assert_eq!(
                wait(ep, ev.as_mut_ptr(), 0, Deadline::Never, core::ptr::null()),
                -1
            );
            assert_eq!(errno(), libc::EINVAL);
            libc::close(efd);
            libc::close(ep);
        }
    }
}
