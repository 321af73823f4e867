"""Figures of a sweep's results: ``y`` over ``x``, the mean over seeds with
its confidence band, a line (or a bar) per ``hue`` value, a panel per ``col``
value.

Written as PNG and SVG with matplotlib's Agg renderer, without pyplot (no
global figure state, safe beside other threads). The same data gives the same
bytes: no dates in the metadata, a fixed SVG hash salt and ids, text drawn as
paths.

matplotlib, numpy and pandas load when a figure is drawn, not when this
module is imported.
"""

from __future__ import annotations

import difflib
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

from irqlab import plotstyle
from irqlab.plottext import literal, title_problem
from irqlab.files import write_whole
from irqlab.labels import label as field_label
from irqlab.results import ResultsError, aggregate, axes_of, succeeded
from irqlab.study.spec import PlotSpec

if TYPE_CHECKING:
    import pandas

#: The metrics a study without ``[[plot]]`` tables is drawn with.
DEFAULT_METRICS = ("throughput_qps", "latency_us.p99", "cpu_pct.busy")

#: Panels per row of a figure with a ``col``; more values wrap.
MAX_PANELS_PER_ROW = 4

#: A numeric x axis with at most this many values has a tick at each.
MAX_VALUE_TICKS = 8

#: Size of one panel, in inches, and the resolution of the PNG.
PANEL_SIZE = (5.0, 3.6)
DPI = 100

#: Settings that make the files depend on the data only, in the style all
#: irqlab figures share (:mod:`irqlab.plotstyle`).
_RC = plotstyle.RC
_PNG_METADATA = {"Software": None}
_SVG_METADATA = {"Date": None, "Creator": "irqlab", "Format": None, "Type": None}


def plot(frame: "pandas.DataFrame", spec: PlotSpec, out_dir: Path, stem: str, *, where: str = "plot.") -> list[Path]:
    """Draw ``spec`` from the results ``frame`` into ``out_dir/stem.png`` and
    ``out_dir/stem.svg`` (``out_dir`` is created); return both paths.

    Failed runs are left out. A numeric ``x`` gives lines with markers at the
    points and, when a point has two seeds or more, a shaded confidence band
    (95 %, Student t over seeds); any other ``x`` (``profile``, a text axis)
    gives grouped bars with the interval as error bars. ``where`` prefixes
    the field in messages (``plot.`` for a study file, ``--`` for flags).
    Raises :class:`ResultsError` (one sentence) for a column the results do
    not have or a ``y`` that is not numeric.
    """
    check_spec(frame, spec, where=where)
    if succeeded(frame).empty:
        raise ResultsError("no run in the results succeeded, so there is nothing to plot")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    import matplotlib

    png, svg = out_dir / f"{stem}.png", out_dir / f"{stem}.svg"
    with matplotlib.rc_context(_RC):
        fig = _figure(frame, spec)
        # Whole files only: a reader (a report being written, a browser) sees the old figure or the new one.
        # Cropped to what is drawn, so the legend below the panels is kept.
        tight = {"bbox_inches": "tight", "pad_inches": 0.15}
        write_whole(png, lambda tmp: fig.savefig(tmp, format="png", dpi=DPI, metadata=_PNG_METADATA, **tight))
        write_whole(svg, lambda tmp: fig.savefig(tmp, format="svg", metadata=_SVG_METADATA, **tight))
    return [png, svg]


def check_spec(frame: "pandas.DataFrame", spec: PlotSpec, *, where: str = "plot.") -> None:
    """Raise :class:`ResultsError` if ``spec`` names a column ``frame`` does
    not have, a ``y`` that is not numeric, or a title matplotlib cannot draw."""
    import pandas as pd

    problem = title_problem(spec.title)
    if problem is not None:
        raise ResultsError(f"{where}title {problem}")

    for key in ("x", "y", "hue", "col"):
        name = getattr(spec, key)
        if name is not None and name not in frame.columns:
            raise ResultsError(f"{where}{key} {name!r} is not a column of the results; {_suggest(frame, name)}")
    y = frame[spec.y]
    ok = y[frame["error"].isna()] if "error" in frame.columns else y
    if not pd.api.types.is_numeric_dtype(y) and not (len(ok) == 0 or ok.isna().all()):
        raise ResultsError(f"{where}y {spec.y!r} is not a numeric column; {_suggest(frame, spec.y, numeric=True)}")
    for key in ("x", "hue", "col"):
        if getattr(spec, key) == spec.y:
            # The rows are grouped by it: its mean per group is itself.
            raise ResultsError(f"{where}y {spec.y!r} is also the plot's {key}; give a summary field such as "
                               "latency_us.p99 or throughput_qps")


