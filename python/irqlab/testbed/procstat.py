"""Per-core CPU accounting from ``/proc/stat``, NET_RX softirq counts from
``/proc/softirqs``, a thread's context switches from ``/proc/PID/status``
and every process's CPU time from ``/proc/PID/stat`` (to notice other
programs competing for the testbed's two cores)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

# /proc/stat columns after "cpuN": user nice system idle iowait irq softirq steal guest guest_nice
_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")

#: Clock ticks per second of /proc/PID/stat's utime and stime.
CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass
class CoreSample:
    ticks: dict[str, int]
    net_rx: int
    napi_switches: int
    #: The NAPI thread's CPU time, ns (the scheduler's, /proc/PID/schedstat):
    #: the server's own receive.
    napi_ns: int
    #: Rescheduling and function-call IPIs the core took (/proc/interrupts
    #: RES + CAL): a remote wake-up of a thread on it is one of them.
    ipis: int


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


def ipi_count(core: int) -> int:
    """RES + CAL interrupts of ``core`` so far (0 if the rows are missing)."""
    total = 0
    for line in Path("/proc/interrupts").read_text().splitlines():
        parts = line.split()
        if parts and parts[0] in ("RES:", "CAL:") and len(parts) > 1 + core:
            total += int(parts[1 + core])
    return total


def switches(pid: int | str) -> tuple[int, int]:
    """``(voluntary, involuntary)`` context switches of task ``pid`` (a
    thread id works: ``/proc/TID/status``), (0, 0) if it is gone."""
    vol = invol = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches"):
                vol = int(line.split()[1])
            elif line.startswith("nonvoluntary_ctxt_switches"):
                invol = int(line.split()[1])
    except OSError:
        pass
    return vol, invol


def threads(pids: set[int]) -> Iterator[tuple[Path, str]]:
    """Each thread of ``pids`` as its ``/proc/PID/task/TID`` directory and
    its name; a process or thread that is gone is left out."""
    for pid in pids:
        try:
            tasks = list(Path(f"/proc/{pid}/task").iterdir())
        except OSError:
            continue
        for t in tasks:
            try:
                yield t, (t / "comm").read_text().strip()
            except OSError:
                continue


def worker_threads(pids: set[int], prefix: str = "mc-worker") -> list[int]:
    """The thread ids of ``pids``' threads whose name starts with ``prefix``
    (memcached's event-loop threads)."""
    return sorted(int(t.name) for t, comm in threads(pids) if comm.startswith(prefix))


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


def task_runtime_ns(pid: int | None) -> int:
    """The time ``pid`` has run, ns, from ``/proc/PID/schedstat`` (the
    scheduler's clock: exact, where ``/proc/PID/stat``'s ticks are sampled
    at the timer tick and overcount a thread the tick's own timer wakes).
    0 if unknown or gone."""
    if pid is None:
        return 0
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def all_task_ticks() -> dict[int, tuple[str, int, int]]:
    """Every process's ``(comm, utime + stime, start time)`` (its threads'
    time summed). The start time tells a reused PID apart; the comm is not
    an identity (a kworker's names the work queue it serves now)."""
    out: dict[int, tuple[str, int, int]] = {}
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        f = _stat_fields(p.name)
        if f:
            # starttime is field 22 of the line, index 19 after comm.
            out[int(p.name)] = (f[0], int(f[1][11]) + int(f[1][12]), int(f[1][19]))
    return out


#: Kernel threads that do the testbed's own work (softirqs handed over,
#: the veth's NAPI thread): never counted as interference.
OWN_KERNEL_THREADS = ("ksoftirqd/", "napi/")


#: Which other processes a measurement names: every one that used at least
#: this much of a core (a fifth of the default flagging threshold, 5 %), up
#: to TOP_MAX of them. More than the largest three, so that on a busy machine
#: each significant disturber is named, not only the busiest.
TOP_MIN_PCT = 1.0
TOP_MAX = 8


def other_cpu(a: dict[int, tuple[str, int, int]], b: dict[int, tuple[str, int, int]], own: set[int],
              seconds: float) -> tuple[float, list[tuple[str, int, float]]]:
    """CPU used between two :func:`all_task_ticks` samples by processes that
    are not the testbed's (``own``, its kernel threads), as a percentage of
    one core, and the users of at least :data:`TOP_MIN_PCT` % of a core,
    largest first, at most :data:`TOP_MAX` of them ``(comm, pid, percent)``.
    A process started between the samples counts with all its time; one that
    ended between them is not seen."""
    used: list[tuple[str, int, float]] = []
    for pid, (comm, ticks, start) in b.items():
        if pid in own or comm.startswith(OWN_KERNEL_THREADS):
            continue
        before = a.get(pid)
        delta = ticks - (before[1] if before and before[2] == start else 0)
        if delta > 0:
            used.append((comm, pid, 100.0 * delta / CLK_TCK / max(seconds, 1e-9)))
    used.sort(key=lambda x: -x[2])
    return sum(u[2] for u in used), [u for u in used if u[2] >= TOP_MIN_PCT][:TOP_MAX]


def sample(core: int, napi_pid: int | None) -> CoreSample:
    return CoreSample(cpu_ticks(core), net_rx_count(core), thread_switches(napi_pid), task_runtime_ns(napi_pid),
                      ipi_count(core))


def breakdown(a: CoreSample, b: CoreSample, seconds: float) -> dict[str, float]:
    """CPU percentages (user, system, softirq, irq, idle) of the core between
    two samples, its busy time from the exact clocks (``busy_exact``: the
    elapsed ``seconds`` less idle, iowait and steal), NET_RX softirqs per
    second, NAPI-thread wake-ups per second and the NAPI thread's CPU
    (percent of the core).

    On the testbed the server's own receive runs in the NAPI thread (system
    time, no NET_RX softirq); the NET_RX softirqs of the server core are the
    client's receive (veth delivers each reply to the backlog of the CPU
    that sent it), so ``net_rx_per_s`` and ``softirq`` are the client's."""
    d = {k: b.ticks[k] - a.ticks[k] for k in _FIELDS}
    total = sum(d.values()) or 1
    pct = lambda *ks: 100.0 * sum(d[k] for k in ks) / total  # noqa: E731
    # The busy columns are samples of the scheduler tick, which cannot
    # land inside a VM exit: in a guest they miss the exits' time (a loop
    # of 20 us sleeps on this project's KVM guest: 47 % busy by the
    # thread's clock, 10 of 200 ticks sampled busy, the columns summing to
    # 105 of 200). Idle (under NO_HZ the idle loop's own clock) and steal
    # are exact: the elapsed time less them is the core's busy time.
    not_busy_s = (d["idle"] + d["iowait"] + d["steal"]) / CLK_TCK
    busy_exact = 100.0 * (1.0 - not_busy_s / seconds) if seconds > 0 else 0.0
    return {
        "busy_exact": min(100.0, max(0.0, busy_exact)),
        "user": pct("user", "nice"),
        "system": pct("system"),
        "softirq": pct("softirq"),
        "irq": pct("irq"),
        "idle": pct("idle", "iowait", "steal"),
        "net_rx_per_s": (b.net_rx - a.net_rx) / seconds,
        "napi_wakeups_per_s": (b.napi_switches - a.napi_switches) / seconds,
        "napi_thread_pct": 100.0 * (b.napi_ns - a.napi_ns) / 1e9 / max(seconds, 1e-9),
        "ipis_per_s": (b.ipis - a.ipis) / seconds,
    }
