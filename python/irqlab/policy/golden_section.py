"""The SR-IOV paper's online tuner as a policy: a golden-section search of
one knob's value on an objective measured over slices of time, the search
being ``irqlab_policy::search`` (``irqlab._core.GoldenSection``, the code
``irqlab tune`` and ``irqlab linux tune`` drive).

Each call ends a slice (``period_us``, default 10 ms): the objective over it
is measured from the sample's counters, the search says the next value to
measure, and the policy sets it. Once the interval is ``accept`` wide the
search holds its best value and the policy sets nothing more. As the paper's
controller does, each iteration measures both probes afresh (a live system
drifts; so does the model's load at the start), so a search of ``n``
iterations takes about ``n + 2`` slices.

Objectives (from the sample's counters over the slice): ``throughput``
(requests completed per second; maximised), ``latency`` (their mean, µs;
minimised), ``irqs`` (hard IRQs per second; minimised), ``packets_per_irq``
(maximised).
"""

from __future__ import annotations

from typing import Any, Optional

from irqlab._core import GoldenSection
from irqlab.policy import Changes, Policy

OBJECTIVES = {"throughput": True, "latency": False, "irqs": False, "packets_per_irq": True}


class GoldenSectionTuner(Policy):
    """Tune ``knob`` (a kernel name: ``rx-usecs``, ``gro-flush-timeout``,
    ...) within ``[low, high]`` on ``objective``, every queue or NAPI at
    once; ``accept``: the interval width at which it stops (default the
    range over 64)."""

    period_us = 10_000.0

    def __init__(self, knob: str = "rx-usecs", low: int = 1, high: int = 64, objective: str = "throughput",
                 accept: Optional[float] = None, period_us: Optional[float] = None) -> None:
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)} (got {objective!r})")
        if not (isinstance(low, int) and isinstance(high, int) and 0 <= low < high):
            raise ValueError(f"low and high must be whole numbers with 0 <= low < high (got {low!r}, {high!r})")
        self.knob = knob
        self.objective = objective
        if period_us is not None:
            self.period_us = period_us
        self._search = GoldenSection(float(low), float(high), float(accept or (high - low) / 64),
                                     maximize=OBJECTIVES[objective], reuse=False)
        self._last: Optional[Any] = None
        self.value = -1
        self.slices = 0
        self.done = False

    def _measure(self, s: Any) -> float:
        a, dt_s = self._last, (s.time_ns - self._last.time_ns) / 1e9
        done = s.requests_completed - a.requests_completed
        irqs = s.hard_irqs - a.hard_irqs
        if self.objective == "throughput":
            return done / dt_s
        if self.objective == "latency":
            return (s.latency_sum_ns - a.latency_sum_ns) / done / 1e3 if done else float("inf")
        if self.objective == "irqs":
            return irqs / dt_s
        return (s.packets - a.packets) / irqs if irqs else 0.0

    def observe(self, sample: Any) -> Changes:
        if self._last is None:
            _, x = self._search.probe()
        elif self.done:
            return None
        else:
            self.slices += 1
            self.done, x = self._search.observe(self._measure(sample))
        self._last = sample
        value = int(round(x))
        if value == self.value:
            return None
        self.value = value
        return {self.knob: value}
