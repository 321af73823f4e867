"""``irqlab tune``: the golden-section search policy (the SR-IOV paper's
interrupt throttle rate tuner, ``irqlab_policy::search``) run against the
simulator: it asks for a knob's value, a simulated run measures the
objective there, and so on until the interval is narrow enough. The same
policy code drives the in-simulation controllers and would drive a real
one; this is the offline form, on a deterministic model, so each
iteration keeps the surviving probe's measurement (one run per iteration)
unless ``--fresh`` asks for the paper's two fresh measurements.

The loop is :func:`irqlab.tuning.drive`'s, as for ``irqlab linux tune``:
the scenario's own value of the knob is run first, and the search's best
replaces it only if it is better by more than ``--min-effect`` of it (the
model has no noise); the drift rule is off (nothing drifts in a model).
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
from irqlab.tuning import DEFAULT_MIN_EFFECT, check_min_effect, drive, gain, parse_min_effect

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
    #: The knob's value in the scenario (after the profile and --set).
    current: float = math.nan
    min_effect: float = DEFAULT_MIN_EFFECT
    #: Whether ``best`` is ``current`` because nothing beat it by more than ``tolerance``.
    kept: bool = False
    tolerance: Optional[float] = None


def default_goal(objective: str) -> bool:
    """Maximise unless the objective's name says lower is better."""
    return not any(word in objective for word in LOWER_IS_BETTER)


def parse_range(text: str) -> tuple[float, float]:
    try:
        lo_text, hi_text = text.split(":")
        lo, hi = float(lo_text), float(hi_text)
    except ValueError:
        raise TuneUsageError(f"--range must be LOW:HIGH, two numbers (got {text!r})") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and math.isfinite(hi - lo)) or lo >= hi:
        raise TuneUsageError(f"--range must have LOW below HIGH, both finite and less than {_MAX_WIDTH:g} apart "
                             f"(got {text!r})")
    return lo, hi


#: The widest --range: beyond it HIGH - LOW is not a finite number.
_MAX_WIDTH = 1.7e308

#: The narrowest --accept, as a fraction of the range: a millionth needs
#: about 29 golden-section steps; narrower asks for more precision than a
#: simulated objective has, and soon more than a float has.
MIN_ACCEPT_FRACTION = 1e-6


def check_accept(accept: float, low: float, high: float, flag: str = "--accept") -> None:
    """Raise :class:`TuneUsageError` unless ``accept`` is a width from a
    millionth of the range up to (not including) the range."""
    width = high - low
    if not (math.isfinite(accept) and width * MIN_ACCEPT_FRACTION <= accept < width):
        raise TuneUsageError(f"{flag} must be a width from {width * MIN_ACCEPT_FRACTION:g} (a millionth of the range) "
                             f"to below the range's {width:g} (got {accept!r})")


#: The scenario's sections that say how a run is measured, not what is
#: modelled: no value of theirs is "better" (tuning run.seed picks the
#: luckiest random stream; run.duration_s and run.warmup_s how long to look).
NOT_TUNABLE_SECTIONS = ("run",)


