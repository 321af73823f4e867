"""A policy written from scratch: coalesce by the interrupt rate.

Every millisecond of simulated time it looks at how many packets each
interrupt brought over that millisecond (what DIM looks at, in one
number) and moves the RX completion queues' ``rx-usecs`` up when the
interrupts come too often, down when they bring few packets: a
hand-made, one-knob cousin of net DIM (``lib/dim``).

Run it:

    irqlab run scenarios/thesis/bare-metal.toml --profile no-coalescing \
        --policy examples/policies/rate_coalescer.py:RateCoalescer

The tutorial (examples/policies/README.md) sweeps it against the
built-in profiles.
"""

from irqlab.policy import Policy

#: The rx-usecs steps it moves between (the ConnectX-4 takes 0 to 4095;
#: 1 is the no-coalescing profile's, and with 0 a CQ waits for rx-frames
#: completions before it signals).
STEPS_US = (1, 2, 4, 8, 16, 32, 64)


class RateCoalescer(Policy):
    period_us = 1000

    #: Interrupts per second per queue above which it coalesces more.
    high_irqs_per_s = 40_000
    #: Packets per interrupt below which (with few interrupts) it coalesces less.
    low_packets_per_irq = 2.0

    def __init__(self):
        self.step = 0
        self.moves = 0
        self._irqs = 0
        self._packets = 0

    def observe(self, sample):
        irqs = sample.hard_irqs - self._irqs
        packets = sample.packets - self._packets
        self._irqs, self._packets = sample.hard_irqs, sample.packets
        if sample.time_ns == 0 or not sample.queues:
            return {"rx-usecs": STEPS_US[self.step]}
        per_queue_per_s = irqs / len(sample.queues) / (self.period_us / 1e6)
        packets_per_irq = packets / irqs if irqs else 0.0
        step = self.step
        if per_queue_per_s > self.high_irqs_per_s and step + 1 < len(STEPS_US):
            step += 1
        elif packets_per_irq < self.low_packets_per_irq and per_queue_per_s < self.high_irqs_per_s / 2 and step > 0:
            step -= 1
        if step == self.step:
            return None
        self.step = step
        self.moves += 1
        return {"rx-usecs": STEPS_US[step]}
