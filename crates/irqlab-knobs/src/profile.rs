//! The interrupt-handling profiles: the four of the thesis (appendix A),
//! named as in docs/architecture.md ("Profiles"), then two that map
//! configurations of Cai & Karsten
//! (SIGMETRICS 2024) onto Linux 6.13 knobs (`irq-batching`,
//! `kernel-polling`; docs/calibration.md, "The second measurement"). A
//! profile is a set of knob overrides on the NIC coalescing, the per-NAPI
//! configuration and the epoll busy-poll parameters; it never changes a cost
//! constant.

use std::fmt;

use crate::table::{Knob, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// Fully interrupt driven, one interrupt per packet (thesis A.1).
    NoCoalescing,
    /// NIC default: DIM-driven adaptive coalescing (thesis A.2).
    AdaptiveCoalescing,
    /// Non-blocking epoll busy polling with IRQs deferred for 5 ms (thesis A.3, §3.2.1).
    BusyWait,
    /// Blocking epoll busy polling with IRQ suspension (thesis A.4, §3.2.2).
    IrqSuspend,
    /// IRQ deferral without busy polling: adaptive coalescing as
    /// `adaptive-coalescing`, `napi_defer_hard_irqs` 100, `gro_flush_timeout`
    /// 20 µs, blocking epoll without busy poll. The definition of Cai
    /// & Karsten's "IRQ batching" (847k); its knobs are the IRQ-suspension
    /// cover letter's (v7) `defer20` case. The 2023 paper's own knob values
    /// for this configuration are unknown (its text was not available;
    /// secondary sources call it "IRQ packing").
    IrqBatching,
    /// The nearest Linux 6.13 configuration to Cai & Karsten's "kernel
    /// polling" prototype (947k), as its author describes it: epoll masks
    /// the queue's IRQ while it returns events, with no deferral. This is a
    /// judgement, not a published knob set: irq-suspend's epoll parameters
    /// (prefer_busy_poll, budget 64, busy_poll_usecs 0, blocking) and
    /// `irq_suspend_timeout` 20 ms, but `napi_defer_hard_irqs` 0 and
    /// `gro_flush_timeout` 0 (the cover letter's `suspend0` case). Without
    /// deferral the kernel's busy poll cannot take over from the interrupt
    /// loop (napi.rst: "Loop 3 cannot take control from Loop 1"), and the
    /// cover letter measured suspend0 about equal to its baseline, so on
    /// Linux 6.13 this configuration need not behave like the prototype.
    KernelPolling,
}

