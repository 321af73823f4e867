//! A run's settings and their limits. [`Config::validate`] checks every
//! field (the command line checks each flag as it parses it too; the library
//! checks again so that no caller can start an unbounded or unsafe run).
//! Every message is one sentence naming the flag and the accepted range.

use std::net::SocketAddr;

use irqlab_core::workload::{InterArrivalKind, SizeDist};

use crate::keyspace::{min_key_len, MAX_KEY_LEN, MAX_RECORDS, MAX_VALUE_LEN};
use crate::target;

pub const MAX_CONNECTIONS: u32 = 1000;
pub const MAX_DEPTH: u32 = 1024;
pub const MAX_THREADS: u32 = 64;
pub const MAX_QPS: f64 = 10_000_000.0;
/// Longest warm-up or measured duration, seconds.
pub const MAX_SECONDS: f64 = 3600.0;
/// Shortest measured duration, seconds: a millisecond holds a few loopback
/// round trips; a shorter window (a microsecond) measured nothing and
/// exited 0 (issue 62, item 12).
pub const MIN_DURATION_S: f64 = 0.001;
/// A run whose measured gets miss more than this share of the time, after
/// a preload that set every key, did not measure the server it meant to
/// (exit 1 unless `--allow-misses`): more than half, so that a few
/// evictions (memcached short of memory) pass with a note while a server
/// that keeps nothing fails.
pub const MAX_MISS_FRACTION: f64 = 0.5;
pub const MAX_REQUESTS: u64 = 1_000_000_000_000;
/// Default `--timeout-ms`: a request unanswered this long after its write
/// is a timeout, and the measured window's requests get this long after
/// the window to be answered (the drain).
pub const DEFAULT_TIMEOUT_MS: u32 = 2000;
/// Longest `--timeout-ms` (it bounds the drain, so the run's wall time).
pub const MAX_TIMEOUT_MS: u32 = 60_000;
/// Default `--late-us`: an open-loop send that leaves more than this after
/// it could (its scheduled time, or the moment a `--depth` slot freed) was
/// late by the generator's own doing. A millisecond is some ten times the
/// latency of a memcached request on one machine, so a send that late has
/// shaped the latency it is charged with.
pub const DEFAULT_LATE_US: u32 = 1000;
pub const MAX_LATE_US: u32 = 1_000_000;
/// Default `--max-late`: the share of the window's sends that may be late
/// before the run says the generator could not keep its schedule (exit 3).
pub const DEFAULT_MAX_LATE: f64 = 0.01;
/// Default `--max-failed`: the share of the window's requests that may
/// time out or never be sent, or of its connection-time that may be spent
/// stalled, before the run says the server did not keep up (exit 1). A
/// server that stops answering mid-run exceeds it within a second.
pub const DEFAULT_MAX_FAILED: f64 = 0.01;
/// All connections must be open within this long.
pub const CONNECT_ALL_TIMEOUT_S: f64 = 5.0;
/// The preload must finish within this long, or the run fails.
pub const PRELOAD_TIMEOUT_S: f64 = 60.0;
/// Pipeline depth of the preload (at least; `--depth` if larger).
pub const PRELOAD_DEPTH: u32 = 16;
/// Longest `--spin-us`.
pub const MAX_SPIN_US: u32 = 1000;

/// Closed loop (each connection keeps `depth` requests outstanding) or open
/// loop (requests sent at fixed times at `qps`, at most `depth` outstanding
/// per connection, as mutilate's `--depth` bounds both modes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    Closed,
    Open {
        qps: f64,
        interarrival: InterArrivalKind,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub server: SocketAddr,
    pub connections: u32,
    pub depth: u32,
    pub threads: u32,
    pub mode: Mode,
    pub warmup_s: f64,
    pub duration_s: f64,
    /// Stop once this many measured replies are in (`None`: duration only).
    pub requests: Option<u64>,
    pub records: u64,
    pub key_size: SizeDist,
    pub value_size: SizeDist,
    pub get_fraction: f64,
    pub seed: u64,
    /// Set every key before the timed phase, so that gets hit.
    pub preload: bool,
    /// Misses are expected: gets that mostly miss after the preload do not
    /// fail the run (`--allow-misses`).
    pub allow_misses: bool,
    /// Open loop: wake this many microseconds before a send time and poll
    /// (epoll_wait with a zero timeout) until it, instead of sleeping to
    /// it. A sleeping thread wakes some microseconds late (about 18 us at
    /// the median on this project's VMs), which a request's latency then
    /// includes; spinning removes that at the cost of CPU. 0: never spin.
    pub spin_us: u32,
    /// Open loop: once awake, also send the requests due within this many
    /// microseconds, early, instead of waking again for each (a request
    /// sent early has its latency counted from its write). 0: every request
    /// leaves at its send time or later.
    pub batch_us: u32,
    /// A request unanswered this long after its write is a timeout; also
    /// how long the window's requests are waited for after it.
    pub timeout_ms: u32,
    /// Open loop: a send leaving more than this after it could is late.
    pub late_us: u32,
    /// Open loop: largest share of late sends for a run that kept its
    /// schedule.
    pub max_late: f64,
    /// Largest share of failed requests (timed out, never sent) or stalled
    /// connection-time for a run whose server kept up.
    pub max_failed: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            server: "127.0.0.1:11211".parse().expect("literal"),
            connections: 4,
            depth: 1,
            threads: 1,
            mode: Mode::Closed,
            warmup_s: 0.0,
            duration_s: 5.0,
            requests: None,
            records: 10_000,
            key_size: SizeDist::Etc,
            value_size: SizeDist::Etc,
            get_fraction: 1.0,
            seed: 1,
            preload: true,
            allow_misses: false,
            spin_us: 0,
            batch_us: 0,
            timeout_ms: DEFAULT_TIMEOUT_MS,
            late_us: DEFAULT_LATE_US,
            max_late: DEFAULT_MAX_LATE,
            max_failed: DEFAULT_MAX_FAILED,
        }
    }
}