def check_tunable(knob: str) -> None:
    """Raise :class:`TuneUsageError` unless ``knob`` names a section of the
    modelled system (issue 62, item 12: ``--knob run.seed`` was searched)."""
    section = knob.partition(".")[0]
    if section in NOT_TUNABLE_SECTIONS:
        raise TuneUsageError(
            f"--knob must be a numeric field of the modelled system, in any section but [run] (e.g. "
            f"coalesce.rx-usecs, napi.gro_flush_timeout, cpu.freq_ghz, load.qps); {knob} says how the run is "
            f"measured (run.seed, run.duration_s and run.warmup_s are set with --seed and --duration)")


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
    min_effect: float = DEFAULT_MIN_EFFECT,
    on_evaluation=None,
    say=lambda _m: None,
) -> TuneResult:
    """Search ``knob`` over [``low``, ``high``] for the best ``objective``
    (a summary field, dotted: ``throughput_qps``, ``latency_us.p99``,
    ``storage.iops``). An integer knob is probed at whole numbers. The
    scenario's own value is run first and kept unless the search's best
    beats it by more than ``min_effect`` of its objective
    (:mod:`irqlab.tuning`). Bad names raise :class:`TuneUsageError` or
    :class:`ScenarioError` before the search."""
    from irqlab.run import run
    from irqlab.scenario import Scenario
    from irqlab.summary import flatten

    from irqlab.flags import check_overrides, overlaps, override_key
    from irqlab.run import field_problem, numeric_fields, probe_fields

    check_tunable(knob)
    if not isinstance(scenario, Scenario):
        scenario = Scenario.load(scenario)
    # The knob is set at every probe, after the overrides: an override of it
    # would be silently replaced.
    check_overrides(list(overrides), "--set", TuneUsageError, {knob: f"--knob {knob}"})
    if accept is not None:
        check_accept(accept, low, high)
    check_min_effect(min_effect, TuneUsageError)
    if profile is not None:
        scenario = scenario.with_profile(profile)
    if overrides:
        scenario = scenario.with_overrides(list(overrides))
    if any(overlaps(override_key(pair), knob) for pair in scenario.overrides):
        raise TuneUsageError(f"--knob {knob} is also set by the scenario's overrides; tune it or fix it, not both")
    section, _, name = knob.partition(".")
    current = scenario.resolved().get(section, {})
    if not name or not isinstance(current, dict) or name not in current:
        raise TuneUsageError(f"--knob must name a scenario field such as coalesce.rx-usecs (got {knob!r})")
    if isinstance(current[name], (bool, str, list, dict)):
        kind = {bool: "true or false", str: "text", list: "a list", dict: "a table"}[type(current[name])]
        raise TuneUsageError(f"--knob must name a numeric scenario field; {knob} is {kind} "
                             f"(e.g. coalesce.rx-usecs, napi.gro_flush_timeout)")
    integer = isinstance(current[name], int) and not isinstance(current[name], bool)
    if integer and (low < 0 or not float(low).is_integer() or not float(high).is_integer()):
        raise TuneUsageError(f"--range must be whole numbers from 0 for the integer field {knob} (got {low:g}:{high:g})")
    # Both ends of the range must be values the scenario accepts (the
    # field's bounds hold between them), not found out mid-search.
    for end in (low, high):
        try:
            scenario.with_overrides([f"{knob}={int(end) if integer else end!r}"])
        except ScenarioError as e:
            raise TuneUsageError(f"--range {low:g}:{high:g} goes outside what {knob} accepts: {e}") from None
    # The objective's kind, from millisecond runs at both ends of the range,
    # before the search spends a run on it: text, a list or a field that is
    # null in every run would be optimised as NaN.
    probes = [probe_fields(scenario, overrides=[f"{knob}={v}"]) for v in ((int(low), int(high)) if integer else (low, high))]
    known = [p for p in probes if p is not None]
    problem = field_problem(known, objective, null_ok=False) if known else None
    if problem is not None:
        raise TuneUsageError(f"--objective {objective} {problem}; give a numeric summary field such as "
                             f"{', '.join(numeric_fields(known)[:6])}")
    maximize = default_goal(objective) if maximize is None else maximize
    accept = (high - low) / 64 if accept is None else accept
    if integer:
        accept = max(accept, 1.0)
    policy = GoldenSection(low, high, accept, maximize=maximize, reuse=not fresh)
    result = TuneResult(knob=knob, objective=objective, maximize=maximize, low=low, high=high, accept=accept,
                        current=float(current[name]), min_effect=min_effect)

    # The model is deterministic for a seed: a value measured once (an
    # integer knob's probes meet near the end) is not run again.
    seen: dict[float, float] = {}

    def measure(value: float) -> float:
        if value in seen:
            return seen[value]
        summary = run(scenario.with_overrides([f"{knob}={int(value) if integer else value!r}"]), seed=seed,
                      duration_s=duration_s)
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

    # No restart on drift: nothing drifts in a deterministic model. Its
    # noise is 0 (a value's runs are identical), so --min-effect alone says
    # which gain over the scenario's own value is worth a change.
    outcome = drive(policy, measure, maximize=maximize, current=result.current, min_effect=min_effect,
                    restart_fraction=None, snap=(lambda x: float(round(x))) if integer else float, say=say)
    assert outcome.best is not None  # no budget: the current value at least was measured
    result.best, result.best_objective = outcome.best.value, outcome.best.objective
    result.kept, result.tolerance = outcome.kept, outcome.tolerance
    return result


