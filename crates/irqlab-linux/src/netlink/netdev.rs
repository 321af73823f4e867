//! The "netdev" generic netlink family (include/uapi/linux/netdev.h,
//! Documentation/netlink/specs/netdev.yaml): NAPI instances (`napi-get`,
//! `napi-set`, Linux 6.13+ for the per-NAPI configuration) and the queues
//! they serve (`queue-get`). Per-queue statistics (`qstats-get`) are in
//! [`super::qstats`].

use super::attr::{self, Attrs, RawAttr};
use super::genl::Payload;
use super::DecodeError;

pub const NETDEV_FAMILY_NAME: &str = "netdev";
pub const NETDEV_FAMILY_VERSION: u8 = 1;

// Commands (the enum without a name in netdev.h).
pub const NETDEV_CMD_QUEUE_GET: u8 = 10;
pub const NETDEV_CMD_NAPI_GET: u8 = 11;
/// Linux 6.8; dump only (`netlink::qstats`).
pub const NETDEV_CMD_QSTATS_GET: u8 = 12;
/// Linux 6.13; needs CAP_NET_ADMIN (`admin-perm`).
pub const NETDEV_CMD_NAPI_SET: u8 = 14;

// Attribute set "napi".
pub const NETDEV_A_NAPI_IFINDEX: u16 = 1;
pub const NETDEV_A_NAPI_ID: u16 = 2;
pub const NETDEV_A_NAPI_IRQ: u16 = 3;
/// Present only while the NAPI runs in its own thread.
pub const NETDEV_A_NAPI_PID: u16 = 4;
/// u32 (the kernel caps it at S32_MAX): empty polls before the IRQ is re-armed.
pub const NETDEV_A_NAPI_DEFER_HARD_IRQS: u16 = 5;
/// uint, nanoseconds: the NAPI watchdog timer.
pub const NETDEV_A_NAPI_GRO_FLUSH_TIMEOUT: u16 = 6;
/// uint, nanoseconds (Linux 6.13): how long IRQs stay suspended after epoll found events.
pub const NETDEV_A_NAPI_IRQ_SUSPEND_TIMEOUT: u16 = 7;
/// uint, enum `netdev_napi_threaded` (Linux 6.17).
pub const NETDEV_A_NAPI_THREADED: u16 = 8;

// Attribute set "queue".
pub const NETDEV_A_QUEUE_ID: u16 = 1;
pub const NETDEV_A_QUEUE_IFINDEX: u16 = 2;
pub const NETDEV_A_QUEUE_TYPE: u16 = 3;
pub const NETDEV_A_QUEUE_NAPI_ID: u16 = 4;

// enum netdev_queue_type
pub const NETDEV_QUEUE_TYPE_RX: u32 = 0;
pub const NETDEV_QUEUE_TYPE_TX: u32 = 1;

// enum netdev_napi_threaded
pub const NETDEV_NAPI_THREADED_DISABLED: u32 = 0;
pub const NETDEV_NAPI_THREADED_ENABLED: u32 = 1;

/// Whether a NAPI is polled by its own kernel thread (`threaded`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NapiThreaded {
    Disabled,
    Enabled,
    /// A value this version of irqlab does not know (a newer kernel's mode).
    Other(u32),
}

impl NapiThreaded {
    pub fn from_raw(value: u32) -> Self {
        match value {
            NETDEV_NAPI_THREADED_DISABLED => NapiThreaded::Disabled,
            NETDEV_NAPI_THREADED_ENABLED => NapiThreaded::Enabled,
            n => NapiThreaded::Other(n),
        }
    }

    pub fn to_raw(self) -> u32 {
        match self {
            NapiThreaded::Disabled => NETDEV_NAPI_THREADED_DISABLED,
            NapiThreaded::Enabled => NETDEV_NAPI_THREADED_ENABLED,
            NapiThreaded::Other(n) => n,
        }
    }

    /// The spec's name of the value (`disabled`, `enabled`), or the number.
    pub fn name(self) -> String {
        match self {
            NapiThreaded::Disabled => "disabled".to_string(),
            NapiThreaded::Enabled => "enabled".to_string(),
            NapiThreaded::Other(n) => n.to_string(),
        }
    }
}

/// The type of a queue (`enum netdev_queue_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueType {
    Rx,
    Tx,
    Other(u32),
}