/// `value` as a flag error if it is outside `lo..=hi`.
pub fn check_range<T: PartialOrd + std::fmt::Display>(
    flag: &str,
    value: T,
    lo: T,
    hi: T,
    what: &str,
) -> Result<(), String> {
    if value >= lo && value <= hi {
        Ok(())
    } else {
        Err(format!(
            "{flag} must be {what} from {lo} to {hi} (got {value})"
        ))
    }
}

/// The fixed `--key-size` values accepted for a `records`-key space, bytes:
/// enough to write every key index (so keys stay distinct), at most
/// memcached's `KEY_MAX_LENGTH`.
pub fn key_size_range(records: u64) -> (u32, u32) {
    (min_key_len(records), MAX_KEY_LEN)
}

/// The fixed `--value-size` values accepted, bytes.
pub const VALUE_SIZE_RANGE: (u32, u32) = (0, MAX_VALUE_LEN);

/// The one sentence for a size flag outside its range, the same whether the
/// command line or [`Config::validate`] finds it (`records`: the key space
/// the range depends on, for `--key-size`).
pub fn size_error(flag: &str, (lo, hi): (u32, u32), got: &str, records: Option<u64>) -> String {
    let with = records.map_or_else(String::new, |r| format!(" with --records {r}"));
    format!("{flag} must be \"etc\" or a number of bytes from {lo} to {hi}{with} (got {got:?})")
}

/// Read a size flag: `etc`, or a number of bytes in `range`.
pub fn parse_size(
    flag: &str,
    text: &str,
    range: (u32, u32),
    records: Option<u64>,
) -> Result<SizeDist, String> {
    let t = text.trim();
    if t == "etc" {
        return Ok(SizeDist::Etc);
    }
    t.parse::<u32>()
        .ok()
        .filter(|v| (range.0..=range.1).contains(v))
        .map(SizeDist::Fixed)
        .ok_or_else(|| size_error(flag, range, text, records))
}

