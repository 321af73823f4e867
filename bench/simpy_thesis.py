"""The thesis's bare-metal scenario as a plain SimPy model, for comparison with irqlab.

``scenarios/thesis/bare-metal.toml``: memcached on 8 cores at 3 GHz, one NIC
queue pair per core (its interrupt on that core), 768 closed-loop connections
(6 clients x 8 threads x 16) at depth 1, ETC key and value sizes, an
exponential service time of 5,534 user cycles per request, 20 us one way on
the wire and 0.6 us of DMA. Two profiles (thesis appendix A):

``busy-wait``
    The application thread busy-polls its queue's NAPI from ``epoll_wait``
    (``busy_poll_usecs`` 1000, budget 64, ``maxevents`` 32, non-blocking);
    interrupts stay off while it polls, so in steady state no interrupt runs.
``no-coalescing``
    An interrupt per packet (``rx-usecs`` 1, ``rx-frames`` 128, EQE mode):
    the hard IRQ preempts whatever runs on the core, NET_RX runs at IRQ exit
    (weight 64), the interrupted thread pays ``interrupt_penalty_cycles`` when
    it resumes and the softirq round that interrupted it ``irq_cold_cycles``;
    the thread sleeps in ``epoll_wait`` when nothing is ready and is woken by
    the delivery (``wakeup_cycles`` in the softirq, a context switch, the
    C-state exit of an idle core before the next interrupt).

Every cost is irqlab's default (``crates/irqlab-core/src/scenario/config.rs``,
``Costs::default``, ``CpuCfg``, ``NicCfg``), restated below in ``COSTS``.

How it is built (SimPy idioms): each core is a ``simpy.PreemptiveResource``
of capacity 1. The application thread holds it while it runs (priority 2)
and releases it when it sleeps; a hard IRQ is a process that requests it at
priority 0 with preemption, then at IRQ exit requests it at priority 1 for
the NET_RX softirq before giving it up, so the softirq runs before the
preempted thread gets the core back. A preempted holder receives
``simpy.Interrupt``, keeps what remained of its work and asks for the core
again. Each client connection is a process (send, wait for the reply, wire,
repeat). Interrupt-moderation timers and TX completions are timeouts with a
callback. The RX ring and the epoll ready list are deques that NAPI and
``epoll_wait`` read without blocking.

Where it differs from irqlab's model (``crates/irqlab-core/src/model/``):

* Net DIM is not modelled. TX completions still share the queue's interrupt
  (mlx5), but in ``no-coalescing`` the TX completion queue uses a fixed
  moderation of 128 us / 128 frames (EQE), the DIM profile irqlab's TX DIM
  spends most of its time in under this load (its ``dim.tx`` report: about
  72 % in the 128 us profile, 25 % in 64 us). With the same fixed setting
  irqlab itself runs 0.4 % faster than with DIM. irqlab's TX DIM starts at
  8 us and takes 10-20 ms to climb to 128 us, taking more TX interrupts
  meanwhile, so from an empty system this model is ahead of irqlab by
  about 8 % over the first 5 ms, 3 % over 20 ms, 1.4 % over 40 ms and
  0.5 % over 0.2 s (busy-wait has no such start: within 0.2 % at 20 ms).
* ``busy-wait`` has no interrupts at all: the thread starts out busy-polling
  its NAPI. irqlab starts with the NIC's interrupts armed, takes the very
  first packets with one interrupt and softirq, learns the NAPI id, and only
  then busy-polls (after which the deferral of 100 IRQs / 5 ms
  ``gro_flush_timeout`` keeps interrupts off as long as the thread polls). The
  NAPI watchdog, ``napi_defer_hard_irqs`` and forgetting the NAPI id after a
  fruitless 1 ms busy loop are therefore left out; none of them acts at
  saturation.
* The thread's read, service and ``sendmsg`` of one request are one stretch
  of CPU work (their cycles added; the reply leaves at its end, as in irqlab,
  where it leaves at the end of ``sendmsg``). Time is a float in nanoseconds;
  irqlab rounds each segment up to a whole nanosecond.
* At depth 1 a connection's socket holds at most one request, so the epoll
  ready list holds the requests themselves and every ``read`` takes exactly
  one request.
* Bounded buffers and what happens beyond them are left out (ring, TX ring,
  socket and qdisc drops, retransmission): this closed loop keeps at most 96
  requests per queue, against 1024-entry rings. So is the hand-off of NET_RX
  to ksoftirqd after ``MAX_SOFTIRQ_RESTART`` rounds or 2 ms, and
  ``netdev_budget``: no-coalescing's polls take about one packet each.
* Counters: a sleep counts two context switches (to the idle task and back,
  only the second costs cycles), as irqlab counts them; the C-state exit
  counts as idle time.
* No warm-up: ``requests`` counts every reply that reached its client over the
  whole simulated time, from an empty system at 0 (the first requests are
  staggered over 10 us, as irqlab staggers them).
* Random draws come from Python's ``random`` (one stream), not irqlab's
  per-purpose PCG streams, so the two never draw the same numbers.

Run alone: ``python bench/simpy_thesis.py --profile busy-wait --duration 0.1``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Optional

import simpy

# -- The scenario and irqlab's default costs ----------------------------------

FREQ_GHZ = 3.0
CORES = 8
CONNECTIONS = 6 * 8 * 16
SERVICE_MEAN_CYCLES = 5534
WIRE_NS = 20_000.0
DMA_NS = 600.0
WAKEUP_LATENCY_NS = 2_000.0  # C-state exit of an idle core
NAPI_WEIGHT = 64
MAXEVENTS = 32

#: irqlab's ``Costs::default`` (cycles at FREQ_GHZ), under its names.
COSTS = {
    "hardirq_cycles": 2_700,
    "softirq_entry_cycles": 1_350,
    "napi_poll_cycles": 810,
    "rx_packet_cycles": 5_732,
    "wakeup_cycles": 1_500,
    "epoll_wait_cycles": 1_542,
    "epoll_event_cycles": 150,
    "recv_cycles": 2_598,
    "recv_cycles_per_request": 1_000,
    "send_cycles": 9_766,
    "send_cycles_per_64b": 20,
    "context_switch_cycles": 2_500,
    "interrupt_penalty_cycles": 4_665,
    "irq_cold_cycles": 787,
    "tx_clean_cycles": 300,
    "busy_poll_iteration_cycles": 200,
}

# memcached text protocol and TCP/IP/Ethernet headers of a reply (irqlab's
# model/client.rs): "VALUE <key> <flags> <bytes>\r\n<data>\r\nEND\r\n" + 66.
VALUE_OVERHEAD_BYTES = 6 + 3 + 8 + 4 + 2 + 5 + 66


def ns(cycles: float) -> float:
    return cycles / FREQ_GHZ


@dataclass(frozen=True)
class Profile:
    interrupts: bool  # NIC interrupts drive the receive path
    busy_poll_us: int  # epoll busy polling (0: none)
    busy_poll_budget: int
    blocking: bool  # epoll_wait sleeps when nothing is ready
    rx_usecs: int
    rx_frames: int
    tx_usecs: int
    tx_frames: int


PROFILES = {
    "busy-wait": Profile(
        interrupts=False, busy_poll_us=1000, busy_poll_budget=64, blocking=False,
        rx_usecs=8, rx_frames=128, tx_usecs=8, tx_frames=128,  # unused: no interrupts
    ),
    "no-coalescing": Profile(
        interrupts=True, busy_poll_us=0, busy_poll_budget=0, blocking=True,
        rx_usecs=1, rx_frames=128, tx_usecs=128, tx_frames=128,
    ),
}

# Priorities on a core's PreemptiveResource (lower runs first).
HARDIRQ, SOFTIRQ, THREAD = 0, 1, 2


# -- Workload: mutilate's ETC sizes -------------------------------------------

# fb_value's discrete head (probability, bytes); the rest is a GPareto tail.
FB_VALUE_TABLE = [
    (0.00536, 0), (0.00047, 1), (0.17820, 2), (0.09239, 3), (0.00018, 4),
    (0.02740, 5), (0.00065, 6), (0.00606, 7), (0.00023, 8), (0.00837, 9),
    (0.00837, 10), (0.08989, 11), (0.00092, 12), (0.00326, 13), (0.01980, 14),
]


def open01(rng: random.Random) -> float:
    """A uniform draw in (0, 1)."""
    while True:
        u = rng.random()
        if u > 0.0:
            return u


def etc_reply_bytes(rng: random.Random) -> int:
    """Bytes of a get's reply: an ETC key (GEV) and value (table + GPareto)."""
    shape = 0.078688
    g = 30.7984 + 8.20449 * ((-math.log(open01(rng))) ** -shape - 1.0) / shape
    key = min(max(int(math.floor(g + 0.5)), 1), 255)
    u = rng.random()
    cum = 0.0
    for p, size in FB_VALUE_TABLE:
        cum += p
        if u < cum:
            value = size
            break
    else:
        shape = 0.348238
        x = 15.0 + 214.476 * (open01(rng) ** -shape - 1.0) / shape
        value = min(int(x), 1 << 20)
    return key + value + VALUE_OVERHEAD_BYTES


