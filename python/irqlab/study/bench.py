"""``irqlab bench --sweep``: how fast a study runs on this machine.

A 100-point sweep of the thesis scenario (4 profiles × 25 offered loads from
100k to 1.3M QPS, 0.1 s simulated each) is run into fresh temporary
directories three ways, one after the other in this process:

- ``--jobs 1`` (one thread): the single-core rate;
- ``--jobs N`` threads, N = every core (what ``irqlab sweep`` does);
- ``N`` worker processes (a ``ProcessPoolExecutor``): the alternative the
  local executor was chosen against.

Each prints points per wall second (whole sweep: planning, runs, journal,
Parquet) and its ratio to ``--jobs 1``. The three sweeps must hold identical
rows (provenance aside); the bench checks it, so a speed-up never comes from
running something else.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import io
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from irqlab.scenario import Scenario
from irqlab.study.axis import Axis
from irqlab.study.executor import ThreadExecutor, default_jobs
from irqlab.study.point import run_point
from irqlab.study.spec import Study, build_study
from irqlab.study.sweep import sweep

PROFILES = ("no-coalescing", "adaptive-coalescing", "irq-suspend", "busy-wait")
LOADS_QPS = tuple(range(100_000, 1_300_001, 50_000))


class ProcessExecutor:
    """Points in ``jobs`` worker processes (for comparison only)."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs

    def describe(self) -> str:
        return f"{self.jobs} processes"

    def run(self, tasks: Sequence[dict[str, Any]], on_record: Callable[[dict[str, Any]], None]) -> None:
        with cf.ProcessPoolExecutor(self.jobs) as ex:
            for fut in cf.as_completed([ex.submit(run_point, t) for t in tasks]):
                on_record(fut.result())


@dataclass(frozen=True)
class SweepBenchRow:
    executor: str
    jobs: int
    points: int
    wall_s: float

    @property
    def points_per_s(self) -> float:
        return self.points / self.wall_s if self.wall_s > 0 else float("inf")


def thesis_sweep(scenario: Scenario, duration_s: float = 0.1, loads: Sequence[int] = LOADS_QPS) -> Study:
    return build_study(
        scenario,
        name="bench-sweep",
        profiles=PROFILES,
        axes=[Axis("load.qps", tuple(loads))],
        duration_s=duration_s,
    )


def bench_sweep(
    scenario: Scenario, duration_s: float = 0.1, jobs: Optional[int] = None, loads: Sequence[int] = LOADS_QPS
) -> list[SweepBenchRow]:
    """Run the benchmark sweep with one thread, ``jobs`` threads and ``jobs``
    processes; raise :class:`AssertionError` if their rows differ."""
    from irqlab.results import PROVENANCE, load

    study = thesis_sweep(scenario, duration_s, loads)
    n = jobs or default_jobs()
    rows: list[SweepBenchRow] = []
    frames = []
    with tempfile.TemporaryDirectory(prefix="irqlab-bench-sweep-") as tmp:
        for label, executor, count in (
            ("threads", ThreadExecutor(1), 1),
            ("threads", ThreadExecutor(n), n),
            ("processes", ProcessExecutor(n), n),
        ):
            out = Path(tmp) / f"{label}-{count}"
            started = time.perf_counter()
            with contextlib.redirect_stderr(io.StringIO()):  # no progress lines
                result = sweep(study, out, executor=executor, progress=False, quiet=True)
            wall = time.perf_counter() - started
            if result.failures:
                raise AssertionError(f"bench sweep point failed: {result.failures[0].error}")
            rows.append(SweepBenchRow(label, count, result.ran, wall))
            frames.append(load(out).drop(columns=list(PROVENANCE)))
    for other in frames[1:]:
        if not frames[0].equals(other):
            raise AssertionError("the benchmark sweeps gave different rows on different executors")
    return rows


def bench_sweep_table(rows: list[SweepBenchRow]) -> str:
    base = rows[0].points_per_s
    lines = [
        f"sweep of {rows[0].points} points (thesis scenario: 4 profiles × {len(LOADS_QPS)} loads), identical rows on every executor",
        f"{'executor':<12}{'jobs':>6}{'wall s':>10}{'points/s':>11}{'vs --jobs 1':>13}",
    ]
    for r in rows:
        lines.append(f"{r.executor:<12}{r.jobs:>6}{r.wall_s:>10.2f}{r.points_per_s:>11.2f}{r.points_per_s / base:>12.2f}x")
    return "\n".join(lines)
