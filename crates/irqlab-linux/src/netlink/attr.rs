//! Netlink attributes, `struct nlattr` (include/uapi/linux/netlink.h): a
//! 4-byte header — `nla_len` (u16, header included, padding excluded) and
//! `nla_type` (u16, whose two top bits are flags) — then the payload, padded
//! with zeros to a multiple of 4 bytes (`NLA_ALIGNTO`). Integers are in host
//! byte order: none of the families used here sets `NLA_F_NET_BYTEORDER`.
//!
//! Emitting appends to a `Vec<u8>`; parsing borrows from the received bytes.

use super::DecodeError;

/// The attribute holds attributes (set by `nla_nest_start`).
pub const NLA_F_NESTED: u16 = 1 << 15;
/// The payload is in network byte order.
pub const NLA_F_NET_BYTEORDER: u16 = 1 << 14;
/// The bits of `nla_type` that are the type proper.
pub const NLA_TYPE_MASK: u16 = !(NLA_F_NESTED | NLA_F_NET_BYTEORDER);
pub const NLA_ALIGNTO: usize = 4;
/// `NLA_HDRLEN`: the size of `struct nlattr`, already aligned.
pub const NLA_HDRLEN: usize = 4;

/// `NLA_ALIGN(len)`.
pub const fn nla_align(len: usize) -> usize {
    (len + NLA_ALIGNTO - 1) & !(NLA_ALIGNTO - 1)
}

// -- emitting ---------------------------------------------------------------

/// Append one attribute with `payload`; `kind` may carry flag bits.
pub fn put(buf: &mut Vec<u8>, kind: u16, payload: &[u8]) {
    let len = u16::try_from(NLA_HDRLEN + payload.len()).expect("a netlink attribute holds at most 65531 bytes");
    buf.extend_from_slice(&len.to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(payload);
    pad(buf);
}

pub fn put_u8(buf: &mut Vec<u8>, kind: u16, value: u8) {
    put(buf, kind, &[value]);
}

pub fn put_u16(buf: &mut Vec<u8>, kind: u16, value: u16) {
    put(buf, kind, &value.to_ne_bytes());
}

pub fn put_u32(buf: &mut Vec<u8>, kind: u16, value: u32) {
    put(buf, kind, &value.to_ne_bytes());
}

pub fn put_u64(buf: &mut Vec<u8>, kind: u16, value: u64) {
    put(buf, kind, &value.to_ne_bytes());
}

/// An `NLA_UINT` (a "uint" in the YAML specs): 4 bytes when the value fits in
/// 32 bits, else 8, exactly as the kernel's `nla_put_uint` writes it.
pub fn put_uint(buf: &mut Vec<u8>, kind: u16, value: u64) {
    match u32::try_from(value) {
        Ok(small) => put_u32(buf, kind, small),
        Err(_) => put_u64(buf, kind, value),
    }
}

/// A NUL-terminated string (`nla_put_string`).
pub fn put_str(buf: &mut Vec<u8>, kind: u16, value: &str) {
    let mut payload = Vec::with_capacity(value.len() + 1);
    payload.extend_from_slice(value.as_bytes());
    payload.push(0);
    put(buf, kind, &payload);
}

/// Open a nest (`nla_nest_start`, which sets `NLA_F_NESTED`); returns the
/// offset to give to [`nest_end`] once the inner attributes are appended.
pub fn nest_start(buf: &mut Vec<u8>, kind: u16) -> usize {
    let start = buf.len();
    buf.extend_from_slice(&0u16.to_ne_bytes());
    buf.extend_from_slice(&(kind | NLA_F_NESTED).to_ne_bytes());
    start
}

/// Close the nest opened at `start`, writing its length.
pub fn nest_end(buf: &mut [u8], start: usize) {
    let len = u16::try_from(buf.len() - start).expect("a netlink nest holds at most 65535 bytes");
    buf[start..start + 2].copy_from_slice(&len.to_ne_bytes());
}

fn pad(buf: &mut Vec<u8>) {
    buf.resize(nla_align(buf.len()), 0);
}

/// An attribute kept as it came, for attributes a message does not model (a
/// newer kernel's, or ones irqlab does not use): parsing keeps them so that
/// emitting a parsed message gives back the same bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawAttr {
    /// `nla_type` as received, flag bits included.
    pub kind: u16,
    pub payload: Vec<u8>,
}

