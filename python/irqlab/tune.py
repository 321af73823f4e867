"""``irqlab tune``: the golden-section search policy (the SR-IOV paper's
interrupt throttle rate tuner, ``irqlab_policy::search``) run against the
simulator: it asks for a knob's value, a simulated run measures the
objective there, and so on until the interval is narrow enough. The same
policy code drives the in-simulation controllers and would drive a real
one; this is the offline form, on a deterministic model, so each
iteration keeps the surviving probe's measurement (one run per iteration)
unless ``--fresh`` asks for the paper's two fresh measurements.
"""

from __future__ import annotations

import argparse
import json
import math
import numbers
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from irqlab._core import GoldenSection, ScenarioError

#: Objectives that are better when lower, unless --maximize or --minimize says.
LOWER_IS_BETTER = ("latency", "cycles", "cpu_pct.busy", "drops", "load_latency_product", "context_switches",
                   "irqs_per_s", "wait")


class TuneUsageError(ValueError):
    """A bad flag of ``irqlab tune``; the message is one sentence."""


@dataclass
class TuneResult:
    knob: str
    objective: str
    maximize: bool
    low: float
    high: float
    accept: float
    #: (knob value, objective) in the order measured.
    evaluations: list[tuple[float, float]] = field(default_factory=list)
    best: float = math.nan
    #: The objective of a run at ``best``.
    best_objective: float = math.nan


def default_goal(objective: str) -> bool:
    """Maximise unless the objective's name says lower is better."""
    return not any(word in objective for word in LOWER_IS_BETTER)


def parse_range(text: str) -> tuple[float, float]:
    try:
        lo_text, hi_text = text.split(":")
        lo, hi = float(lo_text), float(hi_text)
    except ValueError:
        raise TuneUsageError(f"--range must be LOW:HIGH, two numbers (got {text!r})") from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
        raise TuneUsageError(f"--range must have LOW below HIGH, both finite (got {text!r})")
    return lo, hi


def _value_of(summary_flat: dict, objective: str) -> float:
    v = summary_flat.get(objective)
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        return math.nan
    return float(v)


def tune(
    scenario,
    knob: str,
    low: float,
    high: float,
    objective: str,
    *,
    maximize: Optional[bool] = None,
    accept: Optional[float] = None,
    fresh: bool = False,
    profile: Optional[str] = None,
    overrides: tuple[str, ...] = (),
    seed: Optional[int] = None,
    duration_s: Optional[float] = None,
    on_evaluation=None,
) -> TuneResult:
    """Search ``knob`` over [``low``, ``high``] for the best ``objective``
    (a summary field, dotted: ``throughput_qps``, ``latency_us.p99``,
    ``storage.iops``). An integer knob is probed at whole numbers. Bad
    names raise :class:`TuneUsageError` or :class:`ScenarioError` before
    the search."""
    from irqlab.run import run
    from irqlab.scenario import Scenario
    from irqlab.summary import flatten

    if not isinstance(scenario, Scenario):
        scenario = Scenario.load(scenario)
    if profile is not None:
        scenario = scenario.with_profile(profile)
    if overrides:
        scenario = scenario.with_overrides(list(overrides))
    section, _, name = knob.partition(".")
    current = scenario.resolved().get(section, {})
    if not name or not isinstance(current, dict) or name not in current:
        raise TuneUsageError(f"--knob must name a scenario field such as coalesce.rx-usecs (got {knob!r})")
    integer = isinstance(current[name], int) and not isinstance(current[name], bool)
    if integer and (low < 0 or not float(low).is_integer() or not float(high).is_integer()):
        raise TuneUsageError(f"--range must be whole numbers from 0 for the integer field {knob} (got {low:g}:{high:g})")
    maximize = default_goal(objective) if maximize is None else maximize
    accept = (high - low) / 64 if accept is None else accept
    if integer:
        accept = max(accept, 1.0)
    policy = GoldenSection(low, high, accept, maximize=maximize, reuse=not fresh)
    result = TuneResult(knob=knob, objective=objective, maximize=maximize, low=low, high=high, accept=accept)

    # The model is deterministic for a seed: a value measured once (an
    # integer knob's probes meet near the end) is not run again.
    seen: dict[float, float] = {}

    def measure(x: float) -> float:
        value = round(x) if integer else x
        if value in seen:
            return seen[value]
        summary = run(scenario.with_overrides([f"{knob}={value}"]), seed=seed, duration_s=duration_s)
        flat = flatten(summary.to_dict())
        if objective not in flat:
            numeric = sorted(k for k, v in flat.items() if isinstance(v, numbers.Real) and not isinstance(v, bool))
            raise TuneUsageError(f"--objective must name a number in the run's summary, such as "
                                 f"{', '.join(numeric[:6])} (got {objective!r})")
        y = _value_of(flat, objective)
        seen[value] = y
        result.evaluations.append((float(value), y))
        if on_evaluation is not None:
            on_evaluation(float(value), y)
        return y

    done, x = policy.probe()
    while not done:
        done, x = policy.observe(measure(x))
    result.best = float(round(x)) if integer else x
    result.best_objective = measure(result.best)
    return result


