"""The thesis's bare-metal scenario as a SimPy model written for speed.

The scenario, its costs and its two profiles (``busy-wait``,
``no-coalescing``) are ``bench/simpy_thesis.py``'s, imported from it (its
``COSTS``, ``PROFILES``, constants, ETC sizes and ``summary``); see that
file's docstring for what the profiles do. This file simulates exactly what
that model simulates, built the way a SimPy user who wants speed would build
it: no generator processes, no ``simpy.Resource``, no ``simpy.Interrupt``.

How it is built: every delay is a ``simpy.events.Timeout`` on SimPy's
``Environment`` whose callback (``ev.callbacks.append(fn)``) carries the
model on; ``env.run`` pops them off SimPy's event queue as usual.

* A core is a small state machine: who has it (free, hard IRQ, NET_RX
  softirq, application thread), the one ``Timeout`` of the segment of CPU
  work it runs, and what waits for it (hard IRQs in arrival order, then the
  softirq, then the thread: the process model's priorities 0, 1, 2). A hard
  IRQ preempts the softirq or the thread: the running segment's callback is
  taken off its ``Timeout`` (which then pops doing nothing) and the
  remaining work is kept with that callback; the thread resumes with
  ``interrupt_penalty_cycles`` on top, as in the process model. One
  ``Timeout`` per segment: a hard IRQ (with the C-state exit before it when
  the core was idle), a softirq round (one NAPI poll), a busy poll, a busy
  poll's spin, ``epoll_wait``, its events, a request's read + service +
  ``sendmsg``, the context switch after a sleep. A segment's end calls the
  next step of that context's code directly; hand-overs of the core take no
  simulated time, as in the process model, but no event either.
* Busy-wait polls at the process model's granularity: every NAPI poll of
  ``napi_busy_loop`` (empty or not) and every spin of
  ``busy_poll_iteration_cycles`` between two is a segment of its own, and
  ``busy_poll_stop``'s final poll is one more.
* A client connection is two callbacks: its reply reaches it (``Timeout``
  of the wire; it counts the request and sends the next) and its next
  request reaches the NIC's RX ring (``Timeout`` of wire + DMA). At depth 1
  a connection has one request outstanding, so the request is the
  connection itself (with its reply's size) and the RX ring and epoll ready
  list hold connections. A reply's TX completion is a ``Timeout`` of the DMA.
  Per request that is the three events irqlab has too (its ``PacketArrive``,
  ``TxDone`` and ``ReplyArrive``). Each CQ's moderation timer is a
  ``Timeout``; cancelling it takes its callback off.

That is 4.2 SimPy events per request under busy-wait (a request's service,
its three events above and a share of its batch's ``epoll_wait`` and
polls) and 8.4 under no-coalescing (also the RX moderation timer, the hard
IRQ, the softirq round, the preempted segment that pops for nothing and
its resumption), about what irqlab's engine schedules; what is left is
SimPy's own cost per event.

How it differs from ``bench/simpy_thesis.py`` (the process model): in
how it is written, not in what it simulates. Where the process model's
event order matters it is kept: an interrupt that a CQ raises when the
softirq re-arms it starts (there as a new process) only after the softirq
has given the core up, so a thread that was already waiting for the core is
granted it and preempted at once (counted as an interruption, the next
softirq round pays ``irq_cold_cycles``, no penalty added), and the core may
enter its C-state and pay its exit in that instant. A thread woken by the
final poll of the round asks for the core after that interrupt (there it
resumes through the wake-up event); here both are plain flags and calls. A
hard IRQ is one segment where the process model yields two timeouts
(C-state exit, then the handler); it cannot be preempted, so the times are
the same. Other interrupts start at once where the process model starts
them as a process in the same instant: they differ only when two things
fall on the same float nanosecond. Random draws come from one
``random.Random`` stream taken at the same points in the same order (a
reply's size when its request reaches the ring, a service time when the
thread starts the request), and the ETC sizes from the same draws (a
bisection where ``simpy_thesis.etc_reply_bytes`` scans its table), so from
the same seed both models simulate the same run: over 0.05 s, seeds 1, 2
and 7, every counter of both profiles is the same to the last request.

How it differs from irqlab's model: as ``bench/simpy_thesis.py`` does (no
Net DIM: TX moderation fixed at 128 us / 128 frames in no-coalescing;
busy-wait starts busy-polling with no interrupts; read + service +
``sendmsg`` as one segment; float nanoseconds; no bounded buffers, drops,
ksoftirqd hand-off or ``netdev_budget``; no warm-up; Python's ``random``
instead of irqlab's PCG streams).

Run alone: ``python bench/simpy_thesis_fast.py --profile no-coalescing --duration 0.1``.
"""

