//! An adaptive `irq-suspend-timeout`: set from the longest batch the
//! application served, instead of the thesis's fixed 20 ms.
//!
//! Why the batch: while `epoll_wait` returns events, `napi_suspend_irqs`
//! arms the NAPI's timer with `irq_suspend_timeout`, and the application's
//! next `epoll_wait` renews or ends the suspension. The timeout is only a
//! safety net for an application that stops calling `epoll_wait`; the
//! kernel's documentation says it "should be set large enough to cover the
//! processing of an entire application batch" (Documentation/networking/
//! napi.rst, IRQ suspension; docs/notes/second-measurement-sources.md
//! §2.5), and the thesis that it "should be set high enough to ensure that
//! the application can complete processing without interference" (§3.2.2).
//! A timeout shorter than a batch lets the timer's softirq poll the queue in
//! the middle of the application's work, which is the disruption IRQ
//! suspension exists to avoid; one far longer than every batch only delays
//! the safety net.
//!
//! The rule (a judgement: no source gives one): the timeout is the longest
//! batch of the last window times `margin`, within `[floor_ns, ceiling_ns]`.
//! It rises at once, since a batch longer than the timeout is disrupted now,
//! and falls only when the new value is at most half the one in force, so
//! that a steady load does not reset the knob at every window. A window
//! without a batch changes nothing.

/// The decision's state: the parameters and the timeout in force.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchTimeout {
    margin: f64,
    floor_ns: u64,
    ceiling_ns: u64,
    current_ns: Option<u64>,
}

impl BatchTimeout {
    /// `margin` ≥ 1 (the timeout's multiple of the longest batch),
    /// `0 < floor_ns ≤ ceiling_ns` (0 would turn suspension off:
    /// `napi_suspend_irqs` arms no timer then). Errors name the parameter.
    pub fn new(margin: f64, floor_ns: u64, ceiling_ns: u64) -> Result<Self, String> {
        if !(margin.is_finite() && (1.0..=1000.0).contains(&margin)) {
            return Err(format!("margin must be between 1 and 1000 (got {margin})"));
        }
        if floor_ns == 0 {
            return Err("floor_ns must be above 0 (an irq-suspend-timeout of 0 turns IRQ suspension off)".into());
        }
        if ceiling_ns < floor_ns {
            return Err(format!("ceiling_ns ({ceiling_ns}) must be at least floor_ns ({floor_ns})"));
        }
        Ok(BatchTimeout { margin, floor_ns, ceiling_ns, current_ns: None })
    }

    /// The timeout in force, ns (None before the first decision).
    pub fn current_ns(&self) -> Option<u64> {
        self.current_ns
    }

    /// The longest batch that ended in the last window (0: none), ns → the
    /// timeout to set now, ns, when it changes.
    pub fn observe(&mut self, longest_batch_ns: u64) -> Option<u64> {
        if longest_batch_ns == 0 {
            return None;
        }
        let wanted = (longest_batch_ns as f64 * self.margin).ceil();
        let target = if wanted >= self.ceiling_ns as f64 { self.ceiling_ns } else { (wanted as u64).max(self.floor_ns) };
        let set = match self.current_ns {
            None => true,
            Some(c) => target > c || target.saturating_mul(2) <= c,
        };
        if set {
            self.current_ns = Some(target);
            Some(target)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_batch_sets_margin_times_it_within_the_bounds() {
        let mut p = BatchTimeout::new(2.0, 10_000, 20_000_000).unwrap();
        assert_eq!(p.observe(0), None, "no batch: nothing to decide");
        assert_eq!(p.observe(30_000), Some(60_000));
        let mut p = BatchTimeout::new(2.0, 10_000, 20_000_000).unwrap();
        assert_eq!(p.observe(1_000), Some(10_000), "the floor");
        let mut p = BatchTimeout::new(2.0, 10_000, 20_000_000).unwrap();
        assert_eq!(p.observe(15_000_000), Some(20_000_000), "the ceiling");
    }

    #[test]
    fn it_rises_at_once_and_falls_only_below_half() {
        let mut p = BatchTimeout::new(2.0, 10_000, 20_000_000).unwrap();
        assert_eq!(p.observe(50_000), Some(100_000));
        assert_eq!(p.observe(50_001), Some(100_002), "a longer batch raises it at once");
        assert_eq!(p.observe(30_000), None, "60 µs is above half of 100 µs: kept");
        assert_eq!(p.observe(25_001), None);
        assert_eq!(p.observe(25_000), Some(50_000), "at half, it falls");
        assert_eq!(p.current_ns(), Some(50_000));
        assert_eq!(p.observe(0), None, "an idle window keeps it");
    }

    #[test]
    fn bad_parameters_are_refused_by_name() {
        assert!(BatchTimeout::new(0.5, 1, 2).unwrap_err().starts_with("margin"));
        assert!(BatchTimeout::new(f64::NAN, 1, 2).unwrap_err().starts_with("margin"));
        assert!(BatchTimeout::new(2.0, 0, 2).unwrap_err().starts_with("floor_ns"));
        assert!(BatchTimeout::new(2.0, 3, 2).unwrap_err().starts_with("ceiling_ns"));
    }
}
