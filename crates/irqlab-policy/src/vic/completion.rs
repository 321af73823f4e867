//! Algorithm 2 of the vIC paper: the VMM's I/O completion handler decides,
//! for each completion, whether to fire a virtual interrupt now or let a
//! later completion's interrupt carry it.
//!
//! A counter runs from 1: while it is below `countUp` each completion is
//! delivered; then completions are held until the counter reaches
//! `skipUp`, which delivers and resets it to 1. So 3/4 gives ⟨1, yes⟩
//! ⟨2, yes⟩ ⟨3, no⟩ ⟨4, yes⟩ and 1/5 gives four held completions, then one
//! delivery (§3.2.2). With fewer than `cifThreshold` commands left in
//! flight the completion is delivered at once and the counter restarts,
//! so that a held completion never waits for an I/O that will not come.
//! Every `epochPeriod` (200 ms) the first completion after the epoch
//! re-chooses the ratio (Algorithm 1) from the CIF then and the IOPS over
//! the epoch that ended. The time of the last delivery is what the
//! VMkernel's IPI check reads (§3.3, [`super::IpiDeferral`]).

use super::delivery_ratio::{delivery_ratio, DeliveryRatio};

/// vIC's configuration (the paper's defaults in [`Default`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VicParams {
    /// Below this many commands in flight, no coalescing (default 4).
    pub cif_threshold: u32,
    /// Below this many completions per second, no coalescing (default 2000).
    pub iops_threshold: u64,
    /// How often the ratio is re-chosen, ns (default 200 ms).
    pub epoch_ns: u64,
}

impl Default for VicParams {
    fn default() -> Self {
        VicParams {
            cif_threshold: 4,
            iops_threshold: 2000,
            epoch_ns: 200_000_000,
        }
    }
}

impl VicParams {
    /// One sentence naming the field and its accepted range, if any is out.
    pub fn validate(&self) -> Result<(), String> {
        if self.cif_threshold == 0 || self.cif_threshold > 1 << 20 {
            return Err(format!(
                "cif_threshold must be within 1..={} (got {}).",
                1 << 20,
                self.cif_threshold
            ));
        }
        if self.epoch_ns == 0 {
            return Err("epoch_ns must be at least 1 ns (got 0).".to_string());
        }
        Ok(())
    }
}

/// The VMM's coalescing state for one virtual adapter.
#[derive(Clone, Debug, PartialEq)]
pub struct Vic {
    params: VicParams,
    ratio: DeliveryRatio,
    counter: u32,
    epoch_start_ns: u64,
    completions_in_epoch: u64,
    last_iops: u64,
    last_delivery_ns: Option<u64>,
    delivered: u64,
    completions: u64,
    epochs: u64,
}

impl Vic {
    /// Coalescing off (R = 1) until the first epoch ends at
    /// `now_ns + epoch_ns`.
    pub fn new(params: VicParams, now_ns: u64) -> Result<Vic, String> {
        params.validate()?;
        Ok(Vic {
            params,
            ratio: DeliveryRatio::ALL,
            counter: 1,
            epoch_start_ns: now_ns,
            completions_in_epoch: 0,
            last_iops: 0,
            last_delivery_ns: None,
            delivered: 0,
            completions: 0,
            epochs: 0,
        })
    }

    /// A completion at `now_ns` leaving `cif` commands in flight: deliver
    /// a virtual interrupt now?
    pub fn on_completion(&mut self, now_ns: u64, cif: u32) -> bool {
        self.completions += 1;
        self.completions_in_epoch += 1;
        let diff = now_ns.saturating_sub(self.epoch_start_ns);
        if diff > self.params.epoch_ns {
            // The only division, once per epoch, off the per-completion path.
            self.last_iops = self.completions_in_epoch * 1_000_000_000 / diff;
            self.ratio = delivery_ratio(
                self.last_iops,
                cif,
                self.params.cif_threshold,
                self.params.iops_threshold,
            );
            self.epoch_start_ns = now_ns;
            self.completions_in_epoch = 0;
            self.epochs += 1;
        }
        let deliver = if cif < self.params.cif_threshold {
            self.counter = 1;
            true
        } else if self.counter < self.ratio.count_up {
            self.counter += 1;
            true
        } else if self.counter >= self.ratio.skip_up {
            self.counter = 1;
            true
        } else {
            self.counter += 1;
            false
        };
        if deliver {
            self.last_delivery_ns = Some(now_ns);
            self.delivered += 1;
        }
        deliver
    }

    /// The ratio in force.
    pub fn ratio(&self) -> DeliveryRatio {
        self.ratio
    }

    /// The counter Algorithm 2 will look at for the next completion.
    pub fn counter(&self) -> u32 {
        self.counter
    }

    /// IOPS measured over the last epoch that ended (0 before the first).
    pub fn iops(&self) -> u64 {
        self.last_iops
    }

    /// When the last virtual interrupt was delivered (`SharedArea.timeStamp`).
    pub fn last_delivery_ns(&self) -> Option<u64> {
        self.last_delivery_ns
    }

