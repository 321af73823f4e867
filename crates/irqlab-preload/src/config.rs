//! The shim's configuration: the environment variables `irqlab linux exec`
//! sets, parsed once and validated.
//!
//! | variable                  | meaning                                   | accepted        |
//! |---------------------------|-------------------------------------------|-----------------|
//! | `IRQLAB_BUSY_POLL_USECS`  | `epoll_params.busy_poll_usecs` (µs)       | 0 ..= 2147483647 |
//! | `IRQLAB_BUSY_POLL_BUDGET` | `epoll_params.busy_poll_budget` (packets) | 0 ..= 65535     |
//! | `IRQLAB_PREFER_BUSY_POLL` | `epoll_params.prefer_busy_poll`           | 0 or 1          |
//! | `IRQLAB_NONBLOCKING`      | spin `epoll_wait` instead of sleeping     | 0 or 1          |
//! | `IRQLAB_PRELOAD_DEBUG`    | one stderr line per epoll instance set    | `1` = on        |
//! | `IRQLAB_SPIN_ALL`         | busy-wait spins on every epoll instance   | `1` = on        |
//! | `IRQLAB_CONTROL`          | a file `busy_poll_usecs=N` read while it runs | absolute path |
//! | `IRQLAB_STATS`            | a file the batch times are written to (`stats.rs`) | absolute path |
//!
//! The ranges are those of the fields of `struct epoll_params`
//! (`include/uapi/linux/eventpoll.h`). Values that fit the fields but that
//! the kernel refuses (`busy_poll_usecs` above `S32_MAX`, a budget above
//! `NAPI_POLL_WEIGHT` without `CAP_NET_ADMIN`) are left for the kernel to
//! refuse, so that the warning names the kernel's own answer.
//!
//! An unset variable counts as 0; when none of the four is set the shim has
//! nothing to do (it was preloaded by hand, not by the launcher) unless
//! `IRQLAB_CONTROL` is set, which then starts from the kernel's defaults. A set
//! variable must be a plain decimal number in range: anything else makes the
//! whole configuration invalid, and the shim then leaves the program alone.
//!
//! Parsing is a pure function of a lookup closure so that it can be tested
//! without touching the process environment, and it neither allocates nor
//! panics.

/// `IRQLAB_BUSY_POLL_USECS`.
pub const USECS: &str = "IRQLAB_BUSY_POLL_USECS";
/// `IRQLAB_BUSY_POLL_BUDGET`.
pub const BUDGET: &str = "IRQLAB_BUSY_POLL_BUDGET";
/// `IRQLAB_PREFER_BUSY_POLL`.
pub const PREFER: &str = "IRQLAB_PREFER_BUSY_POLL";
/// `IRQLAB_NONBLOCKING`.
pub const NONBLOCKING: &str = "IRQLAB_NONBLOCKING";
/// `IRQLAB_PRELOAD_DEBUG`.
pub const DEBUG: &str = "IRQLAB_PRELOAD_DEBUG";
/// `IRQLAB_CONTROL`: a file whose `busy_poll_usecs=N` line changes
/// `busy_poll_usecs` while the program runs (`control.rs`).
pub const CONTROL: &str = "IRQLAB_CONTROL";
/// `IRQLAB_STATS`: a file the shim writes the program's batch times to
/// (`stats.rs`), under any profile or none.
pub const STATS: &str = "IRQLAB_STATS";
/// `IRQLAB_SPIN_ALL`: under busy-wait, spin in every epoll instance, not
/// only in those watching a socket that arrived through a NAPI.
pub const SPIN_ALL: &str = "IRQLAB_SPIN_ALL";

/// What the shim does to every epoll instance and every `epoll_wait`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// `epoll_params.busy_poll_usecs`, in µs.
    pub busy_poll_usecs: u32,
    /// `epoll_params.busy_poll_budget`, in packets (0 = the kernel's 8).
    pub busy_poll_budget: u16,
    /// `epoll_params.prefer_busy_poll`, 0 or 1.
    pub prefer_busy_poll: u8,
    /// Busy-wait: `epoll_wait` with a non-zero timeout spins instead of sleeping.
    pub nonblocking: bool,
}

impl Config {
    /// True when the three `epoll_params` fields are what a new epoll
    /// instance already has: `ep_alloc` (fs/eventpoll.c) allocates `struct
    /// eventpoll` zeroed, so `busy_poll_usecs`, `busy_poll_budget` and
    /// `prefer_busy_poll` start at 0 (0 µs: the `net.core.busy_poll` sysctl
    /// decides, `ep_busy_loop_on` and `busy_loop_ep_timeout`; budget 0:
    /// `BUSY_POLL_BUDGET`, `ep_busy_loop`). The shim makes no ioctl for such values on a new
    /// instance (the profiles without busy polling, `no-coalescing`,
    /// `adaptive-coalescing`, `irq-batching`), so it cannot fail either.
    pub fn params_are_defaults(&self) -> bool {
        self.busy_poll_usecs == 0 && self.busy_poll_budget == 0 && self.prefer_busy_poll == 0
    }
}

