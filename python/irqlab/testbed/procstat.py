"""Per-core CPU accounting from ``/proc/stat``, NET_RX softirq counts from
``/proc/softirqs`` and a thread's context switches from ``/proc/PID/status``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# /proc/stat columns after "cpuN": user nice system idle iowait irq softirq steal guest guest_nice
_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


@dataclass
class CoreSample:
    ticks: dict[str, int]
    net_rx: int
    napi_switches: int


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


def sample(core: int, napi_pid: int | None) -> CoreSample:
    return CoreSample(cpu_ticks(core), net_rx_count(core), thread_switches(napi_pid))


def breakdown(a: CoreSample, b: CoreSample, seconds: float) -> dict[str, float]:
    """CPU percentages (user, system, softirq, irq, idle) of the core between
    two samples, NET_RX softirqs per second and NAPI-thread wake-ups per second."""
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
    }
