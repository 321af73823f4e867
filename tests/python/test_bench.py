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
