//! Generic netlink (include/uapi/linux/genetlink.h): every message is a
//! `struct nlmsghdr` whose type is the family id, a `struct genlmsghdr`
//! (command, version, two reserved bytes), then attributes. Family ids are
//! dynamic; the `nlctrl` family (fixed id `GENL_ID_CTRL`) resolves a family
//! name to its id with `CTRL_CMD_GETFAMILY`.

use super::attr::{self, Attrs, RawAttr};
use super::message::{whole_message, NlMsgHdr, NLMSG_HDRLEN, NLMSG_MIN_TYPE};
use super::DecodeError;

/// `GENL_HDRLEN`: the size of `struct genlmsghdr`.
pub const GENL_HDRLEN: usize = 4;

/// The fixed family id of `nlctrl`.
pub const GENL_ID_CTRL: u16 = NLMSG_MIN_TYPE;
pub const GENL_CTRL_NAME: &str = "nlctrl";
/// The version irqlab speaks to `nlctrl` (the kernel's `GENL_CTRL_VERSION`).
pub const GENL_CTRL_VERSION: u8 = 2;

// nlctrl commands.
pub const CTRL_CMD_NEWFAMILY: u8 = 1;
pub const CTRL_CMD_GETFAMILY: u8 = 3;

// nlctrl attributes.
pub const CTRL_ATTR_FAMILY_ID: u16 = 1;
pub const CTRL_ATTR_FAMILY_NAME: u16 = 2;
pub const CTRL_ATTR_VERSION: u16 = 3;
pub const CTRL_ATTR_HDRSIZE: u16 = 4;
pub const CTRL_ATTR_MAXATTR: u16 = 5;
pub const CTRL_ATTR_OPS: u16 = 6;
pub const CTRL_ATTR_MCAST_GROUPS: u16 = 7;

/// The attributes of a generic netlink message, as a value: how a message
/// body is written and read. Each request and reply of a family is one.
pub trait Payload: Sized {
    fn emit_attrs(&self, buf: &mut Vec<u8>);
    fn parse_attrs(attrs: &[u8]) -> Result<Self, DecodeError>;
}

/// One generic netlink message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenlMessage<P> {
    /// The family id (`nlmsg_type`).
    pub family: u16,
    /// `nlmsg_flags` (`NLM_F_*`).
    pub flags: u16,
    pub seq: u32,
    /// `nlmsg_pid`: 0 from the kernel; the socket's port id in a request.
    pub port: u32,
    /// `genlmsghdr.cmd`.
    pub cmd: u8,
    /// `genlmsghdr.version`.
    pub version: u8,
    pub payload: P,
}

impl<P: Payload> GenlMessage<P> {
    /// The message's bytes, `nlmsg_len` filled in.
    pub fn emit(&self) -> Vec<u8> {
        let mut buf = Vec::with_capacity(64);
        NlMsgHdr::default().emit(&mut buf);
        buf.extend_from_slice(&[self.cmd, self.version, 0, 0]);
        self.payload.emit_attrs(&mut buf);
        let header = NlMsgHdr { len: buf.len() as u32, kind: self.family, flags: self.flags, seq: self.seq, pid: self.port };
        let mut head = Vec::with_capacity(NLMSG_HDRLEN);
        header.emit(&mut head);
        buf[..NLMSG_HDRLEN].copy_from_slice(&head);
        buf
    }

    /// Parse exactly one message of family `family`.
    pub fn parse(raw: &[u8], family: u16) -> Result<Self, DecodeError> {
        let header = whole_message(raw, family)?;
        let body = &raw[NLMSG_HDRLEN..];
        if body.len() < GENL_HDRLEN {
            return Err(DecodeError::Truncated { what: "generic netlink header", need: GENL_HDRLEN, have: body.len() });
        }
        Ok(GenlMessage {
            family: header.kind,
            flags: header.flags,
            seq: header.seq,
            port: header.pid,
            cmd: body[0],
            version: body[1],
            payload: P::parse_attrs(&body[GENL_HDRLEN..])?,
        })
    }
}

