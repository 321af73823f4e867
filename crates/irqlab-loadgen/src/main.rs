//! The `irqlab-loadgen` command.
//!
//! Exit status: 0 on success; 2 for a usage error (a bad flag, or a server
//! outside loopback and 198.18.0.0/15, or one the kernel routes through a
//! gateway), reported as one line `irqlab-loadgen: error: <sentence>`; 1
//! when the run could not be carried out (cannot connect, preload timed
//! out, every connection failed), measured nothing because the server
//! answered no request of the measured window, got replies that failed
//! their checks (wrong key or data, error replies, broken streams, lost
//! requests), or the server did not keep up (more than `--max-failed` of
//! the requests timed out, answered late or never, or never left, or of
//! the connection-time was stalled), measured no request at all (a window
//! too short, a schedule that put nothing in it), or saw more than half of
//! its measured gets miss after the preload set every key (unless
//! `--allow-misses`); 3 when the open loop could not keep its schedule
//! (more than `--max-late` of the sends left over `--late-us` late by the
//! generator's own doing). In the cases after the first the report is
//! printed all the same, its `verdict`, `failure` and `exit_status` agree
//! with the status, and one line says why; 1 outranks 3: the server's failures are counted
//! apart from the generator's lateness (a stall from a request's write, not
//! its schedule; unsent requests only when their connection had no free
//! slot), so they hold whether or not the generator kept up.

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::Parser;
use irqlab_core::workload::InterArrivalKind;
use irqlab_loadgen::config::{
    key_size_range, parse_size, DEFAULT_LATE_US, DEFAULT_MAX_FAILED, DEFAULT_MAX_LATE,
    DEFAULT_TIMEOUT_MS, MAX_CONNECTIONS, MAX_DEPTH, MAX_LATE_US, MAX_QPS, MAX_REQUESTS,
    MAX_SECONDS, MAX_SPIN_US, MAX_THREADS, MAX_TIMEOUT_MS, MIN_DURATION_S, VALUE_SIZE_RANGE,
};
use irqlab_loadgen::keyspace::MAX_RECORDS;
use irqlab_loadgen::{run, target, Config, Mode, RunError};

const ABOUT: &str =
    "memcached load generator: closed loop (--connections x --depth) or open loop (--qps), \
checked replies, HDR latency percentiles.";

const AFTER: &str = "Closed loop unless --qps is given: each connection keeps --depth requests outstanding. \
Open loop: each connection sends at send times fixed in advance (rate --qps / --connections, gaps from \
--interarrival), at most --depth outstanding; latency counts from the scheduled time, so a request sent late \
is charged for the wait; --spin-us, --batch-us, --late-us and --max-late are the open loop's and refused without \
--qps. Every key is set first (the preload) so that gets hit and each reply is checked \
against the value the key holds; a run with replies that failed their checks exits 1, and so does one where more \
than half of the measured gets missed after the preload (unless --allow-misses: misses expected; without a preload \
misses are not checked). Closed-loop latency runs from just before a request's write to just after the read of its reply, so the client's own turnaround (from a reply to the next request) is not in it. Runs last at most --warmup + --duration + --timeout-ms (the drain) after the preload. \
A timeout is a request that waited more than --timeout-ms after its write: answered after --timeout-ms \
(timeouts_answered; still a latency sample) or never (timeouts_unanswered, at the end of the drain). \
Exit status: 0 ok; 1 the run failed, the server answered nothing, replies failed their checks, more than \
--max-failed of the requests timed out or never left (or of the connection-time was stalled: a server that stops \
answering mid-run), the run measured no request, or the gets mostly missed; 2 usage; 3 the open loop fell behind its schedule (more than --max-late of the sends left \
more than --late-us after they could): its rate and latency are the generator's, not the server's. \
The JSON's verdict names the failure (ok, unanswered, failed_checks, server_behind, measured_nothing, \
mostly_misses, behind_schedule), failure is the line printed on stderr and exit_status the status. \
Load goes only to loopback (127.0.0.0/8, ::1) or to a 198.18.0.0/15 address the kernel routes \
without a gateway (local, or on a directly connected link).";

