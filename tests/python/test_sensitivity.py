"""The thesis's sensitivity study (irqlab reproduce thesis --sensitivity)."""

from __future__ import annotations

from pathlib import Path

import pytest

from irqlab import Scenario
from irqlab.reproduce.sensitivity import FACTORS, UNFITTED, Variant, rows, run_sensitivity, tornado
from irqlab.reproduce.thesis import PROFILES, default_scenario, run_thesis

pytestmark = pytest.mark.needs_run

SHORT = {"closed_duration_s": 0.02, "open_duration_s": 0.01}


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    out = tmp_path_factory.mktemp("baseline")
    return run_thesis(out=out, quiet=True, **SHORT)


def test_unfitted_constants_exist_in_the_scenario():
    resolved = Scenario.load(default_scenario()).resolved()
    for dotted in UNFITTED:
        section, name = dotted.split(".")
        assert isinstance(resolved[section][name], int), dotted
    assert FACTORS == (0.5, 1.5)


def test_factor_one_reproduces_the_baseline_exactly(tmp_path, baseline):
    # Same scenario, same seeds: a constant "changed" to its own value must
    # give the baseline's numbers and flip nothing.
    [v] = run_sensitivity(
        tmp_path, Scenario.load(default_scenario()), baseline,
        fields=("costs.tx_clean_cycles",), factors=(1.0,), quiet=True, **SHORT,
    )
    assert v.value == 300 and v.qps_change_pct == {p: 0.0 for p in PROFILES}
    assert v.lost == [] and v.gained == []
    assert (tmp_path / "sensitivity" / "costs.tx_clean_cycles-x1" / "figure-4.1" / "results.parquet").is_file()


def test_the_variants_take_the_baselines_base_seed(tmp_path):
    # A baseline with another base seed: factor 1 still reproduces it only
    # if the variants run with that seed too.
    seeded = run_thesis(out=tmp_path / "base", quiet=True, seed=7, **SHORT)
    [v] = run_sensitivity(
        tmp_path, Scenario.load(default_scenario()), seeded,
        fields=("costs.tx_clean_cycles",), factors=(1.0,), quiet=True, seed=7, **SHORT,
    )
    assert v.qps_change_pct == {p: 0.0 for p in PROFILES}


def test_a_costlier_path_lowers_every_profiles_throughput(tmp_path, baseline):
    [v] = run_sensitivity(
        tmp_path, Scenario.load(default_scenario()), baseline,
        fields=("costs.send_cycles_per_64b",), factors=(3.0,), quiet=True, **SHORT,
    )
    assert v.value == 60
    assert all(change < 0 for change in v.qps_change_pct.values()), v.qps_change_pct


def test_rows_and_tornado(tmp_path):
    variants = [
        Variant("nic.wire_latency_ns", 0.5, 10000, {p: -0.1 for p in PROFILES}, lost=["a claim"]),
        Variant("nic.wire_latency_ns", 1.5, 30000, {p: 0.2 for p in PROFILES}),
        Variant("costs.tx_clean_cycles", 0.5, 150, {p: 0.6 for p in PROFILES}),
    ]
    r = rows(variants)
    assert r[0]["claims_lost"] == "a claim" and r[0]["qps_change_pct.busy-wait"] == -0.1
    assert variants[1].largest_qps_change_pct == 0.2
    path = tornado(variants, tmp_path / "t.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