class Request:
    __slots__ = ("conn", "reply", "reply_bytes")

    def __init__(self, conn: int, reply: simpy.Event, reply_bytes: int):
        self.conn = conn
        self.reply = reply
        self.reply_bytes = reply_bytes


# -- The server ---------------------------------------------------------------


class Context:
    """Code that runs on a core at one priority. ``run`` executes work; a hard
    IRQ that preempts it (``simpy.Interrupt``) suspends it until the core is
    given back, after which it pays ``penalty_ns`` on top of what remained."""

    def __init__(self, core: "Core", priority: int, penalty_ns: float = 0.0):
        self.core = core
        self.priority = priority
        self.penalty_ns = penalty_ns
        self.req: Optional[simpy.resources.resource.PriorityRequest] = None

    def request(self) -> simpy.Event:
        self.req = self.core.cpu.request(priority=self.priority, preempt=False)
        return self.req

    def wait_for_core(self):
        """Wait until ``self.req`` is granted; a preemption between the grant
        and this process resuming means asking again."""
        while True:
            try:
                yield self.req
                break
            except simpy.Interrupt:
                self.core.preempted(self)
                self.request()
        self.core.resumed(self)

    def acquire(self):
        self.request()
        yield from self.wait_for_core()

    def release(self) -> None:
        self.core.cpu.release(self.req)
        self.req = None
        self.core.note_idle()

    def run(self, duration_ns: float):
        env = self.core.env
        while True:
            start = env.now
            try:
                yield env.timeout(duration_ns)
                return
            except simpy.Interrupt:
                duration_ns = max(0.0, duration_ns - (env.now - start))
                self.core.preempted(self)
            self.request()
            yield from self.wait_for_core()
            duration_ns += self.penalty_ns


