//! A policy the user brings (issue 41): an object that the run asks, at a
//! period of simulated time it chooses, what to change, showing it what a
//! kernel exposes (a [`Sample`]); it answers with knob settings by the
//! kernel's names ([`Change`]), which the run checks against the knob
//! table (`irqlab-knobs`) and applies as `napi-set`, `ethtool -C` or
//! `EPIOCSPARAMS` would on a real host.
//!
//! The built-in policies (DIM, the ITR policies, the searches) are pure
//! decisions in `irqlab-policy`, wired into the model where the kernel or
//! the device runs them; this is the other way in: a decision made outside
//! the model, crossing into it only at its period.
//!
//! The run pauses between two events: at a call time `t` every event due
//! at or before `t` has been handled, the cores' passed busy polls are
//! brought up to `t` (`kernel/busy_chain.rs`, as at the warm-up's end), and
//! nothing else moves. So a policy that changes nothing leaves every
//! statistic as it was without it, and one that sets a knob at its first
//! call (time 0, before the run starts) gives what setting that knob in the
//! scenario gives (tests/policy.rs).
//!
//! What a change does, and when, follows the kernel:
//! - `defer-hard-irqs`, `gro-flush-timeout`, `irq-suspend-timeout`
//!   (`netdev_nl_napi_set_config` in net/core/netdev-genl.c) write the
//!   NAPI's fields, which `napi_complete_done` and the busy-poll paths
//!   read at their next use; a deferral already counting down keeps its
//!   count (`napi->defer_hard_irqs_count` is loaded at the next
//!   completion).
//! - `rx-usecs`, `rx-frames` (`mlx5e_set_coalesce` →
//!   `mlx5_core_modify_cq_moderation`) change the RX completion queue's
//!   moderation, which the CQ applies from its next moderation period.
//! - `busy_poll_usecs` (`EPIOCSPARAMS`, `ep_eventpoll_bp_ioctl` in
//!   fs/eventpoll.c) sets the instance's field, read at the thread's next
//!   `epoll_wait`; the shim's control file does this on a real host.
//! - `InterruptThrottleRate` (the 82599's rate, as `ethtool -C rx-usecs`
//!   sets a static one: `ixgbe_set_coalesce`) makes the vector's ITR static
//!   at that rate ([`crate::model::devices::nic::eitr::EitrVector::set_rate`]).

use crate::engine::Nanos;
use crate::model::kernel::cpu::CpuClass;
use crate::error::Error;
use crate::model::kernel::{Kernel, RxSink};
use crate::model::machine::Machine;
use crate::model::trace::TraceEvent;
use irqlab_knobs::table::{self as knob, Knob};
use irqlab_policy::steering::RpsMap;
use serde::{Deserialize, Serialize};

/// What a policy sees at a call: counters since the run began (warm-up
/// included), the state of each queue, NAPI and core, and the knobs in
/// force. Indices are the scenario's: queue `i` is polled by NAPI `i`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Sample {
    /// Simulated time of the call, ns.
    pub time_ns: Nanos,
    /// The measured window has begun (`run.warmup_s` is over).
    pub measuring: bool,
    /// Packets delivered to sockets by polls (interrupt-driven or busy).
    pub packets: u64,
    /// Of `packets`, those a busy poll took.
    pub packets_busy_polled: u64,
    pub hard_irqs: u64,
    /// `NET_RX_SOFTIRQ` rounds (`net_rx_action` runs).
    pub softirq_rounds: u64,
    /// NAPI watchdog (`gro_flush_timeout` / `irq_suspend_timeout`) expiries.
    pub watchdog_fires: u64,
    /// Requests whose replies reached their client.
    pub requests_completed: u64,
    /// Sum of those requests' latencies (client send to reply), ns.
    pub latency_sum_ns: u128,
    pub queues: Vec<QueueSample>,
    pub napis: Vec<NapiSample>,
    pub cores: Vec<CoreSample>,
    /// Per application thread, its epoll instance's busy-poll time.
    pub busy_poll_usecs: Vec<u32>,
    /// Per application thread, the batches it served.
    pub threads: Vec<ThreadSample>,
    /// The RPS mask in force (bit i: application core i), where the run
    /// steers in software (`steering.scheme` rps, rfs or iaps) over cores 0
    /// to 62 (the knob's whole number); else None.
    pub rps_cpus: Option<u64>,
    /// Software steering's IPIs handled (`rps_trigger_softirq`), where the
    /// run steers in software; else None.
    pub rps_ipis: Option<u64>,
}

