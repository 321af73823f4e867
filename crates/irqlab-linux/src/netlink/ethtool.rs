//! The "ethtool" generic netlink family, coalescing only
//! (include/uapi/linux/ethtool_netlink_generated.h,
//! Documentation/netlink/specs/ethtool.yaml, net/ethtool/coalesce.c).
//!
//! Every ethtool request starts with a header nest naming the device. A
//! `coalesce-get` reply carries only the parameters the driver supports
//! (`coalesce_put_u32` skips the others), so a parameter absent from the
//! reply is one the device cannot set; a driver without coalescing at all
//! answers `EOPNOTSUPP`.

use super::attr::{self, Attrs, RawAttr};
use super::genl::Payload;
use super::DecodeError;

pub const ETHTOOL_FAMILY_NAME: &str = "ethtool";
pub const ETHTOOL_FAMILY_VERSION: u8 = 1;

// Messages from user space (`ETHTOOL_MSG_*` user enum).
pub const ETHTOOL_MSG_COALESCE_GET: u8 = 19;
pub const ETHTOOL_MSG_COALESCE_SET: u8 = 20;
// Messages from the kernel (`ETHTOOL_MSG_*` kernel enum).
pub const ETHTOOL_MSG_COALESCE_GET_REPLY: u8 = 20;
pub const ETHTOOL_MSG_COALESCE_NTF: u8 = 21;

// Request/reply header nest.
pub const ETHTOOL_A_HEADER_DEV_INDEX: u16 = 1;
pub const ETHTOOL_A_HEADER_DEV_NAME: u16 = 2;
pub const ETHTOOL_A_HEADER_FLAGS: u16 = 3;
pub const ETHTOOL_A_HEADER_PHY_INDEX: u16 = 4;

// Attribute set "coalesce": u32 unless marked u8 (a boolean).
pub const ETHTOOL_A_COALESCE_HEADER: u16 = 1;
pub const ETHTOOL_A_COALESCE_RX_USECS: u16 = 2;
pub const ETHTOOL_A_COALESCE_RX_MAX_FRAMES: u16 = 3;
pub const ETHTOOL_A_COALESCE_RX_USECS_IRQ: u16 = 4;
pub const ETHTOOL_A_COALESCE_RX_MAX_FRAMES_IRQ: u16 = 5;
pub const ETHTOOL_A_COALESCE_TX_USECS: u16 = 6;
pub const ETHTOOL_A_COALESCE_TX_MAX_FRAMES: u16 = 7;
pub const ETHTOOL_A_COALESCE_TX_USECS_IRQ: u16 = 8;
pub const ETHTOOL_A_COALESCE_TX_MAX_FRAMES_IRQ: u16 = 9;
pub const ETHTOOL_A_COALESCE_STATS_BLOCK_USECS: u16 = 10;
/// u8.
pub const ETHTOOL_A_COALESCE_USE_ADAPTIVE_RX: u16 = 11;
/// u8.
pub const ETHTOOL_A_COALESCE_USE_ADAPTIVE_TX: u16 = 12;
pub const ETHTOOL_A_COALESCE_PKT_RATE_LOW: u16 = 13;
pub const ETHTOOL_A_COALESCE_RX_USECS_LOW: u16 = 14;
pub const ETHTOOL_A_COALESCE_RX_MAX_FRAMES_LOW: u16 = 15;
pub const ETHTOOL_A_COALESCE_TX_USECS_LOW: u16 = 16;
pub const ETHTOOL_A_COALESCE_TX_MAX_FRAMES_LOW: u16 = 17;
pub const ETHTOOL_A_COALESCE_PKT_RATE_HIGH: u16 = 18;
pub const ETHTOOL_A_COALESCE_RX_USECS_HIGH: u16 = 19;
pub const ETHTOOL_A_COALESCE_RX_MAX_FRAMES_HIGH: u16 = 20;
pub const ETHTOOL_A_COALESCE_TX_USECS_HIGH: u16 = 21;
pub const ETHTOOL_A_COALESCE_TX_MAX_FRAMES_HIGH: u16 = 22;
pub const ETHTOOL_A_COALESCE_RATE_SAMPLE_INTERVAL: u16 = 23;
/// u8.
pub const ETHTOOL_A_COALESCE_USE_CQE_MODE_TX: u16 = 24;
/// u8.
pub const ETHTOOL_A_COALESCE_USE_CQE_MODE_RX: u16 = 25;
pub const ETHTOOL_A_COALESCE_TX_AGGR_MAX_BYTES: u16 = 26;
pub const ETHTOOL_A_COALESCE_TX_AGGR_MAX_FRAMES: u16 = 27;
pub const ETHTOOL_A_COALESCE_TX_AGGR_TIME_USECS: u16 = 28;
/// Nest: the DIM profile.
pub const ETHTOOL_A_COALESCE_RX_PROFILE: u16 = 29;
/// Nest: the DIM profile.
pub const ETHTOOL_A_COALESCE_TX_PROFILE: u16 = 30;

