//! The netlink message frame, `struct nlmsghdr` (include/uapi/linux/netlink.h),
//! and the two control messages every request can end with: `NLMSG_ERROR`
//! (an error, or an ack when its error is 0) and `NLMSG_DONE` (the end of a
//! dump), each with the extended-ack attributes (`NLMSGERR_ATTR_*`) the
//! kernel adds when the socket asked for them (`NETLINK_EXT_ACK`).

use super::attr::{self, Attrs, RawAttr};
use super::DecodeError;

// Message types below NLMSG_MIN_TYPE are control messages.
pub const NLMSG_NOOP: u16 = 0x1;
pub const NLMSG_ERROR: u16 = 0x2;
pub const NLMSG_DONE: u16 = 0x3;
pub const NLMSG_OVERRUN: u16 = 0x4;
pub const NLMSG_MIN_TYPE: u16 = 0x10;

// Flags of every message.
pub const NLM_F_REQUEST: u16 = 0x01;
pub const NLM_F_MULTI: u16 = 0x02;
pub const NLM_F_ACK: u16 = 0x04;
pub const NLM_F_ECHO: u16 = 0x08;
pub const NLM_F_DUMP_INTR: u16 = 0x10;
pub const NLM_F_DUMP_FILTERED: u16 = 0x20;
// Flags of a GET request.
pub const NLM_F_ROOT: u16 = 0x100;
pub const NLM_F_MATCH: u16 = 0x200;
pub const NLM_F_DUMP: u16 = NLM_F_ROOT | NLM_F_MATCH;
// Flags of an NLMSG_ERROR message.
/// The request's payload was not echoed back (an ack, or `NETLINK_CAP_ACK`).
pub const NLM_F_CAPPED: u16 = 0x100;
/// Extended-ack attributes follow.
pub const NLM_F_ACK_TLVS: u16 = 0x200;

pub const NLMSG_ALIGNTO: usize = 4;
/// `NLMSG_HDRLEN`: the size of `struct nlmsghdr`.
pub const NLMSG_HDRLEN: usize = 16;

// Extended-ack attributes (`enum nlmsgerr_attrs`).
/// A human-readable error message (string).
pub const NLMSGERR_ATTR_MSG: u16 = 1;
/// Offset of the invalid attribute in the original message (u32).
pub const NLMSGERR_ATTR_OFFS: u16 = 2;
pub const NLMSGERR_ATTR_COOKIE: u16 = 3;
pub const NLMSGERR_ATTR_POLICY: u16 = 4;
/// Type of a missing required attribute (u32).
pub const NLMSGERR_ATTR_MISS_TYPE: u16 = 5;
pub const NLMSGERR_ATTR_MISS_NEST: u16 = 6;

/// `NLMSG_ALIGN(len)`.
pub const fn nlmsg_align(len: usize) -> usize {
    (len + NLMSG_ALIGNTO - 1) & !(NLMSG_ALIGNTO - 1)
}

/// `struct nlmsghdr`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NlMsgHdr {
    /// Length of the message, header included.
    pub len: u32,
    /// `nlmsg_type`: a control message type or, in generic netlink, the family id.
    pub kind: u16,
    pub flags: u16,
    pub seq: u32,
    /// `nlmsg_pid`: the sending port (0 for the kernel).
    pub pid: u32,
}

impl NlMsgHdr {
    pub fn emit(&self, buf: &mut Vec<u8>) {
        buf.extend_from_slice(&self.len.to_ne_bytes());
        buf.extend_from_slice(&self.kind.to_ne_bytes());
        buf.extend_from_slice(&self.flags.to_ne_bytes());
        buf.extend_from_slice(&self.seq.to_ne_bytes());
        buf.extend_from_slice(&self.pid.to_ne_bytes());
    }

    pub fn parse(buf: &[u8]) -> Result<Self, DecodeError> {
        if buf.len() < NLMSG_HDRLEN {
            return Err(DecodeError::Truncated { what: "netlink message header", need: NLMSG_HDRLEN, have: buf.len() });
        }
        let u32_at = |i: usize| u32::from_ne_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
        let u16_at = |i: usize| u16::from_ne_bytes([buf[i], buf[i + 1]]);
        Ok(NlMsgHdr { len: u32_at(0), kind: u16_at(4), flags: u16_at(6), seq: u32_at(8), pid: u32_at(12) })
    }
}

