//! One network device as irqlab sees it: its NAPI instances with their
//! settings and queues, and its coalescing. [`show`] reads it; the
//! [`Snapshot`] it is built from is also what `apply` plans from and saves.

use std::ffi::CString;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::netlink::ethtool::Coalesce;
use crate::netlink::netdev::{Napi, Queue, QueueType};
use crate::ops::Kernel;

/// `IFNAMSIZ`: a device name has at most 15 bytes.
pub const IFNAMSIZ: usize = 16;

/// What `irqlab linux show` reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeviceReport {
    pub device: String,
    pub ifindex: u32,
    /// Every NAPI, by increasing id; empty for a device without NAPI.
    pub napis: Vec<NapiReport>,
    /// Queues `queue-get` links to no NAPI (a driver that does not say
    /// which NAPI serves a queue, such as veth).
    pub unlinked_queues: QueueIds,
    /// `None`: coalescing is not supported by this device.
    pub coalesce: Option<CoalesceSettings>,
    /// ethtool `-C` names of every coalescing parameter the driver
    /// reports, modelled or not (what it accepts; empty without coalescing).
    pub coalesce_params: Vec<String>,
    /// Which per-NAPI settings this kernel reports (`None` when the device
    /// has no NAPI to ask about).
    pub kernel: Option<KernelSupport>,
}

/// One NAPI instance. A knob is `None` when the kernel does not report it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NapiReport {
    pub id: u32,
    /// `None`: no interrupt of its own (veth).
    pub irq: Option<u32>,
    pub queues: QueueIds,
    /// The NAPI thread, when threaded.
    pub pid: Option<u32>,
    pub defer_hard_irqs: Option<u32>,
    /// Nanoseconds.
    pub gro_flush_timeout: Option<u64>,
    /// Nanoseconds.
    pub irq_suspend_timeout: Option<u64>,
    /// `disabled`, `enabled` (or a newer kernel's mode number).
    pub threaded: Option<String>,
}

/// The queues a NAPI serves, by type and index (from `queue-get`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueIds {
    #[serde(default)]
    pub rx: Vec<u32>,
    #[serde(default)]
    pub tx: Vec<u32>,
}

impl QueueIds {
    pub fn is_empty(&self) -> bool {
        self.rx.is_empty() && self.tx.is_empty()
    }

    /// Whether the two share a queue (same type and index).
    pub fn overlaps(&self, other: &QueueIds) -> bool {
        self.rx.iter().any(|q| other.rx.contains(q)) || self.tx.iter().any(|q| other.tx.contains(q))
    }
}

impl std::fmt::Display for QueueIds {
    /// `rx 0,1 tx 0`, or `no queue`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let join = |ids: &[u32]| ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        let parts: Vec<String> = [("rx", &self.rx), ("tx", &self.tx)]
            .into_iter()
            .filter(|(_, ids)| !ids.is_empty())
            .map(|(kind, ids)| format!("{kind} {}", join(ids)))
            .collect();
        if parts.is_empty() {
            f.write_str("no queue")
        } else {
            f.write_str(&parts.join(" "))
        }
    }
}

/// Which per-NAPI settings the kernel reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct KernelSupport {
    /// `defer-hard-irqs` and `gro-flush-timeout` per NAPI (Linux 6.13).
    pub per_napi_config: bool,
    /// `irq-suspend-timeout` (Linux 6.13).
    pub irq_suspend_timeout: bool,
    /// Per-NAPI `threaded` (Linux 6.17).
    pub threaded: bool,
}

/// Coalescing settings under ethtool's `-C` names; a setting is absent
/// (`None`) when the device does not support it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoalesceSettings {
    #[serde(rename = "adaptive-rx", default, skip_serializing_if = "Option::is_none")]
    pub adaptive_rx: Option<bool>,
    /// Microseconds.
    #[serde(rename = "rx-usecs", default, skip_serializing_if = "Option::is_none")]
    pub rx_usecs: Option<u32>,
    #[serde(rename = "rx-frames", default, skip_serializing_if = "Option::is_none")]
    pub rx_frames: Option<u32>,
    #[serde(rename = "adaptive-tx", default, skip_serializing_if = "Option::is_none")]
    pub adaptive_tx: Option<bool>,
    /// Microseconds.
    #[serde(rename = "tx-usecs", default, skip_serializing_if = "Option::is_none")]
    pub tx_usecs: Option<u32>,
    #[serde(rename = "tx-frames", default, skip_serializing_if = "Option::is_none")]
    pub tx_frames: Option<u32>,
    #[serde(rename = "cqe-mode-rx", default, skip_serializing_if = "Option::is_none")]
    pub cqe_mode_rx: Option<bool>,
    #[serde(rename = "cqe-mode-tx", default, skip_serializing_if = "Option::is_none")]
    pub cqe_mode_tx: Option<bool>,
}

