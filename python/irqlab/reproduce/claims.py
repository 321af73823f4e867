"""A paper's claims as the reproductions print and report them: the text
block, the JSON row and the HTML section, each with the diagnosis of a
failing claim when the paper gives one (``why``, by claim id); the
thesis's add a setup to theirs (:mod:`irqlab.reproduce.report`)."""

from __future__ import annotations

import html
import textwrap
from typing import Optional

from irqlab.reproduce.claim import CONSTRUCTION, FIT, PREDICTION, STATUSES, ShapeCheck, tally


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
    """The report's claims section: how many hold, the setup, the notes
    (the fit first), and each claim marked (with why it fails), grouped by
    what its verdict tells: the predictions, then the fits, then those that
    hold by construction (:data:`~irqlab.reproduce.claim.STATUSES`), each
    group in the paper's order."""
    why = why or {}

    def item(c: ShapeCheck) -> str:
        return (
            f'<li class="{"ok" if c.holds else "no"}"><b>{html.escape(c.id)} '
            f'{"holds" if c.holds else "does not hold"}</b>{html.escape(_mark(c))}: '
            f"&ldquo;{html.escape(c.claim)}&rdquo;<br><span>{html.escape(c.detail)}</span>"
            + (f'<br><span class="why"><b>Why:</b> {html.escape(why[c.id])}</span>' if c.id in why else "")
            + "</li>"
        )

    items = grouped_claims_html(checks, item)
    paragraphs = "".join(f'<p class="note">{html.escape(note)}</p>' for note in notes)
    return (title, f"<p>{html.escape(tally(checks))}. {html.escape(intro)}</p>{paragraphs}{items}")


#: The claims section's group headings, by status.
GROUP_HEADINGS = {
    PREDICTION: "Predictions (numbers the model was not fitted to)",
    FIT: "Fits (claims a constant of the model was chosen to meet)",
    CONSTRUCTION: "By construction (claims that follow from how the model is written)",
    "": "Not marked",
}


def grouped_claims_html(checks: list[ShapeCheck], item) -> str:
    """``checks`` as lists of ``item(check)`` (an ``<li>``), one per status
    under its heading (:data:`GROUP_HEADINGS`) with how many hold; one list
    when all share a status. A check that repeats another setup's numbers
    (``repeats``) is listed but not counted."""
    groups = [(s, [c for c in checks if c.status == s]) for s in (*STATUSES, "")]
    groups = [(s, g) for s, g in groups if g]
    if len(groups) <= 1:
        return f'<ul class="claims">{"".join(item(c) for c in checks)}</ul>'
    out = []
    for s, g in groups:
        counted = [c for c in g if not c.repeats]
        out.append(f"<h3>{html.escape(GROUP_HEADINGS[s])}: {sum(c.holds for c in counted)} of {len(counted)} hold</h3>"
                   f'<ul class="claims">{"".join(item(c) for c in g)}</ul>')
    return "".join(out)


def frame_html(rows: list[dict[str, object]], float_format: str = "") -> str:
    """Rows as an HTML table: headers with units, one number format per
    column, NaN as a dash; the paper's values beside the simulated ones in
    the paper's layout where the rows hold them (``paper_X`` beside ``X``:
    :func:`irqlab.htmltable.paired_table_html`); ``float_format``
    (``"{:,.1f}"``) instead for every numeric column."""
    from irqlab.htmltable import paired_table_html

    if not float_format or not rows:
        return paired_table_html(rows)
    numeric = [k for k in rows[0] if isinstance(rows[0][k], float)]
    fmt = {k: (lambda v: "\u2014" if v is None or v != v else float_format.format(v)) for k in numeric}
    return paired_table_html(rows, formats=fmt)


def _mark(c: ShapeCheck) -> str:
    """`` [status]``: whether the verdict is a prediction, a fit or holds by
    construction (:data:`~irqlab.reproduce.claim.STATUSES`); empty if unknown."""
    return f" [{c.status}]" if c.status else ""