#[derive(Parser, Debug)]
#[command(name = "irqlab-loadgen", version, about = ABOUT, after_help = AFTER)]
struct Cli {
    /// memcached server, HOST:PORT (loopback, or 198.18.0.0/15 without a gateway)
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:11211")]
    server: String,
    /// TCP connections
    #[arg(long, value_name = "C", default_value = "4", allow_negative_numbers = true, value_parser = uint("--connections", 1, MAX_CONNECTIONS as u64))]
    connections: u64,
    /// requests outstanding per connection (closed loop: always; open loop: at most)
    #[arg(long, value_name = "D", default_value = "1", allow_negative_numbers = true, value_parser = uint("--depth", 1, MAX_DEPTH as u64))]
    depth: u64,
    /// worker threads, each with its own connections (at most --connections)
    #[arg(long, value_name = "T", default_value = "1", allow_negative_numbers = true, value_parser = uint("--threads", 1, MAX_THREADS as u64))]
    threads: u64,
    /// open loop at this many requests per second (default: closed loop)
    #[arg(long, value_name = "Q", allow_negative_numbers = true, value_parser = number("--qps", 0.0, false, MAX_QPS))]
    qps: Option<f64>,
    /// open-loop gaps: exponential (Poisson; the default) or fb_ia (mutilate's Facebook distribution)
    #[arg(long, value_name = "DIST", value_parser = interarrival)]
    interarrival: Option<InterArrivalKind>,
    /// seconds of warm-up before the measured window (samples discarded)
    #[arg(long, value_name = "S", default_value = "0", allow_negative_numbers = true, value_parser = number("--warmup", 0.0, true, MAX_SECONDS))]
    warmup: f64,
    /// seconds of the measured window (open loop: at least one request's worth at --qps)
    #[arg(long, value_name = "S", default_value = "5", allow_negative_numbers = true, value_parser = number("--duration", MIN_DURATION_S, true, MAX_SECONDS))]
    duration: f64,
    /// stop after this many measured replies (or at the end of --duration)
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = uint("--requests", 1, MAX_REQUESTS))]
    requests: Option<u64>,
    /// keys in the key space
    #[arg(long, value_name = "N", default_value = "10000", allow_negative_numbers = true, value_parser = uint("--records", 1, MAX_RECORDS))]
    records: u64,
    /// key size in bytes, or "etc" (mutilate's fb_key)
    /// (checked once --records is known: the shortest key depends on it)
    #[arg(
        long,
        value_name = "N|etc",
        default_value = "etc",
        allow_negative_numbers = true
    )]
    key_size: String,
    /// value size in bytes, or "etc" (mutilate's fb_value)
    #[arg(
        long,
        value_name = "N|etc",
        default_value = "etc",
        allow_negative_numbers = true
    )]
    value_size: String,
    /// fraction of requests that are gets (the rest are sets)
    #[arg(long, value_name = "F", default_value = "1", allow_negative_numbers = true, value_parser = number("--get-fraction", 0.0, true, 1.0))]
    get_fraction: f64,
    /// random seed (request keys and mix, open-loop send times)
    #[arg(long, value_name = "N", default_value = "1", allow_negative_numbers = true, value_parser = uint("--seed", 0, u64::MAX))]
    seed: u64,
    /// open loop: poll (burning CPU) for the last US microseconds before each send time
    /// instead of sleeping to it, so sends are not late by the thread's wake-up time
    #[arg(long, value_name = "US", default_value = "0", allow_negative_numbers = true, value_parser = uint("--spin-us", 0, MAX_SPIN_US as u64))]
    spin_us: u64,
    /// open loop: once awake, also send what is due within US microseconds, early (its latency then counts from
    /// its write), saving the wake-ups of the generator; 0: every request leaves at its send time or later
    #[arg(long, value_name = "US", default_value = "0", allow_negative_numbers = true, value_parser = uint("--batch-us", 0, MAX_SPIN_US as u64))]
    batch_us: u64,
    /// a request unanswered MS milliseconds after its write is a timeout (whether answered later or never) and
    /// stalls its connection; the measured window's requests are waited for this long after it
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_TIMEOUT_MS as u64, allow_negative_numbers = true, value_parser = uint("--timeout-ms", 1, MAX_TIMEOUT_MS as u64))]
    timeout_ms: u64,
    /// open loop: a send leaving more than US microseconds after it could (its scheduled time, or a free
    /// --depth slot) is late [default: 1000]
    #[arg(long, value_name = "US", allow_negative_numbers = true, value_parser = uint("--late-us", 1, MAX_LATE_US as u64))]
    late_us: Option<u64>,
    /// open loop: exit 3 if more than this fraction of the window's sends were late [default: 0.01]
    #[arg(long, value_name = "F", allow_negative_numbers = true, value_parser = number("--max-late", 0.0, true, 1.0))]
    max_late: Option<f64>,
    /// exit 1 if more than this fraction of the window's requests timed out or never left, or of its
    /// connection-time was stalled
    #[arg(long, value_name = "F", default_value_t = DEFAULT_MAX_FAILED, allow_negative_numbers = true, value_parser = number("--max-failed", 0.0, true, 1.0))]
    max_failed: f64,
    /// do not set every key before the run (gets may miss; misses are then not checked)
    #[arg(long)]
    no_preload: bool,
    /// misses are expected: do not exit 1 when more than half of the measured gets miss after the preload
    #[arg(long)]
    allow_misses: bool,
    /// print one JSON object
    #[arg(long)]
    json: bool,
    /// measure what a system call, a loopback TCP message and a thread switch cost on this machine, print
    /// them as JSON and exit (no load is sent)
    #[arg(long)]
    probe: bool,
}

/// An integer flag in `lo..=hi`.
fn uint(
    flag: &'static str,
    lo: u64,
    hi: u64,
) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        s.trim()
            .parse::<u64>()
            .ok()
            .filter(|v| (lo..=hi).contains(v))
            .ok_or_else(|| format!("{flag} must be an integer from {lo} to {hi} (got {s:?})"))
    }
}

