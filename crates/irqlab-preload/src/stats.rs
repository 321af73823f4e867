//! `IRQLAB_STATS=FILE`: the program's batch times, published for a policy
//! run by `irqlab linux control --shim-stats FILE` (the sample's `threads`,
//! python/irqlab/linux/host_sample.py).
//!
//! A batch is the simulator's (`Epoll::batch_begins`/`batch_ends` in
//! irqlab-core): it begins when a wrapped wait (`epoll_wait`, `epoll_pwait`,
//! `epoll_pwait2`) returns events and ends when the same thread next enters
//! one. It is the time `irq-suspend-timeout` is meant to cover: it "should
//! be set large enough to cover the processing of an entire application
//! batch" (Documentation/networking/napi.rst, IRQ suspension).
//!
//! Each thread keeps the start of its open batch (`CLOCK_MONOTONIC`, ns) in
//! a thread-local. An ended batch goes into process-wide atomics: the sum of
//! the times and a histogram of [`BUCKETS`] log2 buckets (bucket i counts
//! batches of `[2^i, 2^(i+1))` ns; bucket 0 also takes 0 and 1 ns). The
//! count written is the histogram's sum, so that a reader always finds the
//! two equal, whatever the threads were doing while the line was made.
//!
//! At most once per [`control::INTERVAL_NS`] (the control file's coarse
//! clock: one thread wins the next slot), a thread entering a wait writes
//!
//! ```text
//! irqlab-stats v1 batches=N batch_ns=S hist=c0,c1,...,c63
//! ```
//!
//! to `FILE.tmp` and renames it onto FILE, so that a reader sees a whole
//! line. Only `open`/`write`/`fstat`/`close`/`lstat`/`rename` on stack
//! buffers: nothing allocates or panics, and errno is put back. FILE and
//! `FILE.tmp` are checked with `lstat` when the environment is read: if
//! either exists and is not a regular file (a device, FIFO, socket,
//! directory or symbolic link), it is left alone and no statistics are
//! written. A failed write is said once on stderr and retried at the next
//! interval.
//!
//! Limits. Every process that has the shim writes its own counts: a
//! program of several serving processes overwrites its processes' lines in
//! turn. The longest batch is known only to its power of two. Without
//! `IRQLAB_STATS` a wait costs one relaxed load and a branch more.

use core::cell::Cell;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

use libc::c_int;

use crate::busy_wait::{errno, set_errno};
use crate::control;
use crate::report::Line;

/// Buckets of the histogram: one per power of two of a `u64` ns.
pub const BUCKETS: usize = 64;

/// The longest path accepted, with its NUL (as the control file's).
const PATH_MAX: usize = 256;
const TMP_SUFFIX: &[u8] = b".tmp";
/// `FILE.tmp` and its NUL.
const TMP_MAX: usize = PATH_MAX + TMP_SUFFIX.len();

/// The longest line: the fixed words, 2 + 64 numbers of at most 20 digits,
/// 63 commas and the newline is 1424 bytes.
const LINE_CAP: usize = 1536;

/// Statistics are kept and written (a valid `IRQLAB_STATS`).
static ON: AtomicBool = AtomicBool::new(false);
/// Sum of the ended batches' times.
static SUM_NS: AtomicU64 = AtomicU64::new(0);
static HIST: [AtomicU64; BUCKETS] = [const { AtomicU64::new(0) }; BUCKETS];
/// When the next line may be written (coarse clock).
static NEXT_NS: AtomicU64 = AtomicU64::new(0);
/// A thread is writing the file: one at a time, or two could interleave in
/// `FILE.tmp`.
static WRITING: AtomicBool = AtomicBool::new(false);
/// The one stats warning of the process has been said.
static WARNED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// This thread's open batch: when it began, ns (0: none open).
    static BATCH_START_NS: Cell<u64> = const { Cell::new(0) };
}

struct Paths {
    /// FILE and a NUL.
    file: [u8; PATH_MAX],
    /// FILE.tmp and a NUL.
    tmp: [u8; TMP_MAX],
}

static PATHS: OnceLock<Paths> = OnceLock::new();