/// One application thread's batches: from `epoll_wait` returning events to
/// its next `epoll_wait` (`kernel/epoll.rs`, [`crate::model::kernel::epoll::Batches`]),
/// the time `irq-suspend-timeout` should cover (napi.rst).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ThreadSample {
    /// Batches ended since the run began.
    pub batches: u64,
    /// Their times summed, ns.
    pub batch_ns: u64,
    /// The longest that ended since the previous call, ns (0: none).
    pub batch_max_ns: Nanos,
}

/// One device queue pair.
#[derive(Clone, Debug, Default, Serialize)]
pub struct QueueSample {
    /// Interrupts its vector raised.
    pub irqs: u64,
    /// Packets and bytes the driver took from its RX ring.
    pub packets: u64,
    pub bytes: u64,
    /// TX completions the driver reaped, and their bytes.
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Packets on its RX ring, not yet polled.
    pub ring_packets: u32,
    /// Packets its RX ring dropped (full).
    pub drops: u64,
    /// Its RX completion queue's moderation (`rx-usecs`, `rx-frames`);
    /// None on the 82599, whose vector throttles instead.
    pub rx_usecs: Option<u32>,
    pub rx_frames: Option<u32>,
    /// The 82599's throttling interval in force, ns (None on the
    /// ConnectX-4; 0: throttling off).
    pub itr_interval_ns: Option<u64>,
}

/// One NAPI instance's per-NAPI configuration (`napi-get`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct NapiSample {
    pub defer_hard_irqs: u32,
    pub gro_flush_timeout_ns: Nanos,
    pub irq_suspend_timeout_ns: Nanos,
}

/// One core's time by what ran (`/proc/stat`'s columns), since the run
/// began, ns.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CoreSample {
    pub user_ns: Nanos,
    pub system_ns: Nanos,
    pub softirq_ns: Nanos,
    pub irq_ns: Nanos,
    pub idle_ns: Nanos,
    /// Packets in its backlog (`softnet_data`'s input and process queues)
    /// now; 0 without software steering.
    pub backlog_packets: u32,
}

/// A knob set by its kernel name (`rx-usecs`), on one queue, NAPI or
/// thread (`target`), or on every one (None).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    pub knob: String,
    pub target: Option<u32>,
    pub value: u64,
}

/// What went wrong in a policy's call: one sentence.
#[derive(Clone, Debug)]
pub struct PolicyError(pub String);

/// A policy the run calls at its period.
pub trait Policy {
    /// Its name in messages and the summary (the class's name).
    fn name(&self) -> String;
    /// Simulated time between calls, above 0.
    fn period_ns(&self) -> Nanos;
    /// The changes to make now.
    fn observe(&mut self, sample: &Sample) -> Result<Vec<Change>, PolicyError>;
    /// Its own fields to record in the summary at the run's end (numbers).
    fn fields(&mut self) -> Vec<(String, f64)> {
        Vec::new()
    }
}

/// The knobs a policy may set during a run, by kernel name.
pub const SETTABLE: [&Knob; 8] = [
    &knob::DEFER_HARD_IRQS,
    &knob::GRO_FLUSH_TIMEOUT,
    &knob::IRQ_SUSPEND_TIMEOUT,
    &knob::RX_USECS,
    &knob::RX_FRAMES,
    &knob::BUSY_POLL_USECS,
    &knob::ITR_RATE,
    &knob::RPS_CPUS,
];

/// Decisions kept in the summary, at most (the count goes on).
pub const DECISIONS_KEPT: usize = 10_000;

/// What a policy did over the run (`summary.policy`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PolicyReport {
    pub name: String,
    pub period_us: f64,
    /// Calls, the first at time 0 before the run starts.
    pub calls: u64,
    /// Knob settings applied (each target counts once).
    pub changes: u64,
    /// The first [`DECISIONS_KEPT`] settings, in order.
    pub decisions: Vec<Decision>,
    /// The policy's own fields at the end, by name.
    pub fields: std::collections::BTreeMap<String, f64>,
}

