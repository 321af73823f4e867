"""`irqlab.run` from Python. Every test here simulates (needs_run)."""

from __future__ import annotations

import threading

import pytest

import irqlab
from conftest import SMALL

pytestmark = pytest.mark.needs_run


def test_run_to_pandas_is_one_flat_row():
    scenario = irqlab.Scenario.load(SMALL).with_overrides({"load.depth": 2})
    summary = irqlab.run(scenario, profile="busy-wait", seed=5, duration_s=0.01)
    assert isinstance(summary, irqlab.Summary)
    assert summary.profile == "busy-wait" and summary.seed == 5
    df = summary.to_pandas()
    assert len(df) == 1
    assert {"throughput_qps", "latency_us.p99", "latency_us.p50", "cpu_pct.user", "cpu_pct.idle"} <= set(df.columns)
    assert df.loc[0, "latency_us.p99"] == summary.latency_us.p99
    assert df.loc[0, "seed"] == 5


def test_run_takes_a_path_and_overrides():
    summary = irqlab.run(str(SMALL), overrides=["load.qps=10000"], duration_s=0.01)
    assert summary.mode == "open"


def test_runs_in_threads_agree():
    # The GIL is released during a run; concurrent runs must not disturb each other.
    results: list[irqlab.Summary] = []

    def one() -> None:
        results.append(irqlab.run(SMALL, seed=9, duration_s=0.01))

    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    a, b = (r.to_dict() for r in results)
    a.pop("wall_s")
    b.pop("wall_s")
    assert a == b