impl Config {
    pub fn validate(&self) -> Result<(), String> {
        if !target::is_allowed(self.server.ip()) {
            return Err(target::outside(self.server));
        }
        check_range(
            "--connections",
            self.connections,
            1,
            MAX_CONNECTIONS,
            "an integer",
        )?;
        check_range("--depth", self.depth, 1, MAX_DEPTH, "an integer")?;
        check_range(
            "--threads",
            self.threads,
            1,
            MAX_THREADS.min(self.connections),
            "an integer (at most --connections)",
        )?;
        if !(self.duration_s >= MIN_DURATION_S && self.duration_s <= MAX_SECONDS) {
            return Err(format!(
                "--duration must be a number of seconds from {MIN_DURATION_S} to {MAX_SECONDS} (got {})",
                num(self.duration_s)
            ));
        }
        if let Mode::Open { qps, .. } = self.mode {
            // The window must hold at least one scheduled request on
            // average: `--qps 1e-300` scheduled none and exited 0.
            if !(qps > 0.0 && qps <= MAX_QPS && qps * self.duration_s >= 1.0 - 1e-9) {
                return Err(format!(
                    "--qps must be at least {} requests per second with --duration {} (one request in the window) \
                     and at most {MAX_QPS} (got {})",
                    num(ceil3(1.0 / self.duration_s)),
                    num(self.duration_s),
                    num(qps)
                ));
            }
        }
        if !(self.warmup_s >= 0.0 && self.warmup_s <= MAX_SECONDS) {
            return Err(format!(
                "--warmup must be a number of seconds from 0 to {MAX_SECONDS} (got {})",
                self.warmup_s
            ));
        }
        if let Some(n) = self.requests {
            check_range("--requests", n, 1, MAX_REQUESTS, "an integer")?;
        }
        check_range("--records", self.records, 1, MAX_RECORDS, "an integer")?;
        if let SizeDist::Fixed(k) = self.key_size {
            let range = key_size_range(self.records);
            if !(range.0..=range.1).contains(&k) {
                return Err(size_error(
                    "--key-size",
                    range,
                    &k.to_string(),
                    Some(self.records),
                ));
            }
        }
        if let SizeDist::Fixed(v) = self.value_size {
            if v > MAX_VALUE_LEN {
                return Err(size_error(
                    "--value-size",
                    VALUE_SIZE_RANGE,
                    &v.to_string(),
                    None,
                ));
            }
        }
        check_range(
            "--spin-us",
            self.spin_us,
            0,
            MAX_SPIN_US,
            "a number of microseconds",
        )?;
        check_range(
            "--batch-us",
            self.batch_us,
            0,
            MAX_SPIN_US,
            "a number of microseconds",
        )?;
        if self.mode == Mode::Closed {
            // What only the open loop reads must not be silently ignored
            // in the closed one (issue 62, item 12).
            for (flag, given, what) in [
                ("--spin-us", self.spin_us != 0, "it polls before each scheduled send time"),
                ("--batch-us", self.batch_us != 0, "it sends scheduled requests early"),
            ] {
                if given {
                    return Err(format!(
                        "{flag} applies only to the open loop ({what}); give --qps too, or leave {flag} out"
                    ));
                }
            }
        }
        check_range(
            "--timeout-ms",
            self.timeout_ms,
            1,
            MAX_TIMEOUT_MS,
            "a number of milliseconds",
        )?;
        check_range(
            "--late-us",
            self.late_us,
            1,
            MAX_LATE_US,
            "a number of microseconds",
        )?;
        for (flag, v) in [("--max-late", self.max_late), ("--max-failed", self.max_failed)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("{flag} must be a fraction from 0 to 1 (got {v})"));
            }
        }
        if !(0.0..=1.0).contains(&self.get_fraction) {
            return Err(format!(
                "--get-fraction must be a number from 0 to 1 (got {})",
                self.get_fraction
            ));
        }
        Ok(())
    }

    /// Pipeline depth used by the preload.
    pub fn preload_depth(&self) -> u32 {
        self.depth.max(PRELOAD_DEPTH)
    }

    /// The drain after the measured window, seconds (`--timeout-ms`).
    pub fn drain_s(&self) -> f64 {
        f64::from(self.timeout_ms) / 1e3
    }
}

