//! The linear packet-rate ITR of Emmerich et al., "Optimizing Latency and
//! CPU Load in Packet Processing Systems", SPECTS 2015, §V.
//!
//! The paper replaces ixgbe's 3-state machine ([`IxgbeItr`](super::IxgbeItr))
//! by fixing its three flaws:
//!
//! - §V-A: count packets, not bytes (per-packet cost dominates);
//! - §V-B: measure the elapsed time (`getrawmonotonic`) instead of assuming
//!   the vector interrupted at its throttled rate;
//! - §V-C: map the packet rate ρ linearly to an interrupt rate,
//!   `r = r_max − ρ·(r_max − r_min)/ρ_max`, with r_max = 100 000/s and
//!   r_min = 8 000/s (ixgbe's own extremes) and ρ_max = 2.1 Mpps, the load
//!   at which their system saturated.
//!
//! This is a port of the authors' patch to `ixgbe_update_itr` and
//! `ixgbe_set_itr` for ixgbe 3.23.2 (commit fcd21e9 of the published
//! tree, "modified itr algorithm"), with its integer arithmetic and its
//! 50 µs minimum between two adaptations of a ring container. Time comes
//! from [`ItrSample::time_ns`]; the sample's byte counts are not used.
//!
//! Deviations from the patch, both deliberate:
//!
//! - The patch divides the packet count by `time_passed.tv_nsec` only,
//!   dropping whole seconds of elapsed time: after an idle second or more
//!   it computes a wildly high packet rate (or divides by zero). We divide
//!   by the full elapsed nanoseconds, as the paper's text intends
//!   ("measuring elapsed time properly", §V-B).
//! - The patch only stores the container's new ITR when
//!   `itr_setting != ring_container->itr`, comparing an interrupt rate
//!   (8 000..100 000) with an EITR value (40..500): they never match, so it
//!   always stores; we store unconditionally, with the same effect.
//!
//! Kept as the driver does it: the containers' ITR values start at 0
//! (zeroed by `kzalloc`), and `ixgbe_set_itr` writes the maximum of the two
//! to the vector. So until one container has adapted once (it needs
//! packets, and 50 µs since its `last_update`, which also starts at 0), the
//! first poll exit switches throttling off (EITR 0).

use super::{Eitr, ItrPolicy, ItrSample, IXGBE_20K_ITR, IXGBE_MAX_INT_RATE, IXGBE_MIN_INT_RATE};

/// The constants of the linear ITR (paper §V-C; `MAXIRQ`, `MINIRQ`,
/// `MAXPACKETS` and the 50 µs wait of the patch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinearItrParams {
    /// r_max: the interrupt rate at no load (`MAXIRQ`, 100 000/s).
    pub max_rate_per_s: u32,
    /// r_min: the interrupt rate at and above ρ_max (`MINIRQ`, 8 000/s).
    pub min_rate_per_s: u32,
    /// ρ_max, packets per second: the paper's 2.1 Mpps. The patch
    /// hard-codes `MAXPACKETS 2000` packets per ms, i.e. 2.0 Mpps; set
    /// 2_000_000 to reproduce it exactly. Used in packets per ms
    /// (`rho_max_pps / 1000`, truncated), as the patch computes.
    pub rho_max_pps: u64,
    /// The minimum time between two adaptations of a ring container, ns
    /// (the patch's "50us minimum wait between itr adaptation"). Samples
    /// closer than this to the container's last update add to its count
    /// without adapting.
    pub min_update_ns: u64,
}

impl Default for LinearItrParams {
    fn default() -> Self {
        LinearItrParams {
            max_rate_per_s: 100_000,
            min_rate_per_s: 8_000,
            rho_max_pps: 2_100_000,
            min_update_ns: 50_000,
        }
    }
}

impl LinearItrParams {
    /// Checks that the formula is defined and the rates are ones ixgbe
    /// accepts; the error is one sentence naming the field.
    pub fn validate(&self) -> Result<(), String> {
        let range = IXGBE_MIN_INT_RATE..=IXGBE_MAX_INT_RATE;
        for (name, v) in [
            ("max_rate_per_s", self.max_rate_per_s),
            ("min_rate_per_s", self.min_rate_per_s),
        ] {
            if !range.contains(&v) {
                return Err(format!(
                    "{name} must be within {IXGBE_MIN_INT_RATE}..={IXGBE_MAX_INT_RATE} \
                     interrupts per second (got {v})."
                ));
            }
        }
        if self.min_rate_per_s >= self.max_rate_per_s {
            return Err(format!(
                "min_rate_per_s ({}) must be below max_rate_per_s ({}).",
                self.min_rate_per_s, self.max_rate_per_s
            ));
        }
        if self.rho_max_pps < 1000 {
            return Err(format!(
                "rho_max_pps must be at least 1000 packets per second, as the rate is \
                 computed in packets per ms (got {}).",
                self.rho_max_pps
            ));
        }
        Ok(())
    }
}

