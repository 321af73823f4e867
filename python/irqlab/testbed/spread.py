"""The probe's spread, kept in the machine description and carried to the
prediction.

``irqlab-loadgen --probe`` gives each figure as the trimmed mean of many
short samples, with their quartiles (``spread``; crates/irqlab-loadgen/src/
probe/spread.rs says why short samples and why trimmed). The testbed takes several
probes: :func:`combined_spread` joins their spreads into one interval per
figure, and :func:`draws` makes descriptions of the machine with each
figure drawn from its interval, so that the simulated side of a comparison
can be given as the range its descriptions give (:func:`interval`) and an
agreement judged against that range (:func:`agrees`), not against one
number that moves with the probe's noise.
"""

from __future__ import annotations

import random
import statistics
from typing import Any, Iterable

#: Descriptions drawn from the probe's spread for the prediction's
#: interval, beside the median one (each costs one short simulation per
#: profile and load).
DRAWS = 4

#: The draws' seed: the same probe gives the same draws.
SEED = 63


def combined_spread(probes: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per figure over ``probes``' ``spread``: ``median`` (the median of
    the probes' figures), ``lo`` and ``hi`` (the median of their first and
    third quartiles, widened to every probe's figure: the interval covers
    both the samples' middle half and what the probes disagree by),
    ``between`` (the probes' lowest and highest figure) and ``samples``
    (all probes')."""
    out: dict[str, dict[str, Any]] = {}
    names = set().union(*(p.get("spread", {}) for p in probes)) if probes else set()
    for name in sorted(names):
        spreads = [p["spread"][name] for p in probes if name in p.get("spread", {})]
        figures = [float(p[name]) for p in probes if isinstance(p.get(name), (int, float))]
        if not figures:
            figures = [float(s["median"]) for s in spreads]
        med = statistics.median(figures)
        lo = min(statistics.median(float(s["q1"]) for s in spreads), min(figures), med)
        hi = max(statistics.median(float(s["q3"]) for s in spreads), max(figures), med)
        out[name] = {"lo": lo, "median": med, "hi": hi, "between": [min(figures), max(figures)],
                     "samples": int(sum(int(s.get("samples", 0)) for s in spreads))}
    return out


def relative_width(s: dict[str, float]) -> float:
    """An interval's width over its median (0 for a zero median)."""
    return (s["hi"] - s["lo"]) / abs(s["median"]) if s["median"] else 0.0


def drawn(probe: dict[str, Any], u: dict[str, float]) -> dict[str, Any]:
    """``probe`` with each figure of its ``spread`` at position ``u[name]``
    in [0, 1] of its interval: 0 its ``lo``, 0.5 its median, 1 its ``hi``,
    linear between (the interval's two halves may differ)."""
    out = dict(probe)
    for name, s in (probe.get("spread") or {}).items():
        if name not in u or name not in probe:
            continue
        x = min(1.0, max(0.0, u[name]))
        med = float(probe[name])
        lo, hi = min(float(s["lo"]), med), max(float(s["hi"]), med)
        out[name] = lo + 2 * x * (med - lo) if x < 0.5 else med + (2 * x - 1) * (hi - med)
    return out


def draws(probe: dict[str, Any], n: int = DRAWS, seed: int = SEED) -> list[dict[str, Any]]:
    """``n`` descriptions of the probed machine, each figure drawn
    independently and uniformly over its interval (a fixed seed: the same
    probe gives the same draws)."""
    rng = random.Random(seed)
    names = sorted(probe.get("spread") or {})
    return [drawn(probe, {name: rng.random() for name in names}) for _ in range(n)]


def interval(values: Iterable[float]) -> tuple[float, float]:
    """The lowest and highest of ``values``."""
    v = list(values)
    return min(v), max(v)


def agrees(measured: float, lo: float, hi: float, tolerance: float) -> bool:
    """Whether some value in [``lo``, ``hi``] is within ``tolerance`` (a
    fraction) of ``measured``: ``|s / measured - 1| <= tolerance``."""
    return lo <= measured * (1 + tolerance) and hi >= measured * (1 - tolerance)


def agrees_points(measured: float, lo: float, hi: float, points: float) -> bool:
    """Whether some value in [``lo``, ``hi``] is within ``points`` of ``measured``."""
    return lo - points <= measured <= hi + points
