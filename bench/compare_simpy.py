"""irqlab against two SimPy models of the thesis scenario, side by side.

The models: ``process`` (``bench/simpy_thesis.py``: processes, a
``PreemptiveResource`` per core, ``simpy.Interrupt``) and ``fast``
(``bench/simpy_thesis_fast.py``: the same model as callbacks on timeouts and
a hand-written state machine per core, the fastest SimPy form we know). For
busy-wait and no-coalescing, ``--rounds`` rounds (default 3), each running
irqlab and then every model of ``--models`` (default both), each simulating
the same ``--duration`` seconds from an empty system (irqlab's warm-up is
set to 0, so all count every request completed over the whole simulated
time). For each profile it prints:

* simulated requests per wall-clock second of each simulator (requests
  completed over the simulated time divided by the wall time of the
  simulation itself: irqlab's engine ``wall_s``, SimPy's ``env.run``), the
  median over the rounds, and the ratio of irqlab's to each model's;
* each throughput (QPS) and each model's relative difference from irqlab;
* the headline: irqlab's ratio to the fastest SimPy model.

It exits with status 1 and one sentence on stderr if any model's QPS differs
from irqlab's by more than ``--max-diff-pct`` (5 %), and with status 2 if
simpy is not installed. ``--json`` prints the figures as one JSON object
instead: per profile ``irqlab``, ``models`` (each model's figures with its
``speed_ratio`` and ``qps_diff_pct``), ``fastest`` (the fastest model's
name) and, for readers of the one-model version, ``simpy``,
``speed_ratio`` and ``qps_diff_pct`` of that fastest model.

    .venv/bin/python bench/compare_simpy.py [--duration 0.25] [--rounds 3] [--seed 1]
        [--models process,fast] [--json]
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
#: The SimPy models: name -> module in bench/.
MODELS = {"process": "simpy_thesis", "fast": "simpy_thesis_fast"}
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


def load_models(names: list[str]) -> dict[str, Any]:
    """The SimPy models' modules, by name (bench/ is not a package)."""
    import importlib

    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    return {name: importlib.import_module(MODELS[name]) for name in names}


def figures_of(rs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "throughput_qps": statistics.median(r["throughput_qps"] for r in rs),
        "requests": [r["requests"] for r in rs],
        "sim_time_s": rs[0]["sim_time_s"],
        "wall_s": [r["wall_s"] for r in rs],
        "requests_per_wall_s": [r["requests_per_wall_s"] for r in rs],
        "median_requests_per_wall_s": statistics.median(r["requests_per_wall_s"] for r in rs),
    }


def compare(duration_s: float, rounds: int, seed: int, models: Optional[list[str]] = None) -> dict[str, Any]:
    names = list(models or MODELS)
    modules = load_models(names)
    start = time.perf_counter()
    out: dict[str, Any] = {
        "scenario": str(SCENARIO.relative_to(REPO)),
        "duration_s": duration_s,
        "rounds": rounds,
        "seed": seed,
        "models": names,
        "simpy_version": next(iter(modules.values())).simpy.__version__,
        "profiles": {},
    }
    for profile in PROFILES:
        scenario = fixed_cost_scenario(profile)
        runs: dict[str, list[dict[str, Any]]] = {"irqlab": [], **{name: [] for name in names}}
        for _ in range(rounds):
            runs["irqlab"].append(run_irqlab(scenario, duration_s, seed))
            for name, module in modules.items():
                runs[name].append(module.run(profile, duration_s, seed))
        i = figures_of(runs["irqlab"])
        figures: dict[str, Any] = {"irqlab": i, "models": {}}
        for name, module in modules.items():
            m = figures_of(runs[name])
            m["speed_ratio"] = i["median_requests_per_wall_s"] / m["median_requests_per_wall_s"]
            m["qps_diff_pct"] = 100.0 * (m["throughput_qps"] - i["throughput_qps"]) / i["throughput_qps"]
            m["constant_mismatches"] = constant_mismatches(module, scenario, profile)
            figures["models"][name] = m
        fastest = max(names, key=lambda n: figures["models"][n]["median_requests_per_wall_s"])
        f = figures["models"][fastest]
        figures["fastest"] = fastest
        figures["simpy"] = f
        figures["speed_ratio"] = f["speed_ratio"]
        figures["qps_diff_pct"] = f["qps_diff_pct"]
        figures["constant_mismatches"] = [
            f"{name}: {m}" for name in names for m in figures["models"][name]["constant_mismatches"]
        ]
        out["profiles"][profile] = figures
    out["total_wall_s"] = time.perf_counter() - start
    return out


