"""The fast SimPy model of the thesis scenario (bench/simpy_thesis_fast.py):
it completes requests, it is deterministic, it simulates what the process
model (bench/simpy_thesis.py) simulates, and its ETC sampler draws the
process model's sizes. 5 ms simulated per run; no irqlab run needed."""

from __future__ import annotations

import importlib
import random
import sys

import pytest

from conftest import REPO

pytest.importorskip(
    "simpy",
    reason="simpy is not installed (it is pinned in requirements-dev.txt): the SimPy models cannot run",
)

BENCH = REPO / "bench"
DURATION_S = 0.005
PROFILES = ("busy-wait", "no-coalescing")
#: Figures that depend on the wall clock or name the model.
NOT_SIMULATED = {"wall_s", "requests_per_wall_s", "model"}


@pytest.fixture(scope="module")
def models():
    """(process model, fast model), imported from bench/ (not a package)."""
    names = ("simpy_thesis", "simpy_thesis_fast")
    saved = {n: sys.modules.pop(n) for n in names if n in sys.modules}
    sys.path.insert(0, str(BENCH))
    try:
        yield tuple(importlib.import_module(n) for n in names)
    finally:
        sys.path.remove(str(BENCH))
        for n in names:
            sys.modules.pop(n, None)
        sys.modules.update(saved)


@pytest.mark.parametrize("profile", PROFILES)
def test_fast_model_completes_requests_and_is_deterministic(models, profile):
    _, fast = models
    first = fast.run(profile, DURATION_S, seed=3)
    again = fast.run(profile, DURATION_S, seed=3)
    assert first["model"] == "callbacks" and first["profile"] == profile
    # 768 connections with a round trip of at least 40.6 us complete thousands of requests in 5 ms.
    assert first["requests"] > 2_000, first
    assert first["throughput_qps"] == pytest.approx(first["requests"] / DURATION_S)
    assert 0.0 < first["cpu_busy_pct"] <= 100.0
    if profile == "no-coalescing":
        assert first["irqs_per_s"] > 0 and first["interruptions_per_query"] > 0
    else:
        assert first["irqs_per_s"] == 0 and first["interruptions_per_query"] == 0
    simulated = {k: v for k, v in first.items() if k not in NOT_SIMULATED}
    assert simulated == {k: v for k, v in again.items() if k not in NOT_SIMULATED}


@pytest.mark.parametrize("profile", PROFILES)
def test_fast_model_simulates_what_the_process_model_does(models, profile):
    process, fast = models
    p = process.run(profile, DURATION_S, seed=1)
    f = fast.run(profile, DURATION_S, seed=1)
    assert p["model"] == "process" and f["model"] == "callbacks"
    # Same scenario, same steps, same draws in the same order: in practice the
    # same counts; a few per cent allows for float ties resolved otherwise.
    assert f["requests"] == pytest.approx(p["requests"], rel=0.02), (p["requests"], f["requests"])
    for key in ("irqs_per_s", "softirqs_per_s", "interruptions_per_query", "cycles_per_query"):
        assert f[key] == pytest.approx(p[key], rel=0.03, abs=1e-9), (key, p[key], f[key])


def test_fast_etc_sampler_draws_the_process_models_sizes(models):
    process, fast = models
    a, b = random.Random(7), random.Random(7)
    sizes = [process.etc_reply_bytes(a) for _ in range(20_000)]
    assert sizes == [fast.etc_reply_bytes(b) for _ in range(20_000)]
    assert a.random() == b.random()  # as many draws
    assert max(sizes) > 1_000  # the GPareto tail was drawn, not only the table


def test_fast_model_refuses_a_bad_profile_or_duration(models):
    _, fast = models
    with pytest.raises(ValueError, match="unknown profile"):
        fast.run("irq-suspend", DURATION_S)
    with pytest.raises(ValueError, match="positive"):
        fast.run("busy-wait", 0.0)