/// One setting a policy made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub time_us: f64,
    pub knob: String,
    /// The queue, NAPI or thread; None: every one.
    pub target: Option<u32>,
    pub value: u64,
}

/// The sentence for a policy's mistake, naming the policy.
pub fn refusal(policy: &str, what: impl std::fmt::Display) -> String {
    crate::error::one_line(&format!("policy `{policy}` {what}"))
}

/// What a policy's period may be: 1 µs to 1 simulated hour, ns.
pub const PERIOD_NS_MIN: Nanos = 1_000;
pub const PERIOD_NS_MAX: Nanos = 3_600_000_000_000;

/// Check a period before the run starts.
pub fn check_period(policy: &str, period_ns: Nanos) -> Result<(), String> {
    if (PERIOD_NS_MIN..=PERIOD_NS_MAX).contains(&period_ns) {
        Ok(())
    } else {
        Err(refusal(
            policy,
            format_args!(
                "has a period of {period_ns} ns; its `period_us` must be between {} and {} µs",
                PERIOD_NS_MIN / 1_000,
                PERIOD_NS_MAX / 1_000
            ),
        ))
    }
}

impl Machine {
    /// Before the run starts: check that `p` can watch this machine, count
    /// from the start, and make its first call (time 0).
    pub(crate) fn policy_start(&mut self, k: &mut Kernel, p: &mut dyn Policy) -> Result<PolicyReport, Error> {
        let name = p.name();
        check_period(&name, p.period_ns()).map_err(Error::Policy)?;
        if self.kernels.len() > 1 || self.storage.is_some() || !matches!(k.rx_sink, RxSink::Sockets | RxSink::Stream) {
            return Err(Error::Policy(refusal(
                &name,
                "cannot watch this scenario: a policy watches a bare-metal server of sockets or of bulk streams (no \
                 `vm`, forwarding or storage workload)",
            )));
        }
        self.run.count_from_start();
        let mut report = PolicyReport { name, period_us: p.period_ns() as f64 / 1e3, ..Default::default() };
        self.policy_call(k, 0, p, &mut report)?;
        Ok(report)
    }

    /// One call at `now`: the sample, the policy's answer, the changes.
    pub(crate) fn policy_call(
        &mut self,
        k: &mut Kernel,
        now: Nanos,
        p: &mut dyn Policy,
        report: &mut PolicyReport,
    ) -> Result<(), Error> {
        let sample = self.policy_sample(k, now);
        let changes = p.observe(&sample).map_err(|e| Error::Policy(e.0))?;
        report.calls += 1;
        let name = std::mem::take(&mut report.name);
        let applied = self.policy_apply(k, &name, now, &changes, report);
        report.name = name;
        applied.map_err(Error::Policy)
    }