from __future__ import annotations

import random
import sys
import time
from bisect import bisect_right
from collections import deque
from itertools import accumulate
from math import floor, log
from pathlib import Path
from typing import Any, Optional

import simpy
from simpy.events import Timeout

try:
    import simpy_thesis as base
except ImportError:  # loaded by its path from outside bench/ (not a package)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import simpy_thesis as base

COSTS = base.COSTS
PROFILES = base.PROFILES
FREQ_GHZ = base.FREQ_GHZ
CORES = base.CORES
CONNECTIONS = base.CONNECTIONS
SERVICE_MEAN_CYCLES = base.SERVICE_MEAN_CYCLES
WIRE_NS = base.WIRE_NS
DMA_NS = base.DMA_NS
WAKEUP_LATENCY_NS = base.WAKEUP_LATENCY_NS
NAPI_WEIGHT = base.NAPI_WEIGHT
MAXEVENTS = base.MAXEVENTS
VALUE_OVERHEAD_BYTES = base.VALUE_OVERHEAD_BYTES
ns = base.ns

# mutilate's ETC reply sizes: base.etc_reply_bytes with its value table's
# linear scan replaced by a bisection of the same cumulative sums (the same
# numbers from the same draws; tests/python/test_simpy_fast.py checks).
_FB_CUMULATIVE = list(accumulate(p for p, _ in base.FB_VALUE_TABLE))
_FB_SIZES = [size for _, size in base.FB_VALUE_TABLE]
_KEY_SHAPE = 0.078688
_TAIL_SHAPE = 0.348238


def etc_reply_bytes(rng: random.Random) -> int:
    """Bytes of a get's reply: an ETC key (GEV) and value (table + GPareto)."""
    draw = rng.random
    u = draw()
    while u <= 0.0:
        u = draw()
    g = 30.7984 + 8.20449 * ((-log(u)) ** -_KEY_SHAPE - 1.0) / _KEY_SHAPE
    key = floor(g + 0.5)
    key = 1 if key < 1 else 255 if key > 255 else key
    i = bisect_right(_FB_CUMULATIVE, draw())
    if i < len(_FB_SIZES):
        value = _FB_SIZES[i]
    else:
        u = draw()
        while u <= 0.0:
            u = draw()
        value = int(15.0 + 214.476 * (u ** -_TAIL_SHAPE - 1.0) / _TAIL_SHAPE)
        if value > 1 << 20:
            value = 1 << 20
    return key + value + VALUE_OVERHEAD_BYTES


