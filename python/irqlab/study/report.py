"""One self-contained HTML report of one or more sweeps' results.

The file needs nothing but itself: the plots are inlined as PNG ``data:``
URIs, the style is inline, there is no script, and a Content-Security-Policy
forbids the browser to fetch anything else (a fragment that tried would show
as an error in the console, not as a silent request). Per results directory
it holds:

- the figures: the study's ``[[plot]]`` tables (from ``DIR/study.toml``), or
  :func:`irqlab.study.plot.default_plots`, also written as PNG and SVG into
  ``DIR/plots/``;
- the plotted metrics aggregated over seeds (mean ± 95 % confidence interval)
  per profile and axis value;
- the runs that failed, with their errors;
- provenance: irqlab version(s), git commit(s), when the sweep was created,
  how many runs it has and how long they took;
- the study and scenario files as text.

The same results give the same report: nothing in it depends on when or
where it was written.
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
import struct
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

from irqlab.results import ResultsError
from irqlab.study.spec import PlotSpec, StudyError

if TYPE_CHECKING:
    import pandas

#: The report's name in a results directory when no ``out`` is given.
REPORT = "report.html"
#: Where the figures' PNG and SVG files go, inside each results directory.
PLOTS = "plots"

_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 72rem;
       padding: 0 1rem; color: #1b1b1b; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; }
h2 { font-size: 1.3rem; border-bottom: 1px solid #ccc; padding-bottom: .2rem; margin-top: 2.2rem; }
h3 { font-size: 1.05rem; margin-top: 1.6rem; }
figure { margin: 1rem 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: .85rem; color: #555; }
.table-box { max-width: 100%; overflow-x: auto; margin: .6rem 0; }
table { border-collapse: collapse; font-size: .85rem; font-variant-numeric: tabular-nums; }
caption { caption-side: top; text-align: left; font-size: .85rem; color: #555; padding-bottom: .2rem; }
th, td { border: 1px solid #ddd; padding: .2rem .5rem; text-align: right; vertical-align: top; }
th { background: #f3f3f3; }
td.text, th.text { text-align: left; }
td small { white-space: nowrap; color: #555; }
tr.paper td { background: #fafafa; }
pre { background: #f7f7f7; border: 1px solid #e3e3e3; padding: .6rem; overflow-x: auto; font-size: .8rem; }
dl { display: grid; grid-template-columns: max-content auto; gap: .1rem 1rem; font-size: .9rem; }
dt { font-weight: 600; }
dd { margin: 0; overflow-wrap: anywhere; }
details { margin: .6rem 0; }
summary { cursor: pointer; font-weight: 600; }
li, p { overflow-wrap: anywhere; }
.note { color: #555; font-style: italic; }
.failed { color: #a00; }
nav ul { padding-left: 1.2rem; }
""".strip()


