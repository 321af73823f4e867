//! The table: one [`Knob`] per interrupt-handling knob, in the order the
//! profiles list them (`irqlab profiles`), then the 82599's rate.
//!
//! Ranges are the kernel's own checks, cited beside each value. Where the
//! simulator models one device whose driver takes less than the kernel's
//! interface (the ConnectX-4's mlx5, the 82599's EITR field), `sim` is
//! narrower and `sim_why` says why; everywhere else `sim` is `kernel`.

/// Where a knob lives on a real host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// Per-NAPI configuration (`napi-set`, netdev netlink, Linux 6.13+).
    Napi,
    /// The device's RX coalescing (`coalesce-set`, ethtool netlink; `ethtool -C`).
    Coalesce,
    /// An epoll instance's busy-poll parameters (`EPIOCSPARAMS`, Linux 6.9+)
    /// and how the application calls `epoll_wait`.
    Epoll,
    /// The Intel 82599's interrupt throttling (ixgbe), simulator only.
    Itr,
    /// Software packet steering of an RX queue (`/sys/class/net/DEV/queues/rx-N/`).
    Steering,
}

impl Part {
    pub const fn name(self) -> &'static str {
        match self {
            Part::Napi => "napi",
            Part::Coalesce => "coalesce",
            Part::Epoll => "epoll",
            Part::Itr => "itr",
            Part::Steering => "steering",
        }
    }
}

/// A knob's unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// On or off (`true`/`false` in a scenario).
    Bool,
    Nanoseconds,
    Microseconds,
    Packets,
    /// Empty polls (`defer-hard-irqs`).
    Polls,
    InterruptsPerSecond,
    /// A bitmask of CPUs (bit i: CPU i).
    CpuMask,
}

impl Unit {
    pub const fn name(self) -> &'static str {
        match self {
            Unit::Bool => "bool",
            Unit::Nanoseconds => "ns",
            Unit::Microseconds => "µs",
            Unit::Packets => "packets",
            Unit::Polls => "polls",
            Unit::InterruptsPerSecond => "interrupts/s",
            Unit::CpuMask => "CPU mask",
        }
    }
}

/// A knob's value: on/off or a whole number in the knob's unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    Bool(bool),
    Int(u64),
}

impl Value {
    /// The value as a whole number (a bool as 0 or 1).
    pub const fn as_u64(self) -> u64 {
        match self {
            Value::Bool(b) => b as u64,
            Value::Int(n) => n,
        }
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(n) => write!(f, "{n}"),
        }
    }
}

/// An inclusive range of whole numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub min: u64,
    pub max: u64,
}

impl Range {
    pub const fn contains(self, v: u64) -> bool {
        self.min <= v && v <= self.max
    }
}

const BOOL: Range = Range { min: 0, max: 1 };

/// One knob, declared once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Knob {
    /// The scenario field (`napi.irq_suspend_timeout`): what scenario files,
    /// `--set`, profiles and `irqlab linux`'s text output call it.
    pub path: &'static str,
    /// What the kernel or ethtool calls it (`irq-suspend-timeout`, `rx-usecs`).
    pub kernel_name: &'static str,
    /// The name `irqlab linux` plans, reports (`--json`) and tunes it by
    /// (`irq_suspend_timeout`, `rx-usecs`); `None` when `irqlab linux
    /// apply` does not set it on a device.
    pub linux_name: Option<&'static str>,
    pub part: Part,
    pub unit: Unit,
    /// What the kernel accepts.
    pub kernel: Range,
    /// What a scenario accepts: `kernel` unless `sim_why` says otherwise.
    pub sim: Range,
    /// Why the simulator accepts less than the kernel.
    pub sim_why: Option<&'static str>,
    /// The scenario's default (the simulator's assumption when a scenario
    /// does not say), also what `irqlab profiles` lists for a profile that
    /// leaves the knob alone.
    pub default: Value,
    /// One line: what it does.
    pub doc: &'static str,
    /// The kernel source the name and the range come from.
    pub source: &'static str,
}

impl Knob {
    /// Whether the knob is on/off.
    pub const fn is_bool(&self) -> bool {
        matches!(self.unit, Unit::Bool)
    }

    /// `default` as a whole number (a bool as 0 or 1), for `const` defaults.
    pub const fn default_u64(&self) -> u64 {
        self.default.as_u64()
    }