class CompletionQueue:
    """mlx5 CQ moderation in EQE mode: armed, the first completion starts a
    period of ``usecs``; the CQ signals the queue's interrupt when it ends
    (or at ``frames`` completions) and stays disarmed until NAPI re-arms it."""

    def __init__(self, core: "Core", usecs: int, frames: int):
        self.core = core
        self.period_ns = usecs * 1_000.0
        self.frames = frames
        self.armed = True
        self.pending = 0
        self.timer: Optional[simpy.Event] = None

    def completions(self, n: int) -> None:
        if not self.armed or n == 0:
            return
        self.pending += n
        if self.frames and self.pending >= self.frames:
            self.fire()
        elif self.timer is None:
            self.timer = self.core.env.timeout(self.period_ns)
            self.timer.callbacks.append(self.period_end)

    def period_end(self, timer: simpy.Event) -> None:
        if timer is not self.timer:
            return  # cancelled (the CQ fired or was re-armed meanwhile)
        self.timer = None
        if self.armed and self.pending:
            self.fire()

    def fire(self) -> None:
        self.armed = False
        self.pending = 0
        self.timer = None
        self.core.env.process(self.core.irq())

    def arm(self, outstanding: int) -> None:
        if self.armed:
            return
        self.armed = True
        self.pending = 0
        self.timer = None
        self.completions(outstanding)


