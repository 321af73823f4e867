//! LD_PRELOAD shim that puts an unmodified epoll program under one of
//! irqlab's profiles (docs/architecture.md, "The real side"; thesis appendix A).
//!
//! `irqlab linux exec --profile P -- CMD` preloads this library and passes
//! the profile's epoll knobs in the environment (see [`config`]). The shim
//!
//! * wraps `epoll_create` and `epoll_create1`: every epoll instance the
//!   program creates gets the profile's `busy_poll_usecs`, `busy_poll_budget`
//!   and `prefer_busy_poll` through the `EPIOCSPARAMS` ioctl (Linux 6.9+,
//!   `ep_eventpoll_bp_ioctl` in fs/eventpoll.c);
//! * with `IRQLAB_CONTROL=FILE`, records every epoll instance the program
//!   creates, under any profile, and sets a new `busy_poll_usecs` from FILE
//!   on all of them while the program runs ([`control`]; `irqlab linux
//!   tune`), at any fd; budget, prefer and busy-wait stay the profile's; a
//!   line it cannot take is said in a warning line, once per text;
//! * wraps `epoll_wait`, `epoll_pwait` and `epoll_pwait2`: under busy-wait
//!   (`IRQLAB_NONBLOCKING=1`) a wait with a non-zero timeout spins in the
//!   kernel's busy poll instead of sleeping ([`busy_wait`]); otherwise, and
//!   always for a 0 timeout, they call libc's function unchanged;
//! * with `IRQLAB_STATS=FILE`, times the program's batches (from a wait
//!   that returns events to the thread's next wait) and writes their count,
//!   sum and log2 histogram to FILE every 20 ms at most ([`stats`]; `irqlab
//!   linux control --shim-stats`). This is measurement only: it goes on
//!   under any profile or none, and after a refusal.
//!
//! The program must compute exactly what it computes without the shim:
//! return values and errno are the real calls' (errno is put back after
//! the shim's own calls), and signals interrupt waits as they would. If the
//! kernel refuses the parameters (ENOTTY before 6.9, EPERM for a budget
//! above 64 without CAP_NET_ADMIN, EINVAL, EOPNOTSUPP), the shim prints one
//! warning line for the whole process and leaves the program alone from
//! then on: no more ioctls, no busy-wait, no control file (that warning has
//! a flag of its own: no earlier warning silences it). An invalid
//! environment gives the same single warning and an inactive shim. The
//! shim makes no ioctl on a new instance when the values are the kernel's
//! defaults (all 0: `no-coalescing`, `adaptive-coalescing`, `irq-batching`,
//! or a control file holding 0), since a new epoll instance already has
//! them; such a profile without a control file runs the program exactly as
//! it is, on any kernel.
//!
//! With `IRQLAB_PRELOAD_DEBUG=1` every configured (or, with a control file,
//! recorded) instance is reported as
//! `irqlab-preload: pid P: epfd N: busy_poll_usecs=.. budget=.. prefer=.. nonblocking=..`
//! (the PID tells a server's worker processes, or a daemon's, apart), and
//! every value taken from the control file as
//! `irqlab-preload: pid P: control: busy_poll_usecs=N on K epoll instance(s)`.
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
mod dispositions;
mod real;
mod report;
mod stats;

use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Once;

use libc::{c_int, epoll_event, sigset_t, timespec};

use busy_wait::{errno, set_errno, Deadline};
use config::{Config, Parsed};
use report::Line;

// -- state, written once by `init` and then only by refusals -----------------

