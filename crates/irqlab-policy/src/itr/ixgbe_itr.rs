//! ixgbe's dynamic 3-state ITR: mode 3) of Emmerich et al., SPECTS 2015,
//! §II-B (Fig. 2), the algorithm whose flaws §V-A and §V-B describe.
//!
//! A port of `ixgbe_update_itr` and `ixgbe_set_itr` (ixgbe 3.23.2
//! `ixgbe_main.c`; unchanged since 3.14.5, the version the paper measured),
//! with the driver's integer arithmetic:
//!
//! - each ring container (the vector's RX rings, its TX rings) keeps a
//!   latency range, `Lowest`, `Low` or `Bulk`, and the packets and bytes
//!   its rings completed since it last updated;
//! - on every exit from polling, each container with packets computes
//!   bytes per µs and moves one step through Fig. 2 (10 and 20 bytes/µs,
//!   i.e. 10 and 20 MB/s, with hysteresis: `Bulk` only goes back to `Low`);
//! - the vector's target is the ITR of the busier container (100 k, 20 k,
//!   8 k interrupts/s), approached by exponential smoothing.
//!
//! The elapsed time is never measured: the driver assumes the vector
//! interrupted exactly at its throttled rate, `itr >> 2` µs ago (§V-B).
//! [`ItrSample::time_ns`] is therefore ignored on purpose.

use super::{Eitr, ItrPolicy, ItrSample, IXGBE_100K_ITR, IXGBE_20K_ITR, IXGBE_8K_ITR};

/// `enum latency_range` of `ixgbe_main.c`: the state of a ring container
/// (paper Fig. 2). The order is the driver's; `ixgbe_set_itr` takes the
/// maximum of the RX and TX states.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LatencyRange {
    /// `lowest_latency`: up to 10 bytes/µs, `IXGBE_100K_ITR`. The initial
    /// state (the ring containers are zeroed by `kzalloc` in
    /// `ixgbe_alloc_q_vector`).
    #[default]
    Lowest = 0,
    /// `low_latency`: 10 to 20 bytes/µs, `IXGBE_20K_ITR`.
    Low = 1,
    /// `bulk_latency`: above 20 bytes/µs, `IXGBE_8K_ITR`.
    Bulk = 2,
}

impl LatencyRange {
    /// The vector ITR this state asks for (the `switch` in `ixgbe_set_itr`).
    pub fn target(self) -> Eitr {
        Eitr(match self {
            LatencyRange::Lowest => IXGBE_100K_ITR,
            LatencyRange::Low => IXGBE_20K_ITR,
            LatencyRange::Bulk => IXGBE_8K_ITR,
        })
    }

    /// One step of Fig. 2 for a container that moved `bytes_per_us`
    /// (the `switch (itr_setting)` of `ixgbe_update_itr`).
    fn step(self, bytes_per_us: u64) -> LatencyRange {
        match self {
            LatencyRange::Lowest if bytes_per_us > 10 => LatencyRange::Low,
            LatencyRange::Low if bytes_per_us > 20 => LatencyRange::Bulk,
            LatencyRange::Low if bytes_per_us <= 10 => LatencyRange::Lowest,
            // Bulk falls back one step only: hysteresis.
            LatencyRange::Bulk if bytes_per_us <= 20 => LatencyRange::Low,
            s => s,
        }
    }
}

/// One `struct ixgbe_ring_container` as the dynamic ITR uses it: its
/// latency range (`ring_container->itr`) and the work since it last
/// updated (`total_packets`, `total_bytes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Container {
    latency: LatencyRange,
    total_packets: u64,
    total_bytes: u64,
}

impl Container {
    fn add(&mut self, packets: u64, bytes: u64) {
        self.total_packets = self.total_packets.saturating_add(packets);
        self.total_bytes = self.total_bytes.saturating_add(bytes);
    }

    /// `ixgbe_update_itr`, given the vector's current `q_vector->itr`.
    fn update(&mut self, vector_itr: u16) {
        // No packets: keep the state. An idle container therefore keeps
        // whatever range it last reached and still counts in the max.
        if self.total_packets == 0 {
            return;
        }
        // "what was last interrupt timeslice?": the throttling interval,
        // not a measurement (the flaw of §V-B).
        let timepassed_us = u64::from(vector_itr >> 2);
        if timepassed_us == 0 {
            // The driver leaves the totals to accumulate.
            return;
        }
        let bytes_per_us = self.total_bytes / timepassed_us;
        self.latency = self.latency.step(bytes_per_us);
        self.total_packets = 0;
        self.total_bytes = 0;
    }
}