    /// Completions seen and virtual interrupts delivered so far.
    pub fn completions(&self) -> u64 {
        self.completions
    }
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Epochs ended so far (each re-chose the ratio).
    pub fn epochs(&self) -> u64 {
        self.epochs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Vic whose ratio is `count_up`/`skip_up` (set through Algorithm 1
    /// by one epoch at high IOPS and the CIF that gives that ratio).
    fn with_ratio(cif: u32) -> Vic {
        let p = VicParams {
            epoch_ns: 1000,
            ..VicParams::default()
        };
        let mut v = Vic::new(p, 0).unwrap();
        // Ten completions in 1001 ns: far above 2000 IOPS; the last ends the epoch.
        for i in 0..10 {
            v.on_completion(i * 100 + 101, cif);
        }
        v.counter = 1;
        v
    }

    fn sequence(v: &mut Vic, cif: u32, n: usize) -> Vec<(u32, bool)> {
        (0..n)
            .map(|i| {
                let c = v.counter();
                (c, v.on_completion(2000 + i as u64, cif))
            })
            .collect()
    }

    #[test]
    fn the_papers_sequences() {
        // CIF 8-11 gives 3/4: ⟨1, yes⟩, ⟨2, yes⟩, ⟨3, no⟩, ⟨4, yes⟩.
        let mut v = with_ratio(8);
        assert_eq!(
            v.ratio(),
            DeliveryRatio {
                count_up: 3,
                skip_up: 4
            }
        );
        assert_eq!(
            sequence(&mut v, 8, 8),
            [
                (1, true),
                (2, true),
                (3, false),
                (4, true),
                (1, true),
                (2, true),
                (3, false),
                (4, true)
            ]
        );
        // CIF 40 gives 1/5: ⟨1, no⟩ … ⟨4, no⟩, ⟨5, yes⟩.
        let mut v = with_ratio(40);
        assert_eq!(
            v.ratio(),
            DeliveryRatio {
                count_up: 1,
                skip_up: 5
            }
        );
        assert_eq!(
            sequence(&mut v, 40, 5),
            [(1, false), (2, false), (3, false), (4, false), (5, true)]
        );
    }

    #[test]
    fn over_many_completions_the_delivered_share_is_the_ratio() {
        for (cif, count_up, skip_up) in [(4, 4, 5), (8, 3, 4), (12, 2, 3), (16, 1, 2), (64, 1, 8)] {
            let mut v = with_ratio(cif);
            let before = v.delivered();
            let n = skip_up as u64 * 1000;
            for i in 0..n {
                v.on_completion(2000 + i, cif);
            }
            assert_eq!(v.delivered() - before, count_up as u64 * 1000, "CIF {cif}");
        }
    }

    #[test]
    fn few_commands_in_flight_deliver_at_once_and_restart_the_counter() {
        let mut v = with_ratio(40);
        assert!(!v.on_completion(2000, 40));
        assert!(!v.on_completion(2001, 40));
        assert!(v.on_completion(2002, 3), "CIF 3 < cifThreshold 4");
        assert_eq!(v.counter(), 1);
        assert_eq!(v.last_delivery_ns(), Some(2002));
    }

    #[test]
    fn the_ratio_changes_only_when_an_epoch_ends_and_follows_the_epochs_iops() {
        let p = VicParams::default(); // 200 ms epochs
        let mut v = Vic::new(p, 0).unwrap();
        // Before the first epoch ends: R = 1 whatever the CIF.
        assert!((0..100).all(|i| v.on_completion(i * 1_000_000, 64)));
        assert_eq!(v.ratio(), DeliveryRatio::ALL);
        // 100 completions in the first 200+ ms: 500 IOPS, below 2000: still R = 1.
        assert_eq!(v.epochs(), 0);
        v.on_completion(201_000_000, 64);
        assert_eq!(v.epochs(), 1);
        assert_eq!(v.iops(), 101 * 1_000_000_000 / 201_000_000);
        assert_eq!(v.ratio(), DeliveryRatio::ALL);
        // 100 000 completions in the next epoch (500k IOPS) at CIF 64: R = 1/8.
        for i in 0..100_000u64 {
            v.on_completion(201_000_000 + 1 + i * 2_000, 64);
        }
        v.on_completion(402_000_000, 64);
        assert!(v.iops() > 400_000, "{}", v.iops());
        assert_eq!(
            v.ratio(),
            DeliveryRatio {
                count_up: 1,
                skip_up: 8
            }
        );
    }

    #[test]
    fn bad_parameters_are_one_sentence() {
        let e = Vic::new(
            VicParams {
                cif_threshold: 0,
                ..VicParams::default()
            },
            0,
        )
        .unwrap_err();
        assert!(e.starts_with("cif_threshold") && e.ends_with('.'), "{e}");
        let e = Vic::new(
            VicParams {
                epoch_ns: 0,
                ..VicParams::default()
            },
            0,
        )
        .unwrap_err();
        assert!(e.starts_with("epoch_ns"), "{e}");
    }
}
