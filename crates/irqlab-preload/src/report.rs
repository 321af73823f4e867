//! The shim's only output: single stderr lines, formatted on the stack.
//!
//! A line is built in a fixed buffer through `core::fmt` (which never
//! allocates) and handed to one `write(2)` on fd 2, so it reaches the
//! terminal or pipe whole even when several threads report at once (a
//! single write of less than `PIPE_BUF` bytes is atomic on a pipe). A line
//! that does not fit is cut, never split. Nothing here can panic.

use core::fmt::{self, Write};

/// Capacity of one line, including its `\n`.
const LINE_CAP: usize = 512;

/// One stderr line being built.
pub struct Line {
    buf: [u8; LINE_CAP],
    len: usize,
}

impl Line {
    /// A line that starts with `irqlab-preload: `.
    pub fn new() -> Self {
        let mut line = Line {
            buf: [0; LINE_CAP],
            len: 0,
        };
        line.push(b"irqlab-preload: ");
        line
    }

    /// Append raw bytes (an environment value), with anything but printable
    /// ASCII shown as `?` so that the line stays one line.
    pub fn push_printable(&mut self, bytes: &[u8]) {
        self.push_printable_up_to(bytes, 64);
    }

    /// A path the shim took (fewer than 260 bytes): shown whole, so that
    /// `FILE` and `FILE.tmp` stay apart; printable as above.
    pub fn push_path(&mut self, bytes: &[u8]) {
        self.push_printable_up_to(bytes, 260);
    }

    fn push_printable_up_to(&mut self, bytes: &[u8], max: usize) {
        for &b in bytes.iter().take(max) {
            let shown = if (b' '..=b'~').contains(&b) { b } else { b'?' };
            self.push(&[shown]);
        }
        if bytes.len() > max {
            self.push(b"...");
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        // Keep one byte for the final newline.
        let room = (LINE_CAP - 1).saturating_sub(self.len);
        let n = bytes.len().min(room);
        if let (Some(dst), Some(src)) = (self.buf.get_mut(self.len..self.len + n), bytes.get(..n)) {
            dst.copy_from_slice(src);
            self.len += n;
        }
    }

    /// Write the line and its newline to stderr; errors are ignored (there
    /// is nowhere else to report them, and the program must not notice).
    pub fn emit(mut self) {
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = b'\n';
            self.len += 1;
        }
        // SAFETY: `buf[..len]` is initialised memory owned by `self`.
        unsafe {
            libc::write(libc::STDERR_FILENO, self.buf.as_ptr().cast(), self.len);
        }
    }

    /// The text so far (for tests).
    #[cfg(test)]
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }
}

impl Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push(s.as_bytes());
        Ok(())
    }
}

/// The symbolic name and meaning of the errno values the ioctl can give,
/// and why the kernel gives each (fs/eventpoll.c `ep_eventpoll_ioctl`,
/// `ep_eventpoll_bp_ioctl`).
pub fn errno_text(errno: i32) -> (&'static str, &'static str) {
    match errno {
        libc::ENOTTY => (
            "ENOTTY",
            "this kernel has no EPIOCSPARAMS, which arrived in Linux 6.9",
        ),
        libc::EPERM => (
            "EPERM",
            "a busy_poll_budget above 64 (NAPI_POLL_WEIGHT) needs CAP_NET_ADMIN",
        ),
        libc::EINVAL => (
            "EINVAL",
            "busy_poll_usecs above 2147483647 or prefer_busy_poll above 1",
        ),
        libc::EOPNOTSUPP => (
            "EOPNOTSUPP",
            "this kernel was built without CONFIG_NET_RX_BUSY_POLL",
        ),
        libc::EFAULT => ("EFAULT", "bad address"),
        libc::EBADF => ("EBADF", "bad file descriptor"),
        _ => ("errno", "unexpected error"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_cut_and_keep_room_for_the_newline() {
        let mut line = Line::new();
        for _ in 0..100 {
            let _ = write!(line, "0123456789");
        }
        assert_eq!(line.as_bytes().len(), LINE_CAP - 1);
        assert!(line.as_bytes().starts_with(b"irqlab-preload: 0123"));
    }

    #[test]
    fn env_values_are_shown_printable_and_bounded() {
        let mut line = Line::new();
        line.push_printable(b"a\nb\x01c");
        assert_eq!(line.as_bytes(), b"irqlab-preload: a?b?c");
        let mut line = Line::new();
        line.push_printable(&[b'x'; 100]);
        assert!(line.as_bytes().ends_with(b"xxx..."));
        let mut line = Line::new();
        line.push_path(&[b'/'; 259]);
        assert_eq!(line.as_bytes().len(), "irqlab-preload: ".len() + 259);
    }

    #[test]
    fn refusals_are_named() {
        assert_eq!(errno_text(libc::EPERM).0, "EPERM");
        assert_eq!(errno_text(libc::ENOTTY).0, "ENOTTY");
        assert_eq!(errno_text(libc::EINVAL).0, "EINVAL");
        assert_eq!(errno_text(12345).0, "errno");
    }
}