    /// `default` as a bool (panics, at compile time in a `const`, if it is a number).
    pub const fn default_bool(&self) -> bool {
        match self.default {
            Value::Bool(b) => b,
            Value::Int(_) => panic!("not an on/off knob"),
        }
    }

    /// The `irqlab linux` name (panics if `irqlab linux` does not set it).
    pub const fn linux(&self) -> &'static str {
        match self.linux_name {
            Some(n) => n,
            None => panic!("irqlab linux does not set this knob"),
        }
    }

    /// The simulator's accepted values in words, for messages about a
    /// value of the wrong type ("a whole number from 0 to 4095").
    pub fn accepted(&self) -> String {
        if self.is_bool() {
            "true or false".to_string()
        } else {
            format!("a whole number from {} to {}", self.sim.min, self.sim.max)
        }
    }

    /// The sentence after "scenario field `PATH`" for a value outside the
    /// simulator's range: the range, the value and, when the simulator
    /// takes less than the kernel, why.
    pub fn out_of_range(&self, got: u64) -> String {
        let mut s = format!("must be between {} and {} (got {got})", self.sim.min, self.sim.max);
        if let (Some(why), true) = (self.sim_why, self.kernel.contains(got)) {
            s.push_str(&format!(": {why}"));
        }
        s
    }
}

/// `gro-flush-timeout` and `irq-suspend-timeout`: the netdev spec types both
/// `uint` with no check (the napi-set policy is a bare NLA_UINT in
/// net/core/netdev-genl-gen.c), `netdev_nl_napi_set_config`
/// (net/core/netdev-genl.c) stores the u64 in the NAPI's `unsigned long`
/// (include/linux/netdevice.h, `struct napi_struct`), and net/core/dev.c arms
/// the NAPI's hrtimer with `ns_to_ktime(timeout)`: a `ktime_t`, an s64, so a
/// value above S64_MAX is a negative delay. The meaningful range, and the one
/// both irqlab-linux and the simulator accept, is 0 to S64_MAX nanoseconds.
const KTIME_NS: Range = Range { min: 0, max: i64::MAX as u64 };

/// ethtool's coalescing counts are NLA_U32 (net/ethtool/coalesce.c,
/// `coalesce_set_policy`); the driver may refuse less.
const ETHTOOL_U32: Range = Range { min: 0, max: u32::MAX as u64 };

pub const ADAPTIVE_RX: Knob = Knob {
    path: "coalesce.adaptive-rx",
    kernel_name: "adaptive-rx",
    linux_name: Some("adaptive-rx"),
    part: Part::Coalesce,
    unit: Unit::Bool,
    kernel: BOOL,
    sim: BOOL,
    sim_why: None,
    default: Value::Bool(false),
    doc: "Net DIM (lib/dim) chooses rx-usecs and rx-frames per queue",
    source: "net/ethtool/coalesce.c: ETHTOOL_A_COALESCE_USE_ADAPTIVE_RX, NLA_POLICY_MAX(NLA_U8, 1)",
};

pub const RX_USECS: Knob = Knob {
    path: "coalesce.rx-usecs",
    kernel_name: "rx-usecs",
    linux_name: Some("rx-usecs"),
    part: Part::Coalesce,
    unit: Unit::Microseconds,
    kernel: ETHTOOL_U32,
    // MLX5E_MAX_COAL_TIME (MLX5_MAX_CQ_PERIOD, the CQ context's 12-bit
    // cq_period): mlx5e_ethtool_set_coalesce refuses more with ERANGE.
    sim: Range { min: 0, max: 4095 },
    sim_why: Some("the modelled ConnectX-4's mlx5 driver refuses more (MLX5E_MAX_COAL_TIME, drivers/net/ethernet/mellanox/mlx5/core/en_ethtool.c)"),
    default: Value::Int(1),
    doc: "interrupt at most this long after the moderation timer starts",
    source: "net/ethtool/coalesce.c: ETHTOOL_A_COALESCE_RX_USECS, NLA_U32",
};