impl QueueType {
    pub fn from_raw(value: u32) -> Self {
        match value {
            NETDEV_QUEUE_TYPE_RX => QueueType::Rx,
            NETDEV_QUEUE_TYPE_TX => QueueType::Tx,
            n => QueueType::Other(n),
        }
    }

    pub fn to_raw(self) -> u32 {
        match self {
            QueueType::Rx => NETDEV_QUEUE_TYPE_RX,
            QueueType::Tx => NETDEV_QUEUE_TYPE_TX,
            QueueType::Other(n) => n,
        }
    }
}

/// `napi-get` as a dump: every NAPI, of one device when `ifindex` is given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NapiDump {
    pub ifindex: Option<u32>,
}

impl Payload for NapiDump {
    fn emit_attrs(&self, buf: &mut Vec<u8>) {
        if let Some(ifindex) = self.ifindex {
            attr::put_u32(buf, NETDEV_A_NAPI_IFINDEX, ifindex);
        }
    }

    fn parse_attrs(attrs: &[u8]) -> Result<Self, DecodeError> {
        Ok(NapiDump { ifindex: attr::find_u32(attrs, NETDEV_A_NAPI_IFINDEX)? })
    }
}

/// `napi-get` as a do: one NAPI, by id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NapiById {
    pub id: u32,
}

impl Payload for NapiById {
    fn emit_attrs(&self, buf: &mut Vec<u8>) {
        attr::put_u32(buf, NETDEV_A_NAPI_ID, self.id);
    }

    fn parse_attrs(attrs: &[u8]) -> Result<Self, DecodeError> {
        let id = attr::find_u32(attrs, NETDEV_A_NAPI_ID)?;
        Ok(NapiById { id: id.ok_or(DecodeError::Missing { what: "napi-get request", attr: "NETDEV_A_NAPI_ID" })? })
    }
}

/// One NAPI instance, as `napi-get` reports it. A knob is `None` when the
/// kernel did not report it: a kernel older than 6.13 has no per-NAPI
/// `defer_hard_irqs`, `gro_flush_timeout` or `irq_suspend_timeout`, one older
/// than 6.17 no `threaded`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Napi {
    pub id: u32,
    pub ifindex: u32,
    /// The interrupt vector; absent for a NAPI without one (veth).
    pub irq: Option<u32>,
    pub threaded: Option<NapiThreaded>,
    /// The NAPI thread's pid, when threaded.
    pub pid: Option<u32>,
    pub defer_hard_irqs: Option<u32>,
    /// Nanoseconds.
    pub irq_suspend_timeout: Option<u64>,
    /// Nanoseconds.
    pub gro_flush_timeout: Option<u64>,
    /// Attributes not modelled here, kept in order.
    pub other: Vec<RawAttr>,
}

impl Payload for Napi {
    // In the kernel's order (`netdev_nl_napi_fill_one`).
    fn emit_attrs(&self, buf: &mut Vec<u8>) {
        attr::put_u32(buf, NETDEV_A_NAPI_ID, self.id);
        attr::put_u32(buf, NETDEV_A_NAPI_IFINDEX, self.ifindex);
        if let Some(irq) = self.irq {
            attr::put_u32(buf, NETDEV_A_NAPI_IRQ, irq);
        }
        if let Some(threaded) = self.threaded {
            attr::put_uint(buf, NETDEV_A_NAPI_THREADED, u64::from(threaded.to_raw()));
        }
        if let Some(pid) = self.pid {
            attr::put_u32(buf, NETDEV_A_NAPI_PID, pid);
        }
        if let Some(defer) = self.defer_hard_irqs {
            attr::put_u32(buf, NETDEV_A_NAPI_DEFER_HARD_IRQS, defer);
        }
        if let Some(ns) = self.irq_suspend_timeout {
            attr::put_uint(buf, NETDEV_A_NAPI_IRQ_SUSPEND_TIMEOUT, ns);
        }
        if let Some(ns) = self.gro_flush_timeout {
            attr::put_uint(buf, NETDEV_A_NAPI_GRO_FLUSH_TIMEOUT, ns);
        }
        for a in &self.other {
            a.emit(buf);
        }
    }

