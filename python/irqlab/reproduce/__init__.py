"""Reproductions of the papers' experiments from the simulator (``irqlab reproduce``).

A paper is a module that declares a :class:`~irqlab.reproduce.paper.Paper`
(its studies, checks, tables, plots and fit note); the harness
(:mod:`irqlab.reproduce.harness`) runs it, prints it and writes its files.
"""
