"""The one plot style of every irqlab figure (the studies' and the five
reproductions'): axes a reader can read values off, legends beside the data
rather than on it, the paper's points drawn apart from the simulation's
lines, and files that depend on the data only.

- :data:`RC`: matplotlib settings for every figure (fonts, grid, and the
  SVG settings that make the same data give the same bytes);
- :func:`log_axis`: a log axis with plain-number labels at 1, 2 and 5 of
  every decade (``60``, ``100``, ``200``, ``500``), not only ``10²``;
- :func:`legend_outside` (one axes) and :func:`legend_below` (a figure of
  several panels): the legend outside every plotting area;
- :func:`data_range`: a y range that shows the data (from 0 only when 0 is
  near the data, so 40-52 Gbit/s is not squashed against the top);
- :data:`PAPER_POINTS` and :func:`paper_label`: how the paper's own values
  are drawn (open markers, no line) and named;
- :data:`SERIES`: markers and dashes that tell lines apart where they
  overlap, and :func:`dodge`, small x offsets for points at the same x;
- :func:`save`: the PNG, cropped to its contents, written whole, with a
  warning for anything :func:`readability_problems` finds.

matplotlib loads when a figure is drawn, not when this module is imported.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

#: Settings for every figure: one font, a light grid, and SVG output that
#: depends on the data only (no random ids, text drawn as paths).
RC = {
    "svg.hashsalt": "irqlab",
    "svg.id": "irqlab",
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.title_fontsize": 8,
    "figure.titlesize": 11,
    "axes.grid": True,
    "grid.alpha": 0.3,
}

#: The resolution of every PNG.
DPI = 110

#: PNG metadata without the writer's version: the same data, the same bytes.
PNG_METADATA = {"Software": None}

#: The paper's values: open markers without a line, so they stand apart
#: from the simulation's lines in any colour.
PAPER_POINTS = {"linestyle": "none", "markerfacecolor": "none", "markersize": 8, "markeredgewidth": 1.6}

#: Marker and dash per series, in order: lines that lie on top of each
#: other stay distinguishable by their markers and dashes.
SERIES = (
    {"marker": "o", "linestyle": "-"},
    {"marker": "s", "linestyle": "--"},
    {"marker": "^", "linestyle": "-."},
    {"marker": "D", "linestyle": ":"},
    {"marker": "v", "linestyle": "-"},
    {"marker": "P", "linestyle": "--"},
    {"marker": "X", "linestyle": "-."},
    {"marker": "*", "linestyle": ":"},
)

#: Labelled major ticks a log axis must show (three values to read between).
MIN_LOG_TICKS = 3


def series_style(i: int) -> dict[str, str]:
    """The marker and dash of the ``i``-th series (cycling)."""
    return dict(SERIES[i % len(SERIES)])


def paper_label(what: str) -> str:
    """A legend entry for the paper's own values: ``what (paper)``."""
    return f"{what} (paper)"


def plain(value: float) -> str:
    """A tick label as a plain number a reader can use: ``60``, ``0.5``,
    ``200``, ``1.5k``, ``2M`` (no powers of ten)."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else ""
    a = abs(value)
    if a >= 1e9:
        return f"{value / 1e9:g}G"
    if a >= 1e6:
        return f"{value / 1e6:g}M"
    if a >= 1e4:
        return f"{value / 1e3:g}k"
    if a >= 1:
        return f"{value:g}"
    return f"{value:.3g}"


def log_axis(ax: Any, which: str = "y", base: float = 10) -> None:
    """Make ``ax``'s ``which`` axis logarithmic with plain-number labels a
    reader can read values between: at 1, 2 and 5 of every decade, or at
    every whole multiple when the data (drawn before this call) span less
    than about a decade and a half, or at 1 only beyond four decades; base
    2 labels every power of two."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis = ax.yaxis if which == "y" else ax.xaxis
    (ax.set_yscale if which == "y" else ax.set_xscale)("log", base=base)
    lo, hi = sorted(ax.get_ylim() if which == "y" else ax.get_xlim())
    decades = math.log10(hi / lo) if lo > 0 and hi > lo else 1.0
    if base != 10:
        subs: tuple[float, ...] = (1.0,)
    elif decades < 1.5:
        subs = tuple(float(k) for k in range(1, 10))
    elif decades <= 4:
        subs = (1.0, 2.0, 5.0)
    else:
        subs = (1.0,)
    axis.set_major_locator(LogLocator(base=base, subs=subs, numticks=30))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: plain(v)))
    axis.set_minor_formatter(NullFormatter())


def plain_ticks(ax: Any, which: str = "y") -> None:
    """Plain-number labels (``250k``, ``1.5M``) on a linear axis."""
    from matplotlib.ticker import FuncFormatter

    (ax.yaxis if which == "y" else ax.xaxis).set_major_formatter(FuncFormatter(lambda v, _pos: plain(v)))


