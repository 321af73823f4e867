//! rtnetlink's route lookup, `RTM_GETROUTE` for one IPv4 destination, as
//! `ip route get DST` sends it. `inet_rtm_getroute()` (net/ipv4/route.c)
//! answers with the route an output packet would take, filled by
//! `rt_fill_info()`: `RTA_GATEWAY` (or `RTA_VIA`) whenever it goes through a
//! gateway (`rt->rt_uses_gateway`), lightweight-tunnel attributes
//! (`RTA_ENCAP`, `RTA_ENCAP_TYPE`) when packets are encapsulated, or an
//! `NLMSG_ERROR` when there is no route.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::attr::{self, Attrs};
use super::message::{NlMsgHdr, NLMSG_ERROR, NLMSG_HDRLEN, NLM_F_ACK, NLM_F_REQUEST};
use super::DecodeError;

// include/uapi/linux/rtnetlink.h
pub const RTM_NEWROUTE: u16 = 24;
pub const RTM_GETROUTE: u16 = 26;
/// `sizeof(struct rtmsg)`.
pub const RTMSG_LEN: usize = 12;
pub const RTA_DST: u16 = 1;
pub const RTA_OIF: u16 = 4;
pub const RTA_GATEWAY: u16 = 5;
pub const RTA_VIA: u16 = 18;
pub const RTA_ENCAP_TYPE: u16 = 21;
pub const RTA_ENCAP: u16 = 22;
pub const RTN_UNICAST: u8 = 1;
pub const RTN_LOCAL: u8 = 2;
const AF_INET: u8 = 2;

/// What the kernel says of its route to a destination.
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
    /// Any other route type (`rtm_type`: broadcast, blackhole, ...).
    Other(u8),
    /// The kernel has no usable route (the errno of its refusal:
    /// `ENETUNREACH`, `EHOSTUNREACH`, `EINVAL` for a blackhole, ...).
    None(i32),
}

/// The `RTM_GETROUTE` request for `dst`, with an ack so that the answer
/// ends like every other request's.
pub fn encode_request(dst: Ipv4Addr, seq: u32) -> Vec<u8> {
    let mut body = Vec::with_capacity(RTMSG_LEN + 8);
    // struct rtmsg: family, dst_len (a host route), src_len, tos, table,
    // protocol, scope, type, flags (u32).
    body.extend_from_slice(&[AF_INET, 32, 0, 0, 0, 0, 0, 0]);
    body.extend_from_slice(&0u32.to_ne_bytes());
    attr::put(&mut body, RTA_DST, &dst.octets());
    let header = NlMsgHdr {
        len: (NLMSG_HDRLEN + body.len()) as u32,
        kind: RTM_GETROUTE,
        flags: NLM_F_REQUEST | NLM_F_ACK,
        seq,
        pid: 0,
    };
    let mut b = Vec::with_capacity(header.len as usize);
    header.emit(&mut b);
    b.extend_from_slice(&body);
    b
}

/// The route one answering message (header included) reports: `Some` for
/// an `RTM_NEWROUTE` or a refusal, `None` for the ack or anything else.
pub fn parse_answer(raw: &[u8]) -> Result<Option<Route>, DecodeError> {
    let header = NlMsgHdr::parse(raw)?;
    let msg = raw.get(NLMSG_HDRLEN..header.len as usize).unwrap_or(&[]);
    match header.kind {
        NLMSG_ERROR => {
            let bytes: [u8; 4] = msg.get(..4).and_then(|b| b.try_into().ok()).ok_or(DecodeError::Truncated {
                what: "netlink error message",
                need: 4,
                have: msg.len(),
            })?;
            let error = i32::from_ne_bytes(bytes);
            Ok((error < 0).then_some(Route::None(-error)))
        }
        RTM_NEWROUTE => route_of(msg).map(Some),
        _ => Ok(None),
    }
}

/// The route an `RTM_NEWROUTE` payload (`struct rtmsg` + attributes) describes.
fn route_of(msg: &[u8]) -> Result<Route, DecodeError> {
    if msg.len() < RTMSG_LEN {
        return Err(DecodeError::Truncated { what: "route message", need: RTMSG_LEN, have: msg.len() });
    }
    let rtm_type = msg[7];
    let (mut oif, mut gateway, mut encap) = (None, None, false);
    for a in Attrs::new(&msg[RTMSG_LEN..]) {
        let a = a?;
        let data = a.payload;
        match a.kind {
            RTA_OIF => oif = Some(a.u32()?),
            RTA_GATEWAY => gateway = ip_of(data),
            // struct rtvia: a family (u16), then the address, whose length
            // tells the family as well.
            RTA_VIA if data.len() >= 2 => gateway = ip_of(&data[2..]).or(Some(IpAddr::V6(Ipv6Addr::UNSPECIFIED))),
            RTA_ENCAP | RTA_ENCAP_TYPE => encap = true,
            _ => {}
        }
    }
    Ok(match (rtm_type, gateway) {
        (RTN_LOCAL, _) => Route::Local,
        (RTN_UNICAST, Some(gw)) => Route::Gateway(gw),
        (RTN_UNICAST, None) if encap => Route::Encapsulated,
        (RTN_UNICAST, None) => Route::Direct { oif },
        (other, _) => Route::Other(other),
    })
}

