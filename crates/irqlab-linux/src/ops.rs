//! The kernel operations irqlab uses, each one request over a
//! [`GenlSocket`]: resolve a family, `napi-get`, `napi-set`, `queue-get`,
//! `qstats-get`, `coalesce-get`, `coalesce-set`; and the route lookup [`route_get`]
//! over rtnetlink. Family ids are looked up once per
//! [`Kernel`] and kept.

use crate::error::Error;
use crate::netlink::ethtool::{
    Coalesce, CoalesceGet, CoalesceReply, CoalesceSet, Header, ETHTOOL_FAMILY_NAME, ETHTOOL_FAMILY_VERSION,
    ETHTOOL_MSG_COALESCE_GET, ETHTOOL_MSG_COALESCE_SET,
};
use crate::netlink::genl::{Family, GetFamily, CTRL_CMD_GETFAMILY, GENL_CTRL_VERSION, GENL_ID_CTRL};
use crate::netlink::netdev::{
    Napi, NapiById, NapiDump, NapiSet, Queue, QueueDump, NETDEV_CMD_NAPI_GET, NETDEV_CMD_NAPI_SET,
    NETDEV_CMD_QSTATS_GET, NETDEV_CMD_QUEUE_GET, NETDEV_FAMILY_NAME, NETDEV_FAMILY_VERSION,
};
use crate::netlink::qstats::{Qstats, QstatsDump, QstatsScope};
use crate::netlink::route::{self, Route};
use crate::socket::{GenlSocket, NetlinkError};

/// The kernel's route to `dst` from this process's network namespace, as
/// `ip route get DST` asks for it (`RTM_GETROUTE` over `NETLINK_ROUTE`).
pub fn route_get(dst: std::net::Ipv4Addr) -> Result<Route, NetlinkError> {
    const WHAT: &str = "RTM_GETROUTE";
    let mut socket = GenlSocket::open_route()?;
    let seq = socket.next_seq();
    let decode = |source| NetlinkError::Decode { request: WHAT.to_string(), source };
    let mut found = None;
    for raw in socket.transact_raw(WHAT, &route::encode_request(dst, seq), false)? {
        found = found.or(route::parse_answer(&raw).map_err(decode)?);
    }
    // Acked without a route message: not what inet_rtm_getroute() does.
    found.ok_or_else(|| decode(crate::netlink::DecodeError::Missing { what: "answer", attr: "RTM_NEWROUTE" }))
}

/// A netlink connection to the kernel with the families it has resolved.
pub struct Kernel {
    socket: GenlSocket,
    netdev: Option<u16>,
    ethtool: Option<Option<u16>>,
}

impl Kernel {
    pub fn open() -> Result<Self, Error> {
        Ok(Kernel { socket: GenlSocket::open()?, netdev: None, ethtool: None })
    }

