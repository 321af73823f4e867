//! `IRQLAB_CONTROL=FILE`: change `busy_poll_usecs` while the program runs
//! (what `irqlab linux tune --knob busy_poll_usecs` does). The file holds
//! one line, `busy_poll_usecs=N`; every epoll wait looks at it at most once
//! per [`INTERVAL_NS`] (a coarse clock read otherwise), and when N differs
//! from the value in force, the shim sets it with `EPIOCSPARAMS` on every
//! epoll instance it configured. The file is read with `open`/`read`/`close`
//! into a stack buffer: no allocation inside the program's calls.

use core::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// How often the file is read, at most: 20 ms.
pub const INTERVAL_NS: u64 = 20_000_000;

/// The longest path accepted (with its NUL).
const PATH_MAX: usize = 256;

struct Path {
    buf: [u8; PATH_MAX],
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
    PATH.set(Path { buf }).is_ok()
}

pub fn enabled() -> bool {
    PATH.get().is_some()
}

fn coarse_now_ns() -> u64 {
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

/// `busy_poll_usecs` from the file, or None if it cannot be read or parsed.
pub fn read_usecs() -> Option<u32> {
    let path = PATH.get()?;
    // SAFETY: the path is NUL-terminated (set_path leaves a zero after it).
    let fd = unsafe { libc::open(path.buf.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    let mut buf = [0u8; 64];
    // SAFETY: buf is valid for 64 bytes; fd was just opened.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    // SAFETY: fd is ours.
    unsafe { libc::close(fd) };
    if n <= 0 {
        return None;
    }
    parse(&buf[..n as usize])
}

/// `busy_poll_usecs=N`, optionally followed by a newline.
pub fn parse(text: &[u8]) -> Option<u32> {
    let value = text.strip_prefix(b"busy_poll_usecs=")?;
    let value = value.strip_suffix(b"\n").unwrap_or(value);
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &b in value {
        v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    u32::try_from(v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_holds_one_line() {
        assert_eq!(parse(b"busy_poll_usecs=50\n"), Some(50));
        assert_eq!(parse(b"busy_poll_usecs=0"), Some(0));
        assert_eq!(parse(b"busy_poll_usecs=4294967295\n"), Some(u32::MAX));
        for bad in [&b"busy_poll_usecs=4294967296"[..], b"busy_poll_usecs=", b"usecs=5", b"busy_poll_usecs=-1", b"busy_poll_usecs=5 \n"] {
            assert_eq!(parse(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