/// One `struct ixgbe_ring_container` as the patched driver uses it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Container {
    /// `total_packets`: completed since the last adaptation.
    total_packets: u64,
    /// `last_update` (a `timespec` the patch adds), ns; 0 until the first
    /// adaptation.
    last_update_ns: u64,
    /// `ring_container->itr`, widened to u16 by the patch: the EITR value
    /// this container asks for; 0 until its first adaptation.
    itr: u16,
}

impl Container {
    /// The patched `ixgbe_update_itr` at time `now_ns`.
    fn update(&mut self, now_ns: u64, p: &LinearItrParams) {
        if self.total_packets == 0 {
            return;
        }
        let elapsed_ns = now_ns.saturating_sub(self.last_update_ns);
        // Too soon: return without clearing, the packets keep adding up
        // until the container may adapt again. An elapsed time of 0 (with
        // min_update_ns = 0, or a clock that did not advance) gives no rate
        // either.
        if elapsed_ns < p.min_update_ns || elapsed_ns == 0 {
            return;
        }
        // ρ in packets per ms, over the measured time (§V-B; the whole
        // elapsed time, where the patch takes tv_nsec only).
        let rho_max_per_ms = p.rho_max_pps / 1000;
        let per_ms = u128::from(self.total_packets) * 1_000_000 / u128::from(elapsed_ns);
        let per_ms = per_ms.min(u128::from(rho_max_per_ms)) as u64;
        // r = r_max − ρ (r_max − r_min) / ρ_max (§V-C), truncated like the
        // patch's u64 arithmetic; per_ms <= ρ_max keeps r in [r_min, r_max].
        let (r_max, r_min) = (u64::from(p.max_rate_per_s), u64::from(p.min_rate_per_s));
        let rate = r_max - per_ms * (r_max - r_min) / rho_max_per_ms;
        // The patch converts with 4000000 / rate, not with
        // InterruptThrottleRate's (1000000 / rate) << 2 (Eitr::from_rate):
        // the two differ by the truncation, e.g. 74 vs 72 at 54 000/s.
        // rate >= IXGBE_MIN_INT_RATE (validated) keeps it below 4185.
        self.itr = (4_000_000 / rate) as u16;
        self.total_packets = 0;
        self.last_update_ns = now_ns;
    }
}

/// The paper's linear ITR for one interrupt vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinearItr {
    params: LinearItrParams,
    /// `q_vector->itr`.
    itr: u16,
    rx: Container,
    tx: Container,
}

impl Default for LinearItr {
    /// With [`LinearItrParams::default`] (the paper's constants).
    fn default() -> Self {
        LinearItr::new(LinearItrParams::default()).expect("the default parameters are valid")
    }
}

impl LinearItr {
    /// A vector as the patched driver sets it up: `q_vector->itr =
    /// IXGBE_20K_ITR` (`ixgbe_alloc_q_vector`, unchanged by the patch),
    /// both containers zeroed. Fails with [`LinearItrParams::validate`]'s
    /// sentence.
    pub fn new(params: LinearItrParams) -> Result<LinearItr, String> {
        params.validate()?;
        Ok(LinearItr {
            params,
            itr: IXGBE_20K_ITR,
            rx: Container::default(),
            tx: Container::default(),
        })
    }

    pub fn params(&self) -> &LinearItrParams {
        &self.params
    }

    /// The EITR value the RX container last asked for (0: not yet).
    pub fn rx_itr(&self) -> Eitr {
        Eitr(self.rx.itr)
    }

    /// The EITR value the TX container last asked for (0: not yet).
    pub fn tx_itr(&self) -> Eitr {
        Eitr(self.tx.itr)
    }
}

impl ItrPolicy for LinearItr {
    fn current(&self) -> Eitr {
        Eitr(self.itr)
    }

