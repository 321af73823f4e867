"""Running a scenario: :func:`run` returns a :class:`~irqlab.summary.Summary`."""

from __future__ import annotations

import json
import math
import numbers
import os
from typing import Optional, Union

from irqlab import _core
from irqlab._core import ScenarioError
from irqlab.scenario import Overrides, Scenario
from irqlab.summary import Summary

#: TOML integers are signed 64-bit, so this is the largest seed a scenario can hold.
MAX_SEED = 2**63 - 1


def run(
    scenario: Union[Scenario, str, os.PathLike[str]],
    profile: Optional[str] = None,
    overrides: Overrides = (),
    seed: Optional[int] = None,
    duration_s: Optional[float] = None,
) -> Summary:
    """Run ``scenario`` (a :class:`Scenario` or the path of a scenario file).

    ``profile`` and ``overrides`` (``"key=value"`` strings or a mapping, as
    :meth:`Scenario.with_overrides` takes) are applied on top of the scenario's own; ``seed`` and ``duration_s`` set
    ``run.seed`` and ``run.duration_s`` last. Everything is validated before
    the simulation starts, so a bad input raises :class:`ScenarioError` at
    once. The GIL is released while the simulation runs, so runs in threads
    proceed in parallel.
    """
    if not isinstance(scenario, Scenario):
        scenario = Scenario.load(scenario)
    if profile is not None:
        scenario = scenario.with_profile(profile)
    if isinstance(overrides, str) or overrides:
        scenario = scenario.with_overrides(overrides)
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
    text = _core.run(
        scenario.text,
        scenario.profile,
        list(scenario.overrides),
        None if seed is None else int(seed),
        None if duration_s is None else float(duration_s),
    )
    return Summary(json.loads(text))


def check_seed(seed: object, what: str = "seed") -> None:
    """Raise :class:`ScenarioError` unless ``seed`` is None or an integer in 0..2**63-1."""
    if seed is None:
        return
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= int(seed) <= MAX_SEED:
        raise ScenarioError(f"{what} must be a non-negative integer no larger than {MAX_SEED} (got {seed!r})")


def check_duration(duration_s: object, what: str = "duration_s") -> None:
    """Raise :class:`ScenarioError` unless ``duration_s`` is None or a positive finite number of seconds."""
    if duration_s is None:
        return
    if (
        isinstance(duration_s, bool)
        or not isinstance(duration_s, numbers.Real)
        or not math.isfinite(float(duration_s))
        or float(duration_s) <= 0
    ):
        raise ScenarioError(f"{what} must be a positive number of seconds (got {duration_s!r})")
