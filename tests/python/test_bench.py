"""`irqlab bench` (needs_run)."""

from __future__ import annotations

import json

import pytest

from conftest import REPO, SHORT, SMALL, irqlab

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


def test_bench_scale_sizes_each_run_to_the_same_work():
    # A small version of `irqlab bench --scale` (its figures are printed by
    # `make bench`, never asserted). Each run is the scenario at N cores
    # with 96 connections per core, its simulated time shrinking as N grows.
    from irqlab import Scenario
    from irqlab.bench_scale import CONNECTIONS_PER_CORE, bench_load, bench_scale, scale_json, scale_scenario
    from irqlab.text import scale_table

    base = Scenario.load(REPO / "scenarios" / "thesis" / "bare-metal.toml")
    s = scale_scenario(base, 32, "busy-wait").resolved()
    load = s["load"]
    assert s["cpu"]["app_cores"] == 32
    assert load["clients"] * load["threads_per_client"] * load["connections_per_thread"] == CONNECTIONS_PER_CORE * 32
    assert s["run"]["warmup_s"] * 3 == pytest.approx(s["run"]["duration_s"])

    rows = bench_scale(base, cores=(1, 4), profiles=("busy-wait",), repeat=2, events=60_000)
    assert [(r.cores, r.profile) for r in rows] == [(1, "busy-wait"), (4, "busy-wait")]
    for r in rows:
        assert len(r.ns_per_event) == 2 and r.best_ns == min(r.ns_per_event) > 0
        # Sized for 60,000 events: within a factor of two either way.
        assert 30_000 < r.sim_events < 120_000, r
    loads = bench_load(base, fractions=(0.1, 1.0), duration_s=0.005)
    assert [l.fraction for l in loads] == [0.1, 1.0]
    # Below saturation a polling core finds its ring empty between
    # requests: more events per request than at saturation.
    assert loads[0].events_per_request > loads[1].events_per_request > 1
    # ... most of which the engine passes: the model handles a few per
    # request at 10 % load (the summaries are the same either way:
    # crates/irqlab-core/tests/busy_chain.rs).
    assert loads[0].sim_events_passed > loads[0].sim_events / 2
    assert 1 < loads[0].modelled_per_request < 40, loads[0]
    assert loads[0].qps == pytest.approx(0.1 * loads[1].qps, rel=0.2)
    table = scale_table(rows, loads)
    assert "ns/event best" in table and "1.00x" in table and "events/request" in table and "modelled/request" in table
    j = json.loads(json.dumps(scale_json(rows, loads)))
    assert [c["cores"] for c in j["cores"]] == [1, 4] and len(j["load"]) == 2


def test_bench_scale_flags():
    for args, said in [
        (("--scale", "--sweep"), "give one"),
        (("--scale", "--jobs", "2"), "--jobs is for --sweep"),
        (("--scale", "--duration", "0.1"), "--duration is not for --scale"),
        (("--scale", "--cores", "8,0"), "--cores must be a comma-separated list of core counts from 1 to 1024"),
        (("--scale", "--cores", "eight"), "--cores must be"),
        (("--cores", "8"), "--cores is for --scale"),
    ]:
        result = irqlab("bench", *args)
        assert result.returncode == 2 and said in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr
