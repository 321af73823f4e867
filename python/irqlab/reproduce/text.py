"""The reproductions' text tables: one cell."""

from __future__ import annotations

import math


def cell(x: object, fmt: str) -> str:
    """``x`` in ``fmt``, or a dash as wide as the format's field."""
    if isinstance(x, float) and math.isnan(x):
        return "-".rjust(len(fmt.format(0.0)))
    return fmt.format(x)