/// A path the shim takes: absolute, fewer than 256 bytes, no NUL.
pub fn accepts(bytes: &[u8]) -> bool {
    bytes.first() == Some(&b'/') && bytes.len() < PATH_MAX && !bytes.contains(&0)
}

/// What `lstat` finds at a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    /// Nothing, or a regular file (replaced by the rename).
    Writable,
    /// Anything else (`st_mode`): left alone.
    NotRegular(libc::mode_t),
    /// `lstat` failed otherwise (EACCES, ENOTDIR, ...): the write will say.
    Unknown,
}

/// What is at the NUL-terminated `path`, without following a link. Changes errno.
fn look(path: &[u8]) -> Found {
    // SAFETY: stat is plain data, valid for lstat to fill; all zero is a valid value.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated (the callers' buffers).
    if unsafe { libc::lstat(path.as_ptr().cast(), &mut st) } != 0 {
        return if errno() == libc::ENOENT { Found::Writable } else { Found::Unknown };
    }
    if st.st_mode & libc::S_IFMT == libc::S_IFREG {
        Found::Writable
    } else {
        Found::NotRegular(st.st_mode)
    }
}

/// What a file of `st_mode` `mode` is, for a warning.
fn kind(mode: libc::mode_t) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => "a directory",
        libc::S_IFIFO => "a FIFO",
        libc::S_IFSOCK => "a socket",
        libc::S_IFLNK => "a symbolic link",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        _ => "not a regular file",
    }
}

/// Read `IRQLAB_STATS` (called once, from `init`): statistics are kept
/// when it names a usable file; otherwise one warning, and none are.
pub fn setup(value: Option<&[u8]>) {
    let Some(bytes) = value else {
        return;
    };
    if !accepts(bytes) {
        warn(|line| {
            let _ = write!(line, "warning: {}=\"", crate::config::STATS);
            line.push_printable(bytes);
            let _ = write!(line, "\" is not an absolute path of fewer than 256 bytes; no batch statistics are written");
        });
        return;
    }
    let mut paths = Paths { file: [0; PATH_MAX], tmp: [0; TMP_MAX] };
    paths.file[..bytes.len()].copy_from_slice(bytes);
    paths.tmp[..bytes.len()].copy_from_slice(bytes);
    paths.tmp[bytes.len()..bytes.len() + TMP_SUFFIX.len()].copy_from_slice(TMP_SUFFIX);
    for path in [&paths.file[..], &paths.tmp[..]] {
        if let Found::NotRegular(mode) = look(path) {
            refuse_not_regular(path, mode);
            return;
        }
    }
    if PATHS.set(paths).is_ok() {
        ON.store(true, Ordering::Release);
    }
}

/// Statistics are kept: the wrappers' one load and branch.
#[inline]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// A wrapped wait, timed: the thread's open batch, if any, ends as it
/// enters (and the file is written if its interval has come), and one
/// begins when it returns events. Keeps errno; without `IRQLAB_STATS`, one
/// load and one branch.
#[inline(always)]
pub fn timed(wait: impl FnOnce() -> c_int) -> c_int {
    let on = wait_entered();
    let ret = wait();
    wait_returned(on, ret);
    ret
}

/// A thread enters a wrapped wait: its open batch, if any, ends here; and
/// the file is written if its interval has come. Keeps errno.
#[inline]
fn wait_entered() -> bool {
    if !on() {
        return false;
    }
    batch_ends();
    true
}

/// The wrapped wait that `wait_entered` (`on`) started returned `ret`:
/// events begin a batch.
#[inline]
fn wait_returned(on: bool, ret: c_int) {
    if on && ret > 0 {
        let now = now_ns().max(1);
        let _ = BATCH_START_NS.try_with(|start| start.set(now));
    }
}