impl From<&Coalesce> for CoalesceSettings {
    fn from(c: &Coalesce) -> Self {
        CoalesceSettings {
            adaptive_rx: c.use_adaptive_rx,
            rx_usecs: c.rx_usecs,
            rx_frames: c.rx_max_frames,
            adaptive_tx: c.use_adaptive_tx,
            tx_usecs: c.tx_usecs,
            tx_frames: c.tx_max_frames,
            cqe_mode_rx: c.use_cqe_mode_rx,
            cqe_mode_tx: c.use_cqe_mode_tx,
        }
    }
}

/// The device as read from the kernel at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub device: String,
    pub ifindex: u32,
    /// By increasing id.
    pub napis: Vec<Napi>,
    pub queues: Vec<Queue>,
    /// `None`: not supported by this device.
    pub coalesce: Option<Coalesce>,
    /// The `-C` names of the parameters the device reported (see
    /// [`crate::netlink::ethtool::CoalesceReply::reported`]).
    pub coalesce_params: Vec<&'static str>,
}

impl Snapshot {
    /// Read device `device` (already resolved to `ifindex`).
    pub fn read(kernel: &mut Kernel, device: &str, ifindex: u32) -> Result<Self, Error> {
        let mut napis = kernel.napis(ifindex, device)?;
        napis.retain(|n| n.ifindex == ifindex);
        napis.sort_by_key(|n| n.id);
        let queues = kernel.queues(ifindex, device)?;
        let reply = kernel.coalesce(ifindex, device)?;
        let coalesce_params = reply.as_ref().map(|r| r.reported()).unwrap_or_default();
        let coalesce = reply.map(|r| r.params);
        Ok(Snapshot { device: device.to_string(), ifindex, napis, queues, coalesce, coalesce_params })
    }

    /// The queues NAPI `napi_id` serves, by what `queue-get` links to it
    /// (empty for a driver that links none, such as veth).
    pub fn queues_of(&self, napi_id: u32) -> QueueIds {
        let mut queues = QueueIds::default();
        for q in self.queues.iter().filter(|q| q.napi_id == Some(napi_id)) {
            match q.kind {
                QueueType::Rx => queues.rx.push(q.id),
                QueueType::Tx => queues.tx.push(q.id),
                QueueType::Other(_) => {}
            }
        }
        queues.rx.sort_unstable();
        queues.tx.sort_unstable();
        queues
    }

    pub fn report(&self) -> DeviceReport {
        let napis = self
            .napis
            .iter()
            .map(|n| {
                let queues = self.queues_of(n.id);
                NapiReport {
                    id: n.id,
                    irq: n.irq,
                    queues,
                    pid: n.pid,
                    defer_hard_irqs: n.defer_hard_irqs,
                    gro_flush_timeout: n.gro_flush_timeout,
                    irq_suspend_timeout: n.irq_suspend_timeout,
                    threaded: n.threaded.map(|t| t.name()),
                }
            })
            .collect();
        let mut unlinked_queues = QueueIds::default();
        for q in &self.queues {
            if q.napi_id.is_some_and(|id| self.napis.iter().any(|n| n.id == id)) {
                continue;
            }
            match q.kind {
                QueueType::Rx => unlinked_queues.rx.push(q.id),
                QueueType::Tx => unlinked_queues.tx.push(q.id),
                QueueType::Other(_) => {}
            }
        }
        unlinked_queues.rx.sort_unstable();
        unlinked_queues.tx.sort_unstable();
        let kernel = self.napis.first().map(|n| KernelSupport {
            per_napi_config: n.defer_hard_irqs.is_some() && n.gro_flush_timeout.is_some(),
            irq_suspend_timeout: n.irq_suspend_timeout.is_some(),
            threaded: n.threaded.is_some(),
        });
        DeviceReport {
            device: self.device.clone(),
            ifindex: self.ifindex,
            napis,
            unlinked_queues,
            coalesce: self.coalesce.as_ref().map(CoalesceSettings::from),
            coalesce_params: self.coalesce_params.iter().map(|s| s.to_string()).collect(),
            kernel,
        }
    }
}

