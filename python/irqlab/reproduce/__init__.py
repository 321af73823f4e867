"""Reproductions of the papers' experiments from the simulator (``irqlab reproduce``)."""
