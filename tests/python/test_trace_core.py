"""tools/trace_core.py: the report from a trace, and a live run that puts
tracefs back as it found it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from trace_core import TRACEFS, parse, summarise  # noqa: E402

TRACE = """\
# tracer: nop
       memcached-10  [001] d..2.   100.000000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=mc-worker next_pid=11 next_prio=120
       mc-worker-11  [001] d.h1.   100.000100: local_timer_entry: vector=236
       mc-worker-11  [001] d.s4.   100.000110: sched_waking: comm=mc-lrumaint pid=12 prio=120 target_cpu=001
       mc-worker-11  [001] ..s1.   100.000200: napi_poll: napi poll on napi struct 1 for device x work 1 budget 64
       mc-worker-11  [001] d..2.   100.000300: sched_switch: prev_comm=mc-worker prev_pid=11 prev_prio=120 prev_state=R ==> next_comm=mc-lrumaint next_pid=12 next_prio=120
     mc-lrumaint-12  [001] d..2.   100.000320: sched_switch: prev_comm=mc-lrumaint prev_pid=12 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0   [001] ..s1.   100.001320: napi_poll: napi poll on napi struct 1 for device x work 1 budget 64
"""


def test_the_report_names_the_shares_the_wake_ups_the_gaps_and_the_turns(tmp_path):
    p = tmp_path / "trace.txt"
    p.write_text(TRACE)
    events = parse(p)
    assert len(events) == 7 and events[0][1] == "sched_switch"
    lines = summarise(events, 1.0)
    assert "mc-lrumaint woken     1" in lines[0] and "mc-worker" in lines[0]
    # 1 ms with nothing between the idle task's switch and the last poll.
    gaps = next(x for x in lines if "gaps over" in x)
    assert gaps.startswith("last 1 s of NAPI polls: 1 gaps over 0.2 ms")
    assert any(x.strip().startswith("1000 us at 100.000320, the CPU with swapper/1") for x in lines)
    assert any(x.strip().startswith("mc-worker: 1 turns") for x in lines)
    assert summarise([], 1.0) == ["no events were recorded"]


@pytest.mark.skipif(os.geteuid() != 0, reason="tracing needs root")
def test_a_live_trace_puts_tracefs_back(tmp_path):
    if not (TRACEFS / "trace").exists():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], check=False)
    if not (TRACEFS / "events/sched/sched_switch/enable").exists():
        pytest.skip("tracefs with scheduler events is not available here")
    names = ("tracing_on", "tracing_cpumask", "buffer_size_kb", "trace_clock", "events/sched/sched_switch/enable")
    before = {n: (TRACEFS / n).read_text() for n in names}
    out = tmp_path / "t"
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "trace_core.py"), "--cpu", "0", "--out", str(out),
                        "--", "sleep", "0.1"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert (out / "trace.txt").exists() and r.stdout.strip()
    assert {n: (TRACEFS / n).read_text() for n in names} == before
    # Refused before anything changes: the CPU and the command.
    bad = subprocess.run([sys.executable, str(ROOT / "tools" / "trace_core.py"), "--cpu", "4096", "--out", str(out),
                          "--", "true"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--cpu: must be from 0 to" in bad.stderr
    assert {n: (TRACEFS / n).read_text() for n in names} == before
    # An output that is not a regular file is refused before any change too.
    fifo_dir = tmp_path / "f"
    fifo_dir.mkdir()
    os.mkfifo(fifo_dir / "trace.txt")
    fifo = subprocess.run([sys.executable, str(ROOT / "tools" / "trace_core.py"), "--cpu", "0", "--out", str(fifo_dir),
                           "--", "true"], capture_output=True, text=True, timeout=60)
    assert fifo.returncode == 2 and "--out" in fifo.stderr and "FIFO" in fifo.stderr.upper(), fifo.stderr
    assert {n: (TRACEFS / n).read_text() for n in names} == before
