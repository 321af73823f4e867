//! The few Linux calls the event loop needs that std does not offer: epoll
//! (with a nanosecond timeout, `epoll_pwait2`, Linux 5.11, or else a
//! timerfd for open-loop send times), the thread's timer slack, the
//! monotonic clock in nanoseconds, and the process's CPU time. Every
//! `unsafe` block of the crate is here.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `CLOCK_MONOTONIC` in nanoseconds (the clock timerfd deadlines use).
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// User plus system CPU time of the whole process (every thread), seconds.
pub fn cpu_time_s() -> f64 {
    // SAFETY: zeroed rusage is a valid value; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Readiness events reported by [`Epoll::wait`].
#[derive(Clone, Copy, Debug)]
pub struct Event {
    pub token: u64,
    pub readable: bool,
    pub writable: bool,
    /// Error or hang-up: the peer closed or the connection broke.
    pub closed: bool,
}

pub struct Epoll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
    /// `epoll_pwait2` exists (Linux 5.11+): waits take a deadline in ns.
    ns_timeout: bool,
}

impl Epoll {
    pub fn new(capacity: usize) -> io::Result<Self> {
        // SAFETY: plain syscall; the returned fd is owned from here on.
        let fd = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        let mut ep = Epoll {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            events: vec![libc::epoll_event { events: 0, u64: 0 }; capacity.max(1)],
            ns_timeout: true,
        };
        // Ask once: an empty instance returns at once, or ENOSYS before 5.11.
        let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: the buffer holds one event at least; `zero` is valid.
        let n = unsafe {
            libc::epoll_pwait2(ep.fd.as_raw_fd(), ep.events.as_mut_ptr(), 1, &zero, std::ptr::null())
        };
        ep.ns_timeout = n >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ENOSYS);
        Ok(ep)
    }

    /// Whether [`Epoll::wait_until`] can be used (else a [`TimerFd`]
    /// carries the send times).
    pub fn has_ns_timeout(&self) -> bool {
        self.ns_timeout
    }

    /// Watch `fd` edge-triggered for input (and output if `writable`),
    /// reporting `token`. Edge-triggered: the caller reads until a short
    /// read and writes until done or `WouldBlock`, so no readiness is lost
    /// and no `epoll_ctl` is needed while the connection lives.
    pub fn add(&self, fd: RawFd, token: u64, writable: bool) -> io::Result<()> {
        let mut flags = libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLET;
        if writable {
            flags |= libc::EPOLLOUT;
        }
        let mut ev = libc::epoll_event {
            events: flags as u32,
            u64: token,
        };
        // SAFETY: `ev` is valid for the call; both fds are open.
        check(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) })?;
        Ok(())
    }

    pub fn remove(&self, fd: RawFd) {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: as above; failure (fd already gone) is harmless.
        unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, &mut ev) };
    }

    /// Wait at most `timeout_ms` (0: poll) and append the ready events to
    /// `out` (cleared first).
    pub fn wait(&mut self, out: &mut Vec<Event>, timeout_ms: i32) -> io::Result<()> {
        // SAFETY: the buffer holds `len` initialised events.
        let n = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as libc::c_int,
                timeout_ms,
            )
        };
        self.collect(n, out)
    }

    /// Wait until `deadline_ns` (absolute `CLOCK_MONOTONIC`; now or earlier:
    /// poll) and append the ready events to `out` (cleared first). Needs
    /// [`Epoll::has_ns_timeout`]. One system call where a timerfd needs two
    /// (its `timerfd_settime`, then the wait); the sleep is an hrtimer with
    /// the thread's timer slack (see [`set_timer_slack_ns`]).
    pub fn wait_until(&mut self, out: &mut Vec<Event>, deadline_ns: u64) -> io::Result<()> {
        let left = deadline_ns.saturating_sub(now_ns());
        let timeout = libc::timespec {
            tv_sec: (left / 1_000_000_000) as libc::time_t,
            tv_nsec: (left % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: the buffer holds `len` initialised events; `timeout` is valid.
        let n = unsafe {
            libc::epoll_pwait2(
                self.fd.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as libc::c_int,
                &timeout,
                std::ptr::null(),
            )
        };
        self.collect(n, out)
    }

    fn collect(&mut self, n: libc::c_int, out: &mut Vec<Event>) -> io::Result<()> {
        out.clear();
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(())
            } else {
                Err(e)
            };
        }
        for ev in &self.events[..n as usize] {
            let bits = ev.events as i32;
            out.push(Event {
                token: ev.u64,
                readable: bits
                    & (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR)
                    != 0,
                writable: bits & libc::EPOLLOUT != 0,
                closed: bits & (libc::EPOLLHUP | libc::EPOLLERR) != 0,
            });
        }
        Ok(())
    }
}

