//! Whether load to a 198.18.0.0/15 address stays on this machine.
//!
//! The range is only a convention: a host whose default route leads to a
//! real network would send load for, say, 198.19.5.5 through its gateway,
//! off the machine. So before any socket is opened the generator asks the
//! kernel for its route to the target, from the network namespace it runs
//! in, exactly as `ip route get` does (`irqlab_linux::ops::route_get`:
//! one `RTM_GETROUTE` over `NETLINK_ROUTE`, answered by
//! `inet_rtm_getroute()` with the route an output packet would take).
//!
//! Accepted: a local address of this namespace (`RTN_LOCAL`) and a
//! directly connected unicast route (`RTN_UNICAST` without gateway or
//! encapsulation), such as the testbed's veth into another namespace.
//! Refused, with one sentence saying why: a route through a gateway, an
//! encapsulating route, any other route type (broadcast, blackhole, ...)
//! and no route at all. Loopback (127.0.0.0/8, ::1) needs no question.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

pub use irqlab_linux::netlink::route::Route;
use irqlab_linux::ops::route_get;

/// The IPv4 address `ip` stands for (itself, or the IPv4 address inside an
/// IPv4-mapped IPv6 address, which the kernel routes as IPv4).
fn as_v4(ip: IpAddr) -> Option<Ipv4Addr> {
    match ip {
        IpAddr::V4(v4) => Some(v4),
        IpAddr::V6(v6) => v6.to_ipv4_mapped(),
    }
}

const ONLY: &str =
    "irqlab-loadgen sends load to 198.18.0.0/15 only over a directly connected route \
(no gateway), such as a veth into a network namespace";

/// Refuse `server` unless load to it stays on this machine: loopback, or a
/// 198.18.0.0/15 address that the kernel routes locally or on a directly
/// connected link. The error is one sentence naming `--server` and why.
pub fn check(server: SocketAddr) -> Result<(), String> {
    let ip = server.ip();
    if ip.is_loopback() || as_v4(ip).is_some_and(|v4| v4.is_loopback()) {
        return Ok(());
    }
    let (true, Some(v4)) = (crate::target::is_allowed(ip), as_v4(ip)) else {
        return Err(crate::target::outside(server));
    };
    let route = route_get(v4).map_err(|e| {
        format!(
            "--server {server}: irqlab-loadgen could not ask the kernel for its route to {v4} ({e}), so it cannot tell \
             whether the load would stay on this machine"
        )
    })?;
    judge(server, &route)
}

/// The verdict on `route`, the kernel's route to `server`.
pub fn judge(server: SocketAddr, route: &Route) -> Result<(), String> {
    match route {
        Route::Local | Route::Direct { .. } => Ok(()),
        Route::Gateway(gw) => Err(format!(
            "--server {server} is routed through gateway {gw}, which would take the load off this machine; {ONLY}"
        )),
        Route::Encapsulated => Err(format!(
            "--server {server} is routed into an encapsulating tunnel, which would take the load off this machine; {ONLY}"
        )),
        Route::Other(t) => Err(format!(
            "--server {server} has a route of type {} (rtm_type {t}), not a directly connected one; {ONLY}",
            type_name(*t)
        )),
        Route::None(errno) => Err(format!(
            "--server {server} has no route in this network namespace (the kernel says: {}); {ONLY}",
            errno_text(*errno)
        )),
    }
}

fn type_name(t: u8) -> &'static str {
    match t {
        3 => "broadcast",
        4 => "anycast",
        5 => "multicast",
        6 => "blackhole",
        7 => "unreachable",
        8 => "prohibit",
        9 => "throw",
        _ => "unknown",
    }
}

/// `strerror` without the " (os error N)" Rust appends.
fn errno_text(errno: i32) -> String {
    let text = io::Error::from_raw_os_error(errno).to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_and_directly_connected_routes_are_accepted() {
        let server: SocketAddr = "198.19.5.5:11211".parse().unwrap();
        assert!(judge(server, &Route::Local).is_ok());
        assert!(judge(server, &Route::Direct { oif: Some(2) }).is_ok());
        let refusals = [
            (
                Route::Gateway("198.18.0.2".parse().unwrap()),
                "gateway 198.18.0.2",
            ),
            (Route::Encapsulated, "encapsulating tunnel"),
            (Route::Other(6), "blackhole"),
            (
                Route::None(101),
                "no route in this network namespace (the kernel says: Network is unreachable)",
            ),
        ];
        for (route, why) in refusals {
            let e = judge(server, &route).unwrap_err();
            assert!(e.starts_with("--server 198.19.5.5:11211 "), "{e}");
            assert!(e.contains(why) && e.contains("directly connected"), "{e}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn the_kernel_routes_loopback_locally() {
        // Every network namespace has lo with 127.0.0.0/8 once it is up;
        // the unit tests run where lo is up (the kernel answers ENETUNREACH
        // otherwise, which is a route too).
        match route_get(Ipv4Addr::LOCALHOST).unwrap() {
            Route::Local | Route::None(_) => {}
            other => panic!("127.0.0.1 routed as {other:?}"),
        }
        // Loopback is accepted without asking.
        assert!(check("127.0.0.1:1".parse().unwrap()).is_ok());
        assert!(check("[::1]:1".parse().unwrap()).is_ok());
        assert!(check("[::ffff:127.0.0.1]:1".parse().unwrap()).is_ok());
    }
}