/// The outcome of reading the environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// None of the variables is set.
    Unset,
    /// A valid configuration.
    Valid(Config),
    /// `var` is set to `value`, which is not a decimal number from 0 to `max`.
    Invalid {
        var: &'static str,
        value: &'a [u8],
        max: u64,
    },
}

/// Read the configuration through `get(name)`, which returns the raw bytes
/// of an environment variable or `None` when it is unset.
pub fn parse<'a>(get: impl Fn(&'static str) -> Option<&'a [u8]>) -> Parsed<'a> {
    let vars = [USECS, BUDGET, PREFER, NONBLOCKING];
    if vars.iter().all(|var| get(var).is_none()) {
        return Parsed::Unset;
    }
    let field = |var: &'static str, max: u64| -> Result<u64, Parsed<'a>> {
        match get(var) {
            None => Ok(0),
            Some(value) => decimal(value, max).ok_or(Parsed::Invalid { var, value, max }),
        }
    };
    let result = (|| {
        Ok(Config {
            // The ranges EPIOCSPARAMS accepts, from the knob table
            // (crates/irqlab-knobs): busy_poll_usecs is a __u32 the kernel
            // refuses above S32_MAX.
            busy_poll_usecs: field(USECS, irqlab_knobs::table::BUSY_POLL_USECS.kernel.max)? as u32,
            busy_poll_budget: field(BUDGET, irqlab_knobs::table::BUSY_POLL_BUDGET.kernel.max)? as u16,
            prefer_busy_poll: field(PREFER, 1)? as u8,
            nonblocking: field(NONBLOCKING, 1)? == 1,
        })
    })();
    match result {
        Ok(config) => Parsed::Valid(config),
        Err(invalid) => invalid,
    }
}

/// `IRQLAB_PRELOAD_DEBUG=1` turns the per-instance lines on; anything else is off.
pub fn debug_enabled(value: Option<&[u8]>) -> bool {
    value == Some(b"1".as_slice())
}

/// A plain decimal number (ASCII digits only, no sign, no spaces) from 0 to `max`.
fn decimal(text: &[u8], max: u64) -> Option<u64> {
    if text.is_empty() {
        return None;
    }
    let mut value: u64 = 0;
    for &byte in text {
        if !byte.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(byte - b'0'))?;
        if value > max {
            return None;
        }
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'static str, &'a str)]) -> impl Fn(&'static str) -> Option<&'a [u8]> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.as_bytes())
        }
    }

    #[test]
    fn nothing_set_is_unset() {
        assert_eq!(parse(env(&[("PATH", "/bin")])), Parsed::Unset);
    }

    #[test]
    fn busy_wait_profile_values() {
        let pairs = [
            (USECS, "1000"),
            (BUDGET, "64"),
            (PREFER, "1"),
            (NONBLOCKING, "1"),
        ];
        let want = Config {
            busy_poll_usecs: 1000,
            busy_poll_budget: 64,
            prefer_busy_poll: 1,
            nonblocking: true,
        };
        assert_eq!(parse(env(&pairs)), Parsed::Valid(want));
        assert!(!want.params_are_defaults());
    }

    #[test]
    fn unset_fields_are_zero_and_all_zero_is_the_kernels_defaults() {
        let Parsed::Valid(config) = parse(env(&[(PREFER, "0")])) else {
            panic!("should be valid")
        };
        assert_eq!(
            config,
            Config {
                busy_poll_usecs: 0,
                busy_poll_budget: 0,
                prefer_busy_poll: 0,
                nonblocking: false
            }
        );
        assert!(config.params_are_defaults() && !config.nonblocking);
    }

    #[test]
    fn field_ranges_are_those_the_kernel_accepts() {
        let ok = [(USECS, "2147483647"), (BUDGET, "65535"), (PREFER, "1")];
        let Parsed::Valid(config) = parse(env(&ok)) else {
            panic!("should be valid")
        };
        assert_eq!(
            (config.busy_poll_usecs, config.busy_poll_budget),
            (i32::MAX as u32, u16::MAX)
        );
        for (var, value, max) in [
            (USECS, "2147483648", i32::MAX as u64),
            (BUDGET, "65536", 65535),
            (PREFER, "2", 1),
            (NONBLOCKING, "2", 1),
            (USECS, "99999999999999999999999", i32::MAX as u64),
        ] {
            let pairs = [(var, value)];
            assert_eq!(
                parse(env(&pairs)),
                Parsed::Invalid {
                    var,
                    value: value.as_bytes(),
                    max
                },
                "{var}={value}"
            );
        }
    }

    #[test]
    fn malformed_numbers_are_invalid() {
        for value in ["", " 1", "1 ", "+1", "-1", "0x10", "1e3", "abc", "1.0"] {
            let pairs = [(BUDGET, value)];
            assert!(
                matches!(parse(env(&pairs)), Parsed::Invalid { var: BUDGET, .. }),
                "{value:?}"
            );
        }
        assert_eq!(decimal(b"007", 10), Some(7));
    }

    #[test]
    fn debug_is_on_only_for_1() {
        assert!(debug_enabled(Some(b"1")));
        for value in [
            None,
            Some(b"0".as_slice()),
            Some(b"yes".as_slice()),
            Some(b"".as_slice()),
        ] {
            assert!(!debug_enabled(value));
        }
    }
}
