"""How the ``irqlab linux`` commands and the tuners that drive the kernel
name a knob, a value and a NAPI id: the words of their lines, shared by
:mod:`irqlab.linux.cli`, :mod:`irqlab.linux.exec_cmd` and
:mod:`irqlab.linux.tune_cmd` (which the first dispatches to, so they
cannot import it back)."""

from __future__ import annotations

from typing import Any, Optional

from irqlab import _core

#: Knobs whose values are nanoseconds.
NS_KNOBS = ("gro_flush_timeout", "irq_suspend_timeout")

#: Each knob's kernel or ethtool name -> the scenario field a profile sets it
#: through, which is how ``irqlab profiles`` lists it (irqlab-linux's
#: change.rs, tested there against the core's Profile::overrides).
PROFILE_NAMES = dict(_core.LINUX_KNOB_FIELDS)

def napi_id(text: Optional[str]) -> Optional[int]:
    if text is None:
        return None
    from irqlab.cli_common import UsageError

    try:
        value = int(text.strip(), 10)
    except ValueError:
        value = 0
    if not 0 < value < 2**32:
        raise UsageError(f"--napi must be a NAPI id, a positive integer (got {text!r})")
    return value


def hand_change_line(device: str, h: dict[str, Any]) -> str:
    """One knob found changed since irqlab set it: ``restore: veth0 NAPI 12
    napi.gro_flush_timeout was 20000 ns when applied, is now 5000 ns (changed
    since apply); restoring 0 ns``."""
    knob = h["knob"]
    head = (f"restore: {device} {target(h)} {knob_name(knob)} was {value_text(knob, h['applied'])} when applied, "
            f"is now {value_text(knob, h['now'])} (changed since apply)")
    if h["now"] == h["restoring"]:
        return f"{head}; it is already at its value from before the apply, {value_text(knob, h['restoring'])}"
    return f"{head}; restoring {value_text(knob, h['restoring'])}"


def knob_name(knob: str) -> str:
    """``knob`` (a kernel or ethtool name) as ``irqlab profiles`` names it."""
    return PROFILE_NAMES.get(knob, knob)


def target(change: dict[str, Any]) -> str:
    return f"NAPI {change['napi_id']}" if change["part"] == "napi" else "coalescing"


def value_text(knob: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"  # as `irqlab profiles` prints a switch
    if knob in NS_KNOBS:
        return f"{value} ns"
    return str(value)
