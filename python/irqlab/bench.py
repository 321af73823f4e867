"""Benchmark of the simulator itself: simulated events per wall-clock second.

The figure is ``sim_events / wall_s`` of each run's summary (the engine's own
wall time, scenario parsing excluded); best and median are over the repeats.
The target is >= 10 M events/s per core on the thesis scenario
(docs/architecture.md, "Performance targets").
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from irqlab._core import ScenarioError
from irqlab.run import run
from irqlab.scenario import Scenario
from irqlab.summary import Summary

#: The scenario benchmarked when none is given, relative to the repository.
DEFAULT_SCENARIO = Path("scenarios") / "thesis" / "bare-metal.toml"


def default_scenario() -> Path:
    """Find :data:`DEFAULT_SCENARIO` in the working directory or the repository
    this package was installed from (``maturin develop`` installs in place)."""
    candidates = [Path.cwd() / DEFAULT_SCENARIO, Path(__file__).resolve().parents[2] / DEFAULT_SCENARIO]
    for path in candidates:
        if path.is_file():
            try:
                return path.relative_to(Path.cwd())
            except ValueError:
                return path
    raise ScenarioError(
        f"no scenario was given and the default {DEFAULT_SCENARIO} was not found "
        "in the working directory or the irqlab repository; pass a scenario file"
    )


@dataclass(frozen=True)
class BenchResult:
    """The runs of one benchmark and their events per wall second."""

    scenario: str
    #: The profile in effect (given, or the scenario's ``run.profile``), if any.
    profile: Optional[str]
    #: Simulated seconds measured per run (given, or the scenario's ``run.duration_s``).
    duration_s: float
    runs: tuple[Summary, ...]
    #: Wall time of each whole ``run`` call as Python saw it, seconds.
    call_wall_s: tuple[float, ...] = field(default=())

    @property
    def events_per_wall_s(self) -> list[float]:
        rates = []
        for i, s in enumerate(self.runs):
            wall = s.wall_s if s.wall_s > 0 else self.call_wall_s[i]
            rates.append(s.sim_events / wall if wall > 0 else float("inf"))
        return rates

    @property
    def best(self) -> float:
        return max(self.events_per_wall_s)

    @property
    def median(self) -> float:
        return statistics.median(self.events_per_wall_s)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "profile": self.profile,
            "duration_s": self.duration_s,
            "repeat": len(self.runs),
            "sim_time_s": [s.sim_time_s for s in self.runs],
            "sim_events": [s.sim_events for s in self.runs],
            "wall_s": [s.wall_s for s in self.runs],
            "events_per_wall_s": self.events_per_wall_s,
            "best_events_per_wall_s": self.best,
            "median_events_per_wall_s": self.median,
            "throughput_qps": [s.throughput_qps for s in self.runs],
        }


def bench(
    scenario: Union[Scenario, str, os.PathLike[str], None] = None,
    profile: Optional[str] = None,
    duration_s: Optional[float] = None,
    repeat: int = 3,
) -> BenchResult:
    """Run ``scenario`` ``repeat`` times (same seed) and measure the engine's speed."""
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ScenarioError(f"repeat must be a positive integer (got {repeat!r})")
    if scenario is None:
        scenario = default_scenario()
    if not isinstance(scenario, Scenario):
        scenario = Scenario.load(scenario)
    if profile is not None:
        scenario = scenario.with_profile(profile)
    runs, walls = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        runs.append(run(scenario, duration_s=duration_s))
        walls.append(time.perf_counter() - start)
    resolved_run = scenario.resolved()["run"]
    label = scenario.source if scenario.source is not None else scenario.name
    return BenchResult(
        scenario=label,
        profile=scenario.profile or resolved_run.get("profile"),
        duration_s=duration_s if duration_s is not None else resolved_run["duration_s"],
        runs=tuple(runs),
        call_wall_s=tuple(walls),
    )
