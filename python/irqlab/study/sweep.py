"""Running a study: the points not yet in the results directory, on an
executor, each recorded as it finishes; the dataset rebuilt at the end,
however the sweep ends."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from irqlab.provenance import git_commit, version
from irqlab.study.executor import DaskExecutor, ThreadExecutor
from irqlab.study.progress import Progress
from irqlab.study.spec import MAX_POINTS_WITHOUT_YES, Study, StudyError
from irqlab.study.store import RESULTS, Store

Executor = Union[ThreadExecutor, DaskExecutor]


@dataclass
class Failure:
    """A point that ran and failed."""

    point: int
    replicate: int
    what: str
    error: str


@dataclass
class SweepResult:
    """What one invocation of :func:`sweep` did."""

    directory: Path
    total: int
    #: Points already in the directory (a resumed sweep) and run now.
    skipped: int = 0
    ran: int = 0
    failures: list[Failure] = field(default_factory=list)
    wall_s: float = 0.0
    #: Points per wall second over the runs of this invocation.
    rate: float = 0.0
    executor: str = ""
    #: Things about these results that are not what they seem (one sentence each).
    warnings: list[str] = field(default_factory=list)

    @property
    def results(self) -> Path:
        return self.directory / RESULTS

    @property
    def complete(self) -> bool:
        return self.skipped + self.ran == self.total


def _other_code(records: Any) -> Optional[str]:
    """How the first run made by another irqlab or commit than this one is
    described, if any (a sweep resumed after an upgrade or an edit)."""
    here = (version(), git_commit())
    for r in records:
        theirs = (r.get("irqlab_version"), r.get("git_commit"))
        if theirs != here and r.get("error") is None:
            return f"irqlab {theirs[0]} (commit {theirs[1] or 'unknown'})"
    return None


def check_size(study: Study, yes: bool) -> None:
    if study.size > MAX_POINTS_WITHOUT_YES and not yes:
        raise StudyError(
            f"the grid has {study.size:,} points (profiles × axis values × seeds), more than "
            f"{MAX_POINTS_WITHOUT_YES:,}; pass --yes to run it anyway"
        )


def sweep(
    study: Study,
    out: Union[str, os.PathLike[str]],
    *,
    jobs: Optional[int] = None,
    executor: Optional[Executor] = None,
    yes: bool = False,
    progress: Optional[bool] = None,
    quiet: bool = False,
) -> SweepResult:
    """Run every point of ``study`` that ``out`` does not hold yet.

    ``executor`` defaults to ``jobs`` threads (default: every core).
    ``progress`` forces the bar on or off (default: a bar on a terminal,
    lines otherwise). On ``KeyboardInterrupt`` the finished points are kept
    and the dataset written before it propagates; re-running the same sweep
    runs only the rest.
    """
    check_size(study, yes)
    store = Store.open(out, study)
    try:
        finished = store.finished()
        mixed = _other_code(finished.values())
        points = list(study.points())
        todo = [p for p in points if p.key not in finished or finished[p.key].get("error") is not None]
        result = SweepResult(store.path, total=len(points), skipped=len(points) - len(todo))
        if mixed and todo:
            result.warnings.append(
                f"{store.path} holds runs made by {mixed}, and this is irqlab {version()} "
                f"(commit {git_commit() or 'unknown'}); the results will mix the two (columns irqlab_version and "
                "git_commit tell them apart); use a new --out to start afresh"
            )
        ex = executor or ThreadExecutor(jobs)
        result.executor = ex.describe()
        bar = Progress.wanted(quiet) if progress is None else progress
        shown = Progress(study.name, len(points), result.skipped, bar=bar)
        started = time.monotonic()

        def on_record(record: dict[str, Any]) -> None:
            store.append(record)
            result.ran += 1
            failed = record.get("error") is not None
            shown.advance(failed)

        try:
            ex.run([study.task(p) for p in todo], on_record)
        finally:
            shown.close()
            result.wall_s = time.monotonic() - started
            result.rate = result.ran / result.wall_s if result.wall_s > 0 else 0.0
            store.compact(study)
        return _outcome(study, store, points, result)
    finally:
        store.close()


def _outcome(study: Study, store: Store, points: list[Any], result: SweepResult) -> SweepResult:
    """``result`` with the failures the directory holds, in grid order."""
    by_key = {p.key: p for p in points}
    for key, record in store.finished().items():
        if record.get("error") is not None and key in by_key:
            p = by_key[key]
            result.failures.append(Failure(p.index, p.replicate, p.describe(), record["error"]))
    result.failures.sort(key=lambda f: (f.point, f.replicate))
    return result
