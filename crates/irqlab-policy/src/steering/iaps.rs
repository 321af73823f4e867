//! Interrupt avoidance packet steering (Helbig & Kim, "IAPS: Decreasing
//! Software-Based Packet Steering Overhead Through Interrupt Reduction",
//! ICOIN 2025, §III).
//!
//! Software steering interrupts a target core (an IPI) only when a packet
//! enters its empty backlog input queue; later packets ride on that IPI.
//! So IAPS prefers *busy* cores, those with packets already queued:
//!
//! 1. the core that took the flow's previous packet, if it is still busy
//!    (no reordering: the previous packet is still queued behind it);
//! 2. else any busy core (the previous packet has left its queue, so no
//!    packet of the flow can be overtaken);
//! 3. else, no core being busy, RFS's choice: the application's core; this
//!    one costs an IPI.
//!
//! Busy cores are kept in a list (§III-B): a core is added when a packet
//! enters its empty input queue and removed when the queue empties, so the
//! decision only looks at the list. Which busy core case 2 takes is left
//! open by the paper ("any of the cores can be chosen"); this port takes
//! the one that has been busy longest, the list's head, which is O(1) and
//! deterministic. The flow's previous core is remembered per slot of a
//! table indexed by the flow hash, like RFS's `rps_dev_flow_table`.

use super::Cpu;

/// Which of §III's cases a decision was (Fig. 3a–c).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IapsCase {
    /// The flow's previous core is still busy: no IPI.
    PreviousBusy,
    /// Another busy core: no IPI.
    NewBusy,
    /// No busy core: the application's core, with an IPI.
    NoBusy,
}

impl IapsCase {
    pub const ALL: [IapsCase; 3] = [IapsCase::PreviousBusy, IapsCase::NewBusy, IapsCase::NoBusy];

    fn index(self) -> usize {
        self as usize
    }
}

/// IAPS's state on the interrupt processing core.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Iaps {
    /// Busy cores, in the order they became busy.
    busy: Vec<Cpu>,
    /// `is_busy[cpu]`.
    is_busy: Vec<bool>,
    /// The core of each flow slot's previous packet.
    prev: Vec<Option<Cpu>>,
    /// Decisions per case.
    counts: [u64; 3],
}

impl Iaps {
    /// For `nr_cpus` cores and `flow_slots` flow slots (rounded up to a
    /// power of two). Fails with one sentence when either is zero or
    /// absurdly large.
    pub fn new(nr_cpus: u32, flow_slots: u32) -> Result<Iaps, String> {
        for (name, value) in [("nr_cpus", nr_cpus), ("flow_slots", flow_slots)] {
            if value == 0 || value > 1 << 24 {
                return Err(format!("{name} must be within 1..={} (got {value}).", 1 << 24));
            }
        }
        Ok(Iaps {
            busy: Vec::with_capacity(nr_cpus as usize),
            is_busy: vec![false; nr_cpus as usize],
            prev: vec![None; flow_slots.next_power_of_two() as usize],
            counts: [0; 3],
        })
    }

    /// A packet entered `cpu`'s empty input queue: it is busy.
    pub fn became_busy(&mut self, cpu: Cpu) {
        if let Some(b) = self.is_busy.get_mut(cpu as usize) {
            if !*b {
                *b = true;
                self.busy.push(cpu);
            }
        }
    }

    /// `cpu`'s input queue emptied: it is no longer busy.
    pub fn became_idle(&mut self, cpu: Cpu) {
        if let Some(b) = self.is_busy.get_mut(cpu as usize) {
            if *b {
                *b = false;
                self.busy.retain(|&c| c != cpu);
            }
        }
    }

    pub fn is_busy(&self, cpu: Cpu) -> bool {
        self.is_busy.get(cpu as usize).copied().unwrap_or(false)
    }

    /// The busy cores, longest busy first.
    pub fn busy(&self) -> &[Cpu] {
        &self.busy
    }

    /// The target of a packet with flow hash `hash`; `app_cpu` is where RFS
    /// would send it (the application's core), used when no core is busy.
    pub fn decide(&mut self, hash: u32, app_cpu: Cpu) -> (Cpu, IapsCase) {
        let slot = (hash as usize) & (self.prev.len() - 1);
        let (cpu, case) = match self.prev[slot] {
            Some(p) if self.is_busy(p) => (p, IapsCase::PreviousBusy),
            _ => match self.busy.first() {
                Some(&c) => (c, IapsCase::NewBusy),
                None => (app_cpu, IapsCase::NoBusy),
            },
        };
        self.prev[slot] = Some(cpu);
        self.counts[case.index()] += 1;
        (cpu, case)
    }

    /// Decisions per case so far.
    pub fn count(&self, case: IapsCase) -> u64 {
        self.counts[case.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use IapsCase::*;

    /// (busy cores, flow's previous core, application core) → (target, case).
    type Row = (&'static [Cpu], Option<Cpu>, Cpu, Cpu, IapsCase);

    #[test]
    fn decision_table() {
        let rows: [Row; 6] = [
            (&[], None, 5, 5, NoBusy),
            (&[], Some(2), 5, 5, NoBusy),
            (&[3], None, 5, 3, NewBusy),
            (&[3, 2], Some(2), 5, 2, PreviousBusy),
            (&[3, 6], Some(2), 5, 3, NewBusy),
            (&[5], Some(5), 5, 5, PreviousBusy),
        ];
        for (busy, prev, app, want_cpu, want_case) in rows {
            let mut s = Iaps::new(8, 64).unwrap();
            const H: u32 = 0x51cc_c178;
            if let Some(p) = prev {
                // Make p the flow's previous core: a decision with only p busy.
                s.became_busy(p);
                assert_eq!(s.decide(H, app).0, p);
                s.became_idle(p);
            }
            for &c in busy {
                s.became_busy(c);
            }
            assert_eq!(s.decide(H, app), (want_cpu, want_case), "busy {busy:?}, prev {prev:?}, app {app}");
        }
    }

    #[test]
    fn the_busy_list_keeps_the_order_cores_became_busy() {
        let mut s = Iaps::new(8, 64).unwrap();
        for c in [4, 1, 4, 6] {
            s.became_busy(c);
        }
        assert_eq!(s.busy(), &[4, 1, 6], "a busy core is listed once");
        s.became_idle(4);
        s.became_idle(4);
        assert_eq!(s.busy(), &[1, 6]);
        assert!(!s.is_busy(4) && s.is_busy(6));
        s.became_busy(99); // not a CPU of this machine: ignored
        assert_eq!(s.busy(), &[1, 6]);
        // A new flow goes to the longest-busy core.
        assert_eq!(s.decide(7, 0), (1, NewBusy));
    }

    #[test]
    fn cases_are_counted_and_a_flow_sticks_while_its_core_is_busy() {
        let mut s = Iaps::new(8, 64).unwrap();
        assert_eq!(s.decide(1, 2), (2, NoBusy));
        s.became_busy(2);
        s.became_busy(7);
        assert_eq!(s.decide(1, 3), (2, PreviousBusy));
        // Another flow takes the head of the list, which is also 2.
        assert_eq!(s.decide(2, 3), (2, NewBusy));
        s.became_idle(2);
        assert_eq!(s.decide(1, 3), (7, NewBusy));
        assert_eq!(s.decide(1, 3), (7, PreviousBusy));
        let counts: Vec<u64> = IapsCase::ALL.iter().map(|&c| s.count(c)).collect();
        assert_eq!(counts, [2, 2, 1]);
        assert!(Iaps::new(0, 8).unwrap_err().starts_with("nr_cpus must be within"));
    }
}