def default_plots(frame: "pandas.DataFrame") -> list[PlotSpec]:
    """The figures of a study that has no ``[[plot]]`` tables: throughput,
    p99 latency and CPU utilisation (those the results have) over the first
    numeric axis, a line per profile and a panel per value of the next axis;
    without a numeric axis, over the first axis or the profiles, as bars."""
    import pandas as pd

    axes = axes_of(frame)
    numeric = [a for a in axes if pd.api.types.is_numeric_dtype(frame[a])]
    x = numeric[0] if numeric else (axes[0] if axes else "profile")
    others = [a for a in axes if a != x]
    col = others[0] if others else None
    hue: Optional[str] = None if x == "profile" or "profile" not in frame.columns else "profile"
    if x not in frame.columns:
        return []
    return [
        PlotSpec(x=x, y=y, hue=hue, col=col)
        for y in DEFAULT_METRICS
        if y in frame.columns and pd.api.types.is_numeric_dtype(frame[y])
    ]


def stem_for(spec: PlotSpec, index: Optional[int] = None) -> str:
    """A file name (without suffix) for ``spec``: ``latency_us.p99-vs-load.qps``,
    numbered ``02-…`` when ``index`` is given."""
    name = f"{spec.y}-vs-{spec.x}" + (f"-by-{spec.col}" if spec.col else "")
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "plot"
    return f"{index:02d}-{name}" if index is not None else name


def title_of(spec: PlotSpec) -> str:
    return spec.title or f"{spec.y} vs {spec.x}"


def describe(spec: PlotSpec) -> str:
    """A sentence saying what the figure shows (alt text)."""
    parts = [f"{title_of(spec)}: {spec.y} against {spec.x}"]
    if spec.hue is not None and spec.hue != spec.x:
        parts.append(f"one series per {spec.hue}")
    if spec.col is not None:
        parts.append(f"one panel per {spec.col}")
    return ", ".join(parts) + "; mean over seeds with its 95 % confidence interval."


# -- drawing ---------------------------------------------------------------------