pub const RX_FRAMES: Knob = Knob {
    path: "coalesce.rx-frames",
    kernel_name: "rx-frames",
    linux_name: Some("rx-frames"),
    part: Part::Coalesce,
    unit: Unit::Packets,
    kernel: ETHTOOL_U32,
    // MLX5E_MAX_COAL_FRAMES (MLX5_MAX_CQ_COUNT, the 16-bit cq_max_count).
    sim: Range { min: 0, max: 65_535 },
    sim_why: Some("the modelled ConnectX-4's mlx5 driver refuses more (MLX5E_MAX_COAL_FRAMES, drivers/net/ethernet/mellanox/mlx5/core/en_ethtool.c)"),
    default: Value::Int(128),
    doc: "interrupt once this many packets are pending (0: no frame bound)",
    source: "net/ethtool/coalesce.c: ETHTOOL_A_COALESCE_RX_MAX_FRAMES, NLA_U32",
};

pub const CQE_MODE_RX: Knob = Knob {
    path: "coalesce.cqe-mode-rx",
    kernel_name: "cqe-mode-rx",
    // `irqlab linux apply` leaves it as the driver has it (doctor counts it).
    linux_name: None,
    part: Part::Coalesce,
    unit: Unit::Bool,
    kernel: BOOL,
    sim: BOOL,
    sim_why: None,
    default: Value::Bool(false),
    doc: "the moderation timer restarts at every completion (CQE mode), not at the first event (EQE mode)",
    source: "net/ethtool/coalesce.c: ETHTOOL_A_COALESCE_USE_CQE_MODE_RX, NLA_POLICY_MAX(NLA_U8, 1)",
};

pub const DEFER_HARD_IRQS: Knob = Knob {
    path: "napi.napi_defer_hard_irqs",
    kernel_name: "defer-hard-irqs",
    linux_name: Some("defer_hard_irqs"),
    part: Part::Napi,
    unit: Unit::Polls,
    // The spec's `checks: max: s32-max` (the sysfs file takes the same).
    kernel: Range { min: 0, max: i32::MAX as u64 },
    sim: Range { min: 0, max: i32::MAX as u64 },
    sim_why: None,
    default: Value::Int(0),
    doc: "empty polls tolerated before hard IRQs are re-enabled",
    source: "Documentation/netlink/specs/netdev.yaml, napi-set: u32, max s32-max (NLA_POLICY_FULL_RANGE in net/core/netdev-genl-gen.c)",
};

pub const GRO_FLUSH_TIMEOUT: Knob = Knob {
    path: "napi.gro_flush_timeout",
    kernel_name: "gro-flush-timeout",
    linux_name: Some("gro_flush_timeout"),
    part: Part::Napi,
    unit: Unit::Nanoseconds,
    kernel: KTIME_NS,
    sim: KTIME_NS,
    sim_why: None,
    default: Value::Int(0),
    doc: "the NAPI watchdog's delay while IRQs are deferred (0: no deferral)",
    source: "Documentation/netlink/specs/netdev.yaml, napi-set: uint; net/core/dev.c arms it as ns_to_ktime() (s64)",
};

pub const IRQ_SUSPEND_TIMEOUT: Knob = Knob {
    path: "napi.irq_suspend_timeout",
    kernel_name: "irq-suspend-timeout",
    linux_name: Some("irq_suspend_timeout"),
    part: Part::Napi,
    unit: Unit::Nanoseconds,
    kernel: KTIME_NS,
    sim: KTIME_NS,
    sim_why: None,
    default: Value::Int(0),
    doc: "the safety timeout while the application suspends IRQs (0: no suspension)",
    source: "Documentation/netlink/specs/netdev.yaml, napi-set: uint; net/core/dev.c arms it as ns_to_ktime() (s64)",
};

pub const BUSY_POLL_USECS: Knob = Knob {
    path: "epoll.busy_poll_usecs",
    kernel_name: "busy_poll_usecs",
    linux_name: None,
    part: Part::Epoll,
    unit: Unit::Microseconds,
    // A __u32 in struct epoll_params that ep_eventpoll_bp_ioctl refuses
    // above S32_MAX with EINVAL.
    kernel: Range { min: 0, max: i32::MAX as u64 },
    sim: Range { min: 0, max: i32::MAX as u64 },
    sim_why: None,
    default: Value::Int(0),
    doc: "how long epoll_wait busy polls the NAPI before it sleeps",
    source: "fs/eventpoll.c: EPIOCSPARAMS refuses busy_poll_usecs > S32_MAX",
};

