//! The "netdev" family's `qstats-get` (Linux 6.8; include/uapi/linux/netdev.h,
//! Documentation/netlink/specs/netdev.yaml, attribute set `qstats`): the
//! statistics a driver keeps per queue (`struct netdev_stat_ops`). It is
//! only a dump; its request names the device (`ifindex`) and the `scope`,
//! and, with scope `queue`, each reply is one queue of the device: its type
//! and index, then the counters the driver reports (net/core/netdev-genl.c,
//! `netdev_nl_stats_queue`). A counter the driver does not keep is absent; a
//! queue for which it keeps none has no reply; a device without
//! `netdev_stat_ops` makes the kernel refuse the dump with EOPNOTSUPP.
//!
//! The command number, `NETDEV_CMD_QSTATS_GET`, is with the family's other
//! commands in [`super::netdev`].

use super::attr::{self, Attrs, RawAttr};
use super::genl::Payload;
use super::netdev::QueueType;
use super::DecodeError;

// Attribute set "qstats" (5 to 7 are unused).
pub const NETDEV_A_QSTATS_IFINDEX: u16 = 1;
/// u32, enum `netdev_queue_type`.
pub const NETDEV_A_QSTATS_QUEUE_TYPE: u16 = 2;
pub const NETDEV_A_QSTATS_QUEUE_ID: u16 = 3;
/// uint, enum `netdev_qstats_scope` (flags); absent or 0: the device's totals.
pub const NETDEV_A_QSTATS_SCOPE: u16 = 4;
// The counters, each a uint (4 bytes, or 8 once past u32).
pub const NETDEV_A_QSTATS_RX_PACKETS: u16 = 8;
pub const NETDEV_A_QSTATS_RX_BYTES: u16 = 9;
pub const NETDEV_A_QSTATS_TX_PACKETS: u16 = 10;
pub const NETDEV_A_QSTATS_TX_BYTES: u16 = 11;
/// Buffers the driver failed to allocate for receiving.
pub const NETDEV_A_QSTATS_RX_ALLOC_FAIL: u16 = 12;
/// Packets the device dropped on receive (any reason).
pub const NETDEV_A_QSTATS_RX_HW_DROPS: u16 = 13;

// enum netdev_qstats_scope
pub const NETDEV_QSTATS_SCOPE_QUEUE: u64 = 1;

/// What a `qstats-get` dump adds up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QstatsScope {
    /// One reply for the whole device (scope 0, sent as no attribute).
    Device,
    /// One reply per queue (`NETDEV_QSTATS_SCOPE_QUEUE`).
    Queue,
    /// A scope this version of irqlab does not know.
    Other(u64),
}

impl QstatsScope {
    pub fn from_raw(value: u64) -> Self {
        match value {
            0 => QstatsScope::Device,
            NETDEV_QSTATS_SCOPE_QUEUE => QstatsScope::Queue,
            n => QstatsScope::Other(n),
        }
    }
}

/// `qstats-get` as a dump of one device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QstatsDump {
    pub ifindex: u32,
    pub scope: QstatsScope,
}

impl Payload for QstatsDump {
    fn emit_attrs(&self, buf: &mut Vec<u8>) {
        attr::put_u32(buf, NETDEV_A_QSTATS_IFINDEX, self.ifindex);
        match self.scope {
            QstatsScope::Device => {}
            QstatsScope::Queue => attr::put_uint(buf, NETDEV_A_QSTATS_SCOPE, NETDEV_QSTATS_SCOPE_QUEUE),
            QstatsScope::Other(n) => attr::put_uint(buf, NETDEV_A_QSTATS_SCOPE, n),
        }
    }

    fn parse_attrs(attrs: &[u8]) -> Result<Self, DecodeError> {
        let (mut ifindex, mut scope) = (None, QstatsScope::Device);
        for a in Attrs::new(attrs) {
            let a = a?;
            match a.kind {
                NETDEV_A_QSTATS_IFINDEX => ifindex = Some(a.u32()?),
                NETDEV_A_QSTATS_SCOPE => scope = QstatsScope::from_raw(a.uint()?),
                _ => {}
            }
        }
        let ifindex = ifindex.ok_or(DecodeError::Missing { what: "qstats-get request", attr: "NETDEV_A_QSTATS_IFINDEX" })?;
        Ok(QstatsDump { ifindex, scope })
    }
}