def write_report(
    directory: Path,
    out: Optional[Path] = None,
    *,
    title: Optional[str] = None,
    sections_before: Sequence[tuple[str, str]] = (),
    extra_dirs: Sequence[Path] = (),
    collapse: bool = False,
) -> Path:
    """Write the HTML report of the results in ``directory`` (and of each of
    ``extra_dirs``, a section each) to ``out`` (default
    ``directory/report.html``) and return its path.

    ``sections_before`` are ``(heading, html_fragment)`` pairs put first, as
    given (the fragment is HTML, the heading text). With ``collapse`` (a
    paper's report, whose own sections come first) the studies follow under
    one heading, each folded (``<details>``) and with its runs as CSV
    (``DIR/results.csv``) linked; the contents then list the sections
    before and that one heading. The figures are also
    written to ``DIR/plots/`` of each directory. Raises
    :class:`~irqlab.results.ResultsError` (one sentence) for a directory that
    holds no sweep or a ``[[plot]]`` naming a column the results lack.
    """
    from irqlab._core import __version__

    dirs = [Path(directory), *(Path(d) for d in extra_dirs)]
    target = Path(out) if out is not None else dirs[0] / REPORT
    with _StagedPlots() as staged:
        studies = [
            _study_section(d, n, staged.directory_for(d), csv_from=target.parent if collapse else None)
            for n, d in enumerate(dirs, start=1)
        ]
        # Every study's figures are drawn: only now do they reach DIR/plots/.
        staged.commit()
    names = [s["name"] for s in studies]
    heading = title or (f"irqlab study {names[0]}" if len(names) == 1 else f"irqlab studies {', '.join(names)}")
    body: list[str] = [f"<h1>{_e(heading)}</h1>"]
    body.append(f'<p class="note">Written by irqlab {_e(__version__)} from {len(dirs)} results '
                f"director{'y' if len(dirs) == 1 else 'ies'}.</p>")
    contents = [(f"before-{i}", h) for i, (h, _) in enumerate(sections_before, start=1)]
    twice = {n for n in names if names.count(n) > 1}
    if collapse:
        contents.append(("raw-results", RAW_HEADING))
    else:
        contents += [
            (s["id"], f"Study {s['name']}" + (f" ({d})" if s["name"] in twice else "")) for s, d in zip(studies, dirs)
        ]
    if len(contents) > 1:
        body.append("<nav><ul>" + "".join(f'<li><a href="#{a}">{_e(t)}</a></li>' for a, t in contents) + "</ul></nav>")
    for i, (h, fragment) in enumerate(sections_before, start=1):
        body.append(f'<section id="before-{i}"><h2>{_e(h)}</h2>\n{fragment}\n</section>')
    if collapse:
        body.append(f'<section id="raw-results"><h2>{_e(RAW_HEADING)}</h2><p class="note">Each study the tables and '
                    "figures above were made from: its figures, its results per point (mean over seeds with the 95 % "
                    "interval), its failed runs, its study and scenario files, and its runs as CSV. Folded: click "
                    "to open.</p>")
        body.extend(f'<details><summary>Study {_e(s["name"])}</summary>{s["html"]}</details>'
                    for s in studies)
        body.append("</section>")
    else:
        body.extend(s["html"] for s in studies)
    page = (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(heading)}</title>\n<style>\n{_CSS}\n</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
    from irqlab.files import write_whole

    write_whole(target, lambda tmp: tmp.write_bytes(page.encode("utf-8")))
    return target


# -- one results directory ------------------------------------------------------


#: The heading of the folded studies in a paper's report.
RAW_HEADING = "Raw results of every study"


def _study_section(directory: Path, number: int, plots_dir: Path, csv_from: Optional[Path] = None) -> dict[str, str]:
    """The HTML section of one results directory; its figures are drawn into
    ``plots_dir`` (a staging directory, see :class:`_StagedPlots`)."""
    from irqlab.results import load, succeeded
    from irqlab.study.plot import describe, plot, plots_for, stem_for, title_of

    frame = load(directory)
    manifest = _manifest(directory)
    study_text, doc = _study_file(directory)
    scenario_text = _text(directory / "scenario.toml")
    name = str(frame.attrs.get("name") or directory.name)
    anchor = f"study-{number}"
    head = doc.get("study", {}) if isinstance(doc.get("study"), dict) else {}
    parts: list[str] = [f'<section id="{anchor}">', f"<h2>Study {_e(name)}</h2>"]
    description = head.get("description")
    if isinstance(description, str) and description:
        parts.append(f"<p>{_e(description)}</p>")
    parts.append(_provenance(directory, frame, manifest))

    specs = plots_for(frame, _plot_specs(doc, directory))
    ok = succeeded(frame)
    parts.append("<h3>Figures</h3>")
    if ok.empty:
        parts.append('<p class="note">No run succeeded, so there is nothing to plot.</p>')
        specs = []
    elif not specs:
        parts.append('<p class="note">The results have no numeric metric to plot.</p>')
    for i, spec in enumerate(specs, start=1):
        stem = stem_for(spec, i)
        png, svg = plot(frame, spec, plots_dir, stem, where=f"{directory / 'study.toml'} [[plot]] {i}: plot.")
        data = png.read_bytes()
        width, height = _png_size(data)
        uri = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
        parts.append(
            f'<figure><img src="{uri}" width="{width}" height="{height}" alt="{_e(describe(spec))}">'
            f"<figcaption>{_e(title_of(spec))}; files {_e(PLOTS)}/{_e(png.name)} and {_e(PLOTS)}/{_e(svg.name)} "
            f"in the results directory.</figcaption></figure>"
        )

    parts.append("<h3>Results</h3>")
    if csv_from is not None:
        csv = _write_csv(frame, directory)
        href = os.path.relpath(csv, csv_from)
        parts.append(f'<p>Every run of the study, one row each: <a href="{_e(Path(href).as_posix())}">{_e(href)}</a>'
                     "</p>")
    parts.append(_results_table(frame, [s.y for s in specs]))
    failed = frame[frame["error"].notna()] if "error" in frame.columns else frame.iloc[0:0]
    parts.append(f"<h3>Failed runs ({len(failed)})</h3>")
    parts.append(_failures_table(frame, failed) if len(failed) else '<p class="note">No run failed.</p>')
    parts.append("<h3>Study file</h3>")
    parts.append(_pre(study_text, "study.toml"))
    parts.append("<h3>Scenario file</h3>")
    parts.append(_pre(scenario_text, "scenario.toml"))
    parts.append("</section>")
    return {"name": name, "id": anchor, "html": "\n".join(parts)}


