"""Net DIM as a policy you can run, subclass or compare against: the
port of Linux ``lib/dim`` the simulator's completion queues run
(``crates/irqlab-policy/src/dim``, through ``irqlab._core.NetDim``), fed
from the policy's sample instead of from the driver.

In the kernel ``mlx5e_napi_poll`` hands DIM a sample at every re-arm of a
CQ; here :class:`Dim` hands one per queue at every call (``period_us``,
default 100 µs), with the queue's interrupts, packets and bytes so far. DIM
measures a window once 64 interrupts have passed (``DIM_NEVENTS``), so a
call every 100 µs sees every decision the kernel's DIM would take at these
rates, up to a period later; when it changes profile the policy sets that
queue's ``rx-usecs`` and ``rx-frames``. Run it on a profile without
adaptive coalescing (``no-coalescing``): under ``adaptive-rx`` the CQ's own
DIM moves the same knobs.
"""

from __future__ import annotations

from typing import Any, Optional

from irqlab._core import NetDim
from irqlab.policy import Changes, Policy


class Dim(Policy):
    """Net DIM on every RX queue (``mode``: ``"cqe"`` as mlx5's RX
    default with ``rx-cqe-moder`` on, or ``"eqe"``)."""

    period_us = 100.0

    def __init__(self, mode: str = "cqe") -> None:
        self.mode = mode
        self._dims: list[NetDim] = []
        self.profile_changes = 0

    def observe(self, sample: Any) -> Changes:
        queues = sample.queues
        if not self._dims:
            self._dims = [NetDim(self.mode, "rx") for _ in queues]
        usecs: dict[int, int] = {}
        frames: dict[int, int] = {}
        for i, (q, dim) in enumerate(zip(queues, self._dims)):
            if q.get("packets") is None:
                continue  # a real device that does not count per queue
            m: Optional[tuple[int, int]] = dim.on_sample(sample.time_ns, q["irqs"] or 0, q["packets"], q["bytes"])
            if m is not None:
                usecs[i], frames[i] = m
                dim.work_done()
                self.profile_changes += 1
        return {"rx-usecs": usecs, "rx-frames": frames} if usecs else None

    def fields(self) -> dict[str, float]:
        out = {"profile_changes": float(self.profile_changes)}
        for i, d in enumerate(self._dims):
            out[f"profile_ix_{i}"] = float(d.profile_ix)
        return out
