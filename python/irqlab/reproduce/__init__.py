"""Reproductions of the papers' experiments from the simulator (``irqlab reproduce``)."""

import math
from pathlib import Path
from typing import Optional


def scenario_dir(paper: str, marker: str) -> Path:
    """``scenarios/<paper>`` of the working directory if it holds ``marker``,
    else the repository's."""
    here = Path("scenarios") / paper
    if (here / marker).is_file():
        return here
    return Path(__file__).resolve().parents[3] / "scenarios" / paper


def adjust_spec(spec: dict, scenario, duration_s, seed, overrides) -> dict:
    """A study file's spec (``load_study_file``) with what a reproduction's
    command line changes: another scenario file, the simulated seconds per
    run, the base seed, and ``overrides`` (``"key=value"``) added to its
    ``[set]``. ``None`` (or no overrides) keeps the file's value."""
    from irqlab.scenario import Scenario

    if scenario is not None:
        spec["scenario"] = Scenario.load(scenario)
    if duration_s is not None:
        spec["duration_s"] = duration_s
    if seed is not None:
        spec["seed"] = seed
    if overrides:
        spec["overrides"] = tuple(spec["overrides"]) + tuple(overrides)
    return spec


def run_studies(studies: list, out: Path, *, jobs: Optional[int], resume: bool, quiet: bool) -> None:
    """Run each study into ``out/<its name>`` on every core (``jobs``: that
    many). Without ``resume`` a results directory starts afresh (earlier
    results there are removed); with it, what an interrupted reproduction
    finished is kept. The first failed point ends the reproduction with a
    ``ScenarioError`` naming it."""
    import contextlib
    import io
    import shutil

    from irqlab._core import ScenarioError
    from irqlab.study.store import MANIFEST
    from irqlab.study.sweep import sweep

    for study in studies:
        directory = out / study.name
        if not resume and (directory / MANIFEST).is_file():
            shutil.rmtree(directory)
        quiet_stderr = contextlib.redirect_stderr(io.StringIO()) if quiet else contextlib.nullcontext()
        with quiet_stderr:
            result = sweep(study, directory, jobs=jobs)
        if result.failures:
            first = result.failures[0]
            raise ScenarioError(f"{study.name}: point {first.what} failed: {first.error}")


def json_clean(x: object) -> object:
    """``x`` with every non-finite float as None (JSON has no NaN)."""
    if isinstance(x, dict):
        return {k: json_clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_clean(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x