class _StagedPlots:
    """The figures of a report, drawn into a new directory beside each
    ``DIR/plots/`` and moved there only once every figure of every study is
    drawn: a report that fails (a ``[[plot]]`` naming a missing column, a
    title matplotlib cannot draw, Ctrl-C) leaves ``plots/`` as it was, not
    half-written (issue 62, item 11). The staging directory is in the same
    parent as ``plots/``'s target, so moving it is a ``rename(2)``; it is
    removed on every exit.

    ``plots/`` is not replaced as a whole when it exists: it may hold
    ``irqlab plot``'s own figures (that command's default ``--out``), so
    each of the report's files is written whole into it, replacing its
    namesake only."""

    def __init__(self) -> None:
        self._staged: list[tuple[Path, Path]] = []  # (staging directory, plots/ target)

    def __enter__(self) -> "_StagedPlots":
        return self

    def __exit__(self, *exc: Any) -> None:
        import shutil

        for staging, _ in self._staged:
            shutil.rmtree(staging, ignore_errors=True)

    def directory_for(self, directory: Path) -> Path:
        import tempfile

        from irqlab.files import write_target

        target = write_target(directory / PLOTS)
        staging = Path(tempfile.mkdtemp(prefix=f".{PLOTS}.", suffix=".tmp", dir=target.parent))
        self._staged.append((staging, target))
        return staging

    def commit(self) -> None:
        import shutil

        from irqlab.files import what_is, write_target, write_whole

        # Checked before anything moves: a figure replaces only a regular file
        # (through a symbolic link, as irqlab.files.write_whole writes).
        for staging, target in self._staged:
            if not os.path.lexists(target):
                continue
            if not os.path.isdir(target):
                raise ResultsError(f"{target} exists and is not a directory (it is {what_is(os.lstat(target).st_mode)}); "
                                   "move it away so that the report can write its figures there")
            for name in sorted(os.listdir(staging)):
                there = write_target(target / name)
                if os.path.lexists(there) and not os.path.isfile(there):
                    raise ResultsError(f"{target / name} is {what_is(os.lstat(there).st_mode)}, not a regular file, "
                                       "and irqlab replaces only regular files; move it away")
        umask = os.umask(0)
        os.umask(umask)
        for staging, target in self._staged:
            names = sorted(os.listdir(staging))
            if not names:
                continue  # nothing drawn (no run succeeded): no plots/ made
            if not os.path.lexists(target):
                # mkdtemp makes a private directory; plots/ is for sharing, like the files in it.
                os.chmod(staging, 0o777 & ~umask)
                try:
                    os.rename(staging, target)  # the whole directory at once
                    continue
                except OSError:
                    target.mkdir(exist_ok=True)  # made meanwhile: the files go in one by one, as below
            # plots/ may hold irqlab plot's own figures: each of the report's files replaces its namesake only.
            for name in names:
                write_whole(target / name, lambda tmp, src=staging / name: shutil.copyfile(src, tmp))


