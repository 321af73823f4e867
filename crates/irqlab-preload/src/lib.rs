//! LD_PRELOAD shim that puts an unmodified epoll program under one of
//! irqlab's profiles (SYSTEM.md, "The real side"; thesis appendix A).
//!
//! `irqlab linux exec --profile P -- CMD` preloads this library and passes
//! the profile's epoll knobs in the environment (see [`config`]). The shim
//!
//! * wraps `epoll_create` and `epoll_create1`: every epoll instance the
//!   program creates gets the profile's `busy_poll_usecs`, `busy_poll_budget`
//!   and `prefer_busy_poll` through the `EPIOCSPARAMS` ioctl (Linux 6.9+,
//!   `ep_eventpoll_bp_ioctl` in fs/eventpoll.c);
//! * with `IRQLAB_CONTROL=FILE`, takes a new `busy_poll_usecs` from FILE
//!   while the program runs ([`control`]; `irqlab linux tune`);
//! * wraps `epoll_wait`, `epoll_pwait` and `epoll_pwait2`: under busy-wait
//!   (`IRQLAB_NONBLOCKING=1`) a wait with a non-zero timeout spins in the
//!   kernel's busy poll instead of sleeping ([`busy_wait`]); otherwise, and
//!   always for a 0 timeout, they call libc's function unchanged.
//!
//! The program must compute exactly what it computes without the shim:
//! return values and errno are the real calls' (errno is put back after
//! the shim's own ioctl), and signals interrupt waits as they would. If the
//! kernel refuses the parameters (ENOTTY before 6.9, EPERM for a budget
//! above 64 without CAP_NET_ADMIN, EINVAL, EOPNOTSUPP), the shim prints one
//! warning line for the whole process and leaves the program alone from
//! then on: no more ioctls, no busy-wait. An invalid environment gives the
//! same single warning and an inactive shim. A profile without busy polling
//! (`no-coalescing`, `adaptive-coalescing`: all knobs 0, blocking) makes no
//! ioctl at all, since a new epoll instance already has those values.
//!
//! With `IRQLAB_PRELOAD_DEBUG=1` every configured instance is reported as
//! `irqlab-preload: pid P: epfd N: busy_poll_usecs=.. budget=.. prefer=.. nonblocking=..`
//! (the PID tells a server's worker processes, or a daemon's, apart).
//!
//! The environment is read once, lazily, by the first epoll function the
//! process calls (so that processes that never use epoll, such as a shell
//! between the launcher and the server, stay silent), behind a `Once`;
//! afterwards the wrappers read only atomics. The library is inherited by
//! child processes through `LD_PRELOAD`, each of which is configured on its
//! own. Supported: glibc on 64-bit Linux (on 32-bit time64 builds glibc
//! routes `epoll_pwait2` to `__epoll_pwait2_time64`, which is not wrapped).

mod busy_wait;
mod config;
mod control;
mod real;
mod report;

use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU8, Ordering, AtomicU64};
use std::sync::Once;

use libc::{c_int, epoll_event, sigset_t, timespec};

use busy_wait::{errno, set_errno, Deadline};
use config::{Config, Parsed};
use report::Line;

// -- state, written once by `init` and then only by refusals -----------------

static INIT: Once = Once::new();
/// New epoll instances get EPIOCSPARAMS.
static CONFIGURE: AtomicBool = AtomicBool::new(false);
/// `epoll_wait` and friends spin (busy-wait); set once the kernel accepted
/// the parameters on some instance, cleared for good by a refusal.
static SPIN: AtomicBool = AtomicBool::new(false);
/// The process has printed its one warning.
static WARNED: AtomicBool = AtomicBool::new(false);
static DEBUG: AtomicBool = AtomicBool::new(false);
static NONBLOCKING: AtomicBool = AtomicBool::new(false);
/// Busy-wait spins in every epoll instance (`IRQLAB_SPIN_ALL=1`).
static SPIN_ALL: AtomicBool = AtomicBool::new(false);
/// Epoll instances (by fd, below `NAPI_EPFD_LIMIT`) that watch a socket with
/// a NAPI id: busy-wait spins only in those by default. A program's other
/// event loops (memcached's dispatcher thread, which watches only the
/// listening socket and pipes) keep sleeping instead of competing for the
/// core with the worker that busy polls: the kernel could not busy poll for
/// them anyway (`ep_busy_loop` needs `ep->napi_id`).
static NAPI_EPFD: [AtomicU64; NAPI_EPFD_WORDS] = [const { AtomicU64::new(0) }; NAPI_EPFD_WORDS];
const NAPI_EPFD_WORDS: usize = 64;
const NAPI_EPFD_LIMIT: c_int = (NAPI_EPFD_WORDS * 64) as c_int;
/// Epoll instances (by fd, below `NAPI_EPFD_LIMIT`) the shim configured:
/// where a new `busy_poll_usecs` from the control file goes.
static CONFIGURED_EPFD: [AtomicU64; NAPI_EPFD_WORDS] = [const { AtomicU64::new(0) }; NAPI_EPFD_WORDS];
static USECS: AtomicU32 = AtomicU32::new(0);
static BUDGET: AtomicU16 = AtomicU16::new(0);
static PREFER: AtomicU8 = AtomicU8::new(0);