class Core:
    """One application core with its NIC queue pair, NAPI, epoll and
    memcached event-loop thread."""

    def __init__(self, env: simpy.Environment, profile: Profile, rng: random.Random, stats: dict):
        self.env = env
        self.p = profile
        self.rng = rng
        self.stats = stats
        self.cpu = simpy.PreemptiveResource(env, capacity=1)
        self.ring: deque[Request] = deque()  # RX ring of the queue
        self.ready: deque[Request] = deque()  # epoll ready list
        self.tx_outstanding = 0  # TX completions not yet reaped
        self.napi_scheduled = False
        self.napi_missed = False
        self.idle = True  # in a C-state: the next interrupt pays its exit
        self.idle_since = 0.0
        self.sleeping = False  # the thread blocks in epoll_wait
        self.wakeup: Optional[simpy.Event] = None
        self.thread_preempted = False
        self.thread = Context(self, THREAD, ns(COSTS["interrupt_penalty_cycles"]))
        self.softirq = Context(self, SOFTIRQ)
        if profile.interrupts:
            self.rx_cq = CompletionQueue(self, profile.rx_usecs, profile.rx_frames)
            self.tx_cq = CompletionQueue(self, profile.tx_usecs, profile.tx_frames)
        env.process(self.event_loop())

    # Bookkeeping of who has the core.
    def preempted(self, ctx: Context) -> None:
        if ctx is self.thread:
            self.thread_preempted = True
            self.stats["interruptions"] += 1

    def resumed(self, ctx: Context) -> None:
        if ctx is self.thread:
            self.thread_preempted = False

    def note_idle(self) -> None:
        """After a release: with nothing left to run the core sleeps."""
        if self.sleeping and not self.cpu.users and not self.cpu.queue:
            self.idle = True
            self.idle_since = self.env.now

    # NIC side.
    def receive(self, req: Request) -> None:
        """A request's DMA into the RX ring completed."""
        self.ring.append(req)
        if self.p.interrupts:
            self.rx_cq.completions(1)

    def transmit(self, req: Request) -> None:
        """sendmsg's end: the reply leaves; its TX descriptor completes after the DMA."""
        req.reply.succeed()
        self.env.timeout(DMA_NS).callbacks.append(self.tx_done)

    def tx_done(self, _event: simpy.Event) -> None:
        self.tx_outstanding += 1
        if self.p.interrupts:
            self.tx_cq.completions(1)

    # Kernel receive path.
    def napi_poll(self, ctx: Context, budget: int, extra_cycles: float = 0.0):
        """The driver's poll: reap TX completions, take up to ``budget``
        packets, and deliver them to their sockets when the poll ends.
        Returns the number of packets taken."""
        reaped = min(self.tx_outstanding, budget)
        self.tx_outstanding -= reaped
        n = min(len(self.ring), budget)
        taken = [self.ring.popleft() for _ in range(n)]
        cycles = extra_cycles + COSTS["napi_poll_cycles"] + n * COSTS["rx_packet_cycles"] + reaped * COSTS["tx_clean_cycles"]
        if n and self.sleeping:
            cycles += COSTS["wakeup_cycles"]  # ep_poll_callback -> try_to_wake_up
        yield from ctx.run(ns(cycles))
        self.ready.extend(taken)
        if n and self.sleeping:
            self.sleeping = False
            self.wakeup.succeed()
        return n

    def irq(self):
        """The queue's MSI-X interrupt: the hard IRQ handler schedules NAPI;
        at IRQ exit the NET_RX softirq polls it until it completes."""
        env = self.env
        irq = self.cpu.request(priority=HARDIRQ, preempt=True)
        yield irq
        if self.idle:  # C-state exit first (counted as idle time, as irqlab does)
            self.idle = False
            self.stats["idle_ns"] += env.now - self.idle_since + WAKEUP_LATENCY_NS
            yield env.timeout(WAKEUP_LATENCY_NS)
        yield env.timeout(ns(COSTS["hardirq_cycles"]))
        self.stats["irqs"] += 1
        if self.napi_scheduled:  # napi_schedule_prep: someone owns it
            self.napi_missed = True
            self.cpu.release(irq)
            self.note_idle()
            return
        self.napi_scheduled = True
        # irq_exit: NET_RX runs before anything of lower priority resumes.
        self.softirq.request()
        self.cpu.release(irq)
        yield from self.softirq.wait_for_core()
        while True:
            self.stats["softirq_rounds"] += 1
            entry = COSTS["softirq_entry_cycles"] + (COSTS["irq_cold_cycles"] if self.thread_preempted else 0)
            n = yield from self.napi_poll(self.softirq, NAPI_WEIGHT, entry)
            if n == NAPI_WEIGHT:
                continue  # whole weight used: polled again next round
            if self.napi_missed:  # napi_complete_done with MISSED: reschedule
                self.napi_missed = False
                continue
            self.napi_scheduled = False
            self.rx_cq.arm(len(self.ring))
            self.tx_cq.arm(self.tx_outstanding)
            break
        self.softirq.release()

    # The application: memcached's event loop.
    def event_loop(self):
        t = self.thread
        p = self.p
        yield from t.acquire()
        self.idle = False
        yield from t.run(ns(COSTS["context_switch_cycles"]))
        while True:
            yield from t.run(ns(COSTS["epoll_wait_cycles"]))
            if not self.ready and p.busy_poll_us:
                yield from self.busy_loop()
            if not self.ready:
                if not p.blocking:
                    continue  # epoll_wait returned 0
                while not self.ready:
                    yield from self.sleep()
            n = min(len(self.ready), MAXEVENTS)
            yield from t.run(ns(n * COSTS["epoll_event_cycles"]))
            events = [self.ready.popleft() for _ in range(n)]
            for req in events:
                service = self.rng.expovariate(1.0 / SERVICE_MEAN_CYCLES)
                cycles = (
                    COSTS["recv_cycles"] + COSTS["recv_cycles_per_request"] + service
                    + COSTS["send_cycles"] + COSTS["send_cycles_per_64b"] * (req.reply_bytes // 64)
                )
                yield from t.run(ns(cycles))
                self.transmit(req)

    def busy_loop(self):
        """ep_busy_loop -> napi_busy_loop: poll, spin, poll ... until something
        is ready or busy_poll_usecs passed; then busy_poll_stop's final poll."""
        t = self.thread
        start = self.env.now
        budget = self.p.busy_poll_budget
        while True:
            yield from self.napi_poll(t, budget)
            if self.ready or self.env.now - start >= self.p.busy_poll_us * 1_000:
                break
            yield from t.run(ns(COSTS["busy_poll_iteration_cycles"]))
        yield from self.napi_poll(t, budget)

    def sleep(self):
        """Block in epoll_wait until a delivery wakes the thread."""
        t = self.thread
        self.sleeping = True
        self.wakeup = self.env.event()
        self.stats["context_switches"] += 1  # to the idle task (free)
        t.release()
        yield self.wakeup
        yield from t.acquire()
        self.stats["context_switches"] += 1  # back to the thread (paid)
        yield from t.run(ns(COSTS["context_switch_cycles"]))


# -- The clients ----------------------------------------------------------------


def connection(env: simpy.Environment, conn: int, core: Core, rng: random.Random, stats: dict):
    """One mutilate connection at depth 1: send, wait for the reply, send again."""
    yield env.timeout(conn * 10_000 / CONNECTIONS)  # irqlab staggers the first sends over 10 us
    while True:
        yield env.timeout(WIRE_NS + DMA_NS)
        req = Request(conn, env.event(), etc_reply_bytes(rng))
        core.receive(req)
        yield req.reply
        yield env.timeout(WIRE_NS)
        stats["requests"] += 1  # the reply reached the client


def check_run(profile: str, duration_s: float) -> None:
    """The arguments of ``run`` (this model's and the fast one's)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; accepted: {', '.join(PROFILES)}")
    if not duration_s > 0:
        raise ValueError(f"duration_s must be positive (got {duration_s!r})")


def run(profile: str, duration_s: float, seed: int = 1) -> dict[str, Any]:
    """Simulate ``duration_s`` seconds of the thesis scenario under ``profile``."""
    check_run(profile, duration_s)
    rng = random.Random(seed)
    env = simpy.Environment()
    end_ns = duration_s * 1e9
    stats = {"requests": 0, "irqs": 0, "softirq_rounds": 0, "interruptions": 0, "context_switches": 0, "idle_ns": 0.0}
    cores = [Core(env, PROFILES[profile], rng, stats) for _ in range(CORES)]
    for conn in range(CONNECTIONS):
        env.process(connection(env, conn, cores[conn % CORES], rng, stats))  # RSS: flow i -> queue i mod 8
    wall = time.perf_counter()
    env.run(until=end_ns)
    wall_s = time.perf_counter() - wall
    return summary(profile, duration_s, seed, wall_s, stats, cores, "process")


def summary(
    profile: str, duration_s: float, seed: int, wall_s: float, stats: dict, cores: list[Any], model: str
) -> dict[str, Any]:
    """A run's figures from its counters (``stats``) and its cores (each with
    ``idle`` and ``idle_since``); ``model`` names the SimPy model."""
    end_ns = duration_s * 1e9
    idle_ns = stats["idle_ns"] + sum(end_ns - c.idle_since for c in cores if c.idle)
    requests = stats["requests"]
    per_s = lambda x: x / duration_s  # noqa: E731
    return {
        "simulator": "simpy",
        "model": model,
        "simpy_version": simpy.__version__,
        "profile": profile,
        "seed": seed,
        "requests": requests,
        "sim_time_s": duration_s,
        "wall_s": wall_s,
        "throughput_qps": per_s(requests),
        "requests_per_wall_s": requests / wall_s if wall_s > 0 else float("inf"),
        "irqs_per_s": per_s(stats["irqs"]),
        "softirqs_per_s": per_s(stats["softirq_rounds"]),
        "interruptions_per_query": stats["interruptions"] / requests if requests else 0.0,
        "context_switches_per_query": stats["context_switches"] / requests if requests else 0.0,
        "cpu_busy_pct": 100.0 * (1.0 - idle_ns / (CORES * end_ns)),
        "cycles_per_query": (CORES * end_ns - idle_ns) * FREQ_GHZ / requests if requests else 0.0,
    }


def main(argv: Optional[list[str]] = None, simulate: Any = None, doc: Optional[str] = None) -> int:
    """The command line of this model, or of another with the same ``run``
    signature (``simulate``) and module docstring (``doc``)."""
    run_model = simulate or run
    ap = argparse.ArgumentParser(description=(doc or __doc__).split("\n\n")[0])
    ap.add_argument("--profile", choices=sorted(PROFILES), default="busy-wait")
    ap.add_argument("--duration", type=float, default=0.1, help="simulated seconds (default 0.1)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print the result as one JSON object")
    args = ap.parse_args(argv)
    if not args.duration > 0:
        ap.error("--duration must be positive")
    r = run_model(args.profile, args.duration, args.seed)
    if args.json:
        print(json.dumps(r))
    else:
        for k, v in r.items():
            print(f"{k:28} {v:,.3f}" if isinstance(v, float) else f"{k:28} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