#: A study's runs as CSV, beside its results store, for a paper's report.
RESULTS_CSV = "results.csv"


def _write_csv(frame: "pandas.DataFrame", directory: Path) -> Path:
    from irqlab.files import write_whole

    path = directory / RESULTS_CSV
    write_whole(path, lambda tmp: frame.to_csv(tmp, index=False))
    return path


def _manifest(directory: Path) -> dict[str, Any]:
    try:
        data = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ResultsError(f"{directory / 'manifest.json'} cannot be read: {e}") from None
    return data if isinstance(data, dict) else {}


def _text(path: Path) -> Optional[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ResultsError(f"{path} cannot be read: {e.strerror or e}") from None


def _study_file(directory: Path) -> tuple[Optional[str], dict[str, Any]]:
    path = directory / "study.toml"
    text = _text(path)
    if text is None:
        return None, {}
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ResultsError(f"{path} is not valid TOML ({e}); the results directory is damaged") from None


def _plot_specs(doc: dict[str, Any], directory: Path) -> list[PlotSpec]:
    """The ``[[plot]]`` tables of a results directory's study file."""
    from irqlab.study.spec import _plot

    tables = doc.get("plot", [])
    path = directory / "study.toml"
    if not isinstance(tables, list):
        raise ResultsError(f"{path}: plots are [[plot]] tables")
    try:
        return [_plot(t, path) for t in tables]
    except StudyError as e:
        raise ResultsError(str(e)) from None


# -- pieces ---------------------------------------------------------------------


def _provenance(directory: Path, frame: "pandas.DataFrame", manifest: dict[str, Any]) -> str:
    rows: list[tuple[str, str]] = [("results directory", str(directory))]
    versions = _distinct(frame, "irqlab_version")
    commits = _distinct(frame, "git_commit")
    rows.append(("irqlab version" + ("s" if len(versions) > 1 else ""), ", ".join(versions) or "unknown"))
    rows.append(("git commit" + ("s" if len(commits) > 1 else ""), ", ".join(commits) or "unknown"))
    if manifest.get("created"):
        rows.append(("sweep created", str(manifest["created"])))
    planned = manifest.get("points")
    stored = len(frame)
    failed = int(frame["error"].notna().sum()) if "error" in frame.columns else 0
    runs = f"{stored} run{'s' if stored != 1 else ''} stored"
    if isinstance(planned, int) and planned != stored:
        runs += f" of {planned} planned ({planned - stored} not run yet)"
    runs += f", {failed} failed"
    rows.append(("runs", runs))
    axes = list(frame.attrs.get("axes", []))
    rows.append(("axes", ", ".join(axes) or "none"))
    if "profile" in frame.columns:
        rows.append(("profiles", ", ".join(_distinct(frame, "profile")) or "the scenario's own"))
    if "seed" in frame.columns and "replicate" in frame.columns and stored:
        rows.append(("seeds per point", str(int(frame["replicate"].max()) + 1)))
    if "wall_time_s" in frame.columns:
        total = float(frame["wall_time_s"].sum(skipna=True))
        rows.append(("run time, summed over runs", f"{total:.2f} s"))
    if manifest.get("fingerprint"):
        rows.append(("study fingerprint", str(manifest["fingerprint"])))
    return "<dl>" + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in rows) + "</dl>"


def _distinct(frame: "pandas.DataFrame", column: str) -> list[str]:
    if column not in frame.columns:
        return []
    return [str(v) for v in dict.fromkeys(frame[column].dropna().tolist())]


