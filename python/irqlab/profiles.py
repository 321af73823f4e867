"""The interrupt-handling profiles and the knobs each one sets.

Nothing is hard-coded: the names come from the core, the knobs are the
scenario fields a profile sets (``_core.profile_fields()``, the core's
``Profile::overrides``), and each profile's values are found by resolving a
default scenario under it. A field every profile sets to its default value
(``coalesce.rx-frames``, 128) is listed too: ``irqlab linux apply`` sets it
on a real device, and its messages name it as this table does.
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


def profile_knobs() -> dict[str, dict[str, Any]]:
    """``{profile: {knob: value}}`` for every profile, over the same knobs.

    Knobs are dotted scenario fields (``napi.irq_suspend_timeout``) in the
    scenario's units (the kernel's: ``*_timeout`` in ns, ``*usecs`` in µs),
    in the core's order.
    """
    fields = _core.profile_fields()
    per_profile = {name: _knobs(name) for name in PROFILES}
    return {name: {key: values[key] for key in fields} for name, values in per_profile.items()}


def _knobs(profile: str) -> dict[str, Any]:
    return flatten(json.loads(_core.resolve(_DEFAULT_SCENARIO, profile, [])))
