"""Per-NAPI and coalescing knobs of a real network device (Linux 6.13+).

A thin layer over the native module (crates/irqlab-linux through
``irqlab._core``): every function returns the report as a dict and raises
:class:`LinuxError` (a ``RuntimeError``) with a one-sentence message when the
kernel, the device or the caller's privileges say no.

- :func:`show` reads every NAPI of a device (id, irq, queues, pid,
  ``defer_hard_irqs``, ``gro_flush_timeout``, ``irq_suspend_timeout``,
  ``threaded``) and its coalescing (``None``: not supported by this device).
- :func:`plan` says what a profile would change; :func:`apply` does it (or,
  with ``dry_run``, only says), saving the previous settings first.
- :func:`set_knob` sets one knob to one value the same way (what ``irqlab
  linux tune`` does at each step).
- :func:`restore` puts back the settings from before the first apply; a
  saved NAPI that is gone (the device was reconfigured) has its settings put
  on the NAPI now serving its queues (``replaced``); settings with nowhere to
  go raise :class:`LinuxError` and stay saved.

Knobs carry the kernel's and ethtool's names (the knob table's
``linux_name``, :mod:`irqlab.knobs`); ``gro_flush_timeout`` and
``irq_suspend_timeout`` are in nanoseconds, ``rx-usecs`` in microseconds.
Changing anything needs root (CAP_NET_ADMIN); saved states live in
``/run/irqlab`` (``$IRQLAB_STATE_DIR`` overrides it). Only the device named
is ever touched.
"""

from __future__ import annotations

import json
import os
from typing import Any, Optional

from irqlab import _core
from irqlab._core import LinuxError
from irqlab.knobs import knobs as knobs_table

__all__ = ["LinuxError", "show", "plan", "apply", "set_knob", "tunable", "restore", "forget", "has_saved_state",
           "may_change_settings"]

#: The largest NAPI id the kernel can have (a u32).
_NAPI_ID_MAX = 2**32 - 1

#: ``CAP_NET_ADMIN`` (include/uapi/linux/capability.h).
_CAP_NET_ADMIN = 12


def show(dev: str) -> dict[str, Any]:
    """Every NAPI of ``dev`` and its coalescing."""
    return json.loads(_core.linux_show(dev))


def plan(dev: str, profile: str, napi: Optional[int] = None) -> dict[str, Any]:
    """What applying ``profile`` to ``dev`` (every NAPI, or only ``napi``)
    would change: ``changes``, ``unchanged`` and ``skipped`` (with reasons)."""
    return json.loads(_core.linux_plan(dev, profile, _napi_id(napi)))


def apply(dev: str, profile: str, napi: Optional[int] = None, dry_run: bool = False) -> dict[str, Any]:
    """Apply ``profile`` to ``dev``; return what ``changed`` (or, with
    ``dry_run``, would change; nothing is touched then), what was
    ``skipped`` and why, and the ``state_file`` the previous settings were
    saved in (an earlier apply's state is kept: ``state_kept``)."""
    return json.loads(_core.linux_apply(dev, profile, _napi_id(napi), bool(dry_run)))


def tunable() -> dict[str, tuple[int, int]]:
    """The knobs :func:`set_knob` takes (per-NAPI ones first), each with the
    range the kernel accepts: the knob table's ``kernel_range`` of every
    number ``irqlab linux`` sets."""
    table = {k["linux_name"]: k for k in knobs_table() if k["linux_name"]}
    return {name: tuple(table[name]["kernel_range"]) for name, _ in _core.TUNABLE_KNOBS}


def set_knob(dev: str, knob: str, value: int, napi: Optional[int] = None, dry_run: bool = False) -> dict[str, Any]:
    """Set one knob of ``dev`` (one of :func:`tunable`: ``defer_hard_irqs``,
    ``gro_flush_timeout``, ``irq_suspend_timeout`` on every NAPI or
    ``napi``; ``rx-usecs``, ``rx-frames``) to ``value``, saving the device's
    settings first as :func:`apply` does; the same report. Refuses, in one
    sentence, a knob the device or kernel does not have and a value beyond
    the kernel's."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"value must be a whole number from 0 (got {value!r})")
    return json.loads(_core.linux_set_knob(dev, knob, value, _napi_id(napi), bool(dry_run)))


def restore(dev: str) -> dict[str, Any]:
    """Put back the settings ``dev`` had before the first apply; return what
    was ``restored``, ``unchanged`` and ``skipped``, which saved NAPIs were
    ``replaced`` by which NAPI now, and which knobs were found
    ``changed_since_apply`` (by hand: another value than irqlab last left
    them at; restored all the same). Raises :class:`LinuxError`, keeping the
    saved state, if some saved settings had nowhere to go."""
    return json.loads(_core.linux_restore(dev))


def has_saved_state(dev: str) -> bool:
    """Whether a saved state of ``dev`` (in this network namespace) waits for
    :func:`restore`, in ``$IRQLAB_STATE_DIR`` or ``/run/irqlab``. Raises
    :class:`LinuxError` for a file under its name that is not its own (another
    namespace's or device's, or an older irqlab's whose namespace cannot be
    told: ``crates/irqlab-linux/src/state.rs``), which :func:`apply` refuses
    too."""
    return _core.linux_state_file(dev) is not None


def forget(dev: str) -> dict[str, Any]:
    """Delete the state saved for ``dev`` in this network namespace, whoever's
    it is, without restoring anything; return the files ``forgotten``.
    Raises :class:`LinuxError` when there is none."""
    return json.loads(_core.linux_forget(dev))


def may_change_settings() -> bool:
    """Whether this process may change NAPI and coalescing settings: the
    kernel's ``napi-set`` and ``coalesce-set`` are ``admin-perm`` operations
    (CAP_NET_ADMIN). The same test as the native side's
    ``privilege::require_net_admin`` (the ``CapEff`` mask of
    /proc/self/status; an effective uid of 0 where /proc cannot say), for
    commands that must refuse before they start anything."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split(":", 1)[1].strip(), 16) >> _CAP_NET_ADMIN & 1)
    except (OSError, ValueError):
        pass
    return os.geteuid() == 0


def _napi_id(napi: Optional[int]) -> Optional[int]:
    if napi is None:
        return None
    if isinstance(napi, bool) or not isinstance(napi, int) or not 0 < napi <= _NAPI_ID_MAX:
        raise ValueError(f"napi must be a NAPI id, a positive integer below 2**32 (got {napi!r})")
    return napi