def _results_table(frame: "pandas.DataFrame", plotted: Sequence[str]) -> str:
    import pandas as pd

    from irqlab.results import aggregate, axes_of, succeeded

    ok = succeeded(frame)
    metrics = [m for m in dict.fromkeys(plotted) if m in frame.columns and pd.api.types.is_numeric_dtype(frame[m])]
    if ok.empty or not metrics:
        return '<p class="note">No successful run to aggregate.</p>'
    by = [c for c in ("profile", *axes_of(frame)) if c in frame.columns]
    metrics = [m for m in metrics if m not in by]  # an axis plotted as y is a group, not a metric
    if not metrics:
        return '<p class="note">No metric to aggregate.</p>'
    from irqlab.htmltable import column_format
    from irqlab.labels import label

    agg = aggregate(frame, metrics=metrics, by=by)
    # One format per column, from its means (the interval in the same).
    fmt = {m: column_format(agg[f"{m}.mean"].tolist()) for m in metrics}
    head = "".join(f'<th class="text">{_e(label(c))}</th>' for c in by) + "<th>Seeds</th>"
    head += "".join(f"<th>{_e(label(m))}<br><small>mean ± 95 % CI</small></th>" for m in metrics)
    lines = [f'<div class="table-box"><table><thead><tr>{head}</tr></thead><tbody>']
    for _, row in agg.iterrows():
        cells = "".join(f'<td class="text">{_e(_value(row[c]))}</td>' for c in by) + f"<td>{int(row['n'])}</td>"
        for m in metrics:
            mean, low, high = row[f"{m}.mean"], row[f"{m}.ci_low"], row[f"{m}.ci_high"]
            text = fmt[m](mean) if _finite(mean) else "–"
            if _finite(mean) and _finite(high) and _finite(low) and _raised(mean, low, high):
                # Cut at 0 by irqlab.results.aggregate: not symmetric, so both ends.
                text += f" ({fmt[m](low)} to {fmt[m](high)})"
            elif _finite(mean) and _finite(high):
                text += f" ± {fmt[m](high - mean)}"
            cells += f"<td>{_e(text)}</td>"
        lines.append(f"<tr>{cells}</tr>")
    lines.append("</tbody></table></div>")
    if agg.attrs.get("ci_low_raised"):
        lines.append('<p class="note">An interval shown as (low to high) would reach below 0, which the metric cannot '
                     "be; it starts at 0 instead. Few seeds make a wide interval: more seeds narrow it.</p>")
    return "\n".join(lines)


def _raised(mean: Any, low: Any, high: Any) -> bool:
    """Whether the interval's lower bound was raised (to 0): it is nearer the
    mean than the upper bound."""
    mean, low, high = float(mean), float(low), float(high)
    return (mean - low) < (high - mean) * (1 - 1e-9)


def _failures_table(frame: "pandas.DataFrame", failed: "pandas.DataFrame") -> str:
    from irqlab.results import axes_of

    columns = [c for c in ("point", "replicate", "profile", *axes_of(frame), "seed") if c in frame.columns]
    head = "".join(f'<th class="text">{_e(c)}</th>' for c in columns) + '<th class="text">error</th>'
    lines = [f'<div class="table-box"><table class="failed-runs"><thead><tr>{head}</tr></thead><tbody>']
    for _, row in failed.iterrows():
        cells = "".join(f'<td class="text">{_e(_value(row[c]))}</td>' for c in columns)
        cells += f'<td class="text failed">{_e(_value(row["error"]))}</td>'
        lines.append(f"<tr>{cells}</tr>")
    lines.append("</tbody></table></div>")
    return "\n".join(lines)


def _pre(text: Optional[str], name: str) -> str:
    if text is None:
        return f'<p class="note">The results directory has no {_e(name)}.</p>'
    return f"<pre>{_e(text)}</pre>"


def _png_size(data: bytes) -> tuple[int, int]:
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise RuntimeError("the figure is not a PNG file")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _finite(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _value(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        value = value.item()
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


__all__ = ["PLOTS", "REPORT", "write_report"]
