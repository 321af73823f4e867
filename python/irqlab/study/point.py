"""Running one point of a study: a task (plain data) in, a journal record out.

This is the function executors ship to their workers (threads here, processes
of a Dask cluster), so it takes and returns only plain, picklable data.
"""

from __future__ import annotations

import time
import traceback
from typing import Any, Optional

from irqlab._core import ScenarioError
from irqlab.provenance import git_commit, version
from irqlab.run import run
from irqlab.scenario import Scenario
from irqlab.policy import PolicyError, PolicyLoadError, load_policy
from irqlab.study.spec import knob_pairs, point_policy


def run_point(task: dict[str, Any], cancel: Optional[Any] = None) -> dict[str, Any]:
    """Run the point ``task`` (:meth:`Study.task`) and return its record.

    A point whose knob value the scenario refuses, or which fails in any other
    way, is a record with ``error`` set and no ``summary``: one bad point does
    not stop a sweep. ``KeyboardInterrupt`` (Ctrl-C, or ``cancel`` set while
    the simulation runs) propagates: a cancelled run has no record.
    """
    started = time.perf_counter()
    summary: Optional[dict[str, Any]] = None
    error: Optional[str] = None
    try:
        scenario = Scenario(task["scenario_text"], overrides=task["overrides"])
        scenario = scenario.with_overrides(knob_pairs(task["knobs"]))
        spec = point_policy(task["knobs"])
        policy = load_policy(spec) if spec is not None else None
        summary = run(
            scenario, profile=task["profile"], seed=task["seed"], duration_s=task["duration_s"], cancel=cancel,
            policy=policy,
        ).to_dict()
    except (ScenarioError, PolicyError, PolicyLoadError) as e:
        error = str(e)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as e:  # a bug in one point must not lose the others
        last = traceback.extract_tb(e.__traceback__)[-1:] if e.__traceback__ else []
        where = f" ({last[0].filename}:{last[0].lineno})" if last else ""
        error = f"internal error: {type(e).__name__}: {e}{where}"
    return _record(task, summary, error, time.perf_counter() - started)


def failed_record(task: dict[str, Any], error: str) -> dict[str, Any]:
    """The record of a point that failed outside :func:`run_point` (its Dask
    worker died, say), with ``error`` made one line."""
    return _record(task, None, " ".join(error.split()) or "failed", None)


def _record(task: dict[str, Any], summary: Optional[dict[str, Any]], error: Optional[str], wall: Optional[float]) -> dict[str, Any]:
    return {
        "key": task["key"],
        "point": task["point"],
        "replicate": task["replicate"],
        "profile": task["profile"],
        "knobs": task["knobs"],
        "seed": task["seed"],
        "duration_s": task["duration_s"],
        "summary": summary,
        "error": error,
        "wall_time_s": wall,
        "irqlab_version": version(),
        "git_commit": git_commit(),
    }