/// `CTRL_CMD_GETFAMILY` by name: which id has family `name`?
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GetFamily {
    pub name: String,
}

impl Payload for GetFamily {
    fn emit_attrs(&self, buf: &mut Vec<u8>) {
        attr::put_str(buf, CTRL_ATTR_FAMILY_NAME, &self.name);
    }

    fn parse_attrs(attrs: &[u8]) -> Result<Self, DecodeError> {
        for a in Attrs::new(attrs) {
            let a = a?;
            if a.kind == CTRL_ATTR_FAMILY_NAME {
                return Ok(GetFamily { name: a.string()? });
            }
        }
        Err(DecodeError::Missing { what: "family lookup", attr: "CTRL_ATTR_FAMILY_NAME" })
    }
}

/// The reply to [`GetFamily`] (`CTRL_CMD_NEWFAMILY`): the family's id and
/// version; its operations and multicast groups are kept unparsed in `other`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Family {
    pub name: String,
    pub id: u16,
    pub version: u32,
    pub hdrsize: u32,
    /// The highest attribute type the family knows.
    pub maxattr: u32,
    pub other: Vec<RawAttr>,
}

impl Payload for Family {
    // In the kernel's order (`ctrl_fill_info`), so that a parsed reply emits
    // back to the same bytes.
    fn emit_attrs(&self, buf: &mut Vec<u8>) {
        attr::put_str(buf, CTRL_ATTR_FAMILY_NAME, &self.name);
        attr::put_u16(buf, CTRL_ATTR_FAMILY_ID, self.id);
        attr::put_u32(buf, CTRL_ATTR_VERSION, self.version);
        attr::put_u32(buf, CTRL_ATTR_HDRSIZE, self.hdrsize);
        attr::put_u32(buf, CTRL_ATTR_MAXATTR, self.maxattr);
        for a in &self.other {
            a.emit(buf);
        }
    }

    fn parse_attrs(attrs: &[u8]) -> Result<Self, DecodeError> {
        let (mut name, mut id, mut version, mut hdrsize, mut maxattr) = (None, None, 0, 0, 0);
        let mut other = Vec::new();
        for a in Attrs::new(attrs) {
            let a = a?;
            match a.kind {
                CTRL_ATTR_FAMILY_NAME => name = Some(a.string()?),
                CTRL_ATTR_FAMILY_ID => id = Some(a.u16()?),
                CTRL_ATTR_VERSION => version = a.u32()?,
                CTRL_ATTR_HDRSIZE => hdrsize = a.u32()?,
                CTRL_ATTR_MAXATTR => maxattr = a.u32()?,
                _ => other.push(a.to_raw()),
            }
        }
        Ok(Family {
            name: name.ok_or(DecodeError::Missing { what: "family description", attr: "CTRL_ATTR_FAMILY_NAME" })?,
            id: id.ok_or(DecodeError::Missing { what: "family description", attr: "CTRL_ATTR_FAMILY_ID" })?,
            version,
            hdrsize,
            maxattr,
            other,
        })
    }
}

/// Golden-byte checks shared by the family modules' tests: `emit(value) ==
/// raw` and `parse(raw) == value`.
#[cfg(test)]
pub(crate) fn assert_golden<P: Payload + PartialEq + std::fmt::Debug>(value: &GenlMessage<P>, raw: &[u8]) {
    assert_eq!(value.emit(), raw, "emit(value) differs from the golden bytes");
    assert_eq!(&GenlMessage::<P>::parse(raw, value.family).expect("the golden bytes parse"), value, "parse(raw) differs");
}

