"""The interrupt-handling profiles and the knobs each one sets.

Nothing is hard-coded: the names come from the core, and each profile's
knobs and values from the core's knob table (``crates/irqlab-knobs``, through
``irqlab._core.knobs()``; :mod:`irqlab.knobs`), where a profile is a set of
knob values. A field every profile sets to its default value
(``coalesce.rx-frames``, 128) is listed too: ``irqlab linux apply`` sets it
on a real device, and its messages name it as this table does.
"""

from __future__ import annotations

from typing import Any

from irqlab import _core
from irqlab.knobs import knobs

#: Profile names, in the core's order.
PROFILES: tuple[str, ...] = tuple(_core.profiles())


def profile_knobs() -> dict[str, dict[str, Any]]:
    """``{profile: {knob: value}}`` for every profile, over the same knobs.

    Knobs are dotted scenario fields (``napi.irq_suspend_timeout``) in the
    scenario's units (the kernel's: ``*_timeout`` in ns, ``*usecs`` in µs),
    in the knob table's order.
    """
    table = [k for k in knobs() if k["profiles"]]
    return {name: {k["path"]: k["profiles"][name] for k in table} for name in PROFILES}
