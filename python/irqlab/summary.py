"""The run summary as Python sees it: the core's JSON, read-only, with
attribute and item access (``s.latency_us.p99 == s["latency_us"]["p99"] ==
s["latency_us.p99"]``). Field names are the core's (``irqlab_core::Summary``)
and are stable: plots, reports and ``--json`` consumers read them.

When no request completed in the measured time, every ``latency_us`` field
is ``None`` (JSON ``null``), never a made-up 0, and ``warnings`` says why.

``dim`` (what net DIM did: ``dim.rx.time_share_pct["4"]``, ``s["dim.rx.changes"]``)
is ``None`` when no completion queue runs DIM, and ``dim.rx`` / ``dim.tx``
when that direction does not; :meth:`Summary.flat` then has the one null
field rather than null members, so no member needs :data:`NULLABLE_NUMBERS`.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas


class Record(Mapping[str, Any]):
    """A read-only mapping with attribute access; nested mappings are Records."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_data", dict(data))

    def __getitem__(self, key: str) -> Any:
        data = self._data
        if key in data:
            return _wrap(data[key])
        if isinstance(key, str) and "." in key:
            value: Any = self
            for part in key.split("."):
                if not isinstance(value, Record):
                    raise KeyError(key)
                value = value[part]
            return value
        raise KeyError(key)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._data))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._data!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self._data,))

    def to_dict(self) -> dict[str, Any]:
        """A deep copy as plain dicts."""
        return copy.deepcopy(self._data)


#: Fields that are numbers or ``None`` (no request completed):
#: :meth:`Summary.to_pandas` gives NaN for ``None`` so that the columns stay numeric.
NULLABLE_NUMBERS = ("latency_us.mean", "latency_us.p50", "latency_us.p95", "latency_us.p99", "latency_us.p999")


class Summary(Record):
    """One run's summary (``irqlab_core::Summary``)."""

    __slots__ = ()

    @property
    def warnings(self) -> list[str]:
        """One sentence per thing about this result that is not what it seems
        (e.g. no request completed, so latency is not reported); ``[]`` if none."""
        return [str(w) for w in self._data.get("warnings") or ()]

    @classmethod
    def from_json(cls, text: str) -> Summary:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("a summary must be a JSON object")
        return cls(data)

    def to_json(self, indent: int | None = None) -> str:
        """The summary as JSON text (the core's field names and order)."""
        return json.dumps(self._data, indent=indent)

    def flat(self) -> dict[str, Any]:
        """The summary with nested fields flattened to dotted names (``latency_us.p99``)."""
        return flatten(self._data)

    def to_pandas(self) -> pandas.DataFrame:
        """A one-row DataFrame with flattened columns (``latency_us.p99``,
        ``cpu_pct.user``, …); a latency that is ``None`` is NaN."""
        import pandas

        row = self.flat()
        for name in NULLABLE_NUMBERS:
            if name in row and row[name] is None:
                row[name] = math.nan
        return pandas.DataFrame([row])


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings to one level, keys joined with ``.``; other values kept."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, prefix=f"{name}."))
        else:
            out[name] = value
    return out


def _wrap(value: Any) -> Any:
    if isinstance(value, Mapping) and not isinstance(value, Record):
        return Record(value)
    return value
