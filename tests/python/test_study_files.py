"""Every study file kept in the repository is valid against its scenario."""

from __future__ import annotations

from pathlib import Path

import pytest

from irqlab.study import build_study, load_study_file

ROOT = Path(__file__).resolve().parents[2]
STUDIES = sorted((ROOT / "scenarios").rglob("*.study.toml"))


def test_the_repository_has_study_files():
    names = {p.name for p in STUDIES}
    assert {"table-4.1.study.toml", "figure-4.1.study.toml", "app-cores.study.toml"} <= names


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: str(p.relative_to(ROOT)))
def test_study_file_builds(path):
    spec = load_study_file(path)
    study = build_study(spec.pop("scenario"), **spec)
    assert study.size >= 1 and study.name == path.name.removesuffix(".study.toml")
    # Every plot names columns the results will have: the axes, profile, or summary fields.
    for plot in study.plots:
        assert plot.x in {"profile", *(a.field for a in study.axes)}