    /// The sample at `now` of the host kernel `k` (active).
    pub(crate) fn policy_sample(&mut self, k: &mut Kernel, now: Nanos) -> Sample {
        let none = crate::model::run::BeforeWindow::default();
        let before = self.run.before_window.as_deref().unwrap_or(&none);
        let c = &self.run.counters;
        let b = &before.counters;
        let steering = self.bulk.as_ref().and_then(|b| b.steering.as_ref());
        let cores = k
            .cores
            .iter_mut()
            .map(|core| {
                let backlog = steering
                    .and_then(|s| s.backlogs.get(core.id as usize))
                    .map_or(0, |b| (b.input.len() + b.process.len()) as u32);
                let ns = core.accounted(now);
                let carried = before.core_ns.get(core.id as usize).copied().unwrap_or_default();
                let at = |class: CpuClass| ns[class as usize] + carried[class as usize];
                CoreSample {
                    user_ns: at(CpuClass::User),
                    system_ns: at(CpuClass::System),
                    softirq_ns: at(CpuClass::Softirq),
                    irq_ns: at(CpuClass::Irq),
                    idle_ns: at(CpuClass::Idle),
                    backlog_packets: backlog,
                }
            })
            .collect();
        // As the knob holds it (an i64): None for a map with a core above 62.
        let rps_cpus = steering.and_then(|s| s.rps.cpus().iter().try_fold(0u64, |m, &c| (c < 63).then(|| m | 1u64 << c)));
        let rps_ipis = steering.map(|s| s.counters.ipis_since_start);
        Sample {
            time_ns: now,
            measuring: self.run.measuring,
            packets: b.packets_polled + c.packets_polled,
            packets_busy_polled: b.packets_busy_polled + c.packets_busy_polled,
            hard_irqs: b.hard_irqs + c.hard_irqs,
            softirq_rounds: b.softirq_rounds + c.softirq_rounds,
            watchdog_fires: b.watchdog_fires + c.watchdog_fires,
            requests_completed: b.completed + c.completed,
            latency_sum_ns: b.latency_sum_ns + c.latency_sum_ns,
            queues: self
                .nic
                .queues
                .iter()
                .map(|q| {
                    let cq = q.eitr.is_none().then_some(&q.rx);
                    QueueSample {
                        irqs: q.irqs,
                        packets: q.rx_packets,
                        bytes: q.rx_bytes,
                        tx_packets: q.tx_packets,
                        tx_bytes: q.tx_bytes,
                        ring_packets: q.ring.len() as u32,
                        drops: q.drops,
                        rx_usecs: cq.map(|m| m.usecs),
                        rx_frames: cq.map(|m| m.frames),
                        itr_interval_ns: q.eitr.as_ref().map(|v| v.interval_ns()),
                    }
                })
                .collect(),
            napis: k
                .napis
                .iter()
                .map(|n| NapiSample {
                    defer_hard_irqs: n.cfg.defer_hard_irqs,
                    gro_flush_timeout_ns: n.cfg.gro_flush_timeout,
                    irq_suspend_timeout_ns: n.cfg.irq_suspend_timeout,
                })
                .collect(),
            cores,
            busy_poll_usecs: k.epolls.iter().map(|e| e.busy_poll_usecs).collect(),
            threads: k
                .epolls
                .iter_mut()
                .map(|e| ThreadSample {
                    batches: e.batches.count,
                    batch_ns: e.batches.total_ns,
                    batch_max_ns: e.batches.take_longest(),
                })
                .collect(),
            rps_cpus,
            rps_ipis,
        }
    }

    /// Check every change of one call against the knob table and the
    /// machine, then apply them all (none if any is refused).
    pub(crate) fn policy_apply(
        &mut self,
        k: &mut Kernel,
        policy: &str,
        now: Nanos,
        changes: &[Change],
        report: &mut PolicyReport,
    ) -> Result<(), String> {
        for ch in changes {
            self.policy_check(k, policy, ch)?;
        }
        for ch in changes {
            let knob = SETTABLE.iter().find(|kn| kn.kernel_name == ch.knob).expect("checked").kernel_name;
            self.tr(now, TraceEvent::PolicySet { knob, target: ch.target, value: ch.value });
            let n = match ch.knob.as_str() {
                "defer-hard-irqs" | "gro-flush-timeout" | "irq-suspend-timeout" => k.napis.len(),
                "rx-usecs" | "rx-frames" | "InterruptThrottleRate" => self.nic.queues.len(),
                // One map for every queue (checked: no target).
                "rps_cpus" => 1,
                _ => k.epolls.len(),
            };
            let targets = match ch.target {
                Some(t) => t as usize..t as usize + 1,
                None => 0..n,
            };
            for i in targets {
                match ch.knob.as_str() {
                    "defer-hard-irqs" => k.napis[i].cfg.defer_hard_irqs = ch.value as u32,
                    "gro-flush-timeout" => k.napis[i].cfg.gro_flush_timeout = ch.value,
                    "irq-suspend-timeout" => k.napis[i].cfg.irq_suspend_timeout = ch.value,
                    "rx-usecs" => self.nic.queues[i].rx.usecs = ch.value as u32,
                    "rx-frames" => self.nic.queues[i].rx.frames = ch.value as u32,
                    "InterruptThrottleRate" => {
                        self.nic.queues[i].eitr.as_mut().expect("checked: an 82599").set_rate(ch.value as u32)
                    }
                    // store_rps_map: the new map serves the next packet.
                    "rps_cpus" => {
                        let st = self.bulk.as_mut().and_then(|b| b.steering.as_mut()).expect("checked: steering");
                        st.rps = RpsMap::from_mask(ch.value).expect("checked: not empty");
                    }
                    _ => k.epolls[i].busy_poll_usecs = ch.value as u32,
                }
                report.changes += 1;
            }
            if report.decisions.len() < DECISIONS_KEPT {
                report.decisions.push(Decision {
                    time_us: now as f64 / 1e3,
                    knob: ch.knob.clone(),
                    target: ch.target,
                    value: ch.value,
                });
            }
        }
        Ok(())
    }