def data_range(values: Iterable[float], *, pad: float = 0.08, zero_within: float = 0.35) -> tuple[float, float]:
    """A (low, high) y range that shows ``values`` (NaN left out): from 0
    when the lowest value is within ``zero_within`` of the highest's
    distance to 0 (0 is then part of the picture), else from just below the
    lowest, each padded by ``pad`` of the span."""
    xs = [v for v in values if v is not None and math.isfinite(v)]
    if not xs:
        return (0.0, 1.0)
    lo, hi = min(xs), max(xs)
    if lo >= 0 and lo <= zero_within * hi:
        return (0.0, hi * (1 + pad) if hi > 0 else 1.0)
    span = hi - lo or abs(hi) or 1.0
    return (lo - pad * span, hi + pad * span)


def dodge(xs: Sequence[float], k: int, n: int, *, log: bool = False, width: float = 0.012) -> list[float]:
    """``xs`` shifted for the ``k``-th of ``n`` series that share x values,
    by ``width`` of a unit (of a factor on a log axis) per series, centred:
    points at the same x sit side by side instead of on top of each other."""
    shift = (k - (n - 1) / 2) * width
    return [x * (1 + shift) if log else x + shift for x in xs]


def legend_outside(ax: Any, *, title: Optional[str] = None, handles: Optional[list] = None,
                   labels: Optional[list[str]] = None) -> Any:
    """``ax``'s legend to the right of its plotting area, top-aligned."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    return ax.legend(handles, labels, title=title, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                     borderaxespad=0.0, frameon=False)


def legend_below(fig: Any, axes: Sequence[Any], *, title: Optional[str] = None, ncol: Optional[int] = None) -> Any:
    """One legend for all of ``axes`` (each label once), centred below the
    figure's panels."""
    seen: dict[str, Any] = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if not lab.startswith("_"):
                seen.setdefault(lab, h)
    if not seen:
        return None
    cols = ncol or min(len(seen), 4)
    return fig.legend(list(seen.values()), list(seen), title=title, loc="upper center", ncol=cols,
                      bbox_to_anchor=(0.5, 0.0), frameon=False)


def readability_problems(fig: Any) -> list[str]:
    """What keeps a reader from reading ``fig`` (empty when nothing): an axis
    without a label (a categorical x excepted), a log axis with fewer than
    :data:`MIN_LOG_TICKS` labelled ticks, a legend over a plotting area."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    problems: list[str] = []
    axes = [ax for ax in fig.get_axes() if ax.get_visible() and ax.has_data()]
    for n, ax in enumerate(axes, start=1):
        name = repr(ax.get_title()) if ax.get_title() else f"panel {n}"
        twin_x = any(o is not ax and o.bbox.bounds == ax.bbox.bounds and o.get_xlabel() for o in axes)
        numeric_x = all(_is_number(t.get_text()) for t in ax.get_xticklabels() if t.get_text())
        if not ax.get_xlabel() and numeric_x and not twin_x:
            problems.append(f"{name} has no x label")
        if not ax.get_ylabel():
            problems.append(f"{name} has no y label")
        for which, axis, lim in (("x", ax.xaxis, ax.get_xlim()), ("y", ax.yaxis, ax.get_ylim())):
            if axis.get_scale() != "log":
                continue
            lo, hi = sorted(lim)
            shown = [t for t, v in zip(axis.get_ticklabels(), axis.get_ticklocs())
                     if t.get_text() and lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)]
            if len(shown) < MIN_LOG_TICKS:
                problems.append(f"{name}'s log {which} axis has {len(shown)} labelled tick(s), fewer than {MIN_LOG_TICKS}")
    areas = [ax.get_window_extent(renderer) for ax in axes]
    legends = [ax.get_legend() for ax in fig.get_axes()] + list(fig.legends)
    for legend in legends:
        if legend is None or not legend.get_visible():
            continue
        box = legend.get_window_extent(renderer)
        for ax, area in zip(axes, areas):
            if _overlap(box, area) > 2.0:
                title = repr(ax.get_title()) if ax.get_title() else "a panel"
                problems.append(f"a legend covers {title}'s plotting area")
                break
    return problems


def _is_number(text: str) -> bool:
    try:
        float(text.replace("\u2212", "-").rstrip("kMG%") or "x")
        return True
    except ValueError:
        return False


def _overlap(a: Any, b: Any) -> float:
    """The overlap of two display boxes, in pixels of width (0 if apart)."""
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return min(w, h) if w > 0 and h > 0 else 0.0


def save(fig: Any, path: Path, *, warn: bool = True) -> Path:
    """Write ``fig`` to ``path`` as PNG, cropped to what it draws (so a
    legend outside the axes is kept), whole (a reader never sees half a
    file), and close it. Says what :func:`readability_problems` finds, as
    one warning per figure, unless ``warn`` is false."""
    from irqlab.files import write_whole

    if warn:
        problems = readability_problems(fig)
        if problems:
            from irqlab.cli_common import say_warning

            say_warning(f"figure {path.name}: " + "; ".join(problems))
    write_whole(path, lambda tmp: fig.savefig(tmp, format="png", dpi=DPI, bbox_inches="tight", pad_inches=0.15,
                                              metadata=PNG_METADATA))
    if getattr(fig.canvas, "manager", None) is not None:  # a pyplot figure: pyplot holds it until closed
        import matplotlib.pyplot as plt

        plt.close(fig)
    return path