/// Look the real functions up as soon as the library is loaded, so that no
/// wrapper needs `dlsym` later (see `real`).
#[used]
#[link_section = ".init_array"]
static CONSTRUCTOR: extern "C" fn() = constructor;

extern "C" fn constructor() {
    real::resolve_all();
}

/// Read the environment, once.
fn init() {
    INIT.call_once(|| {
        let saved = errno();
        let get = |name: &'static str| getenv(name);
        DEBUG.store(config::debug_enabled(get(config::DEBUG)), Ordering::Relaxed);
        SPIN_ALL.store(config::debug_enabled(get(config::SPIN_ALL)), Ordering::Relaxed);
        if let Some(path) = get(config::CONTROL) {
            if !control::set_path(path) && !WARNED.swap(true, Ordering::AcqRel) {
                let mut line = Line::new();
                let _ = write!(line, "warning: {}=\"", config::CONTROL);
                line.push_printable(path);
                let _ = write!(line, "\" is not an absolute path of fewer than 256 bytes; busy_poll_usecs stays as set at start");
                line.emit();
            }
        }
        match config::parse(get) {
            Parsed::Unset => {}
            Parsed::Valid(config) if config.is_noop() => {}
            Parsed::Valid(config) => {
                USECS.store(config.busy_poll_usecs, Ordering::Relaxed);
                BUDGET.store(config.busy_poll_budget, Ordering::Relaxed);
                PREFER.store(config.prefer_busy_poll, Ordering::Relaxed);
                NONBLOCKING.store(config.nonblocking, Ordering::Relaxed);
                CONFIGURE.store(true, Ordering::Release);
            }
            Parsed::Invalid { var, value, max } => {
                if !WARNED.swap(true, Ordering::AcqRel) {
                    let mut line = Line::new();
                    let _ = write!(line, "warning: {var}=\"");
                    line.push_printable(value);
                    let _ = write!(
                        line,
                        "\" is not a whole number from 0 to {max}; the shim is inactive and the program runs unchanged"
                    );
                    line.emit();
                }
            }
        }
        set_errno(saved);
    });
}

