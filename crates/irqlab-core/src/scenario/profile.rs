//! The four interrupt-handling profiles of the thesis (appendix A), named as
//! in SYSTEM.md. A profile is a set of knob overrides on the NIC coalescing,
//! the per-NAPI configuration and the epoll busy-poll parameters; it never
//! changes a cost constant.

use std::fmt;

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
}

impl Profile {
    pub const ALL: [Profile; 4] =
        [Profile::NoCoalescing, Profile::AdaptiveCoalescing, Profile::BusyWait, Profile::IrqSuspend];

    pub fn name(self) -> &'static str {
        match self {
            Profile::NoCoalescing => "no-coalescing",
            Profile::AdaptiveCoalescing => "adaptive-coalescing",
            Profile::BusyWait => "busy-wait",
            Profile::IrqSuspend => "irq-suspend",
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

    /// The knobs this profile sets (thesis appendix A; SYSTEM.md "The
    /// profiles"), shared by the simulator and the real-kernel tools.
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
        };
        ProfileKnobs { coalesce, napi, epoll }
    }

    /// The knobs as scenario overrides.
    pub fn overrides(self) -> Vec<(&'static str, toml::Value)> {
        use toml::Value::{Boolean as B, Integer as I};
        let k = self.knobs();
        vec![
            ("coalesce.adaptive-rx", B(k.coalesce.adaptive_rx)),
            ("coalesce.rx-usecs", I(k.coalesce.rx_usecs as i64)),
            ("coalesce.rx-frames", I(k.coalesce.rx_frames as i64)),
            ("coalesce.cqe-mode-rx", B(k.coalesce.cqe_mode_rx)),
            ("napi.napi_defer_hard_irqs", I(k.napi.defer_hard_irqs as i64)),
            ("napi.gro_flush_timeout", I(k.napi.gro_flush_timeout_ns as i64)),
            ("napi.irq_suspend_timeout", I(k.napi.irq_suspend_timeout_ns as i64)),
            ("epoll.busy_poll_usecs", I(k.epoll.busy_poll_usecs as i64)),
            ("epoll.busy_poll_budget", I(k.epoll.busy_poll_budget as i64)),
            ("epoll.prefer_busy_poll", B(k.epoll.prefer_busy_poll)),
            ("epoll.blocking", B(k.epoll.blocking)),
        ]
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
