"""``irqlab results`` on a terminal: the results aggregated over seeds, or a
``--sql`` query's rows, as an aligned table a reader can read (issue 62,
item 17) rather than pandas' six decimals.

The numbers are formatted as the HTML report formats them
(:func:`irqlab.htmltable.column_format`): one format per column, chosen
from its values, with thousands separators and the decimals three
significant digits need; a metric's interval in its mean's format. The
aggregated table's headers are the fields' names with their units
(:func:`irqlab.labels.label`); a query's columns keep the names the query
gave them. ``--format csv`` and ``--format json`` keep every digit: this
module is for the text format only.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from irqlab.htmltable import MISSING, column_format
from irqlab.labels import label

if TYPE_CHECKING:
    import pandas

#: Columns that name a run rather than measure it: their whole numbers are
#: shown as they are, without thousands separators.
IDENTIFIERS = ("point", "replicate", "seed")

#: A missing value on a terminal that cannot show :data:`MISSING`.
ASCII_MISSING = "-"


def aggregate_table(agg: "pandas.DataFrame", by: Sequence[str], metrics: Sequence[str], *,
                    ascii_only: bool = False) -> str:
    """The frame :func:`irqlab.results.aggregate` returns, grouped ``by``:
    a column per group key, the seeds, then per metric its mean and its 95 %
    interval (``low to high``; none with one seed)."""
    header = [label(c) for c in by] + ["Seeds"]
    right = set(range(len(by), len(by) + 1))
    columns: list[list[str]] = []
    for c in by:
        columns.append(_cells(agg[c].tolist()))
    columns.append([str(int(n)) for n in agg["n"].tolist()])
    for m in metrics:
        means, lows, highs = (agg[f"{m}.{k}"].tolist() for k in ("mean", "ci_low", "ci_high"))
        fmt = column_format(means)
        header += [label(m), "95 % CI"]
        right |= {len(header) - 2, len(header) - 1}
        columns.append([fmt(v) for v in means])
        columns.append([f"{fmt(lo)} to {fmt(hi)}" if _finite(lo) and _finite(hi) else "" for lo, hi in zip(lows, highs)])
    for i, c in enumerate(by):
        if _numeric(agg[c].tolist()):
            right.add(i)
    return _aligned(header, columns, right, ascii_only)


def raised_note(agg: "pandas.DataFrame", metrics: Sequence[str]) -> Optional[str]:
    """A sentence saying which intervals start at 0 because their metric
    cannot be negative (:func:`irqlab.results.aggregate`), or ``None``."""
    raised = agg.attrs.get("ci_low_raised") or {}
    named = [f"{label(m)} ({raised[m]} of {len(agg)} rows)" for m in metrics if raised.get(m)]
    if not named:
        return None
    fewest = int(agg["n"].min()) if len(agg) else 0
    return (f"Note: the interval's lower bound was below 0 and is shown as 0, the least the metric can be, for "
            f"{', '.join(named)}; a 95 % interval over {fewest} seed{'s' if fewest != 1 else ''} is wide, and "
            f"more seeds (--seeds) narrow it.")


def frame_table(frame: "pandas.DataFrame", *, ascii_only: bool = False) -> str:
    """Any frame (a ``--sql`` query's rows) with its own column names; each
    numeric column in one format of its own."""
    header = [str(c) for c in frame.columns]
    columns = [_cells(frame[c].tolist(), plain=str(c) in IDENTIFIERS) for c in frame.columns]
    right = {i for i, c in enumerate(frame.columns) if _numeric(frame[c].tolist())}
    if len(frame) == 0:
        return "  ".join(header) + "\n(no rows)"
    return _aligned(header, columns, right, ascii_only)


# -- helpers ----------------------------------------------------------------------


def _cells(values: list[Any], plain: bool = False) -> list[str]:
    if _numeric(values):
        values = [v.item() if hasattr(v, "item") and getattr(v, "ndim", 0) == 0 else v for v in values]
        if all(isinstance(v, int) for v in values if not _missing(v)):
            # Exactly: a seed is a 64-bit integer, which a float would round.
            return [MISSING if _missing(v) else (str(v) if plain else f"{v:,}") for v in values]
        fmt: Callable[[Any], str] = column_format(values)
        return [fmt(v) for v in values]
    return [MISSING if _missing(v) else _text(v) for v in values]


def _text(value: Any) -> str:
    if hasattr(value, "tolist") and getattr(value, "ndim", 0) > 0:  # a list column: numpy arrays
        value = value.tolist()
    return str(value)


def _numeric(values: list[Any]) -> bool:
    present = [v for v in values if not _missing(v)]
    return bool(present) and all(_is_number(v) for v in present)


def _is_number(value: Any) -> bool:
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        value = value.item()
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _missing(value: Any) -> bool:
    import pandas as pd

    if value is None or value is pd.NA or value is pd.NaT:
        return True
    try:
        return isinstance(value, float) and math.isnan(value) or (hasattr(value, "item") and math.isnan(value.item()))
    except (TypeError, ValueError):
        return False


def _finite(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _aligned(header: list[str], columns: list[list[str]], right: set[int], ascii_only: bool) -> str:
    rows = [header] + [list(r) for r in zip(*columns)] if columns and columns[0] else [header]
    if ascii_only:
        rows = [[_ascii(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for r in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _ascii(text: str) -> str:
    return text.replace(MISSING, ASCII_MISSING).replace("µ", "u").encode("ascii", "replace").decode("ascii")