def add_tune_parser(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    from irqlab.cli_common import add_duration as _add_duration, add_json as _add_json, add_profile as _add_profile

    p = commands.add_parser(
        "tune",
        help="find a knob's best value by golden-section search over simulated runs",
        description=(
            "Search one scenario field for the value that maximises (or minimises) a summary field, with the "
            "golden-section search policy of the SR-IOV paper (the same code a controller uses): each step runs "
            "the scenario at the value the policy asks for and reports the objective back, until the interval "
            "is narrower than --accept. The scenario's own value of the field is run first and kept unless the "
            "best found beats it by more than --min-effect. Prints each evaluation, the best value and its objective."
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
    p.add_argument("--min-effect", metavar="FRACTION", default=str(DEFAULT_MIN_EFFECT),
                   help="keep the scenario's own value unless the best found beats it by more than this fraction "
                   f"of its objective (0 to 0.5, default {DEFAULT_MIN_EFFECT:g})")
    _add_profile(p)
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override another scenario field first (repeatable)")
    p.add_argument("--seed", metavar="N", help="random seed of every run (run.seed)")
    _add_duration(p)
    _add_json(p, "print the evaluations and the result as one JSON object")
    p.set_defaults(handler=_cmd_tune)


def _cmd_tune(args: argparse.Namespace) -> int:
    from irqlab.cli_common import check_set_flags as _check_overrides, duration_flag as _duration, seed_flag as _seed, write_stdout

    low, high = parse_range(args.range)
    accept = None
    if args.accept is not None:
        try:
            accept = float(args.accept)
        except ValueError:
            accept = math.nan
        check_accept(accept, low, high)
    min_effect = parse_min_effect(args.min_effect, TuneUsageError)
    if not Path(args.scenario).is_file():
        raise TuneUsageError(f"SCENARIO must be a scenario file (got {args.scenario!r})")
    seed, duration_s = _seed(args.seed), _duration(args.duration)
    _check_overrides(args.overrides, seed, duration_s, {args.knob: f"--knob {args.knob}"})

    said: list[bool] = []

    def evaluated(value: float, y: float) -> None:
        if args.json:
            return
        if not said:
            # At the first run, not before: the flags are checked by then,
            # and a refused one leaves nothing on stdout.
            said.append(True)
            goal = args.maximize if args.maximize is not None else default_goal(args.objective)
            write_stdout(f"tuning {args.knob} over {low:g}:{high:g} for the {'highest' if goal else 'lowest'} "
                         f"{args.objective}")
        write_stdout(f"  {args.knob} = {value:<12g} {args.objective} = {y:,.4g}")

    def say(line: str) -> None:
        if not args.json:
            write_stdout(f"  {line}")

    try:
        r = tune(args.scenario, args.knob, low, high, args.objective, maximize=args.maximize, accept=accept,
                 fresh=args.fresh, profile=args.profile, overrides=tuple(args.overrides), seed=seed,
                 duration_s=duration_s, min_effect=min_effect, on_evaluation=evaluated, say=say)
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
            "current": r.current, "kept": r.kept, "min_effect": r.min_effect, "tolerance": r.tolerance,
        }))
        return 0
    write_stdout(result_line(r))
    return 0


def result_line(r: TuneResult) -> str:
    """The last line of ``irqlab tune``'s text: the value chosen. A kept
    value is not called "best": another may have measured better by less
    than the minimum effect (issue 62, item 17)."""
    runs = f"({len(r.evaluations)} runs)"
    if not r.kept:
        return f"best: {r.knob} = {r.best:g}   {r.objective} = {r.best_objective:,.4g}   {runs}"
    better = [v for v, y in r.evaluations if v != r.current and gain(y, r.best_objective, r.maximize) > 0]
    beaten = f"; {len(better)} other value{'s' if len(better) != 1 else ''} measured better by less" if better else ""
    return (f"kept: {r.knob} = {r.best:g}   {r.objective} = {r.best_objective:,.4g}   {runs}: the scenario's own "
            f"value; no value beat it by more than {r.min_effect * 100:g} %{beaten}")
