"""This machine's costs, measured, and the simulator's constants rescaled by them.

``irqlab-loadgen --probe`` measures a system call, a small TCP message over
loopback, a wake-up and switch between two threads on one CPU, a wake-up
across CPUs of a thread on an idle CPU (latency) and on a busy one (the CPU
it takes there); the clock comes from ``/proc/cpuinfo``. :func:`rescaled` turns
them into overrides of the bare-metal constants (the thesis fit), each
group scaled by the one measurement that is its counterpart and nothing
else — no constant is fitted to the testbed:

- the kernel's network path (`send`, receive, `read`, `epoll_wait`, NAPI
  and softirq overheads, TX reaping, busy-poll iterations, the cold start of
  an interrupted softirq, the timer interrupt) by ``tcp_message_ns`` over the
  model's cost of the same work (``send_cycles + rx_packet_cycles +
  recv_cycles + recv_cycles_per_request``);
- `wakeup_cycles` and `context_switch_cycles` by ``switch_ns`` over the
  model's wake-up, switch and two null system calls;
- the application's own work (`app.service`, the interruption penalty) is
  user code: its cycles are kept, and take this machine's clock;
- the client's receive that veth runs on the server core
  (``costs.peer_rx_cycles``) is the rescaled softirq entry, packet receive
  and wake-up of the load generator;
- the load generator's CPU per request (``load.client_ns_per_request``) is
  one TCP message and one system call (its share of `epoll_wait`);
- how late the load generator's timed wait for an open loop's next send
  ends on its idle core (``load.client_timer_lag_ns``) is the probe's
  ``timer_wake_ns``, the same wait measured alone;
- ``cpu.wakeup_latency_ns`` is what a wake-up across CPUs of a thread on an
  idle CPU takes beyond one on the same CPU (the IPI and the idle exit);
- ``costs.ipi_irq_cycles`` is what a wake-up from another CPU takes from a
  busy CPU beyond the wake-up, the two switches and the woken thread's
  ``read`` (its return and its next call, one system call): the IPI (in a
  VM, its exits and injection); the woken thread answers through memory,
  so no wake-up back is in it; and ``cpu.ipi_latency_ns`` that wake-up's
  latency less the same-CPU one;
- ``costs.remote_wake_cycles`` is what the waker pays for a wake-up of a
  thread on another, halted CPU, as measured (the CPU time of the waking
  ``write`` less a system call);
- ``costs.timer_irq_cycles`` (the NAPI watchdog's expiry, and the arming of
  the hrtimer it ends) is a 20 µs ``clock_nanosleep``'s CPU time less a
  same-CPU wake-up and switch (the thread's clock, which leaves out the
  idle task's exit from idle), when that is more than the kernel-path
  rescaling gives: arming a timer that becomes the CPU's next event writes
  the TSC-deadline MSR, an exit in a VM;
- ``costs.idle_exit_cycles`` is what a wake-up from idle costs the CPU it
  wakes (the elapsed time less ``/proc/stat``'s idle, iowait and steal, per
  wake-up, 200 µs apart) beyond the
  wake-up, the two switches and the woken thread's ``read``: leaving idle
  (in a VM, the timer's exits and the refill of what the host ran on the
  halted vCPU's core). The model charges it before the work that woke the
  core, so ``cpu.wakeup_latency_ns`` is the measured wake-up latency less
  it: the two together take as long as the probe's wake-up did;
- ``cpu.host_preempt_per_s`` and ``cpu.host_preempt_ns``: how often the
  host took a busy CPU from the guest for 200 µs or more, and the lengths'
  quantiles (every probe's gaps together);
- ``cpu.host_halted_late_per_s`` and ``cpu.host_halted_late_ns``: how often
  the host held a halted CPU's timed wake-up back by 200 µs or more, per
  second of waiting, and the latenesses' quantiles (every probe's
  together): a halted vCPU gives its physical CPU back to the host, which
  returns it late now and then, more often than it takes a busy one;
- ``microarch.l2_latency_cycles`` (the disruption model's refill per
  line) is the probe's warm pointer chase within L2, and
  ``microarch.l1i_bytes`` the L1 instruction cache that sysfs reports.

Each figure comes with its spread (``spread``: the figure is the trimmed
mean of many short samples, kept with their median and quartiles); :mod:`irqlab.testbed.spread` carries it to
the prediction.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any, Optional

#: Kernel network-path costs rescaled by the loopback TCP message.
KERNEL_PATH = (
    "hardirq_cycles", "softirq_entry_cycles", "napi_poll_cycles", "rx_packet_cycles", "epoll_wait_cycles",
    "epoll_event_cycles", "recv_cycles", "recv_cycles_per_request", "send_cycles", "send_cycles_per_64b",
    "tx_clean_cycles", "timer_irq_cycles", "busy_poll_iteration_cycles", "irq_cold_cycles",
)
#: Costs rescaled by the same-CPU wake-up and switch.
SWITCH = ("wakeup_cycles", "context_switch_cycles")


#: The host's preemption lengths are carried as this many quantiles (every
#: 5 %, from the shortest to the longest).
PREEMPT_QUANTILES = 21


def quantiles(values: list[int], n: int) -> list[int]:
    """``n`` quantiles of ``values`` at evenly spaced probabilities from 0 to
    1, linear between the order statistics; rounded to whole ns."""
    v = sorted(values)
    out = []
    for k in range(n):
        x = k * (len(v) - 1) / (n - 1) if n > 1 else 0.0
        i = min(int(x), len(v) - 1)
        j = min(i + 1, len(v) - 1)
        out.append(round(v[i] + (x - i) * (v[j] - v[i])))
    return out


class ProbeError(RuntimeError):
    """The probe could not run; one sentence."""


def clock_ghz(cpuinfo: Optional[str] = None) -> float:
    """The first ``cpu MHz`` of ``/proc/cpuinfo``, in GHz."""
    text = cpuinfo if cpuinfo is not None else Path("/proc/cpuinfo").read_text()
    m = re.search(r"^cpu MHz\s*:\s*([0-9.]+)", text, re.M)
    if not m:
        raise ProbeError("/proc/cpuinfo gives no 'cpu MHz'; the clock cannot be read")
    return float(m.group(1)) / 1000.0


def l1i_bytes(cache_dir: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> Optional[int]:
    """The first CPU's level-1 instruction cache, bytes (sysfs), or None."""
    for index in sorted(cache_dir.glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        m = re.fullmatch(r"([0-9]+)([KMG]?)", size)
        if level == "1" and kind == "Instruction" and m:
            return int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]
    return None


