#!/usr/bin/env python3
"""Two builds side by side on ``irqlab bench --scale``'s runs.

Each build is the ``run`` example of a checkout
(``cargo build --release -p irqlab-core --example run``); the runs are
those of :mod:`irqlab.bench_scale` (the thesis scenario at 8 to 512
application cores, 96 connections per core, each run sized to about the
same number of events), alternating between the builds so that both see
the same machine. For each core count and profile it prints each build's
best wall nanoseconds per simulated event over ``--repeat`` rounds, the
ratio between them, and whether both builds' summaries are identical (all
but the wall time): a speed-up that changed the results would show here.

    git worktree add /tmp/old OLD_COMMIT
    (cd /tmp/old && cargo build --release -p irqlab-core --example run)
    cargo build --release -p irqlab-core --example run
    .venv/bin/python bench/scale_compare.py /tmp/old/target/release/examples/run target/release/examples/run

Usage: bench/scale_compare.py OLD_RUN NEW_RUN [--cores 8,32,128,512] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from irqlab.bench_scale import CONNECTIONS_PER_CORE, CORES, EVENTS_PER_RUN, SCALE_PROFILES, scale_overrides  # noqa: E402

SCENARIO = ROOT / "scenarios" / "thesis" / "bare-metal.toml"
#: The thesis scenario's load threads (6 clients x 8 threads).
LOAD_THREADS = 48


def run(binary: str, cores: int, profile: str) -> dict:
    sets = scale_overrides(cores, LOAD_THREADS)
    args = [binary, str(SCENARIO), f"profile={profile}", *(f"{k}={v}" for k, v in sets.items())]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", help="the old build's run example")
    ap.add_argument("new", help="the new build's run example")
    ap.add_argument("--cores", default=",".join(map(str, CORES)), help="core counts (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds, alternating the builds (default 3)")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error(f"--repeat must be at least 1, not {args.repeat}")
    try:
        cores = [int(c) for c in args.cores.split(",")]
    except ValueError:
        ap.error(f"--cores must be a comma-separated list of core counts, not {args.cores!r}")
    for b in (args.old, args.new):
        if not Path(b).is_file():
            ap.error(f"{b} is not a file: build it with cargo build --release -p irqlab-core --example run")
    print(f"about {EVENTS_PER_RUN:,} events per run, {CONNECTIONS_PER_CORE} connections per core, best of {args.repeat}")
    print(f"{'cores':>5}  {'profile':<14} {'events':>10}  {'old ns/event':>12}  {'new ns/event':>12}  {'old/new':>7}  summaries")
    for n in cores:
        for p in SCALE_PROFILES:
            best = {"old": float("inf"), "new": float("inf")}
            summaries: dict[str, dict] = {}
            for _ in range(args.repeat):
                for name, b in (("old", args.old), ("new", args.new)):
                    s = run(b, n, p)
                    best[name] = min(best[name], 1e9 * s["wall_s"] / s["sim_events"])
                    # What each build did, not what it simulated.
                    s.pop("wall_s")
                    s.pop("sim_events_passed", None)
                    summaries[name] = s
            same = "identical" if summaries["old"] == summaries["new"] else "DIFFER"
            print(
                f"{n:>5}  {p:<14} {summaries['new']['sim_events']:>10,}  {best['old']:>12.1f}  {best['new']:>12.1f}"
                f"  {best['old'] / best['new']:>6.2f}x  {same}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
