"""A paper's claims as the reproductions print and report them: the text
block, the JSON row and the HTML section, each with the diagnosis of a
failing claim when the paper gives one (``why``, by claim id); the
thesis's add a setup to theirs (:mod:`irqlab.reproduce.report`)."""

from __future__ import annotations

import html
import textwrap
from typing import Optional

from irqlab.reproduce.claim import ShapeCheck, tally


def claims_text(title: str, checks: list[ShapeCheck], width: int = 110, why: Optional[dict[str, str]] = None) -> str:
    """``title: N of M hold``, then each claim with its numbers (and why
    it fails), wrapped."""
    lines = [f"{title}: {tally(checks)}"]
    for c in checks:
        lines.append(f"  [{'ok' if c.holds else 'NO'}] {c.id}: \"{c.claim}\"{_mark(c)}")
        lines += textwrap.wrap(c.detail, width, initial_indent="         ", subsequent_indent="         ")
        if why and c.id in why:
            lines += textwrap.wrap(f"why: {why[c.id]}", width, initial_indent="         ", subsequent_indent="         ")
    return "\n".join(lines)


def claim_row(c: ShapeCheck, why: Optional[dict[str, str]] = None) -> dict[str, object]:
    """A claim for JSON and CSV; with ``why`` (even empty), its diagnosis
    as a column of its own."""
    row: dict[str, object] = {"id": c.id, "claim": c.claim, "holds": c.holds, "detail": c.detail, "status": c.status}
    if why is not None:
        row["why"] = why.get(c.id, "")
    return row


def claims_section(title: str, checks: list[ShapeCheck], intro: str, notes, why: Optional[dict[str, str]] = None
                   ) -> tuple[str, str]:
    """The report's first section: how many hold, the setup, the notes
    (the fit first), and each claim marked (with why it fails)."""
    why = why or {}
    items = "".join(
        f'<li class="{"ok" if c.holds else "no"}"><b>{html.escape(c.id)} {"holds" if c.holds else "does not hold"}</b>'
        f"{html.escape(_mark(c))}: "
        f"&ldquo;{html.escape(c.claim)}&rdquo;<br><span>{html.escape(c.detail)}</span>"
        + (f'<br><span class="why"><b>Why:</b> {html.escape(why[c.id])}</span>' if c.id in why else "")
        + "</li>"
        for c in checks
    )
    paragraphs = "".join(f'<p class="note">{html.escape(note)}</p>' for note in notes)
    return (
        title,
        f"<p>{html.escape(tally(checks))}. {html.escape(intro)}</p>{paragraphs}<ul class=\"claims\">{items}</ul>",
    )


def frame_html(rows: list[dict[str, object]], float_format: str = "") -> str:
    """Rows as an HTML table (:func:`irqlab.htmltable.table_html`: headers
    with units, one number format per column, NaN as a dash);
    ``float_format`` (``"{:,.1f}"``) instead for every numeric column."""
    from irqlab.htmltable import table_html

    if not float_format or not rows:
        return table_html(rows)
    numeric = [k for k in rows[0] if isinstance(rows[0][k], float)]
    fmt = {k: (lambda v: "\u2014" if v is None or v != v else float_format.format(v)) for k in numeric}
    return table_html(rows, formats=fmt)


def _mark(c: ShapeCheck) -> str:
    """`` [status]``: whether the verdict is a prediction, a fit or holds by
    construction (:data:`~irqlab.reproduce.claim.STATUSES`); empty if unknown."""
    return f" [{c.status}]" if c.status else ""