    /// `rps_cpus`: where the run steers in software, one mask for every
    /// queue, of application cores, not empty.
    fn policy_check_rps(&self, k: &Kernel, policy: &str, ch: &Change) -> Result<(), String> {
        if self.bulk.as_ref().and_then(|b| b.steering.as_ref()).is_none() {
            return Err(refusal(
                policy,
                "set `rps_cpus`, but this scenario does not steer in software (steering.scheme is not rps, rfs or \
                 iaps): the simulator cannot switch RPS on during a run",
            ));
        }
        if ch.target.is_some() {
            return Err(refusal(
                policy,
                "set `rps_cpus` on one queue; the simulator's steering has one map for every queue (give it for \
                 every queue)",
            ));
        }
        let cores = k.cfg.cpu.app_cores;
        if ch.value == 0 || (cores < 64 && ch.value >> cores != 0) {
            return Err(refusal(
                policy,
                format_args!(
                    "set `rps_cpus` to {:#x}; a mask must name at least one of the {cores} application cores and no \
                     other (1 to {:#x}; 0 would turn RPS off, which the simulator cannot do during a run)",
                    ch.value,
                    if cores >= 63 { i64::MAX as u64 } else { (1u64 << cores) - 1 }
                ),
            ));
        }
        Ok(())
    }

    fn policy_check(&self, k: &Kernel, policy: &str, ch: &Change) -> Result<(), String> {
        let Some(kn) = SETTABLE.iter().find(|kn| kn.kernel_name == ch.knob) else {
            let names: Vec<&str> = SETTABLE.iter().map(|kn| kn.kernel_name).collect();
            return Err(refusal(
                policy,
                format_args!("set `{}`, which a policy cannot set during a run; it may set {}", ch.knob, names.join(", ")),
            ));
        };
        if !kn.sim.contains(ch.value) {
            return Err(refusal(policy, format_args!("set `{}`, which {}", kn.kernel_name, kn.out_of_range(ch.value))));
        }
        let (count, what) = match kn.part {
            knob::Part::Napi => (k.napis.len(), "NAPI instances"),
            knob::Part::Coalesce => {
                if self.nic.queues.iter().any(|q| q.eitr.is_some()) {
                    return Err(refusal(
                        policy,
                        format_args!(
                            "set `{}`, which this scenario's NIC (the 82599, whose vectors throttle by `itr.rate`) does not have",
                            kn.kernel_name
                        ),
                    ));
                }
                (self.nic.queues.len(), "queues")
            }
            knob::Part::Itr => {
                if self.nic.queues.iter().any(|q| q.eitr.is_none()) {
                    return Err(refusal(
                        policy,
                        format_args!(
                            "set `{}`, which this scenario's NIC (the ConnectX-4, whose completion queues moderate by \
                             `rx-usecs`) does not have",
                            kn.kernel_name
                        ),
                    ));
                }
                (self.nic.queues.len(), "queues")
            }
            knob::Part::Epoll => {
                if k.rx_sink == RxSink::Stream {
                    return Err(refusal(
                        policy,
                        format_args!("set `{}`, but this scenario's readers do not call epoll_wait", kn.kernel_name),
                    ));
                }
                (k.epolls.len(), "application threads")
            }
            knob::Part::Steering => return self.policy_check_rps(k, policy, ch),
        };
        match ch.target {
            Some(t) if t as usize >= count => Err(refusal(
                policy,
                format_args!("set `{}` on {t}, but there are {count} {what} (0 to {})", kn.kernel_name, count.saturating_sub(1)),
            )),
            _ => Ok(()),
        }
    }
}