/// One queue's counters, as a `qstats-get` dump with scope `queue` reports
/// them. A counter is `None` when the driver does not keep it; an RX queue
/// has no TX counters and the reverse. (A dump with scope `device` answers
/// without queue type and index: not modelled here.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Qstats {
    pub ifindex: u32,
    pub kind: QueueType,
    /// Index among the device's queues of the same type.
    pub id: u32,
    pub rx_packets: Option<u64>,
    pub rx_bytes: Option<u64>,
    pub rx_alloc_fail: Option<u64>,
    pub rx_hw_drops: Option<u64>,
    pub tx_packets: Option<u64>,
    pub tx_bytes: Option<u64>,
    /// The counters not modelled here (checksum, GRO/GSO, stop/wake, ...),
    /// kept in order.
    pub other: Vec<RawAttr>,
}

impl Payload for Qstats {
    // In the kernel's order (`netdev_nl_stats_queue`, then
    // `netdev_nl_stats_write_rx` or `_tx`), so that a reply emits back to
    // the same bytes.
    fn emit_attrs(&self, buf: &mut Vec<u8>) {
        attr::put_u32(buf, NETDEV_A_QSTATS_IFINDEX, self.ifindex);
        attr::put_u32(buf, NETDEV_A_QSTATS_QUEUE_TYPE, self.kind.to_raw());
        attr::put_u32(buf, NETDEV_A_QSTATS_QUEUE_ID, self.id);
        for (kind, value) in [
            (NETDEV_A_QSTATS_RX_PACKETS, self.rx_packets),
            (NETDEV_A_QSTATS_RX_BYTES, self.rx_bytes),
            (NETDEV_A_QSTATS_RX_ALLOC_FAIL, self.rx_alloc_fail),
            (NETDEV_A_QSTATS_RX_HW_DROPS, self.rx_hw_drops),
            (NETDEV_A_QSTATS_TX_PACKETS, self.tx_packets),
            (NETDEV_A_QSTATS_TX_BYTES, self.tx_bytes),
        ] {
            if let Some(value) = value {
                attr::put_uint(buf, kind, value);
            }
        }
        for a in &self.other {
            a.emit(buf);
        }
    }

    fn parse_attrs(attrs: &[u8]) -> Result<Self, DecodeError> {
        let (mut ifindex, mut kind, mut id) = (None, None, None);
        let mut stats = Qstats {
            ifindex: 0,
            kind: QueueType::Rx,
            id: 0,
            rx_packets: None,
            rx_bytes: None,
            rx_alloc_fail: None,
            rx_hw_drops: None,
            tx_packets: None,
            tx_bytes: None,
            other: Vec::new(),
        };
        for a in Attrs::new(attrs) {
            let a = a?;
            match a.kind {
                NETDEV_A_QSTATS_IFINDEX => ifindex = Some(a.u32()?),
                NETDEV_A_QSTATS_QUEUE_TYPE => kind = Some(QueueType::from_raw(a.u32()?)),
                NETDEV_A_QSTATS_QUEUE_ID => id = Some(a.u32()?),
                NETDEV_A_QSTATS_RX_PACKETS => stats.rx_packets = Some(a.uint()?),
                NETDEV_A_QSTATS_RX_BYTES => stats.rx_bytes = Some(a.uint()?),
                NETDEV_A_QSTATS_RX_ALLOC_FAIL => stats.rx_alloc_fail = Some(a.uint()?),
                NETDEV_A_QSTATS_RX_HW_DROPS => stats.rx_hw_drops = Some(a.uint()?),
                NETDEV_A_QSTATS_TX_PACKETS => stats.tx_packets = Some(a.uint()?),
                NETDEV_A_QSTATS_TX_BYTES => stats.tx_bytes = Some(a.uint()?),
                _ => stats.other.push(a.to_raw()),
            }
        }
        let missing = |attr| DecodeError::Missing { what: "qstats-get reply", attr };
        stats.ifindex = ifindex.ok_or_else(|| missing("NETDEV_A_QSTATS_IFINDEX"))?;
        stats.kind = kind.ok_or_else(|| missing("NETDEV_A_QSTATS_QUEUE_TYPE"))?;
        stats.id = id.ok_or_else(|| missing("NETDEV_A_QSTATS_QUEUE_ID"))?;
        Ok(stats)
    }
}

#[cfg(all(test, target_endian = "little"))]
mod golden {
    use super::*;
    use crate::netlink::genl::{assert_golden, bytes, GenlMessage};
    use crate::netlink::netdev::{NETDEV_CMD_QSTATS_GET, NETDEV_FAMILY_VERSION};

    const NETDEV: u16 = 20; // the family id this machine's kernel gave "netdev"

