//! Receive flow steering: `get_rps_cpu`'s flow-table path
//! (`net/core/dev.c`, Linux 6.10, the IAPS paper's kernel).
//!
//! Two tables. The global `rps_sock_flow_table` (`rps_sock_flow_entries`
//! slots) records, on every `recvmsg` of a flow, the CPU the application
//! read it on (`sock_rps_record_flow`: the hash's upper bits with the CPU
//! in the low `rps_cpu_mask` bits). Each RX queue's `rps_dev_flow_table`
//! (`rps_flow_cnt` slots) remembers the CPU the flow is being steered to
//! and `last_qtail`, the backlog position of its last packet there. A flow
//! moves to the application's CPU only when its current CPU has dequeued
//! past `last_qtail` (its earlier packets have all left that backlog, so
//! none is overtaken), or when it has no CPU yet. A flow the socket table
//! does not know (or a slot another flow overwrote) falls back to RPS.

use super::{Backlog, Cpu, RpsMap};

/// `RPS_NO_CPU`: a slot with no CPU.
pub const RPS_NO_CPU: u32 = 0xffff;

/// The sizes RFS is configured with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RfsParams {
    /// `net.core.rps_sock_flow_entries` (rounded up to a power of two, as
    /// `rps_sock_flow_sysctl` does).
    pub sock_flow_entries: u32,
    /// The RX queue's `rps_flow_cnt` (rounded up to a power of two, as
    /// `store_rps_dev_flow_table_cnt` does).
    pub flow_cnt: u32,
    /// `nr_cpu_ids`.
    pub nr_cpus: u32,
}

impl Default for RfsParams {
    /// The values the kernel documentation suggests for a busy server
    /// (`Documentation/networking/scaling.rst`: 32768 socket entries, and
    /// as many flows per queue for a single-queue device), 8 CPUs.
    fn default() -> Self {
        RfsParams { sock_flow_entries: 32768, flow_cnt: 32768, nr_cpus: 8 }
    }
}

/// One `struct rps_dev_flow`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct DevFlow {
    cpu: u32,
    last_qtail: u32,
}

/// Where RFS (or its RPS fallback) steers a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RfsTarget {
    pub cpu: Cpu,
    /// The dev flow table slot to give the packet's backlog position
    /// ([`Rfs::enqueued`]); None when RPS chose.
    pub flow: Option<u32>,
}

/// RFS for one RX queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rfs {
    params: RfsParams,
    /// `rps_cpu_mask`: `roundup_pow_of_two(nr_cpu_ids) - 1`.
    cpu_mask: u32,
    sock: Vec<u32>,
    flows: Vec<DevFlow>,
}

impl Rfs {
    /// Empty tables (every slot `RPS_NO_CPU`). Fails with one sentence
    /// naming the field when a size is zero or too large.
    pub fn new(params: RfsParams) -> Result<Rfs, String> {
        let limits = [
            ("sock_flow_entries", params.sock_flow_entries, 1u32 << 29),
            ("flow_cnt", params.flow_cnt, 1u32 << 29),
            ("nr_cpus", params.nr_cpus, RPS_NO_CPU),
        ];
        for (name, value, most) in limits {
            if value == 0 || value > most {
                return Err(format!("{name} must be within 1..={most} (got {value})."));
            }
        }
        let sock = params.sock_flow_entries.next_power_of_two();
        let flows = params.flow_cnt.next_power_of_two();
        Ok(Rfs {
            params,
            cpu_mask: params.nr_cpus.next_power_of_two() - 1,
            sock: vec![RPS_NO_CPU; sock as usize],
            flows: vec![DevFlow { cpu: RPS_NO_CPU, last_qtail: 0 }; flows as usize],
        })
    }

    pub fn params(&self) -> &RfsParams {
        &self.params
    }

    /// `sock_rps_record_flow_hash`: the application read the flow with hash
    /// `hash` on `cpu`.
    pub fn record(&mut self, hash: u32, cpu: Cpu) {
        let slot = (hash as usize) & (self.sock.len() - 1);
        self.sock[slot] = (hash & !self.cpu_mask) | (cpu & self.cpu_mask);
    }

    /// The CPU the application last read the flow on, if the socket table
    /// still holds it.
    pub fn app_cpu(&self, hash: u32) -> Option<Cpu> {
        let ident = self.sock[(hash as usize) & (self.sock.len() - 1)];
        if (ident ^ hash) & !self.cpu_mask != 0 {
            return None;
        }
        let cpu = ident & self.cpu_mask;
        (cpu < self.params.nr_cpus).then_some(cpu)
    }