    fn parse_attrs(attrs: &[u8]) -> Result<Self, DecodeError> {
        let (mut id, mut ifindex) = (None, None);
        let mut napi = Napi {
            id: 0,
            ifindex: 0,
            irq: None,
            threaded: None,
            pid: None,
            defer_hard_irqs: None,
            irq_suspend_timeout: None,
            gro_flush_timeout: None,
            other: Vec::new(),
        };
        for a in Attrs::new(attrs) {
            let a = a?;
            match a.kind {
                NETDEV_A_NAPI_ID => id = Some(a.u32()?),
                NETDEV_A_NAPI_IFINDEX => ifindex = Some(a.u32()?),
                NETDEV_A_NAPI_IRQ => napi.irq = Some(a.u32()?),
                NETDEV_A_NAPI_THREADED => napi.threaded = Some(NapiThreaded::from_raw(a.uint()? as u32)),
                NETDEV_A_NAPI_PID => napi.pid = Some(a.u32()?),
                NETDEV_A_NAPI_DEFER_HARD_IRQS => napi.defer_hard_irqs = Some(a.u32()?),
                NETDEV_A_NAPI_IRQ_SUSPEND_TIMEOUT => napi.irq_suspend_timeout = Some(a.uint()?),
                NETDEV_A_NAPI_GRO_FLUSH_TIMEOUT => napi.gro_flush_timeout = Some(a.uint()?),
                _ => napi.other.push(a.to_raw()),
            }
        }
        napi.id = id.ok_or(DecodeError::Missing { what: "napi-get reply", attr: "NETDEV_A_NAPI_ID" })?;
        napi.ifindex = ifindex.ok_or(DecodeError::Missing { what: "napi-get reply", attr: "NETDEV_A_NAPI_IFINDEX" })?;
        Ok(napi)
    }
}

/// `napi-set`: change the given knobs of NAPI `id`, leave the others.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NapiSet {
    pub id: u32,
    pub defer_hard_irqs: Option<u32>,
    /// Nanoseconds.
    pub gro_flush_timeout: Option<u64>,
    /// Nanoseconds.
    pub irq_suspend_timeout: Option<u64>,
    pub threaded: Option<NapiThreaded>,
}

impl NapiSet {
    /// True when the request would change nothing.
    pub fn is_empty(&self) -> bool {
        self.defer_hard_irqs.is_none()
            && self.gro_flush_timeout.is_none()
            && self.irq_suspend_timeout.is_none()
            && self.threaded.is_none()
    }
}

impl Payload for NapiSet {
    fn emit_attrs(&self, buf: &mut Vec<u8>) {
        attr::put_u32(buf, NETDEV_A_NAPI_ID, self.id);
        if let Some(defer) = self.defer_hard_irqs {
            attr::put_u32(buf, NETDEV_A_NAPI_DEFER_HARD_IRQS, defer);
        }
        if let Some(ns) = self.gro_flush_timeout {
            attr::put_uint(buf, NETDEV_A_NAPI_GRO_FLUSH_TIMEOUT, ns);
        }
        if let Some(ns) = self.irq_suspend_timeout {
            attr::put_uint(buf, NETDEV_A_NAPI_IRQ_SUSPEND_TIMEOUT, ns);
        }
        if let Some(threaded) = self.threaded {
            attr::put_uint(buf, NETDEV_A_NAPI_THREADED, u64::from(threaded.to_raw()));
        }
    }

    fn parse_attrs(attrs: &[u8]) -> Result<Self, DecodeError> {
        let mut set = NapiSet::default();
        let mut id = None;
        for a in Attrs::new(attrs) {
            let a = a?;
            match a.kind {
                NETDEV_A_NAPI_ID => id = Some(a.u32()?),
                NETDEV_A_NAPI_DEFER_HARD_IRQS => set.defer_hard_irqs = Some(a.u32()?),
                NETDEV_A_NAPI_GRO_FLUSH_TIMEOUT => set.gro_flush_timeout = Some(a.uint()?),
                NETDEV_A_NAPI_IRQ_SUSPEND_TIMEOUT => set.irq_suspend_timeout = Some(a.uint()?),
                NETDEV_A_NAPI_THREADED => set.threaded = Some(NapiThreaded::from_raw(a.uint()? as u32)),
                _ => {}
            }
        }
        set.id = id.ok_or(DecodeError::Missing { what: "napi-set request", attr: "NETDEV_A_NAPI_ID" })?;
        Ok(set)
    }
}