static INIT: Once = Once::new();
/// The shim acts on epoll instances: the environment holds a valid
/// configuration (or only a control file), and the kernel has refused
/// nothing yet. Cleared for good by a refusal.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// `epoll_wait` and friends spin (busy-wait); set once the kernel accepted
/// the parameters on some instance, cleared for good by a refusal.
static SPIN: AtomicBool = AtomicBool::new(false);
/// The process has printed its one warning about its environment.
static WARNED: AtomicBool = AtomicBool::new(false);
/// The process has printed its one warning about a refused `EPIOCSPARAMS`:
/// a flag of its own, so that an earlier warning (a bad control file line)
/// never silences it (issue 62, item 8).
static REFUSAL_WARNED: AtomicBool = AtomicBool::new(false);
/// The fingerprint of the last control file text warned about (0: none
/// since the last valid one): one warning per text, not per read.
static CONTROL_TEXT_WARNED: AtomicU64 = AtomicU64::new(0);
/// With a control file, an epoll instance was created at an fd beyond the
/// table (`EPFD_LIMIT` or above): a control pass looks for those in
/// `/proc/self/fd` (`apply_beyond_table`).
static TRACKED_BEYOND: AtomicBool = AtomicBool::new(false);
static DEBUG: AtomicBool = AtomicBool::new(false);
static NONBLOCKING: AtomicBool = AtomicBool::new(false);
/// Busy-wait spins in every epoll instance (`IRQLAB_SPIN_ALL=1`).
static SPIN_ALL: AtomicBool = AtomicBool::new(false);
/// A set of epoll fds, one bit per fd below `EPFD_LIMIT`. The fds beyond
/// are not in it: busy-wait spins in them, and a control file value
/// reaches them through `/proc/self/fd` (`apply_beyond_table`; issue 62,
/// item 7: they were skipped without a word).
type EpfdTable = [AtomicU64; EPFD_WORDS];
const EPFD_WORDS: usize = 64;
const EPFD_LIMIT: c_int = (EPFD_WORDS * 64) as c_int;
/// Epoll instances that watch a socket with a NAPI id: busy-wait spins
/// only in those by default. A program's other event loops (memcached's
/// dispatcher thread, which watches only the listening socket and pipes)
/// keep sleeping instead of competing for the core with the worker that
/// busy polls: the kernel could not busy poll for them anyway
/// (`ep_busy_loop` needs `ep->napi_id`).
static NAPI_EPFD: EpfdTable = [const { AtomicU64::new(0) }; EPFD_WORDS];
/// With a control file, every epoll instance the program created, whether
/// the shim set parameters on it or not (under a profile without busy
/// polling it sets none until the file changes): where a new
/// `busy_poll_usecs` goes. A bit stays after its fd is closed; the fd is
/// checked when a value is applied (`apply_to`).
static TRACKED_EPFD: EpfdTable = [const { AtomicU64::new(0) }; EPFD_WORDS];
/// A thread is applying a value from the control file. One at a time: two
/// interleaved passes could leave an instance with the older value.
static APPLYING: AtomicBool = AtomicBool::new(false);
/// `busy_poll_usecs` in force: the profile's, then the control file's.
/// Sequentially consistent with `TRACKED_EPFD` (see `configure`).
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
        stats::setup(get(config::STATS));
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
            // Preloaded by hand with a control file only: the kernel's
            // defaults until the file changes them.
            Parsed::Unset if control::enabled() => ACTIVE.store(true, Ordering::Release),
            Parsed::Unset => {}
            Parsed::Valid(config) => {
                USECS.store(config.busy_poll_usecs, Ordering::SeqCst);
                BUDGET.store(config.busy_poll_budget, Ordering::Relaxed);
                PREFER.store(config.prefer_busy_poll, Ordering::Relaxed);
                NONBLOCKING.store(config.nonblocking, Ordering::Relaxed);
                ACTIVE.store(true, Ordering::Release);
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
        busy_poll_usecs: USECS.load(Ordering::SeqCst),
        busy_poll_budget: BUDGET.load(Ordering::Relaxed),
        prefer_busy_poll: PREFER.load(Ordering::Relaxed),
        nonblocking: NONBLOCKING.load(Ordering::Relaxed),
    }
}

/// `EPIOCSPARAMS` with `c`'s parameters on `epfd`; the ioctl's result.
/// `ep_eventpoll_bp_ioctl` (fs/eventpoll.c) refuses a non-zero pad,
/// `busy_poll_usecs` above `S32_MAX` and `prefer_busy_poll` above 1 with
/// EINVAL, and a budget above `NAPI_POLL_WEIGHT` (64) without
/// `CAP_NET_ADMIN` with EPERM; 0 is valid for every field (usecs 0: the
/// `net.core.busy_poll` sysctl decides whether and how long the instance
/// busy polls, `ep_busy_loop_on` and `busy_loop_ep_timeout`; budget 0:
/// `BUSY_POLL_BUDGET`, 8 packets, `ep_busy_loop`).
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