#: Probes taken for the testbed's prediction: their medians, field by
#: field, and their spreads joined (:func:`irqlab.testbed.spread.combined_spread`).
#: Each probe's figure is itself the trimmed mean of 60 to 300 short
#: samples; three probes a few seconds apart also take in what the host
#: does from one second to the next.
PROBES = 3


def median_probe(probes: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each numeric field over ``probes``; other fields from
    the first; ``spread``: each figure's interval over all of them."""
    import statistics

    from irqlab.testbed.spread import combined_spread

    out = dict(probes[0])
    for key, value in probes[0].items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = statistics.median(p[key] for p in probes)
    # The host's preemptions are rare: every probe's gaps count.
    if all("host_preempt_gaps_ns" in p for p in probes):
        out["host_preempt_gaps_ns"] = sorted(g for p in probes for g in p["host_preempt_gaps_ns"])
    if all("halted_late_ns" in p for p in probes):
        out["halted_late_ns"] = sorted(g for p in probes for g in p["halted_late_ns"])
    out["probes"] = len(probes)
    if any("spread" in p for p in probes):
        out["spread"] = combined_spread(probes)
    return out


def run_probes(n: int = PROBES) -> dict[str, Any]:
    """:func:`run_probe` ``n`` times, the median of each figure."""
    return median_probe([run_probe() for _ in range(max(1, n))])


def run_probe() -> dict[str, Any]:
    """Measure this machine (about ten seconds)."""
    from irqlab.loadgen import find_binary

    binary = find_binary()
    if binary is None:
        raise ProbeError("the load generator binary is missing; run `make setup` first")
    proc = subprocess.run([str(binary), "--probe"], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise ProbeError(f"the probe failed: {(proc.stderr or proc.stdout).strip()}")
    out: dict[str, Any] = json.loads(proc.stdout)
    out["clock_ghz"] = clock_ghz()
    out["l1i_bytes"] = l1i_bytes()
    return out


def rescaled(probe: dict[str, Any], costs: dict[str, Any]) -> dict[str, Any]:
    """Scenario overrides (``costs.*``, ``cpu.*``, ``load.*``) that carry
    ``costs`` (a scenario's ``[costs]``, thesis fit) to the probed machine;
    see the module. Also ``_scales``: the two factors, for the record."""
    ghz = float(probe["clock_ghz"])
    cycles = lambda ns: float(ns) * ghz  # noqa: E731
    model_message = costs["send_cycles"] + costs["rx_packet_cycles"] + costs["recv_cycles"] + costs["recv_cycles_per_request"]
    k_path = cycles(probe["tcp_message_ns"]) / model_message
    # Two null syscalls of the model's: the probe's read and write.
    model_switch = costs["wakeup_cycles"] + costs["context_switch_cycles"] + 2 * cycles(probe["syscall_ns"])
    k_switch = cycles(probe["switch_ns"]) / model_switch
    out: dict[str, Any] = {"cpu.freq_ghz": round(ghz, 3)}
    for name in KERNEL_PATH:
        out[f"costs.{name}"] = round(costs[name] * k_path)
    for name in SWITCH:
        out[f"costs.{name}"] = round(costs[name] * k_switch)
    out["costs.peer_rx_cycles"] = (
        out["costs.softirq_entry_cycles"] + out["costs.rx_packet_cycles"] + out["costs.wakeup_cycles"]
    )
    out["load.client_ns_per_request"] = round(probe["tcp_message_ns"] + probe["syscall_ns"])
    # Measured as the load generator waits (older probes lack it: on time).
    out["load.client_timer_lag_ns"] = round(probe.get("timer_wake_ns", 0.0))
    local = out["costs.wakeup_cycles"] + 2 * out["costs.context_switch_cycles"] + 2 * cycles(probe["syscall_ns"])
    # A wake-up from idle: one system call (the read) where the busy wake-up has two.
    idle_exit = max(0, round(cycles(probe.get("idle_wake_cpu_ns", 0.0)) - local + cycles(probe["syscall_ns"])))
    out["costs.idle_exit_cycles"] = idle_exit
    out["cpu.wakeup_latency_ns"] = max(0, round(probe["remote_wake_ns"] - probe["switch_ns"] - idle_exit / ghz))
    # The woken thread answers through memory and goes back to sleep: its
    # read's return and next call are one system call.
    out["costs.ipi_irq_cycles"] = max(0, round(cycles(probe["busy_wake_cpu_ns"]) - local + cycles(probe["syscall_ns"])))
    out["cpu.ipi_latency_ns"] = max(0, round(probe["busy_wake_ns"] - probe["switch_ns"]))
    out["costs.remote_wake_cycles"] = round(cycles(probe["wake_sender_cpu_ns"]))
    timer = round(cycles(probe["timer_sleep_cpu_ns"] - probe["switch_ns"]))
    out["costs.timer_irq_cycles"] = max(out["costs.timer_irq_cycles"], timer)
    gaps = probe.get("host_preempt_gaps_ns") or []
    if probe.get("host_preempt_per_s") and gaps:
        out["cpu.host_preempt_per_s"] = round(float(probe["host_preempt_per_s"]), 3)
        out["cpu.host_preempt_ns"] = quantiles(gaps, PREEMPT_QUANTILES)
    late = probe.get("halted_late_ns") or []
    if probe.get("halted_late_per_s") and late:
        out["cpu.host_halted_late_per_s"] = round(float(probe["halted_late_per_s"]), 3)
        out["cpu.host_halted_late_ns"] = quantiles(late, PREEMPT_QUANTILES)
    if probe.get("l2_line_ns"):
        out["microarch.l2_latency_cycles"] = max(1, round(cycles(probe["l2_line_ns"])))
    if probe.get("l1i_bytes"):
        out["microarch.l1i_bytes"] = int(probe["l1i_bytes"])
    out["_scales"] = {"kernel_path": k_path, "switch": k_switch}
    return out
