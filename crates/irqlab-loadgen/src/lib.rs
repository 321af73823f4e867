//! irqlab-loadgen: a memcached text-protocol load generator, closed loop
//! (connections × pipeline depth) and open loop (send times fixed in
//! advance, latency counted from the scheduled time, free of coordinated
//! omission), with ETC key and value sizes, checked replies and HDR latency
//! percentiles.
//!
//! Layout (one concept per module):
//! - [`protocol`]: `get`/`set` encoding and the incremental reply parser.
//! - [`keyspace`]: keys, and values derived from the key so gets are checked.
//! - [`requests`], [`schedule`]: what each connection sends, and when.
//! - [`target`]: the addresses load may go to; [`route`]: the kernel's
//!   route to a 198.18.0.0/15 target must stay on this machine.
//! - [`config`]: settings and their limits.
//! - [`conn`], [`worker`], [`sys`]: the epoll event loop.
//! - [`stats`], [`report`]: counting and output.
//!
//! [`run`] performs one run: connect, preload every key, then the timed
//! phase (warm-up, measured window, drain) on `threads` worker threads, each
//! with its own connections and epoll instance. Its wall time is bounded:
//! connecting at most 5 s, the preload at most 60 s, then at most
//! warm-up + duration + `--timeout-ms` (the drain, 2 s by default).

pub mod config;
pub mod conn;
pub mod keyspace;
pub mod probe;
pub mod protocol;
pub mod report;
pub mod requests;
pub mod route;
pub mod schedule;
pub mod stats;
pub mod sys;
pub mod target;
pub mod worker;

use std::sync::atomic::Ordering;

use irqlab_core::workload::{InterArrivalKind, SizeDist};

pub use config::{Config, Mode};
pub use report::Report;

use conn::Conn;
use keyspace::KeySpace;
use requests::RequestStream;
use schedule::Schedule;
use stats::Stats;
use worker::{Outcomes, Phase, Shared, Task, Worker};

/// Why a run could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A setting is out of range (a usage error; one sentence).
    #[error("{0}")]
    Invalid(String),
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("the preload of {keys} keys did not finish within {seconds} s; use fewer --records or --no-preload")]
    PreloadTimeout { keys: u64, seconds: f64 },
    #[error("every connection failed{}", .0.as_deref().map(|e| format!(" (first error: {e})")).unwrap_or_default())]
    AllConnectionsFailed(Option<String>),
    #[error("event loop failed: {0}")]
    Io(#[from] std::io::Error),
}

fn secs_to_ns(s: f64) -> u64 {
    (s * 1e9).round() as u64
}

/// Run each group of connections on its own thread for one phase and
/// collect them back with their counts.
fn run_phase(
    cfg: &Config,
    ks: &KeySpace,
    shared: &Shared,
    phase: Phase,
    task: Task,
    groups: Vec<Vec<Conn>>,
) -> Result<Vec<Outcomes>, RunError> {
    std::thread::scope(|s| {
        let handles: Vec<_> = groups
            .into_iter()
            .map(|g| s.spawn(move || Worker::new(cfg, ks, shared, phase, task, g)?.run()))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .expect("worker thread panicked")
                    .map_err(RunError::Io)
            })
            .collect()
    })
}

/// Every connection that took part in the timed phase, open or failed
/// (the stalled share's denominator).
fn conns_in_phase(outs: &[Outcomes]) -> usize {
    outs.iter().map(|o| o.conns.len()).sum()
}

/// Split connections round-robin over `threads` groups.
fn group(conns: Vec<Conn>, threads: usize) -> Vec<Vec<Conn>> {
    let mut groups: Vec<Vec<Conn>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, c) in conns.into_iter().enumerate() {
        groups[i % threads].push(c);
    }
    groups.retain(|g| !g.is_empty());
    groups
}

fn size_json(s: SizeDist) -> serde_json::Value {
    serde_json::to_value(s).expect("serializes")
}