/// A new epoll instance: recorded for the control file (if there is one),
/// and given the parameters in force unless they are the kernel's
/// defaults, which it already has. Keeps errno.
fn configure(epfd: c_int) {
    init();
    if !ACTIVE.load(Ordering::Acquire) {
        return;
    }
    let saved = errno();
    let tracked = control::enabled();
    if tracked {
        // Recorded before `USECS` is read, both sequentially consistent: a
        // control pass that stores a new value after that read finds this
        // bit and sets the instance itself; one that stored it before, the
        // read sees.
        set_epfd_bit(&TRACKED_EPFD, epfd, true);
        if epfd >= EPFD_LIMIT {
            TRACKED_BEYOND.store(true, Ordering::SeqCst);
        }
    }
    let mut c = current();
    let mut set = false;
    if !c.params_are_defaults() {
        for _ in 0..4 {
            if set_params(epfd, &c) != 0 {
                refuse(errno(), epfd, &c, Refused::NewInstance);
                set_errno(saved);
                return;
            }
            set = true;
            // A control pass may have set this instance between the read of
            // `USECS` and this ioctl, which then put the older value over
            // it: set it again with the value now in force (that changes at
            // most once per control interval, so this ends at once).
            let now = current();
            if now == c {
                break;
            }
            c = now;
        }
    }
    if set && c.nonblocking {
        SPIN.store(true, Ordering::Release);
    }
    if (set || tracked) && DEBUG.load(Ordering::Relaxed) {
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
        if !set {
            let _ = write!(line, " (the kernel's defaults, no ioctl; recorded for the control file)");
        }
        line.emit();
    }
    set_errno(saved);
}

/// Where a refused `EPIOCSPARAMS` came from.
#[derive(Clone, Copy)]
enum Refused {
    NewInstance,
    ControlFile,
}

/// The kernel refused `c` on `epfd` with `err`: the shim stops acting on
/// the program (no more ioctls, no busy-wait, no control file) and says so
/// in the process's one warning line.
fn refuse(err: c_int, epfd: c_int, c: &Config, when: Refused) {
    ACTIVE.store(false, Ordering::Release);
    SPIN.store(false, Ordering::Release);
    if REFUSAL_WARNED.swap(true, Ordering::AcqRel) {
        return;
    }
    let (name, why) = report::errno_text(err);
    let mut line = Line::new();
    let _ = write!(
        line,
        "warning: the kernel refused EPIOCSPARAMS (busy_poll_usecs={} busy_poll_budget={} prefer_busy_poll={}) ",
        c.busy_poll_usecs, c.busy_poll_budget, c.prefer_busy_poll
    );
    match when {
        Refused::NewInstance => {
            let _ = write!(
                line,
                "on epoll fd {epfd}: {name} ({err}: {why}); the program runs without the profile's epoll settings"
            );
        }
        Refused::ControlFile => {
            let _ = write!(line, "from the control file \"");
            line.push_printable(control::path());
            let _ = write!(
                line,
                "\" on epoll fd {epfd}: {name} ({err}: {why}); the program keeps the values already set and the \
                 control file is ignored from now on"
            );
        }
    }
    line.emit();
}

/// At most once per interval: a new `busy_poll_usecs` in the control file
/// goes to every epoll instance the program created. Keeps errno.
fn control_poll() {
    if !control::enabled() || !ACTIVE.load(Ordering::Acquire) || !control::due() {
        return;
    }
    if APPLYING.swap(true, Ordering::Acquire) {
        return; // another thread is applying; a later interval reads again
    }
    let saved = errno();
    match control::read() {
        Some((control::Value::Usecs(usecs), _)) => {
            CONTROL_TEXT_WARNED.store(0, Ordering::Relaxed);
            if usecs != USECS.load(Ordering::SeqCst) {
                USECS.store(usecs, Ordering::SeqCst);
                let c = current();
                match apply_everywhere(&c) {
                    Ok(set) => {
                        if DEBUG.load(Ordering::Relaxed) {
                            let mut line = Line::new();
                            // SAFETY: getpid has no preconditions and cannot fail.
                            let pid = unsafe { libc::getpid() };
                            let _ = write!(line, "pid {pid}: control: busy_poll_usecs={usecs} on {set} epoll instance(s)");
                            line.emit();
                        }
                    }
                    Err((epfd, err)) => refuse(err, epfd, &c, Refused::ControlFile),
                }
            }
        }
        // Not sent: the kernel would refuse it (EINVAL above S32_MAX), and
        // the shim would stop with it. The value in force stays; a later
        // valid one is taken.
        Some((value, text)) => warn_control_text(&text, value),
        None => {}
    }
    APPLYING.store(false, Ordering::Release);
    set_errno(saved);
}

