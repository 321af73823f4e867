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

    /// The knobs this profile sets, as scenario overrides (thesis appendix A;
    /// SYSTEM.md "The profiles").
    pub fn overrides(self) -> Vec<(&'static str, toml::Value)> {
        use toml::Value::{Boolean as B, Integer as I};
        let nic_adaptive = [
            ("coalesce.adaptive-rx", B(true)),
            ("coalesce.rx-usecs", I(8)),
            ("coalesce.rx-frames", I(128)),
            ("coalesce.cqe-mode-rx", B(true)),
        ];
        let mut v: Vec<(&'static str, toml::Value)> = Vec::new();
        match self {
            Profile::NoCoalescing => {
                v.extend([
                    ("coalesce.adaptive-rx", B(false)),
                    ("coalesce.rx-usecs", I(1)),
                    ("coalesce.rx-frames", I(128)),
                    ("coalesce.cqe-mode-rx", B(false)),
                ]);
                v.extend(napi(0, 0, 0));
                v.extend(epoll(0, 0, false, true));
            }
            Profile::AdaptiveCoalescing => {
                v.extend(nic_adaptive);
                v.extend(napi(0, 0, 0));
                v.extend(epoll(0, 0, false, true));
            }
            Profile::BusyWait => {
                v.extend(nic_adaptive);
                v.extend(napi(100, 5_000_000, 0));
                v.extend(epoll(1000, 64, true, false));
            }
            Profile::IrqSuspend => {
                v.extend(nic_adaptive);
                v.extend(napi(100, 20_000, 20_000_000));
                v.extend(epoll(0, 64, true, true));
            }
        }
        v
    }
}

fn napi(defer: i64, gro_flush_timeout_ns: i64, irq_suspend_timeout_ns: i64) -> [(&'static str, toml::Value); 3] {
    use toml::Value::Integer as I;
    [
        ("napi.napi_defer_hard_irqs", I(defer)),
        ("napi.gro_flush_timeout", I(gro_flush_timeout_ns)),
        ("napi.irq_suspend_timeout", I(irq_suspend_timeout_ns)),
    ]
}

fn epoll(usecs: i64, budget: i64, prefer: bool, blocking: bool) -> [(&'static str, toml::Value); 4] {
    use toml::Value::{Boolean as B, Integer as I};
    [
        ("epoll.busy_poll_usecs", I(usecs)),
        ("epoll.busy_poll_budget", I(budget)),
        ("epoll.prefer_busy_poll", B(prefer)),
        ("epoll.blocking", B(blocking)),
    ]
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