/// The request/reply header: which device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub dev_index: Option<u32>,
    pub dev_name: Option<String>,
    /// `ETHTOOL_FLAG_*`.
    pub flags: Option<u32>,
    pub other: Vec<RawAttr>,
}

impl Header {
    /// A request header naming the device by ifindex (names are ambiguous
    /// across namespaces and renames; the index is what was resolved).
    pub fn index(ifindex: u32) -> Self {
        Header { dev_index: Some(ifindex), ..Header::default() }
    }

    fn emit(&self, buf: &mut Vec<u8>) {
        let start = attr::nest_start(buf, ETHTOOL_A_COALESCE_HEADER);
        if let Some(index) = self.dev_index {
            attr::put_u32(buf, ETHTOOL_A_HEADER_DEV_INDEX, index);
        }
        if let Some(name) = &self.dev_name {
            attr::put_str(buf, ETHTOOL_A_HEADER_DEV_NAME, name);
        }
        if let Some(flags) = self.flags {
            attr::put_u32(buf, ETHTOOL_A_HEADER_FLAGS, flags);
        }
        for a in &self.other {
            a.emit(buf);
        }
        attr::nest_end(buf, start);
    }

    fn parse(nest: attr::Attr<'_>) -> Result<Self, DecodeError> {
        let mut header = Header::default();
        for a in nest.nested() {
            let a = a?;
            match a.kind {
                ETHTOOL_A_HEADER_DEV_INDEX => header.dev_index = Some(a.u32()?),
                ETHTOOL_A_HEADER_DEV_NAME => header.dev_name = Some(a.string()?),
                ETHTOOL_A_HEADER_FLAGS => header.flags = Some(a.u32()?),
                _ => header.other.push(a.to_raw()),
            }
        }
        Ok(header)
    }
}

/// Coalescing parameters (ethtool `-C` names in the comments). `None` means
/// "not reported" in a reply (the device does not support it) and "leave
/// unchanged" in a set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coalesce {
    /// `rx-usecs`.
    pub rx_usecs: Option<u32>,
    /// `rx-frames`.
    pub rx_max_frames: Option<u32>,
    /// `tx-usecs`.
    pub tx_usecs: Option<u32>,
    /// `tx-frames`.
    pub tx_max_frames: Option<u32>,
    /// `adaptive-rx`.
    pub use_adaptive_rx: Option<bool>,
    /// `adaptive-tx`.
    pub use_adaptive_tx: Option<bool>,
    /// `cqe-mode-tx`.
    pub use_cqe_mode_tx: Option<bool>,
    /// `cqe-mode-rx`.
    pub use_cqe_mode_rx: Option<bool>,
}

