//! `SO_INCOMING_NAPI_ID` (Linux 4.12): the id of the NAPI instance that
//! delivered the last packet a socket received — the NAPI an epoll busy
//! poller on that socket would poll, and so the one whose per-NAPI settings
//! matter for it.

use std::io;
use std::mem;
use std::os::fd::RawFd;

/// `SO_INCOMING_NAPI_ID` (include/uapi/asm-generic/socket.h; sparc and
/// parisc number it differently).
#[cfg(any(target_arch = "sparc", target_arch = "sparc64"))]
pub const SO_INCOMING_NAPI_ID: libc::c_int = 0x003a;
#[cfg(not(any(target_arch = "sparc", target_arch = "sparc64")))]
pub const SO_INCOMING_NAPI_ID: libc::c_int = 56;

/// The NAPI id of the last packet socket `fd` received; 0 when none came
/// through a NAPI with an id (loopback, nothing received yet).
pub fn incoming_napi_id(fd: RawFd) -> io::Result<u32> {
    let mut id: u32 = 0;
    let mut len = mem::size_of::<u32>() as libc::socklen_t;
    // SAFETY: `id` and `len` describe a writable u32 that outlives the call.
    let rc = unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, SO_INCOMING_NAPI_ID, (&mut id as *mut u32).cast(), &mut len) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_socket_answers_and_a_non_socket_is_refused() {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(incoming_napi_id(socket.as_raw_fd()).is_ok());
        let file = std::fs::File::open("/proc/self/stat").unwrap();
        let err = incoming_napi_id(file.as_raw_fd()).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOTSOCK));
    }
}
