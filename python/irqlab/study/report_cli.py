"""``irqlab plot`` and ``irqlab report``: figures and an HTML report of a
sweep's results directory.

pandas and matplotlib load only when one of these commands runs.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any, Optional

from irqlab.study.cli import SweepUsageError


def add_plot_report_parsers(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = commands.add_parser(
        "plot",
        help="draw a figure of a sweep's results (PNG and SVG)",
        description=(
            "Draw Y over X from the results directory of irqlab sweep: the mean over seeds with its 95 %% "
            "confidence band, a line per HUE value, a panel per COL value. Writes NAME.png and NAME.svg and "
            "prints their paths."
        ),
        allow_abbrev=False,
    )
    p.add_argument("directory", metavar="DIR", help="a results directory written by irqlab sweep")
    p.add_argument("--x", required=True, metavar="COL", help="column on the x axis, e.g. load.qps (profile gives bars)")
    p.add_argument("--y", required=True, metavar="COL", help="numeric column on the y axis, e.g. latency_us.p99")
    p.add_argument("--hue", metavar="COL", default="profile", help="a line per value of this column (default profile; none for one line)")
    p.add_argument("--col", metavar="COL", help="a panel per value of this column")
    p.add_argument("--logx", action="store_true", help="logarithmic x axis")
    p.add_argument("--logy", action="store_true", help="logarithmic y axis")
    p.add_argument("--title", metavar="TEXT", help="the figure's title (default: Y vs X)")
    p.add_argument("--out", metavar="DIR2", help="directory for the files (default DIR/plots)")
    p.add_argument("--name", metavar="STEM", help="file name without suffix (default Y-vs-X)")
    p.set_defaults(handler=_cmd_plot)

    r = commands.add_parser(
        "report",
        help="write one self-contained HTML report of sweeps' results",
        description=(
            "Write one HTML file with the figures (the study's [[plot]] tables, or throughput, p99 latency and "
            "CPU utilisation), the results aggregated over seeds, the failed runs, provenance and the study and "
            "scenario files, for each results directory given. The file loads nothing from anywhere else. "
            "Prints its path."
        ),
        allow_abbrev=False,
    )
    r.add_argument("directories", metavar="DIR", nargs="+", help="results directories written by irqlab sweep")
    r.add_argument("--out", metavar="FILE", help="the HTML file (default DIR/report.html of the first DIR)")
    r.add_argument("--title", metavar="TEXT", help="the report's title (default: the studies' names)")
    r.set_defaults(handler=_cmd_report)


def _results_dir(text: str) -> Path:
    path = Path(text)
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is not a directory"
        raise SweepUsageError(f"{text} {what}; give a results directory written by irqlab sweep")
    if not (path / "manifest.json").is_file():
        raise SweepUsageError(f"{text} holds no sweep results (no manifest.json); give a directory written by irqlab sweep")
    return path


def _out_dir(text: str, flag: str) -> Path:
    """The figures' directory, created if it is missing (its parent must exist)."""
    from irqlab.files import make_output_dir

    return make_output_dir(text, flag, SweepUsageError)


def _column(text: Optional[str], flag: str) -> Optional[str]:
    if text is None:
        return None
    if not text.strip():
        raise SweepUsageError(f"{flag} must name a column of the results (e.g. load.qps, latency_us.p99)")
    return text.strip()


def _cmd_plot(args: argparse.Namespace) -> int:
    from irqlab.cli_common import write_stdout
    from irqlab.results import ResultsError, load
    from irqlab.files import check_output_dir, check_output_file
    from irqlab.study.plot import check_spec, plot, stem_for
    from irqlab.study.spec import PlotSpec

    directory = _results_dir(args.directory)
    x, y = _column(args.x, "--x"), _column(args.y, "--y")
    hue = _column(args.hue, "--hue")
    if hue is not None and hue.lower() == "none":
        hue = None
    col = _column(args.col, "--col")
    assert x is not None and y is not None
    spec = PlotSpec(x=x, y=y, hue=hue, col=col, logx=args.logx, logy=args.logy, title=args.title)
    from irqlab.plottext import title_problem

    problem = title_problem(args.title)  # before anything is read or created
    if problem is not None:
        raise SweepUsageError(f"--title {problem}")
    stem = args.name if args.name is not None else stem_for(spec)
    if not stem or "/" in stem or "\\" in stem or stem in (".", "..") or re.search(r"[\x00-\x1f]", stem):
        raise SweepUsageError(f"--name must be a plain file name without a directory or suffix (got {args.name!r})")
    # Every output path before the results are read and drawn.
    out = check_output_dir(args.out, "--out", SweepUsageError) if args.out is not None else directory / "plots"
    if args.out is None:
        check_output_dir(out, "", SweepUsageError)
    if out.is_dir():  # a new directory holds nothing in the way
        for suffix in (".png", ".svg"):
            check_output_file(out / f"{stem}{suffix}", "", SweepUsageError)
    try:
        frame = load(directory)
        _check_some_succeeded(frame, directory)
        check_spec(frame, spec, where="--")  # a bad column refused before the directory is made
        out = _out_dir(str(out), "--out" if args.out is not None else "")
        paths = plot(frame, spec, out, stem, where="--")
    except ResultsError as e:
        raise SweepUsageError(str(e)) from None
    for path in paths:
        write_stdout(str(path))
    return 0


def _check_some_succeeded(frame: Any, directory: Path) -> None:
    from irqlab.results import ResultsError, succeeded

    if len(frame) == 0:
        raise ResultsError(f"{directory} holds no finished run yet; run irqlab sweep to completion first")
    if succeeded(frame).empty:
        raise ResultsError(f"every run in {directory} failed, so there is nothing to plot; see irqlab report {directory}")


def _cmd_report(args: argparse.Namespace) -> int:
    from irqlab.cli_common import write_stdout
    from irqlab.files import check_output_dir, check_output_file
    from irqlab.results import ResultsError
    from irqlab.study.report import PLOTS, REPORT, write_report

    dirs = [_results_dir(d) for d in args.directories]
    if len({d.resolve() for d in dirs}) != len(dirs):
        raise SweepUsageError("a results directory is given twice; give each once")
    out: Optional[Path] = None
    # Every output path before anything is read or drawn: the page, and the
    # figures' directory in each results directory.
    if args.out is not None:
        out = Path(args.out)
        if out.is_dir():
            raise SweepUsageError(f"--out {args.out} is a directory; give the HTML file's name (e.g. {out / 'report.html'})")
        check_output_file(args.out, "--out", SweepUsageError)
    else:
        check_output_file(dirs[0] / REPORT, "", SweepUsageError)
    for d in dirs:
        check_output_dir(d / PLOTS, "", SweepUsageError)
    try:
        path = write_report(dirs[0], out, title=args.title, extra_dirs=dirs[1:])
    except ResultsError as e:
        raise SweepUsageError(str(e)) from None
    write_stdout(str(path))
    return 0