impl Coalesce {
    /// True when nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == Coalesce::default()
    }

    /// The set parameters as attributes, each tagged with its type.
    fn to_attrs(&self) -> Vec<RawAttr> {
        let mut out = Vec::new();
        let mut u32_attr = |kind, value: Option<u32>| {
            if let Some(v) = value {
                out.push(RawAttr { kind, payload: v.to_ne_bytes().to_vec() });
            }
        };
        u32_attr(ETHTOOL_A_COALESCE_RX_USECS, self.rx_usecs);
        u32_attr(ETHTOOL_A_COALESCE_RX_MAX_FRAMES, self.rx_max_frames);
        u32_attr(ETHTOOL_A_COALESCE_TX_USECS, self.tx_usecs);
        u32_attr(ETHTOOL_A_COALESCE_TX_MAX_FRAMES, self.tx_max_frames);
        let mut flag = |kind, value: Option<bool>| {
            if let Some(v) = value {
                out.push(RawAttr { kind, payload: vec![u8::from(v)] });
            }
        };
        flag(ETHTOOL_A_COALESCE_USE_ADAPTIVE_RX, self.use_adaptive_rx);
        flag(ETHTOOL_A_COALESCE_USE_ADAPTIVE_TX, self.use_adaptive_tx);
        flag(ETHTOOL_A_COALESCE_USE_CQE_MODE_TX, self.use_cqe_mode_tx);
        flag(ETHTOOL_A_COALESCE_USE_CQE_MODE_RX, self.use_cqe_mode_rx);
        out
    }

    /// Take `a` if it is a modelled parameter; false if it is not.
    fn take(&mut self, a: &attr::Attr<'_>) -> Result<bool, DecodeError> {
        match a.kind {
            ETHTOOL_A_COALESCE_RX_USECS => self.rx_usecs = Some(a.u32()?),
            ETHTOOL_A_COALESCE_RX_MAX_FRAMES => self.rx_max_frames = Some(a.u32()?),
            ETHTOOL_A_COALESCE_TX_USECS => self.tx_usecs = Some(a.u32()?),
            ETHTOOL_A_COALESCE_TX_MAX_FRAMES => self.tx_max_frames = Some(a.u32()?),
            ETHTOOL_A_COALESCE_USE_ADAPTIVE_RX => self.use_adaptive_rx = Some(a.u8()? != 0),
            ETHTOOL_A_COALESCE_USE_ADAPTIVE_TX => self.use_adaptive_tx = Some(a.u8()? != 0),
            ETHTOOL_A_COALESCE_USE_CQE_MODE_TX => self.use_cqe_mode_tx = Some(a.u8()? != 0),
            ETHTOOL_A_COALESCE_USE_CQE_MODE_RX => self.use_cqe_mode_rx = Some(a.u8()? != 0),
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// Emit the header, then the parameters and the kept attributes in
/// increasing type order, which is the order the kernel writes them in
/// (`coalesce_fill_reply`).
fn emit_coalesce(buf: &mut Vec<u8>, header: &Header, params: &Coalesce, other: &[RawAttr]) {
    header.emit(buf);
    let mut attrs = params.to_attrs();
    attrs.extend(other.iter().cloned());
    attrs.sort_by_key(|a| a.kind & attr::NLA_TYPE_MASK);
    for a in &attrs {
        a.emit(buf);
    }
}

fn parse_coalesce(what: &'static str, attrs: &[u8]) -> Result<(Header, Coalesce, Vec<RawAttr>), DecodeError> {
    let mut header = None;
    let mut params = Coalesce::default();
    let mut other = Vec::new();
    for a in Attrs::new(attrs) {
        let a = a?;
        if a.kind == ETHTOOL_A_COALESCE_HEADER {
            header = Some(Header::parse(a)?);
        } else if !params.take(&a)? {
            other.push(a.to_raw());
        }
    }
    let header = header.ok_or(DecodeError::Missing { what, attr: "ETHTOOL_A_COALESCE_HEADER" })?;
    Ok((header, params, other))
}

/// ethtool's `-C` name of coalescing attribute `kind` (`ETHTOOL_A_COALESCE_*`).
pub fn coalesce_param_name(kind: u16) -> Option<&'static str> {
    Some(match kind & attr::NLA_TYPE_MASK {
        ETHTOOL_A_COALESCE_RX_USECS => "rx-usecs",
        ETHTOOL_A_COALESCE_RX_MAX_FRAMES => "rx-frames",
        ETHTOOL_A_COALESCE_RX_USECS_IRQ => "rx-usecs-irq",
        ETHTOOL_A_COALESCE_RX_MAX_FRAMES_IRQ => "rx-frames-irq",
        ETHTOOL_A_COALESCE_TX_USECS => "tx-usecs",
        ETHTOOL_A_COALESCE_TX_MAX_FRAMES => "tx-frames",
        ETHTOOL_A_COALESCE_TX_USECS_IRQ => "tx-usecs-irq",
        ETHTOOL_A_COALESCE_TX_MAX_FRAMES_IRQ => "tx-frames-irq",
        ETHTOOL_A_COALESCE_STATS_BLOCK_USECS => "stats-block-usecs",
        ETHTOOL_A_COALESCE_USE_ADAPTIVE_RX => "adaptive-rx",
        ETHTOOL_A_COALESCE_USE_ADAPTIVE_TX => "adaptive-tx",
        ETHTOOL_A_COALESCE_PKT_RATE_LOW => "pkt-rate-low",
        ETHTOOL_A_COALESCE_RX_USECS_LOW => "rx-usecs-low",
        ETHTOOL_A_COALESCE_RX_MAX_FRAMES_LOW => "rx-frames-low",
        ETHTOOL_A_COALESCE_TX_USECS_LOW => "tx-usecs-low",
        ETHTOOL_A_COALESCE_TX_MAX_FRAMES_LOW => "tx-frames-low",
        ETHTOOL_A_COALESCE_PKT_RATE_HIGH => "pkt-rate-high",
        ETHTOOL_A_COALESCE_RX_USECS_HIGH => "rx-usecs-high",
        ETHTOOL_A_COALESCE_RX_MAX_FRAMES_HIGH => "rx-frames-high",
        ETHTOOL_A_COALESCE_TX_USECS_HIGH => "tx-usecs-high",
        ETHTOOL_A_COALESCE_TX_MAX_FRAMES_HIGH => "tx-frames-high",
        ETHTOOL_A_COALESCE_RATE_SAMPLE_INTERVAL => "sample-interval",
        ETHTOOL_A_COALESCE_USE_CQE_MODE_TX => "cqe-mode-tx",
        ETHTOOL_A_COALESCE_USE_CQE_MODE_RX => "cqe-mode-rx",
        ETHTOOL_A_COALESCE_TX_AGGR_MAX_BYTES => "tx-aggr-max-bytes",
        ETHTOOL_A_COALESCE_TX_AGGR_MAX_FRAMES => "tx-aggr-max-frames",
        ETHTOOL_A_COALESCE_TX_AGGR_TIME_USECS => "tx-aggr-time-usecs",
        ETHTOOL_A_COALESCE_RX_PROFILE => "rx-profile",
        ETHTOOL_A_COALESCE_TX_PROFILE => "tx-profile",
        _ => return None,
    })
}

/// `coalesce-get` (a do request).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoalesceGet {
    pub header: Header,
}

