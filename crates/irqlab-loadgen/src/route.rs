//! Whether load to a 198.18.0.0/15 address stays on this machine.
//!
//! The range is only a convention: a host whose default route leads to a
//! real network would send load for, say, 198.19.5.5 through its gateway,
//! off the machine. So before any socket is opened the generator asks the
//! kernel for its route to the target, from the network namespace it runs
//! in, exactly as `ip route get` does: one `RTM_GETROUTE` request over
//! `NETLINK_ROUTE`, answered by `inet_rtm_getroute()` (net/ipv4/route.c)
//! with the route an output packet would take, filled by `rt_fill_info()`.
//! That answer carries `RTA_GATEWAY` (or `RTA_VIA`) whenever the route goes
//! through a gateway (`rt->rt_uses_gateway`), and lightweight-tunnel
//! attributes (`RTA_ENCAP`) when packets are encapsulated.
//!
//! Accepted: a local address of this namespace (`RTN_LOCAL`) and a
//! directly connected unicast route (`RTN_UNICAST` without gateway or
//! encapsulation), such as the testbed's veth into another namespace.
//! Refused, with one sentence saying why: a route through a gateway, an
//! encapsulating route, any other route type (broadcast, blackhole, ...)
//! and no route at all. Loopback (127.0.0.0/8, ::1) needs no question.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use crate::sys::RouteSocket;

// include/uapi/linux/netlink.h
const NLMSG_HDRLEN: usize = 16;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
// include/uapi/linux/rtnetlink.h
const RTM_NEWROUTE: u16 = 24;
const RTM_GETROUTE: u16 = 26;
/// `sizeof(struct rtmsg)`.
const RTMSG_LEN: usize = 12;
const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_VIA: u16 = 18;
const RTA_ENCAP_TYPE: u16 = 21;
const RTA_ENCAP: u16 = 22;
const RTN_UNICAST: u8 = 1;
const RTN_LOCAL: u8 = 2;
const AF_INET: u8 = 2;
const AF_INET6: u16 = 10;

/// How long the kernel gets to answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);
/// Room for one route answer (a few hundred bytes).
const ANSWER_BUFFER: usize = 8192;
/// Datagrams read before giving up on finding the answer (the socket
/// subscribes to no group, so only the answer should arrive).
const MAX_DATAGRAMS: usize = 16;

/// The kernel's route to an address, as far as it decides where load goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// An address of this host (`RTN_LOCAL`): delivered through loopback.
    Local,
    /// A unicast route on a directly connected link, out of device `oif`.
    Direct { oif: Option<u32> },
    /// Through this gateway (`RTA_GATEWAY`, or `RTA_VIA` for an IPv6 next hop).
    Gateway(IpAddr),
    /// Into a lightweight tunnel (`RTA_ENCAP`).
    Encapsulated,
    /// Any other route type (`rtm_type`: broadcast, multicast, ...).
    Other(u8),
    /// The kernel has no usable route (the errno of its refusal:
    /// `ENETUNREACH`, `EHOSTUNREACH`, `EINVAL` for a blackhole, ...).
    None(i32),
}

/// The `RTM_GETROUTE` request for `dst` (as `ip route get DST` sends it).
pub fn encode_request(dst: Ipv4Addr, seq: u32) -> Vec<u8> {
    let len = NLMSG_HDRLEN + RTMSG_LEN + 8;
    let mut b = Vec::with_capacity(len);
    b.extend_from_slice(&(len as u32).to_ne_bytes());
    b.extend_from_slice(&RTM_GETROUTE.to_ne_bytes());
    b.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    b.extend_from_slice(&seq.to_ne_bytes());
    // nlmsg_pid: the kernel fills it in.
    b.extend_from_slice(&0u32.to_ne_bytes());
    // struct rtmsg: family, dst_len (a host route), src_len, tos, table,
    // protocol, scope, type, flags (u32).
    b.extend_from_slice(&[AF_INET, 32, 0, 0, 0, 0, 0, 0]);
    b.extend_from_slice(&0u32.to_ne_bytes());
    b.extend_from_slice(&8u16.to_ne_bytes());
    b.extend_from_slice(&RTA_DST.to_ne_bytes());
    b.extend_from_slice(&dst.octets());
    b
}

fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_ne_bytes([b[i], b[i + 1]])
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// The route in one datagram of the kernel's answer to request `seq`, or
/// `None` if the datagram holds nothing for that request.
pub fn parse_answer(buf: &[u8], seq: u32) -> Result<Option<Route>, String> {
    let mut at = 0;
    while at + NLMSG_HDRLEN <= buf.len() {
        let len = u32_at(buf, at) as usize;
        if len < NLMSG_HDRLEN || at + len > buf.len() {
            return Err(format!(
                "a netlink message of length {len} does not fit its datagram"
            ));
        }
        let kind = u16_at(buf, at + 4);
        let msg = &buf[at + NLMSG_HDRLEN..at + len];
        if u32_at(buf, at + 8) == seq {
            match kind {
                NLMSG_ERROR if msg.len() >= 4 => {
                    let error = i32::from_ne_bytes([msg[0], msg[1], msg[2], msg[3]]);
                    if error < 0 {
                        return Ok(Some(Route::None(-error)));
                    }
                }
                RTM_NEWROUTE if msg.len() >= RTMSG_LEN => return Ok(Some(route_of(msg))),
                _ => {}
            }
        }
        at += (len + 3) & !3;
    }
    Ok(None)
}

/// The route an `RTM_NEWROUTE` payload (`struct rtmsg` + attributes) describes.
fn route_of(msg: &[u8]) -> Route {
    let rtm_type = msg[7];
    let (mut oif, mut gateway, mut encap) = (None, None, false);
    let mut at = RTMSG_LEN;
    while at + 4 <= msg.len() {
        let len = u16_at(msg, at) as usize;
        if len < 4 || at + len > msg.len() {
            break;
        }
        let data = &msg[at + 4..at + len];
        match u16_at(msg, at + 2) & 0x3fff {
            RTA_OIF if data.len() == 4 => oif = Some(u32_at(data, 0)),
            RTA_GATEWAY if data.len() == 4 => {
                gateway = Some(IpAddr::V4(Ipv4Addr::new(
                    data[0], data[1], data[2], data[3],
                )))
            }
            RTA_GATEWAY if data.len() == 16 => {
                gateway = Some(IpAddr::V6(Ipv6Addr::from(
                    <[u8; 16]>::try_from(data).expect("16 bytes"),
                )))
            }
            // struct rtvia: a family (u16), then the address.
            RTA_VIA if data.len() >= 2 => {
                let addr = &data[2..];
                gateway = Some(match (u16_at(data, 0), addr.len()) {
                    (f, 16) if f == AF_INET6 => IpAddr::V6(Ipv6Addr::from(
                        <[u8; 16]>::try_from(addr).expect("16 bytes"),
                    )),
                    (_, 4) => IpAddr::V4(Ipv4Addr::new(addr[0], addr[1], addr[2], addr[3])),
                    _ => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
                });
            }
            RTA_ENCAP | RTA_ENCAP_TYPE => encap = true,
            _ => {}
        }
        at += (len + 3) & !3;
    }
    match (rtm_type, gateway) {
        (RTN_LOCAL, _) => Route::Local,
        (RTN_UNICAST, Some(gw)) => Route::Gateway(gw),
        (RTN_UNICAST, None) if encap => Route::Encapsulated,
        (RTN_UNICAST, None) => Route::Direct { oif },
        (other, _) => Route::Other(other),
    }
}

