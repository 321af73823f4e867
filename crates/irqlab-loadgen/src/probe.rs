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
//! - `remote_wake_ns`: the same ping-pong between two CPUs, halved: a
//!   thread woken on a CPU that went idle meanwhile (the IPI and the idle
//!   exit, `cpu.wakeup_latency_ns`, plus a `read` and a `write`).
//! - `busy_wake_cpu_ns`: what a wake-up from another CPU takes from a busy
//!   CPU: a thread spins on CPU B while another thread on B is woken from
//!   CPU A through a pipe and answers; the spinner's lost iterations over
//!   the wake-ups. The IPI, the wake-up, two switches and the woken
//!   thread's `read` and `write`.
//! - `busy_wake_ns`: the latency of that wake-up, from the write on A to
//!   the woken thread's answer: the round trip less the return hop, a
//!   wake-up of the idle A (`remote_wake_ns`).
//!
//! - `wake_sender_cpu_ns`: what the waker pays for a wake-up on another
//!   CPU: the CPU time of the `write` that wakes a thread sleeping on an
//!   idle CPU, less a system call (on bare metal an APIC write; in a VM the
//!   IPI's exit).
//! - `timer_sleep_cpu_ns`: the CPU time of a 20 µs `clock_nanosleep`: the
//!   system call, arming an hrtimer that becomes the CPU's next event (on
//!   bare metal a TSC-deadline write; in a VM an exit), the switch to idle,
//!   the expiry's interrupt and the switch back. The simulator's NAPI
//!   watchdog (`timer_irq_cycles`) is the same sequence less the switches.
//!   The thread's own clock, not `/proc/stat`'s busy columns: those are
//!   samples of the scheduler tick, which cannot land inside a VM exit
//!   (on this project's 2-vCPU KVM guest they saw 3.5–5 µs of a 24–25 µs
//!   sleep cycle, with the timer's slack at 1 ns as at its default).
//!
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
//! - `l2_line_ns`: a dependent load that misses L1 and hits L2 (a pointer
//!   chase over 256 KiB in random line order, warm): the disruption
//!   model's refill per line (`microarch.l2_latency_cycles`).
//!
//! On a machine with one CPU the cross-CPU figures are not measured (0).
//!
//! Each figure is the smallest mean of several rounds (interference only
//! adds time), except `busy_wake_cpu_ns`, a difference of two spinning
//! rates whose noise goes either way: the median of the rounds.
//! `idle_wake_cpu_ns` is one long round.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

use serde::Serialize;

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
    pub idle_wake_cpu_ns: f64,
    /// That round's time from one wake-up to the next, ns: the most the
    /// woken CPU can be busy per wake-up (all of it when other work keeps
    /// the CPU from idling), up to `/proc/stat`'s two 10 ms ticks over
    /// `idle_wakeups`.
    pub idle_wake_spacing_ns: f64,
    /// Wake-ups that round made (fewer than 6,000 when it hit its 3 s bound).
    pub idle_wakeups: u32,
    pub l2_line_ns: f64,
    pub rounds: u32,
}

fn best_of(rounds: u32, mut f: impl FnMut() -> f64) -> f64 {
    (0..rounds).map(|_| f()).fold(f64::INFINITY, f64::min)
}

fn syscall_round(n: u32) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        // SAFETY: getppid has no arguments and cannot fail.
        unsafe { libc::syscall(libc::SYS_getppid) };
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