fn ip_of(data: &[u8]) -> Option<IpAddr> {
    match data.len() {
        4 => Some(IpAddr::V4(Ipv4Addr::new(data[0], data[1], data[2], data[3]))),
        16 => Some(IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(data).expect("16 bytes")))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel answer: nlmsghdr + rtmsg of type `rtm_type` + attributes.
    fn answer(rtm_type: u8, attrs: &[(u16, &[u8])]) -> Vec<u8> {
        let mut body = vec![AF_INET, 32, 0, 0, 254, 0, 0, rtm_type, 0, 0, 0, 0];
        for (kind, data) in attrs {
            attr::put(&mut body, *kind, data);
        }
        let mut b = Vec::new();
        NlMsgHdr { len: (NLMSG_HDRLEN + body.len()) as u32, kind: RTM_NEWROUTE, flags: 0, seq: 9, pid: 0 }.emit(&mut b);
        b.extend_from_slice(&body);
        b
    }

    fn error(errno: i32) -> Vec<u8> {
        let mut b = Vec::new();
        NlMsgHdr { len: 36, kind: NLMSG_ERROR, flags: 0x100, seq: 9, pid: 0 }.emit(&mut b);
        b.extend_from_slice(&(-errno).to_ne_bytes());
        b.extend_from_slice(&[0; 16]); // the request's header (capped)
        b
    }

    /// Golden bytes: what `ip route get 198.18.0.2` sends, with an ack asked for.
    #[test]
    fn the_request_is_ip_route_gets() {
        let b = encode_request(Ipv4Addr::new(198, 18, 0, 2), 7);
        let mut want = Vec::new();
        want.extend_from_slice(&36u32.to_ne_bytes());
        want.extend_from_slice(&RTM_GETROUTE.to_ne_bytes());
        want.extend_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
        want.extend_from_slice(&7u32.to_ne_bytes());
        want.extend_from_slice(&0u32.to_ne_bytes());
        want.extend_from_slice(&[AF_INET, 32, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        want.extend_from_slice(&8u16.to_ne_bytes());
        want.extend_from_slice(&RTA_DST.to_ne_bytes());
        want.extend_from_slice(&[198, 18, 0, 2]);
        assert_eq!(b, want);
    }

    #[test]
    fn answers_are_read_as_routes() {
        let oif = 3u32.to_ne_bytes();
        let gw = [198, 18, 0, 2];
        let table = 254u32.to_ne_bytes();
        let cases: Vec<(Vec<u8>, Route)> = vec![
            (answer(RTN_UNICAST, &[(RTA_DST, &[198, 18, 0, 2]), (RTA_OIF, &oif)]), Route::Direct { oif: Some(3) }),
            (
                answer(RTN_UNICAST, &[(15, &table), (RTA_GATEWAY, &gw), (RTA_OIF, &oif)]),
                Route::Gateway("198.18.0.2".parse().unwrap()),
            ),
            (answer(RTN_LOCAL, &[(RTA_OIF, &1u32.to_ne_bytes())]), Route::Local),
            (answer(RTN_UNICAST, &[(RTA_ENCAP_TYPE, &[1, 0]), (RTA_OIF, &oif)]), Route::Encapsulated),
            (answer(3, &[(RTA_OIF, &oif)]), Route::Other(3)),
            (error(101), Route::None(101)),
        ];
        for (bytes, want) in cases {
            assert_eq!(parse_answer(&bytes).unwrap(), Some(want));
        }
        assert_eq!(parse_answer(&error(0)).unwrap(), None, "the ack is no route");
        let mut via = vec![10, 0];
        via.extend_from_slice(&"fe80::1".parse::<Ipv6Addr>().unwrap().octets());
        let b = answer(RTN_UNICAST, &[(RTA_VIA, &via)]);
        assert_eq!(parse_answer(&b).unwrap(), Some(Route::Gateway("fe80::1".parse().unwrap())));
        assert!(parse_answer(&b[..20]).is_err(), "a cut message is an error, not a route");
    }
}
