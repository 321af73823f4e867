//! The transport: a `NETLINK_GENERIC` socket that sends one request at a
//! time and collects its answer — replies until the ack for a `do`
//! (`NLM_F_ACK`), replies until `NLMSG_DONE` for a dump (`NLM_F_DUMP`). A
//! refusal (`NLMSG_ERROR` with a negative error) becomes a [`KernelError`]
//! that names the request, the errno and, when the kernel gave one, its
//! extended-ack message (`NETLINK_EXT_ACK` is turned on for that).
//!
//! Messages themselves are defined in `crate::netlink`; nothing here knows a
//! family's attributes.

use std::io;
use std::mem;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::netlink::genl::{GenlMessage, Payload};
use crate::netlink::message::{
    self, DoneMessage, ErrorMessage, ExtAck, NLMSG_DONE, NLMSG_ERROR, NLMSG_NOOP, NLMSG_OVERRUN, NLM_F_ACK,
    NLM_F_DUMP, NLM_F_DUMP_INTR, NLM_F_REQUEST,
};
use crate::netlink::DecodeError;

/// `NETLINK_ROUTE` and `NETLINK_GENERIC` (include/uapi/linux/netlink.h).
pub const NETLINK_ROUTE: libc::c_int = 0;
pub const NETLINK_GENERIC: libc::c_int = 16;
/// Socket options at level `SOL_NETLINK`.
pub const SOL_NETLINK: libc::c_int = 270;
/// Do not echo the whole request back in an error.
pub const NETLINK_CAP_ACK: libc::c_int = 10;
/// Add extended-ack attributes (the kernel's error message) to errors.
pub const NETLINK_EXT_ACK: libc::c_int = 11;

/// How long to wait for the kernel before giving up on a request.
const RECV_TIMEOUT_SECS: u64 = 10;
/// Large enough for any single netlink datagram the kernel sends to a
/// reader that offers it (dumps are cut into skbs of at most 32 KiB).
const RECV_BUFFER_BYTES: usize = 64 * 1024;
/// A dump whose snapshot changed under it (`NLM_F_DUMP_INTR`) is re-run this many times.
const DUMP_ATTEMPTS: usize = 3;

/// The kernel refused a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelError {
    /// What was asked, e.g. "napi-set on NAPI 8193".
    pub request: String,
    /// The positive errno (`EINVAL`, `EOPNOTSUPP`, ...).
    pub errno: i32,
    pub ext_ack: ExtAck,
}

impl KernelError {
    /// The errno's symbolic name (`EOPNOTSUPP`), or `errno N`.
    pub fn errno_name(&self) -> String {
        errno_name(self.errno)
    }
}

impl std::fmt::Display for KernelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the kernel refused {}: {} ({})", self.request, self.errno_name(), errno_text(self.errno))?;
        if let Some(msg) = &self.ext_ack.msg {
            write!(f, ", saying \"{msg}\"")?;
        } else if let Some(kind) = self.ext_ack.missing_type() {
            write!(f, ", saying attribute {kind} is missing")?;
        }
        Ok(())
    }
}

impl std::error::Error for KernelError {}

/// Why a request over the socket failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetlinkError {
    #[error("could not {op} a netlink socket: {source}")]
    Io { op: &'static str, source: io::Error },
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error("the kernel's answer to {request} could not be read: {source}")]
    Decode { request: String, source: DecodeError },
    #[error("the kernel did not answer {request} within {secs} seconds")]
    Timeout { request: String, secs: u64 },
}

impl NetlinkError {
    /// The errno of a kernel refusal, if this is one.
    pub fn errno(&self) -> Option<i32> {
        match self {
            NetlinkError::Kernel(k) => Some(k.errno),
            _ => None,
        }
    }
}

/// A bound `NETLINK_GENERIC` socket (or, from [`GenlSocket::open_route`],
/// a `NETLINK_ROUTE` one: the framing, acks and errors are the same).
pub struct GenlSocket {
    fd: OwnedFd,
    /// The port id the kernel gave this socket (`nl_pid`).
    port: u32,
    seq: u32,
    buf: Vec<u8>,
}

