#!/usr/bin/env python3
"""What a Python policy costs the thesis run (issue 41: at a call every
100 µs of simulated time, no more than twice the run's time).

For busy-wait and no-coalescing, the thesis scenario as ``make demo`` runs
it (``scenarios/thesis/bare-metal.toml``: 1 simulated second after 50 ms of
warm-up), best of ``--repeat`` wall times of ``irqlab.run`` (alternating):

* ``none``: no policy;
* ``idle``: a policy that reads nothing and sets nothing, every 100 µs (the
  crossing itself: the run's pause, the sample, the call);
* ``reads``: one that reads the counters, every queue and every core at each
  call and sets nothing (what a policy that looks at everything pays);
* ``example``: ``examples/policies/rate_coalescer.py`` at its own period
  (1 ms), which sets knobs.

It prints each wall time and its ratio to ``none``; ``--json`` prints them
as one JSON object.

    .venv/bin/python bench/policy_overhead.py [--repeat 5] [--period-us 100] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

import irqlab  # noqa: E402
from irqlab.policy import Policy, load_policy  # noqa: E402

SCENARIO = ROOT / "scenarios" / "thesis" / "bare-metal.toml"
PROFILES = ("busy-wait", "no-coalescing")


def idle(period_us: float) -> Policy:
    class Idle(Policy):
        def observe(self, sample: Any) -> None:
            return None

    p = Idle()
    p.period_us = period_us
    return p


def reads(period_us: float) -> Policy:
    class Reads(Policy):
        def __init__(self) -> None:
            self.total = 0

        def observe(self, sample: Any) -> None:
            self.total += sample.packets + sample.hard_irqs + sample.requests_completed
            self.total += sum(q["irqs"] for q in sample.queues)
            self.total += sum(c["softirq_ns"] for c in sample.cores)
            return None

    p = Reads()
    p.period_us = period_us
    return p


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="rounds, best of (default %(default)s)")
    ap.add_argument("--period-us", type=float, default=100.0, help="the idle and reading policies' period (default %(default)s)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    if not 1 <= args.repeat <= 1000:
        ap.error(f"--repeat must be from 1 to 1000, not {args.repeat}")
    if not args.period_us > 0:
        ap.error(f"--period-us must be above 0, not {args.period_us}")
    example = str(ROOT / "examples" / "policies" / "rate_coalescer.py") + ":RateCoalescer"
    kinds: dict[str, Callable[[], Optional[Policy]]] = {
        "none": lambda: None,
        "idle": lambda: idle(args.period_us),
        "reads": lambda: reads(args.period_us),
        "example": lambda: load_policy(example),
    }
    out: dict[str, Any] = {"scenario": str(SCENARIO.relative_to(ROOT)), "period_us": args.period_us, "profiles": {}}
    for profile in PROFILES:
        best = {k: float("inf") for k in kinds}
        calls: dict[str, int] = {}
        for _ in range(args.repeat):
            for k, make in kinds.items():
                t = time.perf_counter()
                s = irqlab.run(SCENARIO, profile=profile, policy=make())
                best[k] = min(best[k], time.perf_counter() - t)
                calls[k] = s.policy.calls if s.get("policy") else 0
        out["profiles"][profile] = {
            k: {"wall_s": best[k], "ratio": best[k] / best["none"], "calls": calls[k]} for k in kinds
        }
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"{out['scenario']}, best of {args.repeat}; idle and reads every {args.period_us:g} µs of simulated time")
    print(f"{'profile':<15} {'policy':<8} {'calls':>7} {'wall s':>8} {'x none':>7}")
    for profile, rows in out["profiles"].items():
        for k, r in rows.items():
            print(f"{profile:<15} {k:<8} {r['calls']:>7} {r['wall_s']:>8.3f} {r['ratio']:>6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