def _figure(frame: "pandas.DataFrame", spec: PlotSpec) -> Any:
    import pandas as pd
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator

    hue = spec.hue if spec.hue not in (None, spec.x) else None
    col = spec.col if spec.col not in (spec.x, hue) else None
    by = list(dict.fromkeys(k for k in (col, hue, spec.x) if k is not None))
    data = frame
    if frame[spec.y].dtype == object:  # every successful value is null
        data = frame.assign(**{spec.y: pd.to_numeric(frame[spec.y], errors="coerce")})
    agg = aggregate(data, metrics=[spec.y], by=by)
    # Panels, series and ticks for what ran: failed runs are not drawn.
    ok = succeeded(frame)
    panels = _ordered(ok, col) if col is not None else [None]
    series = _ordered(ok, hue) if hue is not None else [None]
    categorical = not pd.api.types.is_numeric_dtype(frame[spec.x])
    categories = _ordered(ok, spec.x) if categorical else []
    xs = [] if categorical else [float(v) for v in _ordered(ok, spec.x) if v is not None]
    ncols = min(len(panels), MAX_PANELS_PER_ROW)
    nrows = math.ceil(len(panels) / ncols)
    fig = Figure(figsize=(PANEL_SIZE[0] * ncols, PANEL_SIZE[1] * nrows + 0.4), dpi=DPI)
    FigureCanvasAgg(fig)
    grid = fig.subplots(nrows, ncols, sharey=True, squeeze=False)
    colours = [f"C{i % 10}" for i in range(len(series))]
    for i, panel in enumerate(panels):
        ax = grid[i // ncols][i % ncols]
        rows = agg if col is None else agg[_eq(agg[col], panel)]
        if categorical:
            _bars(ax, rows, spec, hue, series, colours, categories)
        else:
            _lines(ax, rows, spec, hue, series, colours)
        if col is not None:
            ax.set_title(f"{literal(col)} = {_label(panel)}", fontsize=10)
        ax.set_xlabel(literal(field_label(spec.x)))
        if i % ncols == 0:
            ax.set_ylabel(literal(field_label(spec.y)))
        if spec.logx and not categorical:
            plotstyle.log_axis(ax, "x")
        elif not categorical:
            # A few values: a tick at each; more: round numbers.
            ax.xaxis.set_major_locator(FixedLocator(xs) if len(xs) <= MAX_VALUE_TICKS else MaxNLocator(6))
            ax.xaxis.set_major_formatter(FuncFormatter(_tick))
        if spec.logy:
            plotstyle.log_axis(ax, "y")
        else:
            ax.yaxis.set_major_formatter(FuncFormatter(_tick))
    for j in range(len(panels), nrows * ncols):
        grid[j // ncols][j % ncols].set_visible(False)
    # A user's title may be math (checked by check_spec); the default is drawn as written.
    fig.suptitle(spec.title if spec.title is not None else literal(title_of(spec)))
    fig.tight_layout()
    if hue is not None:
        # Below the panels, never over the data.
        plotstyle.legend_below(fig, [ax for row in grid for ax in row], title=literal(field_label(hue)))
    return fig


def _lines(ax: Any, rows: Any, spec: PlotSpec, hue: Optional[str], series: list[Any], colours: list[str]) -> None:
    import numpy as np

    for value, colour in zip(series, colours):
        part = rows if hue is None else rows[_eq(rows[hue], value)]
        part = part.sort_values(spec.x)
        if part.empty:
            continue
        xs = part[spec.x].to_numpy(dtype=float)
        mean = part[f"{spec.y}.mean"].to_numpy(dtype=float)
        low = part[f"{spec.y}.ci_low"].to_numpy(dtype=float)
        high = part[f"{spec.y}.ci_high"].to_numpy(dtype=float)
        label = _label(value) if hue is not None else None
        ax.plot(xs, mean, marker="o", markersize=4, color=colour, label=label)
        band = np.isfinite(low) & np.isfinite(high) & (part["n"].to_numpy() >= 2)
        if band.any():
            ax.fill_between(xs, low, high, where=band, color=colour, alpha=0.2, linewidth=0, interpolate=False)


def _bars(
    ax: Any,
    rows: Any,
    spec: PlotSpec,
    hue: Optional[str],
    series: list[Any],
    colours: list[str],
    categories: list[Any],
) -> None:
    import numpy as np

    positions = np.arange(len(categories), dtype=float)
    width = 0.8 / max(len(series), 1)
    for k, (value, colour) in enumerate(zip(series, colours)):
        part = rows if hue is None else rows[_eq(rows[hue], value)]
        means, errors = [], [[], []]
        for c in categories:
            hit = part[_eq(part[spec.x], c)]
            if hit.empty:
                means.append(np.nan)
                errors[0].append(0.0)
                errors[1].append(0.0)
                continue
            m = float(hit[f"{spec.y}.mean"].iloc[0])
            lo, hi = float(hit[f"{spec.y}.ci_low"].iloc[0]), float(hit[f"{spec.y}.ci_high"].iloc[0])
            means.append(m)
            errors[0].append(m - lo if math.isfinite(lo) else 0.0)
            errors[1].append(hi - m if math.isfinite(hi) else 0.0)
        offset = (k - (len(series) - 1) / 2) * width
        # One colour per bar when the bars are the hue (x = profile, no other hue).
        colour_arg: Any = colour if hue is not None else [f"C{i % 10}" for i in range(len(categories))]
        has_error = any(e > 0 for e in errors[0] + errors[1])
        ax.bar(
            positions + offset,
            means,
            width=width,
            color=colour_arg,
            label=_label(value) if hue is not None else None,
            yerr=np.array(errors) if has_error else None,
            capsize=3 if has_error else 0,
        )
    ax.set_xticks(positions, [_label(c) for c in categories], rotation=15 if len(categories) > 3 else 0, fontsize=8)
    ax.grid(False, axis="x")


# -- helpers ----------------------------------------------------------------------


def _ordered(frame: "pandas.DataFrame", column: str) -> list[Any]:
    """The distinct values of ``column``: numbers ascending, anything else in
    the order the results hold them (the study's profile order)."""
    import pandas as pd

    values = list(dict.fromkeys(_key(v) for v in frame[column].tolist()))
    if pd.api.types.is_numeric_dtype(frame[column]):
        values.sort(key=lambda v: (v is None, v if v is not None else 0))
    return values


def _key(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def _eq(column: Any, value: Any) -> Any:
    return column.isna() if value is None else column == value


def _label(value: Any) -> str:
    """A value from the results as drawn text (never read as math)."""
    if value is None:
        return "(none)"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return literal(str(value))


def _tick(value: float, _pos: Any = None) -> str:
    """Tick labels that stay short: 250k, 1.5M, 0.3."""
    if abs(value) >= 1e6:
        return f"{value / 1e6:g}M"
    if abs(value) >= 1e4:
        return f"{value / 1e3:g}k"
    return f"{value:g}"


def _suggest(frame: "pandas.DataFrame", name: str, numeric: bool = False) -> str:
    import pandas as pd

    columns = [str(c) for c in frame.columns]
    if numeric:
        columns = [c for c in columns if pd.api.types.is_numeric_dtype(frame[c])]
    # "qps" for "load.qps", "p99" for "latency_us.p99": the field without its section.
    close = [c for c in columns if c.rsplit(".", 1)[-1] == name] or difflib.get_close_matches(name, columns, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}? " if close else ""
    common = [c for c in ("profile", *axes_of(frame), *DEFAULT_METRICS, "latency_us.p95", "irqs_per_s") if c in columns]
    few = list(dict.fromkeys(common + columns))[:8]
    more = f" and {len(columns) - len(few)} more" if len(columns) > len(few) else ""
    return f"{hint}columns include {', '.join(few)}{more}"


def plots_for(frame: "pandas.DataFrame", specs: Sequence[PlotSpec]) -> list[PlotSpec]:
    """``specs``, or :func:`default_plots` when there are none."""
    return list(specs) if specs else default_plots(frame)
