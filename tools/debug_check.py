#!/usr/bin/env python3
"""Run every scenario under every profile it accepts on a debug build.

A debug build keeps the model's `debug_assert!`s (states the model calls
impossible, e.g. "a frozen core completes nothing" in
`crates/irqlab-core/src/model/kernel/sched.rs`), which release builds, and so every
published figure, skip. This runs the debug build of the `run` example
(`crates/irqlab-core/examples/run.rs`) on each scenario file under
`scenarios/` (recursively; `*.study.toml` are studies, not scenarios) ×
(the file's own profile and every profile of `irqlab profiles`) × (the load
as written, which is closed loop unless the file sets `load.qps`, and open
loop at `--qps`), each for `--duration` simulated seconds after the file's
warm-up, and fails if any run exits non-zero (a panic or a run error).

Combinations the scenario refuses (busy-wait with a bulk sender, an open
loop for a sender with no request rate) are listed as refused and skipped;
refusal is decided by the same validation the simulator applies
(`irqlab._core.resolve`), so it runs with the virtualenv of `make setup`
(`.venv/bin/python tools/debug_check.py`).

With `--save DIR` every run's summary (the JSON the run example prints) is
written to DIR, one file per run; `--compare DIR` then fails unless every
run prints exactly the summary saved there. That is the full comparison a
refactor of the model must pass (every summary bit-identical), usually with a
release build for speed:

    cargo build --release -p irqlab-core --example run
    .venv/bin/python tools/debug_check.py --run target/release/examples/run --save /tmp/before
    # ... change the model, rebuild ...
    .venv/bin/python tools/debug_check.py --run target/release/examples/run --compare /tmp/before

Usage: .venv/bin/python tools/debug_check.py [--run PATH] [--duration S] [--qps Q] [--jobs N] [--save DIR | --compare DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Summary lines that say what the simulator did, not what it simulated.
ENGINE_LINE = re.compile(r'^\s*"(wall_s|sim_events_passed)":')


def scenarios() -> list[Path]:
    return sorted(p for p in (ROOT / "scenarios").rglob("*.toml") if not p.name.endswith(".study.toml"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", default=str(ROOT / "target/debug/examples/run"), help="the debug build of the run example")
    ap.add_argument("--duration", type=float, default=0.02, help="simulated seconds per run (after warm-up)")
    ap.add_argument("--qps", type=float, default=200000.0, help="the open loop's load")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    out = ap.add_mutually_exclusive_group()
    out.add_argument("--save", metavar="DIR", help="write every run's summary JSON into DIR")
    out.add_argument("--compare", metavar="DIR", help="fail unless every run's summary equals the one saved in DIR")
    args = ap.parse_args()
    if args.jobs < 1:
        ap.error(f"--jobs must be at least 1, not {args.jobs}")
    if args.save:
        os.makedirs(args.save, exist_ok=True)

    from irqlab import _core  # the same validation as the simulator's

    profiles: list[str | None] = [None, *_core.profiles()]
    loads = [("as written", []), ("open", [f"load.qps={args.qps}"])]
    runs, refused = [], []
    for path in scenarios():
        text = path.read_text()
        for profile in profiles:
            for load, extra in loads:
                overrides = [f"run.duration_s={args.duration}", *extra]
                label = f"{path.relative_to(ROOT)} profile={profile or '(file)'} load={load}"
                try:
                    _core.resolve(text, profile, overrides)
                except Exception as e:  # a refusal: one line, not a failure
                    refused.append(f"{label}: {str(e).splitlines()[0]}")
                    continue
                cmd = [args.run, str(path), *([f"profile={profile}"] if profile else []), *overrides]
                runs.append((label, cmd))

    def saved(label: str) -> Path:
        # One file per run, named by its label (which has slashes and spaces).
        name = hashlib.sha256(label.encode()).hexdigest()[:16]
        return Path(args.save or args.compare) / f"{name}.json"

    def one(run: tuple[str, list[str]]) -> tuple[str, int, str]:
        label, cmd = run
        keep = bool(args.save or args.compare)
        p = subprocess.run(
            cmd,
            stdout=subprocess.PIPE if keep else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "RUST_BACKTRACE": "0"},
        )
        # Every line but what the simulator did rather than what it
        # simulated: the wall-clock time (not determined by the scenario and
        # seed) and the events the engine passed without the model (a
        # build's way of handling them, not a result).
        summary = f"// {label}\n" + "".join(l for l in (p.stdout or "").splitlines(True) if not ENGINE_LINE.search(l))
        if p.returncode == 0 and args.save:
            saved(label).write_text(summary)
        elif p.returncode == 0 and args.compare:
            path = saved(label)
            before = path.read_text() if path.exists() else None
            if before != summary:
                return label, 99, "the summary differs from the saved one" if before else f"no saved summary ({path})"
        return label, p.returncode, p.stderr

    start = time.monotonic()
    failed = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for label, rc, err in pool.map(one, runs):
            if rc != 0:
                failed.append(label)
                print(f"FAILED ({rc}) {label}\n{err.rstrip()}\n", flush=True)
    if args.compare:
        print(f"compared with {args.compare}: {len(runs) - len(failed)} of {len(runs)} summaries identical")
    for r in refused:
        print(f"refused (skipped): {r}")
    print(
        f"debug-check: {len(runs)} runs, {len(failed)} failed, {len(refused)} refused combinations skipped,"
        f" {time.monotonic() - start:.1f} s with {args.jobs} jobs"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