/// Out of line: the wrappers keep only the load and the branch.
#[inline(never)]
fn batch_ends() {
    let start = BATCH_START_NS.try_with(|start| start.replace(0)).unwrap_or(0);
    if start != 0 {
        record(now_ns().saturating_sub(start));
    }
    if due() {
        publish();
    }
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is valid for clock_gettime to fill; CLOCK_MONOTONIC cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

/// The histogram bucket of a batch of `ns`: floor(log2(ns)), 0 for 0 and 1.
pub fn bucket(ns: u64) -> usize {
    63 - (ns | 1).leading_zeros() as usize
}

/// One ended batch. The sum is added before the bucket, which is a release:
/// a writer that reads the bucket (acquire) then the sum finds the sum of
/// every batch it counts, so that `batch_ns` is never below the buckets' floors.
fn record(ns: u64) {
    SUM_NS.fetch_add(ns, Ordering::Relaxed);
    if let Some(count) = HIST.get(bucket(ns)) {
        count.fetch_add(1, Ordering::Release);
    }
}

/// Whether this call writes the file (one caller per interval).
fn due() -> bool {
    let now = control::coarse_now_ns();
    let next = NEXT_NS.load(Ordering::Relaxed);
    now >= next
        && NEXT_NS.compare_exchange(next, now + control::INTERVAL_NS, Ordering::Relaxed, Ordering::Relaxed).is_ok()
}

/// A line being formatted into a fixed buffer; too long a line is marked,
/// never written past the buffer.
struct Out<'a> {
    buf: &'a mut [u8],
    len: usize,
    overflow: bool,
}

impl Out<'_> {
    fn push(&mut self, bytes: &[u8]) {
        match self.buf.get_mut(self.len..self.len + bytes.len()) {
            Some(dst) => {
                dst.copy_from_slice(bytes);
                self.len += bytes.len();
            }
            None => self.overflow = true,
        }
    }

    fn push_u64(&mut self, mut v: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }
}

/// The file's line for a sum and a histogram, into `buf`; its length, or
/// None if it does not fit. The count is the histogram's sum.
fn format_line(buf: &mut [u8], sum_ns: u64, hist: &[u64; BUCKETS]) -> Option<usize> {
    let batches = hist.iter().fold(0u64, |a, &c| a.wrapping_add(c));
    let mut out = Out { buf, len: 0, overflow: false };
    out.push(b"irqlab-stats v1 batches=");
    out.push_u64(batches);
    out.push(b" batch_ns=");
    out.push_u64(sum_ns);
    out.push(b" hist=");
    for (i, &count) in hist.iter().enumerate() {
        if i > 0 {
            out.push(b",");
        }
        out.push_u64(count);
    }
    out.push(b"\n");
    (!out.overflow).then_some(out.len)
}