    fn msg<P>(flags: u16, payload: P) -> GenlMessage<P> {
        GenlMessage { family: NETDEV, flags, seq: 5, port: 12345, cmd: NETDEV_CMD_QSTATS_GET, version: NETDEV_FAMILY_VERSION, payload }
    }

    /// nlmsghdr of a message to/from family 20 with seq 5 and port 12345.
    fn head(len: u8, flags: [u8; 2]) -> Vec<u8> {
        bytes(&[&[len, 0, 0, 0], &[20, 0], &flags, &[5, 0, 0, 0], &[0x39, 0x30, 0, 0]])
    }

    fn rx_queue() -> Qstats {
        Qstats {
            ifindex: 4,
            kind: QueueType::Rx,
            id: 1,
            rx_packets: Some(5),
            rx_bytes: Some(5_000_000_000), // over u32: an 8-byte uint
            rx_alloc_fail: Some(0),
            rx_hw_drops: Some(2),
            tx_packets: None,
            tx_bytes: None,
            other: Vec::new(),
        }
    }

    #[test]
    fn qstats_get_dump_per_queue() {
        let value = msg(0x0301, QstatsDump { ifindex: 3, scope: QstatsScope::Queue });
        let raw = bytes(&[
            &head(36, [0x01, 0x03]),      // NLM_F_REQUEST | NLM_F_DUMP
            &[12, 1, 0, 0],               // NETDEV_CMD_QSTATS_GET, version 1
            &[8, 0, 1, 0], &[3, 0, 0, 0], // IFINDEX
            &[8, 0, 4, 0], &[1, 0, 0, 0], // SCOPE: queue (a uint, 4 bytes)
        ]);
        assert_golden(&value, &raw);
    }

    #[test]
    fn qstats_get_dump_of_the_device_totals_sends_no_scope() {
        let value = msg(0x0301, QstatsDump { ifindex: 3, scope: QstatsScope::Device });
        assert_golden(&value, &bytes(&[&head(28, [0x01, 0x03]), &[12, 1, 0, 0], &[8, 0, 1, 0], &[3, 0, 0, 0]]));
        let other = msg(0x0301, QstatsDump { ifindex: 3, scope: QstatsScope::Other(2) });
        assert_golden(&other, &bytes(&[&head(36, [0x01, 0x03]), &[12, 1, 0, 0], &[8, 0, 1, 0], &[3, 0, 0, 0], &[8, 0, 4, 0], &[2, 0, 0, 0]]));
    }

    #[test]
    fn rx_queue_reply() {
        let value = msg(0, rx_queue());
        let raw = bytes(&[
            &head(80, [0, 0]), &[12, 1, 0, 0],
            &[8, 0, 1, 0], &[4, 0, 0, 0],                             // IFINDEX
            &[8, 0, 2, 0], &[0, 0, 0, 0],                             // QUEUE_TYPE: rx
            &[8, 0, 3, 0], &[1, 0, 0, 0],                             // QUEUE_ID
            &[8, 0, 8, 0], &[5, 0, 0, 0],                             // RX_PACKETS
            &[12, 0, 9, 0], &[0x00, 0xf2, 0x05, 0x2a, 0x01, 0, 0, 0], // RX_BYTES 5e9
            &[8, 0, 12, 0], &[0, 0, 0, 0],                            // RX_ALLOC_FAIL
            &[8, 0, 13, 0], &[2, 0, 0, 0],                            // RX_HW_DROPS
        ]);
        assert_golden(&value, &raw);
    }

    #[test]
    fn tx_queue_reply() {
        let value = msg(
            0,
            Qstats {
                ifindex: 4,
                kind: QueueType::Tx,
                id: 0,
                rx_packets: None,
                rx_bytes: None,
                rx_alloc_fail: None,
                rx_hw_drops: None,
                tx_packets: Some(7),
                tx_bytes: Some(700),
                other: vec![RawAttr { kind: 33, payload: vec![3, 0, 0, 0] }], // TX_STOP, not modelled
            },
        );
        let raw = bytes(&[
            &head(68, [0, 0]), &[12, 1, 0, 0],
            &[8, 0, 1, 0], &[4, 0, 0, 0],        // IFINDEX
            &[8, 0, 2, 0], &[1, 0, 0, 0],        // QUEUE_TYPE: tx
            &[8, 0, 3, 0], &[0, 0, 0, 0],        // QUEUE_ID
            &[8, 0, 10, 0], &[7, 0, 0, 0],       // TX_PACKETS
            &[8, 0, 11, 0], &[0xbc, 0x02, 0, 0], // TX_BYTES 700
            &[8, 0, 33, 0], &[3, 0, 0, 0],       // TX_STOP (33), kept as it came
        ]);
        assert_golden(&value, &raw);
    }