impl GenlSocket {
    /// Open, configure (extended acks, capped acks, receive timeout) and bind.
    pub fn open() -> Result<Self, NetlinkError> {
        Self::open_protocol(NETLINK_GENERIC)
    }

    /// The same over `NETLINK_ROUTE` (rtnetlink), in this process's network
    /// namespace; send it raw messages with [`transact_raw`](Self::transact_raw).
    pub fn open_route() -> Result<Self, NetlinkError> {
        Self::open_protocol(NETLINK_ROUTE)
    }

    fn open_protocol(protocol: libc::c_int) -> Result<Self, NetlinkError> {
        let io_err = |op| move |source| NetlinkError::Io { op, source };
        // SAFETY: plain syscall; the result is checked before use.
        let raw = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, protocol) };
        if raw < 0 {
            return Err(io_err("open")(io::Error::last_os_error()));
        }
        // SAFETY: `raw` is a fresh descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        set_int_option(&fd, SOL_NETLINK, NETLINK_EXT_ACK, 1).map_err(io_err("configure (NETLINK_EXT_ACK)"))?;
        // Without it every error would carry a copy of the request.
        set_int_option(&fd, SOL_NETLINK, NETLINK_CAP_ACK, 1).map_err(io_err("configure (NETLINK_CAP_ACK)"))?;
        let timeout = libc::timeval { tv_sec: RECV_TIMEOUT_SECS as libc::time_t, tv_usec: 0 };
        // SAFETY: the option value is a valid timeval of the size given.
        let rc = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&timeout as *const libc::timeval).cast(),
                mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io_err("configure (SO_RCVTIMEO)")(io::Error::last_os_error()));
        }
        let mut addr = kernel_address();
        // SAFETY: `addr` is a valid sockaddr_nl of the size given.
        let rc = unsafe {
            libc::bind(fd.as_raw_fd(), (&addr as *const libc::sockaddr_nl).cast(), mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t)
        };
        if rc < 0 {
            return Err(io_err("bind")(io::Error::last_os_error()));
        }
        let mut len = mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t;
        // SAFETY: `addr` and `len` describe a writable sockaddr_nl.
        let rc = unsafe { libc::getsockname(fd.as_raw_fd(), (&mut addr as *mut libc::sockaddr_nl).cast(), &mut len) };
        if rc < 0 {
            return Err(io_err("name")(io::Error::last_os_error()));
        }
        // A sequence start that differs between runs, so that a late answer
        // to an earlier process's request is never taken for ours.
        let seq = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos() ^ (d.as_secs() as u32))
            .unwrap_or(1);
        Ok(GenlSocket { fd, port: addr.nl_pid, seq, buf: vec![0; RECV_BUFFER_BYTES] })
    }

    /// The port id the kernel assigned.
    pub fn port(&self) -> u32 {
        self.port
    }

    /// A `do` request with an ack: the replies (often one, none for a set)
    /// that came before the ack. `what` names the request in errors.
    pub fn request<Q: Payload, R: Payload>(
        &mut self,
        what: &str,
        family: u16,
        cmd: u8,
        version: u8,
        payload: Q,
    ) -> Result<Vec<R>, NetlinkError> {
        let msg = self.message(family, NLM_F_REQUEST | NLM_F_ACK, cmd, version, payload);
        self.exchange(what, &msg, false).map(|(replies, _)| replies)
    }

    /// A dump: every reply until `NLMSG_DONE`.
    pub fn dump<Q: Payload + Clone, R: Payload>(
        &mut self,
        what: &str,
        family: u16,
        cmd: u8,
        version: u8,
        payload: Q,
    ) -> Result<Vec<R>, NetlinkError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let msg = self.message(family, NLM_F_REQUEST | NLM_F_DUMP, cmd, version, payload.clone());
            let (replies, interrupted) = self.exchange(what, &msg, true)?;
            if !interrupted || attempt == DUMP_ATTEMPTS {
                return Ok(replies);
            }
        }
    }

    fn message<Q: Payload>(&mut self, family: u16, flags: u16, cmd: u8, version: u8, payload: Q) -> GenlMessage<Q> {
        let seq = self.next_seq();
        GenlMessage { family, flags, seq, port: self.port, cmd, version, payload }
    }

    /// Send `msg` and read until its ack (or, for a dump, its DONE).
    /// Returns the replies and whether the dump was interrupted.
    fn exchange<Q: Payload, R: Payload>(
        &mut self,
        what: &str,
        msg: &GenlMessage<Q>,
        dump: bool,
    ) -> Result<(Vec<R>, bool), NetlinkError> {
        let decode = |source| NetlinkError::Decode { request: what.to_string(), source };
        let mut replies = Vec::new();
        let mut interrupted = false;
        for raw in self.transact_raw(what, &msg.emit(), dump)? {
            let header = message::NlMsgHdr::parse(&raw).map_err(decode)?;
            interrupted |= header.flags & NLM_F_DUMP_INTR != 0;
            match header.kind {
                NLMSG_ERROR => {
                    let err = ErrorMessage::parse(&raw).map_err(decode)?;
                    if err.error != 0 {
                        return Err(refused(what, err.error, err.ext_ack));
                    }
                }
                NLMSG_DONE => {
                    let done = DoneMessage::parse(&raw).map_err(decode)?;
                    if done.error != 0 {
                        return Err(refused(what, done.error, done.ext_ack));
                    }
                }
                NLMSG_OVERRUN => {
                    return Err(NetlinkError::Kernel(KernelError {
                        request: what.to_string(),
                        errno: libc::ENOBUFS,
                        ext_ack: ExtAck::default(),
                    }))
                }
                kind if kind == msg.family => {
                    replies.push(GenlMessage::<R>::parse(&raw, msg.family).map_err(decode)?.payload);
                }
                _ => {}
            }
        }
        Ok((replies, interrupted))
    }

    /// The next sequence number, for a message built by the caller.
    pub fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    /// Send the already-built message `bytes` and return every message that
    /// answers it, as received, up to and including the one that ends the
    /// exchange: an `NLMSG_ERROR` (an ack or a refusal) or, when `dump`,
    /// `NLMSG_DONE`. Messages answering other requests are dropped. For
    /// tools and tests (capturing fixtures); [`request`](Self::request) and
    /// [`dump`](Self::dump) are built on it.
    pub fn transact_raw(&mut self, what: &str, bytes: &[u8], dump: bool) -> Result<Vec<Vec<u8>>, NetlinkError> {
        let sent = message::NlMsgHdr::parse(bytes)
            .map_err(|source| NetlinkError::Decode { request: what.to_string(), source })?;
        self.send(bytes)?;
        let mut answers = Vec::new();
        loop {
            let len = self.recv(what)?;
            for item in message::messages(&self.buf[..len]) {
                let (header, raw) = item.map_err(|source| NetlinkError::Decode { request: what.to_string(), source })?;
                if header.seq != sent.seq || header.pid != self.port || header.kind == NLMSG_NOOP {
                    continue; // an answer to some earlier request
                }
                answers.push(raw.to_vec());
                let ends = match header.kind {
                    // An ack ends a do; in a dump only a refusal (error != 0) does.
                    NLMSG_ERROR => !dump || !matches!(raw.get(16..20), Some([0, 0, 0, 0])),
                    NLMSG_DONE | NLMSG_OVERRUN => true,
                    _ => false,
                };
                if ends {
                    return Ok(answers);
                }
            }
        }
    }

    fn send(&self, bytes: &[u8]) -> Result<(), NetlinkError> {
        let addr = kernel_address();
        loop {
            // SAFETY: `bytes` and `addr` are valid for the lengths given.
            let rc = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    bytes.as_ptr().cast(),
                    bytes.len(),
                    0,
                    (&addr as *const libc::sockaddr_nl).cast(),
                    mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
                )
            };
            if rc >= 0 {
                return Ok(());
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(NetlinkError::Io { op: "send on", source: err });
            }
        }
    }

    /// Receive one datagram from the kernel into `self.buf`; its length.
    fn recv(&mut self, what: &str) -> Result<usize, NetlinkError> {
        loop {
            let mut addr = kernel_address();
            let mut addr_len = mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t;
            // MSG_TRUNC: return the datagram's real length even if it did not fit.
            // SAFETY: the buffer and address are valid for the lengths given.
            let rc = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                    libc::MSG_TRUNC,
                    (&mut addr as *mut libc::sockaddr_nl).cast(),
                    &mut addr_len,
                )
            };
            if rc < 0 {
                let err = io::Error::last_os_error();
                match err.kind() {
                    io::ErrorKind::Interrupted => continue,
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                        return Err(NetlinkError::Timeout { request: what.to_string(), secs: RECV_TIMEOUT_SECS })
                    }
                    _ => return Err(NetlinkError::Io { op: "receive on", source: err }),
                }
            }
            let len = rc as usize;
            if len > self.buf.len() {
                return Err(NetlinkError::Decode {
                    request: what.to_string(),
                    source: DecodeError::Truncated { what: "netlink datagram", need: len, have: self.buf.len() },
                });
            }
            if addr.nl_pid != 0 {
                continue; // not from the kernel
            }
            return Ok(len);
        }
    }
}