fn tcp_round(a: &mut TcpStream, b: &mut TcpStream, n: u32) -> std::io::Result<f64> {
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

/// What a ping-pong between a thread on `here` and one on `there` measured.
struct PingPong {
    /// Wall time per one-way hop.
    hop_ns: f64,
    /// The CPU time of the `write` that wakes the peer, per write (0 unless timed).
    write_cpu_ns: f64,
}

/// `n` round trips through two pipes between a thread on `here` and an
/// echoing thread on `there`; `time_writes` also reads the thread's CPU
/// clock around each write (two clock reads per round trip more).
fn ping_pong(n: u32, here: usize, there: usize, time_writes: bool) -> std::io::Result<PingPong> {
    let (mut a_rd, mut b_wr) = pipe()?;
    let (mut b_rd, mut a_wr) = pipe()?;
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
    let mut write_cpu = 0.0;
    let t = Instant::now();
    for _ in 0..n {
        if time_writes {
            let c = thread_cpu_ns();
            a_wr.write_all(&buf)?;
            write_cpu += thread_cpu_ns() - c;
        } else {
            a_wr.write_all(&buf)?;
        }
        a_rd.read_exact(&mut buf)?;
    }
    let hop_ns = t.elapsed().as_nanos() as f64 / (2 * n) as f64;
    peer.join().map_err(|_| std::io::Error::other("the probe's peer thread panicked"))??;
    Ok(PingPong { hop_ns, write_cpu_ns: write_cpu / n as f64 })
}

fn thread_cpu_ns() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec for clock_gettime to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}

/// The CPU time of one 20 µs `clock_nanosleep`, ns.
fn timer_round(n: u32) -> f64 {
    let d = libc::timespec { tv_sec: 0, tv_nsec: 20_000 };
    let t = thread_cpu_ns();
    for _ in 0..n {
        // SAFETY: d is a valid relative timespec; no remainder is asked for.
        unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &d, std::ptr::null_mut()) };
    }
    (thread_cpu_ns() - t) / n as f64
}