/// A number as a person would write it: plain, or with an exponent when
/// plain would be long (`1e-300`, not three hundred zeros).
pub fn num(x: f64) -> String {
    let plain = format!("{x}");
    if plain.len() <= 12 {
        plain
    } else if x != 0.0 && (x.abs() < 1e-3 || x.abs() >= 1e9) {
        format!("{x:e}")
    } else {
        let s = format!("{x:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// `x` (> 0) rounded up to three significant digits, so that a stated
/// lower bound is itself accepted.
fn ceil3(x: f64) -> f64 {
    if !(x.is_finite() && x > 0.0) {
        return x;
    }
    let scale = 10f64.powi(2 - x.log10().floor() as i32);
    (x * scale).ceil() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_size_states_one_range_whichever_check_finds_it() {
        // The command line reads the flag (parse_size) and validate checks
        // the config: both must name the range that holds for --records.
        assert_eq!(key_size_range(10_000), (4, MAX_KEY_LEN));
        assert_eq!(key_size_range(100), (2, MAX_KEY_LEN));
        for k in [0u32, 3, 251] {
            let parsed = parse_size(
                "--key-size",
                &k.to_string(),
                key_size_range(10_000),
                Some(10_000),
            )
            .unwrap_err();
            let validated = Config {
                key_size: SizeDist::Fixed(k),
                ..Config::default()
            }
            .validate()
            .unwrap_err();
            assert_eq!(parsed, validated);
            assert!(
                parsed.contains("from 4 to 250 with --records 10000"),
                "{parsed}"
            );
        }
        let e = parse_size("--key-size", "x", key_size_range(10_000), Some(10_000)).unwrap_err();
        assert!(e.contains("from 4 to 250 with --records 10000"), "{e}");
        assert_eq!(
            parse_size("--value-size", " etc ", VALUE_SIZE_RANGE, None),
            Ok(SizeDist::Etc)
        );
        assert_eq!(
            parse_size("--value-size", "0", VALUE_SIZE_RANGE, None),
            Ok(SizeDist::Fixed(0))
        );
    }

    #[test]
    fn a_run_must_be_able_to_send_one_request() {
        let open = |qps: f64, duration_s: f64| Config {
            mode: Mode::Open {
                qps,
                interarrival: InterArrivalKind::Exponential,
            },
            duration_s,
            ..Config::default()
        };
        let e = open(1e-300, 5.0).validate().unwrap_err();
        assert_eq!(
            e,
            "--qps must be at least 0.2 requests per second with --duration 5 (one request in the window) \
             and at most 10000000 (got 1e-300)"
        );
        let e = open(3.0, 0.3).validate().unwrap_err();
        assert!(e.starts_with("--qps must be at least 3.34 requests per second with --duration 0.3 "), "{e}");
        open(3.34, 0.3).validate().unwrap();
        open(2.0, 0.5).validate().unwrap();
        let e = Config { duration_s: 1e-6, ..Config::default() }.validate().unwrap_err();
        assert_eq!(e, "--duration must be a number of seconds from 0.001 to 3600 (got 0.000001)");
        Config { duration_s: MIN_DURATION_S, ..Config::default() }.validate().unwrap();
    }

    #[test]
    fn open_loop_flags_are_refused_in_the_closed_loop() {
        let e = Config { spin_us: 50, ..Config::default() }.validate().unwrap_err();
        assert!(e.starts_with("--spin-us applies only to the open loop"), "{e}");
        let e = Config { batch_us: 1, ..Config::default() }.validate().unwrap_err();
        assert!(e.starts_with("--batch-us applies only to the open loop"), "{e}");
        Config {
            spin_us: 50,
            batch_us: 50,
            mode: Mode::Open { qps: 1000.0, interarrival: InterArrivalKind::Exponential },
            ..Config::default()
        }
        .validate()
        .unwrap();
    }

    #[test]
    fn default_is_valid() {
        Config::default().validate().unwrap();
    }

    #[test]
    fn each_bad_field_names_its_flag() {
        let base = Config::default();
        let cases: Vec<(Config, &str)> = vec![
            (
                Config {
                    server: "10.0.0.1:11211".parse().unwrap(),
                    ..base.clone()
                },
                "--server",
            ),
            (
                Config {
                    connections: 0,
                    ..base.clone()
                },
                "--connections",
            ),
            (
                Config {
                    connections: 1001,
                    ..base.clone()
                },
                "--connections",
            ),
            (
                Config {
                    depth: 0,
                    ..base.clone()
                },
                "--depth",
            ),
            (
                Config {
                    threads: 5,
                    ..base.clone()
                },
                "--threads",
            ),
            (
                Config {
                    threads: 0,
                    ..base.clone()
                },
                "--threads",
            ),
            (
                Config {
                    mode: Mode::Open {
                        qps: 0.0,
                        interarrival: InterArrivalKind::Exponential,
                    },
                    ..base.clone()
                },
                "--qps",
            ),
            (
                Config {
                    mode: Mode::Open {
                        qps: f64::NAN,
                        interarrival: InterArrivalKind::Exponential,
                    },
                    ..base.clone()
                },
                "--qps",
            ),
            (
                Config {
                    warmup_s: -1.0,
                    ..base.clone()
                },
                "--warmup",
            ),
            (
                Config {
                    duration_s: 0.0,
                    ..base.clone()
                },
                "--duration",
            ),
            (
                Config {
                    duration_s: f64::INFINITY,
                    ..base.clone()
                },
                "--duration",
            ),
            (
                Config {
                    requests: Some(0),
                    ..base.clone()
                },
                "--requests",
            ),
            (
                Config {
                    records: 0,
                    ..base.clone()
                },
                "--records",
            ),
            (
                Config {
                    key_size: SizeDist::Fixed(3),
                    ..base.clone()
                },
                "--key-size",
            ),
            (
                Config {
                    key_size: SizeDist::Fixed(251),
                    ..base.clone()
                },
                "--key-size",
            ),
            (
                Config {
                    value_size: SizeDist::Fixed(1_000_001),
                    ..base.clone()
                },
                "--value-size",
            ),
            (
                Config {
                    get_fraction: 1.5,
                    ..base.clone()
                },
                "--get-fraction",
            ),
            (
                Config {
                    spin_us: 1001,
                    ..base.clone()
                },
                "--spin-us",
            ),
            (
                Config {
                    batch_us: 1001,
                    ..base.clone()
                },
                "--batch-us",
            ),
        ];
        for (c, flag) in cases {
            let e = c.validate().unwrap_err();
            assert!(e.starts_with(flag), "{flag}: {e}");
            assert!(!e.contains('\n'));
        }
        Config {
            key_size: SizeDist::Fixed(4),
            ..base
        }
        .validate()
        .unwrap();
    }
}
