"""Text a figure draws: a title given by a user is checked before anything
runs, and text that comes from the results is drawn as written.

matplotlib reads a string with an even number of unescaped ``$`` as math
(mathtext, ``matplotlib.cbook.is_math_text``) and raises ``ValueError``
only when the figure is drawn. A study's ``[[plot]]`` title would then be
accepted by ``irqlab sweep`` and fail in ``irqlab report`` after the whole
sweep (issue 62, item 11); :func:`title_problem` parses it the way the
figure will, up front. Values from the results (profile names, a text
axis's values) are not meant as math: :func:`literal` escapes their ``$``.

matplotlib loads only for a text that holds a ``$``.
"""

from __future__ import annotations

import re
from typing import Optional


def title_problem(text: Optional[str]) -> Optional[str]:
    """Why matplotlib cannot draw ``text`` (the rest of a sentence that
    starts with the field's name), or ``None`` when it can."""
    if text is None or "$" not in text:
        return None
    from matplotlib import cbook

    if not cbook.is_math_text(text):
        return None  # an odd number of unescaped $: drawn as plain text
    from matplotlib.font_manager import FontProperties
    from matplotlib.mathtext import MathTextParser

    try:
        # The parser the Agg and SVG renderers use for mathtext.
        MathTextParser("path").parse(text, dpi=72, prop=FontProperties(family="DejaVu Sans"))
    except ValueError as e:
        # pyparsing's message: the text, a caret, then what it expected.
        lines = [line.strip() for line in str(e).splitlines() if line.strip()]
        reason = lines[-1] if lines else "it does not parse"
        reason = re.sub(r"^\w+Exception: |,? \(line:\d+, col:\d+\)", "", reason)
        reason = " ".join(reason.split())
        return (f"{text!r} is matplotlib math text (between $ signs) that does not parse ({reason}); "
                r"write a literal $ as \$, or fix the math")
    return None


def literal(text: str) -> str:
    """``text`` drawn as written: its ``$`` escaped, so that matplotlib does
    not read it as math (it draws ``\\$`` as ``$``)."""
    return text.replace("$", "\\$")