impl Payload for CoalesceGet {
    fn emit_attrs(&self, buf: &mut Vec<u8>) {
        self.header.emit(buf);
    }

    fn parse_attrs(attrs: &[u8]) -> Result<Self, DecodeError> {
        let (header, _, _) = parse_coalesce("coalesce-get request", attrs)?;
        Ok(CoalesceGet { header })
    }
}

/// The reply to [`CoalesceGet`]: the parameters the device supports, with
/// their current values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoalesceReply {
    pub header: Header,
    pub params: Coalesce,
    /// Reported parameters not modelled in [`Coalesce`] (and DIM profiles).
    pub other: Vec<RawAttr>,
}

impl CoalesceReply {
    /// The `-C` names of the parameters the reply carries, in attribute
    /// order. `coalesce_fill_reply` leaves out a parameter that is zero and
    /// not in the driver's `supported_coalesce_params`, so these are the
    /// ones the driver accepts (and any it does not but holds non-zero).
    pub fn reported(&self) -> Vec<&'static str> {
        let mut kinds: Vec<u16> = self.params.to_attrs().iter().map(|a| a.kind).collect();
        kinds.extend(self.other.iter().map(|a| a.kind & attr::NLA_TYPE_MASK));
        kinds.sort_unstable();
        kinds.dedup();
        kinds.into_iter().filter_map(coalesce_param_name).collect()
    }
}

impl Payload for CoalesceReply {
    fn emit_attrs(&self, buf: &mut Vec<u8>) {
        emit_coalesce(buf, &self.header, &self.params, &self.other);
    }

