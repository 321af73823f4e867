#!/usr/bin/env python3
"""Fit the vIC scenario's four free constants to the paper's Table 2 baseline.

Targets: the eight numbers of Table 2's baseline columns (vIC off; Iometer,
4 KB reads, OIO 8, 16, 32 and 64): IOPS and CPU cycles per I/O. Nothing
else (every vIC-on number, Table 4 at 8 KB, Tables 6-8 and Figure 5 stay
predictions). Parameters, as docs/calibration.md ("The vIC paper") names
them: the array's service time per command (``array_service_ns``) and its
overlapped latency (``array_latency_ns``), the VMkernel's cycles per
completion (``vmk_complete_cycles``), and one scale on the first estimates
of the guest's and the VMM's per-I/O cycles (their shares kept).
Objective: the sum of squared relative errors over the eight numbers.

The search is a grid, refined around its best point: each round tries
every combination of ``--points`` values per parameter, the first across
the ranges below, each later one centred on the best point so far at half
the previous step.

Runs the simulator's example runner (``cargo build --release -p
irqlab-core --example run``), one seed, 0.3 s after 0.1 s per run:

    python3 tools/fit_vic.py --run target/release/examples/run
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

SCENARIO = "scenarios/vic/iometer.toml"
# Table 2's baseline columns (seed text of the paper, §4.1).
PAPER = {8: (30_500.0, 84_200.0), 16: (38_400.0, 77_000.0), 32: (46_400.0, 70_500.0), 64: (52_900.0, 78_400.0)}
# The first estimates the scale multiplies (crates/irqlab-core/src/scenario/storage.rs).
ESTIMATES = {
    "storage.guest_issue_cycles": 10_000,
    "storage.guest_complete_cycles": 10_000,
    "storage.guest_isr_cycles": 5_000,
    "storage.issue_trap_cycles": 8_000,
    "storage.ack_trap_cycles": 4_000,
    "storage.vmm_complete_cycles": 2_000,
    "storage.vmm_intr_cycles": 2_000,
}
RANGES = {"scale": (0.2, 1.4), "vmk": (5_000, 85_000), "service": (10_000, 30_000), "latency": (40_000, 240_000)}


RUN = {"duration_s": 0.3, "warmup_s": 0.1, "seeds": 1}


def overrides(p: dict) -> list[str]:
    o = [f"{k}={round(v * p['scale'])}" for k, v in ESTIMATES.items()]
    o += [
        f"storage.vmk_complete_cycles={round(p['vmk'])}",
        f"storage.array_service_ns={round(p['service'])}",
        f"storage.array_latency_ns={round(p['latency'])}",
        "vic.enabled=false",
        f"run.duration_s={RUN['duration_s']}",
        f"run.warmup_s={RUN['warmup_s']}",
    ]
    return o


def storage_means(binary: str, args: list[str]) -> dict:
    """The storage report's fields, averaged over the seeds 1..N."""
    reports = []
    for seed in range(1, RUN["seeds"] + 1):
        out = subprocess.run([binary, SCENARIO, *args, f"run.seed={seed}"],
                             check=True, capture_output=True, text=True, timeout=120).stdout
        reports.append(json.loads(out)["storage"])
    return {k: sum(r[k] for r in reports) / len(reports) for k in ("iops", "cycles_per_io", "vcpu_halt_pct")}


EXTRA: list[str] = []
# Table 6's VMK_VCPU_HALT without vIC (8 KB, OIO 64), read as the vCPUs'
# mean; a ninth target with --halt.
TABLE_6_HALT_PCT = 65.0
WITH_HALT = False


def run_point(binary: str, p: dict, oio: int) -> tuple[float, float]:
    st = storage_means(binary, [f"storage.oio={oio}", *EXTRA, *overrides(p)])
    return st["iops"], st["cycles_per_io"]


def halt_point(binary: str, p: dict) -> float:
    """The vCPUs' halted share at Table 6's point: 8 KB reads, OIO 64, vIC off."""
    return storage_means(binary, ["storage.oio=64", "storage.block_bytes=8192", *EXTRA, *overrides(p)])["vcpu_halt_pct"]


def objective(binary: str, p: dict) -> tuple[float, dict]:
    sims = {oio: run_point(binary, p, oio) for oio in PAPER}
    err = sum(((s[i] - PAPER[o][i]) / PAPER[o][i]) ** 2 for o, s in sims.items() for i in (0, 1))
    if WITH_HALT:
        halt = halt_point(binary, p)
        sims["halt"] = halt
        err += ((halt - TABLE_6_HALT_PCT) / TABLE_6_HALT_PCT) ** 2
    return err, sims