/// Iterator over the messages of one received datagram: each item is the
/// header and the whole message (header included).
pub struct Messages<'a> {
    rest: &'a [u8],
}

/// Split a received datagram into its messages.
pub fn messages(buf: &[u8]) -> Messages<'_> {
    Messages { rest: buf }
}

impl<'a> Iterator for Messages<'a> {
    type Item = Result<(NlMsgHdr, &'a [u8]), DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let buf = self.rest;
        let header = match NlMsgHdr::parse(buf) {
            Ok(h) => h,
            Err(e) => {
                self.rest = &[];
                return Some(Err(e));
            }
        };
        let len = header.len as usize;
        if len < NLMSG_HDRLEN || len > buf.len() {
            self.rest = &[];
            return Some(Err(DecodeError::Length { declared: len, have: buf.len() }));
        }
        self.rest = &buf[nlmsg_align(len).min(buf.len())..];
        Some(Ok((header, &buf[..len])))
    }
}

/// The extended-ack attributes of an `NLMSG_ERROR` or `NLMSG_DONE` message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExtAck {
    /// `NLMSGERR_ATTR_MSG`: why the kernel refused, in its words.
    pub msg: Option<String>,
    /// `NLMSGERR_ATTR_OFFS`: where in the request the offending attribute is.
    pub offset: Option<u32>,
    /// Every other extended-ack attribute, in the order received.
    pub other: Vec<RawAttr>,
}

impl ExtAck {
    pub fn is_empty(&self) -> bool {
        self.msg.is_none() && self.offset.is_none() && self.other.is_empty()
    }

    /// `NLMSGERR_ATTR_MISS_TYPE`: the type of a required attribute the request lacked.
    pub fn missing_type(&self) -> Option<u32> {
        self.other
            .iter()
            .find(|a| a.kind & attr::NLA_TYPE_MASK == NLMSGERR_ATTR_MISS_TYPE)
            .and_then(|a| a.payload.as_slice().try_into().ok().map(u32::from_ne_bytes))
    }

    fn emit(&self, buf: &mut Vec<u8>) {
        if let Some(msg) = &self.msg {
            attr::put_str(buf, NLMSGERR_ATTR_MSG, msg);
        }
        if let Some(offset) = self.offset {
            attr::put_u32(buf, NLMSGERR_ATTR_OFFS, offset);
        }
        for a in &self.other {
            a.emit(buf);
        }
    }

    fn parse(buf: &[u8]) -> Result<Self, DecodeError> {
        let mut ack = ExtAck::default();
        for a in Attrs::new(buf) {
            let a = a?;
            match a.kind {
                NLMSGERR_ATTR_MSG => ack.msg = Some(a.string()?),
                NLMSGERR_ATTR_OFFS => ack.offset = Some(a.u32()?),
                _ => ack.other.push(a.to_raw()),
            }
        }
        Ok(ack)
    }
}

/// An `NLMSG_ERROR` message (`struct nlmsgerr` and what follows it): the
/// answer to a request, an ack when `error` is 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorMessage {
    pub flags: u16,
    pub seq: u32,
    pub port: u32,
    /// 0 for an ack, else the negative errno of the refusal.
    pub error: i32,
    /// The header of the request answered.
    pub request: NlMsgHdr,
    /// The request's payload, echoed back unless `NLM_F_CAPPED` is set.
    pub request_payload: Vec<u8>,
    /// Present (and `NLM_F_ACK_TLVS` set) when the kernel said more.
    pub ext_ack: ExtAck,
}

impl ErrorMessage {
    pub fn emit(&self) -> Vec<u8> {
        let mut buf = Vec::new();
        NlMsgHdr::default().emit(&mut buf);
        buf.extend_from_slice(&self.error.to_ne_bytes());
        self.request.emit(&mut buf);
        buf.extend_from_slice(&self.request_payload);
        buf.resize(nlmsg_align(buf.len()), 0);
        self.ext_ack.emit(&mut buf);
        let header = NlMsgHdr { len: buf.len() as u32, kind: NLMSG_ERROR, flags: self.flags, seq: self.seq, pid: self.port };
        let mut head = Vec::with_capacity(NLMSG_HDRLEN);
        header.emit(&mut head);
        buf[..NLMSG_HDRLEN].copy_from_slice(&head);
        buf
    }

