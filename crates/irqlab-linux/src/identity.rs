//! What a saved state is for (issue 62, item 2): a network namespace and a
//! device in it, named by things the kernel does not hand out again.
//!
//! - The namespace's cookie (`SO_NETNS_COOKIE`, Linux 5.14): a 64-bit
//!   number the kernel gives each network namespace when it is made
//!   (`net->net_cookie`, net/core/net_namespace.c) from a counter that only
//!   grows, so a namespace made after another was deleted never has its
//!   cookie. The namespace's inode number (`/proc/self/ns/net`), which the
//!   state used to be keyed by, is taken back by `proc_free_inum()` when a
//!   namespace is deleted and given to the next one. (There is no
//!   `NS_GET_COOKIE` ioctl on namespace files; Linux 6.18's `NS_GET_ID`
//!   answers the same number for a network namespace, but the socket option
//!   is older.)
//! - The device's permanent hardware address (`ETHTOOL_GPERMADDR`,
//!   net/ethtool/ioctl.c `ethtool_get_perm_addr()`, allowed without
//!   privilege), or, for a device that has none (a veth: `eth_hw_addr_random()`
//!   leaves `perm_addr` zero, net/core/dev.c `register_netdevice()` copies it
//!   only for `NET_ADDR_PERM`), its current one (`SIOCGIFHWADDR`): a veth
//!   made again gets a new random address. A device with no address at all
//!   (loopback) is named by its namespace, name and index alone.
//!
//! Both are read through sockets made by this process, so they are this
//! thread's namespace's, as the device name is.

use std::io;
use std::mem;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use serde::{Deserialize, Serialize};

use crate::device::IFNAMSIZ;
use crate::error::Error;

/// `SO_NETNS_COOKIE` (include/uapi/asm-generic/socket.h; sparc numbers it
/// differently).
#[cfg(any(target_arch = "sparc", target_arch = "sparc64"))]
const SO_NETNS_COOKIE: libc::c_int = 0x0050;
#[cfg(not(any(target_arch = "sparc", target_arch = "sparc64")))]
const SO_NETNS_COOKIE: libc::c_int = 71;

/// `SIOCETHTOOL` and `SIOCGIFHWADDR` (include/uapi/linux/sockios.h).
const SIOCETHTOOL: libc::c_ulong = 0x8946;
const SIOCGIFHWADDR: libc::c_ulong = 0x8927;
/// `ETHTOOL_GPERMADDR` (include/uapi/linux/ethtool.h).
const ETHTOOL_GPERMADDR: u32 = 0x20;
/// `MAX_ADDR_LEN` (include/linux/netdevice.h): the longest hardware address.
const MAX_ADDR_LEN: usize = 32;

/// A device's hardware address as a saved state names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceAddress {
    /// True: the permanent address (`ethtool -P`); false: the address the
    /// device had, which it has none permanent (a veth's random one).
    pub permanent: bool,
    /// Lower-case hex bytes joined by `:`; empty for a device without an
    /// address (loopback).
    pub address: String,
}

impl std::fmt::Display for DeviceAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.address.is_empty(), self.permanent) {
            (true, _) => f.write_str("no hardware address"),
            (false, true) => write!(f, "permanent address {}", self.address),
            (false, false) => write!(f, "address {}", self.address),
        }
    }
}

/// The cookie of this thread's network namespace.
pub fn netns_cookie() -> Result<u64, Error> {
    let socket = udp_socket().map_err(|e| namespace_error(&e))?;
    let mut cookie: u64 = 0;
    let mut len = mem::size_of::<u64>() as libc::socklen_t;
    // SAFETY: `cookie` and `len` describe a writable u64 that outlives the call.
    let rc = unsafe {
        libc::getsockopt(socket.as_raw_fd(), libc::SOL_SOCKET, SO_NETNS_COOKIE, (&mut cookie as *mut u64).cast(), &mut len)
    };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENOPROTOOPT) {
            return Err(Error::KernelTooOld {
                what: "has no SO_NETNS_COOKIE (Linux 5.14)".into(),
                purpose: "tell one network namespace from another that reuses its inode number",
            });
        }
        return Err(namespace_error(&e));
    }
    Ok(cookie)
}