pub const BUSY_POLL_BUDGET: Knob = Knob {
    path: "epoll.busy_poll_budget",
    kernel_name: "busy_poll_budget",
    linux_name: None,
    part: Part::Epoll,
    unit: Unit::Packets,
    // A __u16; above NAPI_POLL_WEIGHT (64) it needs CAP_NET_ADMIN (EPERM).
    kernel: Range { min: 0, max: u16::MAX as u64 },
    sim: Range { min: 0, max: u16::MAX as u64 },
    sim_why: None,
    default: Value::Int(0),
    doc: "packets per busy-poll napi->poll (0: BUSY_POLL_BUDGET, 8)",
    source: "include/uapi/linux/eventpoll.h: __u16 busy_poll_budget; fs/eventpoll.c: above NAPI_POLL_WEIGHT needs CAP_NET_ADMIN",
};

pub const PREFER_BUSY_POLL: Knob = Knob {
    path: "epoll.prefer_busy_poll",
    kernel_name: "prefer_busy_poll",
    linux_name: None,
    part: Part::Epoll,
    unit: Unit::Bool,
    kernel: BOOL,
    sim: BOOL,
    sim_why: None,
    default: Value::Bool(false),
    doc: "busy polling keeps the NAPI from the softirq (with deferral or IRQ suspension)",
    source: "fs/eventpoll.c: EPIOCSPARAMS refuses prefer_busy_poll > 1",
};

pub const BLOCKING: Knob = Knob {
    path: "epoll.blocking",
    kernel_name: "epoll_wait timeout -1",
    linux_name: None,
    part: Part::Epoll,
    unit: Unit::Bool,
    kernel: BOOL,
    sim: BOOL,
    sim_why: None,
    default: Value::Bool(true),
    doc: "epoll_wait sleeps when nothing is ready (false: timeout 0, the application never sleeps)",
    source: "fs/eventpoll.c: ep_poll with a zero timeout returns without sleeping",
};

pub const ITR_RATE: Knob = Knob {
    path: "itr.rate",
    kernel_name: "InterruptThrottleRate",
    linux_name: None,
    part: Part::Itr,
    unit: Unit::InterruptsPerSecond,
    // IXGBE_MIN_INT_RATE and IXGBE_MAX_INT_RATE.
    kernel: Range { min: 956, max: 488_281 },
    sim: Range { min: 978, max: 488_281 },
    sim_why: Some(
        "below 978 the interval overflows the EITR field: (1000000 / 956) << 2 = 4184 is above IXGBE_MAX_EITR (4088), \
         which ixgbe_write_eitr would mask to 22.5 µs",
    ),
    default: Value::Int(20_000),
    doc: "the 82599's static interrupt rate per vector (itr.policy = \"static\")",
    source: "drivers/net/ethernet/intel/ixgbe/ixgbe.h: IXGBE_MIN_INT_RATE 956, IXGBE_MAX_INT_RATE 488281",
};

pub const RPS_CPUS: Knob = Knob {
    path: "steering.rps_cpus",
    kernel_name: "rps_cpus",
    linux_name: None,
    part: Part::Steering,
    unit: Unit::CpuMask,
    // A cpumask of nr_cpumask_bits bits (bitmap_parse); as a whole number
    // (a TOML integer, an i64) it holds CPUs 0 to 62. Offline CPUs are left
    // out of the map, and an empty map turns RPS off on the queue. A
    // scenario lists the CPUs instead (`steering.rps_cpus = [..]`); a
    // policy's mask must name application cores only and, while the run
    // steers in software, cannot be 0 (model/policy.rs says so).
    kernel: Range { min: 0, max: i64::MAX as u64 },
    sim: Range { min: 0, max: i64::MAX as u64 },
    sim_why: None,
    default: Value::Int(0),
    doc: "the CPUs receive packet steering spreads a queue's packets over (0: RPS off on a host; every application \
          core in a scenario that steers in software)",
    source: "net/core/net-sysfs.c: store_rps_map (bitmap_parse of nr_cpumask_bits; for_each_cpu_and the online CPUs; \
             no CPU: map NULL)",
};

