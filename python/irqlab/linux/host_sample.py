"""What a policy sees on a real host: the simulator's sample
(:mod:`irqlab.policy`), field for field, read from the kernel.

=========================  ====================================================
``time_ns``                the call's time since the controller started: its
                           period's multiple (0 at the first call), as in the
                           simulator; each field is read when the policy
                           first reads it in that call (below)
``measuring``              always True (a real host has no warm-up)
``packets``                the device's ``rx_packets`` (``/sys/class/net/DEV/statistics``)
``packets_busy_polled``    ``TcpExt: BusyPollRxPackets`` (``/proc/net/netstat``,
                           ``LINUX_MIB_BUSYPOLLRXPACKETS``): the host's, every device
``hard_irqs``              the device's NAPIs' IRQs summed over every CPU
                           (``/proc/interrupts``); 0 for a device without IRQs (veth)
``softirq_rounds``         ``NET_RX`` over every CPU (``/proc/softirqs``): the host's
``watchdog_fires``         None: the kernel counts no NAPI watchdog expiry
``requests_completed``,    None: the application's, which the kernel does not see
``latency_sum_ns``
``queues``                 per NAPI of the device (its order in ``irqlab linux
                           show``): ``irqs`` (its IRQ's count, None without one),
                           ``packets`` and ``bytes`` (its RX queues'
                           ``rx-packets``, ``rx-bytes``), ``tx_packets`` and
                           ``tx_bytes`` (its TX queues'), ``drops`` (its RX
                           queues' ``rx-hw-drops``): netdev ``qstats-get``
                           summed over the queues ``queue-get`` links to the
                           NAPI; None where the driver keeps no per-queue
                           statistics (veth, loopback) or a counter; and
                           ``ring_packets`` (None: the kernel does not show
                           a ring's occupancy), ``rx_usecs`` and
                           ``rx_frames`` (the device's coalescing, None
                           where it has none), ``itr_interval_ns`` (None)
``napis``                  per NAPI: ``defer_hard_irqs``, ``gro_flush_timeout_ns``,
                           ``irq_suspend_timeout_ns`` (``napi-get``)
``cores``                  per CPU: ``user_ns``, ``system_ns``, ``softirq_ns``,
                           ``irq_ns``, ``idle_ns`` (``/proc/stat``, in ticks of
                           ``USER_HZ``: 10 ms steps at 100 Hz)
``busy_poll_usecs``        ``[N]`` from ``--control FILE``, else ``[]``
``rps_cpus``               the device's first RX queue's RPS mask
                           (``/sys/class/net/DEV/queues/rx-0/rps_cpus``; 0: RPS
                           off), None without it
``rps_ipis``               None: the kernel counts no RPS IPI apart (they are
                           in ``/proc/interrupts``'s CAL line with the others)
``threads``                with ``--shim-stats FILE``, the file of a program run
                           under the preload shim with ``IRQLAB_STATS=FILE``
                           (``irqlab linux exec --shim-stats FILE``): one entry
                           for the whole program, ``batches`` and ``batch_ns``
                           (since it started) and ``batch_max_ns``, the longest
                           batch that ended since the previous call known only
                           to its power of two, rounded up (0: none); ``[]``
                           without the option or while the file is missing
=========================  ====================================================

Counters count since boot (differences are what a policy wants, as in the
simulator, whose count from the run's start).

A batch is the simulator's: from an epoll wait returning events to the
same thread's next wait, the time ``irq-suspend-timeout`` should cover
(Documentation/networking/napi.rst: "large enough to cover the processing
of an entire application batch"). The shim (``crates/irqlab-preload``,
``stats.rs``) writes, at most every 20 ms, one line
``irqlab-stats v1 batches=N batch_ns=S hist=c0,...,c63``: bucket ``i``
counts the batches of ``[2^i, 2^(i+1))`` ns (bucket 0 also 0 and 1 ns).
So on a real host the program's threads are summed into one entry, and its
longest batch since the previous call is the upper edge of the highest
bucket that grew, ``2^(i+1)`` ns: up to twice the true length. Since the
file changes only every 20 ms, a policy called more often sees ``0`` in
most calls and the 20 ms's longest in one.
"""