fn namespace_error(e: &io::Error) -> Error {
    Error::Identity { what: "this network namespace's cookie".into(), problem: e.to_string() }
}

/// The address that names device `device` (resolved already).
pub fn device_address(device: &str) -> Result<DeviceAddress, Error> {
    let fail = |e: io::Error| Error::Identity { what: format!("device `{device}`'s hardware address"), problem: e.to_string() };
    let socket = udp_socket().map_err(fail)?;
    let name = ifname(device);
    // ETHTOOL_GPERMADDR: the command word, the buffer's size (the kernel
    // answers the address's length there), then the bytes.
    #[repr(C)]
    struct PermAddr {
        cmd: u32,
        size: u32,
        data: [u8; MAX_ADDR_LEN],
    }
    let mut perm = PermAddr { cmd: ETHTOOL_GPERMADDR, size: MAX_ADDR_LEN as u32, data: [0; MAX_ADDR_LEN] };
    let mut req = IfReq { name, data: IfReqData { ptr: (&mut perm as *mut PermAddr).cast() } };
    // SAFETY: `req` names the device and points at `perm`, both alive for the call.
    let rc = unsafe { libc::ioctl(socket.as_raw_fd(), SIOCETHTOOL as _, &mut req) };
    let perm_len = if rc == 0 { (perm.size as usize).min(MAX_ADDR_LEN) } else { 0 };
    let permanent = &perm.data[..perm_len];
    if permanent.iter().any(|&b| b != 0) {
        return Ok(DeviceAddress { permanent: true, address: hex(permanent) });
    }
    let mut req = IfReq { name, data: IfReqData { pad: [0; 24] } };
    // SAFETY: `req` names the device; the kernel fills its hardware address.
    let rc = unsafe { libc::ioctl(socket.as_raw_fd(), SIOCGIFHWADDR as _, &mut req) };
    if rc < 0 {
        return Err(fail(io::Error::last_os_error()));
    }
    // SAFETY: SIOCGIFHWADDR filled the sockaddr member of the union.
    let data = unsafe { req.data.hwaddr.sa_data };
    // The address's length: ETHTOOL_GPERMADDR said it (dev->addr_len);
    // else the 6 bytes of an Ethernet address, the most sa_data holds whole.
    let len = if perm_len > 0 { perm_len.min(data.len()) } else { 6 };
    let current: Vec<u8> = data[..len].iter().map(|&b| b as u8).collect();
    if current.iter().all(|&b| b == 0) {
        return Ok(DeviceAddress { permanent: false, address: String::new() });
    }
    Ok(DeviceAddress { permanent: false, address: hex(&current) })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// `struct ifreq` (include/uapi/linux/if.h): the name, then a union whose
/// largest member (`struct ifmap`) takes 24 bytes on 64-bit targets.
#[repr(C)]
struct IfReq {
    name: [u8; IFNAMSIZ],
    data: IfReqData,
}

#[repr(C)]
union IfReqData {
    ptr: *mut libc::c_void,
    hwaddr: libc::sockaddr,
    pad: [u8; 24],
}

fn ifname(device: &str) -> [u8; IFNAMSIZ] {
    let mut name = [0u8; IFNAMSIZ];
    for (dst, &src) in name.iter_mut().zip(device.as_bytes().iter().take(IFNAMSIZ - 1)) {
        *dst = src;
    }
    name
}

fn udp_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; the descriptor is owned below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a new descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_namespace_has_a_cookie_and_loopback_has_no_address() {
        let cookie = netns_cookie().unwrap();
        assert!(cookie > 0);
        assert_eq!(netns_cookie().unwrap(), cookie, "the same namespace, the same cookie");
        let lo = device_address("lo").unwrap();
        assert_eq!(lo, DeviceAddress { permanent: false, address: String::new() });
        assert_eq!(lo.to_string(), "no hardware address");
        assert!(device_address("irqlab-nonexist").is_err());
    }

    #[test]
    fn addresses_read_as_ip_link_prints_them() {
        assert_eq!(hex(&[0x02, 0xab, 0, 1, 0x10, 0xff]), "02:ab:00:01:10:ff");
        let a = DeviceAddress { permanent: true, address: "02:ab:00:01:10:ff".into() };
        assert_eq!(a.to_string(), "permanent address 02:ab:00:01:10:ff");
    }
}
