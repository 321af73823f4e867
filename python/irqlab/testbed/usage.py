"""The usage error of ``irqlab testbed``: a bad flag, said in one sentence
(exit status 2)."""


class TestbedUsageError(ValueError):
    """A bad flag of ``irqlab testbed``; one sentence."""
