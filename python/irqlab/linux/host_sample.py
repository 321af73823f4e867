"""What a policy sees on a real host: the simulator's sample
(:mod:`irqlab.policy`), field for field, read from the kernel.

=========================  ====================================================
``time_ns``                the call's time since the controller started: its
                           period's multiple (0 at the first call), as in the
                           simulator; the sample is read when that time comes
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
                           ``packets``, ``bytes``, ``tx_packets``, ``tx_bytes``,
                           ``ring_packets`` and ``drops``
                           (None: irqlab does not read per-queue statistics yet), ``rx_usecs`` and ``rx_frames`` (the device's
                           coalescing, None where it has none),
                           ``itr_interval_ns`` (None)
``napis``                  per NAPI: ``defer_hard_irqs``, ``gro_flush_timeout_ns``,
                           ``irq_suspend_timeout_ns`` (``napi-get``)
``cores``                  per CPU: ``user_ns``, ``system_ns``, ``softirq_ns``,
                           ``irq_ns``, ``idle_ns`` (``/proc/stat``, in ticks of
                           ``USER_HZ``: 10 ms steps at 100 Hz)
``busy_poll_usecs``        ``[N]`` from ``--control FILE``, else ``[]``
``threads``                ``[]``: the application's batches are its own
=========================  ====================================================

Counters count since boot (differences are what a policy wants, as in the
simulator, whose count from the run's start).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass(frozen=True)
class HostSample:
    time_ns: int
    measuring: bool
    packets: int
    packets_busy_polled: Optional[int]
    hard_irqs: int
    softirq_rounds: Optional[int]
    watchdog_fires: Optional[int] = None
    requests_completed: Optional[int] = None
    latency_sum_ns: Optional[int] = None
    queues: list[dict[str, Any]] = field(default_factory=list)
    napis: list[dict[str, Any]] = field(default_factory=list)
    cores: list[dict[str, int]] = field(default_factory=list)
    busy_poll_usecs: list[int] = field(default_factory=list)
    threads: list[dict[str, int]] = field(default_factory=list)


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def irq_counts(irqs: set[int], text: Optional[str] = None) -> dict[int, int]:
    """Each IRQ's count over every CPU, from ``/proc/interrupts``."""
    text = _read("/proc/interrupts") if text is None else text
    out: dict[int, int] = {}
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


def host_sample(dev: str, shown: dict[str, Any], time_ns: int, busy_poll_usecs: Optional[int]) -> HostSample:
    """The sample of ``dev`` now, for the call at ``time_ns``; ``shown`` is
    ``irqlab linux show``'s report."""
    napis = shown.get("napis") or []
    irqs = {n["irq"] for n in napis if n.get("irq") is not None}
    counts = irq_counts(irqs)
    co = shown.get("coalesce") or {}
    packets = _read(f"/sys/class/net/{dev}/statistics/rx_packets")
    return HostSample(
        time_ns=time_ns,
        measuring=True,
        packets=int(packets) if packets and packets.strip().isdigit() else 0,
        packets_busy_polled=busy_poll_rx_packets(),
        hard_irqs=sum(counts.values()),
        softirq_rounds=net_rx_softirqs(),
        queues=[
            {
                "irqs": counts.get(n["irq"]) if n.get("irq") is not None else None,
                "packets": None,
                "bytes": None,
                "tx_packets": None,
                "tx_bytes": None,
                "ring_packets": None,
                "drops": None,
                "rx_usecs": co.get("rx-usecs"),
                "rx_frames": co.get("rx-frames"),
                "itr_interval_ns": None,
            }
            for n in napis
        ],
        napis=[
            {
                "defer_hard_irqs": n.get("defer_hard_irqs"),
                "gro_flush_timeout_ns": n.get("gro_flush_timeout"),
                "irq_suspend_timeout_ns": n.get("irq_suspend_timeout"),
            }
            for n in napis
        ],
        cores=core_times(),
        busy_poll_usecs=[] if busy_poll_usecs is None else [busy_poll_usecs],
    )