/// `queue-get` as a dump of one device's queues.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueDump {
    pub ifindex: u32,
}

impl Payload for QueueDump {
    fn emit_attrs(&self, buf: &mut Vec<u8>) {
        attr::put_u32(buf, NETDEV_A_QUEUE_IFINDEX, self.ifindex);
    }

    fn parse_attrs(attrs: &[u8]) -> Result<Self, DecodeError> {
        let ifindex = attr::find_u32(attrs, NETDEV_A_QUEUE_IFINDEX)?;
        Ok(QueueDump {
            ifindex: ifindex.ok_or(DecodeError::Missing { what: "queue-get request", attr: "NETDEV_A_QUEUE_IFINDEX" })?,
        })
    }
}

/// One queue, as `queue-get` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Queue {
    /// Index among the device's queues of the same type.
    pub id: u32,
    pub kind: QueueType,
    pub ifindex: u32,
    /// The NAPI serving the queue; absent when the driver does not say
    /// (`netif_queue_set_napi`).
    pub napi_id: Option<u32>,
    pub other: Vec<RawAttr>,
}

impl Payload for Queue {
    // In the kernel's order (`netdev_nl_queue_fill_one`).
    fn emit_attrs(&self, buf: &mut Vec<u8>) {
        attr::put_u32(buf, NETDEV_A_QUEUE_ID, self.id);
        attr::put_u32(buf, NETDEV_A_QUEUE_TYPE, self.kind.to_raw());
        attr::put_u32(buf, NETDEV_A_QUEUE_IFINDEX, self.ifindex);
        if let Some(napi_id) = self.napi_id {
            attr::put_u32(buf, NETDEV_A_QUEUE_NAPI_ID, napi_id);
        }
        for a in &self.other {
            a.emit(buf);
        }
    }

    fn parse_attrs(attrs: &[u8]) -> Result<Self, DecodeError> {
        let (mut id, mut kind, mut ifindex, mut napi_id) = (None, None, None, None);
        let mut other = Vec::new();
        for a in Attrs::new(attrs) {
            let a = a?;
            match a.kind {
                NETDEV_A_QUEUE_ID => id = Some(a.u32()?),
                NETDEV_A_QUEUE_TYPE => kind = Some(QueueType::from_raw(a.u32()?)),
                NETDEV_A_QUEUE_IFINDEX => ifindex = Some(a.u32()?),
                NETDEV_A_QUEUE_NAPI_ID => napi_id = Some(a.u32()?),
                _ => other.push(a.to_raw()),
            }
        }
        let missing = |attr| DecodeError::Missing { what: "queue-get reply", attr };
        Ok(Queue {
            id: id.ok_or_else(|| missing("NETDEV_A_QUEUE_ID"))?,
            kind: kind.ok_or_else(|| missing("NETDEV_A_QUEUE_TYPE"))?,
            ifindex: ifindex.ok_or_else(|| missing("NETDEV_A_QUEUE_IFINDEX"))?,
            napi_id,
            other,
        })
    }
}

#[cfg(all(test, target_endian = "little"))]
mod golden {
    use super::*;
    use crate::netlink::genl::{assert_golden, bytes, GenlMessage};

    const NETDEV: u16 = 20; // the family id this machine's kernel gave "netdev"

    fn msg<P>(flags: u16, cmd: u8, payload: P) -> GenlMessage<P> {
        GenlMessage { family: NETDEV, flags, seq: 5, port: 12345, cmd, version: NETDEV_FAMILY_VERSION, payload }
    }

    /// nlmsghdr of a message to/from family 20 with seq 5 and port 12345.
    fn head(len: u8, flags: [u8; 2]) -> Vec<u8> {
        bytes(&[&[len, 0, 0, 0], &[20, 0], &flags, &[5, 0, 0, 0], &[0x39, 0x30, 0, 0]])
    }

