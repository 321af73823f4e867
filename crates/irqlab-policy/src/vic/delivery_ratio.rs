//! Algorithm 1 of the vIC paper (`IntrCoalesceRecalc`): the delivery ratio
//! R = countUp / skipUp from the commands in flight and the IOPS.
//!
//! No coalescing (R = 1) below `iopsThreshold` (a held completion would
//! wait too long for the next: at 2000 IOPS, 500 µs on average) or below
//! `cifThreshold` commands in flight (`dd`, one I/O at a time, would hang).
//! Above, R steps down with CIF: 4/5, 3/4, 2/3, then 8/CIF (with
//! `cifThreshold` 4) as `1 / (CIF / (2 · cifThreshold))` in integer
//! arithmetic, since the VMM has no floating point.

/// R = `count_up` / `skip_up`: deliver `count_up` of every `skip_up`
/// completions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeliveryRatio {
    pub count_up: u32,
    pub skip_up: u32,
}

impl DeliveryRatio {
    /// Every completion delivered.
    pub const ALL: DeliveryRatio = DeliveryRatio {
        count_up: 1,
        skip_up: 1,
    };

    /// R as a number (for reports; the policy itself never divides).
    pub fn r(&self) -> f64 {
        f64::from(self.count_up) / f64::from(self.skip_up)
    }
}

/// Algorithm 1 for `cif` commands in flight at `iops` completions per
/// second, with the thresholds `cif_threshold` (default 4) and
/// `iops_threshold` (default 2000). `cif_threshold` must be at least 1.
pub fn delivery_ratio(
    iops: u64,
    cif: u32,
    cif_threshold: u32,
    iops_threshold: u64,
) -> DeliveryRatio {
    let t = cif_threshold.max(1);
    if iops < iops_threshold || cif < t {
        DeliveryRatio::ALL
    } else if cif < 2 * t {
        DeliveryRatio {
            count_up: 4,
            skip_up: 5,
        }
    } else if cif < 3 * t {
        DeliveryRatio {
            count_up: 3,
            skip_up: 4,
        }
    } else if cif < 4 * t {
        DeliveryRatio {
            count_up: 2,
            skip_up: 3,
        }
    } else {
        DeliveryRatio {
            count_up: 1,
            skip_up: cif / (2 * t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Table 1 of the paper (cifThreshold 4): CIF → R in percent.
    #[test]
    fn table_1() {
        let r = |cif| (delivery_ratio(10_000, cif, 4, 2000).r() * 100.0).round() as u32;
        for cif in 1..=3 {
            assert_eq!(r(cif), 100, "CIF {cif}");
        }
        for cif in 4..=7 {
            assert_eq!(r(cif), 80, "CIF {cif}");
        }
        for cif in 8..=11 {
            assert_eq!(r(cif), 75, "CIF {cif}");
        }
        for cif in 12..=15 {
            assert_eq!(r(cif), 67, "CIF {cif}: 2/3, the paper's 66 %");
        }
        // 8 / CIF wherever CIF is a multiple of 8 ("e.g., CIF = 64: 12 %").
        for cif in [16, 24, 32, 40, 48, 56, 64, 128] {
            let d = delivery_ratio(10_000, cif, 4, 2000);
            assert_eq!((d.count_up, d.skip_up), (1, cif / 8), "CIF {cif}");
            assert!((d.r() - 8.0 / f64::from(cif)).abs() < 1e-12);
        }
        assert_eq!(r(64), 13, "12.5 %");
        // Between multiples the integer division rounds skipUp down.
        assert_eq!(
            delivery_ratio(10_000, 23, 4, 2000),
            DeliveryRatio {
                count_up: 1,
                skip_up: 2
            }
        );
    }

    #[test]
    fn low_iops_or_low_cif_switch_coalescing_off() {
        assert_eq!(delivery_ratio(1999, 64, 4, 2000), DeliveryRatio::ALL);
        assert_eq!(
            delivery_ratio(2000, 64, 4, 2000),
            DeliveryRatio {
                count_up: 1,
                skip_up: 8
            }
        );
        assert_eq!(delivery_ratio(1_000_000, 3, 4, 2000), DeliveryRatio::ALL);
        // cifThreshold 2 (the TPC-C runs): the steps come twice as early.
        assert_eq!(
            delivery_ratio(10_000, 2, 2, 2000),
            DeliveryRatio {
                count_up: 4,
                skip_up: 5
            }
        );
        assert_eq!(
            delivery_ratio(10_000, 8, 2, 2000),
            DeliveryRatio {
                count_up: 1,
                skip_up: 2
            }
        );
        assert_eq!(
            delivery_ratio(10_000, 64, 2, 2000),
            DeliveryRatio {
                count_up: 1,
                skip_up: 16
            }
        );
    }
}