    fn parse_attrs(attrs: &[u8]) -> Result<Self, DecodeError> {
        let (header, params, other) = parse_coalesce("coalesce-get reply", attrs)?;
        Ok(CoalesceReply { header, params, other })
    }
}

/// `coalesce-set`: change the parameters that are `Some`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoalesceSet {
    pub header: Header,
    pub params: Coalesce,
}

impl Payload for CoalesceSet {
    fn emit_attrs(&self, buf: &mut Vec<u8>) {
        emit_coalesce(buf, &self.header, &self.params, &[]);
    }

    fn parse_attrs(attrs: &[u8]) -> Result<Self, DecodeError> {
        let (header, params, _) = parse_coalesce("coalesce-set request", attrs)?;
        Ok(CoalesceSet { header, params })
    }
}

#[cfg(all(test, target_endian = "little"))]
mod golden {
    use super::*;
    use crate::netlink::attr::NLA_F_NESTED;
    use crate::netlink::genl::{assert_golden, bytes, GenlMessage};

    const ETHTOOL: u16 = 21; // the family id this machine's kernel gave "ethtool"

    fn msg<P>(flags: u16, cmd: u8, payload: P) -> GenlMessage<P> {
        GenlMessage { family: ETHTOOL, flags, seq: 2, port: 77, cmd, version: ETHTOOL_FAMILY_VERSION, payload }
    }

    fn head(len: u8, flags: u8) -> Vec<u8> {
        bytes(&[&[len, 0, 0, 0], &[21, 0], &[flags, 0], &[2, 0, 0, 0], &[77, 0, 0, 0]])
    }

    #[test]
    fn coalesce_get_request_by_index() {
        let value = msg(0x05, ETHTOOL_MSG_COALESCE_GET, CoalesceGet { header: Header::index(3) });
        let raw = bytes(&[
            &head(32, 0x05), &[19, 1, 0, 0],     // ETHTOOL_MSG_COALESCE_GET
            &[12, 0, 1, 0x80],                   // ETHTOOL_A_COALESCE_HEADER | NLA_F_NESTED
            &[8, 0, 1, 0], &[3, 0, 0, 0],        //   ETHTOOL_A_HEADER_DEV_INDEX
        ]);
        assert_golden(&value, &raw);
    }

    #[test]
    fn coalesce_get_request_by_name() {
        let header = Header { dev_name: Some("veth0".into()), ..Header::default() };
        let value = msg(0x05, ETHTOOL_MSG_COALESCE_GET, CoalesceGet { header });
        let raw = bytes(&[&head(36, 0x05), &[19, 1, 0, 0], &[16, 0, 1, 0x80], &[10, 0, 2, 0], b"veth0\0", &[0, 0]]);
        assert_golden(&value, &raw);
    }

    #[test]
    fn coalesce_set_request() {
        let params = Coalesce { use_adaptive_rx: Some(true), rx_usecs: Some(8), rx_max_frames: Some(128), ..Coalesce::default() };
        let value = msg(0x05, ETHTOOL_MSG_COALESCE_SET, CoalesceSet { header: Header::index(3), params });
        let raw = bytes(&[
            &head(56, 0x05), &[20, 1, 0, 0],      // ETHTOOL_MSG_COALESCE_SET
            &[12, 0, 1, 0x80], &[8, 0, 1, 0], &[3, 0, 0, 0],
            &[8, 0, 2, 0], &[8, 0, 0, 0],         // RX_USECS
            &[8, 0, 3, 0], &[128, 0, 0, 0],       // RX_MAX_FRAMES
            &[5, 0, 11, 0], &[1, 0, 0, 0],        // USE_ADAPTIVE_RX (u8, padded)
        ]);
        assert_golden(&value, &raw);
    }

