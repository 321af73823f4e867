"""The interrupt-handling knobs, as the core declares them once
(``crates/irqlab-knobs`` through ``irqlab._core.knobs()``).

Each knob is a dict: ``path`` (the scenario field, ``napi.irq_suspend_timeout``),
``kernel_name`` (``irq-suspend-timeout``, ``rx-usecs``), ``linux_name`` (what
``irqlab linux`` plans, reports and tunes it by; ``None`` when ``irqlab linux
apply`` does not set it), ``part`` (``napi``, ``coalesce``, ``epoll``,
``itr``), ``unit``, ``kernel_range`` and ``sim_range`` (inclusive ``(min,
max)``; ``sim_why`` says why the simulator takes less, when it does),
``default``, ``doc``, ``source`` (the kernel file the range comes from) and
``profiles`` (each profile's value, for the knobs profiles set).

``irqlab knobs`` (or ``python -m irqlab.knobs --markdown``) prints the README's knob tables.
"""

from __future__ import annotations

import sys
from typing import Any, Optional

from irqlab import _core

__all__ = ["knobs", "by_path", "by_linux_name", "markdown", "readme_tables", "main"]


def knobs() -> list[dict[str, Any]]:
    """Every knob of the table, in its order (the profiles' knobs first)."""
    return _core.knobs()


def by_path(path: str) -> Optional[dict[str, Any]]:
    """The knob of scenario field ``path``, or ``None``."""
    return next((k for k in knobs() if k["path"] == path), None)


def by_linux_name(name: str) -> Optional[dict[str, Any]]:
    """The knob ``irqlab linux`` calls ``name`` (``defer_hard_irqs``, ``rx-usecs``), or ``None``."""
    return next((k for k in knobs() if k["linux_name"] == name), None)


def markdown() -> str:
    """The README's knob tables with the lines that begin and end them."""
    return _core.knobs_markdown()


def readme_tables(readme: str) -> Optional[str]:
    """The generated block of ``readme`` (from its first line to its last,
    as :func:`markdown` gives it), or ``None`` if it has none."""
    begin, end = markdown().splitlines()[0], markdown().splitlines()[-1]
    start = readme.find(begin)
    stop = readme.find(end, start)
    if start < 0 or stop < 0:
        return None
    return readme[start:stop + len(end)] + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args != ["--markdown"]:
        sys.stderr.write("usage: python -m irqlab.knobs --markdown\n")
        return 2
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
