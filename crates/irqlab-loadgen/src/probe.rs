//! `irqlab-loadgen --probe`: what a few kernel operations cost on this
//! machine, so that the simulator's constants (fitted on the thesis's
//! server) can be rescaled to it by measurement rather than by guess.
//!
//! - `syscall_ns`: one `getppid` system call (entry and exit only).
//! - `tcp_message_ns`: one small message over a TCP loopback connection:
//!   `send` of 64 bytes (TCP transmit, loopback `netif_rx`, and, at the
//!   send's `local_bh_enable`, the peer's TCP receive) plus the peer's
//!   `recv` of it, in one thread, so no wake-up or switch is in it. The
//!   simulator's counterpart is one request's send, receive and read
//!   (`costs.send_cycles` + `rx_packet_cycles` + `recv_cycles` +
//!   `recv_cycles_per_request`).
//! - `switch_ns`: one wake-up and context switch between two threads on
//!   one CPU (a pipe ping-pong, halved), the simulator's
//!   `wakeup_cycles` + `context_switch_cycles` plus a `read` and a `write`.
//! - `remote_wake_ns`: the latency of a wake-up of a thread on another,
//!   halted CPU: from before the `write` on A to the woken `read`'s return
//!   on B (the IPI and the idle exit, `cpu.wakeup_latency_ns`, plus the
//!   wake-up, a switch, a `write` and a `read`). Each wake-up comes 50 µs
//!   after B went idle, so that B has halted (see `idle_wakes`); one
//!   sample per wake-up. Its quartiles are a quarter apart on a KVM guest
//!   (15–20 µs): the halted vCPU is woken by its host, whose own work
//!   sets how soon.
//! - `wake_sender_cpu_ns`: what the waker pays for that wake-up: the CPU
//!   time of the `write` less a system call (on bare metal an APIC write;
//!   in a VM the IPI's exit), one sample per wake-up.
//! - `busy_wake_cpu_ns`: what a wake-up from another CPU takes from a busy
//!   CPU: a thread spins on CPU B reading the clock while another thread
//!   on B is woken from CPU A through a pipe; the spinner's gaps (the time
//!   it did not run: the IPI and, in a VM, its exits, the wake-up, two
//!   switches, the `read`'s return and its next call) over each wake-up.
//!   The woken thread answers through memory, so no wake-up back is in
//!   it. One sample per wake-up.
//!   Its spread is wide on a quiet KVM host: a mode at 9.3 µs and a dearer
//!   one at 11–14 µs whose share moves between probes a minute apart
//!   (docs/calibration.md, "A repeatable probe"); what the host does in
//!   the dearer one the guest cannot see.
//! - `busy_wake_ns`: the latency of that wake-up, from before the `write`
//!   on A to the woken `read`'s return on B, one sample per wake-up.
//!
//! - `timer_sleep_cpu_ns`: the CPU time of a 20 µs `clock_nanosleep`: the
//!   system call, arming an hrtimer that becomes the CPU's next event (on
//!   bare metal a TSC-deadline write; in a VM an exit), the switch to idle,
//!   the expiry's interrupt and the switch back. The simulator's NAPI
//!   watchdog (`timer_irq_cycles`) is the same sequence less the switches.
//!   The thread's own clock, not `/proc/stat`'s busy columns: those are
//!   samples of the scheduler tick, which cannot land inside a VM exit
//!   (on this project's 2-vCPU KVM guest they saw 3.5–5 µs of a 24–25 µs
//!   sleep cycle, with the timer's slack at 1 ns as at its default). Its
//!   samples have a long upper tail there (15–16 µs, up to 20 µs in a
//!   quarter of them in some probes): the two exits of arming and taking
//!   the timer cost what the host makes them.
//!
//! - `timer_wake_ns`: how late a thread's timed wait ends on an otherwise
//!   idle CPU: the load generator's own wait for an open loop's next send
//!   (`Epoll::wait_until`, an `epoll_pwait2` with a nanosecond timeout, the
//!   timer's slack at 1 ns as the load generator sets it), 200 µs after the
//!   last (the spacing of the testbed's low load), from the deadline to the
//!   wait's return: the hrtimer's expiry on a halted CPU (in a VM, the
//!   host's timer and the vCPU's return from HLT), the exit from idle, the
//!   wake-up and the switch. One sample per wake-up. The load generator
//!   reports the same lateness for its sends (`own_lag_us`), and the
//!   simulator's client takes it as `load.client_timer_lag_ns`.
//! - `idle_wake_cpu_ns`: what a wake-up from idle costs the CPU it wakes,
//!   as `/proc/stat` counts it: a thread on CPU B sleeps in `read` on a
//!   pipe and is woken from CPU A every 200 µs (the spacing of the veth
//!   testbed's low load, 5,000 requests a second), so B goes idle between
//!   wake-ups; B's busy time per wake-up (the elapsed time less
//!   `/proc/stat`'s idle, iowait and steal, as the testbed counts). The idle exit
//!   (`tick_nohz_idle_exit`, the interrupt that ended the idle period, the
//!   refill of what the idle period displaced), the wake-up's completion,
//!   two switches and the `read`. A longer idle period costs more where
//!   the host runs other work on a halted vCPU's core; only this spacing
//!   is measured. With it, `idle_wake_spacing_ns` (the round's actual
//!   time per wake-up: 200 µs and what a busy machine adds) and
//!   `idle_wakeups`: a B that other work keeps from idling is busy the
//!   whole spacing, so the figure is a cost only where it is well below it.
//! - `host_preempt_gaps_ns` and `host_preempt_per_s`: the host taking a
//!   busy vCPU's CPU. A thread spins on each CPU at once for
//!   [`PREEMPT_SPIN`] reading the clock; every step of 200 µs or more is
//!   time its CPU ran something else: longer than any interrupt the guest
//!   takes (a tick is 5–20 µs here), so the host's other work (or, on a
//!   machine that is not quiet, another task's turn). Each such gap's
//!   length, and how many came per CPU-second. On this project's 2-vCPU
//!   KVM guest, 2–4 a second of 0.2–4.4 ms, which `/proc/stat`'s steal
//!   mostly does not count; the simulator's `cpu.host_preempt_per_s` and
//!   `cpu.host_preempt_ns`.
//! - `halted_late_ns` and `halted_late_per_s`: the host keeping a *halted*
//!   vCPU from waking. A thread on each CPU at once makes timed waits 200 µs
//!   apart (as `timer_wake_ns`, nothing else running) for [`HALTED_WAIT`];
//!   every wait that ends [`PREEMPT_GAP_NS`] or more past its deadline is a
//!   wake-up the host held back: its lateness, and how many came per second
//!   of waiting (the vCPU's halted time). A halted vCPU gives its physical
//!   CPU back to the host, which runs other work there and returns it only
//!   later: on the 2-vCPU KVM guest of docs/calibration.md 2–28 such
//!   wake-ups a second of waiting, from hour to hour, mostly of 0.2–1.2 ms,
//!   where a spinning vCPU is taken 2.5–4 times a second. The trimmed means above leave these out; the
//!   simulator's `cpu.host_halted_late_per_s` and `cpu.host_halted_late_ns`
//!   put them back.
//! - `l2_line_ns`: a dependent load that misses L1 and hits L2 (a pointer
//!   chase over 256 KiB in random line order, warm): the disruption
//!   model's refill per line (`microarch.l2_latency_cycles`).
//!
//! On a machine with one CPU the cross-CPU figures are not measured (0).
//!
//! Every figure is the trimmed mean (10 % off each end) of many short
//! samples (`spread.rs` says why), each sample a mean over a batch short enough that a preemption of
//! the vCPU by its host spoils only the samples it lands in; `spread`
//! keeps each figure's quartiles and sample count. `idle_wake_cpu_ns` is
//! the exception: `/proc/stat` counts in 10 ms, so the figure is the whole
//! round's (±10 ms over its wake-ups) and its spread that of sub-rounds of
//! 1,000 wake-ups, which the file's 10 ms alone spreads by up to ±10 µs.

