"""Per-queue statistics of a real network device (netdev ``qstats-get``,
Linux 6.8+).

A thin layer over the native module (crates/irqlab-linux through
``irqlab._core``). :func:`queue_stats` returns one dict per queue, RX queues
first and each type by index:

- ``queue_type``: ``"rx"`` or ``"tx"``; ``queue_id``: its index among the
  device's queues of that type;
- ``rx_packets``, ``rx_bytes``, ``tx_packets``, ``tx_bytes``,
  ``rx_hw_drops`` (packets the device dropped on receive) and
  ``rx_alloc_fail`` (receive buffers the driver could not allocate): what
  the driver keeps, ``None`` for what it does not (an RX queue has no TX
  counters and the reverse).

Only drivers with per-queue statistics (``netdev_stat_ops``) answer; for
any other device (veth, loopback) or a kernel without ``qstats-get`` the
answer is ``None``, not an error. A device that is down has no queue to
report (``[]``). Reading needs no privilege and changes nothing; errors
(no such device, the kernel's refusal) raise :class:`LinuxError` with a
one-sentence message naming the device.
"""

from __future__ import annotations

from typing import Any, Optional

from irqlab import _core
from irqlab._core import LinuxError

__all__ = ["LinuxError", "queue_stats", "COUNTERS"]

#: The counters of each queue's dict, in order.
COUNTERS = ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "rx_hw_drops", "rx_alloc_fail")


def queue_stats(dev: str) -> Optional[list[dict[str, Any]]]:
    """The per-queue counters of ``dev``, or ``None`` when it keeps none."""
    if not isinstance(dev, str):
        raise TypeError(f"dev must be a device name (str), not {type(dev).__name__}")
    return _core.linux_queue_stats(dev)