from __future__ import annotations

import os
import stat
from functools import cached_property
from typing import Any, Callable, Optional


class HostSample:
    """One call's sample. The fields a kernel file or a netlink request
    gives (``packets_busy_polled``, ``hard_irqs``, ``softirq_rounds``,
    ``queues``, ``napis``, ``cores``, ``rps_cpus``) are read when the policy first
    reads them in its call, and kept for the call: a policy pays only for
    what it looks at (``/proc/net/netstat`` alone takes about 0.2 ms to
    read here). The others are read before the call."""

    watchdog_fires: Optional[int] = None
    requests_completed: Optional[int] = None
    latency_sum_ns: Optional[int] = None
    rps_ipis: Optional[int] = None

    def __init__(self, dev: str, shown: Callable[[], dict[str, Any]], time_ns: int, busy_poll_usecs: list[int],
                 threads: list[dict[str, int]], qstats: bool) -> None:
        self._dev = dev
        self._show = shown
        self._qstats = qstats
        self.time_ns = time_ns
        self.measuring = True
        packets = _read(f"/sys/class/net/{dev}/statistics/rx_packets")
        self.packets = int(packets) if packets and packets.strip().isdigit() else 0
        self.busy_poll_usecs = busy_poll_usecs
        self.threads = threads

    @cached_property
    def _shown(self) -> dict[str, Any]:
        return self._show()

    @cached_property
    def napis(self) -> list[dict[str, Any]]:
        return [
            {
                "defer_hard_irqs": n.get("defer_hard_irqs"),
                "gro_flush_timeout_ns": n.get("gro_flush_timeout"),
                "irq_suspend_timeout_ns": n.get("irq_suspend_timeout"),
            }
            for n in self._shown.get("napis") or []
        ]

    @cached_property
    def _irq_counts(self) -> dict[int, int]:
        napis = self._shown.get("napis") or []
        return irq_counts({n["irq"] for n in napis if n.get("irq") is not None})

    @cached_property
    def packets_busy_polled(self) -> Optional[int]:
        return busy_poll_rx_packets()

    @cached_property
    def hard_irqs(self) -> int:
        return sum(self._irq_counts.values())

    @cached_property
    def softirq_rounds(self) -> Optional[int]:
        return net_rx_softirqs()

    @cached_property
    def cores(self) -> list[dict[str, int]]:
        return core_times()

    @cached_property
    def rps_cpus(self) -> Optional[int]:
        return rps_mask(_read(rps_path(self._dev, 0)))

    @cached_property
    def queues(self) -> list[dict[str, Any]]:
        from irqlab.linux.qstats import queue_stats

        try:
            stats = queue_stats(self._dev) if self._qstats else None
        except Exception:  # the device went away between two reads: no counters this call
            stats = None
        counts = self._irq_counts
        co = self._shown.get("coalesce") or {}
        return [
            {
                "irqs": counts.get(n["irq"]) if n.get("irq") is not None else None,
                **queue_counters(n, stats),
                "ring_packets": None,
                "rx_usecs": co.get("rx-usecs"),
                "rx_frames": co.get("rx-frames"),
                "itr_interval_ns": None,
            }
            for n in self._shown.get("napis") or []
        ]

    def __repr__(self) -> str:
        return f"HostSample(time_ns={self.time_ns}, packets={self.packets}, {len(self.napis)} NAPIs)"


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def irq_counts(irqs: set[int], text: Optional[str] = None) -> dict[int, int]:
    """Each IRQ's count over every CPU, from ``/proc/interrupts`` (not read
    for no IRQ: a veth's NAPIs have none)."""
    out: dict[int, int] = {}
    if not irqs:
        return out
    text = _read("/proc/interrupts") if text is None else text
    if not text:
        return out
    lines = text.splitlines()
    ncpu = len(lines[0].split()) if lines else 0
    for line in lines[1:]:
        head, _, rest = line.partition(":")
        if not head.strip().isdigit() or int(head) not in irqs:
            continue
        out[int(head)] = sum(int(x) for x in rest.split()[:ncpu] if x.isdigit())
    return out


