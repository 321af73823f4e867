//! A static interrupt throttling rate, or throttling off: modes 1) and 2)
//! of ixgbe's ITR (Emmerich et al., SPECTS 2015, §II-B).
//!
//! The driver sets a vector's `q_vector->itr` once, from the
//! `InterruptThrottleRate` module parameter (`ixgbe_check_options` in
//! `ixgbe_param.c`: 0 is off, 1 is dynamic, any other rate N becomes
//! `(1000000 / N) << 2`) or from `ethtool -C ethX rx-usecs U`
//! (`ixgbe_set_coalesce` in `ixgbe_ethtool.c`: `U << 2` for U > 1). With
//! any value other than 1, `ixgbe_poll` never calls `ixgbe_set_itr`, so the
//! value stays as written: [`StaticItr::observe`](super::ItrPolicy::observe)
//! never decides anything.

use super::{Eitr, ItrPolicy, ItrSample, IXGBE_MAX_EITR};

/// A fixed ITR value (or [`Eitr::OFF`]) that no sample changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaticItr {
    itr: Eitr,
}

impl StaticItr {
    /// At most `rate_per_s` interrupts per second per vector, as
    /// `InterruptThrottleRate=rate_per_s` sets it (`(1000000 / rate) << 2`,
    /// [`Eitr::from_rate`]); 0 switches throttling off.
    ///
    /// The driver accepts only 0, 1 (dynamic: that is
    /// [`IxgbeItr`](super::IxgbeItr), not this type) and
    /// [`IXGBE_MIN_INT_RATE`](super::IXGBE_MIN_INT_RATE)`..=`[`IXGBE_MAX_INT_RATE`](super::IXGBE_MAX_INT_RATE)
    /// (`ixgbe_validate_option` replaces anything else by its default);
    /// this constructor does not check the range, so a caller can model
    /// any value.
    pub fn new(rate_per_s: u32) -> StaticItr {
        StaticItr {
            itr: Eitr::from_rate(rate_per_s),
        }
    }

    /// The value `ethtool -C ethX rx-usecs usecs` programs
    /// (`ixgbe_set_coalesce`): `usecs << 2` for `usecs > 1`, and 0 for
    /// throttling off.
    ///
    /// `rx-usecs 1` is not a static interval in ixgbe: it selects the
    /// dynamic ITR (`rx_itr_setting == 1`, which starts the vector at
    /// `IXGBE_20K_ITR` and runs `ixgbe_set_itr` on every poll exit), i.e.
    /// [`IxgbeItr`](super::IxgbeItr), so it is refused here. Values above
    /// `IXGBE_MAX_EITR >> 2` (1022 µs) are refused as the driver refuses
    /// them (`-EINVAL`).
    pub fn from_rx_usecs(usecs: u32) -> Result<StaticItr, String> {
        let max_usecs = u32::from(IXGBE_MAX_EITR >> 2);
        match usecs {
            0 => Ok(StaticItr { itr: Eitr::OFF }),
            1 => Err(
                "rx-usecs 1 selects ixgbe's dynamic ITR (use IxgbeItr), not a static interval; \
                 accepted static values are 0 (off) and 2..=1022 µs"
                    .to_string(),
            ),
            u if u > max_usecs => Err(format!(
                "rx-usecs {u} is out of range: ixgbe accepts 0 (off), 1 (dynamic) and \
                 2..={max_usecs} µs"
            )),
            // u <= 1022, so u << 2 <= 4088 fits the u16.
            u => Ok(StaticItr {
                itr: Eitr((u << 2) as u16),
            }),
        }
    }
}

impl ItrPolicy for StaticItr {
    fn current(&self) -> Eitr {
        self.itr
    }

    /// Static and off never adapt: `ixgbe_poll` only calls `ixgbe_set_itr`
    /// when `rx_itr_setting == 1`.
    fn observe(&mut self, _s: ItrSample) -> Option<Eitr> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_give_the_drivers_values_and_intervals() {
        // (rate per s, q_vector->itr, hardware gap in ns: (itr & 0xFF8) × 256)
        let table: &[(u32, u16, u64)] = &[
            (0, 0, 0),               // off
            (100_000, 40, 40 * 256), // IXGBE_100K_ITR: 10 µs, 10.24 µs on the 82599
            (20_000, 200, 51_200),   // IXGBE_20K_ITR: 50 µs, 51.2 µs
            (8_000, 500, 496 * 256), // IXGBE_8K_ITR: bits 2:0 dropped → 496
            (10_000, 400, 400 * 256),
            (488_281, 8, 8 * 256),     // IXGBE_MAX_INT_RATE: 1000000/488281 = 2
            (3_000, 1332, 1328 * 256), // 333 << 2, low bits dropped
        ];
        for &(rate, itr, ns) in table {
            let p = StaticItr::new(rate);
            assert_eq!(p.current(), Eitr(itr), "rate {rate}");
            assert_eq!(p.current().interval_ns(), ns, "rate {rate}");
        }
    }

    #[test]
    fn rx_usecs_like_ethtool() {
        let table: &[(u32, Option<u16>)] = &[
            (0, Some(0)),
            (1, None), // dynamic: IxgbeItr
            (2, Some(8)),
            (10, Some(40)),
            (50, Some(200)),
            (125, Some(500)),
            (1022, Some(4088)),
            (1023, None), // > IXGBE_MAX_EITR >> 2: -EINVAL
        ];
        for &(usecs, want) in table {
            let got = StaticItr::from_rx_usecs(usecs).ok().map(|p| p.current().0);
            assert_eq!(got, want, "rx-usecs {usecs}");
        }
        let err = StaticItr::from_rx_usecs(1).unwrap_err();
        assert!(err.contains("dynamic") && err.contains("IxgbeItr"), "{err}");
        let err = StaticItr::from_rx_usecs(5000).unwrap_err();
        assert!(err.contains("5000") && err.contains("1022"), "{err}");
    }

    #[test]
    fn observe_never_changes_anything() {
        let mut p = StaticItr::new(20_000);
        let samples = [
            ItrSample::default(),
            ItrSample {
                time_ns: 1_000_000,
                rx_packets: 10_000,
                rx_bytes: 15_000_000,
                tx_packets: 10_000,
                tx_bytes: 15_000_000,
            },
            ItrSample {
                time_ns: 2_000_000,
                rx_packets: 1,
                rx_bytes: 64,
                ..Default::default()
            },
        ];
        for s in samples {
            assert_eq!(p.observe(s), None);
            assert_eq!(p.current(), Eitr(200));
        }
        let mut off = StaticItr::new(0);
        assert_eq!(off.observe(samples[1]), None);
        assert_eq!(off.current(), Eitr::OFF);
        assert_eq!(off.current().max_rate_per_s(), 0.0);
    }
}