/// Carry out one run as `cfg` says.
pub fn run(cfg: &Config) -> Result<Report, RunError> {
    cfg.validate().map_err(RunError::Invalid)?;
    // Asked here, not in `validate`, because it asks the kernel: the route
    // from this process's network namespace, where the connections start.
    route::check(cfg.server).map_err(RunError::Invalid)?;
    let ks = KeySpace::new(cfg.records, cfg.key_size, cfg.value_size);
    let mut conns = Vec::with_capacity(cfg.connections as usize);
    let connect_by = std::time::Instant::now()
        + std::time::Duration::from_secs_f64(config::CONNECT_ALL_TIMEOUT_S);
    for id in 0..cfg.connections {
        let requests = RequestStream::new(cfg.seed, id, cfg.records, cfg.get_fraction);
        let left = connect_by.saturating_duration_since(std::time::Instant::now());
        let mut c =
            Conn::connect(id, cfg.server, requests, left).map_err(|source| RunError::Connect {
                addr: cfg.server,
                source,
            })?;
        if let Mode::Open { qps, interarrival } = cfg.mode {
            c.schedule = Some(Schedule::new(
                interarrival,
                qps,
                cfg.connections,
                cfg.seed,
                id,
            ));
        }
        conns.push(c);
    }
    let threads = cfg.threads as usize;
    let mut first_error = None;
    let mut failed = 0;

    // Preload: every key set once, so that gets hit and can be checked.
    let preload = if cfg.preload {
        let t0 = sys::now_ns();
        let deadline = t0 + secs_to_ns(config::PRELOAD_TIMEOUT_S);
        let phase = Phase {
            start: t0,
            measure_start: t0,
            measure_end: deadline,
            deadline,
        };
        let outs = run_phase(
            cfg,
            &ks,
            &Shared::default(),
            phase,
            Task::Preload,
            group(conns, threads),
        )?;
        let seconds = (sys::now_ns() - t0) as f64 / 1e9;
        let mut st = Stats::default();
        let mut finished = true;
        conns = Vec::new();
        for o in outs {
            st.merge(&o.stats);
            finished &= o.finished;
            conns.extend(o.conns);
        }
        if !finished && conns.iter().any(|c| c.alive) {
            return Err(RunError::PreloadTimeout {
                keys: cfg.records,
                seconds: config::PRELOAD_TIMEOUT_S,
            });
        }
        failed += st.connections_failed;
        first_error = st.first_error;
        Some(report::Preload {
            keys: cfg.records,
            errors: st.errors,
            seconds: report::round3(seconds),
        })
    } else {
        None
    };
    conns.retain(|c| c.alive);
    conns.sort_by_key(|c| c.id);
    if conns.is_empty() {
        return Err(RunError::AllConnectionsFailed(first_error));
    }

    // The timed phase. Start 1 ms ahead so every thread is up before the
    // first scheduled send.
    let start = sys::now_ns() + 1_000_000;
    let measure_start = start + secs_to_ns(cfg.warmup_s);
    let measure_end = measure_start + secs_to_ns(cfg.duration_s);
    let phase = Phase {
        start,
        measure_start,
        measure_end,
        deadline: measure_end + secs_to_ns(cfg.drain_s()),
    };
    let shared = Shared::default();
    let cpu0 = sys::cpu_time_s();
    let outs = run_phase(cfg, &ks, &shared, phase, Task::Load, group(conns, threads))?;
    let cpu_s = sys::cpu_time_s() - cpu0;
    let elapsed_s = sys::now_ns().saturating_sub(start) as f64 / 1e9;
    let mut st = Stats::default();
    for o in &outs {
        st.merge(&o.stats);
    }
    st.connections_failed += failed;
    if st.first_error.is_none() {
        st.first_error = first_error;
    }

    let by_requests = shared.stop.load(Ordering::Relaxed);
    let all_failed = outs.iter().all(|o| o.conns.iter().all(|c| !c.alive));
    let end = if by_requests {
        shared
            .stop_at
            .load(Ordering::Relaxed)
            .clamp(measure_start, measure_end)
    } else {
        measure_end
    };
    let duration_s = (end - measure_start) as f64 / 1e9;
    // Throughput is what the server was seen to deliver: replies read during
    // the window over its length, whenever their requests were scheduled. A
    // generator that falls behind sends the window's requests late, into
    // the drain, so counting those (as the latency samples do) would report
    // the target rate whatever happened. With `--requests`, the window ends
    // when the last of them is in, and the count is theirs.
    let answered = if by_requests { st.requests } else { st.window_replies };
    let open = matches!(cfg.mode, Mode::Open { .. });
    let frac = |n: u64, d: u64| if d > 0 { report::round6(n as f64 / d as f64) } else { 0.0 };
    let window_ns = (end - measure_start).max(1);
    let stalled_fraction =
        report::round6((st.stalled_ns as f64 / (window_ns as f64 * conns_in_phase(&outs).max(1) as f64)).min(1.0));
    // The generator's own backlog is its failure (it counts as late), not
    // the server's. A timeout answered later is a sample too when it was
    // sent in the window: counted once below the line. (The timeouts span
    // the warm-up as well, so the share is capped at 1.)
    let timeouts = st.timeouts + st.timeouts_answered;
    let failed_fraction = frac(
        timeouts + st.unsent - st.unsent_backlog,
        st.requests + timeouts - st.timeouts_answered_sampled + st.unsent,
    )
    .min(1.0);
    let preload_errors = preload.as_ref().map_or(0, |p| p.errors);
    // Kept up: answered every request, correctly, within the budget. A
    // server that closes or resets every connection or answers
    // SERVER_ERROR loses no time, so the budget alone called it kept up.
    let server_kept_up = failed_fraction <= cfg.max_failed
        && stalled_fraction <= cfg.max_failed
        && st.errors == 0
        && preload_errors == 0
        && st.connections_failed == 0;
    let late_fraction = frac(st.late, st.sends + st.unsent);
    let (offered, ia) = match cfg.mode {
        Mode::Closed => (None, None),
        Mode::Open { qps, interarrival } => (
            Some(qps),
            Some(match interarrival {
                InterArrivalKind::Exponential => "exponential",
                InterArrivalKind::FbIa => "fb_ia",
                InterArrivalKind::Constant => "constant",
            }),
        ),
    };
    Ok(Report {
        verdict: "ok",
        failure: None,
        exit_status: 0,
        mode: if offered.is_some() { "open" } else { "closed" },
        server: cfg.server.to_string(),
        achieved_qps: if duration_s > 0.0 {
            report::round3(answered as f64 / duration_s)
        } else {
            0.0
        },
        offered_qps: offered,
        requests: st.requests,
        errors: st.errors,
        gets: st.gets,
        misses: st.misses,
        miss_fraction: frac(st.misses, st.gets),
        misses_allowed: cfg.allow_misses,
        timeouts,
        timeouts_answered: st.timeouts_answered,
        timeouts_unanswered: st.timeouts,
        latency_us: report::LatencyUs::from_stats(&st),
        latency_from: if offered.is_some() { "schedule" } else { "write" },
        send_lag_us: offered.map(|_| report::LatencyUs::from_histogram(&st.send_lag_ns)),
        own_lag_us: offered.map(|_| report::LatencyUs::from_histogram(&st.own_lag_ns)),
        unsent: st.unsent,
        unsent_backlog: st.unsent_backlog,
        late: open.then_some(st.late),
        late_fraction: open.then_some(late_fraction),
        slot_wait_fraction: open.then(|| frac(st.slot_waits, st.sends)),
        schedule_kept: open.then_some(late_fraction <= cfg.max_late),
        failed_fraction,
        stalled_fraction,
        server_kept_up,
        timeout_ms: cfg.timeout_ms,
        late_us: cfg.late_us,
        max_late: cfg.max_late,
        max_failed: cfg.max_failed,
        elapsed_s: report::round3(elapsed_s),
        duration_s: report::round3(duration_s),
        warmup_s: cfg.warmup_s,
        connections: cfg.connections,
        depth: cfg.depth,
        threads: cfg.threads,
        interarrival: ia,
        get_fraction: cfg.get_fraction,
        records: cfg.records,
        key_size: size_json(cfg.key_size),
        value_size: size_json(cfg.value_size),
        seed: cfg.seed,
        spin_us: cfg.spin_us,
        batch_us: cfg.batch_us,
        stopped_by: if by_requests {
            "requests"
        } else if all_failed {
            "connections"
        } else {
            "duration"
        },
        cpu_s: report::round3(cpu_s),
        cpu_us_per_request: (st.replies > 0)
            .then(|| report::round3(cpu_s * 1e6 / st.replies as f64)),
        replies_total: st.replies,
        connections_failed: st.connections_failed,
        first_error: st.first_error,
        preload,
    }
    .settle())
}