/// `irqlab linux show DEV`: every NAPI of `device` and its coalescing.
pub fn show(device: &str) -> Result<DeviceReport, Error> {
    let ifindex = resolve(device)?;
    let mut kernel = Kernel::open()?;
    Ok(Snapshot::read(&mut kernel, device, ifindex)?.report())
}

/// The ifindex of device `name` in this network namespace.
pub fn resolve(name: &str) -> Result<u32, Error> {
    let bad = |reason| Error::BadDeviceName { name: name.to_string(), reason };
    if name.is_empty() {
        return Err(bad("it is empty"));
    }
    if name.len() >= IFNAMSIZ {
        return Err(bad("device names have at most 15 bytes"));
    }
    if name.contains('/') || name.chars().any(char::is_whitespace) {
        return Err(bad("device names contain no slash or white space"));
    }
    let c_name = CString::new(name).map_err(|_| bad("device names contain no NUL byte"))?;
    // SAFETY: `c_name` is a valid NUL-terminated string for the call's duration.
    let ifindex = unsafe { libc::if_nametoindex(c_name.as_ptr()) };
    if ifindex == 0 {
        return Err(Error::NoSuchDevice { name: name.to_string() });
    }
    Ok(ifindex)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netlink::netdev::NapiThreaded;

    fn napi(id: u32) -> Napi {
        Napi {
            id,
            ifindex: 7,
            irq: Some(40 + id % 8),
            threaded: Some(NapiThreaded::Disabled),
            pid: None,
            defer_hard_irqs: Some(0),
            irq_suspend_timeout: Some(0),
            gro_flush_timeout: Some(0),
            other: Vec::new(),
        }
    }

    #[test]
    fn queues_are_mapped_to_the_napi_that_serves_them() {
        let queue = |id, kind, napi_id| Queue { id, kind, ifindex: 7, napi_id, other: Vec::new() };
        let snapshot = Snapshot {
            device: "eth1".into(),
            ifindex: 7,
            napis: vec![napi(8193), napi(8194)],
            queues: vec![
                queue(1, QueueType::Rx, Some(8194)),
                queue(0, QueueType::Rx, Some(8193)),
                queue(0, QueueType::Tx, Some(8193)),
                queue(1, QueueType::Tx, None),
            ],
            coalesce: None,
            coalesce_params: Vec::new(),
        };
        let report = snapshot.report();
        assert_eq!(report.napis[0].queues, QueueIds { rx: vec![0], tx: vec![0] });
        assert_eq!(report.napis[1].queues, QueueIds { rx: vec![1], tx: vec![] });
        assert_eq!(report.unlinked_queues, QueueIds { rx: vec![], tx: vec![1] });
        assert_eq!(report.napis[0].threaded.as_deref(), Some("disabled"));
        assert_eq!(report.kernel, Some(KernelSupport { per_napi_config: true, irq_suspend_timeout: true, threaded: true }));
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["coalesce"], serde_json::Value::Null);
        assert_eq!(json["napis"][0]["gro_flush_timeout"], 0);
    }

    #[test]
    fn coalescing_lists_only_what_the_device_supports() {
        let c = Coalesce { rx_usecs: Some(8), use_adaptive_rx: Some(true), ..Coalesce::default() };
        let json = serde_json::to_value(CoalesceSettings::from(&c)).unwrap();
        assert_eq!(json, serde_json::json!({"adaptive-rx": true, "rx-usecs": 8}));
    }

    #[test]
    fn device_names_are_checked_before_the_kernel_is_asked() {
        for name in ["", "a/b", "has space", "sixteen-chars-xx", "nul\0"] {
            assert!(matches!(resolve(name), Err(Error::BadDeviceName { .. })), "{name:?}");
        }
        assert!(matches!(resolve("irqlab-nonexist"), Err(Error::NoSuchDevice { .. })));
        assert_eq!(resolve("lo").unwrap(), 1);
    }
}
