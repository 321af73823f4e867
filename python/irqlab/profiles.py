"""The interrupt-handling profiles and the knobs each one sets.

Nothing here is hard-coded: the names come from the core, and a profile's
knobs are found by resolving a default scenario under each profile and
keeping the fields that some profile sets differently from another or from
the defaults.
"""

from __future__ import annotations

import json
from typing import Any

from irqlab import _core
from irqlab.summary import flatten

#: Profile names, in the core's order.
PROFILES: tuple[str, ...] = tuple(_core.profiles())

# A scenario with every field at its default.
_DEFAULT_SCENARIO = 'name = "defaults"\n'

# Sections a profile is not about, even though resolving records the profile.
_NOT_KNOBS = ("name", "description", "run.")


def profile_knobs() -> dict[str, dict[str, Any]]:
    """``{profile: {knob: value}}`` for every profile, over the same knobs.

    Knobs are dotted scenario fields (``napi.irq_suspend_timeout``) in the
    scenario's units (the kernel's: ``*_timeout`` in ns, ``*usecs`` in µs).
    """
    base = _knobs(None)
    per_profile = {name: _knobs(name) for name in PROFILES}
    keys = [
        key
        for key, default in base.items()
        if any(values.get(key) != default for values in per_profile.values())
    ]
    return {name: {key: values.get(key) for key in keys} for name, values in per_profile.items()}


def _knobs(profile: str | None) -> dict[str, Any]:
    resolved = flatten(json.loads(_core.resolve(_DEFAULT_SCENARIO, profile, [])))
    return {k: v for k, v in resolved.items() if not k.startswith(_NOT_KNOBS)}