/// The bytes of environment variable `name`, without allocating. The
/// pointer `getenv` returns stays valid while nobody modifies the
/// environment, and is used only inside `init`.
fn getenv(name: &'static str) -> Option<&'static [u8]> {
    let mut buf = [0u8; 64];
    let bytes = name.as_bytes();
    buf.get_mut(..bytes.len())?.copy_from_slice(bytes);
    // SAFETY: `buf` is NUL-terminated (names are shorter than 64 bytes).
    let value = unsafe { libc::getenv(buf.as_ptr().cast()) };
    if value.is_null() {
        return None;
    }
    // SAFETY: `getenv` returned a NUL-terminated string.
    Some(unsafe { core::ffi::CStr::from_ptr(value) }.to_bytes())
}

fn current() -> Config {
    Config {
        busy_poll_usecs: USECS.load(Ordering::Relaxed),
        busy_poll_budget: BUDGET.load(Ordering::Relaxed),
        prefer_busy_poll: PREFER.load(Ordering::Relaxed),
        nonblocking: NONBLOCKING.load(Ordering::Relaxed),
    }
}

/// `EPIOCSPARAMS` with `c`'s parameters on `epfd`; the ioctl's result.
fn set_params(epfd: c_int, c: &Config) -> c_int {
    let params = libc::epoll_params {
        busy_poll_usecs: c.busy_poll_usecs,
        busy_poll_budget: c.busy_poll_budget,
        prefer_busy_poll: c.prefer_busy_poll,
        __pad: 0,
    };
    // SAFETY: `params` is a valid `struct epoll_params` for the kernel to read.
    unsafe { libc::ioctl(epfd, libc::EPIOCSPARAMS, &params as *const libc::epoll_params) }
}

/// Give a new epoll instance the profile's parameters. Keeps errno.
fn configure(epfd: c_int) {
    init();
    if !CONFIGURE.load(Ordering::Acquire) {
        return;
    }
    let saved = errno();
    let c = current();
    let rc = set_params(epfd, &c);
    if rc == 0 {
        set_epfd_bit(&CONFIGURED_EPFD, epfd, true);
        if c.nonblocking {
            SPIN.store(true, Ordering::Release);
        }
        if DEBUG.load(Ordering::Relaxed) {
            let mut line = Line::new();
            // SAFETY: getpid has no preconditions and cannot fail.
            let pid = unsafe { libc::getpid() };
            let _ = write!(
                line,
                "pid {pid}: epfd {epfd}: busy_poll_usecs={} budget={} prefer={} nonblocking={}",
                c.busy_poll_usecs,
                c.busy_poll_budget,
                c.prefer_busy_poll,
                u8::from(c.nonblocking)
            );
            line.emit();
        }
    } else {
        let err = errno();
        // The program runs unchanged from now on.
        CONFIGURE.store(false, Ordering::Release);
        SPIN.store(false, Ordering::Release);
        if !WARNED.swap(true, Ordering::AcqRel) {
            let (name, why) = report::errno_text(err);
            let mut line = Line::new();
            let _ = write!(
                line,
                "warning: the kernel refused EPIOCSPARAMS (busy_poll_usecs={} busy_poll_budget={} prefer_busy_poll={}) \
                 on epoll fd {epfd}: {name} ({err}: {why}); the program runs without the profile's epoll settings",
                c.busy_poll_usecs, c.busy_poll_budget, c.prefer_busy_poll
            );
            line.emit();
        }
    }
    set_errno(saved);
}

/// At most once per interval: a new `busy_poll_usecs` in the control file
/// goes to every configured epoll instance. Keeps errno.
fn control_poll() {
    if !control::enabled() || !CONFIGURE.load(Ordering::Acquire) || !control::due() {
        return;
    }
    let saved = errno();
    if let Some(usecs) = control::read_usecs() {
        if usecs != USECS.swap(usecs, Ordering::Relaxed) {
            let c = current();
            let mut set = 0;
            for (w, word) in CONFIGURED_EPFD.iter().enumerate() {
                let mut bits = word.load(Ordering::Relaxed);
                while bits != 0 {
                    let epfd = (w * 64 + bits.trailing_zeros() as usize) as c_int;
                    bits &= bits - 1;
                    // An fd closed and reused since is refused (ENOTTY) or is
                    // a new epoll instance, which should have them anyway.
                    if set_params(epfd, &c) == 0 {
                        set += 1;
                    }
                }
            }
            if DEBUG.load(Ordering::Relaxed) {
                let mut line = Line::new();
                // SAFETY: getpid has no preconditions and cannot fail.
                let pid = unsafe { libc::getpid() };
                let _ = write!(line, "pid {pid}: control: busy_poll_usecs={usecs} on {set} epoll instance(s)");
                line.emit();
            }
        }
    }
    set_errno(saved);
}

fn spinning() -> bool {
    SPIN.load(Ordering::Acquire)
}

/// Busy-wait applies to waits on `epfd`.
fn spins_on(epfd: c_int) -> bool {
    spinning() && (SPIN_ALL.load(Ordering::Relaxed) || napi_epfd(epfd))
}

fn napi_epfd(epfd: c_int) -> bool {
    if !(0..NAPI_EPFD_LIMIT).contains(&epfd) {
        return true; // beyond the table: spin, as without it
    }
    let i = epfd as usize;
    NAPI_EPFD[i / 64].load(Ordering::Relaxed) & (1 << (i % 64)) != 0
}

fn set_napi_epfd(epfd: c_int, on: bool) {
    set_epfd_bit(&NAPI_EPFD, epfd, on);
}

/// Mark `epfd` in a table of epoll fds (those beyond it are not tracked).
fn set_epfd_bit(table: &[AtomicU64; NAPI_EPFD_WORDS], epfd: c_int, on: bool) {
    if (0..NAPI_EPFD_LIMIT).contains(&epfd) {
        let i = epfd as usize;
        let bit = 1u64 << (i % 64);
        if on {
            table[i / 64].fetch_or(bit, Ordering::Relaxed);
        } else {
            table[i / 64].fetch_and(!bit, Ordering::Relaxed);
        }
    }
}

/// `SO_INCOMING_NAPI_ID` of `fd` (0 for a non-socket, a socket that never
/// received through a NAPI, or a listening socket). Keeps errno.
fn incoming_napi_id(fd: c_int) -> u32 {
    let saved = errno();
    let mut id: u32 = 0;
    let mut len = core::mem::size_of::<u32>() as libc::socklen_t;
    // SAFETY: `id` and `len` are valid for the kernel to write.
    let rc = unsafe {
        libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_INCOMING_NAPI_ID, (&mut id as *mut u32).cast(), &mut len)
    };
    set_errno(saved);
    if rc == 0 {
        id
    } else {
        0
    }
}

