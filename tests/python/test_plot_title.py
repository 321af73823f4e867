"""Text a figure draws (issue 62, item 11): a title matplotlib's mathtext
cannot parse is refused up front (a study file, ``irqlab plot --title``),
values from the results are drawn as written, and a report that fails
leaves ``DIR/plots/`` as it was."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import SMALL, irqlab
from irqlab import results
from irqlab.cli import main
from irqlab.plottext import literal, title_problem
from irqlab.results import ResultsError
from irqlab.study import PlotSpec
from irqlab.study import plot as plot_module
from irqlab.study.plot import plot
from irqlab.study.report import write_report
from irqlab.study.spec import StudyError, load_study_file

BAD = r"$\frac{$"


def _one_error_line(err: str, *needles: str) -> str:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("irqlab: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results directory of 2 loads × 2 seeds of the small scenario."""
    out = tmp_path_factory.mktemp("title") / "ok"
    done = irqlab("sweep", str(SMALL), "--grid", "load.qps=1000,2000", "--seeds", "2", "--duration", "0.002",
                  "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    return out


def _copy(swept: Path, tmp_path: Path, name: str, title: str | None = None) -> Path:
    """A copy of ``swept`` whose study file has a [[plot]] (titled ``title``),
    as a sweep of an earlier irqlab, which took any title, left it."""
    out = tmp_path / name
    shutil.copytree(swept, out)
    study = out / "study.toml"
    text = study.read_text(encoding="utf-8")
    text += '\n[[plot]]\nx = "load.qps"\ny = "throughput_qps"\n'
    if title is not None:
        text += f"title = '{title}'\n"
    study.write_text(text, encoding="utf-8")
    return out


def _leftovers(directory: Path) -> list[str]:
    return [n for n in os.listdir(directory) if n.startswith(".plots.")]


def test_title_problem_names_mathtext_that_does_not_parse() -> None:
    problem = title_problem(BAD)
    assert problem is not None and problem.startswith(repr(BAD)) and "math text" in problem and "\\$" in problem
    assert "\n" not in problem
    # Math that parses, a lone $ (plain text) and no $ are fine.
    for fine in (r"$\mu$s", "costs $5", "p99 latency", None):
        assert title_problem(fine) is None, fine


def test_a_study_file_with_such_a_title_is_refused_when_read(tmp_path: Path) -> None:
    study = tmp_path / "bad.study.toml"
    study.write_text(f'[study]\nscenario = "{SMALL}"\n[[plot]]\nx = "load.qps"\ny = "throughput_qps"\n'
                     f"title = '{BAD}'\n", encoding="utf-8")
    with pytest.raises(StudyError, match=r"plot\.title .* does not parse"):
        load_study_file(study)
    done = irqlab("sweep", str(study), "--out", str(tmp_path / "never"), "--quiet")
    _one_error_line(done.stderr, "plot.title", "math text")
    assert done.returncode == 2 and not (tmp_path / "never").exists()


def test_plot_refuses_such_a_title_before_creating_anything(swept: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "figs"
    assert main(["plot", str(swept), "--x", "load.qps", "--y", "throughput_qps", "--title", BAD,
                 "--out", str(out)]) == 2
    _one_error_line(capsys.readouterr().err, "--title", "math text")
    assert not out.exists()
    # The API refuses it too, in one sentence naming the field.
    with pytest.raises(ResultsError, match=r"^--title .* does not parse"):
        plot(results.load(swept), PlotSpec(x="load.qps", y="throughput_qps", title=BAD), out, "x", where="--")
    assert not out.exists()


def test_a_title_in_math_that_parses_is_drawn(swept: Path, tmp_path: Path) -> None:
    paths = plot(results.load(swept), PlotSpec(x="load.qps", y="throughput_qps", title=r"$\mu$s per $x^2$"),
                 tmp_path, "math")
    assert all(p.stat().st_size > 0 for p in paths)


def test_values_from_the_results_are_drawn_as_written(tmp_path: Path) -> None:
    import pandas as pd

    # A text axis whose values would be broken math: bars with these labels.
    frame = pd.DataFrame({"mode": [BAD, "a$b$c", BAD, "a$b$c"], "v_qps": [1.0, 2.0, 3.0, 4.0], "error": [None] * 4})
    frame["error"] = frame["error"].astype(object)
    paths = plot(frame, PlotSpec(x="mode", y="v_qps", hue="mode"), tmp_path, "bars")
    assert all(p.stat().st_size > 0 for p in paths)
    assert literal("a$b") == "a\\$b"


def test_report_refuses_an_earlier_sweeps_title_without_drawing(swept: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    good, bad = _copy(swept, tmp_path, "good"), _copy(swept, tmp_path, "bad", BAD)
    assert main(["report", str(good), str(bad), "--out", str(tmp_path / "r.html")]) == 2
    _one_error_line(capsys.readouterr().err, "plot.title", "math text")
    # The first directory's figures were not drawn into plots/ either.
    for d in (good, bad):
        assert not (d / "plots").exists() and _leftovers(d) == []
    assert not (tmp_path / "r.html").exists()


def test_a_report_failing_midway_leaves_plots_as_it_was(swept: Path, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    d = _copy(swept, tmp_path, "midway")
    (d / "plots").mkdir()
    (d / "plots" / "mine.png").write_bytes(b"irqlab plot's own figure")
    (d / "plots" / "01-throughput_qps-vs-load.qps.png").write_bytes(b"an earlier report's figure")
    before = {p.name: p.read_bytes() for p in (d / "plots").iterdir()}
    calls = []
    real = plot_module.plot

    def second_fails(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 2:
            raise ResultsError("the second figure fails")
        return real(*args, **kwargs)

    monkeypatch.setattr(plot_module, "plot", second_fails)
    with pytest.raises(ResultsError, match="second figure"):
        write_report(d, extra_dirs=[_copy(swept, tmp_path, "second")])
    assert {p.name: p.read_bytes() for p in (d / "plots").iterdir()} == before
    assert _leftovers(d) == [] and not (tmp_path / "second" / "plots").exists()
    monkeypatch.setattr(plot_module, "plot", real)
    # Once it succeeds, the report's figure replaces its namesake and irqlab plot's stays.
    write_report(d)
    after = {p.name: p.read_bytes() for p in (d / "plots").iterdir()}
    assert after["mine.png"] == before["mine.png"]
    assert after["01-throughput_qps-vs-load.qps.png"].startswith(b"\x89PNG")
    assert (d / "plots" / "01-throughput_qps-vs-load.qps.svg").is_file() and _leftovers(d) == []


def test_a_report_makes_plots_with_the_usual_permissions(swept: Path, tmp_path: Path) -> None:
    d = _copy(swept, tmp_path, "perms")
    old = os.umask(0o022)
    try:
        write_report(d)
    finally:
        os.umask(old)
    assert (d / "plots").is_dir() and (os.stat(d / "plots").st_mode & 0o777) == 0o755
    assert _leftovers(d) == []


def test_plot_refuses_a_missing_column_before_making_its_directory(swept: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert not (swept / "plots").exists()
    assert main(["plot", str(swept), "--x", "load.qps", "--y", "nope"]) == 2
    _one_error_line(capsys.readouterr().err, "--y 'nope'")
    assert not (swept / "plots").exists()


def test_build_study_refuses_such_a_title() -> None:
    from irqlab.scenario import Scenario
    from irqlab.study import build_study

    with pytest.raises(StudyError, match=r"plot title .* does not parse"):
        build_study(Scenario.load(SMALL), name="t", plots=[PlotSpec(x="load.qps", y="throughput_qps", title=BAD)])