    /// The family named `name`, or `None` if this kernel has no such family.
    pub fn family(&mut self, name: &str) -> Result<Option<Family>, Error> {
        let what = format!("the lookup of generic netlink family `{name}`");
        let reply: Result<Vec<Family>, _> =
            self.socket.request(&what, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, GENL_CTRL_VERSION, GetFamily { name: name.into() });
        match reply {
            Ok(mut families) => Ok(families.pop()),
            Err(e) if e.errno() == Some(libc::ENOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn netdev(&mut self) -> Result<u16, Error> {
        if let Some(id) = self.netdev {
            return Ok(id);
        }
        match self.family(NETDEV_FAMILY_NAME)? {
            Some(family) => {
                self.netdev = Some(family.id);
                Ok(family.id)
            }
            None => Err(Error::KernelTooOld {
                what: "has no `netdev` generic netlink family".into(),
                purpose: "read or set per-NAPI settings",
            }),
        }
    }

    fn ethtool(&mut self) -> Result<Option<u16>, Error> {
        if let Some(id) = self.ethtool {
            return Ok(id);
        }
        let id = self.family(ETHTOOL_FAMILY_NAME)?.map(|f| f.id);
        self.ethtool = Some(id);
        Ok(id)
    }

    /// Every NAPI of device `ifindex` (`napi-get` dump).
    pub fn napis(&mut self, ifindex: u32, device: &str) -> Result<Vec<Napi>, Error> {
        let family = self.netdev()?;
        let what = format!("napi-get on device `{device}`");
        Ok(self.socket.dump(&what, family, NETDEV_CMD_NAPI_GET, NETDEV_FAMILY_VERSION, NapiDump { ifindex: Some(ifindex) })?)
    }

    /// One NAPI by id (`napi-get` do).
    pub fn napi(&mut self, id: u32) -> Result<Napi, Error> {
        let family = self.netdev()?;
        let what = format!("napi-get on NAPI {id}");
        let mut replies: Vec<Napi> = self.socket.request(&what, family, NETDEV_CMD_NAPI_GET, NETDEV_FAMILY_VERSION, NapiById { id })?;
        replies.pop().ok_or(Error::Netlink(NetlinkError::Decode {
            request: what,
            source: crate::netlink::DecodeError::Missing { what: "napi-get answer", attr: "a reply" },
        }))
    }

    /// `napi-set`: change the knobs that are `Some`.
    pub fn napi_set(&mut self, set: NapiSet, device: &str) -> Result<(), Error> {
        let family = self.netdev()?;
        let what = format!("napi-set on NAPI {} of device `{device}`", set.id);
        let _: Vec<Napi> = self.socket.request(&what, family, NETDEV_CMD_NAPI_SET, NETDEV_FAMILY_VERSION, set)?;
        Ok(())
    }

    /// Every queue of device `ifindex` (`queue-get` dump); empty on a kernel
    /// without `queue-get` (before 6.8).
    pub fn queues(&mut self, ifindex: u32, device: &str) -> Result<Vec<Queue>, Error> {
        let family = self.netdev()?;
        let what = format!("queue-get on device `{device}`");
        match self.socket.dump(&what, family, NETDEV_CMD_QUEUE_GET, NETDEV_FAMILY_VERSION, QueueDump { ifindex }) {
            Ok(queues) => Ok(queues),
            Err(e) if e.errno() == Some(libc::EOPNOTSUPP) => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }

    /// The per-queue statistics of device `ifindex` (`qstats-get` dump,
    /// scope `queue`), or `None` when there are none to read: the device
    /// has no `netdev_stat_ops` (the kernel refuses with EOPNOTSUPP, as it
    /// does a command it does not know, before 6.8), or the kernel has no
    /// `netdev` family at all. A device that is down has no queue to report
    /// (an empty list).
    pub fn queue_stats(&mut self, ifindex: u32, device: &str) -> Result<Option<Vec<Qstats>>, Error> {
        let family = match self.netdev() {
            Ok(family) => family,
            Err(Error::KernelTooOld { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let what = format!("qstats-get on device `{device}`");
        let request = QstatsDump { ifindex, scope: QstatsScope::Queue };
        match self.socket.dump::<_, Qstats>(&what, family, NETDEV_CMD_QSTATS_GET, NETDEV_FAMILY_VERSION, request) {
            Ok(mut stats) => {
                stats.retain(|q| q.ifindex == ifindex);
                Ok(Some(stats))
            }
            Err(e) if e.errno() == Some(libc::EOPNOTSUPP) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The device's coalescing (`coalesce-get`), or `None` when the device
    /// (or the kernel, without the ethtool family) does not support it.
    pub fn coalesce(&mut self, ifindex: u32, device: &str) -> Result<Option<CoalesceReply>, Error> {
        let Some(family) = self.ethtool()? else { return Ok(None) };
        let what = format!("coalesce-get on device `{device}`");
        let request = CoalesceGet { header: Header::index(ifindex) };
        match self.socket.request::<_, CoalesceReply>(&what, family, ETHTOOL_MSG_COALESCE_GET, ETHTOOL_FAMILY_VERSION, request) {
            Ok(mut replies) => Ok(replies.pop()),
            Err(e) if e.errno() == Some(libc::EOPNOTSUPP) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// `coalesce-set`: change the parameters that are `Some`.
    pub fn coalesce_set(&mut self, ifindex: u32, device: &str, params: Coalesce) -> Result<(), Error> {
        let family = self.ethtool()?.ok_or_else(|| Error::KernelTooOld {
            what: "has no `ethtool` generic netlink family".into(),
            purpose: "set coalescing",
        })?;
        let what = format!("coalesce-set on device `{device}`");
        let request = CoalesceSet { header: Header::index(ifindex), params };
        let _: Vec<CoalesceReply> =
            self.socket.request(&what, family, ETHTOOL_MSG_COALESCE_SET, ETHTOOL_FAMILY_VERSION, request)?;
        Ok(())
    }
}
