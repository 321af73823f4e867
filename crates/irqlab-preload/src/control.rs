//! `IRQLAB_CONTROL=FILE`: change `busy_poll_usecs` while the program runs
//! (what `irqlab linux tune --knob busy_poll_usecs` does). The file holds
//! one line, `busy_poll_usecs=N`; every epoll wait looks at it at most once
//! per [`INTERVAL_NS`] (a coarse clock read otherwise), and when N differs
//! from the value in force, the shim sets it with `EPIOCSPARAMS` on every
//! epoll instance the program created (`lib.rs`, `control_poll`), under any
//! profile, one without busy polling included. Any other text in the file
//! (`busy_poll_usecs=abc`, a value above what the kernel takes) leaves the
//! value in force and is said in one warning line per text (issue 62,
//! item 7). The file is read with
//! `open`/`read`/`close` into a stack buffer: no allocation inside the
//! program's calls.

use core::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// How often the file is read, at most: 20 ms.
pub const INTERVAL_NS: u64 = 20_000_000;

/// The largest `busy_poll_usecs` the kernel takes: `ep_eventpoll_bp_ioctl`
/// (fs/eventpoll.c) refuses `busy_poll_usecs > S32_MAX` with EINVAL,
/// although the field is a `u32`. A larger value in the file is not sent.
pub const USECS_MAX: u32 = i32::MAX as u32;

/// The longest path accepted (with its NUL).
const PATH_MAX: usize = 256;

struct Path {
    buf: [u8; PATH_MAX],
    len: usize,
}

static PATH: OnceLock<Path> = OnceLock::new();
static NEXT_NS: AtomicU64 = AtomicU64::new(0);

/// Take the control file's path; false (and no control) for a path that is
/// not absolute, is too long or holds a NUL.
pub fn set_path(bytes: &[u8]) -> bool {
    if bytes.first() != Some(&b'/') || bytes.len() >= PATH_MAX || bytes.contains(&0) {
        return false;
    }
    let mut buf = [0u8; PATH_MAX];
    buf[..bytes.len()].copy_from_slice(bytes);
    PATH.set(Path { buf, len: bytes.len() }).is_ok()
}

pub fn enabled() -> bool {
    PATH.get().is_some()
}

/// The control file's path (for a warning), without its NUL.
pub fn path() -> &'static [u8] {
    PATH.get().map_or(&[], |p| &p.buf[..p.len])
}

/// `CLOCK_MONOTONIC_COARSE`, ns: a tick-granular clock that costs a vDSO
/// read, for intervals (also `stats.rs`'s).
pub fn coarse_now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is valid for clock_gettime to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Whether this call should read the file (one caller per interval).
pub fn due() -> bool {
    let now = coarse_now_ns();
    let next = NEXT_NS.load(Ordering::Relaxed);
    now >= next && NEXT_NS.compare_exchange(next, now + INTERVAL_NS, Ordering::Relaxed, Ordering::Relaxed).is_ok()
}

/// What the control file says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    /// `busy_poll_usecs=N` with N in `0..=USECS_MAX`.
    Usecs(u32),
    /// `busy_poll_usecs=N` with N above [`USECS_MAX`]: the kernel would refuse it.
    OutOfRange(u64),
    /// Anything else: the value in force stays, and the shim warns.
    Malformed,
}

/// What a read of the control file found: its first bytes (a valid line is
/// at most 27 bytes), for a warning that names them.
pub struct Text {
    buf: [u8; 64],
    len: usize,
}

impl Text {
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// The text as one line: without its final newline.
    pub fn line(&self) -> &[u8] {
        let b = self.bytes();
        b.strip_suffix(b"\n").unwrap_or(b)
    }

    /// A fingerprint of the text (FNV-1a), never 0: a warning is given once
    /// per text the file holds, not once per read.
    pub fn fingerprint(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in self.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        h.max(1)
    }
}

/// The control file's value and text; `None` when there is no file, it
/// cannot be read or it is empty (a writer that truncates it first, such
/// as a shell's `>`, leaves it empty for a moment: not worth a warning).
pub fn read() -> Option<(Value, Text)> {
    let path = PATH.get()?;
    // SAFETY: the path is NUL-terminated (set_path leaves a zero after it).
    let fd = unsafe { libc::open(path.buf.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    let mut text = Text { buf: [0u8; 64], len: 0 };
    // SAFETY: buf is valid for 64 bytes; fd was just opened.
    let n = unsafe { libc::read(fd, text.buf.as_mut_ptr().cast(), text.buf.len()) };
    // SAFETY: fd is ours.
    unsafe { libc::close(fd) };
    if n <= 0 {
        return None;
    }
    text.len = n as usize;
    Some((parse(text.bytes()), text))
}

/// `busy_poll_usecs=N`, optionally followed by a newline.
pub fn parse(text: &[u8]) -> Value {
    let Some(value) = text.strip_prefix(b"busy_poll_usecs=") else {
        return Value::Malformed;
    };
    let value = value.strip_suffix(b"\n").unwrap_or(value);
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return Value::Malformed;
    }
    let mut v: u64 = 0;
    for &b in value {
        match v.checked_mul(10).and_then(|v| v.checked_add(u64::from(b - b'0'))) {
            Some(next) => v = next,
            None => return Value::Malformed,
        }
    }
    match u32::try_from(v) {
        Ok(usecs) if usecs <= USECS_MAX => Value::Usecs(usecs),
        _ => Value::OutOfRange(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_holds_one_line() {
        assert_eq!(parse(b"busy_poll_usecs=50\n"), Value::Usecs(50));
        assert_eq!(parse(b"busy_poll_usecs=0"), Value::Usecs(0));
        assert_eq!(parse(b"busy_poll_usecs=0050\n"), Value::Usecs(50));
        for bad in [&b"busy_poll_usecs="[..], b"usecs=5", b"busy_poll_usecs=-1", b"busy_poll_usecs=5 \n", b"",
                    b"busy_poll_usecs=99999999999999999999999"] {
            assert_eq!(parse(bad), Value::Malformed, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn a_text_is_shown_as_one_line_and_told_apart_by_its_fingerprint() {
        let text = |b: &[u8]| {
            let mut t = Text { buf: [0; 64], len: b.len() };
            t.buf[..b.len()].copy_from_slice(b);
            t
        };
        assert_eq!(text(b"busy_poll_usecs=abc\n").line(), b"busy_poll_usecs=abc");
        assert_ne!(text(b"busy_poll_usecs=abc\n").fingerprint(), text(b"busy_poll_usecs=abd\n").fingerprint());
        assert_eq!(text(b"x").fingerprint(), text(b"x").fingerprint());
        assert_ne!(text(b"").fingerprint(), 0);
    }

    #[test]
    fn values_the_kernel_refuses_are_out_of_range() {
        // ep_eventpoll_bp_ioctl: busy_poll_usecs > S32_MAX is EINVAL.
        assert_eq!(parse(b"busy_poll_usecs=2147483647\n"), Value::Usecs(2_147_483_647));
        assert_eq!(parse(b"busy_poll_usecs=2147483648\n"), Value::OutOfRange(2_147_483_648));
        assert_eq!(parse(b"busy_poll_usecs=4294967296"), Value::OutOfRange(4_294_967_296));
    }
}