/// Ask the kernel, in this process's network namespace, for its route to `dst`.
pub fn lookup(dst: Ipv4Addr) -> io::Result<Route> {
    let socket = RouteSocket::open(ANSWER_TIMEOUT)?;
    let seq = std::process::id();
    socket.send(&encode_request(dst, seq))?;
    let mut buf = vec![0u8; ANSWER_BUFFER];
    for _ in 0..MAX_DATAGRAMS {
        let n = socket.recv(&mut buf)?;
        if let Some(route) = parse_answer(&buf[..n], seq)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?
        {
            return Ok(route);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        "the kernel sent no answer to RTM_GETROUTE",
    ))
}

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
    let route = lookup(v4).map_err(|e| {
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

    /// A kernel answer: nlmsghdr + rtmsg of type `rtm_type` + attributes.
    fn answer(seq: u32, rtm_type: u8, attrs: &[(u16, &[u8])]) -> Vec<u8> {
        let mut body = vec![AF_INET, 32, 0, 0, 254, 0, 0, rtm_type, 0, 0, 0, 0];
        for (kind, data) in attrs {
            body.extend_from_slice(&((4 + data.len()) as u16).to_ne_bytes());
            body.extend_from_slice(&kind.to_ne_bytes());
            body.extend_from_slice(data);
            while body.len() % 4 != 0 {
                body.push(0);
            }
        }
        let mut b = Vec::new();
        b.extend_from_slice(&((NLMSG_HDRLEN + body.len()) as u32).to_ne_bytes());
        b.extend_from_slice(&RTM_NEWROUTE.to_ne_bytes());
        b.extend_from_slice(&0u16.to_ne_bytes());
        b.extend_from_slice(&seq.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        b.extend_from_slice(&body);
        b
    }

    fn error(seq: u32, errno: i32) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&36u32.to_ne_bytes());
        b.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
        b.extend_from_slice(&0x100u16.to_ne_bytes());
        b.extend_from_slice(&seq.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        b.extend_from_slice(&(-errno).to_ne_bytes());
        b.extend_from_slice(&[0; 16]); // the request's header (capped)
        b
    }

    #[test]
    fn the_request_is_ip_route_gets() {
        let b = encode_request(Ipv4Addr::new(198, 18, 0, 2), 7);
        assert_eq!(b.len(), 36);
        assert_eq!(u32_at(&b, 0), 36);
        assert_eq!(
            (u16_at(&b, 4), u16_at(&b, 6), u32_at(&b, 8)),
            (RTM_GETROUTE, NLM_F_REQUEST, 7)
        );
        assert_eq!(&b[16..20], &[AF_INET, 32, 0, 0]);
        assert_eq!((u16_at(&b, 28), u16_at(&b, 30)), (8, RTA_DST));
        assert_eq!(&b[32..], &[198, 18, 0, 2]);
    }

    #[test]
    fn answers_are_read_as_routes() {
        let oif = 3u32.to_ne_bytes();
        let gw = [198, 18, 0, 2];
        let table = 254u32.to_ne_bytes();
        let cases: Vec<(Vec<u8>, Route)> = vec![
            (
                answer(
                    9,
                    RTN_UNICAST,
                    &[(RTA_DST, &[198, 18, 0, 2]), (RTA_OIF, &oif)],
                ),
                Route::Direct { oif: Some(3) },
            ),
            (
                answer(
                    9,
                    RTN_UNICAST,
                    &[(15, &table), (RTA_GATEWAY, &gw), (RTA_OIF, &oif)],
                ),
                Route::Gateway("198.18.0.2".parse().unwrap()),
            ),
            (
                answer(9, RTN_LOCAL, &[(RTA_OIF, &1u32.to_ne_bytes())]),
                Route::Local,
            ),
            (
                answer(
                    9,
                    RTN_UNICAST,
                    &[(RTA_ENCAP_TYPE, &[1, 0]), (RTA_OIF, &oif)],
                ),
                Route::Encapsulated,
            ),
            (answer(9, 3, &[(RTA_OIF, &oif)]), Route::Other(3)),
            (error(9, 101), Route::None(101)),
        ];
        for (bytes, want) in cases {
            assert_eq!(parse_answer(&bytes, 9).unwrap(), Some(want));
            assert_eq!(
                parse_answer(&bytes, 10).unwrap(),
                None,
                "another request's answer is not ours"
            );
        }
        let mut via = vec![10, 0];
        via.extend_from_slice(&"fe80::1".parse::<Ipv6Addr>().unwrap().octets());
        let b = answer(1, RTN_UNICAST, &[(RTA_VIA, &via)]);
        assert_eq!(
            parse_answer(&b, 1).unwrap(),
            Some(Route::Gateway("fe80::1".parse().unwrap()))
        );
        assert!(
            parse_answer(&b[..20], 1).is_err(),
            "a cut message is an error, not a route"
        );
    }

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
        match lookup(Ipv4Addr::LOCALHOST).unwrap() {
            Route::Local | Route::None(_) => {}
            other => panic!("127.0.0.1 routed as {other:?}"),
        }
        // Loopback is accepted without asking.
        assert!(check("127.0.0.1:1".parse().unwrap()).is_ok());
        assert!(check("[::1]:1".parse().unwrap()).is_ok());
        assert!(check("[::ffff:127.0.0.1]:1".parse().unwrap()).is_ok());
    }
}