impl RawAttr {
    pub fn emit(&self, buf: &mut Vec<u8>) {
        put(buf, self.kind, &self.payload);
    }
}

// -- parsing ----------------------------------------------------------------

/// One attribute borrowed from a received message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attr<'a> {
    /// `nla_type` without the flag bits.
    pub kind: u16,
    /// The flag bits of `nla_type` (`NLA_F_NESTED`, `NLA_F_NET_BYTEORDER`).
    pub flags: u16,
    pub payload: &'a [u8],
}

impl<'a> Attr<'a> {
    pub fn u8(&self) -> Result<u8, DecodeError> {
        Ok(self.fixed::<1>("u8")?[0])
    }

    pub fn u16(&self) -> Result<u16, DecodeError> {
        Ok(u16::from_ne_bytes(self.fixed::<2>("u16")?))
    }

    pub fn u32(&self) -> Result<u32, DecodeError> {
        Ok(u32::from_ne_bytes(self.fixed::<4>("u32")?))
    }

    pub fn u64(&self) -> Result<u64, DecodeError> {
        Ok(u64::from_ne_bytes(self.fixed::<8>("u64")?))
    }

    /// An `NLA_UINT`: 4 or 8 bytes (see [`put_uint`]).
    pub fn uint(&self) -> Result<u64, DecodeError> {
        match self.payload.len() {
            4 => self.u32().map(u64::from),
            8 => self.u64(),
            len => Err(DecodeError::AttrLength { kind: self.kind, len, expected: "uint (4 or 8 bytes)" }),
        }
    }

    /// A string; a terminating NUL (there is one in every kernel string
    /// attribute) and anything after it are dropped.
    pub fn string(&self) -> Result<String, DecodeError> {
        let text = match self.payload.iter().position(|&b| b == 0) {
            Some(end) => &self.payload[..end],
            None => self.payload,
        };
        String::from_utf8(text.to_vec()).map_err(|_| DecodeError::NotUtf8 { kind: self.kind })
    }

    /// The attributes inside a nest.
    pub fn nested(&self) -> Attrs<'a> {
        Attrs::new(self.payload)
    }

    /// The attribute as a [`RawAttr`], flags included.
    pub fn to_raw(&self) -> RawAttr {
        RawAttr { kind: self.kind | self.flags, payload: self.payload.to_vec() }
    }

    fn fixed<const N: usize>(&self, expected: &'static str) -> Result<[u8; N], DecodeError> {
        self.payload
            .try_into()
            .map_err(|_| DecodeError::AttrLength { kind: self.kind, len: self.payload.len(), expected })
    }
}

/// Iterator over the attributes of a buffer (a message's payload or a nest).
#[derive(Clone, Debug)]
pub struct Attrs<'a> {
    rest: &'a [u8],
}

impl<'a> Attrs<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Attrs { rest: buf }
    }
}

