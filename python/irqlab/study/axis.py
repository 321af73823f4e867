"""A grid axis: one scenario field and the values a sweep gives it.

Three ways to write the values, on the command line (``--grid FIELD=VALUES``)
and in a study file (``[axes]``):

- a list, ``4,8,16`` (each item read as a TOML value, a bare word as a
  string: ``nic.irq_routing=aligned,packed``);
- a linear range, ``start:stop:step``, stop included when the steps land on
  it (``100000:500000:50000`` is 9 values);
- (the ``policy`` axis) a list of ``FILE.py:CLASS`` and ``none``;
- a geometric range, ``log:start:stop:n``, ``n`` values from start to stop
  included, evenly spaced in the logarithm; integers when start and stop are
  written as integers (rounded; a range whose rounding repeats a value is
  refused).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from typing import Any, Union

Value = Union[int, float, str, bool]

#: The axis whose values are user policies, ``FILE.py:CLASS`` or ``none``
#: (``irqlab.study.spec.POLICY_AXIS``), not a scenario field's values.
POLICY_FIELD = "policy"

#: A range longer than this is a typo (a step missing a few zeros), not a study.
MAX_AXIS_VALUES = 100_000


class AxisError(ValueError):
    """A bad axis; the message is one sentence naming the field."""


@dataclass(frozen=True)
class Axis:
    """A scenario field (``load.qps``) and its values, in sweep order."""

    field: str
    values: tuple[Value, ...]

    def __post_init__(self) -> None:
        if not self.values:
            raise AxisError(f"axis {self.field} has no values")
        if len(set(map(_identity, self.values))) != len(self.values):
            raise AxisError(f"axis {self.field} repeats a value ({_repeated(self.values)!r})")

    def to_toml(self) -> Any:
        """The axis's values as a TOML list (what a study file's ``[axes]`` holds)."""
        return list(self.values)


def _identity(v: Value) -> tuple[str, Value]:
    # 1 and 1.0 and True are different knob values (TOML types differ).
    return (type(v).__name__, v)


def _repeated(values: tuple[Value, ...]) -> Value:
    seen: set[tuple[str, Value]] = set()
    for v in values:
        if _identity(v) in seen:
            return v
        seen.add(_identity(v))
    raise AssertionError("no repeated value")


def parse_grid_flag(text: str, flag: str = "--grid") -> Axis:
    """``FIELD=VALUES`` as given to ``--grid``."""
    field, sep, values = text.partition("=")
    field = field.strip()
    if not sep or not field:
        raise AxisError(f"{flag} must be FIELD=VALUES, e.g. load.qps=100000:500000:50000 (got {text!r})")
    return Axis(field, parse_values(field, values.strip()))


def parse_values(field: str, text: str) -> tuple[Value, ...]:
    """The values of one axis from their text form (see the module)."""
    if not text:
        raise AxisError(f"axis {field} has no values; give a list (4,8), start:stop:step or log:start:stop:n")
    if field == POLICY_FIELD:
        # FILE.py:CLASS holds a colon and a path: never a range or TOML.
        return tuple(item.strip().strip("'\"") for item in _split_list(field, text))
    if text.startswith("log:"):
        return _log_range(field, text)
    if ":" in text and "," not in text and not text.startswith(("[", "{", '"', "'")):
        return _linear_range(field, text)
    return tuple(_item(field, item.strip()) for item in _split_list(field, text))


def from_toml(field: str, value: Any) -> Axis:
    """An axis of a study file: a TOML list of values, or a range string."""
    if isinstance(value, list):
        if not value:
            raise AxisError(f"axis {field} in [axes] is an empty list")
        for v in value:
            if not isinstance(v, (int, float, str, bool)):
                raise AxisError(
                    f"axis {field} in [axes] holds a {type(v).__name__}; values must be numbers, strings or booleans"
                )
            if isinstance(v, float) and not math.isfinite(v):
                raise AxisError(f"axis {field} in [axes] holds {v!r}; values must be finite numbers")
        return Axis(field, tuple(value))
    if isinstance(value, str) and field == POLICY_FIELD:
        return Axis(field, (value,))
    if isinstance(value, str):
        if value.startswith("log:") or (":" in value and "," not in value):
            return Axis(field, parse_values(field, value))
        raise AxisError(
            f"axis {field} in [axes] is the string {value!r}; give a list ([4, 8]), "
            "'start:stop:step' or 'log:start:stop:n'"
        )
    raise AxisError(f"axis {field} in [axes] must be a list or a range string, not a {type(value).__name__}")


# -- parsing ------------------------------------------------------------------


def _split_list(field: str, text: str) -> list[str]:
    items = text.split(",")
    if any(not item.strip() for item in items):
        raise AxisError(f"axis {field}: the values {text!r} hold an empty item; separate values with single commas")
    return items


def _item(field: str, text: str) -> Value:
    """One list item: a TOML scalar, or a bare word as a string (like ``--set``)."""
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        if text.replace("-", "").replace("_", "").replace(".", "").isalnum():
            return text
        raise AxisError(f"axis {field} value {text!r} is neither a number, a boolean, a quoted string nor a bare word") from None
    if not isinstance(value, (int, float, str, bool)):
        raise AxisError(f"axis {field} value {text!r} is a {type(value).__name__}; values must be numbers, strings or booleans")
    if isinstance(value, float) and not math.isfinite(value):
        raise AxisError(f"axis {field} value {text!r} is not a finite number")
    return value


def _number(field: str, text: str, part: str) -> Union[int, float]:
    try:
        integer = int(text, 10)
    except ValueError:
        pass
    else:
        # TOML integers are 64-bit; a longer one would overflow the range arithmetic.
        if not -(2**63) <= integer < 2**63:
            raise AxisError(f"axis {field}: the {part} of a range must fit a 64-bit integer (got {text!r})")
        return integer
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise AxisError(f"axis {field}: the {part} of a range must be a finite number (got {text!r})")
    return value


def _linear_range(field: str, text: str) -> tuple[Value, ...]:
    parts = text.split(":")
    if len(parts) != 3:
        raise AxisError(f"axis {field}: a range is start:stop:step (got {text!r})")
    start, stop, step = (_number(field, p.strip(), name) for p, name in zip(parts, ("start", "stop", "step")))
    if step == 0:
        raise AxisError(f"axis {field}: the step of {text!r} is 0; give a non-zero step")
    if (stop - start) * step < 0:
        raise AxisError(
            f"axis {field}: the range {text!r} is empty (step {step} goes away from stop); "
            "swap start and stop or change the step's sign"
        )
    count_f = (stop - start) / step
    # Float steps: land on stop despite rounding (0:1:0.1 is 11 values).
    # A tiny float step makes count_f infinite: refused before floor() overflows.
    count = math.floor(count_f + 1e-9) + 1 if count_f < MAX_AXIS_VALUES else MAX_AXIS_VALUES + 1
    if count > MAX_AXIS_VALUES:
        raise AxisError(
            f"axis {field}: the range {text!r} has more than {MAX_AXIS_VALUES} values; at most {MAX_AXIS_VALUES} are accepted"
        )
    if all(isinstance(x, int) for x in (start, stop, step)):
        return tuple(int(start + i * step) for i in range(count))
    # Computed from the start each time (no accumulated error), rounded to
    # 12 significant digits so that 0.1 * 3 is 0.3.
    return tuple(float(f"{start + i * step:.12g}") for i in range(count))


def _log_range(field: str, text: str) -> tuple[Value, ...]:
    parts = text.split(":")
    if len(parts) != 4:
        raise AxisError(f"axis {field}: a geometric range is log:start:stop:n (got {text!r})")
    start = _number(field, parts[1].strip(), "start")
    stop = _number(field, parts[2].strip(), "stop")
    try:
        n = int(parts[3].strip(), 10)
    except ValueError:
        n = 0
    if n < 2:
        raise AxisError(f"axis {field}: n in {text!r} must be an integer of at least 2")
    if n > MAX_AXIS_VALUES:
        raise AxisError(f"axis {field}: {text!r} asks for {n} values; at most {MAX_AXIS_VALUES} are accepted")
    if start <= 0 or stop <= 0:
        raise AxisError(f"axis {field}: a geometric range needs start and stop above 0 (got {text!r})")
    if start == stop:
        raise AxisError(f"axis {field}: the geometric range {text!r} has start equal to stop")
    ratio = math.log(stop / start) / (n - 1)
    values = [start * math.exp(ratio * i) for i in range(n)]
    values[-1] = stop
    if isinstance(start, int) and isinstance(stop, int):
        ints = tuple(int(round(v)) for v in values)
        if len(set(ints)) != len(ints):
            raise AxisError(
                f"axis {field}: {text!r} rounds to repeated integers; ask for fewer values or a wider range"
            )
        return ints
    return tuple(float(f"{v:.12g}") for v in values)