    /// `get_rps_cpu` for a packet with flow hash `hash`, given every CPU's
    /// backlog counters and the queue's RPS map. None: no steering (a zero
    /// hash, or neither table nor map has a CPU), the packet is processed
    /// where it was received.
    pub fn target(&mut self, hash: u32, backlogs: &[Backlog], rps: Option<&RpsMap>) -> Option<RfsTarget> {
        if hash == 0 {
            return None;
        }
        if let Some(next_cpu) = self.app_cpu(hash) {
            let slot = (hash as usize) & (self.flows.len() - 1);
            let flow = &mut self.flows[slot];
            let mut tcpu = flow.cpu;
            let current_done = |cpu: u32, last_qtail: u32| {
                backlogs
                    .get(cpu as usize)
                    .is_none_or(|b| b.input_queue_head.wrapping_sub(last_qtail) as i32 >= 0)
            };
            if tcpu != next_cpu && (tcpu >= self.params.nr_cpus || current_done(tcpu, flow.last_qtail)) {
                // set_rps_cpu
                tcpu = next_cpu;
                flow.cpu = next_cpu;
                flow.last_qtail = backlogs.get(next_cpu as usize).map_or(0, |b| b.input_queue_head);
            }
            if tcpu < self.params.nr_cpus {
                return Some(RfsTarget { cpu: tcpu, flow: Some(slot as u32) });
            }
        }
        rps.map(|m| RfsTarget { cpu: m.target(hash), flow: None })
    }

    /// `enqueue_to_backlog` stored the packet at backlog position `qtail`
    /// (`input_queue_tail` after it) for the flow in `slot`.
    pub fn enqueued(&mut self, slot: u32, qtail: u32) {
        self.flows[slot as usize].last_qtail = qtail;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rfs() -> Rfs {
        Rfs::new(RfsParams { sock_flow_entries: 1024, flow_cnt: 256, nr_cpus: 8 }).unwrap()
    }

    const H: u32 = 0x51cc_c178;

    #[test]
    fn an_unknown_flow_falls_back_to_rps_and_a_zero_hash_is_not_steered() {
        let mut r = rfs();
        let b = [Backlog::default(); 8];
        let map = RpsMap::from_mask(0xfe).unwrap();
        assert_eq!(r.target(H, &b, Some(&map)), Some(RfsTarget { cpu: map.target(H), flow: None }));
        assert_eq!(r.target(H, &b, None), None);
        r.record(0, 3);
        assert_eq!(r.target(0, &b, Some(&map)), None);
    }

    /// The decision table of `get_rps_cpu`'s flow path: (current CPU,
    /// its backlog head against last_qtail, application CPU) → target.
    #[test]
    fn a_flow_follows_the_application_once_its_packets_left_the_old_backlog() {
        let mut r = rfs();
        let mut b = [Backlog::default(); 8];
        // recvmsg on CPU 3: the flow has no CPU yet, so it moves at once.
        r.record(H, 3);
        let t = r.target(H, &b, None).unwrap();
        assert_eq!(t.cpu, 3);
        // Two packets enqueued on CPU 3: last_qtail = 2.
        b[3].len = 2;
        r.enqueued(t.flow.unwrap(), b[3].tail());
        // The application moves to CPU 5 while CPU 3 still holds them.
        r.record(H, 5);
        assert_eq!(r.target(H, &b, None).unwrap().cpu, 3, "head 0 < last_qtail 2: stay");
        b[3] = Backlog { input_queue_head: 1, len: 1 };
        assert_eq!(r.target(H, &b, None).unwrap().cpu, 3, "head 1 < 2: stay");
        b[3] = Backlog { input_queue_head: 2, len: 0 };
        let t = r.target(H, &b, None).unwrap();
        assert_eq!(t.cpu, 5, "head 2 >= 2: both dequeued, switch");
        // The switch records CPU 5's head as the new last_qtail.
        b[5] = Backlog { input_queue_head: 40, len: 0 };
        r.record(H, 6);
        assert_eq!(r.target(H, &b, None).unwrap().cpu, 6, "CPU 5's head 40 >= its last_qtail 0");
    }

    #[test]
    fn the_comparison_survives_the_counters_wrapping() {
        let mut r = rfs();
        let mut b = [Backlog::default(); 8];
        b[2].input_queue_head = u32::MAX - 1;
        r.record(H, 2);
        let t = r.target(H, &b, None).unwrap();
        b[2].len = 3;
        r.enqueued(t.flow.unwrap(), b[2].tail()); // wraps to 1
        r.record(H, 4);
        b[2] = Backlog { input_queue_head: 0, len: 2 };
        assert_eq!(r.target(H, &b, None).unwrap().cpu, 2, "head 0 is before tail 1 across the wrap");
        b[2] = Backlog { input_queue_head: 1, len: 1 };
        assert_eq!(r.target(H, &b, None).unwrap().cpu, 4);
    }

    #[test]
    fn another_flow_in_the_socket_slot_makes_the_flow_unknown() {
        let mut r = rfs();
        let b = [Backlog::default(); 8];
        r.record(H, 3);
        // Same slot (low 10 bits), different upper bits.
        let other = H ^ 0x1000_0000;
        r.record(other, 6);
        assert_eq!(r.app_cpu(H), None);
        assert_eq!(r.app_cpu(other), Some(6));
        assert_eq!(r.target(H, &b, None), None);
    }

    #[test]
    fn sizes_are_rounded_up_and_checked() {
        let r = Rfs::new(RfsParams { sock_flow_entries: 1000, flow_cnt: 100, nr_cpus: 6 }).unwrap();
        assert_eq!((r.sock.len(), r.flows.len(), r.cpu_mask), (1024, 128, 7));
        let e = Rfs::new(RfsParams { flow_cnt: 0, ..RfsParams::default() }).unwrap_err();
        assert!(e.starts_with("flow_cnt must be within 1..="), "{e}");
    }
}