def net_rx_softirqs(text: Optional[str] = None) -> Optional[int]:
    """``NET_RX`` over every CPU (``/proc/softirqs``)."""
    text = _read("/proc/softirqs") if text is None else text
    for line in (text or "").splitlines():
        name, _, rest = line.partition(":")
        if name.strip() == "NET_RX":
            return sum(int(x) for x in rest.split() if x.isdigit())
    return None


def busy_poll_rx_packets(text: Optional[str] = None) -> Optional[int]:
    """``TcpExt: BusyPollRxPackets`` (``/proc/net/netstat``)."""
    text = _read("/proc/net/netstat") if text is None else text
    lines = (text or "").splitlines()
    for names, values in zip(lines, lines[1:]):
        if names.startswith("TcpExt:") and values.startswith("TcpExt:"):
            table = dict(zip(names.split()[1:], values.split()[1:]))
            v = table.get("BusyPollRxPackets")
            return int(v) if v is not None and v.isdigit() else None
    return None


#: ``/proc/stat``'s columns (user nice system idle iowait irq softirq ...).
_STAT = ("user", "nice", "system", "idle", "iowait", "irq", "softirq")


def core_times(text: Optional[str] = None) -> list[dict[str, int]]:
    """Each CPU's time by class, ns (``/proc/stat``; nice with user, iowait with idle)."""
    text = _read("/proc/stat") if text is None else text
    tick_ns = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    out = []
    for line in (text or "").splitlines():
        parts = line.split()
        if not parts or not parts[0].startswith("cpu") or parts[0] == "cpu":
            continue
        v = dict(zip(_STAT, (int(x) for x in parts[1:8])))
        out.append({
            "user_ns": (v.get("user", 0) + v.get("nice", 0)) * tick_ns,
            "system_ns": v.get("system", 0) * tick_ns,
            "softirq_ns": v.get("softirq", 0) * tick_ns,
            "irq_ns": v.get("irq", 0) * tick_ns,
            "idle_ns": (v.get("idle", 0) + v.get("iowait", 0)) * tick_ns,
        })
    return out


#: The shim's histogram: one bucket per power of two of a 64-bit ns count.
STATS_BUCKETS = 64
_STATS_MAGIC = ("irqlab-stats", "v1")
#: Read at most this much of the file (its line is at most 1424 bytes).
_STATS_READ_MAX = 4096


def shim_stats(text: Optional[str]) -> Optional[dict[str, Any]]:
    """The shim's line as ``{"batches": N, "batch_ns": S, "hist": [64
    counts]}``; None for anything else (a missing file, another format, a
    count that is not the buckets' sum)."""
    if not text or not text.endswith("\n") or text.count("\n") != 1:
        return None
    parts = text[:-1].split(" ")
    if len(parts) != 5 or tuple(parts[:2]) != _STATS_MAGIC:
        return None
    fields = {}
    for part, name in zip(parts[2:], ("batches", "batch_ns", "hist")):
        key, eq, value = part.partition("=")
        if key != name or not eq:
            return None
        fields[name] = value
    numbers = [fields["batches"], fields["batch_ns"], *fields["hist"].split(",")]
    if not all(n.isascii() and n.isdigit() and len(n) <= 20 and int(n) < 1 << 64 for n in numbers):
        return None
    batches, batch_ns, *hist = (int(n) for n in numbers)
    if len(hist) != STATS_BUCKETS or sum(hist) != batches:
        return None
    return {"batches": batches, "batch_ns": batch_ns, "hist": hist}