/// Why a write did not happen.
#[derive(Clone, Copy, Debug)]
enum Failure {
    /// `call` on the temporary file or FILE failed with `errno`.
    Call { call: &'static str, errno: c_int },
    /// The path (FILE or FILE.tmp) is no longer a regular file: never again.
    NotRegular { tmp: bool, mode: libc::mode_t },
}

/// Write the line now (one thread at a time). Keeps errno.
fn publish() {
    if WRITING.swap(true, Ordering::Acquire) {
        return;
    }
    let saved = errno();
    if let Some(paths) = PATHS.get() {
        match write_file(paths) {
            Ok(()) => {}
            Err(Failure::Call { call, errno }) => warn(|line| {
                let _ = write!(line, "warning: {}: {call} of \"", crate::config::STATS);
                line.push_path(until_nul(&paths.tmp));
                let _ = write!(
                    line,
                    "\" failed (errno {errno}); batch statistics are not written until it succeeds"
                );
            }),
            Err(Failure::NotRegular { tmp, mode }) => {
                let path = if tmp { &paths.tmp[..] } else { &paths.file[..] };
                refuse_not_regular(path, mode);
            }
        }
    }
    WRITING.store(false, Ordering::Release);
    set_errno(saved);
}

fn write_file(paths: &Paths) -> Result<(), Failure> {
    let mut hist = [0u64; BUCKETS];
    for (h, count) in hist.iter_mut().zip(HIST.iter()) {
        *h = count.load(Ordering::Acquire);
    }
    let sum_ns = SUM_NS.load(Ordering::Relaxed);
    let mut line = [0u8; LINE_CAP];
    let Some(len) = format_line(&mut line, sum_ns, &hist) else {
        return Ok(()); // cannot happen (a test checks the longest line)
    };
    let call = |call: &'static str| Failure::Call { call, errno: errno() };
    let tmp = paths.tmp.as_ptr().cast::<libc::c_char>();
    // O_NONBLOCK: a FIFO put there must not block the program's thread
    // (ENXIO without a reader; with one, fstat refuses it below).
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK;
    // SAFETY: `tmp` is NUL-terminated.
    let fd = unsafe { libc::open(tmp, flags, 0o644 as libc::c_uint) };
    if fd < 0 {
        return Err(call("open"));
    }
    // SAFETY: as in `look`.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: fd is ours; st is valid for fstat to fill.
    if unsafe { libc::fstat(fd, &mut st) } != 0 || st.st_mode & libc::S_IFMT != libc::S_IFREG {
        // SAFETY: fd is ours.
        unsafe { libc::close(fd) };
        return Err(Failure::NotRegular { tmp: true, mode: st.st_mode });
    }
    let mut done = 0;
    let mut result = Ok(());
    while done < len {
        let rest = line.get(done..len).unwrap_or(&[]);
        // SAFETY: `rest` is valid for its length; fd is ours.
        let n = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
        if n <= 0 {
            if n < 0 && errno() == libc::EINTR {
                continue;
            }
            result = Err(if n < 0 { call("write") } else { Failure::Call { call: "write", errno: libc::ENOSPC } });
            break;
        }
        done += n as usize;
    }
    // SAFETY: fd is ours.
    if unsafe { libc::close(fd) } != 0 && result.is_ok() {
        result = Err(call("close"));
    }
    if result.is_ok() {
        // FILE replaced by a FIFO or a device since the start: never renamed over.
        if let Found::NotRegular(mode) = look(&paths.file) {
            result = Err(Failure::NotRegular { tmp: false, mode });
        // SAFETY: both paths are NUL-terminated.
        } else if unsafe { libc::rename(tmp, paths.file.as_ptr().cast()) } != 0 {
            result = Err(call("rename"));
        }
    }
    if result.is_err() {
        // SAFETY: `tmp` is NUL-terminated; the file there is the regular file just written.
        unsafe { libc::unlink(tmp) };
    }
    result
}

/// `path` (NUL-terminated) is not a regular file: say so and stop for good.
fn refuse_not_regular(path: &[u8], mode: libc::mode_t) {
    ON.store(false, Ordering::Relaxed);
    warn(|line| {
        let _ = write!(line, "warning: {}: \"", crate::config::STATS);
        line.push_path(until_nul(path));
        let _ = write!(
            line,
            "\" is {}, not a regular file; it is left alone and no batch statistics are written",
            kind(mode)
        );
    });
}

/// A path buffer's bytes before its NUL.
fn until_nul(path: &[u8]) -> &[u8] {
    path.split(|&b| b == 0).next().unwrap_or(&[])
}

/// The process's one stats warning (the shim's other warning is its own).
fn warn(fill: impl FnOnce(&mut Line)) {
    if WARNED.swap(true, Ordering::AcqRel) {
        return;
    }
    let mut line = Line::new();
    fill(&mut line);
    line.emit();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_goes_to_the_bucket_of_its_power_of_two() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(1), 0);
        assert_eq!(bucket(2), 1);
        assert_eq!(bucket(3), 1);
        assert_eq!(bucket(4), 2);
        assert_eq!(bucket(1023), 9);
        assert_eq!(bucket(1024), 10);
        assert_eq!(bucket(20_000_000), 24); // 2^24 = 16.8 ms <= 20 ms < 2^25
        assert_eq!(bucket(u64::MAX), 63);
        for i in 1..64 {
            assert_eq!(bucket(1 << i), i);
            assert_eq!(bucket((1 << i) - 1), i - 1);
        }
    }

    #[test]
    fn the_line_names_the_count_sum_and_every_bucket() {
        let mut hist = [0u64; BUCKETS];
        hist[0] = 1;
        hist[10] = 3;
        hist[63] = 2;
        let mut buf = [0u8; LINE_CAP];
        let len = format_line(&mut buf, 12345, &hist).unwrap();
        let text = std::str::from_utf8(&buf[..len]).unwrap();
        let mut want = String::from("irqlab-stats v1 batches=6 batch_ns=12345 hist=1");
        for i in 1..64 {
            want += if i == 10 { ",3" } else if i == 63 { ",2" } else { ",0" };
        }
        want += "\n";
        assert_eq!(text, want);
        let len = format_line(&mut buf, 0, &[0; BUCKETS]).unwrap();
        assert!(buf[..len].starts_with(b"irqlab-stats v1 batches=0 batch_ns=0 hist=0,0,"));
    }

    #[test]
    fn the_longest_line_fits_and_a_short_buffer_is_refused() {
        let hist = [u64::MAX; BUCKETS];
        let mut buf = [0u8; LINE_CAP];
        let len = format_line(&mut buf, u64::MAX, &hist).unwrap();
        assert_eq!(len, 24 + 20 + 10 + 20 + 6 + 64 * 20 + 63 + 1);
        assert!(len <= LINE_CAP);
        assert!(buf[..len].ends_with(b",18446744073709551615\n"));
        let mut short = [0u8; 100];
        assert_eq!(format_line(&mut short, u64::MAX, &hist), None);
    }

    #[test]
    fn paths_must_be_absolute_short_and_without_nul() {
        assert!(accepts(b"/tmp/stats"));
        assert!(accepts(&[b'/'; PATH_MAX - 1]));
        assert!(!accepts(&[b'/'; PATH_MAX]));
        assert!(!accepts(b"stats"));
        assert!(!accepts(b""));
        assert!(!accepts(b"/tmp/a\0b"));
    }

    /// A NUL-terminated path in a fresh directory of the test's own.
    fn scratch(dir: &str, name: &str) -> (std::path::PathBuf, Vec<u8>) {
        let d = std::env::temp_dir().join(format!("irqlab-stats-{}-{dir}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        let mut c = d.join(name).into_os_string().into_encoded_bytes();
        c.push(0);
        (d, c)
    }

    #[test]
    fn only_a_regular_file_or_nothing_may_be_replaced() {
        use std::os::unix::fs::symlink;
        let (d, missing) = scratch("look", "missing");
        assert_eq!(look(&missing), Found::Writable);
        let regular = d.join("regular");
        std::fs::write(&regular, "x").unwrap();
        let nul = |p: &std::path::Path| {
            let mut v = p.as_os_str().as_encoded_bytes().to_vec();
            v.push(0);
            v
        };
        assert_eq!(look(&nul(&regular)), Found::Writable);
        assert!(matches!(look(&nul(&d)), Found::NotRegular(m) if m & libc::S_IFMT == libc::S_IFDIR));
        let fifo = d.join("fifo");
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(nul(&fifo).as_ptr().cast(), 0o600) }, 0);
        assert!(matches!(look(&nul(&fifo)), Found::NotRegular(m) if kind(m) == "a FIFO"));
        // A link to a regular file is refused too: the rename would replace the link.
        let link = d.join("link");
        symlink(&regular, &link).unwrap();
        assert!(matches!(look(&nul(&link)), Found::NotRegular(m) if kind(m) == "a symbolic link"));
        assert!(matches!(look(b"/dev/null\0"), Found::NotRegular(m) if kind(m) == "a character device"));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_written_file_holds_one_whole_line_and_no_temporary_is_left() {
        let (d, file) = scratch("write", "stats");
        let len = file.len() - 1;
        let mut paths = Paths { file: [0; PATH_MAX], tmp: [0; TMP_MAX] };
        paths.file[..len].copy_from_slice(&file[..len]);
        paths.tmp[..len].copy_from_slice(&file[..len]);
        paths.tmp[len..len + 4].copy_from_slice(TMP_SUFFIX);
        record(1500);
        write_file(&paths).unwrap();
        let text = std::fs::read_to_string(d.join("stats")).unwrap();
        assert!(text.starts_with("irqlab-stats v1 batches=") && text.ends_with('\n') && text.lines().count() == 1);
        assert!(!d.join("stats.tmp").exists());
        // A FIFO at FILE.tmp is not written into (nor blocks): refused for good.
        let mut tmp = paths.tmp.to_vec();
        tmp.truncate(len + 5);
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(tmp.as_ptr().cast(), 0o600) }, 0);
        assert!(matches!(write_file(&paths), Err(Failure::Call { call: "open", errno: libc::ENXIO })));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
