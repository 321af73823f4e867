"""The testbed's measurements, and the simulator's prediction beside them,
as a results directory of the study format (``manifest.json``,
``journal.jsonl``, ``results.parquet``, ``study.toml``), so that ``irqlab
report DIR`` draws and tabulates them like any sweep.

One row per measurement (``replicate`` is the repeat) and one per simulated
run; the axes are ``phase`` (closed, low, medium) and ``source`` (measured
or simulated). The columns a measured row has that a simulated one may not:
``napi_thread_cpu_pct`` (the server's own receive, run by the veth's NAPI
thread), ``net_rx_per_request`` (the client's receive softirqs that veth
runs on the server core), ``other_cpu_pct`` (other processes' CPU during the
measurement, percent of one core), ``flagged`` and ``attempt``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Optional


NAME = "testbed"

_STUDY_TOML = '''# The veth testbed: each profile measured (repeats as replicates) and simulated.
# Written by `irqlab testbed run --out`; `irqlab report DIR` draws it.
[study]
name = "testbed"
description = "irqlab testbed run: memcached on one core behind a veth with threaded NAPI, the load generator on the other; measured beside the simulator's prediction (scenarios/testbed/veth-2core.toml)."

[[plot]]
x = "source"
y = "throughput_qps"
col = "phase"
title = "Throughput, measured and simulated"

[[plot]]
x = "source"
y = "napi_wakeups_per_request"
col = "phase"
title = "NAPI-thread wake-ups per request"

[[plot]]
x = "source"
y = "cpu_pct.busy"
col = "phase"
title = "Server core busy"
'''


def _measured_summary(r: dict[str, Any]) -> dict[str, Any]:
    lg, core = r["loadgen"], r["server_core"]
    qps = lg["achieved_qps"]
    return {
        "throughput_qps": qps,
        "latency_us": {q: lg["latency_us"][q] for q in ("p50", "p95", "p99") if q in lg["latency_us"]},
        "cpu_pct": {k: core[k] for k in ("user", "system", "softirq", "irq", "idle")},
        "napi_wakeups_per_request": core["napi_wakeups_per_s"] / max(qps, 1e-9),
        "napi_thread_cpu_pct": core.get("napi_thread_pct"),
        "net_rx_per_request": core["net_rx_per_s"] / max(qps, 1e-9),
        "other_cpu_pct": r.get("other_cpu", {}).get("pct_of_core"),
        "flagged": bool(r.get("flagged")),
        "attempt": r.get("attempt", 1),
    }


def _simulated_summary(s: dict[str, Any]) -> dict[str, Any]:
    from irqlab.testbed.compare import sim_wakeups_per_s

    qps = s["throughput_qps"]
    return {
        "throughput_qps": qps,
        "latency_us": {q: s["latency_us"][q] for q in ("p50", "p95", "p99") if q in s["latency_us"]},
        "cpu_pct": {k: s["cpu_pct"][k] for k in ("user", "system", "softirq", "irq", "idle")},
        "napi_wakeups_per_request": sim_wakeups_per_s(s) / max(qps, 1e-9),
    }


def records(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The journal records of ``result`` (what ``irqlab testbed run`` returns)."""
    from irqlab._core import __version__
    from irqlab.provenance import git_commit

    measured = result["measured"]
    plan = measured["plan"]
    phases = ("closed", "low", "medium")
    profiles = list(plan["profiles"])
    commit = git_commit()
    out = []

    def rec(profile: str, phase: str, source: str, replicate: int, duration: float, summary: dict[str, Any]) -> None:
        point = (profiles.index(profile) * len(phases) + phases.index(phase)) * 2 + (source == "simulated")
        out.append({
            "key": f"{point}/{replicate}", "point": point, "replicate": replicate, "profile": profile,
            "knobs": [["phase", phase], ["source", source]], "seed": None, "duration_s": duration,
            "error": None, "summary": summary, "wall_time_s": None,
            "irqlab_version": __version__, "git_commit": commit,
        })

    for r in measured.get("runs", []):
        dur = plan["closed_s"] if r["phase"] == "closed" else plan["open_s"]
        rec(r["profile"], r["phase"], "measured", r["repeat"], dur, _measured_summary(r))
    for p, by_phase in (result.get("simulated") or {}).items():
        for ph in phases:
            if ph in by_phase:
                rec(p, ph, "simulated", 0, by_phase[ph].get("duration_s") or 0.0, _simulated_summary(by_phase[ph]))
    return out


def write_results(out: Path, result: dict[str, Any], scenario_text: Optional[str] = None) -> Path:
    """Write ``result`` as a results directory at ``out`` (created; its
    earlier testbed files replaced) and return it."""
    from irqlab.results import write_directory

    fingerprint = hashlib.sha256(json.dumps(result["measured"]["plan"], sort_keys=True, default=str).encode()).hexdigest()
    return write_directory(out, name=NAME, fingerprint=fingerprint, axes=["phase", "source"], records=records(result),
                           study_toml=_STUDY_TOML, scenario_text=scenario_text)
