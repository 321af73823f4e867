"""A paper's studies: its study files (``scenarios/<paper>/*.study.toml``)
with what the command line changes, run into ``--out`` and read back."""

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


def paper_studies(directory: Path, names, scenario=None, duration_s=None, seed=None, seeds=None, overrides=()) -> list:
    """The studies ``names`` from their files in ``directory``, with what
    the command line changes (another scenario, the duration, the base
    seed, the seeds per point, overrides added to their ``[set]``)."""
    from irqlab.study.spec import build_study, load_study_file

    studies = []
    for name in names:
        spec = adjust_spec(load_study_file(directory / f"{name}.study.toml"), scenario, duration_s, seed, overrides)
        if seeds is not None:
            spec["seeds"] = seeds
        studies.append(build_study(spec.pop("scenario"), **spec))
    return studies


def run_seeded(directory: Path, names, read, scenario=None, duration_s=None, seed=None, seeds=None, *, out: Path,
               jobs: Optional[int] = None, resume: bool = False, quiet: bool = False, overrides=()):
    """Run the studies ``names`` of ``directory`` (:func:`paper_studies`)
    into ``out/<name>`` and ``read(out)`` them back; ``resume`` keeps what
    an interrupted run finished."""
    run_studies(paper_studies(directory, names, scenario, duration_s, seed, seeds, overrides), out, jobs=jobs,
                resume=resume, quiet=quiet)
    return read(out)


def mean(frame, column: str) -> float:
    """The mean of a results frame's column, NaN when it is absent or all NaN."""
    if column not in frame.columns:
        return math.nan
    values = frame[column].astype(float)
    return float(values.mean()) if values.notna().any() else math.nan


def warnings_of(frame, study: str = "") -> list[str]:
    """The warnings of a results frame's runs, in order, each once, naming
    the runs it is about (study ``study``, profile, the axes' values:
    :mod:`irqlab.reproduce.where`)."""
    from irqlab.reproduce.where import located, of_frame

    return located(of_frame(frame, study))
