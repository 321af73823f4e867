"""Tables for the HTML reports, one way everywhere: headers a reader knows
(with units, :func:`irqlab.labels.label`), one number format per column
(chosen from the column's values, so ``100000`` and ``721,318.000`` never
share a column), text left and numbers right, and the table in a box of its
own that scrolls sideways when it is wider than the page (the page itself
never does).
"""

from __future__ import annotations

import html
import math
from typing import Any, Callable, Mapping, Optional, Sequence

#: A missing value (NaN, None).
MISSING = "\u2014"


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or value is None:
        return None
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        value = value.item()
    if isinstance(value, (int, float)):
        return float(value)
    return None


def column_format(values: Sequence[Any]) -> Callable[[Any], str]:
    """One format for a column of numbers, from its values: whole numbers
    with thousands separators; else as many decimals as the column's
    largest magnitude needs for three significant digits (at least one,
    at most four), the same for every cell."""
    xs = [x for x in (_number(v) for v in values) if x is not None and math.isfinite(x)]
    if not xs:
        decimals = 0
    elif all(float(x).is_integer() for x in xs):
        decimals = 0
    else:
        top = max(abs(x) for x in xs)
        if top >= 1000:
            decimals = 0
        elif top >= 100:
            decimals = 1
        elif top >= 1:
            decimals = 2
        else:
            decimals = 3 if top >= 0.01 or top == 0 else 4

    def fmt(value: Any) -> str:
        x = _number(value)
        if x is None:
            return MISSING if value is None else str(value)
        if not math.isfinite(x):
            return MISSING
        return f"{x:,.{decimals}f}"

    return fmt


def table_html(
    rows: Sequence[Mapping[str, Any]],
    columns: Optional[Sequence[str]] = None,
    *,
    headers: Optional[Mapping[str, str]] = None,
    formats: Optional[Mapping[str, Callable[[Any], str]]] = None,
    caption: str = "",
    cls: str = "",
) -> str:
    """``rows`` as an HTML table in a sideways-scrolling box. ``columns``
    (default: the first row's keys, then any new key of later rows) in
    order; each headed by ``headers[column]`` or its label
    (:func:`irqlab.labels.label`); each formatted by ``formats[column]`` or
    :func:`column_format` of its values (text as it is, escaped)."""
    from irqlab.labels import label

    if columns is None:
        columns = list(dict.fromkeys(k for row in rows for k in row))
    headers = dict(headers or {})
    formats = dict(formats or {})
    numeric = {}
    for c in columns:
        values = [row.get(c) for row in rows]
        nums = [v for v in values if _number(v) is not None]
        numeric[c] = bool(nums) and all(_number(v) is not None or v is None or _nan(v) for v in values)
        if c not in formats:
            formats[c] = column_format(values) if numeric[c] else _text
    align = {c: "" if numeric[c] else ' class="text"' for c in columns}
    head = "".join(f'<th{align[c]} scope="col">{_e(headers.get(c) or label(c))}</th>' for c in columns)
    body = []
    for row in rows:
        cells = "".join(f"<td{align[c]}>{_e(formats[c](row.get(c)))}</td>" for c in columns)
        body.append(f"<tr>{cells}</tr>")
    cap = f"<caption>{_e(caption)}</caption>" if caption else ""
    attr = f' class="{_e(cls)}"' if cls else ""
    return (f'<div class="table-box"><table{attr}>{cap}<thead><tr>{head}</tr></thead><tbody>'
            + "".join(body) + "</tbody></table></div>")


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _text(value: Any) -> str:
    if value is None or _nan(value):
        return MISSING
    return str(value)


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


#: How a table's column of the paper's value is named: the simulated
#: column's name after one of these (``paper_iops`` beside ``iops``), and
#: what the paired layout calls that source.
PAPER_PREFIXES = {"paper_": "paper", "letter_": "letter", "thesis_": "thesis"}

#: Columns that are shares of 100: their deviation is in points, not relative.
_POINTS = ("user", "system", "softirq", "irq", "steal")