/// The "exponential smoothing" of `ixgbe_set_itr`: `(10 × target × old) /
/// (9 × target + old)` in u32 integer arithmetic. In interrupt rates it is
/// an exponential moving average, `1/new = 0.9/old + 0.1/target`.
///
/// The step is `old × (target − old) / (9 × target + old)`, truncated.
/// Falling (old > target) the truncation rounds the value down, so it
/// always moves and reaches the target (41 → 40). Rising, it stops as soon
/// as `old × (target − old) < 9 × target + old`: from IXGBE_20K_ITR toward
/// IXGBE_8K_ITR the vector climbs 200 → 212 → 224 → … → 489 → 490 and
/// stays at 490, never 500 (490..=499 are all fixed points; 490 is the
/// first one reached). On the 82599 that is a 124.9 µs gap instead of
/// 127.0 µs (`Eitr::interval_ns`). Rising from 40 toward IXGBE_20K_ITR it
/// stops at 190.
fn smooth(target: u32, old: u32) -> u32 {
    (10 * target * old) / (9 * target + old)
}

/// ixgbe's dynamic ITR for one interrupt vector (`InterruptThrottleRate=1`,
/// the default, or `ethtool -C rx-usecs 1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IxgbeItr {
    /// `q_vector->itr`.
    itr: u16,
    rx: Container,
    tx: Container,
}

impl Default for IxgbeItr {
    fn default() -> Self {
        Self::new()
    }
}

impl IxgbeItr {
    /// A vector as `ixgbe_alloc_q_vector` (`ixgbe_lib.c`) sets it up for
    /// the dynamic ITR: `q_vector->itr = IXGBE_20K_ITR`, both containers
    /// zeroed (state `Lowest`, no work counted).
    pub fn new() -> IxgbeItr {
        IxgbeItr {
            itr: IXGBE_20K_ITR,
            rx: Container::default(),
            tx: Container::default(),
        }
    }

    /// The latency range of the RX container (`q_vector->rx.itr`).
    pub fn rx_latency(&self) -> LatencyRange {
        self.rx.latency
    }

    /// The latency range of the TX container (`q_vector->tx.itr`).
    pub fn tx_latency(&self) -> LatencyRange {
        self.tx.latency
    }
}

impl ItrPolicy for IxgbeItr {
    fn current(&self) -> Eitr {
        Eitr(self.itr)
    }

    /// `ixgbe_set_itr`, after `ixgbe_clean_rx_irq` / `ixgbe_clean_tx_irq`
    /// have added the sample's work to the containers. `s.time_ns` is not
    /// read: the driver has no clock here (§V-B).
    fn observe(&mut self, s: ItrSample) -> Option<Eitr> {
        self.rx.add(s.rx_packets, s.rx_bytes);
        self.tx.add(s.tx_packets, s.tx_bytes);

        // TX first, then RX, as the driver does; both read the same
        // q_vector->itr since it only changes below.
        self.tx.update(self.itr);
        self.rx.update(self.itr);

        let target = u32::from(self.rx.latency.max(self.tx.latency).target().0);
        let old = u32::from(self.itr);
        if target == old {
            return None;
        }
        let smoothed = smooth(target, old);
        // Both are at most IXGBE_8K_ITR, so the result fits.
        self.itr = smoothed as u16;
        // Rising, the smoothing stalls short of the target (see `smooth`),
        // and the driver then calls ixgbe_write_eitr with the unchanged
        // value on every poll exit: a no-op for the throttling, reported
        // here as no decision.
        (smoothed != old).then_some(Eitr(self.itr))
    }
}

#[cfg(test)]
mod tests {
    use super::LatencyRange::{Bulk, Low, Lowest};
    use super::*;

    /// One RX sample of `bytes` in one packet, at `time_ns`.
    fn rx(time_ns: u64, bytes: u64) -> ItrSample {
        ItrSample {
            time_ns,
            rx_packets: 1,
            rx_bytes: bytes,
            ..Default::default()
        }
    }

    /// Feed RX byte counts one sample apart; check (state, decision) after
    /// each.
    fn run(p: &mut IxgbeItr, script: &[(u64, LatencyRange, Option<u16>)]) {
        for (i, &(bytes, state, decision)) in script.iter().enumerate() {
            let got = p.observe(rx(i as u64 * 1_000, bytes));
            assert_eq!(
                (p.rx_latency(), got.map(|e| e.0)),
                (state, decision),
                "step {i}: {bytes} bytes"
            );
        }
    }