def read_shim_stats(path: str) -> Optional[dict[str, Any]]:
    """The shim's stats file, parsed; None when it is missing, is not a
    regular file (a FIFO is never waited on) or holds no valid line."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, _STATS_READ_MAX)
    except OSError:
        return None
    finally:
        os.close(fd)
    return shim_stats(data.decode("ascii", errors="replace"))


def shim_threads(current: Optional[dict[str, Any]], previous: Optional[dict[str, Any]]) -> list[dict[str, int]]:
    """The sample's ``threads`` from two successive readings of the stats
    file (:func:`shim_stats`): ``[]`` without a current one, else one entry
    for the whole program. ``batch_max_ns`` is ``2^(i+1)`` for the highest
    bucket ``i`` whose count grew since ``previous`` (0: none); against no
    previous reading, or one with more batches (the program started again),
    every batch counted is new."""
    if current is None:
        return []
    if previous is None or previous["batches"] > current["batches"]:
        before = [0] * STATS_BUCKETS
    else:
        before = previous["hist"]
    grew = [i for i, (now, then) in enumerate(zip(current["hist"], before)) if now > then]
    return [{
        "batches": current["batches"],
        "batch_ns": current["batch_ns"],
        "batch_max_ns": 1 << (grew[-1] + 1) if grew else 0,
    }]


class ShimStats:
    """The shim's stats file read at each call, with the previous reading
    kept: :meth:`threads` is the sample's ``threads`` (:func:`shim_threads`).
    A call that finds no valid line gives ``[]`` and keeps the reading
    before it, so that the next call compares with that."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.previous: Optional[dict[str, Any]] = None

    def threads(self) -> list[dict[str, int]]:
        current = read_shim_stats(self.path)
        out = shim_threads(current, self.previous)
        if current is not None:
            self.previous = current
        return out


def queue_counters(napi: dict[str, Any], qstats: Optional[list[dict[str, Any]]]) -> dict[str, Optional[int]]:
    """A NAPI's ``packets``, ``bytes``, ``tx_packets``, ``tx_bytes`` and
    ``drops``: ``qstats`` (:func:`irqlab.linux.qstats.queue_stats`) summed
    over the RX and TX queues ``irqlab linux show`` links to it; None for a
    counter no such queue has."""
    linked = napi.get("queues") or {}

    def total(kind: str, counter: str) -> Optional[int]:
        ids = set(linked.get(kind) or [])
        values = [q[counter] for q in qstats or [] if q["queue_type"] == kind and q["queue_id"] in ids
                  and q.get(counter) is not None]
        return sum(values) if values else None

    return {"packets": total("rx", "rx_packets"), "bytes": total("rx", "rx_bytes"),
            "tx_packets": total("tx", "tx_packets"), "tx_bytes": total("tx", "tx_bytes"),
            "drops": total("rx", "rx_hw_drops")}


def rps_mask(text: Optional[str]) -> Optional[int]:
    """An ``rps_cpus`` file's mask (hex words, comma-separated from the
    highest: ``show_rps_map``'s ``cpumask_scnprintf``); None if unreadable."""
    if text is None:
        return None
    digits = text.strip().replace(",", "")
    try:
        return int(digits, 16) if digits else None
    except ValueError:
        return None


def rps_path(dev: str, queue: int) -> str:
    return f"/sys/class/net/{dev}/queues/rx-{queue}/rps_cpus"


def has_queue_stats(dev: str) -> bool:
    """Whether ``dev``'s driver keeps per-queue statistics (``qstats-get``
    answers): asked once by the controller, so that a device without them
    (veth) costs no netlink round trip per call."""
    from irqlab.linux.qstats import queue_stats

    try:
        return queue_stats(dev) is not None
    except Exception:  # the device's own error comes from the controller's next read
        return False


def host_sample(dev: str, shown: Callable[[], dict[str, Any]], time_ns: int, busy_poll_usecs: Optional[int],
                stats: Optional[ShimStats] = None, qstats: bool = True) -> HostSample:
    """The sample of ``dev`` now, for the call at ``time_ns``; ``shown``
    gives ``irqlab linux show``'s report (asked when a field needs it); ``stats``, the shim's stats file (the
    sample's ``threads``, read at every call so that its longest batch is
    the one since the previous call); ``qstats``, whether to ask for
    per-queue statistics (:func:`has_queue_stats`)."""
    return HostSample(dev, shown, time_ns, [] if busy_poll_usecs is None else [busy_poll_usecs],
                      [] if stats is None else stats.threads(), qstats)
