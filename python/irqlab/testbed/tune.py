"""``irqlab testbed tune``: ``irqlab linux tune`` on the veth testbed, the
measured curve beside the simulator's prediction of the same curve.

memcached runs on the server core under ``irqlab linux exec --profile P``
(irq-suspend by default); ``irqlab linux tune`` runs in the server namespace
on the server veth with the load generator in the client namespace, and
puts the profile's value back when it is done (``--restore``). The search
is linux tune's (its loop, restart on drift and minimum-effect tie rule:
:mod:`irqlab.tuning`), with ``--min-effect`` passed on. The simulator then
runs ``scenarios/testbed/veth-2core.toml`` under the same
profile, rescaled by this machine's probe, at every value the tuner
measured, and the two curves are printed side by side.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Optional

from irqlab.knobs import knobs
from irqlab.testbed.netns import CLIENT_NS, SERVER_ADDR, SERVER_DEV, SERVER_NS, Testbed, TestbedError
from irqlab.tuning import DEFAULT_MIN_EFFECT, check_min_effect

#: Real per-NAPI knob -> scenario field (the knob table's; a veth has no coalescing).
SCENARIO_FIELD = {k["linux_name"]: k["path"] for k in knobs() if k["part"] == "napi" and k["linux_name"]}


def simulated_curve(values: list[int], knob: str, objective: str, profile: str, connections: int,
                    machine: dict[str, Any], duration_s: float = 0.3) -> list[dict[str, float]]:
    """The simulator's objective at each value (server-core CPU per request
    for ``cpu_per_request``, as the testbed measures it with ``--cpus``)."""
    from irqlab.run import run
    from irqlab.scenario import Scenario
    from irqlab.testbed.compare import VETH_OVERRIDES, default_scenario

    base = Scenario.load(default_scenario())
    fixed = {**VETH_OVERRIDES, "load.connections_per_thread": connections,
             **{k: v for k, v in machine.items() if not k.startswith("_")}}
    out = []
    for v in values:
        s = run(base, profile=profile, overrides={**fixed, SCENARIO_FIELD[knob]: v}, duration_s=duration_s)
        q = s.throughput_qps
        y = {"throughput": q, "p99": s.latency_us.p99,
             "cpu_per_request": (100.0 - s.cpu_pct.idle) / 100.0 / q * 1e6 if q else float("nan")}[objective]
        out.append({"value": v, objective: y})
    return out


def run_testbed_tune(knob: str, low: int, high: int, objective: str, *, profile: str = "irq-suspend",
                     connections: int = 16, slice_s: float = 1.0, budget_s: float = 60.0,
                     min_effect: float = DEFAULT_MIN_EFFECT, server_core: int = 1, client_core: int = 0, sim: bool = True,
                     progress: Optional[Callable[[str], None]] = None) -> dict[str, Any]:
    from irqlab.testbed import run as tb
    from irqlab.testbed.machine import machine as _machine

    check_min_effect(min_effect, TestbedError)
    if knob not in SCENARIO_FIELD:
        raise TestbedError(f"--knob must be one of {', '.join(SCENARIO_FIELD)} on the testbed (veth has no coalescing)")
    say = progress or (lambda _m: None)
    plan = tb.Plan(profiles=(profile,), connections=connections, server_core=server_core, client_core=client_core)
    machine = _machine()["rescaled"] if sim else {}
    bed = Testbed(server_core, client_core)
    server = None
    # Ctrl-C and SIGTERM unwind through the finally below, which removes the testbed.
    old_term = signal.signal(signal.SIGTERM, tb._interrupt)
    finished = False
    try:
        bed.create()
        server = tb._start_server(plan, profile)
        tb._wait_ready()
        tb._loadgen_run(plan, [], 0.1, preload=True)
        load = (f"ip netns exec {CLIENT_NS} taskset -c {client_core} irqlab loadgen --server {SERVER_ADDR}:{tb.PORT} "
                f"--connections {connections} --no-preload")
        cmd = ["ip", "netns", "exec", SERVER_NS, sys.executable, "-m", "irqlab", "linux", "tune", SERVER_DEV,
               "--knob", knob, "--range", f"{low}:{high}", "--objective", objective, "--load", load,
               "--slice", f"{slice_s:g}", "--budget", f"{budget_s:g}", "--min-effect", repr(min_effect),
               "--cpus", str(server_core), "--restore", "--json"]
        say(f"tuning {knob} over {low}:{high} for {objective} under {profile} ({budget_s:g} s at most)")
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=budget_s + 120)
        if proc.returncode != 0:
            raise TestbedError(f"irqlab linux tune failed: {(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
        try:
            measured = json.loads(proc.stdout)
        except ValueError:
            raise TestbedError("irqlab linux tune printed no JSON result") from None
        finished = True
    finally:
        try:
            if server is not None:
                tb._stop_server(server)
        finally:
            tb.remove(bed, finished, old_term)
    values = [c["value"] for c in measured["curve"]]
    simulated = simulated_curve(values, knob, objective, profile, connections, machine) if sim else []
    return {"profile": profile, "measured": measured, "simulated": simulated, "machine": machine}


def render(result: dict[str, Any]) -> str:
    m = result["measured"]
    obj = m["objective"]
    sim = {c["value"]: c[obj] for c in result["simulated"]}
    # linux tune has no best (None) when the budget held no slice: it names only values it measured.
    best = "no value measured within the budget" if m["best"] is None else f"measured best {m['best']}"
    if m.get("kept"):
        # A tie: nothing the search found beat the profile's own value by more than the tolerance.
        best += (f" (the profile's own value: the search's best, {m['search_best']}, did not beat it by more than "
                 f"{m['tolerance']:.4g})")
    lines = [f"{m['knob']} on the testbed under {result['profile']}, objective {obj}: {best} "
             f"({len(m['steps'])} steps)"]
    if sim:
        pick = max if m["maximize"] else min
        lines[0] += f"; simulated best of the same values {pick(sim, key=lambda v: sim[v])}"
    lines.append(f"{m['knob']:>20}{'measured':>14}{'simulated':>14}")
    for c in m["curve"]:
        s = sim.get(c["value"])
        lines.append(f"{c['value']:>20}{c[obj]:>14.4g}" + (f"{s:>14.4g}" if s is not None else ""))
    return "\n".join(lines)


def write_results(out: Path, result: dict[str, Any]) -> Path:
    """Both curves as a results directory (axes: the knob and ``source``)."""
    import hashlib

    from irqlab._core import __version__
    from irqlab.results import write_directory

    m = result["measured"]
    knob, obj = m["knob"], m["objective"]
    field = {"throughput": "throughput_qps", "p99": "latency_us.p99", "cpu_per_request": "cpu_per_request_us"}[obj]
    recs = []
    for source, curve in (("measured", m["curve"]), ("simulated", result["simulated"])):
        for i, c in enumerate(curve):
            point = 2 * i + (source == "simulated")
            summary: dict[str, Any] = {}
            node = summary
            parts = field.split(".")
            for p in parts[:-1]:
                node = node.setdefault(p, {})
            node[parts[-1]] = c[obj]
            recs.append({"key": f"{point}/0", "point": point, "replicate": 0, "profile": result["profile"],
                         "knobs": [[knob, c["value"]], ["source", source]], "seed": None,
                         "duration_s": m["slice_s"], "error": None, "summary": summary, "wall_time_s": None,
                         "irqlab_version": __version__, "git_commit": None})
    fp = hashlib.sha256(json.dumps([knob, obj, m["range"]]).encode()).hexdigest()
    study = (f'# Written by `irqlab testbed tune`.\n[study]\nname = "testbed-tune-{knob}"\n'
             f'description = "{knob} on the veth testbed under {result["profile"]}: measured by irqlab linux tune, '
             f'beside the simulator at the same values"\n\n[[plot]]\nx = "{knob}"\ny = "{field}"\nhue = "source"\n')
    from irqlab.files import write_text_whole

    out.mkdir(exist_ok=True)  # checked before the testbed was built: its parent exists
    # The kind's own file first: an interrupted write is still recognised as this command's output.
    write_text_whole(out / "testbed-tune.json", json.dumps(result, indent=1))
    write_directory(out, name=f"testbed-tune-{knob}", fingerprint=fp, axes=[knob, "source"], records=recs,
                    study_toml=study)
    return out