fn enosys() -> c_int {
    set_errno(libc::ENOSYS);
    -1
}

// -- the wrapped functions (sys/epoll.h prototypes) --------------------------

/// `epoll_create(size)`, then the profile's parameters on the new instance.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn epoll_create(size: c_int) -> c_int {
    let Some(real) = real::epoll_create() else {
        return enosys();
    };
    let fd = real(size);
    if fd >= 0 {
        set_napi_epfd(fd, false); // the number may be a closed instance's
        configure(fd);
    }
    fd
}

/// `epoll_create1(flags)`, then the profile's parameters on the new instance.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn epoll_create1(flags: c_int) -> c_int {
    let Some(real) = real::epoll_create1() else {
        return enosys();
    };
    let fd = real(flags);
    if fd >= 0 {
        set_napi_epfd(fd, false); // the number may be a closed instance's
        configure(fd);
    }
    fd
}

/// `epoll_ctl`; under busy-wait, an instance to which a socket with a NAPI
/// id is added becomes one that spins (an accepted TCP socket carries the
/// NAPI id of its handshake from `accept` on).
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn epoll_ctl(epfd: c_int, op: c_int, fd: c_int, event: *mut epoll_event) -> c_int {
    let Some(real) = real::epoll_ctl() else {
        return enosys();
    };
    let rc = real(epfd, op, fd, event);
    if rc == 0 && op == libc::EPOLL_CTL_ADD && spinning() && !napi_epfd(epfd) && incoming_napi_id(fd) != 0 {
        set_napi_epfd(epfd, true);
    }
    rc
}

/// `epoll_wait`; spins instead of sleeping under busy-wait.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn epoll_wait(
    epfd: c_int,
    events: *mut epoll_event,
    maxevents: c_int,
    timeout: c_int,
) -> c_int {
    control_poll();
    if timeout != 0 && spins_on(epfd) {
        return busy_wait::wait(
            epfd,
            events,
            maxevents,
            Deadline::after_ms(timeout),
            core::ptr::null(),
        );
    }
    match real::epoll_wait() {
        Some(real) => real(epfd, events, maxevents, timeout),
        None => enosys(),
    }
}

/// `epoll_pwait`; spins instead of sleeping under busy-wait, with the
/// caller's `sigmask` in force during every kernel call.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn epoll_pwait(
    epfd: c_int,
    events: *mut epoll_event,
    maxevents: c_int,
    timeout: c_int,
    sigmask: *const sigset_t,
) -> c_int {
    control_poll();
    if timeout != 0 && spins_on(epfd) {
        return busy_wait::wait(
            epfd,
            events,
            maxevents,
            Deadline::after_ms(timeout),
            sigmask,
        );
    }
    match real::epoll_pwait() {
        Some(real) => real(epfd, events, maxevents, timeout, sigmask),
        None => enosys(),
    }
}

/// `epoll_pwait2`; spins instead of sleeping under busy-wait. A zero or
/// invalid timeout goes to libc unchanged (an invalid one fails there with
/// EINVAL, as without the shim); NULL waits forever.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn epoll_pwait2(
    epfd: c_int,
    events: *mut epoll_event,
    maxevents: c_int,
    timeout: *const timespec,
    sigmask: *const sigset_t,
) -> c_int {
    control_poll();
    if spins_on(epfd) {
        let deadline = match timeout.as_ref() {
            None => Some(Deadline::Never),
            Some(t) if t.tv_sec < 0 || !(0..1_000_000_000).contains(&t.tv_nsec) => None,
            Some(t) if t.tv_sec == 0 && t.tv_nsec == 0 => None,
            Some(t) => Some(Deadline::after(t)),
        };
        if let Some(deadline) = deadline {
            return busy_wait::wait(epfd, events, maxevents, deadline, sigmask);
        }
    }
    match real::epoll_pwait2() {
        Some(real) => real(epfd, events, maxevents, timeout, sigmask),
        None => libc::syscall(
            libc::SYS_epoll_pwait2,
            epfd,
            events,
            maxevents,
            timeout,
            sigmask,
            core::mem::size_of::<u64>(),
        ) as c_int,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ioctl_numbers_match_the_uapi_header() {
        // _IOW(0x8A, 0x01, struct epoll_params) and _IOR(0x8A, 0x02, ...),
        // include/uapi/linux/eventpoll.h, with an 8-byte struct.
        assert_eq!(core::mem::size_of::<libc::epoll_params>(), 8);
        assert_eq!(libc::EPIOCSPARAMS, 0x4008_8A01);
        assert_eq!(libc::EPIOCGPARAMS, 0x8008_8A02);
    }
}
