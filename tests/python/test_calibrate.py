"""tools/calibrate.py: the hold-out flags and the error measures (no fit is run here)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from irqlab import Summary

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "calibrate.py"


@pytest.fixture(scope="module")
def calibrate():
    spec = importlib.util.spec_from_file_location("calibrate", TOOL)
    module = importlib.util.module_from_spec(spec)
    # A dataclass looks its module up by name while it is being defined.
    sys.modules["calibrate"] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("calibrate", None)


def test_holdout_names_profiles_to_predict(calibrate):
    assert calibrate.parse_holdout("adaptive-coalescing,irq-suspend") == ("adaptive-coalescing", "irq-suspend")
    for bad, words in (
        ("irq-suspnd", "not one of"),
        ("busy-wait,busy-wait", "twice"),
        ("no-coalescing,adaptive-coalescing,irq-suspend,busy-wait", "no profile to fit on"),
    ):
        with pytest.raises(ValueError, match=words):
            calibrate.parse_holdout(bad)


def test_errors_are_relative_and_in_points(calibrate):
    qps, cpq, user, system, softirq = calibrate.TABLE_4_1["busy-wait"]
    s = Summary({
        "throughput_qps": qps * 1.02, "cycles_per_query": cpq * 0.99,
        "cpu_pct": {"user": user + 1.0, "system": system - 2.0, "softirq": 0.25, "irq": 0.25, "idle": 0.0},
    })
    e = calibrate.errors("busy-wait", s)
    assert e["qps_pct"] == pytest.approx(2.0) and e["cycles_per_query_pct"] == pytest.approx(-1.0)
    assert (e["user_pt"], e["system_pt"], e["softirq_pt"]) == pytest.approx((1.0, -2.0, 0.5))
    # Residuals of a fit: the same errors in units of what Table 4.1 resolves
    # (1 % of QPS, 1 point of a share), so 2 % of QPS weighs as 2 points.
    assert calibrate.profile_residuals("busy-wait", s) == pytest.approx([2.0, 1.0, -2.0, 0.5])


@pytest.mark.parametrize("model", ["fixed", "disruption"])
def test_the_read_share_splits_into_a_fixed_and_a_per_request_part(calibrate, model):
    m = calibrate.MODELS[model]
    o = dict(kv.split("=", 1) for kv in m.overrides(np.array(m.start)))
    per_request = int(o["costs.recv_cycles_per_request"])
    assert per_request == calibrate.RECV_CYCLES_PER_REQUEST
    # At depth 1 a read takes one request: the fitted share is the sum.
    assert int(o["costs.recv_cycles"]) + per_request == round(m.start[1] * 3500 / 14500)


def test_the_disruption_model_replaces_the_penalties_and_weighs_ipc(calibrate):
    m = calibrate.MODELS["disruption"]
    o = m.overrides(np.array(m.start))
    keys = [kv.split("=", 1)[0] for kv in o]
    assert "costs.interrupt_penalty_cycles" not in keys and "costs.irq_cold_cycles" not in keys
    # The model comes last: it refuses to run before its footprints are set.
    assert o[-1] == "microarch.ipc_model=disruption" and "microarch.flush_cycles" in keys
    qps, cpq, user, system, softirq = calibrate.TABLE_4_1["no-coalescing"]
    s = Summary({
        "throughput_qps": qps, "cycles_per_query": cpq, "ipc": calibrate.TABLE_4_1_IPC["no-coalescing"] * 0.97,
        "cpu_pct": {"user": user, "system": system, "softirq": softirq, "irq": 0.0, "idle": 0.0},
    })
    assert calibrate.profile_residuals("no-coalescing", s, with_ipc=True) == pytest.approx([0, 0, 0, 0, -3.0])
    assert calibrate.errors("no-coalescing", s)["ipc_pct"] == pytest.approx(-3.0)


def test_flags_that_exclude_each_other_are_refused():
    proc = subprocess.run(
        [sys.executable, str(TOOL), "--holdout", "busy-wait", "--leave-one-out"],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2 and "exclude each other" in proc.stderr


@pytest.mark.parametrize("model", ["fixed", "disruption"])
def test_start_points_are_seeded_and_within_bounds(calibrate, model):
    m = calibrate.MODELS[model]
    a, b = calibrate.start_points(4, model=m), calibrate.start_points(4, model=m)
    assert len(a) == 4 and all((x == y).all() for x, y in zip(a, b))
    assert (a[0] == np.array(m.start)).all()
    for x in a:
        assert (x >= np.array(m.lower)).all() and (x <= np.array(m.upper)).all()
