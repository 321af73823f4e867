"""Per-core CPU accounting from ``/proc/stat``, NET_RX softirq counts from
``/proc/softirqs``, a thread's context switches from ``/proc/PID/status``
and every process's CPU time from ``/proc/PID/stat`` (to notice other
programs competing for the testbed's two cores)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# /proc/stat columns after "cpuN": user nice system idle iowait irq softirq steal guest guest_nice
_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")

#: Clock ticks per second of /proc/PID/stat's utime and stime.
CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass
class CoreSample:
    ticks: dict[str, int]
    net_rx: int
    napi_switches: int
    #: The NAPI thread's CPU ticks (utime + stime): the server's own receive.
    napi_ticks: int


def cpu_ticks(core: int) -> dict[str, int]:
    for line in Path("/proc/stat").read_text().splitlines():
        parts = line.split()
        if parts and parts[0] == f"cpu{core}":
            return {name: int(v) for name, v in zip(_FIELDS, parts[1:])}
    raise RuntimeError(f"/proc/stat has no line for cpu{core}")


def net_rx_count(core: int) -> int:
    lines = Path("/proc/softirqs").read_text().splitlines()
    for line in lines[1:]:
        parts = line.split()
        if parts and parts[0] == "NET_RX:":
            return int(parts[1 + core])
    raise RuntimeError("/proc/softirqs has no NET_RX row")


def thread_switches(pid: int | None) -> int:
    """Voluntary + involuntary context switches of `pid` (0 if unknown):
    every wake-up of a sleeping NAPI thread is one voluntary switch."""
    if pid is None:
        return 0
    total = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                total += int(line.split()[1])
    except OSError:
        return 0
    return total


def _stat_fields(pid: int | str) -> tuple[str, list[str]] | None:
    """``(comm, fields after comm)`` of /proc/PID/stat, or None if it is gone.
    comm may hold spaces and parentheses: it ends at the last ')'."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    open_, close = text.find("("), text.rfind(")")
    if open_ < 0 or close < 0:
        return None
    return text[open_ + 1 : close], text[close + 2 :].split()


def task_ticks(pid: int | None) -> int:
    """utime + stime of `pid` in clock ticks (0 if unknown or gone)."""
    if pid is None:
        return 0
    f = _stat_fields(pid)
    # After comm: state(0) ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime(11) stime(12)
    return int(f[1][11]) + int(f[1][12]) if f else 0


def all_task_ticks() -> dict[int, tuple[str, int]]:
    """Every process's ``(comm, utime + stime)`` (its threads' summed)."""
    out: dict[int, tuple[str, int]] = {}
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        f = _stat_fields(p.name)
        if f:
            out[int(p.name)] = (f[0], int(f[1][11]) + int(f[1][12]))
    return out


#: Kernel threads that do the testbed's own work (softirqs handed over,
#: the veth's NAPI thread): never counted as interference.
OWN_KERNEL_THREADS = ("ksoftirqd/", "napi/")


def other_cpu(a: dict[int, tuple[str, int]], b: dict[int, tuple[str, int]], own: set[int],
              seconds: float) -> tuple[float, list[tuple[str, int, float]]]:
    """CPU used between two :func:`all_task_ticks` samples by processes that
    are not the testbed's (``own``, its kernel threads), as a percentage of
    one core, and the three largest users ``(comm, pid, percent)``. A
    process started between the samples counts with all its time; one that
    ended between them is not seen."""
    used: list[tuple[str, int, float]] = []
    for pid, (comm, ticks) in b.items():
        if pid in own or comm.startswith(OWN_KERNEL_THREADS):
            continue
        before = a.get(pid)
        delta = ticks - (before[1] if before and before[0] == comm else 0)
        if delta > 0:
            used.append((comm, pid, 100.0 * delta / CLK_TCK / max(seconds, 1e-9)))
    used.sort(key=lambda x: -x[2])
    return sum(u[2] for u in used), used[:3]


def sample(core: int, napi_pid: int | None) -> CoreSample:
    return CoreSample(cpu_ticks(core), net_rx_count(core), thread_switches(napi_pid), task_ticks(napi_pid))


def breakdown(a: CoreSample, b: CoreSample, seconds: float) -> dict[str, float]:
    """CPU percentages (user, system, softirq, irq, idle) of the core between
    two samples, NET_RX softirqs per second, NAPI-thread wake-ups per second
    and the NAPI thread's CPU (percent of the core).

    On the testbed the server's own receive runs in the NAPI thread (system
    time, no NET_RX softirq); the NET_RX softirqs of the server core are the
    client's receive (veth delivers each reply to the backlog of the CPU
    that sent it), so ``net_rx_per_s`` and ``softirq`` are the client's."""
    d = {k: b.ticks[k] - a.ticks[k] for k in _FIELDS}
    total = sum(d.values()) or 1
    pct = lambda *ks: 100.0 * sum(d[k] for k in ks) / total  # noqa: E731
    return {
        "user": pct("user", "nice"),
        "system": pct("system"),
        "softirq": pct("softirq"),
        "irq": pct("irq"),
        "idle": pct("idle", "iowait", "steal"),
        "net_rx_per_s": (b.net_rx - a.net_rx) / seconds,
        "napi_wakeups_per_s": (b.napi_switches - a.napi_switches) / seconds,
        "napi_thread_pct": 100.0 * (b.napi_ticks - a.napi_ticks) / CLK_TCK / max(seconds, 1e-9),
    }
