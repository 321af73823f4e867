"""Running a scenario: :func:`run` returns a :class:`~irqlab.summary.Summary`."""

from __future__ import annotations

import json
import math
import numbers
import os
from typing import Any, Optional, Union

from irqlab import _core
from irqlab._core import ScenarioError
from irqlab.scenario import Overrides, Scenario, fspath, one_line, override_pairs
from irqlab.summary import Summary

#: TOML integers are signed 64-bit, so this is the largest seed a scenario can hold.
MAX_SEED = 2**63 - 1


def run(
    scenario: Union[Scenario, str, os.PathLike[str]],
    profile: Optional[str] = None,
    overrides: Overrides = (),
    seed: Optional[int] = None,
    duration_s: Optional[float] = None,
    *,
    cancel: Optional[Any] = None,
    policy: Optional[Any] = None,
) -> Summary:
    """Run ``scenario`` (a :class:`Scenario` or the path of a scenario file).

    ``profile`` and ``overrides`` (``"key=value"`` strings or a mapping, as
    :meth:`Scenario.with_overrides` takes) are applied on top of the scenario's own; ``seed`` and ``duration_s`` set
    ``run.seed`` and ``run.duration_s`` last. Everything is validated before
    the simulation starts, so a bad input raises :class:`ScenarioError` at
    once; an argument of the wrong type raises :class:`TypeError`. The GIL
    is released while the simulation runs, so runs in threads proceed in
    parallel.

    When no request completes in the measured time, the summary's latency
    fields are ``None`` and its ``warnings`` say so.

    ``cancel`` is an object with an ``is_set()`` method, such as a
    :class:`threading.Event`: once it is set, the run stops within a few
    million simulated events and raises :class:`KeyboardInterrupt`. Ctrl-C
    reaches only the main thread; this stops runs in other threads.
    """
    if cancel is not None and not callable(getattr(cancel, "is_set", None)):
        raise TypeError(f"cancel must have an is_set() method (a threading.Event) or be None, not {type(cancel).__name__}")
    if not isinstance(scenario, Scenario):
        if not isinstance(scenario, (str, os.PathLike)):
            raise TypeError(
                f"scenario must be an irqlab.Scenario, a str path or an os.PathLike such as pathlib.Path, "
                f"not {type(scenario).__name__}"
            )
        scenario = load_scenario(fspath(scenario, "scenario"))
    if profile is not None:
        scenario = scenario.with_profile(profile)
    pairs = override_pairs(overrides)
    if pairs:
        scenario = scenario.with_overrides(pairs)
    check_seed(seed)
    check_duration(duration_s)
    final: dict[str, Union[int, float]] = {}
    if seed is not None:
        final["run.seed"] = int(seed)
    if duration_s is not None:
        final["run.duration_s"] = float(duration_s)
    if final:
        # Validate in the core as well (its range for run.duration_s applies).
        scenario.with_overrides(final)
    try:
        text = _core.run(
            scenario.text,
            scenario.profile,
            list(scenario.overrides),
            None if seed is None else int(seed),
            None if duration_s is None else float(duration_s),
            cancel,
            policy,
        )
    except ScenarioError as e:
        raise ScenarioError(one_line(str(e))) from None
    return Summary(json.loads(text))


#: Top-level tables only a study file has (``irqlab.study.spec``): a
#: scenario has none of them.
STUDY_TABLES = ("study", "axes", "plot")


def load_scenario(path: str) -> Scenario:
    """:meth:`Scenario.load`, except that a study file is named as one and
    pointed to ``irqlab sweep`` (issue 62, item 17), rather than refused
    by the core for its first study table ("unknown field `plot`")."""
    study = study_file_problem(path)
    if study is not None:
        raise ScenarioError(study)
    return Scenario.load(path)


def study_file_problem(path: str) -> Optional[str]:
    """The sentence that says ``path`` is a study file, or ``None`` when it
    is not (or cannot be read: :meth:`Scenario.load` then says why). Read
    here, before the core sees it: the file has a ``[study]`` table, or
    ``[axes]`` or ``[[plot]]``, which no scenario has."""
    import tomllib

    from irqlab.scenario import read_scenario_file

    try:
        doc = tomllib.loads(read_scenario_file(path))
    except (ScenarioError, tomllib.TOMLDecodeError):
        return None
    if not any(key in doc for key in STUDY_TABLES):
        return None
    return f"{path} is a study file; run it with `irqlab sweep {path}`"


