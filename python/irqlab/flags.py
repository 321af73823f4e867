"""Reading number flags of the ``irqlab`` commands: one sentence naming the
flag and the accepted range when the text is not one. Each command passes
the exception class its caller turns into exit status 2."""

from __future__ import annotations

import math
from typing import Optional


def seconds(text: Optional[str], flag: str, error: type[Exception], *, most: Optional[float] = None) -> Optional[float]:
    """``text`` as a positive, finite number of seconds (at most ``most``), or
    ``None`` when the flag was not given."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if most is None:
        if not (math.isfinite(value) and value > 0):
            raise error(f"{flag} must be a positive number of seconds (got {text!r})")
    elif not (math.isfinite(value) and 0 < value <= most):
        raise error(f"{flag} must be a number of seconds between 0 (exclusive) and {most:g} (got {text!r})")
    return value


def whole_number(text: Optional[str], flag: str, low: int, high: int, error: type[Exception]) -> Optional[int]:
    """``text`` as a whole number from ``low`` to ``high``, or ``None`` when the flag was not given."""
    if text is None:
        return None
    try:
        value = int(text.strip(), 10)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise error(f"{flag} must be a whole number from {low} to {high} (got {text!r})")
    return value


def number(text: str, flag: str, low: float, high: float, error: type[Exception]) -> float:
    """``text`` as a finite number from ``low`` to ``high``."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and low <= value <= high):
        raise error(f"{flag} must be a number between {low:g} and {high:g} (got {text!r})")
    return value