    #[test]
    fn starts_at_20k_in_lowest() {
        let p = IxgbeItr::new();
        assert_eq!(p.current(), Eitr(IXGBE_20K_ITR));
        assert_eq!((p.rx_latency(), p.tx_latency()), (Lowest, Lowest));
        assert_eq!(IxgbeItr::default(), p);
    }

    #[test]
    fn lowest_to_low_above_10_bytes_per_us() {
        // Fresh vector: itr 200, so the driver assumes 50 µs passed.
        // (bytes, rx state after, decision)
        let table: &[(u64, LatencyRange, Option<u16>)] = &[
            (64, Lowest, Some(142)),  // 1 B/µs: target 40, smoothed from 200
            (549, Lowest, Some(142)), // 10 B/µs: not > 10
            (550, Low, None),         // 11 B/µs: target 200 == itr
            // One step at a time: Lowest never jumps to Bulk.
            (1_000_000, Low, None),
        ];
        for &(bytes, state, decision) in table {
            let mut p = IxgbeItr::new();
            let got = p.observe(rx(0, bytes));
            assert_eq!(
                (p.rx_latency(), got.map(|e| e.0)),
                (state, decision),
                "{bytes} bytes"
            );
        }
    }

    #[test]
    fn low_to_bulk_above_20_and_back_to_lowest_at_10() {
        // From Low at itr 200 (50 µs assumed).
        // (bytes, rx state after, decision)
        let table: &[(u64, LatencyRange, Option<u16>)] = &[
            (1_049, Low, None),       // 20 B/µs: not > 20
            (1_050, Bulk, Some(212)), // 21 B/µs: 10*500*200/(4500+200) = 212
            (551, Low, None),         // 11 B/µs: stays
            (549, Lowest, Some(142)), // 10 B/µs: <= 10
            (1, Lowest, Some(142)),
        ];
        for &(bytes, state, decision) in table {
            let mut p = IxgbeItr::new();
            run(&mut p, &[(550, Low, None)]);
            let got = p.observe(rx(1_000, bytes));
            assert_eq!(
                (p.rx_latency(), got.map(|e| e.0)),
                (state, decision),
                "{bytes} bytes"
            );
        }
    }

    #[test]
    fn bulk_falls_back_one_step_only() {
        // Into Bulk: itr 212 afterwards, so 53 µs are assumed.
        let into_bulk = [(550, Low, None), (1_050, Bulk, Some(212))];
        // (bytes, rx state after, decision)
        let table: &[(u64, LatencyRange, Option<u16>)] = &[
            (1_113, Bulk, Some(224)), // 21 B/µs (1113/53): 10*500*212/4712
            (1_112, Low, Some(210)),  // 20 B/µs: 10*200*212/(1800+212)
            (64, Low, Some(210)),     // 1 B/µs: Bulk → Low, not Lowest
        ];
        for &(bytes, state, decision) in table {
            let mut p = IxgbeItr::new();
            run(&mut p, &into_bulk);
            let got = p.observe(rx(9_000, bytes));
            assert_eq!(
                (p.rx_latency(), got.map(|e| e.0)),
                (state, decision),
                "{bytes} bytes"
            );
        }
        // And a second light sample reaches Lowest (itr 210: 52 µs).
        let mut p = IxgbeItr::new();
        run(&mut p, &into_bulk);
        run(&mut p, &[(64, Low, Some(210)), (64, Lowest, Some(147))]);
    }

    #[test]
    fn smoothing_falls_to_100k() {
        // Light traffic: 200 → 142 → 113 → 95 → … → 40, then no decision.
        let mut p = IxgbeItr::new();
        let mut seen = vec![p.current().0];
        while let Some(e) = p.observe(rx(0, 64)) {
            seen.push(e.0);
            assert!(seen.len() < 100, "no convergence: {seen:?}");
        }
        assert_eq!(&seen[..6], &[200, 142, 113, 95, 83, 74]);
        assert_eq!(*seen.last().unwrap(), IXGBE_100K_ITR);
        assert!(seen.windows(2).all(|w| w[1] < w[0]), "{seen:?}");
        assert_eq!(p.observe(rx(0, 64)), None);
        assert_eq!(p.current(), Eitr(40));
    }