fn refused(what: &str, error: i32, ext_ack: ExtAck) -> NetlinkError {
    NetlinkError::Kernel(KernelError { request: what.to_string(), errno: -error, ext_ack })
}

fn kernel_address() -> libc::sockaddr_nl {
    // SAFETY: sockaddr_nl is plain data; all-zero is a valid value.
    let mut addr: libc::sockaddr_nl = unsafe { mem::zeroed() };
    addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    addr
}

fn set_int_option(fd: &OwnedFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: the option value is a valid c_int of the size given.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The symbolic name of the errno values netlink requests come back with.
pub fn errno_name(errno: i32) -> String {
    let name = match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::ENXIO => "ENXIO",
        libc::E2BIG => "E2BIG",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::ENODEV => "ENODEV",
        libc::EINVAL => "EINVAL",
        libc::ENOSPC => "ENOSPC",
        libc::ERANGE => "ERANGE",
        libc::ENOSYS => "ENOSYS",
        libc::EMSGSIZE => "EMSGSIZE",
        libc::EPROTONOSUPPORT => "EPROTONOSUPPORT",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENETDOWN => "ENETDOWN",
        libc::ENOBUFS => "ENOBUFS",
        libc::ETIMEDOUT => "ETIMEDOUT",
        // The kernel-internal ENOTSUPP (include/linux/errno.h) leaks out of some drivers.
        524 => "ENOTSUPP",
        n => return format!("errno {n}"),
    };
    name.to_string()
}

/// The C library's description of an errno, without Rust's "(os error N)".
pub fn errno_text(errno: i32) -> String {
    if errno == 524 {
        return "Operation is not supported".to_string();
    }
    let text = io::Error::from_raw_os_error(errno).to_string();
    match text.rfind(" (os error") {
        Some(cut) => text[..cut].to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_request_the_errno_and_the_kernels_reason() {
        let err = KernelError {
            request: "napi-set on NAPI 8193".into(),
            errno: libc::EINVAL,
            ext_ack: ExtAck { msg: Some("integer out of range".into()), ..ExtAck::default() },
        };
        assert_eq!(
            err.to_string(),
            "the kernel refused napi-set on NAPI 8193: EINVAL (Invalid argument), saying \"integer out of range\""
        );
        let plain = KernelError { request: "coalesce-get on veth0".into(), errno: libc::EOPNOTSUPP, ext_ack: ExtAck::default() };
        assert_eq!(plain.to_string(), "the kernel refused coalesce-get on veth0: EOPNOTSUPP (Operation not supported)");
        assert_eq!(errno_name(524), "ENOTSUPP");
        assert_eq!(errno_name(4242), "errno 4242");
    }
}