    pub fn parse(raw: &[u8]) -> Result<Self, DecodeError> {
        let header = whole_message(raw, NLMSG_ERROR)?;
        let body = &raw[NLMSG_HDRLEN..];
        let fixed = 4 + NLMSG_HDRLEN;
        if body.len() < fixed {
            return Err(DecodeError::Truncated { what: "netlink error message", need: fixed, have: body.len() });
        }
        let error = i32::from_ne_bytes([body[0], body[1], body[2], body[3]]);
        let request = NlMsgHdr::parse(&body[4..])?;
        let mut rest = &body[fixed..];
        let mut request_payload = Vec::new();
        if header.flags & NLM_F_CAPPED == 0 {
            let echoed = (request.len as usize).saturating_sub(NLMSG_HDRLEN);
            if rest.len() < echoed {
                return Err(DecodeError::Truncated { what: "echoed request", need: echoed, have: rest.len() });
            }
            request_payload = rest[..echoed].to_vec();
            rest = &rest[nlmsg_align(echoed).min(rest.len())..];
        }
        let ext_ack = if header.flags & NLM_F_ACK_TLVS != 0 { ExtAck::parse(rest)? } else { ExtAck::default() };
        Ok(ErrorMessage {
            flags: header.flags,
            seq: header.seq,
            port: header.pid,
            error,
            request,
            request_payload,
            ext_ack,
        })
    }
}

/// An `NLMSG_DONE` message: the end of a dump, with the dump's error (0 when
/// it completed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DoneMessage {
    pub flags: u16,
    pub seq: u32,
    pub port: u32,
    pub error: i32,
    pub ext_ack: ExtAck,
}

impl DoneMessage {
    pub fn emit(&self) -> Vec<u8> {
        let mut body = self.error.to_ne_bytes().to_vec();
        self.ext_ack.emit(&mut body);
        let mut buf = Vec::with_capacity(NLMSG_HDRLEN + body.len());
        let len = (NLMSG_HDRLEN + body.len()) as u32;
        NlMsgHdr { len, kind: NLMSG_DONE, flags: self.flags, seq: self.seq, pid: self.port }.emit(&mut buf);
        buf.extend_from_slice(&body);
        buf
    }

    pub fn parse(raw: &[u8]) -> Result<Self, DecodeError> {
        let header = whole_message(raw, NLMSG_DONE)?;
        let body = &raw[NLMSG_HDRLEN..];
        // A DONE without its error word is read as a clean end.
        let error = match body.get(..4) {
            Some(b) => i32::from_ne_bytes([b[0], b[1], b[2], b[3]]),
            None => 0,
        };
        let ext_ack = if header.flags & NLM_F_ACK_TLVS != 0 && body.len() > 4 {
            ExtAck::parse(&body[4..])?
        } else {
            ExtAck::default()
        };
        Ok(DoneMessage { flags: header.flags, seq: header.seq, port: header.pid, error, ext_ack })
    }
}

/// Check that `raw` is exactly one message of type `kind`; return its header.
pub(crate) fn whole_message(raw: &[u8], kind: u16) -> Result<NlMsgHdr, DecodeError> {
    let header = NlMsgHdr::parse(raw)?;
    if header.len as usize != raw.len() {
        return Err(DecodeError::Length { declared: header.len as usize, have: raw.len() });
    }
    if header.kind != kind {
        return Err(DecodeError::UnexpectedType { got: header.kind, expected: kind });
    }
    Ok(header)
}

#[cfg(all(test, target_endian = "little"))]
mod golden {
    use super::*;
    use crate::netlink::genl::bytes;

    #[test]
    fn ack_from_the_kernel() {
        // The ack of a `napi-get` do on a veth (Linux 6.18, NETLINK_CAP_ACK on).
        let raw = include_bytes!("../../tests/fixtures/veth-napi-get-ack.bin");
        let ack = ErrorMessage::parse(raw).unwrap();
        assert_eq!((ack.error, ack.flags), (0, NLM_F_CAPPED));
        assert_eq!((ack.request.len, ack.request.kind, ack.request.flags), (28, 20, NLM_F_REQUEST | NLM_F_ACK));
        assert_eq!(ack.seq, ack.request.seq);
        assert!(ack.request_payload.is_empty() && ack.ext_ack.is_empty());
        assert_eq!(ack.emit(), raw.to_vec());
    }

