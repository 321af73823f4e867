//! §3.3 of the vIC paper: before the VMkernel sends the IPI that makes a
//! running VMM notice a posted completion, it compares the time of the
//! VMM's last virtual interrupt (`SharedArea.timeStamp`, written by
//! Algorithm 2) with now: if the VMM delivered one within the threshold,
//! it is taken to be active and will find the completion on its own (an
//! exit, a halt, a timer), so the IPI is not sent. The IPI is only a
//! latency optimisation; correctness never depends on it. ESX's default
//! threshold is 100 µs (§4.5); 0 sends every IPI.

/// The VMkernel's IPI check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpiDeferral {
    /// Send the IPI only if the last virtual interrupt is older than this, ns.
    pub threshold_ns: u64,
}

impl Default for IpiDeferral {
    fn default() -> Self {
        IpiDeferral {
            threshold_ns: 100_000,
        }
    }
}

impl IpiDeferral {
    /// Send the IPI at `now_ns`, the VMM having last delivered a virtual
    /// interrupt at `last_delivery_ns` (None: never)? "If the time
    /// difference is greater than a configurable threshold, we post the
    /// IPI."
    pub fn send_ipi(&self, now_ns: u64, last_delivery_ns: Option<u64>) -> bool {
        match last_delivery_ns {
            None => true,
            Some(t) => self.threshold_ns == 0 || now_ns.saturating_sub(t) > self.threshold_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decision_table() {
        let d = IpiDeferral::default();
        // (now, last delivery) -> send?
        let rows: [(u64, Option<u64>, bool); 6] = [
            (1_000, None, true),
            (150_000, Some(100_000), false),
            (200_000, Some(100_000), false),
            (200_001, Some(100_000), true),
            (1_000_000, Some(0), true),
            (5, Some(10), false),
        ];
        for (now, last, send) in rows {
            assert_eq!(d.send_ipi(now, last), send, "now {now}, last {last:?}");
        }
        let always = IpiDeferral { threshold_ns: 0 };
        assert!(always.send_ipi(10, Some(10)));
    }
}
