"""A paper's claims as the reproductions print and report them: the text
block, the JSON row and the HTML section (the IAPS and vIC reproductions;
the thesis's and the ITR paper's add a setup or a diagnosis to theirs)."""

from __future__ import annotations

import html
import textwrap

from irqlab.reproduce.thesis import ShapeCheck


def claims_text(title: str, checks: list[ShapeCheck], width: int = 110) -> str:
    """``title: N of M hold``, then each claim with its numbers, wrapped."""
    held = sum(c.holds for c in checks)
    lines = [f"{title}: {held} of {len(checks)} hold"]
    for c in checks:
        lines.append(f"  [{'ok' if c.holds else 'NO'}] {c.id}: \"{c.claim}\"")
        lines += textwrap.wrap(c.detail, width, initial_indent="         ", subsequent_indent="         ")
    return "\n".join(lines)


def claim_row(c: ShapeCheck) -> dict[str, object]:
    """A claim for JSON and CSV."""
    return {"id": c.id, "claim": c.claim, "holds": c.holds, "detail": c.detail}


def claims_section(title: str, checks: list[ShapeCheck], intro: str, note: str) -> tuple[str, str]:
    """The report's first section: how many hold, the setup, the fit, and
    each claim marked."""
    held = sum(c.holds for c in checks)
    items = "".join(
        f'<li class="{"ok" if c.holds else "no"}"><b>{html.escape(c.id)} {"holds" if c.holds else "does not hold"}</b>: '
        f"&ldquo;{html.escape(c.claim)}&rdquo;<br><span>{html.escape(c.detail)}</span></li>"
        for c in checks
    )
    return (
        title,
        f"<p>{held} of {len(checks)} hold. {html.escape(intro)}</p>"
        f'<p class="note">{html.escape(note)}</p><ul class="claims">{items}</ul>',
    )


def frame_html(rows: list[dict[str, object]], float_format: str = "{:,.1f}") -> str:
    """Rows as an HTML table (NaN as a dash)."""
    import pandas as pd

    return pd.DataFrame(rows).to_html(index=False, escape=True, float_format=float_format.format, na_rep="—", border=0)
