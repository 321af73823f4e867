"""``irqlab bench --scale``: how the simulator's cost grows with the server.

Two tables, both on the thesis scenario (``scenarios/thesis/bare-metal.toml``
unless another is given):

- **Cores.** ``cpu.app_cores`` at 8, 32, 128 and 512, with 96 client
  connections per core (``load.connections_per_thread`` = 2 × cores: the
  scenario's 6 clients × 8 threads each open that many), closed loop,
  under busy-wait and no-coalescing. Each run simulates about the same
  number of events (``EVENTS_PER_RUN``: the simulated time shrinks as the
  cores grow, a quarter of it warm-up), so every row measures the same
  amount of work; the figure is wall nanoseconds per simulated event
  (``wall_s / sim_events`` of the summary: the engine's own time, the
  scenario's parsing excluded, the machine's construction included). The
  target (docs/architecture.md, "Performance targets"): 512 cores within
  1.5× of 8.
- **Load.** Busy-wait at the scenario's cores (the thesis's 8): events per request at 10 %, 50 % and
  100 % of the closed loop's throughput (its saturation), the lower two as
  open loops at that rate. Below saturation a polling core finds its ring
  empty between requests, and every empty poll is an event; the engine
  passes most of them without the model (``sim_events_passed``,
  ``crates/irqlab-core/src/model/kernel/busy_chain.rs``), so the table
  gives both the events handled and the events the model handled.

Events per request count every event the run handled, warm-up included,
over the requests of the whole run (``throughput_qps`` × ``sim_time_s``).
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass
from typing import Optional, Sequence, Union

from irqlab.bench import default_scenario
from irqlab.run import run
from irqlab.scenario import Scenario
from irqlab.summary import Summary

#: Core counts of the scale table.
CORES = (8, 32, 128, 512)
#: The most application cores a scenario takes (``cpu.app_cores``).
MAX_CORES = 1024
#: Profiles of the scale table: the polled path and the interrupt path.
SCALE_PROFILES = ("busy-wait", "no-coalescing")
#: Client connections per application core (the thesis's 768 over 8 cores).
CONNECTIONS_PER_CORE = 96
#: Simulated events each scale run aims at. The thesis scenario handles
#: about 750 thousand events per simulated second per core under busy-wait
#: (docs/performance.md), so 8 cores simulate 0.5 s and 512 cores 7.8 ms.
EVENTS_PER_RUN = 3_000_000
#: Events per simulated second per core, to size the runs (busy-wait's; the
#: interrupt path handles about 20 % more, so its runs are a little longer).
EVENTS_PER_CORE_S = 750_000
#: Load fractions of the load table, of the closed loop's throughput.
LOAD_FRACTIONS = (0.1, 0.5, 1.0)


@dataclass(frozen=True)
class ScaleRow:
    """One scale run: best and median over the repeats."""

    cores: int
    profile: str
    duration_s: float
    sim_events: int
    ns_per_event: tuple[float, ...]

    @property
    def best_ns(self) -> float:
        return min(self.ns_per_event)

    @property
    def median_ns(self) -> float:
        return statistics.median(self.ns_per_event)


@dataclass(frozen=True)
class LoadRow:
    """One load point of busy-wait (the scenario's cores)."""

    cores: int
    fraction: float
    qps: float
    requests: float
    sim_events: int
    wall_s: float
    #: Of ``sim_events``, those the engine passed without the model.
    sim_events_passed: int = 0

    @property
    def events_per_request(self) -> float:
        return self.sim_events / self.requests if self.requests > 0 else float("inf")

    @property
    def modelled_per_request(self) -> float:
        """Events the model handled itself, per request."""
        modelled = self.sim_events - self.sim_events_passed
        return modelled / self.requests if self.requests > 0 else float("inf")


def _ns_per_event(s: Summary) -> float:
    return 1e9 * s.wall_s / s.sim_events if s.sim_events else float("inf")


def _requests(s: Summary) -> float:
    """Requests over the whole run, warm-up included (as its events are)."""
    return s.throughput_qps * s.sim_time_s


def scale_duration_s(cores: int, events: int = EVENTS_PER_RUN) -> float:
    """Simulated seconds (warm-up included) for about ``events`` events."""
    return events / (EVENTS_PER_CORE_S * cores)


def scale_overrides(cores: int, load_threads: int, events: int = EVENTS_PER_RUN) -> dict[str, float]:
    """The scenario fields of a scale run at ``cores`` application cores:
    :data:`CONNECTIONS_PER_CORE` connections each over ``load_threads``
    load threads, about ``events`` events, a quarter of the time warm-up."""
    total = scale_duration_s(cores, events)
    return {
        "cpu.app_cores": cores,
        "load.connections_per_thread": max(1, round(CONNECTIONS_PER_CORE * cores / load_threads)),
        "run.warmup_s": total / 4,
        "run.duration_s": total * 3 / 4,
    }


def scale_scenario(base: Scenario, cores: int, profile: str, events: int = EVENTS_PER_RUN) -> Scenario:
    """``base`` at ``cores`` application cores under ``profile`` (see :func:`scale_overrides`)."""
    load = base.resolved()["load"]
    threads = load["clients"] * load["threads_per_client"]
    return base.with_profile(profile).with_overrides(scale_overrides(cores, threads, events))


def bench_scale(
    scenario: Union[Scenario, str, os.PathLike[str], None] = None,
    cores: Sequence[int] = CORES,
    profiles: Sequence[str] = SCALE_PROFILES,
    repeat: int = 3,
    events: int = EVENTS_PER_RUN,
) -> list[ScaleRow]:
    """The scale table: each core count × profile, ``repeat`` times, alternating,
    each run sized to about ``events`` events."""
    base = scenario if isinstance(scenario, Scenario) else Scenario.load(scenario or default_scenario())
    cells = [(n, p, scale_scenario(base, n, p, events)) for n in cores for p in profiles]
    times: dict[tuple[int, str], list[float]] = {(n, p): [] for n, p, _ in cells}
    handled: dict[tuple[int, str], int] = {}
    for _ in range(repeat):
        for n, p, s in cells:
            summary = run(s)
            times[(n, p)].append(_ns_per_event(summary))
            handled[(n, p)] = summary.sim_events
    return [
        ScaleRow(n, p, scale_duration_s(n, events), handled[(n, p)], tuple(times[(n, p)]))
        for n, p, _ in cells
    ]


def bench_load(
    scenario: Union[Scenario, str, os.PathLike[str], None] = None,
    fractions: Sequence[float] = LOAD_FRACTIONS,
    duration_s: float = 0.2,
) -> list[LoadRow]:
    """Busy-wait's events per request at fractions of its saturated throughput."""
    base = scenario if isinstance(scenario, Scenario) else Scenario.load(scenario or default_scenario())
    base = base.with_profile("busy-wait").with_overrides({"run.duration_s": duration_s})
    closed = run(base)
    cores = base.resolved()["cpu"]["app_cores"]
    rows = []
    for f in fractions:
        s = closed if f >= 1.0 else run(base.with_overrides({"load.qps": f * closed.throughput_qps}))
        rows.append(LoadRow(cores, f, s.throughput_qps, _requests(s), s.sim_events, s.wall_s, s.get("sim_events_passed", 0)))
    return rows


def scale_json(rows: Sequence[ScaleRow], loads: Sequence[LoadRow]) -> dict[str, object]:
    return {
        "cores": [
            {
                "cores": r.cores,
                "profile": r.profile,
                "duration_s": r.duration_s,
                "sim_events": r.sim_events,
                "ns_per_event": list(r.ns_per_event),
                "best_ns_per_event": r.best_ns,
                "median_ns_per_event": r.median_ns,
            }
            for r in rows
        ],
        "load": [
            {
                "cores": l.cores,
                "fraction": l.fraction,
                "qps": l.qps,
                "sim_events": l.sim_events,
                "requests": l.requests,
                "events_per_request": l.events_per_request,
                "sim_events_passed": l.sim_events_passed,
                "modelled_events_per_request": l.modelled_per_request,
                "wall_s": l.wall_s,
            }
            for l in loads
        ],
    }


def cores_flag(text: Optional[str]) -> tuple[int, ...]:
    """``--cores 8,32``: the core counts, each from 1 to :data:`MAX_CORES`."""
    from irqlab.cli_common import UsageError

    if text is None:
        return CORES
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or not 1 <= int(part) <= MAX_CORES:
            raise UsageError(
                f"--cores must be a comma-separated list of core counts from 1 to {MAX_CORES}, not {text!r}"
            )
        out.append(int(part))
    return tuple(out)