def paper_pairs(rows: Sequence[Mapping[str, Any]]) -> dict[str, tuple[str, str]]:
    """Simulated column → (the paper's column, the source's name), for the
    columns whose paper value is known in at least one row."""
    keys = list(dict.fromkeys(k for row in rows for k in row))
    pairs = {}
    for k in keys:
        for prefix, source in PAPER_PREFIXES.items():
            theirs = prefix + k
            if theirs in keys and any(_finite(row.get(theirs)) for row in rows):
                pairs[k] = (theirs, source)
    return pairs


def _finite(value: Any) -> bool:
    x = _number(value)
    return x is not None and math.isfinite(x)


def deviation(simulated: Any, paper: Any, column: str) -> str:
    """The simulated value's deviation from the paper's: in points for a
    share of 100 (a ``_pct`` column, a CPU share), else relative (%)."""
    s, p = _number(simulated), _number(paper)
    if s is None or p is None or not (math.isfinite(s) and math.isfinite(p)):
        return ""
    if column.endswith("_pct") or column in _POINTS:
        return f"{s - p:+.1f} pt"
    return f"{100.0 * (s / p - 1.0):+.1f} %" if p else ""


def paired_table_html(
    rows: Sequence[Mapping[str, Any]],
    *,
    formats: Optional[Mapping[str, Callable[[Any], str]]] = None,
    headers: Optional[Mapping[str, str]] = None,
) -> str:
    """A table with the paper's values (columns ``paper_X`` beside ``X``,
    :func:`paper_pairs`) in the paper's layout: per row of the table two
    lines, the paper's values, then the simulated ones with their deviation;
    the leading columns before the first compared one name the row.
    Without such pairs, :func:`table_html`."""
    from irqlab.labels import label

    pairs = paper_pairs(rows)
    if not pairs:
        return table_html(rows, headers=headers, formats=formats)
    theirs = {p for p, _ in pairs.values()} | {prefix + k for k in list(pairs) for prefix in PAPER_PREFIXES}
    columns = [k for k in dict.fromkeys(k for row in rows for k in row) if k not in theirs]
    first = next(i for i, k in enumerate(columns) if k in pairs)
    keys, shown = columns[:first], columns[first:]
    headers = dict(headers or {})
    formats = dict(formats or {})
    for c in columns:
        if c not in formats:
            values = [row.get(c) for row in rows] + ([row.get(pairs[c][0]) for row in rows] if c in pairs else [])
            numeric = all(_number(v) is not None or v is None or _nan(v) for v in values)
            formats[c] = column_format(values) if numeric else _text
    source = next(iter(pairs.values()))[1]
    head = "".join(f'<th class="text" scope="col">{_e(headers.get(k) or label(k))}</th>' for k in keys)
    head += '<th class="text" scope="col"></th>' + "".join(
        f'<th scope="col">{_e(headers.get(c) or label(c))}</th>' for c in shown)
    body = []
    for row in rows:
        named = "".join(f'<td class="text" rowspan="2">{_e(formats[k](row.get(k)))}</td>' for k in keys)
        paper = "".join(
            f"<td>{_e(formats[c](row.get(pairs[c][0])))}</td>" if c in pairs else "<td></td>" for c in shown)
        sim = []
        for c in shown:
            dev = deviation(row.get(c), row.get(pairs[c][0]), c) if c in pairs else ""
            sim.append(f"<td>{_e(formats[c](row.get(c)))}" + (f" <small>({_e(dev)})</small>" if dev else "") + "</td>")
        body.append(f'<tr class="paper">{named}<td class="text">{_e(source)}</td>{paper}</tr>')
        body.append(f'<tr class="simulated"><td class="text">irqlab (deviation)</td>{"".join(sim)}</tr>')
    return (f'<div class="table-box"><table class="paper-layout"><thead><tr>{head}</tr></thead><tbody>'
            + "".join(body) + "</tbody></table></div>")
