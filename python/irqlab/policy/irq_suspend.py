"""An adaptive IRQ-suspension policy: ``irq-suspend-timeout`` from the
application's observed batch times, backed by the Rust decision
(``crates/irqlab-policy/src/suspend/batch_timeout.rs``, through
``irqlab._core.BatchTimeout``).

The thesis's IRQ Suspend profile sets ``irq-suspend-timeout`` to 20 ms,
"high enough to ensure that the application can complete processing
without interference"; the kernel's documentation says it "should be set
large enough to cover the processing of an entire application batch" and
that it is a safety net for an application that stops calling
``epoll_wait``. :class:`AdaptiveIrqSuspend` sets it, on every NAPI, to the
longest batch any thread served in the last period times ``margin``
(within ``[floor_us, ceiling_us]``): it rises at once and falls only to
half or less of the value in force. A batch is the time from
``epoll_wait`` returning events to the thread's next ``epoll_wait`` (the
sample's ``threads``). Run it on the ``irq-suspend`` profile, whose other
knobs (``prefer_busy_poll``, ``gro-flush-timeout``, ``defer-hard-irqs``)
make suspension happen; it changes nothing until the first batch ends.

On a real host the kernel does not see the application's batches: there
the sample's ``threads`` is empty and the policy sets nothing, unless the
program runs under the preload shim with ``irqlab linux exec --shim-stats
FILE`` and the controller reads it (``irqlab linux control --shim-stats
FILE``); its longest batch is then rounded up to a power of two and
renewed every 20 ms (:mod:`irqlab.linux.host_sample`).
"""

from __future__ import annotations

from typing import Any

from irqlab._core import BatchTimeout
from irqlab.policy import Changes, Policy


class AdaptiveIrqSuspend(Policy):
    """``irq-suspend-timeout`` = ``margin`` × the longest batch of the last
    period, within ``[floor_us, ceiling_us]`` (the defaults: twice the
    batch, 10 µs to the thesis's 20 ms)."""

    period_us = 1000.0

    def __init__(self, margin: float = 2.0, floor_us: float = 10.0, ceiling_us: float = 20_000.0) -> None:
        self._rule = BatchTimeout(margin, round(floor_us * 1e3), round(ceiling_us * 1e3))
        self.timeout_changes = 0
        self.longest_batch_ns = 0

    def observe(self, sample: Any) -> Changes:
        longest = max((t.get("batch_max_ns") or 0 for t in sample.threads), default=0)
        self.longest_batch_ns = max(self.longest_batch_ns, longest)
        ns = self._rule.observe(longest)
        if ns is None:
            return None
        self.timeout_changes += 1
        return {"irq-suspend-timeout": ns}

    def fields(self) -> dict[str, float]:
        return {
            "timeout_changes": float(self.timeout_changes),
            "irq_suspend_timeout_ns": float(self._rule.current_ns or 0),
            "longest_batch_ns": float(self.longest_batch_ns),
        }