def around(centre: dict, step: dict, points: int) -> dict:
    """Each parameter's values: ``points`` steps centred on ``centre``, those above 0."""
    half = points // 2
    return {k: [centre[k] + step[k] * j for j in range(-half, half + 1) if centre[k] + step[k] * j > 0] for k in RANGES}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True, help="the example runner binary")
    ap.add_argument("--rounds", type=int, default=3, help="grid refinements (1 to 6)")
    ap.add_argument("--points", type=int, default=5, help="values per parameter per round (3 to 9)")
    ap.add_argument("--jobs", type=int, default=2, help="runs at once (1 to 64)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a scenario field for every run (to fit a variant of the scenario)")
    ap.add_argument("--halt", action="store_true",
                    help="also fit Table 6's VMK_VCPU_HALT without vIC (65.0 %%, 8 KB reads at OIO 64)")
    ap.add_argument("--seeds", type=int, default=1, help="seeds averaged per point (1 to 10)")
    ap.add_argument("--duration", type=float, default=0.3, help="simulated seconds measured per run (0.1 to 2)")
    ap.add_argument("--warmup", type=float, default=0.1, help="simulated seconds before measuring (0.1 to 2)")
    ap.add_argument("--centre", metavar="SCALE,VMK,SERVICE,LATENCY",
                    help="start from this point with a quarter of the default ranges' steps instead of the ranges")
    a = ap.parse_args()
    if not (1 <= a.rounds <= 6 and 3 <= a.points <= 9 and 1 <= a.jobs <= 64 and 1 <= a.seeds <= 10
            and 0.1 <= a.duration <= 2 and 0.1 <= a.warmup <= 2):
        print("fit_vic: --rounds must be 1-6, --points 3-9, --jobs 1-64, --seeds 1-10, --duration and --warmup 0.1-2",
              file=sys.stderr)
        return 2
    EXTRA.extend(a.set)
    RUN.update(seeds=a.seeds, duration_s=a.duration, warmup_s=a.warmup)
    global WITH_HALT
    WITH_HALT = a.halt
    # Round 1 spans RANGES; each later round is --points values centred on
    # the best so far, at half the previous step (values at or below 0
    # left out).
    step = {k: (hi - lo) / (a.points - 1) for k, (lo, hi) in RANGES.items()}
    axes = {k: [lo + step[k] * i for i in range(a.points)] for k, (lo, hi) in RANGES.items()}
    if a.centre:
        try:
            centre = dict(zip(RANGES, (float(x) for x in a.centre.split(",")), strict=True))
        except ValueError:
            print("fit_vic: --centre takes four numbers: scale, vmk, service and latency", file=sys.stderr)
            return 2
        step = {k: v / 4 for k, v in step.items()}
        axes = around(centre, step, a.points)
    best = None
    for r in range(a.rounds):
        grid = [dict(zip(axes, vals)) for vals in itertools.product(*axes.values())]
        with ThreadPoolExecutor(a.jobs) as ex:
            results = list(ex.map(lambda p: (objective(a.run, p), p), grid))
        (err, sims), p = min(results, key=lambda x: x[0][0])
        if best is None or err < best[0]:
            best = (err, sims, p)
        print(f"round {r + 1}: {len(grid)} points, best objective {err:.4f} at "
              + ", ".join(f"{k} {v:.4g}" for k, v in p.items()), flush=True)
        step = {k: v / 2 for k, v in step.items()}
        axes = around(best[2], step, a.points)
    err, sims, p = best
    halt = sims.pop("halt", None)
    rms = (err / (9 if halt is not None else 8)) ** 0.5
    print(f"best: objective {err:.4f}, RMS error {100 * rms:.1f} %")
    for oio, (iops, cyc) in sims.items():
        pi, pc = PAPER[oio]
        print(f"  OIO {oio}: IOPS {iops / 1e3:.1f}K / {pi / 1e3:.1f}K ({100 * (iops / pi - 1):+.0f} %), "
              f"cycles/IO {cyc / 1e3:.1f}K / {pc / 1e3:.1f}K ({100 * (cyc / pc - 1):+.0f} %)")
    if halt is not None:
        print(f"  Table 6 (8 KB, OIO 64): vCPUs halted {halt:.1f} % / {TABLE_6_HALT_PCT} %")
    print("constants: " + " ".join(overrides(p)[:-3]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
