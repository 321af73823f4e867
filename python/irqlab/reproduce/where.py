"""Which runs a reproduction's warning is about (issue 62, item 17).

A run's warnings (``Summary.warnings``, written by the core's
``model/report.rs``) are sentences about that one run: "no request completed
in the measured 0.5 s", "the guest's virtio-net device has no interrupt
coalescing". Said once at the end of a reproduction of hundreds of runs,
they must name the setup (the study or scenario), the profile and the load
they are about. :func:`located` puts that in front of each sentence, once
per sentence however many runs said it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any, Union

#: A sentence said of this many runs or fewer names each; of more, what
#: they have in common and where they differ.
MOST_NAMED = 3
#: The values of one part (the profiles, the loads) named before "and N more".
MOST_VALUES = 6

#: Where a run is: its parts from the widest to the narrowest (setup,
#: study, profile, load), or one string.
Where = Union[str, tuple[str, ...]]


def located(said: Iterable[tuple[Where, str]]) -> list[str]:
    """``(where, sentence)`` pairs as lines ``<where>: <sentence>``, one
    per sentence in the order first said: a sentence said of a few runs
    names each; of more, how many and, part by part, which setups, studies,
    profiles and loads (a run of numbers as its range)."""
    runs: dict[str, list[tuple[str, ...]]] = {}
    for where, sentence in said:
        parts = (where,) if isinstance(where, str) else tuple(where)
        places = runs.setdefault(sentence, [])
        if parts not in places:
            places.append(parts)
    return [f"{_places(places)}: {sentence}" for sentence, places in runs.items()]


def _places(places: Sequence[tuple[str, ...]]) -> str:
    if len(places) <= MOST_NAMED:
        return "; ".join(", ".join(p for p in parts if p) for parts in places)
    width = max(len(parts) for parts in places)
    columns = [list(dict.fromkeys(parts[i] for parts in places if i < len(parts) and parts[i]))
               for i in range(width)]
    return f"{len(places)} runs: " + "; ".join(_values(c) for c in columns if c)


def _values(values: list[str]) -> str:
    """One part's distinct values: those that differ only in one number as
    its range ("at 50,000 to 450,000 QPS"), the rest listed."""
    ranges: dict[tuple[str, str], list[int]] = {}
    rest = []
    for v in values:
        m = re.fullmatch(r"(.*?)(\d[\d,]*)(\D*)", v)
        if m:
            ranges.setdefault((m.group(1), m.group(3)), []).append(int(m.group(2).replace(",", "")))
        else:
            rest.append(v)
    for (head, tail), numbers in ranges.items():
        if len(numbers) > 2:
            rest.append(f"{head}{min(numbers):,} to {max(numbers):,}{tail}")
        else:
            rest += [f"{head}{n:,}{tail}" for n in numbers]
    if len(rest) > MOST_VALUES:
        rest = rest[:MOST_VALUES - 1] + [f"{len(rest) - MOST_VALUES + 1} more"]
    return rest[0] if len(rest) == 1 else ", ".join(rest[:-1]) + " and " + rest[-1]


def value(v: Any) -> str:
    """An axis value as a run's name shows it: whole numbers with
    thousands separators (``load.qps = 1,000,000``)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, float) and math.isfinite(v) and v == int(v):
        v = int(v)
    return f"{v:,}" if isinstance(v, int) else f"{v:g}"


def point(study: str, row: Any, axes: Sequence[str]) -> tuple[str, ...]:
    """A results frame's row named by its study, its profile and the values
    of the study's axes: ``("open-base", "adaptive-coalescing", "load.qps =
    1,000,000")``."""
    profile = row.get("profile")
    return (study, profile if isinstance(profile, str) else "",
            *(f"{a} = {value(row.get(a))}" for a in axes if a != "profile"))


def of_frame(frame: Any, study: str) -> list[tuple[Where, str]]:
    """The ``(where, sentence)`` pairs of a results frame's runs, in order."""
    from irqlab.results import axes_of

    if "warnings" not in frame:
        return []
    axes = axes_of(frame)
    found = []
    for _, row in frame.iterrows():
        ws = row.get("warnings")
        if ws is None or isinstance(ws, float):
            continue
        where = point(study, row, axes)
        found += [(where, str(w)) for w in ws]
    return found