def add_tune_parser(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    from irqlab.cli import _add_duration, _add_json, _add_profile

    p = commands.add_parser(
        "tune",
        help="find a knob's best value by golden-section search over simulated runs",
        description=(
            "Search one scenario field for the value that maximises (or minimises) a summary field, with the "
            "golden-section search policy of the SR-IOV paper (the same code a controller uses): each step runs "
            "the scenario at the value the policy asks for and reports the objective back, until the interval "
            "is narrower than --accept. Prints each evaluation, the best value and its objective."
        ),
        allow_abbrev=False,
    )
    p.add_argument("scenario", metavar="SCENARIO", help="scenario file (TOML)")
    p.add_argument("--knob", metavar="FIELD", required=True, help="the scenario field to tune, e.g. coalesce.rx-usecs")
    p.add_argument("--range", metavar="LOW:HIGH", required=True, help="the values to search, e.g. 0:256")
    p.add_argument("--objective", metavar="FIELD", default="throughput_qps",
                   help="the summary field to optimise, dotted (default throughput_qps; e.g. latency_us.p99)")
    goal = p.add_mutually_exclusive_group()
    goal.add_argument("--maximize", dest="maximize", action="store_const", const=True, default=None,
                      help="maximise the objective (the default unless its name is a latency, a cost or a count "
                      "of drops)")
    goal.add_argument("--minimize", dest="maximize", action="store_const", const=False, help="minimise it")
    p.add_argument("--accept", metavar="WIDTH", help="stop when the interval is this narrow (default range/64; at "
                   "least 1 for an integer field)")
    p.add_argument("--fresh", action="store_true", help="measure both probes afresh every iteration, as the paper "
                   "does online (twice the runs)")
    _add_profile(p)
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override another scenario field first (repeatable)")
    p.add_argument("--seed", metavar="N", help="random seed of every run (run.seed)")
    _add_duration(p)
    _add_json(p, "print the evaluations and the result as one JSON object")
    p.set_defaults(handler=_cmd_tune)


def _cmd_tune(args: argparse.Namespace) -> int:
    from irqlab.cli import _duration, _seed, write_stdout

    low, high = parse_range(args.range)
    accept = None
    if args.accept is not None:
        try:
            accept = float(args.accept)
        except ValueError:
            accept = math.nan
        if not (math.isfinite(accept) and 0 < accept < high - low):
            raise TuneUsageError(f"--accept must be a width above 0 and below the range's {high - low:g} "
                                 f"(got {args.accept!r})")
    if not Path(args.scenario).is_file():
        raise TuneUsageError(f"SCENARIO must be a scenario file (got {args.scenario!r})")

    def say(value: float, y: float) -> None:
        if not args.json:
            write_stdout(f"  {args.knob} = {value:<12g} {args.objective} = {y:,.4g}")

    if not args.json:
        write_stdout(f"tuning {args.knob} over {low:g}:{high:g} for the "
                     f"{'highest' if (args.maximize if args.maximize is not None else default_goal(args.objective)) else 'lowest'}"
                     f" {args.objective}")
    try:
        r = tune(args.scenario, args.knob, low, high, args.objective, maximize=args.maximize, accept=accept,
                 fresh=args.fresh, profile=args.profile, overrides=tuple(args.overrides), seed=_seed(args.seed),
                 duration_s=_duration(args.duration), on_evaluation=say)
    except ValueError as e:
        if isinstance(e, (TuneUsageError, ScenarioError)):
            raise
        raise TuneUsageError(str(e)) from None
    if args.json:
        write_stdout(json.dumps({
            "knob": r.knob, "objective": r.objective, "maximize": r.maximize, "range": [r.low, r.high],
            "accept": r.accept, "evaluations": [{"value": v, "objective": y if math.isfinite(y) else None}
                                                for v, y in r.evaluations],
            "best": r.best, "best_objective": r.best_objective if math.isfinite(r.best_objective) else None,
        }))
        return 0
    write_stdout(f"best: {r.knob} = {r.best:g}   {r.objective} = {r.best_objective:,.4g}   "
                 f"({len(r.evaluations)} runs)")
    return 0