/// A number flag in `(lo, hi]`, or `[lo, hi]` if `lo_ok`.
fn number(
    flag: &'static str,
    lo: f64,
    lo_ok: bool,
    hi: f64,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| (*v > lo || (lo_ok && *v == lo)) && *v <= hi)
            .ok_or_else(|| {
                let low = if lo_ok {
                    format!("from {lo}")
                } else {
                    format!("greater than {lo} and")
                };
                let high = if lo_ok {
                    format!("to {hi}")
                } else {
                    format!("at most {hi}")
                };
                format!("{flag} must be a number {low} {high} (got {s:?})")
            })
    }
}

fn interarrival(s: &str) -> Result<InterArrivalKind, String> {
    match s.trim() {
        "exponential" => Ok(InterArrivalKind::Exponential),
        "fb_ia" => Ok(InterArrivalKind::FbIa),
        _ => Err(format!(
            "--interarrival must be exponential or fb_ia (got {s:?})"
        )),
    }
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!(
        "irqlab-loadgen: error: {}",
        msg.split_whitespace().collect::<Vec<_>>().join(" ")
    );
    ExitCode::from(2)
}

/// One sentence for a clap error (clap's own text spans several lines).
fn clap_sentence(e: &clap::Error) -> String {
    if e.kind() == ErrorKind::ValueValidation {
        if let Some(src) = std::error::Error::source(e) {
            return src.to_string();
        }
    }
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or("invalid command line");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    format!("{first}; see --help")
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            return match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    let _ = e.print();
                    ExitCode::SUCCESS
                }
                _ => usage_error(&clap_sentence(&e)),
            };
        }
    };
    if cli.probe {
        return match irqlab_loadgen::probe::probe(5) {
            Ok(p) => {
                println!("{}", serde_json::to_string(&p).expect("plain numbers serialize"));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("irqlab-loadgen: error: the probe failed: {e}");
                ExitCode::from(1)
            }
        };
    }
    let server = match target::resolve(&cli.server) {
        Ok(a) => a,
        Err(msg) => return usage_error(&msg),
    };
    // Both size flags are read here rather than by clap, so that --key-size
    // states the one range that holds for the --records given.
    let key_size = match parse_size(
        "--key-size",
        &cli.key_size,
        key_size_range(cli.records),
        Some(cli.records),
    ) {
        Ok(s) => s,
        Err(msg) => return usage_error(&msg),
    };
    let value_size = match parse_size("--value-size", &cli.value_size, VALUE_SIZE_RANGE, None) {
        Ok(s) => s,
        Err(msg) => return usage_error(&msg),
    };
    let mode = match (cli.qps, cli.interarrival) {
        (Some(qps), ia) => Mode::Open {
            qps,
            interarrival: ia.unwrap_or(InterArrivalKind::Exponential),
        },
        (None, Some(_)) => {
            return usage_error("--interarrival applies only to the open loop; give --qps too")
        }
        (None, None) => Mode::Closed,
    };
    // The open loop's lateness flags, given to the closed loop, would be
    // ignored without a word (issue 62, item 12); --spin-us and --batch-us
    // are refused by Config::validate, which sees their values.
    if mode == Mode::Closed {
        for (flag, given) in [("--late-us", cli.late_us.is_some()), ("--max-late", cli.max_late.is_some())] {
            if given {
                return usage_error(&format!(
                    "{flag} applies only to the open loop (it judges sends against their schedule); give --qps too, or leave {flag} out"
                ));
            }
        }
    }
    let cfg = Config {
        server,
        connections: cli.connections as u32,
        depth: cli.depth as u32,
        threads: cli.threads as u32,
        mode,
        warmup_s: cli.warmup,
        duration_s: cli.duration,
        requests: cli.requests,
        records: cli.records,
        key_size,
        value_size,
        get_fraction: cli.get_fraction,
        seed: cli.seed,
        preload: !cli.no_preload,
        allow_misses: cli.allow_misses,
        spin_us: cli.spin_us as u32,
        batch_us: cli.batch_us as u32,
        timeout_ms: cli.timeout_ms as u32,
        late_us: cli.late_us.map_or(DEFAULT_LATE_US, |v| v as u32),
        max_late: cli.max_late.unwrap_or(DEFAULT_MAX_LATE),
        max_failed: cli.max_failed,
    };
    if let Err(msg) = cfg.validate() {
        return usage_error(&msg);
    }
    match run(&cfg) {
        Ok(report) => {
            println!(
                "{}",
                if cli.json {
                    report.to_json()
                } else {
                    report.to_text()
                }
            );
            // The report is out (its counts say what happened, its verdict
            // what they mean); the status says whether the run can be
            // trusted, and one line says why not: the report's own.
            if let Some(why) = &report.failure {
                eprintln!("irqlab-loadgen: error: {why}");
            }
            ExitCode::from(report.exit_status)
        }
        Err(RunError::Invalid(msg)) => usage_error(&msg),
        Err(e) => {
            eprintln!("irqlab-loadgen: error: {e}");
            ExitCode::from(1)
        }
    }
}
