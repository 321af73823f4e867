"""The 82599's ITR policies as a policy you can run, subclass or compare
against: ixgbe's dynamic 3-state ITR and the ITR paper's linear ITR
(``crates/irqlab-policy/src/itr``, through ``irqlab._core.ItrPolicy``),
fed from the policy's sample instead of from the driver.

The driver asks its ITR policy at every poll exit (``ixgbe_poll`` →
``ixgbe_set_itr``) with what the vector's rings completed since; here
:class:`Itr` asks it per queue at every call (``period_us``, default
100 µs) with the queue's RX and TX packets and bytes since the previous
call, and sets the queue's ``InterruptThrottleRate`` when it writes a new
value. A rate it turns off (ITR 0) is not a rate the knob takes, so that
decision is skipped. Run it on a scenario with ``nic.kind = "82599"``
and a static ``itr.policy`` (the vector's own policy would decide too).
"""

from __future__ import annotations

from typing import Any

from irqlab._core import ItrPolicy
from irqlab.policy import Changes, Policy


class Itr(Policy):
    """``kind``: ``"ixgbe"`` or ``"linear"``, one per queue."""

    period_us = 100.0

    def __init__(self, kind: str = "linear") -> None:
        self.kind = kind
        self._itr: list[ItrPolicy] = []
        self._last: list[tuple[int, int, int, int]] = []
        self.rate_changes = 0

    def observe(self, sample: Any) -> Changes:
        queues = sample.queues
        if not self._itr:
            self._itr = [ItrPolicy(self.kind) for _ in queues]
            self._last = [(0, 0, 0, 0)] * len(queues)
        rates: dict[int, int] = {}
        for i, (q, policy) in enumerate(zip(queues, self._itr)):
            now = (q["packets"], q["bytes"], q["tx_packets"], q["tx_bytes"])
            if None in now:
                continue  # a real device that does not count per queue
            d = [a - b for a, b in zip(now, self._last[i])]
            self._last[i] = now
            before = policy.rate_per_s
            rate = policy.observe(sample.time_ns, *d)
            if rate is not None and rate != before:
                rates[i] = max(rate, 978)  # the knob's floor (the EITR field's 4088 maximum)
                self.rate_changes += 1
        return {"InterruptThrottleRate": rates} if rates else None