    /// A real `coalesce-get` reply (virtio_net, Linux 6.18): the header names
    /// the device by index and name; only supported parameters are present
    /// (no adaptive-tx here), so their absence is readable.
    #[test]
    fn coalesce_reply_from_the_kernel() {
        let raw = include_bytes!("../../tests/fixtures/virtio_net-coalesce-get.bin");
        let parsed = GenlMessage::<CoalesceReply>::parse(raw, ETHTOOL).unwrap();
        assert_eq!(parsed.cmd, ETHTOOL_MSG_COALESCE_GET_REPLY);
        assert_eq!(parsed.payload.header, Header { dev_index: Some(4), dev_name: Some("eth0".into()), flags: None, other: Vec::new() });
        assert_eq!(
            parsed.payload.params,
            Coalesce {
                rx_usecs: Some(0),
                rx_max_frames: Some(1),
                tx_usecs: Some(0),
                tx_max_frames: Some(1),
                use_adaptive_rx: Some(false),
                use_adaptive_tx: None,
                use_cqe_mode_tx: None,
                use_cqe_mode_rx: None,
            }
        );
        assert!(parsed.payload.other.is_empty());
        assert_eq!(parsed.emit(), raw.to_vec());
    }

    #[test]
    fn coalesce_reply_keeps_unmodelled_parameters_in_their_place() {
        let value = msg(
            0,
            ETHTOOL_MSG_COALESCE_GET_REPLY,
            CoalesceReply {
                header: Header::index(3),
                params: Coalesce { rx_usecs: Some(8), tx_usecs: Some(16), use_adaptive_rx: Some(true), use_cqe_mode_rx: Some(true), ..Coalesce::default() },
                other: vec![
                    RawAttr { kind: ETHTOOL_A_COALESCE_RX_USECS_IRQ, payload: vec![2, 0, 0, 0] },
                    RawAttr { kind: ETHTOOL_A_COALESCE_RATE_SAMPLE_INTERVAL, payload: vec![0, 0, 0, 0] },
                    RawAttr { kind: ETHTOOL_A_COALESCE_RX_PROFILE, payload: vec![] },
                ],
            },
        );
        let raw = bytes(&[
            &head(84, 0), &[20, 1, 0, 0],                    // ETHTOOL_MSG_COALESCE_GET_REPLY
            &[12, 0, 1, 0x80], &[8, 0, 1, 0], &[3, 0, 0, 0], // header
            &[8, 0, 2, 0], &[8, 0, 0, 0],                    // RX_USECS
            &[8, 0, 4, 0], &[2, 0, 0, 0],                    // RX_USECS_IRQ (kept raw)
            &[8, 0, 6, 0], &[16, 0, 0, 0],                   // TX_USECS
            &[5, 0, 11, 0], &[1, 0, 0, 0],                   // USE_ADAPTIVE_RX
            &[8, 0, 23, 0], &[0, 0, 0, 0],                   // RATE_SAMPLE_INTERVAL (kept raw)
            &[5, 0, 25, 0], &[1, 0, 0, 0],                   // USE_CQE_MODE_RX
            &[4, 0, 29, 0],                                  // RX_PROFILE, an empty nest (kept raw)
        ]);
        assert_golden(&value, &raw);
        assert_eq!(NLA_F_NESTED, 0x8000);
    }

    #[test]
    fn a_reply_without_header_is_an_error() {
        let raw = bytes(&[&head(28, 0), &[20, 1, 0, 0], &[8, 0, 2, 0], &[8, 0, 0, 0]]);
        let err = GenlMessage::<CoalesceReply>::parse(&raw, ETHTOOL).unwrap_err();
        assert_eq!(err.to_string(), "the coalesce-get reply lacks its required attribute ETHTOOL_A_COALESCE_HEADER");
    }

    #[test]
    fn a_reply_reports_the_parameters_it_carries_by_their_ethtool_names() {
        let reply = CoalesceReply {
            header: Header::index(2),
            params: Coalesce { rx_usecs: Some(8), use_adaptive_rx: Some(true), ..Coalesce::default() },
            other: vec![
                RawAttr { kind: ETHTOOL_A_COALESCE_RATE_SAMPLE_INTERVAL, payload: 0u32.to_ne_bytes().to_vec() },
                RawAttr { kind: 99, payload: Vec::new() },
            ],
        };
        assert_eq!(reply.reported(), vec!["rx-usecs", "adaptive-rx", "sample-interval"]);
        assert_eq!(coalesce_param_name(ETHTOOL_A_COALESCE_TX_PROFILE), Some("tx-profile"));
        assert_eq!(coalesce_param_name(ETHTOOL_A_COALESCE_HEADER), None);
    }
}
