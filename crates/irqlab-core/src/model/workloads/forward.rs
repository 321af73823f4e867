//! In-kernel forwarding (`app.kind = "forwarding"`): the ITR paper's device
//! under test, where Open vSwitch's kernel datapath sends every received
//! packet back out of the port it came from, inside the NAPI poll, with no
//! application thread (Emmerich et al. §III-A).
//!
//! The poll's segment costs `costs.forward_packet_cycles` per packet
//! (`driver_poll_take`). `ixgbe_clean_rx_irq` hands the packets up one at a
//! time and, on the paper's kernel 3.7, `ixgbe_xmit_frame` writes the TX
//! tail for each (no `xmit_more` batching), so packet i of a poll of n
//! leaves when its own work ends, (n − 1 − i) packets' work before the end
//! of the segment. The generator (MoonGen, hardware timestamps) sees it one
//! wire latency later.

use crate::model::devices::nic::events::NicEv;
use crate::model::devices::nic::RxPacket;
use crate::model::run::DropSite;
use crate::model::kernel::{Device, Kernel};
use crate::model::kernel::host::Host;
use crate::engine::{Nanos, Scheduler};

/// What forwarding asks of the machine beyond a kernel's `Host`: that the
/// NIC's events be among its events (a forwarded packet's TX completion).
pub trait ForwardHost: Host<Ev: From<NicEv>> {}

impl<M: Host<Ev: From<NicEv>>> ForwardHost for M {}

/// Forward the packets a poll of `napi` took (the poll's segment ends now).
pub(crate) fn forward_deliver<M: ForwardHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, napi: u32, buf: &mut Vec<RxPacket>) {
    let now = sched.now();
    let queue = k.napi_queue[napi as usize];
    let per_packet_ns = k.ns(k.cfg.costs.forward_packet_cycles);
    let n = buf.len() as u64;
    for (i, p) in buf.drain(..).enumerate() {
        if m.run().measuring {
            m.run().counters.packets_polled += 1;
            m.run().counters.ring_wait_ns += (now - p.arrived_ns) as u128;
        }
        let done_ns = now.saturating_sub((n - 1 - i as u64) * per_packet_ns).max(p.arrived_ns);
        forward_transmit(m, k, sched, queue, p, done_ns);
    }
}

/// `dev_queue_xmit` of a forwarded packet whose processing ended at
/// `done_ns`: onto the TX ring, or into the qdisc while the ring is full.
fn forward_transmit<M: ForwardHost>(m: &mut M, k: &mut Kernel, sched: &mut Scheduler<M::Ev>, queue: u32, p: RxPacket, done_ns: Nanos) {
    let q = m.queue(Device::Nic, queue);
    if !q.tx_post() {
        if q.qdisc.len() >= k.cfg.nic.txqueuelen as usize {
            m.dropped(sched, DropSite::Qdisc, p.conn, p.sent_ns);
        } else {
            q.qdisc.push_back((p.conn, p.sent_ns, p.bytes));
        }
        return;
    }
    let now = sched.now();
    sched.at((done_ns + k.cfg.nic.dma_latency_ns).max(now), M::Ev::from(NicEv::TxDone { queue, bytes: p.bytes }));
    // An open loop only records the packet's return (client_reply), so
    // it is recorded here at its own time rather than through an event.
    let back_ns = done_ns + k.cfg.nic.wire_latency_ns;
    if back_ns < m.run().end_ns {
        m.run().record_reply(back_ns, p.sent_ns);
    }
}


#[cfg(test)]
mod tests {
    use crate::scenario::Scenario;

    /// One core forwarding a constant-rate stream it can easily serve.
    fn forwarding(extra: &str) -> Scenario {
        Scenario::from_toml_str(&format!(
            r#"
            [run]
            duration_s = 0.02
            warmup_s = 0.002
            [cpu]
            app_cores = 1
            freq_ghz = 1.0
            wakeup_latency_ns = 0
            [nic]
            kind = "82599"
            wire_latency_ns = 1000
            dma_latency_ns = 500
            [app]
            kind = "forwarding"
            [load]
            qps = 10000.0
            interarrival = "constant"
            open_loop_backlog = "server"
            {extra}
            "#
        ))
        .unwrap()
    }

    #[test]
    fn an_isolated_packet_pays_exactly_the_interrupt_path() {
        let mut s = forwarding("[itr]\npolicy = \"off\"");
        for (k, v) in [
            ("costs.hardirq_cycles", "1000"),
            ("costs.softirq_entry_cycles", "500"),
            ("costs.napi_poll_cycles", "300"),
            ("costs.forward_packet_cycles", "2000"),
            ("costs.tx_clean_cycles", "0"),
            ("costs.irq_cold_cycles", "0"),
        ] {
            s.set(k, v).unwrap();
        }
        let sum = crate::run(&s).unwrap();
        // 100 µs apart, every packet finds the core idle: wire 1 µs + DMA
        // 0.5 µs + hard IRQ 1 µs + softirq entry 0.5 µs + poll 0.3 µs +
        // forwarding 2 µs, then 1 µs back.
        let mean = sum.latency_us.mean.unwrap();
        assert!((mean - 6.3).abs() < 0.01, "mean latency {mean} µs");
        assert!((sum.throughput_qps - 10_000.0).abs() < 100.0, "{}", sum.throughput_qps);
        // Each packet's RX interrupt, then its TX completion's once the
        // vector is enabled again.
        assert!((sum.irqs_per_s / sum.throughput_qps - 2.0).abs() < 0.01, "{}", sum.irqs_per_s);
        assert_eq!(sum.cpu_pct.user, 0.0, "no application thread");
    }
}