impl<'a> Iterator for Attrs<'a> {
    type Item = Result<Attr<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let buf = self.rest;
        if buf.len() < NLA_HDRLEN {
            self.rest = &[];
            return Some(Err(DecodeError::Truncated { what: "netlink attribute header", need: NLA_HDRLEN, have: buf.len() }));
        }
        let len = usize::from(u16::from_ne_bytes([buf[0], buf[1]]));
        let raw_kind = u16::from_ne_bytes([buf[2], buf[3]]);
        if len < NLA_HDRLEN || len > buf.len() {
            self.rest = &[];
            return Some(Err(DecodeError::Truncated { what: "netlink attribute", need: len.max(NLA_HDRLEN), have: buf.len() }));
        }
        // The last attribute of a buffer may lack its padding.
        self.rest = &buf[nla_align(len).min(buf.len())..];
        Some(Ok(Attr {
            kind: raw_kind & NLA_TYPE_MASK,
            flags: raw_kind & !NLA_TYPE_MASK,
            payload: &buf[NLA_HDRLEN..len],
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_padded_to_four_bytes() {
        let mut buf = Vec::new();
        put_u8(&mut buf, 11, 1);
        put_u16(&mut buf, 12, 0x0203);
        assert_eq!(
            buf,
            [[5, 0, 11, 0], [1, 0, 0, 0], [6, 0, 12, 0]].concat().into_iter().chain(0x0203u16.to_ne_bytes()).chain([0, 0]).collect::<Vec<u8>>()
        );
        let parsed: Vec<Attr> = Attrs::new(&buf).collect::<Result<_, _>>().unwrap();
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0].u8(), Ok(1));
        assert_eq!(parsed[1].u16(), Ok(0x0203));
    }

    #[test]
    fn uint_is_four_bytes_when_it_fits_and_eight_otherwise() {
        let mut buf = Vec::new();
        put_uint(&mut buf, 6, 20_000);
        put_uint(&mut buf, 7, 1 << 33);
        assert_eq!(buf.len(), 8 + 12);
        assert_eq!(&buf[0..4], &[8, 0, 6, 0]);
        assert_eq!(&buf[8..12], &[12, 0, 7, 0]);
        let values: Vec<u64> = Attrs::new(&buf).map(|a| a.unwrap().uint().unwrap()).collect();
        assert_eq!(values, vec![20_000, 1 << 33]);
    }

    #[test]
    fn strings_carry_their_nul_and_padding() {
        let mut buf = Vec::new();
        put_str(&mut buf, 2, "netdev");
        assert_eq!(buf, b"\x0b\x00\x02\x00netdev\x00\x00".to_vec());
        let attr = Attrs::new(&buf).next().unwrap().unwrap();
        assert_eq!(attr.string().unwrap(), "netdev");
    }

    #[test]
    fn nests_set_the_nested_flag_and_their_length() {
        let mut buf = Vec::new();
        let start = nest_start(&mut buf, 1);
        put_u32(&mut buf, 1, 7);
        nest_end(&mut buf, start);
        assert_eq!(&buf[0..4], &[12, 0, 1, 0x80]);
        let outer = Attrs::new(&buf).next().unwrap().unwrap();
        assert_eq!((outer.kind, outer.flags), (1, NLA_F_NESTED));
        let inner = outer.nested().next().unwrap().unwrap();
        assert_eq!((inner.kind, inner.u32()), (1, Ok(7)));
    }

    #[test]
    fn a_short_or_overlong_attribute_is_an_error_not_a_panic() {
        assert!(Attrs::new(&[8, 0]).next().unwrap().is_err());
        assert!(Attrs::new(&[9, 0, 1, 0, 0, 0, 0, 0]).next().unwrap().is_err());
        assert!(Attrs::new(&[3, 0, 1, 0]).next().unwrap().is_err());
        let bad_width = [6u8, 0, 1, 0, 1, 2, 0, 0];
        let attr = Attrs::new(&bad_width).next().unwrap().unwrap();
        assert!(attr.u32().is_err() && attr.uint().is_err());
    }
}

/// The first attribute of type `kind` in `attrs`, read as a u32 (`None`
/// when there is none): the whole payload of the one-attribute requests.
pub fn find_u32(attrs: &[u8], kind: u16) -> Result<Option<u32>, DecodeError> {
    for a in Attrs::new(attrs) {
        let a = a?;
        if a.kind == kind {
            return Ok(Some(a.u32()?));
        }
    }
    Ok(None)
}
