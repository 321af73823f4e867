"""The flags every reproduction checks the same way, and the error a bad
one raises (one sentence, exit status 2)."""

from __future__ import annotations

import argparse
from typing import Optional

from irqlab.flags import seconds, whole_number


class ReproduceUsageError(ValueError):
    """A bad flag of ``irqlab reproduce``; the message is one sentence."""


def seconds_flag(text: Optional[str], flag: str) -> Optional[float]:
    return seconds(text, flag, ReproduceUsageError, most=3600)


def duration_option(args: argparse.Namespace) -> dict:
    """``--duration``, checked, as ``run``'s keyword (the option of the
    papers that run every study for the same simulated time)."""
    return {"duration_s": seconds_flag(args.duration, "--duration")}


def seed_and_jobs(args: argparse.Namespace) -> tuple[Optional[int], Optional[int]]:
    """``--seed`` and ``--jobs``, checked."""
    from irqlab.run import MAX_SEED

    seed = whole_number(args.seed, "--seed", 0, MAX_SEED, ReproduceUsageError)
    return seed, whole_number(args.jobs, "--jobs", 1, 4096, ReproduceUsageError)