/// A warning line for a control file text that is not a value the shim can
/// set (once per text): what it holds, what is accepted, what stays.
fn warn_control_text(text: &control::Text, value: control::Value) {
    let fingerprint = text.fingerprint();
    if CONTROL_TEXT_WARNED.swap(fingerprint, Ordering::Relaxed) == fingerprint {
        return;
    }
    let mut line = Line::new();
    let _ = write!(line, "warning: the control file \"");
    line.push_path(control::path());
    let _ = write!(line, "\" holds \"");
    line.push_printable(text.line());
    let _ = write!(line, "\", not one line busy_poll_usecs=N with N a whole number from 0 to {}", control::USECS_MAX);
    if let control::Value::OutOfRange(_) = value {
        let _ = write!(line, " (EPIOCSPARAMS refuses more)");
    }
    let _ = write!(line, "; busy_poll_usecs stays {}", USECS.load(Ordering::SeqCst));
    line.emit();
}

/// A control pass: `c` on every epoll instance the program created, those
/// at fds beyond the table included. How many were set, or the refusal.
fn apply_everywhere(c: &Config) -> Result<u32, (c_int, c_int)> {
    let mut set = apply_to(&TRACKED_EPFD, c)?;
    if TRACKED_BEYOND.load(Ordering::SeqCst) {
        match apply_beyond_table(c) {
            Some(result) => set += result?,
            None => warn_beyond_unreached(c.busy_poll_usecs),
        }
    }
    Ok(set)
}

/// Without `/proc/self/fd`, the epoll instances at fds beyond the table
/// cannot be found: said on every control pass, never skipped silently.
fn warn_beyond_unreached(usecs: u32) {
    let mut line = Line::new();
    let _ = write!(
        line,
        "warning: busy_poll_usecs={usecs} from the control file did not reach the program's epoll instances at fd \
         {EPFD_LIMIT} or above: /proc/self/fd, where they are looked for, cannot be read"
    );
    line.emit();
}

/// What a tracked fd number is now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fd {
    Epoll,
    Closed,
    /// Another kind of file: the number was reused.
    Other,
    /// Cannot tell (no /proc).
    Unknown,
}

/// The link `/proc/self/fd/N` of an epoll instance: `do_epoll_create`
/// (fs/eventpoll.c) makes its file with `anon_inode_getfile("[eventpoll]",
/// ...)`, which `anon_inodefs_dname` (fs/anon_inodes.c) names
/// `anon_inode:%s`.
const EVENTPOLL_LINK: &[u8] = b"anon_inode:[eventpoll]";

/// What `fd` is now. Changes errno (the callers put it back). No
/// allocation: the path and the link are read into stack buffers.
fn identify(fd: c_int) -> Fd {
    // SAFETY: F_GETFD only reads the descriptor table.
    if fd < 0 || unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
        return Fd::Closed;
    }
    const PREFIX: &[u8] = b"/proc/self/fd/";
    // The prefix, at most 10 digits and a NUL.
    let mut path = [0u8; 32];
    path[..PREFIX.len()].copy_from_slice(PREFIX);
    let mut digits = [0u8; 10];
    let (mut n, mut v) = (0, fd as u32);
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for (i, d) in digits[..n].iter().rev().enumerate() {
        path[PREFIX.len() + i] = *d;
    }
    let mut link = [0u8; 32];
    // SAFETY: `path` is NUL-terminated; `link` is valid for its length.
    let len = unsafe { libc::readlink(path.as_ptr().cast(), link.as_mut_ptr().cast(), link.len()) };
    match usize::try_from(len) {
        Err(_) => Fd::Unknown,
        Ok(len) if link.get(..len) == Some(EVENTPOLL_LINK) => Fd::Epoll,
        Ok(_) => Fd::Other,
    }
}