/// Concatenate byte pieces (golden vectors are written piece by piece, each
/// commented with the field it is).
#[cfg(test)]
pub(crate) fn bytes(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

// Golden vectors are little-endian, as is every machine irqlab is tested on.
#[cfg(all(test, target_endian = "little"))]
mod golden {
    use super::*;

    #[test]
    fn getfamily_request() {
        let value = GenlMessage {
            family: GENL_ID_CTRL,
            flags: 0x05, // NLM_F_REQUEST | NLM_F_ACK
            seq: 1,
            port: 100,
            cmd: CTRL_CMD_GETFAMILY,
            version: GENL_CTRL_VERSION,
            payload: GetFamily { name: "netdev".into() },
        };
        let raw = bytes(&[
            &[32, 0, 0, 0],        // nlmsg_len
            &[0x10, 0],            // nlmsg_type: GENL_ID_CTRL
            &[0x05, 0],            // nlmsg_flags
            &[1, 0, 0, 0],         // nlmsg_seq
            &[100, 0, 0, 0],       // nlmsg_pid
            &[3, 2, 0, 0],         // genlmsghdr: CTRL_CMD_GETFAMILY, version 2
            &[11, 0, 2, 0],        // CTRL_ATTR_FAMILY_NAME, 7 bytes of payload
            b"netdev\0", &[0],     // NUL-terminated, padded to 4
        ]);
        assert_golden(&value, &raw);
    }

    #[test]
    fn family_reply() {
        let value = GenlMessage {
            family: GENL_ID_CTRL,
            flags: 0,
            seq: 9,
            port: 100,
            cmd: CTRL_CMD_NEWFAMILY,
            version: 2,
            payload: Family {
                name: "ethtool".into(),
                id: 21,
                version: 1,
                hdrsize: 0,
                maxattr: 0,
                other: vec![RawAttr { kind: CTRL_ATTR_MCAST_GROUPS, payload: vec![4, 0, 1, 0] }],
            },
        };
        let raw = bytes(&[
            &[72, 0, 0, 0], &[0x10, 0], &[0, 0], &[9, 0, 0, 0], &[100, 0, 0, 0],
            &[1, 2, 0, 0],                      // CTRL_CMD_NEWFAMILY
            &[12, 0, 2, 0], b"ethtool\0",       // CTRL_ATTR_FAMILY_NAME
            &[6, 0, 1, 0], &[21, 0], &[0, 0],   // CTRL_ATTR_FAMILY_ID (u16, padded)
            &[8, 0, 3, 0], &[1, 0, 0, 0],       // CTRL_ATTR_VERSION
            &[8, 0, 4, 0], &[0, 0, 0, 0],       // CTRL_ATTR_HDRSIZE
            &[8, 0, 5, 0], &[0, 0, 0, 0],       // CTRL_ATTR_MAXATTR
            &[8, 0, 7, 0], &[4, 0, 1, 0],       // CTRL_ATTR_MCAST_GROUPS, kept raw
        ]);
        assert_golden(&value, &raw);
    }

    /// The kernel's own answer on this project's test machine (Linux 6.18):
    /// its operations and multicast groups (nests the kernel writes without
    /// NLA_F_NESTED) are kept as they came.
    #[test]
    fn family_reply_from_the_kernel() {
        let raw = include_bytes!("../../tests/fixtures/getfamily-netdev.bin");
        let parsed = GenlMessage::<Family>::parse(raw, GENL_ID_CTRL).unwrap();
        assert_eq!((parsed.cmd, parsed.payload.name.as_str(), parsed.payload.id, parsed.payload.version), (CTRL_CMD_NEWFAMILY, "netdev", 20, 1));
        let kinds: Vec<u16> = parsed.payload.other.iter().map(|a| a.kind).collect();
        assert_eq!(kinds, vec![CTRL_ATTR_OPS, CTRL_ATTR_MCAST_GROUPS]);
        assert_eq!(parsed.emit(), raw.to_vec());
    }

    #[test]
    fn a_message_of_another_family_or_length_is_refused() {
        let raw = include_bytes!("../../tests/fixtures/getfamily-netdev.bin");
        assert!(matches!(
            GenlMessage::<Family>::parse(raw, 21),
            Err(DecodeError::UnexpectedType { got: 0x10, expected: 21 })
        ));
        assert!(matches!(GenlMessage::<Family>::parse(&raw[..100], GENL_ID_CTRL), Err(DecodeError::Length { .. })));
    }
}
