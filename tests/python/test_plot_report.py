"""Figures and the HTML report of a sweep's results: `irqlab.study.plot`,
`irqlab.study.report` and the `irqlab plot` / `irqlab report` commands."""

from __future__ import annotations

import re
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import REPO, irqlab
from irqlab import results
from irqlab.cli import main
from irqlab.results import ResultsError
from irqlab.scenario import Scenario
from irqlab.study import Axis, PlotSpec, build_study, sweep
from irqlab.study.plot import default_plots, plot, stem_for
from irqlab.study.report import write_report

pytestmark = pytest.mark.needs_run

THESIS = REPO / "scenarios" / "thesis" / "bare-metal.toml"
#: Scenario text a report must show as text, never as markup.
MARKUP = "# a < b && c > d: <script>alert('x')</script>\n"


def _sweep(tmp: Path, name: str, **kwargs: object) -> Path:
    text = THESIS.read_text(encoding="utf-8") + "\n" + MARKUP
    study = build_study(Scenario.from_str(text, source=str(THESIS)), name=name, **kwargs)  # type: ignore[arg-type]
    out = tmp / name
    sweep(study, out, jobs=2, progress=False)
    return out


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2 profiles × 3 loads × 2 seeds, with a [[plot]] of its own."""
    return _sweep(
        tmp_path_factory.mktemp("grid"),
        "grid",
        profiles=["busy-wait", "no-coalescing"],
        axes=[Axis("load.qps", (100_000, 200_000, 300_000))],
        seeds=2,
        duration_s=0.02,
        plots=[PlotSpec(x="load.qps", y="latency_us.p99", logy=True, title="p99 <latency>")],
    )


@pytest.fixture(scope="module")
def failing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two points of four fail (no core); no [[plot]]: the default figures."""
    return _sweep(
        tmp_path_factory.mktemp("failing"),
        "failing",
        profiles=["busy-wait", "irq-suspend"],
        axes=[Axis("cpu.app_cores", (4, 0))],
        duration_s=0.02,
    )


@pytest.fixture(scope="module")
def frame(grid: Path):  # type: ignore[no-untyped-def]
    return results.load(grid)


# -- plot ---------------------------------------------------------------------