/// Every knob, in the order the profiles list them, then the 82599's rate,
/// then the steering mask (which no profile sets).
pub const KNOBS: [Knob; 13] = [
    ADAPTIVE_RX,
    RX_USECS,
    RX_FRAMES,
    CQE_MODE_RX,
    DEFER_HARD_IRQS,
    GRO_FLUSH_TIMEOUT,
    IRQ_SUSPEND_TIMEOUT,
    BUSY_POLL_USECS,
    BUSY_POLL_BUDGET,
    PREFER_BUSY_POLL,
    BLOCKING,
    ITR_RATE,
    RPS_CPUS,
];

/// The knob of a scenario field.
pub fn by_path(path: &str) -> Option<&'static Knob> {
    KNOBS.iter().find(|k| k.path == path)
}

/// The knob `irqlab linux` calls `name`.
pub fn by_linux_name(name: &str) -> Option<&'static Knob> {
    KNOBS.iter().find(|k| k.linux_name == Some(name))
}

/// The knobs `irqlab linux tune` may set one value at a time (per-NAPI
/// numbers first, then coalescing ones), with the largest value the kernel
/// takes.
pub fn tunable() -> Vec<(&'static str, u64)> {
    [Part::Napi, Part::Coalesce]
        .iter()
        .flat_map(|&part| KNOBS.iter().filter(move |k| k.part == part && !k.is_bool()))
        .filter_map(|k| Some((k.linux_name?, k.kernel.max)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_names_are_unique_and_defaults_in_range() {
        for (i, k) in KNOBS.iter().enumerate() {
            for other in &KNOBS[i + 1..] {
                assert_ne!(k.path, other.path);
                assert_ne!(k.kernel_name, other.kernel_name);
                assert!(k.linux_name.is_none() || k.linux_name != other.linux_name, "{}", k.path);
            }
            assert!(k.path.starts_with(&format!("{}.", k.part.name())), "{} is not in [{}]", k.path, k.part.name());
            assert!(k.sim.contains(k.default_u64()), "{}'s default is outside its range", k.path);
            assert!(!k.doc.is_empty() && !k.doc.contains('\n') && !k.source.is_empty(), "{}", k.path);
            // A scenario (TOML) holds a whole number as an i64.
            assert!(k.kernel.max <= i64::MAX as u64, "{}", k.path);
        }
    }

    #[test]
    fn the_simulator_never_accepts_what_the_kernel_refuses_and_says_why_it_takes_less() {
        for k in KNOBS {
            assert!(k.kernel.min <= k.sim.min && k.sim.max <= k.kernel.max, "{}", k.path);
            assert_eq!(k.sim != k.kernel, k.sim_why.is_some(), "{}: a narrower range needs its reason", k.path);
            if k.is_bool() {
                assert_eq!((k.kernel, k.sim), (BOOL, BOOL), "{}", k.path);
            }
        }
    }

    #[test]
    fn irq_suspend_timeout_has_one_range_the_ktime_one() {
        let k = by_path("napi.irq_suspend_timeout").unwrap();
        assert_eq!(k.kernel, k.sim);
        assert_eq!(k.sim.max, 9_223_372_036_854_775_807);
        assert_eq!(by_linux_name("gro_flush_timeout").unwrap().sim, k.sim);
    }

    #[test]
    fn tunable_knobs_are_the_per_napi_and_coalescing_numbers_with_the_kernel_maximum() {
        assert_eq!(
            tunable(),
            vec![
                ("defer_hard_irqs", i32::MAX as u64),
                ("gro_flush_timeout", i64::MAX as u64),
                ("irq_suspend_timeout", i64::MAX as u64),
                ("rx-usecs", u32::MAX as u64),
                ("rx-frames", u32::MAX as u64),
            ]
        );
    }

    #[test]
    fn the_range_sentence_names_the_range_and_the_reason_for_a_narrower_one() {
        assert_eq!(DEFER_HARD_IRQS.out_of_range(1 << 31), "must be between 0 and 2147483647 (got 2147483648)");
        let s = RX_USECS.out_of_range(5000);
        assert!(s.starts_with("must be between 0 and 4095 (got 5000): ") && s.contains("mlx5"), "{s}");
        // A value the kernel refuses too needs no reason.
        assert_eq!(ITR_RATE.out_of_range(900), "must be between 978 and 488281 (got 900)");
        assert_eq!(RX_FRAMES.accepted(), "a whole number from 0 to 65535");
        assert_eq!(BLOCKING.accepted(), "true or false");
    }
}