    /// An attribute irqlab does not know (a newer kernel's counter, here
    /// between two it knows) is passed over: the counters around it are
    /// read, and it is kept aside rather than taken for one of them.
    #[test]
    fn an_unknown_attribute_is_skipped() {
        let raw = bytes(&[
            &head(96, [0, 0]), &[12, 1, 0, 0],
            &[8, 0, 1, 0], &[4, 0, 0, 0],
            &[8, 0, 2, 0], &[0, 0, 0, 0],
            &[8, 0, 3, 0], &[1, 0, 0, 0],
            &[8, 0, 8, 0], &[5, 0, 0, 0],                             // RX_PACKETS
            &[16, 0, 99, 0], &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], // type 99: unknown, 12 bytes
            &[12, 0, 9, 0], &[0x00, 0xf2, 0x05, 0x2a, 0x01, 0, 0, 0], // RX_BYTES
            &[8, 0, 12, 0], &[0, 0, 0, 0],                            // RX_ALLOC_FAIL
            &[8, 0, 13, 0], &[2, 0, 0, 0],                            // RX_HW_DROPS
        ]);
        let parsed = GenlMessage::<Qstats>::parse(&raw, NETDEV).unwrap();
        let unknown = RawAttr { kind: 99, payload: (1..=12).collect() };
        assert_eq!(parsed.payload, Qstats { other: vec![unknown], ..rx_queue() });
    }

    #[test]
    fn a_reply_without_its_queue_type_or_id_is_an_error() {
        // What a dump with scope `device` answers: totals, no queue.
        let raw = bytes(&[&head(36, [0, 0]), &[12, 1, 0, 0], &[8, 0, 1, 0], &[4, 0, 0, 0], &[8, 0, 8, 0], &[5, 0, 0, 0]]);
        let err = GenlMessage::<Qstats>::parse(&raw, NETDEV).unwrap_err();
        assert_eq!(err.to_string(), "the qstats-get reply lacks its required attribute NETDEV_A_QSTATS_QUEUE_TYPE");
        let raw = bytes(&[&head(36, [0, 0]), &[12, 1, 0, 0], &[8, 0, 1, 0], &[4, 0, 0, 0], &[8, 0, 2, 0], &[1, 0, 0, 0]]);
        let err = GenlMessage::<Qstats>::parse(&raw, NETDEV).unwrap_err();
        assert_eq!(err.to_string(), "the qstats-get reply lacks its required attribute NETDEV_A_QSTATS_QUEUE_ID");
    }

    /// A veth's answer (Linux 6.18; `lo` answers the same): veth has no
    /// `netdev_stat_ops`, so the dump ends at once in a DONE carrying
    /// EOPNOTSUPP, its extended ack pointing at the request's IFINDEX
    /// (offset 20: past the nlmsghdr and the genlmsghdr).
    #[test]
    fn refusal_from_the_kernel_for_a_veth() {
        use crate::netlink::message::{DoneMessage, NLM_F_ACK_TLVS, NLM_F_MULTI};
        let raw = include_bytes!("../../tests/fixtures/veth-qstats-get-eopnotsupp.bin");
        let done = DoneMessage::parse(raw).unwrap();
        assert_eq!((done.error, done.flags), (-libc::EOPNOTSUPP, NLM_F_MULTI | NLM_F_ACK_TLVS));
        assert_eq!((done.ext_ack.msg.as_deref(), done.ext_ack.offset), (None, Some(20)));
        assert_eq!(done.emit(), raw.to_vec());
    }

    #[test]
    fn a_counter_of_another_width_is_an_error() {
        let raw = bytes(&[
            &head(44, [0, 0]), &[12, 1, 0, 0],
            &[8, 0, 1, 0], &[4, 0, 0, 0], &[8, 0, 2, 0], &[0, 0, 0, 0], &[6, 0, 8, 0], &[5, 0, 0, 0], // RX_PACKETS of 2 bytes
        ]);
        let err = GenlMessage::<Qstats>::parse(&raw, NETDEV).unwrap_err();
        assert_eq!(err, DecodeError::AttrLength { kind: NETDEV_A_QSTATS_RX_PACKETS, len: 2, expected: "uint (4 or 8 bytes)" });
    }
}
