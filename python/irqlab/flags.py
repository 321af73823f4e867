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


def override_key(pair: str) -> str:
    """The field a ``"key=value"`` override sets (``load.qps``)."""
    return pair.partition("=")[0].strip()


def overlaps(a: str, b: str) -> bool:
    """Whether fields ``a`` and ``b`` set the same value: the same field, or
    one a table holding the other (``app.service`` and ``app.service.cycles``)."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def check_overrides(pairs: list[str], flag: str, error: type[Exception], others: Optional[dict[str, str]] = None) -> None:
    """Refuse two overrides of one field, and an override of a field that
    ``others`` (field → the flag that sets it) sets too: one would silently
    win, and the command line would say two things."""
    seen: dict[str, str] = {}
    for pair in pairs:
        key = override_key(pair)
        if not key:
            continue  # no key: the scenario layer names the malformed override
        for field, by in (others or {}).items():
            if overlaps(key, field):
                raise error(f"{flag} {key} and {by} both set {field}; give it once")
        for earlier in seen:
            if overlaps(key, earlier):
                raise error(f"{flag} {key} is given twice ({seen[earlier]!r} and {pair!r}); give it once")
        seen[key] = pair
