"""`irqlab.Summary` on a made-up summary (no simulation needed)."""

from __future__ import annotations

import json

import pytest

from irqlab import Summary

DATA = {
    "scenario": "made-up",
    "profile": "irq-suspend",
    "seed": 1,
    "mode": "closed",
    "offered_qps": None,
    "throughput_qps": 950000.0,
    "latency_us": {"mean": 30.0, "p50": 25.0, "p95": 50.0, "p99": 70.0, "p999": 120.0},
    "cpu_pct": {"user": 23.0, "system": 77.0, "softirq": 0.0, "irq": 0.0, "idle": 0.0},
    "irq_cores_cpu_pct": None,
    "drops": 0,
    "sim_events": 1000,
    "wall_s": 0.5,
}


def test_attribute_item_and_dotted_access():
    s = Summary(DATA)
    assert s.throughput_qps == s["throughput_qps"] == 950000.0
    assert s.latency_us.p99 == s["latency_us"]["p99"] == s["latency_us.p99"] == 70.0
    with pytest.raises(AttributeError):
        s.no_such_field
    with pytest.raises(KeyError):
        s["latency_us.p42"]


def test_is_read_only():
    s = Summary(DATA)
    with pytest.raises(AttributeError):
        s.seed = 2
    with pytest.raises(TypeError):
        s["seed"] = 2  # type: ignore[index]


def test_to_dict_and_to_json_round_trip():
    s = Summary(DATA)
    assert s.to_dict() == DATA
    assert json.loads(s.to_json()) == DATA
    assert Summary.from_json(s.to_json()) == s
    d = s.to_dict()
    d["latency_us"]["p99"] = 0
    assert s.latency_us.p99 == 70.0


def test_to_pandas_is_one_flat_row():
    df = Summary(DATA).to_pandas()
    assert len(df) == 1
    assert {"latency_us.p99", "cpu_pct.user", "throughput_qps", "irq_cores_cpu_pct"} <= set(df.columns)
    assert df.loc[0, "latency_us.p99"] == 70.0
    assert df.loc[0, "cpu_pct.system"] == 77.0
