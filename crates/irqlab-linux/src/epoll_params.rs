//! Per-epoll-instance busy-poll parameters (Linux 6.9+,
//! include/uapi/linux/eventpoll.h): `struct epoll_params` and the ioctls
//! `EPIOCSPARAMS` / `EPIOCGPARAMS` on an epoll file descriptor.
//!
//! This module depends on nothing but `std` and `libc` so that the
//! LD_PRELOAD shim (crates/irqlab-preload) can use it as it is.

use std::io;
use std::os::fd::RawFd;

/// `struct epoll_params`: 8 bytes, the layout the kernel copies in and out.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EpollParams {
    /// How long `epoll_wait` busy polls before sleeping, in µs (0: the
    /// `net.core.busy_poll` sysctl applies). The kernel refuses values above
    /// `S32_MAX` with `EINVAL`.
    pub busy_poll_usecs: u32,
    /// Packets per busy-poll iteration (0: the kernel's `BUSY_POLL_BUDGET`,
    /// 8). Above [`NAPI_POLL_WEIGHT`] it needs CAP_NET_ADMIN, else `EPERM`.
    pub busy_poll_budget: u16,
    /// 0 or 1 (anything else is `EINVAL`): prefer busy polling to softirq
    /// processing, which is what lets IRQ suspension take hold.
    pub prefer_busy_poll: u8,
    /// Must be 0 (`EINVAL` otherwise).
    pub __pad: u8,
}

impl EpollParams {
    pub fn new(busy_poll_usecs: u32, busy_poll_budget: u16, prefer_busy_poll: bool) -> Self {
        EpollParams { busy_poll_usecs, busy_poll_budget, prefer_busy_poll: u8::from(prefer_busy_poll), __pad: 0 }
    }
}

/// The largest busy-poll budget an unprivileged caller may set (`NAPI_POLL_WEIGHT`).
pub const NAPI_POLL_WEIGHT: u16 = 64;

/// `_IOW(0x8A, 0x01, struct epoll_params)`: 0x40088A01 on x86 and arm64.
/// The `_IOC` encoding, with its per-arch variants, is libc's.
pub const EPIOCSPARAMS: libc::Ioctl = libc::EPIOCSPARAMS;
/// `_IOR(0x8A, 0x02, struct epoll_params)`: 0x80088A02 on x86 and arm64.
pub const EPIOCGPARAMS: libc::Ioctl = libc::EPIOCGPARAMS;

/// Set the busy-poll parameters of epoll instance `epfd`. Fails with
/// `ENOTTY` on kernels before 6.9 (or if `epfd` is not an epoll fd).
pub fn set_params(epfd: RawFd, params: &EpollParams) -> io::Result<()> {
    // SAFETY: the kernel reads size_of::<EpollParams>() bytes from a valid,
    // properly laid out struct that outlives the call.
    let rc = unsafe { libc::ioctl(epfd, EPIOCSPARAMS, params as *const EpollParams) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The busy-poll parameters of epoll instance `epfd`.
pub fn get_params(epfd: RawFd) -> io::Result<EpollParams> {
    let mut params = EpollParams::default();
    // SAFETY: the kernel writes size_of::<EpollParams>() bytes into a valid,
    // writable struct that outlives the call.
    let rc = unsafe { libc::ioctl(epfd, EPIOCGPARAMS, &mut params as *mut EpollParams) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    #[test]
    fn the_struct_is_eight_bytes_as_in_the_uapi() {
        assert_eq!(std::mem::size_of::<EpollParams>(), 8);
        assert_eq!(std::mem::align_of::<EpollParams>(), 4);
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "x86", target_arch = "aarch64", target_arch = "riscv64"))]
    #[test]
    fn ioctl_numbers_match_the_asm_generic_encoding() {
        assert_eq!(EPIOCSPARAMS, 0x4008_8A01);
        assert_eq!(EPIOCGPARAMS, 0x8008_8A02);
    }

    /// Needs Linux 6.9+, so `cargo test` leaves it out; tests/python/test_rust_live.py
    /// runs it, and reports it skipped where the kernel is older. Run by hand
    /// on such a kernel it fails with a line starting "cannot run here:"
    /// rather than pass without having tested anything.
    #[test]
    #[ignore = "live: needs Linux 6.9+ (EPIOCSPARAMS); run by tests/python/test_rust_live.py"]
    fn parameters_set_on_an_epoll_instance_read_back() {
        // SAFETY: plain syscall; the result is checked.
        let raw = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        assert!(raw >= 0, "epoll_create1: {}", io::Error::last_os_error());
        // SAFETY: a fresh descriptor owned by nobody else.
        let epfd = unsafe { OwnedFd::from_raw_fd(raw) };
        let want = EpollParams::new(1000, NAPI_POLL_WEIGHT, true);
        match set_params(epfd.as_raw_fd(), &want) {
            Err(e) if e.raw_os_error() == Some(libc::ENOTTY) => {
                panic!("cannot run here: this kernel has no EPIOCSPARAMS (Linux 6.9+)")
            }
            other => other.expect("EPIOCSPARAMS"),
        }
        assert_eq!(get_params(epfd.as_raw_fd()).expect("EPIOCGPARAMS"), want);
        // The kernel's own checks: prefer_busy_poll is 0 or 1, __pad is 0.
        let bad = EpollParams { prefer_busy_poll: 2, ..want };
        assert_eq!(set_params(epfd.as_raw_fd(), &bad).unwrap_err().raw_os_error(), Some(libc::EINVAL));
        let bad = EpollParams { __pad: 1, ..want };
        assert_eq!(set_params(epfd.as_raw_fd(), &bad).unwrap_err().raw_os_error(), Some(libc::EINVAL));
    }
}