def check_seed(seed: object, what: str = "seed") -> None:
    """Raise :class:`TypeError` unless ``seed`` is None or an int, and
    :class:`ScenarioError` unless it lies in 0..2**63-1."""
    if seed is None:
        return
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"{what} must be an int (from 0 to {MAX_SEED}) or None, not {type(seed).__name__}")
    if not 0 <= int(seed) <= MAX_SEED:
        raise ScenarioError(f"{what} must be a whole number from 0 to {MAX_SEED} (got {seed!r})")


def check_duration(duration_s: object, what: str = "duration_s") -> None:
    """Raise :class:`TypeError` unless ``duration_s`` is None or a real number
    (int or float), and :class:`ScenarioError` unless it is a positive finite
    number of seconds."""
    if duration_s is None:
        return
    if isinstance(duration_s, bool) or not isinstance(duration_s, numbers.Real):
        raise TypeError(
            f"{what} must be a number of seconds (a float or an int) or None, not {type(duration_s).__name__}"
        )
    try:
        seconds = float(duration_s)
    except OverflowError:
        seconds = math.inf
    if not (math.isfinite(seconds) and seconds > 0):
        raise ScenarioError(f"{what} must be a positive finite number of seconds (got {duration_s!r})")


#: Measured seconds of a probe run (:func:`probe_fields`): long enough that
#: requests complete in every shipped scenario, short enough to cost about a
#: millisecond.
PROBE_S = 1e-3

#: Fields that are null in a run where nothing completed, and numbers otherwise.
NULL_WHEN_IDLE = ("latency_us.mean", "latency_us.p50", "latency_us.p95", "latency_us.p99", "latency_us.p999",
                  "load_latency_product")


def probe_fields(scenario: Scenario, profile: Optional[str] = None, overrides: Overrides = ()) -> Optional[dict[str, Any]]:
    """The flattened summary of ``scenario`` (with ``profile`` and
    ``overrides``) run without warm-up for :data:`PROBE_S`: which fields its
    runs report, and of what type, learnt before a sweep or search spends
    time on it. ``None`` if the scenario refuses that run (a bad value is
    then each real run's own error)."""
    from irqlab.summary import flatten

    try:
        pairs = [*override_pairs(overrides), "run.warmup_s=0"]
        summary = run(scenario, profile=profile, overrides=pairs, duration_s=PROBE_S)
    except (ScenarioError, TypeError, ValueError):
        return None
    return {k: v for k, v in flatten(summary.to_dict()).items() if k not in ("profile", "seed")}


def field_problem(probes: list[dict[str, Any]], name: str, *, null_ok: bool) -> Optional[str]:
    """Why ``name`` cannot be a number taken from runs whose probes are
    ``probes`` (:func:`probe_fields`), as the end of a sentence, or None if
    it can. Some members are reported only when not zero (``cpu_pct.steal``),
    so a name missing from the probes is refused only when no probe field
    shares its first component; a member of a field null in a probe (``dim``
    with DIM off) is null too. With ``null_ok``, null is accepted; otherwise
    a field is refused as null only when it is null in every probe although
    requests completed in each (a probe in which nothing completed says
    nothing), and never for the fields of :data:`NULL_WHEN_IDLE`."""
    busy = all((p.get("requests_completed") or 0) > 0 for p in probes)
    values = [p[name] for p in probes if name in p]
    under_null = busy and any(name.startswith(f"{k}.") for p in probes for k, v in p.items() if v is None)
    if not values:
        if under_null:
            return None if null_ok else "is null in this scenario's runs"
        top = name.split(".")[0]
        if any(k == top or k.startswith(f"{top}.") for p in probes for k in p):
            return None
        return "is not a field of the run's summary"
    for v in values:
        if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Real)):
            kind = {str: "text", list: "a list", dict: "a table", bool: "true or false"}.get(type(v), type(v).__name__)
            return f"is not a number (it is {kind}, e.g. {json.dumps(v)[:40]})"
    if not null_ok and busy and all(v is None for v in values) and name not in NULL_WHEN_IDLE:
        return "is null in this scenario's runs"
    return None


def numeric_fields(probes: list[dict[str, Any]]) -> list[str]:
    """The fields that are numbers in the first probe, in summary order (for messages)."""
    first = probes[0] if probes else {}
    return [k for k, v in first.items() if isinstance(v, numbers.Real) and not isinstance(v, bool)]