mod spread;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

pub use spread::{quantile, Spread};

#[derive(Debug, Serialize)]
pub struct Probe {
    pub syscall_ns: f64,
    pub tcp_message_ns: f64,
    pub switch_ns: f64,
    pub remote_wake_ns: f64,
    pub busy_wake_cpu_ns: f64,
    pub busy_wake_ns: f64,
    pub wake_sender_cpu_ns: f64,
    pub timer_sleep_cpu_ns: f64,
    pub timer_wake_ns: f64,
    pub idle_wake_cpu_ns: f64,
    /// That round's time from one wake-up to the next, ns: the most the
    /// woken CPU can be busy per wake-up (all of it when other work keeps
    /// the CPU from idling), up to `/proc/stat`'s two 10 ms ticks over
    /// `idle_wakeups`.
    pub idle_wake_spacing_ns: f64,
    /// Wake-ups that round made (fewer than 6,000 when it hit its 3 s bound).
    pub idle_wakeups: u32,
    pub l2_line_ns: f64,
    /// Every gap of [`PREEMPT_GAP_NS`] or more the spinners saw, ns.
    pub host_preempt_gaps_ns: Vec<u64>,
    /// Those gaps per second of one CPU's time.
    pub host_preempt_per_s: f64,
    /// Every timed wait's lateness of [`PREEMPT_GAP_NS`] or more on a
    /// halted CPU, ns, in increasing order.
    pub halted_late_ns: Vec<u64>,
    /// Those per second of the waits' time.
    pub halted_late_per_s: f64,
    /// Samples taken of each figure on one CPU; the wake-ups across CPUs
    /// take five times as many, one per wake-up (and `idle_wake_cpu_ns`
    /// sub-rounds, see the module). `spread` has each figure's count.
    pub samples: u32,
    /// Each figure's samples: trimmed mean, quartiles, median and count.
    pub spread: BTreeMap<&'static str, Spread>,
}