impl Profile {
    /// Every profile: the thesis's four, then those of Cai & Karsten.
    pub const ALL: [Profile; 6] = [
        Profile::NoCoalescing,
        Profile::AdaptiveCoalescing,
        Profile::BusyWait,
        Profile::IrqSuspend,
        Profile::IrqBatching,
        Profile::KernelPolling,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Profile::NoCoalescing => "no-coalescing",
            Profile::AdaptiveCoalescing => "adaptive-coalescing",
            Profile::BusyWait => "busy-wait",
            Profile::IrqSuspend => "irq-suspend",
            Profile::IrqBatching => "irq-batching",
            Profile::KernelPolling => "kernel-polling",
        }
    }

    pub fn by_name(name: &str) -> Result<Profile, String> {
        Profile::ALL.into_iter().find(|p| p.name() == name).ok_or_else(|| {
            format!(
                "`{name}` is unknown; accepted: {}",
                Profile::ALL.map(|p| p.name()).join(", ")
            )
        })
    }

    /// The knobs this profile sets (thesis appendix A; docs/architecture.md,
    /// "Profiles"; for `irq-batching` and `kernel-polling` the IRQ-suspension
    /// cover letter's `defer20` and `suspend0` cases), shared by the
    /// simulator and the real-kernel tools.
    pub fn knobs(self) -> ProfileKnobs {
        let adaptive = Coalesce { adaptive_rx: true, rx_usecs: 8, rx_frames: 128, cqe_mode_rx: true };
        let off = PerNapi { defer_hard_irqs: 0, gro_flush_timeout_ns: 0, irq_suspend_timeout_ns: 0 };
        let interrupts = EpollParams { busy_poll_usecs: 0, busy_poll_budget: 0, prefer_busy_poll: false, blocking: true };
        let (coalesce, napi, epoll) = match self {
            Profile::NoCoalescing => {
                (Coalesce { adaptive_rx: false, rx_usecs: 1, rx_frames: 128, cqe_mode_rx: false }, off, interrupts)
            }
            Profile::AdaptiveCoalescing => (adaptive, off, interrupts),
            Profile::BusyWait => (
                adaptive,
                PerNapi { defer_hard_irqs: 100, gro_flush_timeout_ns: 5_000_000, irq_suspend_timeout_ns: 0 },
                EpollParams { busy_poll_usecs: 1000, busy_poll_budget: 64, prefer_busy_poll: true, blocking: false },
            ),
            Profile::IrqSuspend => (
                adaptive,
                PerNapi { defer_hard_irqs: 100, gro_flush_timeout_ns: 20_000, irq_suspend_timeout_ns: 20_000_000 },
                EpollParams { busy_poll_usecs: 0, busy_poll_budget: 64, prefer_busy_poll: true, blocking: true },
            ),
            Profile::IrqBatching => (
                adaptive,
                PerNapi { defer_hard_irqs: 100, gro_flush_timeout_ns: 20_000, irq_suspend_timeout_ns: 0 },
                interrupts,
            ),
            Profile::KernelPolling => (
                adaptive,
                PerNapi { defer_hard_irqs: 0, gro_flush_timeout_ns: 0, irq_suspend_timeout_ns: 20_000_000 },
                EpollParams { busy_poll_usecs: 0, busy_poll_budget: 64, prefer_busy_poll: true, blocking: true },
            ),
        };
        ProfileKnobs { coalesce, napi, epoll }
    }

    /// The knobs this profile sets with their values, in the table's order
    /// (what `irqlab profiles` lists and a scenario's profile overrides).
    pub fn settings(self) -> [(&'static Knob, Value); 11] {
        use crate::table::*;
        let k = self.knobs();
        [
            (&ADAPTIVE_RX, Value::Bool(k.coalesce.adaptive_rx)),
            (&RX_USECS, Value::Int(k.coalesce.rx_usecs as u64)),
            (&RX_FRAMES, Value::Int(k.coalesce.rx_frames as u64)),
            (&CQE_MODE_RX, Value::Bool(k.coalesce.cqe_mode_rx)),
            (&DEFER_HARD_IRQS, Value::Int(k.napi.defer_hard_irqs as u64)),
            (&GRO_FLUSH_TIMEOUT, Value::Int(k.napi.gro_flush_timeout_ns)),
            (&IRQ_SUSPEND_TIMEOUT, Value::Int(k.napi.irq_suspend_timeout_ns)),
            (&BUSY_POLL_USECS, Value::Int(k.epoll.busy_poll_usecs as u64)),
            (&BUSY_POLL_BUDGET, Value::Int(k.epoll.busy_poll_budget as u64)),
            (&PREFER_BUSY_POLL, Value::Bool(k.epoll.prefer_busy_poll)),
            (&BLOCKING, Value::Bool(k.epoll.blocking)),
        ]
    }

    /// The value this profile gives the knob of scenario field `path`
    /// (`None`: the profile leaves it alone).
    pub fn value(self, path: &str) -> Option<Value> {
        self.settings().into_iter().find(|(k, _)| k.path == path).map(|(_, v)| v)
    }
}

/// NIC coalescing of a profile (ethtool `-C` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coalesce {
    pub adaptive_rx: bool,
    pub rx_usecs: u32,
    pub rx_frames: u32,
    pub cqe_mode_rx: bool,
}

/// Per-NAPI configuration of a profile (`napi-set`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerNapi {
    pub defer_hard_irqs: u32,
    pub gro_flush_timeout_ns: u64,
    pub irq_suspend_timeout_ns: u64,
}

/// Epoll parameters of a profile (`EPIOCSPARAMS`) and how the application
/// waits: `blocking` false means `epoll_wait` must not sleep (busy-wait).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpollParams {
    pub busy_poll_usecs: u32,
    pub busy_poll_budget: u16,
    pub prefer_busy_poll: bool,
    pub blocking: bool,
}

/// Everything a profile sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProfileKnobs {
    pub coalesce: Coalesce,
    pub napi: PerNapi,
    pub epoll: EpollParams,
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::KNOBS;

    #[test]
    fn every_profile_sets_the_same_knobs_in_the_tables_order_within_their_ranges() {
        for p in Profile::ALL {
            let settings = p.settings();
            let paths: Vec<&str> = settings.iter().map(|(k, _)| k.path).collect();
            let table: Vec<&str> = KNOBS
                .iter()
                .filter(|k| !matches!(k.part, crate::Part::Itr | crate::Part::Steering))
                .map(|k| k.path)
                .collect();
            assert_eq!(paths, table, "{p}");
            for (k, v) in settings {
                assert_eq!(k.is_bool(), matches!(v, Value::Bool(_)), "{p}: {}", k.path);
                assert!(k.sim.contains(v.as_u64()), "{p}: {} = {v} is outside the simulator's range", k.path);
            }
        }
    }

    #[test]
    fn profiles_are_found_by_name_and_carry_the_thesis_values() {
        assert_eq!(Profile::by_name("irq-suspend"), Ok(Profile::IrqSuspend));
        assert!(Profile::by_name("fast").unwrap_err().contains("no-coalescing, adaptive-coalescing"));
        assert_eq!(Profile::IrqSuspend.value("napi.irq_suspend_timeout"), Some(Value::Int(20_000_000)));
        assert_eq!(Profile::BusyWait.value("epoll.blocking"), Some(Value::Bool(false)));
        assert_eq!(Profile::NoCoalescing.value("itr.rate"), None);
    }
}