    /// The patched `ixgbe_set_itr`, after the clean routines added the
    /// sample's packets to the containers.
    fn observe(&mut self, s: ItrSample) -> Option<Eitr> {
        self.rx.total_packets = self.rx.total_packets.saturating_add(s.rx_packets);
        self.tx.total_packets = self.tx.total_packets.saturating_add(s.tx_packets);

        self.tx.update(s.time_ns, &self.params);
        self.rx.update(s.time_ns, &self.params);

        // No smoothing: the busier container's value is written directly.
        let new = self.rx.itr.max(self.tx.itr);
        if new == self.itr {
            return None;
        }
        self.itr = new;
        Some(Eitr(new))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const US: u64 = 1_000;

    fn rx(time_ns: u64, packets: u64) -> ItrSample {
        ItrSample {
            time_ns,
            rx_packets: packets,
            rx_bytes: packets * 64,
            ..Default::default()
        }
    }

    #[test]
    fn starts_at_20k_with_idle_containers() {
        let p = LinearItr::default();
        assert_eq!(p.current(), Eitr(IXGBE_20K_ITR));
        assert_eq!((p.rx_itr(), p.tx_itr()), (Eitr(0), Eitr(0)));
        assert_eq!(*p.params(), LinearItrParams::default());
    }

    #[test]
    fn packet_rate_maps_linearly_to_the_itr() {
        // One RX sample, `packets` over `elapsed` ns since time 0 (the
        // container's initial last_update).
        // (packets, elapsed ns, EITR = 4000000 / r)
        let table: &[(u64, u64, u16)] = &[
            (1, 1_000 * MS, 40), // ρ ≈ 0: r = 100 000
            (1, MS, 40),         // 1/ms: r = 99 957 → 40.02
            (1_050, MS, 74),     // ρ_max/2: r = 54 000 → 74.07
            (1_000, MS, 71),     // r = 100000 − 1000·92000/2100 = 56 191
            (2_050, MS, 392),    // r = 10 191
            (2_100, MS, 500),    // ρ_max: r = 8 000
            (5_000, MS, 500),    // capped at ρ_max
        ];
        for &(packets, elapsed, itr) in table {
            let mut p = LinearItr::default();
            let got = p.observe(rx(elapsed, packets));
            assert_eq!(got, Some(Eitr(itr)), "{packets} packets in {elapsed} ns");
            assert_eq!((p.rx_itr(), p.tx_itr()), (Eitr(itr), Eitr(0)));
        }
    }

    #[test]
    fn patch_constants_cap_at_2000_per_ms() {
        // MAXPACKETS 2000: ρ_max = 2.0 Mpps reaches r_min earlier.
        let patch = LinearItrParams {
            rho_max_pps: 2_000_000,
            ..Default::default()
        };
        // (packets per ms, EITR with the patch's ρ_max)
        let table: &[(u64, u16)] = &[(1_000, 74), (2_000, 500), (2_050, 500)];
        for &(packets, itr) in table {
            let mut p = LinearItr::new(patch).unwrap();
            assert_eq!(p.observe(rx(MS, packets)), Some(Eitr(itr)), "{packets}/ms");
        }
    }

    #[test]
    fn waits_50us_and_accumulates_packets() {
        let mut p = LinearItr::default();
        let t0 = MS;
        assert_eq!(p.observe(rx(t0, 1)), Some(Eitr(40)));
        // 40 packets every 20 µs: too soon at +20 and +40 µs, nothing is
        // cleared; at +60 µs all 120 count over 60 µs: 2000/ms, r = 12 381.
        assert_eq!(p.observe(rx(t0 + 20 * US, 40)), None);
        assert_eq!(p.observe(rx(t0 + 40 * US, 40)), None);
        assert_eq!(p.rx_itr(), Eitr(40));
        assert_eq!(p.observe(rx(t0 + 60 * US, 40)), Some(Eitr(323)));
        // Cleared and restarted at t0 + 60 µs: 10 packets over the next
        // 50 µs are 200/ms, r = 91 239.
        assert_eq!(p.observe(rx(t0 + 110 * US, 10)), Some(Eitr(43)));
    }

    #[test]
    fn elapsed_time_is_measured() {
        // §V-B: the same packets over twice the time are half the rate,
        // hence a higher interrupt rate (lower EITR).
        // (elapsed since the last update, EITR)
        let table: &[(u64, u16)] = &[(MS, 71), (2 * MS, 51), (4 * MS, 44)];
        for &(elapsed, itr) in table {
            let mut p = LinearItr::default();
            p.observe(rx(MS, 1)); // last_update = 1 ms
            assert_eq!(
                p.observe(rx(MS + elapsed, 1_000)),
                Some(Eitr(itr)),
                "{elapsed} ns"
            );
        }
        // Over a second and 10 µs: the whole elapsed time counts (1/ms,
        // r = 99 957). The patch's tv_nsec-only division would see 2000
        // packets in 10 µs and throttle to r_min (500).
        let mut p = LinearItr::default();
        p.observe(rx(MS, 2_100)); // → 500 (2100/ms)
        assert_eq!(
            p.observe(rx(MS + 1_000 * MS + 10 * US, 2_000)),
            Some(Eitr(40))
        );
    }

    #[test]
    fn busier_container_sets_the_vector() {
        let s = |t, rx_packets, tx_packets| ItrSample {
            time_ns: t,
            rx_packets,
            tx_packets,
            ..Default::default()
        };
        // (rx per ms, tx per ms, rx EITR, tx EITR, vector)
        let table: &[(u64, u64, u16, u16, u16)] = &[
            (100, 2_000, 41, 323, 323),
            (2_000, 100, 323, 41, 323),
            (1_050, 1_050, 74, 74, 74),
            (0, 1_000, 0, 71, 71), // RX never adapted: its 0 loses the max
        ];
        for &(r, t, ri, ti, v) in table {
            let mut p = LinearItr::default();
            assert_eq!(p.observe(s(MS, r, t)), Some(Eitr(v)), "{r}/{t}");
            assert_eq!((p.rx_itr(), p.tx_itr()), (Eitr(ri), Eitr(ti)), "{r}/{t}");
        }
        // An idle container keeps its last value (no packets, no update):
        // TX at r_min holds the vector at 500 while RX is nearly idle.
        let mut p = LinearItr::default();
        assert_eq!(p.observe(s(MS, 1, 3_000)), Some(Eitr(500)));
        assert_eq!(p.observe(s(2 * MS, 1, 0)), None);
        assert_eq!(
            (p.rx_itr(), p.tx_itr(), p.current()),
            (Eitr(40), Eitr(500), Eitr(500))
        );
    }

    #[test]
    fn unchanged_value_is_no_decision() {
        let mut p = LinearItr::default();
        assert_eq!(p.observe(rx(MS, 1_050)), Some(Eitr(74)));
        assert_eq!(p.observe(rx(2 * MS, 1_050)), None);
        assert_eq!(p.current(), Eitr(74));
    }

    #[test]
    fn before_any_adaptation_throttling_switches_off() {
        // The driver's quirk: both containers still 0, max(0, 0) = 0 is
        // written. Packets within 50 µs of last_update (0): no adaptation.
        let mut p = LinearItr::default();
        assert_eq!(p.observe(rx(10 * US, 500)), Some(Eitr::OFF));
        assert_eq!(p.current().interval_ns(), 0);
        // The 500 packets were kept; at 100 µs they are 5000/ms → r_min.
        assert_eq!(p.observe(rx(100 * US, 0)), Some(Eitr(500)));
        // Same without any packets at all.
        let mut q = LinearItr::default();
        assert_eq!(q.observe(ItrSample::default()), Some(Eitr::OFF));
    }

    #[test]
    fn zero_minimum_wait_and_a_still_clock() {
        let mut p = LinearItr::new(LinearItrParams {
            min_update_ns: 0,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(p.observe(rx(MS, 1_050)), Some(Eitr(74)));
        // Same instant again: no rate over 0 ns, the packets wait.
        assert_eq!(p.observe(rx(MS, 1_000)), None);
        // 1 µs later: 1001 packets in 1 µs, capped → r_min.
        assert_eq!(p.observe(rx(MS + US, 1)), Some(Eitr(500)));
        // A clock going backwards saturates to 0 elapsed: no update.
        assert_eq!(p.observe(rx(0, 10)), None);
    }

    #[test]
    fn validation_names_the_field() {
        let d = LinearItrParams::default();
        assert_eq!(d.validate(), Ok(()));
        // (params, field the error names, or None if valid)
        let table: &[(LinearItrParams, Option<&str>)] = &[
            (
                LinearItrParams {
                    max_rate_per_s: 488_282,
                    ..d
                },
                Some("max_rate_per_s"),
            ),
            (
                LinearItrParams {
                    max_rate_per_s: 488_281,
                    ..d
                },
                None,
            ),
            (
                LinearItrParams {
                    min_rate_per_s: 955,
                    ..d
                },
                Some("min_rate_per_s"),
            ),
            (
                LinearItrParams {
                    min_rate_per_s: 956,
                    ..d
                },
                None,
            ),
            (
                LinearItrParams {
                    min_rate_per_s: 100_000,
                    ..d
                },
                Some("min_rate_per_s"),
            ),
            (
                LinearItrParams {
                    rho_max_pps: 999,
                    ..d
                },
                Some("rho_max_pps"),
            ),
            (
                LinearItrParams {
                    rho_max_pps: 1_000,
                    ..d
                },
                None,
            ),
            (
                LinearItrParams {
                    min_update_ns: 0,
                    ..d
                },
                None,
            ),
            (
                LinearItrParams {
                    min_update_ns: u64::MAX,
                    ..d
                },
                None,
            ),
        ];
        for (params, field) in table {
            match (params.validate(), field) {
                (Ok(()), None) => assert!(LinearItr::new(*params).is_ok()),
                (Err(e), Some(f)) => {
                    assert!(e.starts_with(f) && e.ends_with('.'), "{e}");
                    assert_eq!(LinearItr::new(*params).unwrap_err(), e);
                }
                (got, want) => panic!("{params:?}: got {got:?}, want an error on {want:?}"),
            }
        }
    }
}