    #[test]
    fn napi_get_dump_by_ifindex() {
        let value = msg(0x0301, NETDEV_CMD_NAPI_GET, NapiDump { ifindex: Some(3) });
        let raw = bytes(&[
            &head(28, [0x01, 0x03]), // NLM_F_REQUEST | NLM_F_DUMP
            &[11, 1, 0, 0],          // NETDEV_CMD_NAPI_GET, version 1
            &[8, 0, 1, 0], &[3, 0, 0, 0], // NETDEV_A_NAPI_IFINDEX
        ]);
        assert_golden(&value, &raw);
        assert_golden(&msg(0x0301, NETDEV_CMD_NAPI_GET, NapiDump { ifindex: None }), &bytes(&[&head(20, [0x01, 0x03]), &[11, 1, 0, 0]]));
    }

    #[test]
    fn napi_get_do_by_id() {
        let value = msg(0x05, NETDEV_CMD_NAPI_GET, NapiById { id: 8193 });
        let raw = bytes(&[&head(28, [0x05, 0]), &[11, 1, 0, 0], &[8, 0, 2, 0], &[0x01, 0x20, 0, 0]]);
        assert_golden(&value, &raw);
    }

    #[test]
    fn napi_reply_with_every_attribute() {
        let value = msg(
            0x02,
            NETDEV_CMD_NAPI_GET,
            Napi {
                id: 8193,
                ifindex: 2,
                irq: Some(45),
                threaded: Some(NapiThreaded::Enabled),
                pid: Some(1234),
                defer_hard_irqs: Some(100),
                irq_suspend_timeout: Some(20_000_000),
                gro_flush_timeout: Some(5_000_000_000), // over u32: an 8-byte uint
                other: Vec::new(),
            },
        );
        let raw = bytes(&[
            &head(88, [0x02, 0]), &[11, 1, 0, 0],
            &[8, 0, 2, 0], &[0x01, 0x20, 0, 0],             // ID 8193
            &[8, 0, 1, 0], &[2, 0, 0, 0],                   // IFINDEX
            &[8, 0, 3, 0], &[45, 0, 0, 0],                  // IRQ
            &[8, 0, 8, 0], &[1, 0, 0, 0],                   // THREADED: enabled
            &[8, 0, 4, 0], &[0xd2, 0x04, 0, 0],             // PID 1234
            &[8, 0, 5, 0], &[100, 0, 0, 0],                 // DEFER_HARD_IRQS
            &[8, 0, 7, 0], &[0x00, 0x2d, 0x31, 0x01],       // IRQ_SUSPEND_TIMEOUT 20 ms
            &[12, 0, 6, 0], &[0x00, 0xf2, 0x05, 0x2a, 0x01, 0, 0, 0], // GRO_FLUSH_TIMEOUT 5 s
        ]);
        assert_golden(&value, &raw);
    }

    #[test]
    fn napi_reply_keeps_an_attribute_it_does_not_know() {
        let value = msg(
            0x02,
            NETDEV_CMD_NAPI_GET,
            Napi {
                id: 7,
                ifindex: 2,
                irq: None,
                threaded: None,
                pid: None,
                defer_hard_irqs: None,
                irq_suspend_timeout: None,
                gro_flush_timeout: None,
                other: vec![RawAttr { kind: 42, payload: vec![1, 2, 3, 4] }],
            },
        );
        let raw = bytes(&[&head(44, [0x02, 0]), &[11, 1, 0, 0], &[8, 0, 2, 0], &[7, 0, 0, 0], &[8, 0, 1, 0], &[2, 0, 0, 0], &[8, 0, 42, 0], &[1, 2, 3, 4]]);
        assert_golden(&value, &raw);
    }

    /// A real `napi-get` dump reply for a veth with GRO on (Linux 6.18):
    /// no IRQ, not threaded, every per-NAPI knob at 0.
    #[test]
    fn napi_reply_from_the_kernel_for_a_veth() {
        let raw = include_bytes!("../../tests/fixtures/veth-napi-get-dump.bin");
        let parsed = GenlMessage::<Napi>::parse(raw, NETDEV).unwrap();
        // The netdev family's dump replies do not carry NLM_F_MULTI (only the DONE does).
        assert_eq!((parsed.cmd, parsed.flags), (NETDEV_CMD_NAPI_GET, 0));
        assert_eq!(
            parsed.payload,
            Napi {
                id: 258,
                ifindex: 3,
                irq: None,
                threaded: Some(NapiThreaded::Disabled),
                pid: None,
                defer_hard_irqs: Some(0),
                irq_suspend_timeout: Some(0),
                gro_flush_timeout: Some(0),
                other: Vec::new(),
            }
        );
        assert_eq!(parsed.emit(), raw.to_vec());
    }

