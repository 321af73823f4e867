"""Reproductions of the papers' experiments from the simulator (``irqlab reproduce``)."""

from pathlib import Path
from typing import Optional


def scenario_dir(paper: str, marker: str) -> Path:
    """``scenarios/<paper>`` of the working directory if it holds ``marker``,
    else the repository's."""
    here = Path("scenarios") / paper
    if (here / marker).is_file():
        return here
    return Path(__file__).resolve().parents[3] / "scenarios" / paper


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
