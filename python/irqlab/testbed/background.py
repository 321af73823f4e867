"""memcached's own background threads on the server core, measured, and
carried into the testbed's scenario (``app.background_wakeups_per_s``,
``app.background_wakeup_cycles``).

memcached 1.6 runs, beside its event-loop thread (``mc-worker``), an LRU
maintainer (``mc-lrumaint``, ``lru_maintainer_thread`` in items.c) that
loops over ``usleep``\\ s whose length its per-slab-class back-off sets: a
few hundred microseconds while gets keep moving items between its LRUs,
up to a second when nothing moves. Traced on the 2-vCPU KVM guest of
docs/calibration.md it woke 3,000–3,800 times a second at every load from
5,000 requests a second to the closed loop, each wake-up a timer's, and
took 4–10 % of the server core. Every ``usleep`` arms an hrtimer, which in
a VM is an exit: each wake-up costs the core ~15–25 µs.

:func:`measure` reads the threads' scheduler counters
(``/proc/PID/task/TID/schedstat``: time run, turns on the CPU) around one
second of gets at the testbed's low rate, before the profiles are measured
(``irqlab testbed run``'s server probe): what the threads do under load is
an input of the prediction, like the machine's probe, and their effect on
throughput, CPU and latency is the prediction's. :func:`overrides` turns
it into the scenario's two fields: the wake-ups per second of all of them,
and each wake-up's cost, the threads' own CPU per turn (their work, and
the ``usleep``'s system call and timer arming they pay on their own clock).
"""

from __future__ import annotations

from typing import Any, Optional

from irqlab.testbed.procstat import threads

#: memcached's event-loop threads: the server's own work, not background.
WORKER_PREFIX = "mc-worker"


def counters(pids: set[int]) -> dict[str, tuple[int, int]]:
    """``{thread name: (turns on the CPU, ns run)}`` of the background
    threads of ``pids`` (memcached's threads named ``mc-*`` other than its
    event loops); threads of one name are summed."""
    out: dict[str, tuple[int, int]] = {}
    for t, comm in threads(pids):
        if not comm.startswith("mc-") or comm.startswith(WORKER_PREFIX):
            continue
        try:
            run_ns, _wait_ns, turns = (int(x) for x in (t / "schedstat").read_text().split()[:3])
        except (OSError, ValueError):
            continue
        a, b = out.get(comm, (0, 0))
        out[comm] = (a + turns, b + run_ns)
    return out


def rates(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]], seconds: float) -> dict[str, Any]:
    """Per thread and in all, wake-ups per second and CPU ns per wake-up
    between two :func:`counters` samples ``seconds`` apart."""
    threads: dict[str, dict[str, float]] = {}
    total_turns = total_ns = 0
    for comm, (turns, ns) in after.items():
        t0, n0 = before.get(comm, (0, 0))
        dt, dn = max(0, turns - t0), max(0, ns - n0)
        total_turns += dt
        total_ns += dn
        if dt:
            threads[comm] = {"wakeups_per_s": dt / seconds, "cpu_ns_per_wakeup": dn / dt}
    return {
        "wakeups_per_s": total_turns / seconds if seconds > 0 else 0.0,
        "cpu_ns_per_wakeup": total_ns / total_turns if total_turns else 0.0,
        "cpu_pct": 100.0 * total_ns / (seconds * 1e9) if seconds > 0 else 0.0,
        "threads": threads,
    }


def overrides(server_probe: Optional[dict[str, Any]], clock_ghz: float) -> dict[str, Any]:
    """The scenario's background fields from a server probe (:func:`rates`
    under load): none when there was no server probe (a measurement from
    before it existed keeps the scenario's), and no background thread when
    the probe saw none."""
    if not server_probe:
        return {}
    if not server_probe.get("wakeups_per_s"):
        return {"app.background_wakeups_per_s": 0.0}
    return {
        "app.background_wakeups_per_s": round(float(server_probe["wakeups_per_s"]), 1),
        "app.background_wakeup_cycles": round(float(server_probe["cpu_ns_per_wakeup"]) * clock_ghz),
    }