/// `EPIOCSPARAMS` with `c` on every epoll instance in `table`: how many
/// were set, or the fd and errno of the kernel's refusal. A number that is
/// closed now, or another kind of file (reused), is skipped: only epoll
/// instances get the ioctl. Without /proc, an fd cannot be told apart and
/// gets it: EBADF or ENOTTY then means a closed or reused number (the
/// ioctl's type 0x8A, numbers 00-1F, is eventpoll's alone,
/// Documentation/userspace-api/ioctl/ioctl-number.rst). Bits are never
/// cleared here: a thread may have just created an epoll instance under a
/// number found closed, and set its bit.
fn apply_to(table: &EpfdTable, c: &Config) -> Result<u32, (c_int, c_int)> {
    let mut set = 0;
    for (w, word) in table.iter().enumerate() {
        let mut bits = word.load(Ordering::SeqCst);
        while bits != 0 {
            let epfd = (w * 64 + bits.trailing_zeros() as usize) as c_int;
            bits &= bits - 1;
            set += u32::from(apply_one(epfd, c)?);
        }
    }
    Ok(set)
}

/// `EPIOCSPARAMS` with `c` on `epfd` if it is an epoll instance (see
/// `apply_to`): whether it was set, or the fd and errno of a refusal.
fn apply_one(epfd: c_int, c: &Config) -> Result<bool, (c_int, c_int)> {
    if matches!(identify(epfd), Fd::Closed | Fd::Other) {
        return Ok(false);
    }
    if set_params(epfd, c) == 0 {
        return Ok(true);
    }
    let err = errno();
    // Closed, or closed and reused, between the look and the ioctl.
    match identify(epfd) {
        Fd::Closed | Fd::Other => Ok(false),
        Fd::Unknown if err == libc::EBADF || err == libc::ENOTTY => Ok(false),
        _ => Err((epfd, err)),
    }
}

