//! The per-queue statistics of one network device (`qstats-get`, Linux
//! 6.8): packets and bytes per RX and TX queue, and the receive drops and
//! allocation failures, for the drivers that keep them. Reading needs no
//! privilege and changes nothing.

use serde::Serialize;

use crate::device::resolve;
use crate::error::Error;
use crate::netlink::netdev::QueueType;
use crate::netlink::qstats::Qstats;
use crate::ops::Kernel;

/// One queue's counters. A counter is `None` when the driver does not keep
/// it (an RX queue has no TX counters and the reverse).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QueueStats {
    /// `rx` or `tx` (or the number of a type a newer kernel added).
    pub queue_type: String,
    /// Index among the device's queues of that type.
    pub queue_id: u32,
    pub rx_packets: Option<u64>,
    pub rx_bytes: Option<u64>,
    pub tx_packets: Option<u64>,
    pub tx_bytes: Option<u64>,
    /// Packets the device dropped on receive.
    pub rx_hw_drops: Option<u64>,
    /// Receive buffers the driver could not allocate.
    pub rx_alloc_fail: Option<u64>,
}

impl From<&Qstats> for QueueStats {
    fn from(q: &Qstats) -> Self {
        let queue_type = match q.kind {
            QueueType::Rx => "rx".to_string(),
            QueueType::Tx => "tx".to_string(),
            QueueType::Other(n) => n.to_string(),
        };
        QueueStats {
            queue_type,
            queue_id: q.id,
            rx_packets: q.rx_packets,
            rx_bytes: q.rx_bytes,
            tx_packets: q.tx_packets,
            tx_bytes: q.tx_bytes,
            rx_hw_drops: q.rx_hw_drops,
            rx_alloc_fail: q.rx_alloc_fail,
        }
    }
}

/// The per-queue statistics of `device`, RX queues first, each type by
/// increasing index; `None` when the device (or the kernel) has none to
/// give (veth, before Linux 6.8, ...). A device that is down reports no
/// queue. Errors name the device, in one sentence.
pub fn queue_stats(device: &str) -> Result<Option<Vec<QueueStats>>, Error> {
    let ifindex = resolve(device)?;
    let mut kernel = Kernel::open()?;
    Ok(kernel.queue_stats(ifindex, device)?.map(|replies| sorted(&replies)))
}

fn sorted(replies: &[Qstats]) -> Vec<QueueStats> {
    let mut queues: Vec<(u32, &Qstats)> = replies.iter().map(|q| (q.kind.to_raw(), q)).collect();
    queues.sort_by_key(|(kind, q)| (*kind, q.id));
    queues.into_iter().map(|(_, q)| QueueStats::from(q)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(kind: QueueType, id: u32, packets: u64) -> Qstats {
        let rx = kind == QueueType::Rx;
        Qstats {
            ifindex: 4,
            kind,
            id,
            rx_packets: rx.then_some(packets),
            rx_bytes: rx.then_some(packets * 100),
            rx_alloc_fail: None,
            rx_hw_drops: rx.then_some(0),
            tx_packets: (!rx).then_some(packets),
            tx_bytes: (!rx).then_some(packets * 100),
            other: Vec::new(),
        }
    }

    #[test]
    fn queues_come_rx_first_by_index_with_what_the_driver_keeps() {
        let replies = [reply(QueueType::Tx, 1, 5), reply(QueueType::Rx, 1, 3), reply(QueueType::Tx, 0, 4), reply(QueueType::Rx, 0, 2)];
        let stats = sorted(&replies);
        let order: Vec<(&str, u32)> = stats.iter().map(|q| (q.queue_type.as_str(), q.queue_id)).collect();
        assert_eq!(order, vec![("rx", 0), ("rx", 1), ("tx", 0), ("tx", 1)]);
        let json = serde_json::to_value(&stats[0]).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "queue_type": "rx", "queue_id": 0, "rx_packets": 2, "rx_bytes": 200, "tx_packets": null,
                "tx_bytes": null, "rx_hw_drops": 0, "rx_alloc_fail": null
            })
        );
        assert_eq!(QueueStats::from(&reply(QueueType::Other(2), 0, 1)).queue_type, "2");
    }

    #[test]
    fn an_unknown_device_is_refused_by_name() {
        let err = queue_stats("irqlab-nonexist").unwrap_err();
        assert_eq!(err.to_string(), "there is no network device named `irqlab-nonexist` in this network namespace");
    }
}