/// How long each CPU's spinner looks for the host's preemptions.
pub const PREEMPT_SPIN: Duration = Duration::from_secs(3);

/// How long each CPU's thread makes timed waits to catch the host holding
/// a halted vCPU back.
pub const HALTED_WAIT: Duration = Duration::from_secs(2);

/// A step of the clock this long is a preemption (see the module).
pub const PREEMPT_GAP_NS: u64 = 200_000;

/// Samples of each figure per `rounds` of [`probe`].
pub const SAMPLES_PER_ROUND: u32 = 12;

/// The spinner's view of time it did not run: a step of the clock longer
/// than this between two of its reads (a read takes tens of ns; an
/// interrupt, a switch or an exit takes microseconds).
const GAP_NS: u64 = 500;

/// Longer gaps are not counted: a wake-up's loss is microseconds, and a
/// gap of a fifth of a millisecond is another task's time slice or the
/// host running something else on the vCPU's core, which would otherwise
/// swamp both the rate without wake-ups and the batches with them on a
/// machine where other work runs.
const GAP_MAX_NS: u64 = 200_000;

fn syscall_sample(n: u32) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        // SAFETY: getppid has no arguments and cannot fail.
        unsafe { libc::syscall(libc::SYS_getppid) };
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

fn tcp_sample(a: &mut TcpStream, b: &mut TcpStream, n: u32) -> std::io::Result<f64> {
    let msg = [b'x'; 64];
    let mut buf = [0u8; 64];
    let t = Instant::now();
    for _ in 0..n {
        a.write_all(&msg)?;
        b.read_exact(&mut buf)?;
        b.write_all(&msg)?;
        a.read_exact(&mut buf)?;
    }
    Ok(t.elapsed().as_nanos() as f64 / (2 * n) as f64)
}

fn pin_to(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET stays in bounds for cpu < 1024.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn current_cpu() -> usize {
    // SAFETY: sched_getcpu has no arguments.
    let c = unsafe { libc::sched_getcpu() };
    c.max(0) as usize
}

/// The CPUs this process may run on, from its affinity when the probe starts.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return vec![current_cpu()];
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

/// `batches` × `per_batch` round trips through two pipes between a thread
/// on `here` and an echoing thread on `there`: the mean one-way hop of each
/// batch, ns.
fn ping_pong(batches: u32, per_batch: u32, here: usize, there: usize) -> std::io::Result<Vec<f64>> {
    let (mut a_rd, mut b_wr) = pipe()?;
    let (mut b_rd, mut a_wr) = pipe()?;
    let n = batches * per_batch;
    let peer = std::thread::spawn(move || -> std::io::Result<()> {
        pin_to(there);
        let mut buf = [0u8; 1];
        for _ in 0..n {
            b_rd.read_exact(&mut buf)?;
            b_wr.write_all(&buf)?;
        }
        Ok(())
    });
    pin_to(here);
    let mut buf = [0u8; 1];
    let mut hop_ns = Vec::new();
    for _ in 0..batches {
        let t = Instant::now();
        for _ in 0..per_batch {
            a_wr.write_all(&buf)?;
            a_rd.read_exact(&mut buf)?;
        }
        hop_ns.push(t.elapsed().as_nanos() as f64 / (2 * per_batch) as f64);
    }
    peer.join().map_err(|_| std::io::Error::other("the probe's peer thread panicked"))??;
    Ok(hop_ns)
}

fn thread_cpu_ns() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec for clock_gettime to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}

/// The CPU time of one 20 µs `clock_nanosleep`, ns, over `n` of them.
fn timer_sample(n: u32) -> f64 {
    let d = libc::timespec { tv_sec: 0, tv_nsec: 20_000 };
    let t = thread_cpu_ns();
    for _ in 0..n {
        // SAFETY: d is a valid relative timespec; no remainder is asked for.
        unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &d, std::ptr::null_mut()) };
    }
    (thread_cpu_ns() - t) / n as f64
}