# The costs in the units each step uses (the process model's ``ns(cycles)``).
CONTEXT_SWITCH_NS = ns(COSTS["context_switch_cycles"])
EPOLL_WAIT_NS = ns(COSTS["epoll_wait_cycles"])
EPOLL_EVENT_CYCLES = COSTS["epoll_event_cycles"]
HARDIRQ_NS = ns(COSTS["hardirq_cycles"])
PENALTY_NS = ns(COSTS["interrupt_penalty_cycles"])
BUSY_POLL_ITERATION_NS = ns(COSTS["busy_poll_iteration_cycles"])
SOFTIRQ_ENTRY_CYCLES = COSTS["softirq_entry_cycles"]
IRQ_COLD_CYCLES = COSTS["irq_cold_cycles"]
NAPI_POLL_CYCLES = COSTS["napi_poll_cycles"]
RX_PACKET_CYCLES = COSTS["rx_packet_cycles"]
TX_CLEAN_CYCLES = COSTS["tx_clean_cycles"]
WAKEUP_CYCLES = COSTS["wakeup_cycles"]
#: A request's read and sendmsg, apart from its service time and reply size.
REQUEST_CYCLES = COSTS["recv_cycles"] + COSTS["recv_cycles_per_request"] + COSTS["send_cycles"]
SEND_CYCLES_PER_64B = COSTS["send_cycles_per_64b"]
SERVICE_RATE = 1.0 / SERVICE_MEAN_CYCLES
WIRE_DMA_NS = WIRE_NS + DMA_NS

# Who has a core.
FREE, HARDIRQ, SOFTIRQ, THREAD = 0, 1, 2, 3


class Counters:
    __slots__ = ("requests", "irqs", "softirq_rounds", "interruptions", "context_switches", "idle_ns")

    def __init__(self) -> None:
        self.requests = self.irqs = self.softirq_rounds = self.interruptions = self.context_switches = 0
        self.idle_ns = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


class CompletionQueue:
    """mlx5 CQ moderation in EQE mode, as in the process model. ``completions``
    and ``arm`` return True when the CQ signals its interrupt then (the caller
    raises it); the period's end raises it itself."""

    __slots__ = ("env", "core", "period_ns", "frames", "armed", "pending", "timer")

    def __init__(self, env: simpy.Environment, core: "Core", usecs: int, frames: int):
        self.env = env
        self.core = core
        self.period_ns = usecs * 1_000.0
        self.frames = frames
        self.armed = True
        self.pending = 0
        self.timer: Optional[Timeout] = None

    def completions(self, n: int) -> bool:
        if not self.armed or not n:
            return False
        self.pending += n
        if self.frames and self.pending >= self.frames:
            self.armed = False
            self.pending = 0
            if self.timer is not None:
                self.timer.callbacks.clear()  # cancelled
                self.timer = None
            return True
        if self.timer is None:
            self.timer = t = Timeout(self.env, self.period_ns)
            t.callbacks.append(self.period_end)
        return False

    def period_end(self, _ev: Timeout) -> None:
        self.timer = None
        if self.armed and self.pending:
            self.armed = False
            self.pending = 0
            self.core.irq()

    def arm(self, outstanding: int) -> bool:
        if self.armed:
            return False
        self.armed = True
        self.pending = 0
        return self.completions(outstanding)


class Connection:
    """A mutilate connection at depth 1; it is also its one outstanding request."""

    __slots__ = ("env", "core", "rng", "counters", "reply_bytes")

    def __init__(self, env: simpy.Environment, core: "Core", rng: random.Random, counters: Counters):
        self.env = env
        self.core = core
        self.rng = rng
        self.counters = counters
        self.reply_bytes = 0

    def reply_arrives(self, _ev: Timeout) -> None:
        """The reply reached the client, which sends the next request."""
        self.counters.requests += 1
        Timeout(self.env, WIRE_DMA_NS).callbacks.append(self.request_arrives)

    def request_arrives(self, _ev: Timeout) -> None:
        """The request's DMA into the server's RX ring completed."""
        self.reply_bytes = etc_reply_bytes(self.rng)
        self.core.receive(self)