def worst_diff(r: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """The profile, model and figures of the largest QPS difference from irqlab."""
    return max(
        ((profile, name, m) for profile, f in r["profiles"].items() for name, m in f["models"].items()),
        key=lambda x: abs(x[2]["qps_diff_pct"]),
    )


def table(r: dict[str, Any]) -> str:
    lines = [
        f"irqlab vs SimPy on {r['scenario']}: {r['duration_s']} simulated s per run from an empty system, "
        f"seed {r['seed']}, median of {r['rounds']} alternating rounds (simpy {r['simpy_version']})",
        "",
        f"{'profile':15} {'simulator':14} {'QPS':>11} {'vs irqlab':>9} {'requests':>9} {'wall s':>8} "
        f"{'requests/wall s':>16} {'irqlab is':>10}",
    ]
    for profile, f in r["profiles"].items():
        rows = [("irqlab", f["irqlab"])] + [(f"simpy-{n}", m) for n, m in f["models"].items()]
        for k, (sim, x) in enumerate(rows):
            diff = f"{x['qps_diff_pct']:+.2f} %" if "qps_diff_pct" in x else ""
            ratio = f"{x['speed_ratio']:.1f}x" if "speed_ratio" in x else ""
            lines.append(
                f"{profile if k == 0 else '':15} {sim:14} {x['throughput_qps']:>11,.0f} {diff:>9} "
                f"{statistics.median(x['requests']):>9,.0f} {statistics.median(x['wall_s']):>8.3f} "
                f"{x['median_requests_per_wall_s']:>16,.0f} {ratio:>10}"
            )
        lines.append(f"{'':15} irqlab is {f['speed_ratio']:.1f}x the fastest SimPy model (simpy-{f['fastest']})")
        for m in f["constant_mismatches"]:
            lines.append(f"{'':15} constant differs: {m}")
    lines.append("")
    lines.append(
        "headline: irqlab is "
        + ", ".join(f"{f['speed_ratio']:.1f}x ({p})" for p, f in r["profiles"].items())
        + " the fastest SimPy model"
    )
    lines.append(f"total wall time {r['total_wall_s']:.1f} s")
    return "\n".join(lines)


def model_list(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in MODELS]
    if bad or not names or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated list of distinct models among {', '.join(MODELS)} (got {text!r})"
        )
    return names


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=0.25, help="simulated seconds per run (default 0.25)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per profile (default 3)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-diff-pct", type=float, default=5.0, help="largest QPS difference accepted (default 5)")
    ap.add_argument(
        "--models", type=model_list, default=list(MODELS),
        help=f"SimPy models to run, comma-separated (default {','.join(MODELS)})",
    )
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
    r = compare(args.duration, args.rounds, args.seed, args.models)
    profile, name, worst = worst_diff(r)
    r["max_diff_pct"] = args.max_diff_pct
    r["ok"] = abs(worst["qps_diff_pct"]) <= args.max_diff_pct
    print(json.dumps(r, indent=2) if args.json else table(r))
    for p, f in r["profiles"].items():
        for m in f["constant_mismatches"]:
            print(f"compare_simpy: warning: {p}: a SimPy model's constant differs from irqlab's: {m}", file=sys.stderr)
    if not r["ok"]:
        irqlab_qps = r["profiles"][profile]["irqlab"]["throughput_qps"]
        print(
            f"compare_simpy: error: under {profile} the {name} SimPy model's throughput "
            f"({worst['throughput_qps']:,.0f} QPS) differs from irqlab's ({irqlab_qps:,.0f} QPS) "
            f"by {worst['qps_diff_pct']:+.2f} %, more than {args.max_diff_pct:g} %.",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
