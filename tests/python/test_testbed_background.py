"""memcached's background threads as the testbed measures them and the
scenario fields they become (python/irqlab/testbed/background.py)."""

from __future__ import annotations

import ctypes
import os
import threading
import time

from irqlab.testbed.background import counters, overrides, rates

PR_SET_NAME = 15


def _named_sleeper(name: bytes, naps: int, ready: threading.Event, go: threading.Event,
                   done: threading.Event, leave: threading.Event) -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0)
    ready.set()
    go.wait(10)
    for _ in range(naps):
        time.sleep(0.001)
    done.set()
    # Counted while it still exists: a thread that has exited has no schedstat.
    leave.wait(10)


def test_a_background_threads_turns_and_cpu_are_read_from_its_schedstat():
    ready = [threading.Event(), threading.Event()]
    done = [threading.Event(), threading.Event()]
    go, leave = threading.Event(), threading.Event()
    threads = [threading.Thread(target=_named_sleeper, args=(b"mc-lrutest", 100, ready[0], go, done[0], leave)),
               threading.Thread(target=_named_sleeper, args=(b"mc-worker-t", 100, ready[1], go, done[1], leave))]
    for t in threads:
        t.start()
    for r in ready:
        assert r.wait(10)
    before = counters({os.getpid()})
    t0 = time.monotonic()
    go.set()
    for d in done:
        assert d.wait(30)
    secs = time.monotonic() - t0
    after = counters({os.getpid()})
    leave.set()
    for t in threads:
        t.join(30)
    # The event loop is not background; the sleeper is, woken once per nap.
    assert not any(c.startswith("mc-worker") for c in after)
    r = rates(before, after, secs)
    lru = r["threads"]["mc-lrutest"]
    # One turn per nap (and a few more where a busy machine preempted it).
    assert 100 <= lru["wakeups_per_s"] * secs <= 200
    assert 0 < lru["cpu_ns_per_wakeup"] < 1e6
    assert r["cpu_pct"] > 0


def test_the_rates_and_the_scenario_fields():
    a = {"mc-lrumaint": (1_000, 10_000_000), "mc-itemcrawler": (5, 1_000)}
    b = {"mc-lrumaint": (4_000, 70_000_000), "mc-itemcrawler": (5, 1_000), "mc-new": (1, 500)}
    r = rates(a, b, 1.0)
    # 3,001 turns in a second, 60,000,500 ns among them.
    assert r["wakeups_per_s"] == 3_001
    assert abs(r["cpu_ns_per_wakeup"] - 60_000_500 / 3_001) < 1e-6
    assert abs(r["cpu_pct"] - 6.00005) < 1e-9
    assert set(r["threads"]) == {"mc-lrumaint", "mc-new"}
    assert overrides(r, 2.5) == {"app.background_wakeups_per_s": 3001.0,
                                 "app.background_wakeup_cycles": round(60_000_500 / 3_001 * 2.5)}
    # No server probe (an older measurement): the scenario's own; a probe
    # that saw no background thread: none simulated.
    assert overrides(None, 2.5) == {}
    assert overrides(rates({}, {}, 1.0), 2.5) == {"app.background_wakeups_per_s": 0.0}
