"""`irqlab bench` (needs_run)."""

from __future__ import annotations

import json

import pytest

from conftest import SHORT, SMALL, irqlab

pytestmark = pytest.mark.needs_run


def test_bench_json_reports_best_and_median():
    result = irqlab("bench", str(SMALL), "--duration", SHORT, "--repeat", "2", "--json")
    assert result.returncode == 0, result.stderr
    b = json.loads(result.stdout)
    assert b["repeat"] == 2 and len(b["events_per_wall_s"]) == 2
    assert b["best_events_per_wall_s"] == max(b["events_per_wall_s"])
    assert min(b["events_per_wall_s"]) <= b["median_events_per_wall_s"] <= b["best_events_per_wall_s"]
    assert b["sim_events"][0] == b["sim_events"][1] > 0


def test_bench_table():
    result = irqlab("bench", str(SMALL), "--duration", SHORT, "--repeat", "1")
    assert result.returncode == 0, result.stderr
    assert "events/wall s" in result.stdout and "best" in result.stdout and "median" in result.stdout


def test_bench_sweep_compares_executors_on_identical_rows():
    # A small version of `irqlab bench --sweep` (the 100-point figure is
    # printed by `make bench`, never asserted: a shared machine is noisy).
    from irqlab import Scenario
    from irqlab.study.bench import bench_sweep, bench_sweep_table

    rows = bench_sweep(Scenario.load(SMALL), duration_s=0.002, jobs=2, loads=(50_000, 100_000))
    assert [(r.executor, r.jobs) for r in rows] == [("threads", 1), ("threads", 2), ("processes", 2)]
    assert all(r.points == 8 and r.wall_s > 0 for r in rows)
    table = bench_sweep_table(rows)
    assert "vs --jobs 1" in table and "1.00x" in table


def test_bench_sweep_flags():
    result = irqlab("bench", "--jobs", "2")
    assert result.returncode == 2 and "--jobs is for --sweep" in result.stderr
    result = irqlab("bench", "--sweep", "--profile", "busy-wait")
    assert result.returncode == 2 and "--profile is not for --sweep" in result.stderr
