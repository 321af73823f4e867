"""`irqlab run` end to end. Every test here simulates (needs_run)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import SHORT, SMALL, irqlab

pytestmark = pytest.mark.needs_run

S = str(SMALL)
NUMBER = (int, float)
REQUIRED = {
    "scenario": str,
    "profile": (str, type(None)),
    "seed": int,
    "mode": str,
    "offered_qps": (int, float, type(None)),
    "throughput_qps": NUMBER,
    "latency_us": dict,
    "cpu_pct": dict,
    "irq_cores_cpu_pct": (dict, type(None)),
    "irqs_per_s": NUMBER,
    "packets_per_irq": NUMBER,
    "context_switches_per_s": NUMBER,
    "context_switches_per_query": NUMBER,
    "cycles_per_query": NUMBER,
    "drops": int,
    "busy_poll_pct": NUMBER,
    "softirqs_per_s": NUMBER,
    "watchdog_fires_per_s": NUMBER,
    "rx_ring_wait_us": NUMBER,
    "dim": (dict, type(None)),
    "requests_completed": int,
    "sim_time_s": NUMBER,
    "sim_events": int,
    "sim_events_passed": int,
    "wall_s": NUMBER,
}


def run_json(*args: str) -> dict:
    result = irqlab("run", S, "--duration", SHORT, "--json", *args)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\n") == 1, "--json prints exactly one line"
    summary = json.loads(result.stdout)
    assert isinstance(summary, dict)
    return summary


def test_json_has_every_field_with_sane_values():
    s = run_json("--profile", "irq-suspend", "--seed", "11")
    for field, kind in REQUIRED.items():
        assert field in s, field
        assert isinstance(s[field], kind) and not isinstance(s[field], bool), (field, s[field])
    assert s["scenario"] == "small"
    assert s["profile"] == "irq-suspend"
    assert s["seed"] == 11
    assert s["mode"] == "closed" and s["offered_qps"] is None
    assert s["throughput_qps"] > 0 and s["requests_completed"] > 0 and s["sim_events"] > 0
    assert s["wall_s"] > 0 and s["sim_time_s"] > 0 and s["drops"] >= 0
    lat = s["latency_us"]
    assert set(lat) == {"mean", "p50", "p95", "p99", "p999"}
    assert 0 < lat["p50"] <= lat["p95"] <= lat["p99"] <= lat["p999"]
    cpu = s["cpu_pct"]
    assert set(cpu) == {"user", "system", "softirq", "irq", "idle"}
    assert all(0 <= v <= 100 for v in cpu.values())
    assert sum(cpu.values()) == pytest.approx(100, abs=1)
    assert 0 <= s["busy_poll_pct"] <= 100


def test_table_shows_the_headline_fields():
    result = irqlab("run", S, "--duration", SHORT, "--profile", "adaptive-coalescing")
    assert result.returncode == 0, result.stderr
    for label in ("throughput", "latency (us)", "p50", "p99", "p99.9", "cpu (%)", "user", "softirq",
                  "irqs/s", "packets/irq", "context switches", "cycles/query", "drops", "busy-poll share",
                  "sim events", "wall time", "events/wall s"):
        assert label in result.stdout, label
    assert "adaptive-coalescing" in result.stdout
    # A run that measured latency shows the ITR paper's load-latency product too.
    result = irqlab("run", S, "--duration", SHORT, "--set", "load.qps=20000")
    assert result.returncode == 0, result.stderr
    assert "load-latency product" in result.stdout and "cycles x us" in result.stdout


def test_the_disruption_model_reports_ipc_and_fixed_costs_do_not():
    """`[microarch] ipc_model = "disruption"` (its footprints given, as
    they are not yet calibrated) adds the perf-stat view: IPC and
    instructions per query, in the JSON and in the table."""
    assert "ipc" not in run_json()
    sets = ("--set", "microarch.thread_code_bytes=28672", "--set", "microarch.softirq_code_bytes=20480",
            "--set", "microarch.hardirq_code_bytes=4096", "--set", "microarch.ipc_model=disruption")
    s = run_json("--profile", "no-coalescing", *sets)
    assert 0 < s["ipc"] < 1 / 1.116 and s["instructions_per_query"] > 0
    result = irqlab("run", S, "--duration", SHORT, "--profile", "no-coalescing", *sets)
    assert result.returncode == 0, result.stderr
    assert "IPC" in result.stdout and "instructions/query" in result.stdout
    # Without its footprints the model is refused, in one sentence naming the field.
    result = irqlab("run", S, "--duration", SHORT, "--set", "microarch.ipc_model=disruption")
    assert result.returncode != 0 and "microarch.thread_code_bytes" in result.stderr
    assert "Traceback" not in result.stderr


def test_set_qps_makes_an_open_loop():
    s = run_json("--set", "load.qps=20000")
    assert s["mode"] == "open"
    assert s["offered_qps"] == pytest.approx(20000)


@pytest.mark.parametrize("profile", ["no-coalescing", "adaptive-coalescing", "busy-wait", "irq-suspend"])
def test_same_seed_gives_the_same_summary(profile):
    a = run_json("--profile", profile, "--seed", "3")
    b = run_json("--profile", profile, "--seed", "3")
    a.pop("wall_s")
    b.pop("wall_s")
    assert a == b


def test_console_script_is_installed():
    script = Path(sys.executable).parent / "irqlab"
    assert script.exists(), "make setup installs .venv/bin/irqlab"
    import subprocess

    result = subprocess.run([str(script), "run", S, "--duration", SHORT, "--json"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["scenario"] == "small"


def test_nothing_completed_reports_null_latency_and_warns():
    # A microsecond of measured time: no request completes. Needs the core's
    # null latency and `warnings` (issue 8, item 4).
    for json_flag in (["--json"], []):
        result = irqlab("run", S, "--duration", "0.000001", *json_flag)
        assert result.returncode == 0, result.stderr
        warnings = result.stderr.splitlines()
        assert warnings and all(w.startswith("irqlab: warning: ") for w in warnings), result.stderr
        assert any("latency" in w for w in warnings), warnings
        if json_flag:
            s = json.loads(result.stdout)
            assert s["requests_completed"] == 0
            assert s["latency_us"] == {k: None for k in ("mean", "p50", "p95", "p99", "p999")}
            assert s["warnings"] and all("\n" not in w for w in s["warnings"])
        else:
            line = next(l for l in result.stdout.splitlines() if l.startswith("latency (us)"))
            assert line.count("\u2014") == 5, line


def test_drops_by_site_add_up_to_drops():
    # Needs the core's drops_by_site and retransmits (issue 8, item 4).
    s = run_json("--set", "load.qps=20000")
    assert set(s["drops_by_site"]) == {"ring", "socket", "qdisc"}
    assert sum(s["drops_by_site"].values()) == s["drops"]
    assert isinstance(s["retransmits"], int) and s["retransmits"] >= 0


def test_dim_reports_the_time_share_of_each_profile():
    # The small scenario turns adaptive-rx off; TX DIM is on by default.
    s = run_json()
    assert s["dim"]["rx"] is None and s["dim"]["tx"]["cq_period_mode"] == "eqe"
    assert run_json("--set", "coalesce.adaptive-tx=false")["dim"] is None
    s = run_json("--profile", "adaptive-coalescing")
    rx = s["dim"]["rx"]
    assert rx["cq_period_mode"] == "cqe"
    assert list(rx["time_share_pct"]) == ["0", "1", "2", "3", "4"] and len(rx["profiles"]) == 5
    assert rx["profiles"][4] == {"usecs": 64, "frames": 64}
    assert sum(rx["time_share_pct"].values()) == pytest.approx(100)
    assert [q["queue"] for q in rx["queues"]] == [0, 1]
    for q in rx["queues"]:
        assert sum(q["time_share_pct"].values()) == pytest.approx(100)
    assert rx["changes"] == sum(q["changes"] for q in rx["queues"])
    table = irqlab("run", S, "--duration", SHORT, "--profile", "adaptive-coalescing").stdout
    line = next(l for l in table.splitlines() if l.startswith("dim rx (% time)"))
    assert "4 (64us/64): " in line and "changes" in line
    assert any(l.startswith("dim tx (% time)") for l in table.splitlines())


@pytest.mark.parametrize("body", [
    '[study]\nscenario = "small.toml"\n[axes]\n"load.qps" = [1000, 2000]\n',
    '[[plot]]\nx = "load.qps"\ny = "throughput_qps"\n',
    '"axes" = {"load.qps" = [1000]}\n',
])
def test_a_study_file_is_pointed_to_sweep(tmp_path, body):
    # Issue 62, item 17: it was "unknown field `plot`" (or `study`, `axes`).
    study = tmp_path / "x.study.toml"
    study.write_text(body)
    r = irqlab("run", str(study))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [f"irqlab: error: {study} is a study file; run it with `irqlab sweep {study}`"]
    import irqlab as api

    with pytest.raises(api.ScenarioError, match="is a study file; run it with `irqlab sweep"):
        api.run(study)


def test_the_shipped_study_files_are_pointed_to_sweep():
    from conftest import REPO

    for study in sorted((REPO / "scenarios").rglob("*.study.toml"))[:3]:
        r = irqlab("run", str(study))
        assert r.returncode == 2 and "is a study file; run it with `irqlab sweep" in r.stderr, r.stderr