fn spin_for(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// `n` timed waits of a thread on `there` (nothing else runs there), each
/// ending 200 µs after it began: how late each wait returned past its
/// deadline, ns. Empty where `epoll_pwait2` is missing (Linux before 5.11;
/// the load generator then sends by a timerfd).
fn timer_wakes(n: u32, there: usize) -> std::io::Result<Vec<f64>> {
    std::thread::spawn(move || -> std::io::Result<Vec<f64>> {
        pin_to(there);
        crate::sys::set_timer_slack_ns(1);
        let mut ep = crate::sys::Epoll::new(1)?;
        if !ep.has_ns_timeout() {
            return Ok(Vec::new());
        }
        let mut events = Vec::new();
        let mut out = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let deadline = crate::sys::now_ns() + 200_000;
            ep.wait_until(&mut events, deadline)?;
            out.push(crate::sys::now_ns().saturating_sub(deadline) as f64);
        }
        Ok(out)
    })
    .join()
    .map_err(|_| std::io::Error::other("the probe's timer thread panicked"))?
}

/// A thread on each of `cpus` at once making timed waits 200 µs apart for
/// `wait`: every lateness of [`PREEMPT_GAP_NS`] or more over all of them,
/// ns, in order, and the seconds they spent waiting in all. Empty where
/// `epoll_pwait2` is missing.
fn halted_lates(cpus: &[usize], wait: Duration) -> std::io::Result<(Vec<u64>, f64)> {
    let threads: Vec<_> = cpus
        .iter()
        .map(|&cpu| {
            std::thread::spawn(move || -> std::io::Result<(Vec<u64>, u64)> {
                pin_to(cpu);
                crate::sys::set_timer_slack_ns(1);
                let mut ep = crate::sys::Epoll::new(1)?;
                if !ep.has_ns_timeout() {
                    return Ok((Vec::new(), 0));
                }
                let (mut events, mut late, mut waited_ns) = (Vec::new(), Vec::new(), 0u64);
                let end = crate::sys::now_ns() + wait.as_nanos() as u64;
                loop {
                    let start = crate::sys::now_ns();
                    if start >= end {
                        break;
                    }
                    let deadline = start + 200_000;
                    ep.wait_until(&mut events, deadline)?;
                    let now = crate::sys::now_ns();
                    waited_ns += now - start;
                    if now.saturating_sub(deadline) >= PREEMPT_GAP_NS {
                        late.push(now - deadline);
                    }
                }
                Ok((late, waited_ns))
            })
        })
        .collect();
    let (mut all, mut waited_ns) = (Vec::new(), 0u64);
    for t in threads {
        let (late, ns) = t.join().map_err(|_| std::io::Error::other("the probe's timer thread panicked"))??;
        all.extend(late);
        waited_ns += ns;
    }
    all.sort_unstable();
    Ok((all, waited_ns as f64 / 1e9))
}

/// A thread on `there` that sleeps in `read` on a pipe and, each time it
/// is woken, stores when its `read` returned and counts the wake-up; it
/// answers through memory, not with a wake-up, so the waker spins and the
/// answer costs neither CPU an IPI. Ends when the pipe closes.
struct Sleeper {
    wr: std::fs::File,
    epoch: Instant,
    woken_at_ns: Arc<AtomicU64>,
    woken: Arc<AtomicU32>,
    thread: std::thread::JoinHandle<()>,
}

impl Sleeper {
    fn start(there: usize) -> std::io::Result<Sleeper> {
        let (mut rd, wr) = pipe()?;
        let epoch = Instant::now();
        let woken_at_ns = Arc::new(AtomicU64::new(0));
        let woken = Arc::new(AtomicU32::new(0));
        let thread = {
            let (at, woken) = (woken_at_ns.clone(), woken.clone());
            std::thread::spawn(move || {
                pin_to(there);
                let mut buf = [0u8; 1];
                while rd.read_exact(&mut buf).is_ok() {
                    at.store(epoch.elapsed().as_nanos() as u64, Ordering::Relaxed);
                    woken.fetch_add(1, Ordering::Release);
                }
            })
        };
        Ok(Sleeper { wr, epoch, woken_at_ns, woken, thread })
    }

    /// Wake it once; the latency from before the `write` to the woken
    /// `read`'s return, and the `write`'s CPU time, ns. Bounded: an answer
    /// not seen within a second is an error.
    fn wake(&mut self) -> std::io::Result<(f64, f64)> {
        let before = self.woken.load(Ordering::Acquire);
        let c = thread_cpu_ns();
        let sent = self.epoch.elapsed().as_nanos() as u64;
        self.wr.write_all(&[1])?;
        let write_cpu = thread_cpu_ns() - c;
        let t = Instant::now();
        while self.woken.load(Ordering::Acquire) == before {
            if t.elapsed() > Duration::from_secs(1) {
                return Err(std::io::Error::other("a woken thread did not run within a second"));
            }
            std::hint::spin_loop();
        }
        let at = self.woken_at_ns.load(Ordering::Relaxed);
        Ok((at.saturating_sub(sent) as f64, write_cpu))
    }

    fn stop(self) -> std::io::Result<()> {
        drop(self.wr);
        self.thread.join().map_err(|_| std::io::Error::other("the probe's sleeper thread panicked"))
    }
}

/// Wake-ups of a thread on an idle `there` from `here`, each after `there`
/// has been idle for `idle`: per wake-up, the latency (the `write`, the IPI
/// and the exit from idle, the wake-up, a switch and the `read`'s return)
/// and the waker's CPU time for the `write`.
///
/// Why spaced, and why the answer comes through memory: a CPU that has
/// just gone idle polls for a moment before it halts (the idle loop's
/// `TIF_POLLING_NRFLAG`, kernel/sched/idle.c), and a wake-up that finds it
/// polling sets a flag instead of sending an IPI. A pipe ping-pong races
/// each wake-up against the other CPU's way into halt, and its figures
/// were a mixture of the two paths whose proportion moved from run to run
/// (on this project's KVM guest, 1.3 µs against 8 µs of the waker's CPU).
/// Here every wake-up finds the CPU halted, as the testbed's server core
/// is when a request wakes it.
fn idle_wakes(n: u32, here: usize, there: usize, idle: Duration) -> std::io::Result<(Vec<f64>, Vec<f64>)> {
    pin_to(here);
    let mut sleeper = Sleeper::start(there)?;
    std::thread::sleep(Duration::from_millis(5));
    let (mut latency, mut write_cpu) = (Vec::new(), Vec::new());
    let mut result = Ok(());
    for _ in 0..n {
        spin_for(idle);
        match sleeper.wake() {
            Ok((l, c)) => {
                latency.push(l);
                write_cpu.push(c);
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    sleeper.stop()?;
    result.map(|_| (latency, write_cpu))
}

/// What a busy `there` loses to wake-ups of a thread on it from `here`,
/// one value per wake-up.
struct BusyWake {
    /// The spinner's gaps over the wake-up, ns; wake-ups that found the
    /// spinner off its CPU (another task's turn) are left out.
    lost_ns: Vec<f64>,
    /// The wake-ups' latencies, ns.
    latency_ns: Vec<f64>,
}

/// A thread spins on `there` reading the clock, and a [`Sleeper`] on the
/// same CPU is woken from `here` `n` times: what the spinner did not run
/// for (the IPI and its exits, the wake-up, two switches, the `read`'s
/// return and its next call) over each wake-up. The sleeper answers
/// through memory, so no wake-up of `here` is in it (the ping-pong this
/// replaces had one, and subtracting a separately measured waker's cost
/// from it added two figures' noise). One sample per wake-up, each window
/// tens of microseconds: the tick lands in one in a hundred, which the
/// trimmed mean drops. A wake-up that finds another task on `there` instead of
/// the spinner costs the spinner nothing it can see: such wake-ups (a
/// window without gaps) are left out rather than counted as free.
fn busy_wake(n: u32, here: usize, there: usize) -> std::io::Result<BusyWake> {
    let stop = Arc::new(AtomicBool::new(false));
    let gaps = Arc::new(AtomicU64::new(0));
    let spinner = {
        let (stop, gaps) = (stop.clone(), gaps.clone());
        std::thread::spawn(move || {
            pin_to(there);
            let t0 = Instant::now();
            let (mut last, mut total) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                let now = t0.elapsed().as_nanos() as u64;
                if now - last > GAP_NS && now - last < GAP_MAX_NS {
                    total += now - last;
                    gaps.store(total, Ordering::Release);
                }
                last = now;
            }
        })
    };
    pin_to(here);
    let run = || -> std::io::Result<BusyWake> {
        let mut sleeper = Sleeper::start(there)?;
        std::thread::sleep(Duration::from_millis(20));
        let mut out = BusyWake { lost_ns: Vec::new(), latency_ns: Vec::new() };
        let mut result = Ok(());
        for _ in 0..n {
            let g = gaps.load(Ordering::Acquire);
            match sleeper.wake() {
                Ok((l, _)) => out.latency_ns.push(l),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
            // The sleeper's way back into `read` and the switch to the
            // spinner, which ends the gap, before it is read.
            spin_for(Duration::from_micros(30));
            let lost = gaps.load(Ordering::Acquire) - g;
            if lost > 0 {
                out.lost_ns.push(lost as f64);
            }
        }
        sleeper.stop()?;
        result.map(|_| out)
    };
    let out = run();
    stop.store(true, Ordering::Relaxed);
    spinner.join().map_err(|_| std::io::Error::other("the probe's spinner thread panicked"))?;
    out
}

/// A thread spinning on each of `cpus` at once for `spin`: every step of
/// its clock of [`PREEMPT_GAP_NS`] or more, ns, over all of them.
fn host_preempts(cpus: &[usize], spin: Duration) -> std::io::Result<Vec<u64>> {
    let threads: Vec<_> = cpus
        .iter()
        .map(|&cpu| {
            std::thread::spawn(move || {
                pin_to(cpu);
                let t0 = Instant::now();
                let (mut last, mut gaps) = (0u64, Vec::new());
                let end = spin.as_nanos() as u64;
                while last < end {
                    let now = t0.elapsed().as_nanos() as u64;
                    if now - last >= PREEMPT_GAP_NS {
                        gaps.push(now - last);
                    }
                    last = now;
                }
                gaps
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in threads {
        all.extend(t.join().map_err(|_| std::io::Error::other("the probe's spinner thread panicked"))?);
    }
    all.sort_unstable();
    Ok(all)
}

/// `/proc/stat`'s idle, iowait and steal time of `cpu`, ns: what `irqlab
/// testbed run` counts as not busy. Under NO_HZ the idle time is the idle
/// loop's own clock and steal the hypervisor's count, both exact but for
/// the 10 ms the file prints; the busy columns are samples of the
/// scheduler tick, too few over a second of short wake-ups to use.
fn proc_stat_not_busy_ns(cpu: usize) -> std::io::Result<f64> {
    let text = std::fs::read_to_string("/proc/stat")?;
    let prefix = format!("cpu{cpu} ");
    let line = text
        .lines()
        .find(|l| l.starts_with(&prefix))
        .ok_or_else(|| std::io::Error::other(format!("/proc/stat has no line for cpu{cpu}")))?;
    let f: Vec<f64> = line.split_whitespace().skip(1).take(8).map(|x| x.parse().unwrap_or(0.0)).collect();
    let col = |i: usize| f.get(i).copied().unwrap_or(0.0);
    // SAFETY: sysconf has no memory arguments.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Ok((col(3) + col(4) + col(7)) * 1e9 / hz)
}

/// What [`idle_wake_round`] measured.
struct IdleWake {
    /// The busy time per wake-up over the whole round, ns.
    cpu_ns: f64,
    /// The time per wake-up over the whole round, ns.
    spacing_ns: f64,
    wakeups: u32,
    /// The busy time per wake-up of each sub-round, ns.
    sub_cpu_ns: Vec<f64>,
}

/// The busy time of `there` per wake-up from idle, ns: `n` wake-ups of a
/// thread sleeping on `there`, `gap` apart, from `here`; the elapsed time
/// less `/proc/stat`'s idle, iowait and steal, as `irqlab testbed run`
/// reads a core's CPU, over the round and over each `sub` wake-ups. The
/// file counts in 10 ms, so `n` is large: 6,000 wake-ups give ±3 µs.
/// Bounded: at most 3 s, and a wake-up not answered within a second is an
/// error.
fn idle_wake_round(n: u32, sub: u32, here: usize, there: usize, gap: Duration) -> std::io::Result<IdleWake> {
    let (mut rd, mut wr) = pipe()?;
    let woken = Arc::new(AtomicU32::new(0));
    let sleeper = {
        let woken = woken.clone();
        std::thread::spawn(move || -> std::io::Result<()> {
            pin_to(there);
            let mut buf = [0u8; 1];
            for _ in 0..n {
                rd.read_exact(&mut buf)?;
                woken.fetch_add(1, Ordering::Release);
            }
            Ok(())
        })
    };
    pin_to(here);
    std::thread::sleep(Duration::from_millis(20));
    let not_busy0 = proc_stat_not_busy_ns(there)?;
    let t0 = Instant::now();
    let mut result = Ok(());
    let mut done = 0u32;
    let mut sub_cpu_ns = Vec::new();
    let (mut sub_not_busy, mut sub_t, mut sub_done) = (not_busy0, Instant::now(), 0u32);
    for k in 0..n {
        // Bounded in time too: a busy machine stretches every wake-up.
        if t0.elapsed() > Duration::from_secs(3) {
            break;
        }
        let sent = Instant::now();
        if let Err(e) = wr.write_all(&[1]) {
            result = Err(e);
            break;
        }
        while woken.load(Ordering::Acquire) <= k {
            if sent.elapsed() > Duration::from_secs(1) {
                result = Err(std::io::Error::other("a woken thread did not run within a second"));
                break;
            }
            std::hint::spin_loop();
        }
        if result.is_err() {
            break;
        }
        done = k + 1;
        spin_for(gap.saturating_sub(sent.elapsed()));
        if done - sub_done == sub {
            let not_busy = proc_stat_not_busy_ns(there)?;
            let busy = sub_t.elapsed().as_nanos() as f64 - (not_busy - sub_not_busy);
            sub_cpu_ns.push((busy / sub as f64).max(0.0));
            (sub_not_busy, sub_t, sub_done) = (not_busy, Instant::now(), done);
        }
    }
    let elapsed = t0.elapsed().as_nanos() as f64;
    let not_busy = proc_stat_not_busy_ns(there)? - not_busy0;
    // Closing the pipe ends a sleeper that was left waiting (its read
    // fails then, which is no error of the measurement).
    drop(wr);
    sleeper.join().map_err(|_| std::io::Error::other("the probe's sleeper thread panicked"))?.ok();
    result?;
    let per = |ns: f64| ns / done.max(1) as f64;
    Ok(IdleWake { cpu_ns: per(elapsed - not_busy).max(0.0), spacing_ns: per(elapsed), wakeups: done, sub_cpu_ns })
}

/// One dependent load that hits L2, ns, per pass over the chain: a warm
/// pointer chase over 256 KiB (beyond any L1d, within any L2 since 2008)
/// in random line order.
fn l2_line_samples(passes: u32) -> Vec<f64> {
    const LINES: usize = 256 * 1024 / 64;
    const STRIDE: usize = 64 / std::mem::size_of::<usize>();
    // A random cyclic order of the lines (a fixed LCG: no seed to manage).
    let mut order: Vec<usize> = (0..LINES).collect();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in (1..LINES).rev() {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        order.swap(i, (x >> 33) as usize % (i + 1));
    }
    let mut next = vec![0usize; LINES * STRIDE];
    for i in 0..LINES {
        next[order[i] * STRIDE] = order[(i + 1) % LINES] * STRIDE;
    }
    let mut p = order[0] * STRIDE;
    // Two passes to warm the chain, then the samples.
    for _ in 0..2 * LINES {
        p = next[p];
    }
    let mut out = Vec::new();
    for _ in 0..passes {
        let t = Instant::now();
        for _ in 0..LINES {
            p = next[p];
        }
        out.push(t.elapsed().as_nanos() as f64 / LINES as f64);
    }
    std::hint::black_box(p);
    out
}

fn pipe() -> std::io::Result<(std::fs::File, std::fs::File)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned here only.
    Ok(unsafe { (std::fs::File::from_raw_fd(fds[0]), std::fs::File::from_raw_fd(fds[1])) })
}

/// Measure: [`SAMPLES_PER_ROUND`] × `rounds` samples of each figure
/// (bounded: a few seconds in all at `rounds` 5).
pub fn probe(rounds: u32) -> std::io::Result<Probe> {
    let samples = SAMPLES_PER_ROUND * rounds.max(1);
    let mut spread: BTreeMap<&'static str, Spread> = BTreeMap::new();
    let mut keep = |name: &'static str, s: Spread| -> f64 {
        spread.insert(name, s);
        s.trimmed
    };
    let mut idle_spread = None;
    let syscall = Spread::of(&(0..samples).map(|_| syscall_sample(2_000)).collect::<Vec<_>>());
    let syscall_ns = keep("syscall_ns", syscall);
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let mut a = TcpStream::connect(listener.local_addr()?)?;
    let (mut b, _) = listener.accept()?;
    a.set_nodelay(true)?;
    b.set_nodelay(true)?;
    tcp_sample(&mut a, &mut b, 2_000)?; // warm the path
    let tcp = (0..samples).map(|_| tcp_sample(&mut a, &mut b, 250)).collect::<std::io::Result<Vec<_>>>()?;
    let tcp_message_ns = keep("tcp_message_ns", Spread::of(&tcp));
    let timer_sleep_cpu_ns = keep("timer_sleep_cpu_ns", Spread::of(&(0..samples).map(|_| timer_sample(20)).collect::<Vec<_>>()));
    let cpus = allowed_cpus();
    let here = cpus[0];
    let timer = timer_wakes(5 * samples, *cpus.get(1).unwrap_or(&here))?;
    let timer_wake_ns = if timer.is_empty() { 0.0 } else { keep("timer_wake_ns", Spread::of(&timer)) };
    let switch_ns = keep("switch_ns", Spread::of(&ping_pong(samples, 250, here, here)?));
    let (mut remote_wake_ns, mut busy_wake_cpu_ns, mut busy_wake_ns, mut wake_sender_cpu_ns) = (0.0, 0.0, 0.0, 0.0);
    let mut idle = IdleWake { cpu_ns: 0.0, spacing_ns: 0.0, wakeups: 0, sub_cpu_ns: Vec::new() };
    if let Some(&there) = cpus.get(1) {
        let (latency, sender) = idle_wakes(5 * samples, here, there, Duration::from_micros(50))?;
        remote_wake_ns = keep("remote_wake_ns", Spread::of(&latency));
        // Less the system call the write is (and the clock read's own part).
        wake_sender_cpu_ns = keep("wake_sender_cpu_ns", Spread::of(&sender).shifted(-syscall_ns, 0.0));
        let busy = busy_wake(5 * samples, here, there)?;
        busy_wake_cpu_ns = keep("busy_wake_cpu_ns", Spread::of(&busy.lost_ns));
        busy_wake_ns = keep("busy_wake_ns", Spread::of(&busy.latency_ns));
        idle = idle_wake_round(6_000, 1_000, here, there, Duration::from_micros(200))?;
        // The figure is the whole round's; the spread, its sub-rounds'.
        idle_spread = Some(Spread::of(&idle.sub_cpu_ns));
    }
    let l2_line_ns = keep("l2_line_ns", Spread::of(&l2_line_samples(samples)));
    let host_preempt_gaps_ns = host_preempts(&cpus, PREEMPT_SPIN)?;
    let host_preempt_per_s = host_preempt_gaps_ns.len() as f64 / (PREEMPT_SPIN.as_secs_f64() * cpus.len() as f64);
    let (halted_late_ns, halted_s) = halted_lates(&cpus, HALTED_WAIT)?;
    let halted_late_per_s = if halted_s > 0.0 { halted_late_ns.len() as f64 / halted_s } else { 0.0 };
    if let Some(s) = idle_spread {
        spread.insert("idle_wake_cpu_ns", s);
    }
    // Back to every CPU it had.
    // SAFETY: as in pin_to.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in &cpus {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
    Ok(Probe {
        syscall_ns,
        tcp_message_ns,
        switch_ns,
        remote_wake_ns,
        busy_wake_cpu_ns,
        busy_wake_ns,
        wake_sender_cpu_ns,
        timer_sleep_cpu_ns,
        timer_wake_ns,
        idle_wake_cpu_ns: idle.cpu_ns,
        idle_wake_spacing_ns: idle.spacing_ns,
        idle_wakeups: idle.wakeups,
        l2_line_ns,
        host_preempt_gaps_ns,
        host_preempt_per_s,
        halted_late_ns,
        halted_late_per_s,
        samples,
        spread,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_figure_but_the_idle_wake_up_is_the_trimmed_mean_of_its_samples() {
        let p = probe(1).expect("the probe runs");
        assert_eq!(p.samples, SAMPLES_PER_ROUND);
        for (name, value) in [
            ("syscall_ns", p.syscall_ns),
            ("tcp_message_ns", p.tcp_message_ns),
            ("switch_ns", p.switch_ns),
            ("timer_sleep_cpu_ns", p.timer_sleep_cpu_ns),
            ("l2_line_ns", p.l2_line_ns),
        ] {
            let s = p.spread[name];
            assert_eq!(s.trimmed, value, "{name}");
            assert!(s.q1 <= s.median && s.median <= s.q3 && s.samples == SAMPLES_PER_ROUND, "{name}: {s:?}");
        }
        // The host's preemptions: every gap at least the threshold, in
        // order, and the rate their count over the CPUs' spinning time.
        let g = &p.host_preempt_gaps_ns;
        assert!(g.iter().all(|&x| x >= PREEMPT_GAP_NS) && g.windows(2).all(|w| w[0] <= w[1]), "{g:?}");
        let cpu_s = PREEMPT_SPIN.as_secs_f64() * allowed_cpus().len() as f64;
        assert!((p.host_preempt_per_s - g.len() as f64 / cpu_s).abs() < 1e-9);
        // The held-back wake-ups: every one at least the threshold, in
        // order, and a rate that cannot exceed one per wait.
        let h = &p.halted_late_ns;
        assert!(h.iter().all(|&x| x >= PREEMPT_GAP_NS) && h.windows(2).all(|w| w[0] <= w[1]), "{h:?}");
        assert!(p.halted_late_per_s >= 0.0 && p.halted_late_per_s <= 1e9 / 200_000.0, "{}", p.halted_late_per_s);
        assert_eq!(p.halted_late_per_s == 0.0, h.is_empty());
        // A timed wait never ends before its deadline.
        let s = p.spread["timer_wake_ns"];
        assert!(s.trimmed == p.timer_wake_ns && s.q1 >= 0.0 && s.samples == 5 * SAMPLES_PER_ROUND, "{s:?}");
        if allowed_cpus().len() >= 2 {
            let s = p.spread["busy_wake_cpu_ns"];
            assert_eq!(s.trimmed, p.busy_wake_cpu_ns);
            assert!(p.spread.contains_key("idle_wake_cpu_ns") && p.idle_wakeups > 0);
        }
    }
}