    #[test]
    fn napi_set_request() {
        let value = msg(
            0x05,
            NETDEV_CMD_NAPI_SET,
            NapiSet {
                id: 8193,
                defer_hard_irqs: Some(100),
                gro_flush_timeout: Some(20_000),
                irq_suspend_timeout: Some(20_000_000),
                threaded: None,
            },
        );
        let raw = bytes(&[
            &head(52, [0x05, 0]), &[14, 1, 0, 0],       // NETDEV_CMD_NAPI_SET
            &[8, 0, 2, 0], &[0x01, 0x20, 0, 0],         // ID
            &[8, 0, 5, 0], &[100, 0, 0, 0],             // DEFER_HARD_IRQS
            &[8, 0, 6, 0], &[0x20, 0x4e, 0, 0],         // GRO_FLUSH_TIMEOUT 20 us
            &[8, 0, 7, 0], &[0x00, 0x2d, 0x31, 0x01],   // IRQ_SUSPEND_TIMEOUT 20 ms
        ]);
        assert_golden(&value, &raw);
        let threaded = msg(0x05, NETDEV_CMD_NAPI_SET, NapiSet { id: 1, threaded: Some(NapiThreaded::Other(2)), ..NapiSet::default() });
        assert_golden(&threaded, &bytes(&[&head(36, [0x05, 0]), &[14, 1, 0, 0], &[8, 0, 2, 0], &[1, 0, 0, 0], &[8, 0, 8, 0], &[2, 0, 0, 0]]));
    }

    #[test]
    fn queue_get_dump_request() {
        let value = msg(0x0301, NETDEV_CMD_QUEUE_GET, QueueDump { ifindex: 3 });
        let raw = bytes(&[&head(28, [0x01, 0x03]), &[10, 1, 0, 0], &[8, 0, 2, 0], &[3, 0, 0, 0]]);
        assert_golden(&value, &raw);
    }

    #[test]
    fn queue_replies_from_the_kernel() {
        // virtio_net links its RX queue to its NAPI; veth links none.
        let raw = include_bytes!("../../tests/fixtures/virtio_net-queue-get-rx.bin");
        let parsed = GenlMessage::<Queue>::parse(raw, NETDEV).unwrap();
        assert_eq!(parsed.payload, Queue { id: 0, kind: QueueType::Rx, ifindex: 4, napi_id: Some(257), other: Vec::new() });
        assert_eq!(parsed.emit(), raw.to_vec());
        let raw = include_bytes!("../../tests/fixtures/veth-queue-get-tx.bin");
        let parsed = GenlMessage::<Queue>::parse(raw, NETDEV).unwrap();
        assert_eq!(parsed.payload, Queue { id: 0, kind: QueueType::Tx, ifindex: 3, napi_id: None, other: Vec::new() });
        assert_eq!(parsed.emit(), raw.to_vec());
    }

    #[test]
    fn queue_reply_hand_built() {
        let value = msg(0x02, NETDEV_CMD_QUEUE_GET, Queue { id: 3, kind: QueueType::Other(7), ifindex: 2, napi_id: Some(8196), other: Vec::new() });
        let raw = bytes(&[
            &head(52, [0x02, 0]), &[10, 1, 0, 0],
            &[8, 0, 1, 0], &[3, 0, 0, 0],          // ID
            &[8, 0, 3, 0], &[7, 0, 0, 0],          // TYPE: unknown to irqlab, kept
            &[8, 0, 2, 0], &[2, 0, 0, 0],          // IFINDEX
            &[8, 0, 4, 0], &[0x04, 0x20, 0, 0],    // NAPI_ID
        ]);
        assert_golden(&value, &raw);
    }

    #[test]
    fn a_reply_without_its_id_is_an_error() {
        let raw = bytes(&[&head(28, [0x02, 0]), &[11, 1, 0, 0], &[8, 0, 1, 0], &[2, 0, 0, 0]]);
        let err = GenlMessage::<Napi>::parse(&raw, NETDEV).unwrap_err();
        assert_eq!(err.to_string(), "the napi-get reply lacks its required attribute NETDEV_A_NAPI_ID");
    }
}
