"""Every study file kept in the repository is valid against its scenario."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import SMALL

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


# -- issue 62, item 16: one path rule in a study file, relative to the file

EXAMPLE = ROOT / "examples" / "policies" / "rate_coalescer.study.toml"


@pytest.mark.parametrize("where", ["root", "elsewhere"])
def test_a_study_files_policy_path_is_relative_to_the_file(where, tmp_path, monkeypatch):
    # The tutorial's study worked only from the repository's root.
    monkeypatch.chdir(ROOT if where == "root" else tmp_path)
    spec = load_study_file(EXAMPLE if where == "root" else os.path.relpath(EXAMPLE))
    study = build_study(spec.pop("scenario"), **spec)
    (policy,) = [a for a in study.axes if a.field == "policy"]
    file = policy.values[0].rpartition(":")[0]
    assert Path(file).resolve() == ROOT / "examples" / "policies" / "rate_coalescer.py"
    if where == "root":  # the values (so the results' keys) of a sweep run from the root are unchanged
        assert policy.values == ("examples/policies/rate_coalescer.py:RateCoalescer", "none")


def test_a_study_with_a_policy_runs_from_any_directory_and_its_copy_re_runs_it(tmp_path):
    import shutil

    studies = tmp_path / "studies"
    studies.mkdir()
    shutil.copy(ROOT / "examples" / "policies" / "rate_coalescer.py", studies / "mine.py")
    (studies / "p.study.toml").write_text(
        '[study]\nname = "p"\nscenario = "../small.toml"\nduration_s = 0.002\n'
        '[axes]\npolicy = ["mine.py:RateCoalescer", "none"]\n'
    )
    (tmp_path / "small.toml").write_text(SMALL.read_text())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def sweep_in(cwd, *args):
        return subprocess.run([sys.executable, "-m", "irqlab", "sweep", *args, "--quiet", "--json"],
                              capture_output=True, text=True, cwd=cwd, timeout=300)

    done = sweep_in(elsewhere, str(studies / "p.study.toml"), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["failed"] == []
    # The results directory's study.toml names the policy relative to itself.
    kept = tomllib.loads((tmp_path / "out" / "study.toml").read_text())
    file = kept["axes"]["policy"][0].rpartition(":")[0]
    assert (tmp_path / "out" / file).resolve() == (studies / "mine.py").resolve()
    again = sweep_in(elsewhere, str(tmp_path / "out" / "study.toml"), "--out", str(tmp_path / "out"))
    assert again.returncode == 0 and json.loads(again.stdout)["ran"] == 0, again.stderr