    #[test]
    fn smoothing_rising_stalls_short_of_the_target() {
        let mut p = IxgbeItr::new();
        run(&mut p, &[(1_000_000, Low, None)]);
        let mut seen = vec![p.current().0];
        while let Some(e) = p.observe(rx(0, 1_000_000)) {
            seen.push(e.0);
            assert!(seen.len() < 1_000, "no convergence: {seen:?}");
        }
        assert_eq!(&seen[..4], &[200, 212, 224, 237]);
        // Never reaches IXGBE_8K_ITR (500): the integer smoothing of
        // 500 and 490 gives 490 again.
        assert_eq!(p.current(), Eitr(490));
        assert_eq!(seen.len(), 48);
        assert_eq!(p.rx_latency(), Bulk);
        for _ in 0..10 {
            assert_eq!(p.observe(rx(0, 1_000_000)), None);
            assert_eq!(p.current(), Eitr(490));
        }
        // The same stall rising to IXGBE_20K_ITR: 40 → … → 190.
        let mut q = IxgbeItr::new();
        while q.observe(rx(0, 64)).is_some() {}
        assert_eq!(q.current(), Eitr(40));
        // itr 40: 10 µs assumed, 15 B/µs takes Lowest to Low.
        assert_eq!(q.observe(rx(0, 150)).map(|e| e.0), Some(43));
        assert_eq!(q.rx_latency(), Low);
        while q
            .observe(rx(0, 15 * u64::from(q.current().0 >> 2)))
            .is_some()
        {}
        assert_eq!((q.current(), q.rx_latency()), (Eitr(190), Low));
    }

    #[test]
    fn smoothing_arithmetic() {
        // (target, old, new)
        let table: &[(u32, u32, u32)] = &[
            (40, 200, 142),
            (40, 142, 113),
            (40, 41, 40), // falling always reaches the target
            (40, 500, 232),
            (500, 200, 212),
            (500, 489, 490),
            (500, 490, 490), // first fixed point below 500
            (500, 499, 499),
            (200, 40, 43),
            (200, 189, 190),
            (200, 190, 190),
            (200, 500, 434),
        ];
        for &(target, old, new) in table {
            assert_eq!(smooth(target, old), new, "{old} toward {target}");
        }
    }

    #[test]
    fn elapsed_time_is_assumed_not_measured() {
        // §V-B: the same bytes give the same decisions whether they
        // arrived within the assumed 50 µs or over a whole second (0.0006
        // B/µs really, yet "11 B/µs" to the driver).
        let script = [550u64, 1_050, 1_050, 64, 64, 64];
        let mut fast = IxgbeItr::new();
        let mut slow = IxgbeItr::new();
        let mut decisions = Vec::new();
        for (i, &bytes) in script.iter().enumerate() {
            let i = i as u64;
            let a = fast.observe(rx(i * 50_000, bytes));
            let b = slow.observe(rx(i * 1_000_000_000, bytes));
            assert_eq!(a, b, "step {i}");
            assert_eq!(fast, slow, "step {i}");
            decisions.push(a.map(|e| e.0));
        }
        assert_eq!(
            decisions,
            [None, Some(212), Some(210), Some(147), Some(115), Some(96)]
        );
    }

    #[test]
    fn busier_container_sets_the_target() {
        // TX bulk, RX light: the vector follows TX (max of the states).
        let mut p = IxgbeItr::new();
        let both = |tx_bytes| ItrSample {
            time_ns: 0,
            rx_packets: 1,
            rx_bytes: 64,
            tx_packets: 100,
            tx_bytes,
        };
        assert_eq!(p.observe(both(100_000)), None); // TX → Low: target 200
        assert_eq!((p.rx_latency(), p.tx_latency()), (Lowest, Low));
        assert_eq!(p.observe(both(100_000)), Some(Eitr(212))); // TX → Bulk
        assert_eq!((p.rx_latency(), p.tx_latency()), (Lowest, Bulk));

        // TX goes idle: its container has no packets, so it keeps Bulk and
        // still holds the vector up even though only RX is (lightly) busy.
        assert_eq!(p.observe(rx(0, 64)), Some(Eitr(224)));
        assert_eq!((p.rx_latency(), p.tx_latency()), (Lowest, Bulk));

        // The roles swapped: RX bulk, TX light.
        let mut q = IxgbeItr::new();
        let s = ItrSample {
            tx_packets: 1,
            tx_bytes: 64,
            ..rx(0, 100_000)
        };
        q.observe(s);
        assert_eq!(q.observe(s), Some(Eitr(212)));
        assert_eq!((q.rx_latency(), q.tx_latency()), (Bulk, Lowest));
    }

    #[test]
    fn no_packets_no_update() {
        // A sample without packets leaves both states; the vector still
        // moves toward the target of the (unchanged) states.
        let mut p = IxgbeItr::new();
        run(&mut p, &[(550, Low, None)]);
        assert_eq!(p.observe(ItrSample::default()), None);
        assert_eq!((p.rx_latency(), p.current()), (Low, Eitr(200)));
    }
}