    #[test]
    fn refusal_from_the_kernel() {
        // `coalesce-get` on a veth: EOPNOTSUPP, without an extended ack.
        let raw = include_bytes!("../../tests/fixtures/veth-coalesce-get-eopnotsupp.bin");
        let err = ErrorMessage::parse(raw).unwrap();
        assert_eq!(err.error, -95);
        assert_eq!(err.request.kind, 21);
        assert_eq!(err.emit(), raw.to_vec());
    }

    #[test]
    fn refusal_with_extended_ack() {
        let value = ErrorMessage {
            flags: NLM_F_CAPPED | NLM_F_ACK_TLVS,
            seq: 7,
            port: 100,
            error: -34, // -ERANGE
            request: NlMsgHdr { len: 36, kind: 20, flags: NLM_F_REQUEST | NLM_F_ACK, seq: 7, pid: 100 },
            request_payload: Vec::new(),
            ext_ack: ExtAck { msg: Some("integer out of range".into()), offset: Some(28), other: Vec::new() },
        };
        let raw = bytes(&[
            &[72, 0, 0, 0], &[2, 0], &[0x00, 0x03], &[7, 0, 0, 0], &[100, 0, 0, 0], // NLMSG_ERROR, CAPPED|ACK_TLVS
            &(-34i32).to_le_bytes(),                                                 // error
            &[36, 0, 0, 0], &[20, 0], &[5, 0], &[7, 0, 0, 0], &[100, 0, 0, 0],      // the request's header
            &[25, 0, 1, 0], b"integer out of range\0", &[0, 0, 0],                   // NLMSGERR_ATTR_MSG
            &[8, 0, 2, 0], &[28, 0, 0, 0],                                           // NLMSGERR_ATTR_OFFS
        ]);
        assert_eq!(value.emit(), raw);
        assert_eq!(ErrorMessage::parse(&raw).unwrap(), value);
    }

    #[test]
    fn uncapped_refusal_echoes_the_request() {
        let value = ErrorMessage {
            flags: 0,
            seq: 3,
            port: 5,
            error: -22,
            request: NlMsgHdr { len: 22, kind: 20, flags: 5, seq: 3, pid: 5 },
            request_payload: vec![14, 1, 0, 0, 9, 9],
            ext_ack: ExtAck::default(),
        };
        let raw = bytes(&[
            &[44, 0, 0, 0], &[2, 0], &[0, 0], &[3, 0, 0, 0], &[5, 0, 0, 0],
            &(-22i32).to_le_bytes(),
            &[22, 0, 0, 0], &[20, 0], &[5, 0], &[3, 0, 0, 0], &[5, 0, 0, 0],
            &[14, 1, 0, 0, 9, 9], &[0, 0], // the echoed payload, padded
        ]);
        assert_eq!(value.emit(), raw);
        assert_eq!(ErrorMessage::parse(&raw).unwrap(), value);
    }

    #[test]
    fn done_from_the_kernel() {
        let raw = include_bytes!("../../tests/fixtures/veth-napi-get-done.bin");
        let done = DoneMessage::parse(raw).unwrap();
        assert_eq!((done.error, done.flags), (0, NLM_F_MULTI));
        assert_eq!(done.emit(), raw.to_vec());
    }

    #[test]
    fn done_with_an_error_and_extended_ack() {
        let value = DoneMessage {
            flags: NLM_F_MULTI | NLM_F_ACK_TLVS,
            seq: 4,
            port: 6,
            error: -19,
            ext_ack: ExtAck { msg: Some("gone".into()), ..ExtAck::default() },
        };
        let raw = bytes(&[
            &[32, 0, 0, 0], &[3, 0], &[0x02, 0x02], &[4, 0, 0, 0], &[6, 0, 0, 0],
            &(-19i32).to_le_bytes(),
            &[9, 0, 1, 0], b"gone\0", &[0, 0, 0],
        ]);
        assert_eq!(value.emit(), raw);
        assert_eq!(DoneMessage::parse(&raw).unwrap(), value);
    }

    #[test]
    fn a_datagram_splits_into_its_messages() {
        let dump = include_bytes!("../../tests/fixtures/veth-napi-get-dump.bin");
        let done = include_bytes!("../../tests/fixtures/veth-napi-get-done.bin");
        let datagram = [dump.as_slice(), done.as_slice()].concat();
        let kinds: Vec<u16> = messages(&datagram).map(|m| m.unwrap().0.kind).collect();
        assert_eq!(kinds, vec![20, NLMSG_DONE]);
        assert!(messages(&datagram[..30]).next().unwrap().is_err());
    }
}