/// CPU a busy `there` loses per wake-up of a thread on it from `here`, ns,
/// and the mean hop of the ping-pong with it.
fn busy_wake_round(n: u32, here: usize, there: usize) -> std::io::Result<(f64, f64)> {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let spinner = {
        let (stop, count) = (stop.clone(), count.clone());
        std::thread::spawn(move || {
            pin_to(there);
            let mut x: u64 = 0;
            while !stop.load(Ordering::Relaxed) {
                x += 1;
                if x & 1023 == 0 {
                    count.store(x, Ordering::Relaxed);
                }
            }
        })
    };
    pin_to(here);
    std::thread::sleep(std::time::Duration::from_millis(50));
    // The spinner's rate alone, then while its CPU takes `n` wake-ups.
    let (c0, t0) = (count.load(Ordering::Relaxed), Instant::now());
    std::thread::sleep(std::time::Duration::from_millis(300));
    let alone = (count.load(Ordering::Relaxed) - c0) as f64 / t0.elapsed().as_nanos() as f64;
    let (c1, t1) = (count.load(Ordering::Relaxed), Instant::now());
    let hop = ping_pong(n, here, there, false)?.hop_ns;
    let ns = t1.elapsed().as_nanos() as f64;
    let shared = (count.load(Ordering::Relaxed) - c1) as f64 / ns;
    stop.store(true, Ordering::Relaxed);
    spinner.join().map_err(|_| std::io::Error::other("the probe's spinner thread panicked"))?;
    pin_to(here);
    Ok((((1.0 - shared / alone) * ns / n as f64).max(0.0), hop))
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

/// The busy time of `there` per wake-up from idle, ns: `n` wake-ups of a
/// thread sleeping on `there`, `gap` apart, from `here`; the elapsed time
/// less `/proc/stat`'s idle, iowait and steal, as `irqlab testbed run`
/// reads a core's CPU. The file counts in 10 ms, so `n` is large: 6,000
/// wake-ups give ±3 µs. Bounded: at most 3 s, and a wake-up not answered
/// within a second is an error. Returns the busy time per wake-up, the
/// time per wake-up, and the wake-ups made.
fn idle_wake_round(n: u32, here: usize, there: usize, gap: std::time::Duration) -> std::io::Result<(f64, f64, u32)> {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;
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
    std::thread::sleep(std::time::Duration::from_millis(20));
    let not_busy0 = proc_stat_not_busy_ns(there)?;
    let t0 = Instant::now();
    let mut result = Ok(());
    let mut done = 0u32;
    for k in 0..n {
        // Bounded in time too: a busy machine stretches every wake-up.
        if t0.elapsed() > std::time::Duration::from_secs(3) {
            break;
        }
        let sent = Instant::now();
        if let Err(e) = wr.write_all(&[1]) {
            result = Err(e);
            break;
        }
        while woken.load(Ordering::Acquire) <= k {
            if sent.elapsed() > std::time::Duration::from_secs(1) {
                result = Err(std::io::Error::other("a woken thread did not run within a second"));
                break;
            }
            std::hint::spin_loop();
        }
        if result.is_err() {
            break;
        }
        done = k + 1;
        while sent.elapsed() < gap {
            std::hint::spin_loop();
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
    Ok((per(elapsed - not_busy).max(0.0), per(elapsed), done))
}

/// One dependent load that hits L2, ns: a warm pointer chase over 256 KiB
/// (beyond any L1d, within any L2 since 2008) in random line order.
fn l2_line_ns() -> f64 {
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
    let mut best = f64::INFINITY;
    for _ in 0..20 {
        let t = Instant::now();
        for _ in 0..LINES {
            p = next[p];
        }
        best = best.min(t.elapsed().as_nanos() as f64 / LINES as f64);
    }
    std::hint::black_box(p);
    best
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

/// Measure, `rounds` rounds of each (bounded: about a second in all).
pub fn probe(rounds: u32) -> std::io::Result<Probe> {
    let rounds = rounds.max(1);
    let syscall_ns = best_of(rounds, || syscall_round(200_000));
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let mut a = TcpStream::connect(listener.local_addr()?)?;
    let (mut b, _) = listener.accept()?;
    a.set_nodelay(true)?;
    b.set_nodelay(true)?;
    tcp_round(&mut a, &mut b, 2_000)?; // warm the path
    let mut tcp = f64::INFINITY;
    for _ in 0..rounds {
        tcp = tcp.min(tcp_round(&mut a, &mut b, 20_000)?);
    }
    let timer = best_of(rounds, || timer_round(1_000));
    let cpus = allowed_cpus();
    let here = cpus[0];
    let mut switch = f64::INFINITY;
    let (mut remote, mut busy, mut busy_hop, mut sender) = (0.0, 0.0, 0.0, 0.0);
    let mut idle_wake = (0.0, 0.0, 0);
    for _ in 0..rounds {
        switch = switch.min(ping_pong(20_000, here, here, false)?.hop_ns);
    }
    if let Some(&there) = cpus.get(1) {
        remote = f64::INFINITY;
        let mut busy_rounds = Vec::with_capacity(rounds as usize);
        busy_hop = f64::INFINITY;
        sender = f64::INFINITY;
        for _ in 0..rounds {
            sender = sender.min(ping_pong(1_000, here, there, true)?.write_cpu_ns);
            remote = remote.min(ping_pong(2_000, here, there, false)?.hop_ns);
            let (cpu, hop) = busy_wake_round(2_000, here, there)?;
            busy_rounds.push(cpu);
            busy_hop = busy_hop.min(hop);
        }
        busy_rounds.sort_by(f64::total_cmp);
        busy = busy_rounds[busy_rounds.len() / 2];
        idle_wake = idle_wake_round(6_000, here, there, std::time::Duration::from_micros(200))?;
    }
    let l2_line_ns = l2_line_ns();
    // Back to every CPU it had.
    // SAFETY: as in pin_to.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in &cpus {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
    let busy_wake_ns = (2.0 * busy_hop - remote).max(0.0);
    Ok(Probe {
        syscall_ns,
        tcp_message_ns: tcp,
        switch_ns: switch,
        remote_wake_ns: remote,
        busy_wake_cpu_ns: busy,
        busy_wake_ns,
        wake_sender_cpu_ns: (sender - syscall_ns).max(0.0),
        timer_sleep_cpu_ns: timer,
        idle_wake_cpu_ns: idle_wake.0,
        idle_wake_spacing_ns: idle_wake.1,
        idle_wakeups: idle_wake.2,
        l2_line_ns,
        rounds,
    })
}