/// `EPIOCSPARAMS` with `c` on every epoll instance open at an fd beyond the
/// table (`EPFD_LIMIT` or above), found in `/proc/self/fd` with `getdents64`
/// into a stack buffer (no allocation, however many files are open): how
/// many were set, or the refusal; `None` when the directory cannot be read.
/// Beyond the table every epoll instance the process has open there gets
/// the value, including any it did not create through libc.
fn apply_beyond_table(c: &Config) -> Option<Result<u32, (c_int, c_int)>> {
    // SAFETY: a NUL-terminated literal path.
    let dir = unsafe {
        libc::open(b"/proc/self/fd\0".as_ptr().cast(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC)
    };
    if dir < 0 {
        return None;
    }
    let mut buf = [0u8; 4096];
    let mut set = 0;
    let outcome = loop {
        // SAFETY: `buf` is valid for its length; `dir` is ours.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len()) };
        if n < 0 {
            break None;
        }
        if n == 0 {
            break Some(Ok(set));
        }
        match for_each_dirent_fd(&buf[..n as usize], |fd| {
            if fd >= EPFD_LIMIT && fd != dir {
                set += u32::from(apply_one(fd, c)?);
            }
            Ok(())
        }) {
            Ok(()) => {}
            Err(refused) => break Some(Err(refused)),
        }
    };
    // SAFETY: `dir` is ours.
    unsafe { libc::close(dir) };
    outcome
}

/// Call `f` with the number of every entry of a `getdents64` buffer whose
/// name is a decimal number (`struct linux_dirent64`: `d_ino` u64, `d_off`
/// i64, `d_reclen` u16, `d_type` u8, then the NUL-terminated name).
fn for_each_dirent_fd<E>(buf: &[u8], mut f: impl FnMut(c_int) -> Result<(), E>) -> Result<(), E> {
    const NAME: usize = 19;
    let mut off = 0;
    while let Some(reclen) = buf.get(off + 16..off + 18) {
        let reclen = usize::from(u16::from_ne_bytes([reclen[0], reclen[1]]));
        let Some(entry) = buf.get(off..off + reclen).filter(|_| reclen > NAME) else {
            break;
        };
        let name = &entry[NAME..];
        let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
        if !name.is_empty() && name.len() <= 10 && name.iter().all(u8::is_ascii_digit) {
            let fd = name.iter().fold(0i64, |v, &b| v * 10 + i64::from(b - b'0'));
            if let Ok(fd) = c_int::try_from(fd) {
                f(fd)?;
            }
        }
        off += reclen;
    }
    Ok(())
}

fn spinning() -> bool {
    SPIN.load(Ordering::Acquire)
}

/// Busy-wait applies to waits on `epfd`.
fn spins_on(epfd: c_int) -> bool {
    spinning() && (SPIN_ALL.load(Ordering::Relaxed) || napi_epfd(epfd))
}

fn napi_epfd(epfd: c_int) -> bool {
    if !(0..EPFD_LIMIT).contains(&epfd) {
        return true; // beyond the table: spin, as without it
    }
    let i = epfd as usize;
    NAPI_EPFD[i / 64].load(Ordering::Relaxed) & (1 << (i % 64)) != 0
}

fn set_napi_epfd(epfd: c_int, on: bool) {
    set_epfd_bit(&NAPI_EPFD, epfd, on);
}

/// Mark `epfd` in a table of epoll fds (those beyond it are not tracked).
/// Sequentially consistent: see `configure`.
fn set_epfd_bit(table: &EpfdTable, epfd: c_int, on: bool) {
    if (0..EPFD_LIMIT).contains(&epfd) {
        let i = epfd as usize;
        let bit = 1u64 << (i % 64);
        if on {
            table[i / 64].fetch_or(bit, Ordering::SeqCst);
        } else {
            table[i / 64].fetch_and(!bit, Ordering::SeqCst);
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
    stats::timed(|| wait(epfd, events, maxevents, timeout))
}

/// `epoll_wait`'s work, inside the batch timing of [`stats`].
unsafe fn wait(epfd: c_int, events: *mut epoll_event, maxevents: c_int, timeout: c_int) -> c_int {
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
    stats::timed(|| pwait(epfd, events, maxevents, timeout, sigmask))
}

/// `epoll_pwait`'s work, inside the batch timing of [`stats`].
unsafe fn pwait(
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
    stats::timed(|| pwait2(epfd, events, maxevents, timeout, sigmask))
}

/// `epoll_pwait2`'s work, inside the batch timing of [`stats`].
unsafe fn pwait2(
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
    use super::*;

    #[test]
    fn ioctl_numbers_match_the_uapi_header() {
        // _IOW(0x8A, 0x01, struct epoll_params) and _IOR(0x8A, 0x02, ...),
        // include/uapi/linux/eventpoll.h, with an 8-byte struct.
        assert_eq!(core::mem::size_of::<libc::epoll_params>(), 8);
        assert_eq!(libc::EPIOCSPARAMS, 0x4008_8A01);
        assert_eq!(libc::EPIOCGPARAMS, 0x8008_8A02);
    }

    /// A new epoll instance, made with the system call itself: libc's
    /// `epoll_create1` is this library's own in the test binary.
    fn new_epoll() -> c_int {
        // SAFETY: epoll_create1 takes a flags word and returns an fd or -1.
        let fd = unsafe { libc::syscall(libc::SYS_epoll_create1, libc::EPOLL_CLOEXEC) } as c_int;
        assert!(fd >= 0, "epoll_create1: errno {}", errno());
        fd
    }

    fn get_params(epfd: c_int) -> Option<libc::epoll_params> {
        let mut p = libc::epoll_params { busy_poll_usecs: 0, busy_poll_budget: 0, prefer_busy_poll: 0, __pad: 0 };
        // SAFETY: `p` is a valid `struct epoll_params` for the kernel to fill.
        let rc = unsafe { libc::ioctl(epfd, libc::EPIOCGPARAMS, &mut p as *mut libc::epoll_params) };
        (rc == 0).then_some(p)
    }

    fn close(fd: c_int) {
        // SAFETY: the test owns `fd`.
        unsafe { libc::close(fd) };
    }

    fn usecs(usecs: u32) -> Config {
        Config { busy_poll_usecs: usecs, busy_poll_budget: 0, prefer_busy_poll: 0, nonblocking: false }
    }

    #[test]
    fn identify_tells_an_epoll_instance_from_other_files_and_closed_numbers() {
        let ep = new_epoll();
        // SAFETY: eventfd takes an initial value and flags.
        let ev = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        assert!(ev >= 0);
        assert_eq!(identify(ep), Fd::Epoll);
        assert_eq!(identify(ev), Fd::Other);
        // The top of the table: no test opens that many files.
        assert_eq!(identify(EPFD_LIMIT - 1), Fd::Closed);
        assert_eq!(identify(-1), Fd::Closed);
        close(ep);
        close(ev);
    }

    #[test]
    fn a_value_reaches_epoll_instances_beyond_the_table() {
        // Issue 62, item 7: an instance at fd 4096 or above got no value.
        let probe = new_epoll();
        let supported = get_params(probe).is_some();
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: `limit` is valid for the kernel to fill.
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
        if !supported || limit.rlim_cur <= (EPFD_LIMIT + 8) as libc::rlim_t {
            close(probe);
            return; // before Linux 6.9, or too few files allowed: nothing to show
        }
        let high = EPFD_LIMIT + 7;
        // SAFETY: both fds are the test's; dup2 puts the instance at `high`.
        assert_eq!(unsafe { libc::dup2(probe, high) }, high);
        close(probe);
        assert_eq!(apply_beyond_table(&usecs(77)), Some(Ok(1)));
        assert_eq!(get_params(high).unwrap().busy_poll_usecs, 77);
        // Above S32_MAX the kernel says EINVAL: a refusal, with its fd.
        assert_eq!(apply_beyond_table(&usecs(u32::MAX)), Some(Err((high, libc::EINVAL))));
        close(high);
        assert_eq!(apply_beyond_table(&usecs(5)), Some(Ok(0)));
    }

    #[test]
    fn dirent_names_that_are_numbers_are_fds() {
        // Two linux_dirent64 records: "12" and ".." (reclen 24 each).
        let mut buf = [0u8; 48];
        for (i, name) in [&b"12"[..], b".."].iter().enumerate() {
            let rec = &mut buf[i * 24..(i + 1) * 24];
            rec[16..18].copy_from_slice(&24u16.to_ne_bytes());
            rec[19..19 + name.len()].copy_from_slice(name);
        }
        let mut seen = Vec::new();
        let _: Result<(), ()> = for_each_dirent_fd(&buf, |fd| {
            seen.push(fd);
            Ok(())
        });
        assert_eq!(seen, [12]);
        // A cut record ends the walk instead of reading past the buffer.
        let _: Result<(), ()> = for_each_dirent_fd(&buf[..30], |fd| {
            seen.push(fd);
            Ok(())
        });
        assert_eq!(seen, [12, 12]);
    }

    #[test]
    fn a_value_reaches_every_tracked_instance_and_skips_reused_numbers() {
        let probe = new_epoll();
        let supported = get_params(probe).is_some();
        close(probe);
        let table: EpfdTable = [const { AtomicU64::new(0) }; EPFD_WORDS];
        let (a, b) = (new_epoll(), new_epoll());
        // SAFETY: as above.
        let ev = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        for fd in [a, b, ev, EPFD_LIMIT - 1] {
            set_epfd_bit(&table, fd, true);
        }
        if !supported {
            // Before Linux 6.9 the kernel refuses with ENOTTY, on an fd
            // that is an epoll instance: a refusal, not a reused number.
            assert!(matches!(apply_to(&table, &usecs(50)), Err((fd, libc::ENOTTY)) if fd == a || fd == b));
        } else {
            // Budget 0 and prefer 0 are valid (ep_eventpoll_bp_ioctl); the
            // eventfd and the closed number get no ioctl and are no error.
            assert_eq!(apply_to(&table, &usecs(50)), Ok(2));
            for fd in [a, b] {
                let p = get_params(fd).unwrap();
                assert_eq!((p.busy_poll_usecs, p.busy_poll_budget, p.prefer_busy_poll), (50, 0, 0));
            }
            // Back to the kernel's defaults: also an ioctl, and accepted.
            assert_eq!(apply_to(&table, &usecs(0)), Ok(2));
            assert_eq!(get_params(a).unwrap().busy_poll_usecs, 0);
            // A number reused by another kind of file (an eventfd put over
            // the instance, which closes it) is skipped; its bit stays.
            // SAFETY: both fds are the test's.
            assert_eq!(unsafe { libc::dup2(ev, b) }, b);
            assert_eq!(apply_to(&table, &usecs(7)), Ok(1));
            assert_eq!(get_params(a).unwrap().busy_poll_usecs, 7);
            // Above S32_MAX the kernel says EINVAL: a refusal, with its fd.
            assert_eq!(apply_to(&table, &usecs(u32::MAX)), Err((a, libc::EINVAL)));
        }
        close(a);
        close(b);
        close(ev);
    }
}