def test_plot_writes_png_and_svg(frame, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = PlotSpec(x="load.qps", y="throughput_qps")
    paths = plot(frame, spec, tmp_path / "out", "qps")
    assert paths == [tmp_path / "out" / "qps.png", tmp_path / "out" / "qps.svg"]
    png = paths[0].read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert width > 200 and height > 150
    root = ET.fromstring(paths[1].read_bytes())
    assert root.tag.endswith("svg")


def test_plot_is_byte_identical_for_the_same_data(frame, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = PlotSpec(x="load.qps", y="latency_us.p99", col="profile", hue=None, logy=True)
    first = plot(frame, spec, tmp_path / "a", "fig")
    second = plot(frame, spec, tmp_path / "b", "fig")
    for a, b in zip(first, second):
        assert a.read_bytes() == b.read_bytes(), a.name
    assert b"Date" not in first[1].read_bytes()


def test_missing_column_is_one_sentence(frame, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ResultsError) as e:
        plot(frame, PlotSpec(x="load.qps", y="latency_us.p9"), tmp_path, "bad")
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith("plot.y 'latency_us.p9' is not a column of the results")
    assert "did you mean latency_us.p99?" in message
    assert "columns include profile, load.qps" in message
    assert not list(tmp_path.iterdir()), "nothing is written for a bad figure"
    with pytest.raises(ResultsError, match=r"^--hue 'nope' is not a column"):
        plot(frame, PlotSpec(x="load.qps", y="throughput_qps", hue="nope"), tmp_path, "bad", where="--")


def test_text_y_is_refused(frame, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ResultsError, match=r"^plot.y 'profile' is not a numeric column"):
        plot(frame, PlotSpec(x="load.qps", y="profile"), tmp_path, "bad")


def test_default_plots(frame, failing: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    specs = default_plots(frame)
    assert [s.y for s in specs] == ["throughput_qps", "latency_us.p99", "cpu_pct.busy"]
    assert {(s.x, s.hue, s.col) for s in specs} == {("load.qps", "profile", None)}
    # No axis: the profiles as bars.
    no_axis = frame.copy()
    no_axis.attrs["axes"] = []
    bars = default_plots(no_axis)
    assert {(s.x, s.hue) for s in bars} == {("profile", None)}
    assert all(p.stat().st_size > 0 for p in plot(no_axis, bars[0], tmp_path, stem_for(bars[0])))
    # A second axis becomes the panels.
    two = frame.copy()
    two["cpu.app_cores"] = 8
    two.attrs["axes"] = ["load.qps", "cpu.app_cores"]
    assert {s.col for s in default_plots(two)} == {"cpu.app_cores"}


def test_failed_rows_are_left_out(failing: Path, tmp_path: Path) -> None:
    frame = results.load(failing)
    assert frame["error"].notna().sum() == 2
    spec = PlotSpec(x="cpu.app_cores", y="throughput_qps")
    paths = plot(frame, spec, tmp_path, "ok")
    assert paths[0].stat().st_size > 0


# -- report -------------------------------------------------------------------


def _attrs(page: str, name: str) -> list[str]:
    return re.findall(rf'\b{name}="([^"]*)"', page)


def test_report_is_self_contained(grid: Path, failing: Path, tmp_path: Path) -> None:
    out = write_report(
        grid,
        tmp_path / "report.html",
        title="Two <studies>",
        sections_before=[("Claims & checks", "<p class='claims'>claim <b>holds</b></p>")],
        extra_dirs=[failing],
    )
    page = out.read_text(encoding="utf-8")
    assert "http://" not in page and "https://" not in page
    assert "<script" not in page and "<link" not in page and "url(" not in page and "@import" not in page
    for src in _attrs(page, "src"):
        assert src.startswith("data:image/png;base64,")
    for href in _attrs(page, "href"):
        assert href.startswith("#"), href
    # Each image has its size and a description.
    for img in re.findall(r"<img [^>]*>", page):
        assert re.search(r'width="\d+"', img) and re.search(r'height="\d+"', img) and 'alt="' in img
    # Two studies: the grid's one [[plot]], the failing study's three default figures.
    assert page.count("<img ") == 1 + 3
    assert "<h1>Two &lt;studies&gt;</h1>" in page
    assert "<h2>Claims &amp; checks</h2>" in page and "<p class='claims'>claim <b>holds</b></p>" in page
    assert page.index("Claims &amp; checks") < page.index("Study grid") < page.index("Study failing")
    assert sorted(p.name for p in (grid / "plots").iterdir()) == [
        "01-latency_us.p99-vs-load.qps.png",
        "01-latency_us.p99-vs-load.qps.svg",
    ]
    assert len(list((failing / "plots").glob("*.svg"))) == 3


def test_report_escapes_the_texts(grid: Path) -> None:
    page = write_report(grid).read_text(encoding="utf-8")
    assert "alert(" in page  # the scenario's comment is shown ...
    assert "<script>" not in page  # ... as text
    assert "# a &lt; b &amp;&amp; c &gt; d: &lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert 'alt="p99 &lt;latency&gt;: latency_us.p99 against load.qps' in page
    assert "<pre>[study]" in page or "[study]\nname = &quot;grid&quot;" in page  # the study file
    assert "title = &quot;p99 &lt;latency&gt;&quot;" in page


def test_report_tables_and_provenance(grid: Path, frame) -> None:  # type: ignore[no-untyped-def]
    page = write_report(grid).read_text(encoding="utf-8")
    # A row per profile and load, with the mean ± interval over two seeds.
    results_table = page.split("<h3>Results</h3>")[1].split("</table>")[0]
    assert results_table.count("<tr>") == 1 + 6
    assert results_table.split("<tbody>")[1].count(" ± ") == 6
    assert "<h3>Failed runs (0)</h3>" in page and "No run failed." in page
    version = frame["irqlab_version"].iloc[0]
    assert f"<dd>{version}</dd>" in page
    commit = frame["git_commit"].iloc[0]
    if commit is not None:
        assert commit in page
    assert "12 runs stored, 0 failed" in page
    assert "sweep created" in page


def test_report_lists_failed_points(failing: Path) -> None:
    page = write_report(failing).read_text(encoding="utf-8")
    assert "<h3>Failed runs (2)</h3>" in page
    table = page.split('<table class="failed-runs">')[1].split("</table>")[0]
    assert table.count("<tr>") == 1 + 2
    assert table.count("must be between 1 and 1024 (got 0)") == 2
    assert "busy-wait" in table and "irq-suspend" in table


def test_report_is_deterministic(grid: Path, tmp_path: Path) -> None:
    a = write_report(grid, tmp_path / "a.html").read_bytes()
    b = write_report(grid, tmp_path / "b.html").read_bytes()
    assert a == b


def test_report_of_a_plot_naming_a_missing_column(grid: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(grid, copy)
    study = copy / "study.toml"
    study.write_text(study.read_text().replace('y = "latency_us.p99"', 'y = "latency_us.p100"'))
    with pytest.raises(ResultsError) as e:
        write_report(copy)
    assert "\n" not in str(e.value)
    assert str(e.value).startswith(f"{study} [[plot]] 1: plot.y 'latency_us.p100' is not a column")


def test_report_when_every_run_failed(tmp_path: Path) -> None:
    out = _sweep(tmp_path, "none", profiles=["busy-wait"], axes=[Axis("cpu.app_cores", (0,))], duration_s=0.02)
    page = write_report(out).read_text(encoding="utf-8")
    assert "<img" not in page
    assert "No run succeeded, so there is nothing to plot." in page
    assert "<h3>Failed runs (1)</h3>" in page


# -- the commands -------------------------------------------------------------


def test_cli_plot(grid: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["plot", str(grid), "--x", "load.qps", "--y", "cpu_pct.busy", "--out", str(tmp_path / "figs"), "--name", "cpu"])
    out = capsys.readouterr().out.splitlines()
    assert status == 0
    assert out == [str(tmp_path / "figs" / "cpu.png"), str(tmp_path / "figs" / "cpu.svg")]
    assert all(Path(p).stat().st_size > 0 for p in out)
    # Default place and name.
    assert main(["plot", str(grid), "--x", "load.qps", "--y", "throughput_qps", "--hue", "none", "--logx"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == str(grid / "plots" / "throughput_qps-vs-load.qps.png")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--x", "load.qps", "--y", "p99"], "--y 'p99' is not a column of the results"),
        (["--x", "qps", "--y", "throughput_qps"], "--x 'qps' is not a column of the results; did you mean"),
        (["--x", "load.qps", "--y", "throughput_qps", "--col", "cores"], "--col 'cores' is not a column"),
        (["--x", "load.qps", "--y", "throughput_qps", "--name", "a/b"], "--name must be a plain file name"),
        (["--x", "load.qps", "--y", "profile"], "--y 'profile' is not a numeric column"),
    ],
)
def test_cli_plot_errors(grid: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plot", str(grid), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"irqlab: error: {message}"), err
    assert err.count("\n") == 1


def test_cli_plot_bad_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plot", str(tmp_path / "nothing"), "--x", "a", "--y", "b"]) == 2
    assert capsys.readouterr().err == f"irqlab: error: {tmp_path / 'nothing'} does not exist; give a results directory written by irqlab sweep\n"
    assert main(["report", str(tmp_path)]) == 2
    assert "holds no sweep results (no manifest.json)" in capsys.readouterr().err
    assert main(["plot", str(tmp_path), "--y", "b"]) == 2
    assert "the following arguments are required: --x" in capsys.readouterr().err


def test_cli_report(grid: Path, failing: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "new" / "both.html"
    # Its directory must exist: irqlab creates no parent directories.
    assert main(["report", str(grid), str(failing), "--out", str(target)]) == 2
    assert "its directory" in capsys.readouterr().err and not target.parent.exists()
    target.parent.mkdir()
    assert main(["report", str(grid), str(failing), "--out", str(target), "--title", "Both"]) == 0
    assert capsys.readouterr().out == f"{target}\n"
    page = target.read_text(encoding="utf-8")
    assert "<title>Both</title>" in page and "Study grid" in page and "Study failing" in page
    assert main(["report", str(grid), "--out", str(tmp_path)]) == 2
    assert "is a directory; give the HTML file's name" in capsys.readouterr().err
    assert main(["report", str(grid), str(grid)]) == 2
    assert "given twice" in capsys.readouterr().err


def test_cli_end_to_end(grid: Path, tmp_path: Path) -> None:
    """The installed command, in its own process: paths on stdout, nothing on stderr."""
    done = irqlab("report", str(grid), "--out", str(tmp_path / "r.html"))
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{tmp_path / 'r.html'}\n", "")
    done = irqlab("plot", str(grid), "--x", "load.qps", "--y", "nope")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("irqlab: error: --y 'nope' is not a column") and "Traceback" not in done.stderr


def test_files_are_readable_by_others(grid: Path, tmp_path: Path) -> None:
    """Figures and reports are for sharing: the umask decides, as for any new file."""
    import os

    old = os.umask(0o022)
    try:
        report = write_report(grid, tmp_path / "r.html")
        figures = plot(results.load(grid), PlotSpec(x="load.qps", y="throughput_qps"), tmp_path, "f")
    finally:
        os.umask(old)
    for path in [report, *figures]:
        assert path.stat().st_mode & 0o777 == 0o644, path
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