class Core:
    """One application core with its NIC queue pair, NAPI, epoll and
    memcached event-loop thread, as a state machine."""

    __slots__ = (
        "env", "rng", "c", "rx_cq", "tx_cq", "busy_poll_ns", "busy_poll_budget", "blocking",
        "ring", "ready", "tx_outstanding", "napi_scheduled", "napi_missed",
        "idle", "idle_since", "sleeping", "woke",
        "owner", "seg", "seg_end", "taken", "irqs_waiting",
        "softirq_waiting", "softirq_rem", "softirq_then",
        "thread_waiting", "thread_rem", "thread_then", "thread_preempted",
        "busy_start", "batch", "serving",
    )

    def __init__(self, env: simpy.Environment, profile: base.Profile, rng: random.Random, counters: Counters):
        self.env = env
        self.rng = rng
        self.c = counters
        self.rx_cq = CompletionQueue(env, self, profile.rx_usecs, profile.rx_frames) if profile.interrupts else None
        self.tx_cq = CompletionQueue(env, self, profile.tx_usecs, profile.tx_frames) if profile.interrupts else None
        self.busy_poll_ns = profile.busy_poll_us * 1_000
        self.busy_poll_budget = profile.busy_poll_budget
        self.blocking = profile.blocking
        self.ring: deque[Connection] = deque()  # RX ring of the queue
        self.ready: deque[Connection] = deque()  # epoll ready list
        self.tx_outstanding = 0
        self.napi_scheduled = False
        self.napi_missed = False
        self.idle = True  # in a C-state: the next interrupt pays its exit
        self.idle_since = 0.0
        self.sleeping = False  # the thread blocks in epoll_wait
        self.woke = False  # the softirq round that runs woke the thread
        self.owner = FREE
        self.seg: Optional[Timeout] = None  # the running segment
        self.seg_end = 0.0
        self.taken = 0  # packets the running NAPI poll takes off the ring
        self.irqs_waiting = 0
        self.softirq_waiting = False
        self.softirq_rem = 0.0
        self.softirq_then: Any = None  # None: a new round
        self.thread_waiting = False
        self.thread_rem: Optional[float] = None  # None: a fresh start, ``thread_then()``
        self.thread_then: Any = None
        self.thread_preempted = False
        self.busy_start = 0.0
        self.batch = 0  # requests of epoll_wait's events still to serve
        self.serving: Optional[Connection] = None
        # The thread has the core at 0 and switches in.
        self.owner = THREAD
        self.idle = False
        self.run(CONTEXT_SWITCH_NS, self.t_loop)

    # -- The core: segments, preemption, hand-over ------------------------------

    def run(self, duration_ns: float, then: Any) -> None:
        """The owner runs ``duration_ns`` of CPU work, then ``then(event)``."""
        self.seg_end = self.env.now + duration_ns
        self.seg = ev = Timeout(self.env, duration_ns)
        ev.callbacks.append(then)

    def irq(self) -> None:
        """The queue's MSI-X interrupt: it preempts the softirq or the thread,
        or waits behind the hard IRQ that runs."""
        owner = self.owner
        if owner == HARDIRQ:
            self.irqs_waiting += 1
            return
        if owner != FREE:
            then = self.seg.callbacks.pop()  # the segment is cancelled; what follows it waits
            rem = self.seg_end - self.env.now
            if owner == THREAD:
                self.thread_waiting = True
                self.thread_rem = rem + PENALTY_NS
                self.thread_then = then
                self.thread_preempted = True
                self.c.interruptions += 1
            else:
                self.softirq_waiting = True
                self.softirq_rem = rem
                self.softirq_then = then
        self.hardirq()

    def hardirq(self) -> None:
        self.owner = HARDIRQ
        duration = HARDIRQ_NS
        if self.idle:  # C-state exit first (counted as idle time, as irqlab does)
            self.idle = False
            self.c.idle_ns += self.env.now - self.idle_since + WAKEUP_LATENCY_NS
            duration += WAKEUP_LATENCY_NS
        self.run(duration, self.hardirq_done)

    def hardirq_done(self, _ev: Timeout) -> None:
        self.c.irqs += 1
        if self.napi_scheduled:  # napi_schedule_prep: someone owns it
            self.napi_missed = True
        else:  # irq_exit: NET_RX runs before the thread resumes
            self.napi_scheduled = True
            self.softirq_waiting = True
            self.softirq_then = None
        self.release()

    def release(self) -> None:
        """The owner gives the core up: to a waiting hard IRQ, else the
        softirq, else the thread; with nothing to run the core idles."""
        if self.irqs_waiting:
            self.irqs_waiting -= 1
            self.hardirq()
        elif self.softirq_waiting:
            self.softirq_waiting = False
            self.owner = SOFTIRQ
            if self.softirq_then is None:
                self.softirq_round()
            else:
                self.run(self.softirq_rem, self.softirq_then)
        elif self.thread_waiting:
            self.thread_waiting = False
            self.owner = THREAD
            self.thread_preempted = False
            if self.thread_rem is None:
                self.thread_then()
            else:
                self.run(self.thread_rem, self.thread_then)
        else:
            self.owner = FREE
            if self.sleeping:
                self.idle = True
                self.idle_since = self.env.now

    # -- NIC side ---------------------------------------------------------------

    def receive(self, conn: Connection) -> None:
        self.ring.append(conn)
        if self.rx_cq is not None and self.rx_cq.completions(1):
            self.irq()

    def tx_done(self, _ev: Timeout) -> None:
        self.tx_outstanding += 1
        if self.tx_cq is not None and self.tx_cq.completions(1):
            self.irq()

    # -- NAPI -------------------------------------------------------------------

    def poll(self, budget: int, extra_cycles: float, then: Any) -> None:
        """The driver's poll as a segment: reap TX completions and take up to
        ``budget`` packets, delivered by ``deliver`` at its end."""
        reaped = self.tx_outstanding if self.tx_outstanding < budget else budget
        self.tx_outstanding -= reaped
        n = len(self.ring)
        if n > budget:
            n = budget
        self.taken = n
        cycles = extra_cycles + NAPI_POLL_CYCLES + n * RX_PACKET_CYCLES + reaped * TX_CLEAN_CYCLES
        if n and self.sleeping:
            cycles += WAKEUP_CYCLES  # ep_poll_callback -> try_to_wake_up
        self.run(cycles / FREQ_GHZ, then)

    def deliver(self) -> int:
        """The poll's end: its packets reach their sockets (the ready list);
        a sleeping thread wakes and waits for the core."""
        n = self.taken
        if n:
            ring, ready = self.ring, self.ready
            for _ in range(n):
                ready.append(ring.popleft())
            if self.sleeping:
                self.sleeping = False
                self.woke = True
                self.thread_waiting = True
                self.thread_rem = None
                self.thread_then = self.t_switch_in
        return n

    def softirq_round(self) -> None:
        self.c.softirq_rounds += 1
        self.woke = False
        extra = SOFTIRQ_ENTRY_CYCLES + (IRQ_COLD_CYCLES if self.thread_preempted else 0)
        self.poll(NAPI_WEIGHT, extra, self.softirq_polled)

    def softirq_polled(self, _ev: Optional[Timeout]) -> None:
        n = self.deliver()
        if n == NAPI_WEIGHT:  # whole weight used: polled again next round
            self.softirq_round()
            return
        if self.napi_missed:  # napi_complete_done with MISSED: reschedule
            self.napi_missed = False
            self.softirq_round()
            return
        self.napi_scheduled = False
        irqs = self.rx_cq.arm(len(self.ring)) + self.tx_cq.arm(self.tx_outstanding)
        if not irqs:
            self.release()
            return
        # The process model starts these interrupts as processes after the
        # softirq has released the core: a thread that already asked for it
        # is granted it and preempted at once; otherwise a sleeping thread's
        # core enters its C-state. A thread this round woke asks after them.
        if self.thread_waiting and not self.woke:
            self.c.interruptions += 1
            self.thread_preempted = True
        elif self.sleeping:
            self.idle = True
            self.idle_since = self.env.now
        self.hardirq()
        self.irqs_waiting += irqs - 1

    # -- The application: memcached's event loop ----------------------------------

    def t_loop(self, _ev: Optional[Timeout] = None) -> None:
        self.run(EPOLL_WAIT_NS, self.t_waited)

    def t_waited(self, _ev: Timeout) -> None:
        if self.ready:
            self.t_events()
        elif self.busy_poll_ns:
            self.busy_start = self.env.now
            self.t_busy_poll()
        else:
            self.t_nothing_ready()

    def t_nothing_ready(self) -> None:
        if self.blocking:
            self.t_sleep()
        else:
            self.t_loop()  # epoll_wait returned 0

    def t_busy_poll(self, _ev: Optional[Timeout] = None) -> None:
        """ep_busy_loop -> napi_busy_loop: poll, spin, poll ... until something
        is ready or busy_poll_usecs passed; then busy_poll_stop's final poll."""
        self.poll(self.busy_poll_budget, 0, self.t_busy_polled)

    def t_busy_polled(self, _ev: Timeout) -> None:
        self.deliver()
        if self.ready or self.env.now - self.busy_start >= self.busy_poll_ns:
            self.poll(self.busy_poll_budget, 0, self.t_busy_stopped)
        else:
            self.run(BUSY_POLL_ITERATION_NS, self.t_busy_poll)

    def t_busy_stopped(self, _ev: Timeout) -> None:
        self.deliver()
        if self.ready:
            self.t_events()
        else:
            self.t_nothing_ready()

    def t_events(self) -> None:
        n = len(self.ready)
        if n > MAXEVENTS:
            n = MAXEVENTS
        self.batch = n
        self.run(n * EPOLL_EVENT_CYCLES / FREQ_GHZ, self.t_serve)

    def t_serve(self, _ev: Optional[Timeout]) -> None:
        """The next request of the batch: read, service and sendmsg."""
        conn = self.serving = self.ready.popleft()
        cycles = REQUEST_CYCLES + self.rng.expovariate(SERVICE_RATE) + SEND_CYCLES_PER_64B * (conn.reply_bytes // 64)
        self.run(cycles / FREQ_GHZ, self.t_served)

    def t_served(self, _ev: Timeout) -> None:
        """sendmsg's end: the reply leaves; its TX descriptor completes after the DMA."""
        env = self.env
        Timeout(env, WIRE_NS).callbacks.append(self.serving.reply_arrives)
        Timeout(env, DMA_NS).callbacks.append(self.tx_done)
        self.batch -= 1
        if self.batch:
            self.t_serve(None)
        else:
            self.t_loop()

    def t_sleep(self) -> None:
        """Block in epoll_wait until a delivery wakes the thread."""
        self.sleeping = True
        self.c.context_switches += 1  # to the idle task (free)
        self.release()

    def t_switch_in(self) -> None:
        self.c.context_switches += 1  # back to the thread (paid)
        self.run(CONTEXT_SWITCH_NS, self.t_switched_in)

    def t_switched_in(self, _ev: Timeout) -> None:
        if self.ready:
            self.t_events()
        else:
            self.t_sleep()


def run(profile: str, duration_s: float, seed: int = 1) -> dict[str, Any]:
    """Simulate ``duration_s`` seconds of the thesis scenario under ``profile``."""
    base.check_run(profile, duration_s)
    rng = random.Random(seed)
    env = simpy.Environment()
    counters = Counters()
    cores = [Core(env, PROFILES[profile], rng, counters) for _ in range(CORES)]
    for i in range(CONNECTIONS):
        conn = Connection(env, cores[i % CORES], rng, counters)  # RSS: flow i -> queue i mod 8
        # irqlab staggers the first sends over 10 us; then wire and DMA.
        Timeout(env, i * 10_000 / CONNECTIONS + WIRE_DMA_NS).callbacks.append(conn.request_arrives)
    wall = time.perf_counter()
    env.run(until=duration_s * 1e9)
    wall_s = time.perf_counter() - wall
    return base.summary(profile, duration_s, seed, wall_s, counters.as_dict(), cores, "callbacks")


def main(argv: Optional[list[str]] = None) -> int:
    return base.main(argv, simulate=run, doc=__doc__)


if __name__ == "__main__":
    sys.exit(main())
