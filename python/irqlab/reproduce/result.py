"""What every paper's result holds beside its numbers: where its studies'
results are, how they were run, and their runs' warnings."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator


@dataclass
class StudiesResult:
    """A reproduction's result as read back from its results stores."""

    #: Each study's results directory, in the order they run.
    directories: dict[str, Path] = field(default_factory=dict)
    #: The base seed, the seeds per point and the simulated seconds per run.
    seed: int = 1
    seeds: int = 1
    duration_s: float = math.nan
    #: The scenario as run (resolved, with the studies' overrides).
    resolved: dict = field(default_factory=dict)
    #: Warnings of the runs, each once.
    warnings: list[str] = field(default_factory=list)

    def read(self, out: Path, names) -> Iterator[tuple[str, Any, dict, dict]]:
        """Each study's results under ``out``: (name, its succeeded runs as
        a frame, its study file's spec, its scenario resolved with the
        study's overrides). Notes each study's directory; the first study's
        seed, seeds, duration and scenario stand for the reproduction's."""
        from irqlab import results
        from irqlab.study.layout import STUDY
        from irqlab.study.spec import load_study_file

        for i, name in enumerate(names):
            directory = out / name
            frame = results.succeeded(results.load(directory))
            self.directories[name] = directory
            spec = load_study_file(directory / STUDY)
            resolved = spec["scenario"].with_overrides(list(spec["overrides"])).resolved()
            if i == 0:
                self.duration_s = float(frame["duration_s"].iloc[0]) if len(frame) else math.nan
                self.seed = int(spec["seed"])
                self.seeds = int(spec["seeds"])
                self.resolved = resolved
            yield name, frame, spec, resolved
