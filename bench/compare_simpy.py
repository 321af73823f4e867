"""irqlab against an equivalent SimPy model (bench/simpy_thesis.py) on the thesis scenario.

For busy-wait and no-coalescing, ``--rounds`` rounds (default 3), alternating
irqlab and SimPy, each simulating the same ``--duration`` seconds from an
empty system (irqlab's warm-up is set to 0, so both count every request
completed over the whole simulated time). For each profile it prints:

* simulated requests per wall-clock second of each simulator (requests
  completed over the simulated time divided by the wall time of the
  simulation itself: irqlab's engine ``wall_s``, SimPy's ``env.run``), the
  median over the rounds, and the ratio irqlab / SimPy;
* both throughputs (QPS) and SimPy's relative difference from irqlab.

It exits with status 1 and one sentence on stderr if a profile's QPS differ
by more than ``--max-diff-pct`` (5 %), and with status 2 if simpy is not
installed. ``--json`` prints the figures as one JSON object instead.

    .venv/bin/python bench/compare_simpy.py [--duration 0.25] [--rounds 3] [--seed 1] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SCENARIO = REPO / "scenarios" / "thesis" / "bare-metal.toml"
PROFILES = ("busy-wait", "no-coalescing")
#: The SimPy model implements irqlab's fixed-cost model (every operation its
#: `costs.*_cycles`, two fitted interruption penalties), not the disruption
#: model the thesis scenario now runs: irqlab runs the scenario with fixed
#: costs, its [costs] back at their defaults (the fixed-cost fit) and the
#: service time that fit gave (docs/calibration.md, "The fixed-cost fit").
FIXED_COST_SERVICE_MEAN_CYCLES = 5534


def fixed_cost_scenario(profile: str) -> Any:
    """The thesis scenario under the fixed-cost model the SimPy version implements."""
    from irqlab.scenario import Scenario

    defaults = Scenario.from_str('name = "defaults"').resolved()["costs"]
    ours = Scenario.load(SCENARIO).resolved()["costs"]
    overrides = ["microarch.ipc_model=fixed"]
    overrides += [f"costs.{k}={v}" for k, v in defaults.items() if ours.get(k) != v]
    overrides += [f'app.service={{ dist = "exponential", mean_cycles = {FIXED_COST_SERVICE_MEAN_CYCLES} }}']
    return Scenario.load(SCENARIO).with_profile(profile).with_overrides(overrides)


def simpy_constants(m: Any, profile: str) -> dict[str, Any]:
    """The SimPy model's constants under irqlab's resolved-scenario names."""
    p = m.PROFILES[profile]
    c = {f"costs.{k}": v for k, v in m.COSTS.items()}
    c.update({
        "cpu.app_cores": m.CORES,
        "cpu.freq_ghz": m.FREQ_GHZ,
        "cpu.wakeup_latency_ns": m.WAKEUP_LATENCY_NS,
        "nic.wire_latency_ns": m.WIRE_NS,
        "nic.dma_latency_ns": m.DMA_NS,
        "napi.weight": m.NAPI_WEIGHT,
        "epoll.maxevents": m.MAXEVENTS,
        "epoll.busy_poll_usecs": p.busy_poll_us,
        "epoll.busy_poll_budget": p.busy_poll_budget,
        "epoll.blocking": p.blocking,
        "app.service.mean_cycles": m.SERVICE_MEAN_CYCLES,
        "load.connections": m.CONNECTIONS,
    })
    if p.interrupts:
        c.update({"coalesce.rx-usecs": p.rx_usecs, "coalesce.rx-frames": p.rx_frames})
    return c


def constant_mismatches(m: Any, scenario: Any, profile: str) -> list[str]:
    """Where the SimPy model's constants differ from irqlab's resolved scenario."""
    r = scenario.resolved()
    load = r["load"]
    r["load"] = {**load, "connections": load["clients"] * load["threads_per_client"] * load["connections_per_thread"]}
    out = []
    for key, ours in simpy_constants(m, profile).items():
        node: Any = r
        for part in key.split("."):
            node = node[part]
        if node != ours:
            out.append(f"{key}: irqlab {node!r}, SimPy {ours!r}")
    return out


def run_irqlab(scenario: Any, duration_s: float, seed: int) -> dict[str, Any]:
    from irqlab.run import run

    s = run(scenario, overrides={"run.warmup_s": 0.0}, seed=seed, duration_s=duration_s)
    wall = s.wall_s
    return {
        "requests": s.requests_completed,
        "sim_time_s": s.sim_time_s,
        "wall_s": wall,
        "throughput_qps": s.requests_completed / s.sim_time_s,
        "requests_per_wall_s": s.requests_completed / wall if wall > 0 else float("inf"),
    }


def compare(duration_s: float, rounds: int, seed: int) -> dict[str, Any]:
    sys.path.insert(0, str(HERE))
    import simpy_thesis  # noqa: E402  (bench/ is not a package)

    start = time.perf_counter()
    out: dict[str, Any] = {
        "scenario": str(SCENARIO.relative_to(REPO)),
        "duration_s": duration_s,
        "rounds": rounds,
        "seed": seed,
        "simpy_version": simpy_thesis.simpy.__version__,
        "profiles": {},
    }
    for profile in PROFILES:
        scenario = fixed_cost_scenario(profile)
        runs: dict[str, list[dict[str, Any]]] = {"irqlab": [], "simpy": []}
        for _ in range(rounds):
            runs["irqlab"].append(run_irqlab(scenario, duration_s, seed))
            runs["simpy"].append(simpy_thesis.run(profile, duration_s, seed))
        figures: dict[str, Any] = {}
        for sim, rs in runs.items():
            figures[sim] = {
                "throughput_qps": statistics.median(r["throughput_qps"] for r in rs),
                "requests": [r["requests"] for r in rs],
                "sim_time_s": rs[0]["sim_time_s"],
                "wall_s": [r["wall_s"] for r in rs],
                "requests_per_wall_s": [r["requests_per_wall_s"] for r in rs],
                "median_requests_per_wall_s": statistics.median(r["requests_per_wall_s"] for r in rs),
            }
        i, s = figures["irqlab"], figures["simpy"]
        figures["speed_ratio"] = i["median_requests_per_wall_s"] / s["median_requests_per_wall_s"]
        figures["qps_diff_pct"] = 100.0 * (s["throughput_qps"] - i["throughput_qps"]) / i["throughput_qps"]
        figures["constant_mismatches"] = constant_mismatches(simpy_thesis, scenario, profile)
        out["profiles"][profile] = figures
    out["total_wall_s"] = time.perf_counter() - start
    return out


def table(r: dict[str, Any]) -> str:
    lines = [
        f"irqlab vs SimPy on {r['scenario']}: {r['duration_s']} simulated s per run from an empty system, "
        f"seed {r['seed']}, median of {r['rounds']} alternating rounds (simpy {r['simpy_version']})",
        "",
        f"{'profile':15} {'simulator':9} {'QPS':>11} {'requests':>9} {'wall s':>8} {'requests/wall s':>16}",
    ]
    for profile, f in r["profiles"].items():
        for sim in ("irqlab", "simpy"):
            x = f[sim]
            lines.append(
                f"{profile if sim == 'irqlab' else '':15} {sim:9} {x['throughput_qps']:>11,.0f} "
                f"{statistics.median(x['requests']):>9,.0f} {statistics.median(x['wall_s']):>8.3f} "
                f"{x['median_requests_per_wall_s']:>16,.0f}"
            )
        lines.append(
            f"{'':15} irqlab is {f['speed_ratio']:.1f}x faster; SimPy's QPS {f['qps_diff_pct']:+.2f} % from irqlab's"
        )
        for m in f["constant_mismatches"]:
            lines.append(f"{'':15} constant differs: {m}")
    lines.append("")
    lines.append(f"total wall time {r['total_wall_s']:.1f} s")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=0.25, help="simulated seconds per run (default 0.25)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per profile (default 3)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-diff-pct", type=float, default=5.0, help="largest QPS difference accepted (default 5)")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = ap.parse_args(argv)
    if not args.duration > 0 or args.rounds < 1:
        ap.error("--duration must be positive and --rounds at least 1")
    try:
        import simpy  # noqa: F401
    except ImportError:
        print("compare_simpy: error: simpy is not installed; install the pin of requirements-dev.txt "
              "(.venv/bin/pip install -r requirements-dev.txt)", file=sys.stderr)
        return 2
    r = compare(args.duration, args.rounds, args.seed)
    worst = max(r["profiles"].items(), key=lambda kv: abs(kv[1]["qps_diff_pct"]))
    r["max_diff_pct"] = args.max_diff_pct
    r["ok"] = abs(worst[1]["qps_diff_pct"]) <= args.max_diff_pct
    print(json.dumps(r, indent=2) if args.json else table(r))
    for profile, f in r["profiles"].items():
        for m in f["constant_mismatches"]:
            print(f"compare_simpy: warning: {profile}: the SimPy model's constant differs from irqlab's: {m}", file=sys.stderr)
    if not r["ok"]:
        profile, f = worst
        print(
            f"compare_simpy: error: under {profile} the SimPy model's throughput ({f['simpy']['throughput_qps']:,.0f} QPS) "
            f"differs from irqlab's ({f['irqlab']['throughput_qps']:,.0f} QPS) by {f['qps_diff_pct']:+.2f} %, "
            f"more than {args.max_diff_pct:g} %.",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