/// Let this thread's timed sleeps end within `ns` of their deadline. The
/// default slack is 50 us (`init_task.timer_slack_ns`), which the kernel
/// may add to an `epoll_pwait2` timeout to coalesce wake-ups
/// (`select_estimate_accuracy` in fs/select.c takes the larger of it and
/// 0.1 % of the timeout): an open-loop send would leave up to 50 us late.
pub fn set_timer_slack_ns(ns: u64) {
    // SAFETY: plain prctl on the calling thread; failure leaves the default.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

/// A one-shot timer on `CLOCK_MONOTONIC` with nanosecond deadlines,
/// watched through epoll (epoll_wait's own timeout has millisecond
/// resolution, far too coarse for open-loop send times). timerfd expiry is
/// an hrtimer without slack, so it fires within microseconds of the
/// deadline.
pub struct TimerFd {
    fd: OwnedFd,
    armed: Option<u64>,
}

impl TimerFd {
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall; the returned fd is owned from here on.
        let fd = check(unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        })?;
        Ok(TimerFd {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            armed: None,
        })
    }

    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Fire at absolute monotonic time `at_ns` (no syscall if already so).
    pub fn arm_at(&mut self, at_ns: u64) -> io::Result<()> {
        if self.armed == Some(at_ns) {
            return Ok(());
        }
        let at_ns = at_ns.max(1); // 0 would disarm
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (at_ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (at_ns % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: `spec` is valid; old value not requested.
        check(unsafe {
            libc::timerfd_settime(
                self.raw(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        })?;
        self.armed = Some(at_ns);
        Ok(())
    }

    /// Note that the timer fired (epoll reported it readable). The expiry
    /// count is not read: the next `arm_at` resets it (timerfd_settime
    /// zeroes it), which is also the next edge for edge-triggered epoll,
    /// so a read per expiry would be a wasted syscall.
    pub fn fired(&mut self) {
        self.armed = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_and_cpu_time_advance() {
        // Spin until the process has used 5 ms of CPU (however little of a
        // CPU a busy machine leaves it), at most 10 s of wall time. The
        // process's time counts the binary's other test threads too, which
        // may run on other CPUs meanwhile: the clock only has to move.
        let a = now_ns();
        let c0 = cpu_time_s();
        let mut x = 0u64;
        while cpu_time_s() - c0 < 0.005 && now_ns() - a < 10_000_000_000 {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
        assert!(x > 0);
        assert!(cpu_time_s() - c0 >= 0.005, "5 ms of CPU not reached in 10 s");
        assert!(now_ns() > a);
    }

    #[test]
    fn timer_fires_through_epoll() {
        let mut ep = Epoll::new(4).unwrap();
        let mut t = TimerFd::new().unwrap();
        ep.add(t.raw(), 7, false).unwrap();
        let start = now_ns();
        t.arm_at(start + 2_000_000).unwrap();
        let mut evs = Vec::new();
        while evs.is_empty() {
            ep.wait(&mut evs, 100).unwrap();
        }
        let waited = now_ns() - start;
        assert_eq!(evs[0].token, 7);
        assert!(waited >= 2_000_000, "{waited}");
        t.fired();
    }

    #[test]
    fn wait_until_sleeps_to_a_nanosecond_deadline() {
        let mut ep = Epoll::new(4).unwrap();
        assert!(ep.has_ns_timeout(), "epoll_pwait2 needs Linux 5.11");
        set_timer_slack_ns(1);
        let mut evs = Vec::new();
        for wait_ns in [300_000u64, 1_500_000] {
            let start = now_ns();
            ep.wait_until(&mut evs, start + wait_ns).unwrap();
            let waited = now_ns() - start;
            assert!(evs.is_empty());
            // Never early; late only by a wake-up (bounded loosely: a busy
            // machine can keep a thread off its CPU for milliseconds).
            assert!(waited >= wait_ns, "{waited} < {wait_ns}");
            assert!(waited < wait_ns + 1_000_000_000, "{waited}");
        }
        // A deadline in the past polls.
        ep.wait_until(&mut evs, 0).unwrap();
    }
}
