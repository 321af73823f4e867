#!/usr/bin/env python3
"""What one CPU did while a command ran, from the scheduler's own record.

    tools/trace_core.py --cpu 1 --out DIR -- .venv/bin/irqlab testbed run --profiles no-coalescing --repeats 1

records tracefs's scheduler, softirq, interrupt-vector, NAPI and hrtimer
expiry events of CPU ``--cpu`` while the command runs (as root; tracefs is mounted at
/sys/kernel/tracing if it is not), writes the raw trace to DIR/trace.txt and
prints, per half second, the share of the CPU each task had and how often
memcached's LRU maintainer (``mc-lrumaint``) was woken, then, over the
last ``--window`` seconds of NAPI polls (an open loop's measured phase),
every gap of over 0.2 ms between two events and which task held the CPU
then, and each task's turns (their count, total, 99th percentile and
longest). This is how docs/calibration.md ("Where the testbed's time goes")
found memcached's LRU maintainer and that the server core never stops for
long in the testbed's medium load; the hrtimer expiries (``function=
napi_watchdog``) are how it found what ends busy-wait's polling there.

Every setting it changes (``tracing_on``, ``tracing_cpumask``,
``buffer_size_kb``, ``trace_clock``, the events it enables) is read first
and put back when it ends, also on failure or Ctrl-C, and tracefs is
unmounted again if it mounted it; the arguments, and the output path (as
every irqlab output: ``irqlab.files``), are checked before the first
change. Run it with the project's virtualenv (``.venv/bin/python``).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
from pathlib import Path

TRACEFS = Path("/sys/kernel/tracing")
EVENTS = ("sched/sched_switch", "sched/sched_waking", "napi/napi_poll", "irq/softirq_entry", "irq/softirq_exit",
          "irq_vectors/reschedule_entry", "irq_vectors/call_function_single_entry", "irq_vectors/local_timer_entry", "timer/hrtimer_expire_entry")
LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+(\S+)\s+([\d.]+):\s+(\w+):\s*(.*)$")
SWITCH = re.compile(r"prev_comm=(.*?) prev_pid=(\d+).*?==> next_comm=(.*?) next_pid=(\d+)")
BIN_S = 0.5
GAP_S = 200e-6


def parse(path: Path) -> list[tuple[float, str, str]]:
    """``(time s, event, its fields)`` of every line of a trace."""
    out = []
    with path.open() as f:
        for line in f:
            m = LINE.match(line)
            if m:
                out.append((float(m.group(5)), m.group(6), m.group(7)))
    return out


def summarise(events: list[tuple[float, str, str]], window_s: float) -> list[str]:
    """The report the module describes."""
    if not events:
        return ["no events were recorded"]
    lines = []
    t0 = events[0][0]
    share: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    lru: collections.Counter = collections.Counter()
    cur, since = None, t0
    for t, name, rest in events:
        b = int((t - t0) / BIN_S)
        if name == "sched_waking" and "comm=mc-lrumaint " in rest:
            lru[b] += 1
        if name == "sched_switch" and (m := SWITCH.search(rest)):
            if cur is not None:
                share[int((since - t0) / BIN_S)][cur] += t - since
            cur, since = m.group(3), t
    for b in sorted(share):
        tops = " ".join(f"{k} {100 * v / BIN_S:.0f}%" for k, v in share[b].most_common(5))
        lines.append(f"{b * BIN_S:6.1f} s  mc-lrumaint woken {lru[b]:5d}  {tops}")
    polls = [t for t, name, _ in events if name == "napi_poll"]
    if not polls:
        return lines + ["no NAPI polls: no window to look at"]
    end = polls[-1]
    w = [e for e in events if end - window_s <= e[0] <= end]
    turns: dict[str, list[float]] = collections.defaultdict(list)
    gaps = []
    cur, since, prev = None, w[0][0], w[0][0]
    for t, name, rest in w:
        if t - prev > GAP_S:
            gaps.append((t - prev, prev, cur))
        prev = t
        if name == "sched_switch" and (m := SWITCH.search(rest)):
            if cur is not None:
                turns[cur].append(t - since)
            cur, since = m.group(3), t
    lines.append(f"last {window_s:g} s of NAPI polls: {len(gaps)} gaps over {GAP_S * 1e3:g} ms between events")
    for g, t, who in sorted(gaps, reverse=True)[:10]:
        lines.append(f"  {g * 1e6:.0f} us at {t:.6f}, the CPU with {who}")
    for who, v in sorted(turns.items(), key=lambda kv: -sum(kv[1])):
        v.sort()
        lines.append(f"  {who}: {len(v)} turns, {sum(v) * 1e3:.0f} ms, p99 {v[int(0.99 * (len(v) - 1))] * 1e6:.0f} us, "
                     f"longest {v[-1] * 1e6:.0f} us")
    return lines


def _restore(saved: dict[str, str], files: list[str], mounted: bool) -> None:
    """Put back every setting read before the trace, each on its own (one
    that cannot be written does not keep the others from being put back),
    empty the buffer, and unmount tracefs if this run mounted it."""
    # Stop recording first; tracing_on, first in `files`, gets its own value last.
    for f, value in [("tracing_on", "0"), *((f, saved[f]) for f in reversed(files))]:
        try:
            (TRACEFS / f).write_text(value)
        except OSError as e:
            print(f"trace_core: could not put back {TRACEFS / f}: {e.strerror or e}", file=sys.stderr)
    try:
        (TRACEFS / "trace").write_text("")
    except OSError:
        pass
    if mounted:
        subprocess.run(["umount", str(TRACEFS)], check=False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cpu", type=int, required=True, help="the CPU to trace")
    ap.add_argument("--out", type=Path, required=True, help="a directory for trace.txt (created if missing)")
    ap.add_argument("--window", type=float, default=2.4, help="seconds before the last NAPI poll to look at (default 2.4)")
    ap.add_argument("--buffer-kb", type=int, default=65536, help="trace buffer per CPU, KiB (default 65536)")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- and the command to run")
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    ncpu = os.cpu_count() or 1
    if not cmd:
        ap.error("command: give one after --")
    if not 0 <= a.cpu < min(ncpu, 64):
        ap.error(f"--cpu: must be from 0 to {min(ncpu, 64) - 1}")
    if not 0.1 <= a.window <= 3600:
        ap.error("--window: must be from 0.1 to 3600 seconds")
    if not 1024 <= a.buffer_kb <= 1 << 20:
        ap.error("--buffer-kb: must be from 1024 to 1048576")
    if os.geteuid() != 0:
        ap.error("tracing needs root")
    from irqlab.files import OutputPathError, check_output_file, make_output_dir, write_text_whole

    try:
        make_output_dir(a.out, "--out")
        trace = check_output_file(a.out / "trace.txt", "--out")
    except OutputPathError as e:
        ap.error(str(e))
    mounted = False
    if not (TRACEFS / "trace").exists():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], check=False)
        if not (TRACEFS / "trace").exists():
            print("trace_core: tracefs is not available here", file=sys.stderr)
            return 2
        mounted = True
    files = ["tracing_on", "tracing_cpumask", "buffer_size_kb", "trace_clock",
             *(f"events/{e}/enable" for e in EVENTS)]
    saved = {}
    try:
        for f in files:
            text = (TRACEFS / f).read_text().strip()
            # trace_clock lists every clock with the current one in brackets.
            saved[f] = re.search(r"\[(\w+)\]", text).group(1) if f == "trace_clock" else text
    except (OSError, AttributeError):
        if mounted:
            subprocess.run(["umount", str(TRACEFS)], check=False)
        print(f"trace_core: this kernel's tracefs has no readable {TRACEFS / f}; nothing was traced", file=sys.stderr)
        return 2
    status = 1
    try:
        (TRACEFS / "tracing_on").write_text("0")
        (TRACEFS / "trace").write_text("")
        (TRACEFS / "tracing_cpumask").write_text(f"{1 << a.cpu:x}")
        (TRACEFS / "buffer_size_kb").write_text(str(a.buffer_kb))
        (TRACEFS / "trace_clock").write_text("mono")
        for e in EVENTS:
            (TRACEFS / f"events/{e}/enable").write_text("1")
        (TRACEFS / "tracing_on").write_text("1")
        status = subprocess.run(cmd, check=False).returncode
        (TRACEFS / "tracing_on").write_text("0")
        write_text_whole(trace, (TRACEFS / "trace").read_text())
    finally:
        _restore(saved, files, mounted)
    print("\n".join(summarise(parse(trace), a.window)))
    return status


if __name__ == "__main__":
    sys.exit(main())
