"""A paper's claim: its declaration (the paper's words, the tolerance the
check allows, and whether the simulation predicts it, was fitted to it or
holds it by construction) and one check of it on simulated numbers."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

#: What a claim's verdict tells (:attr:`Claim.status`). A prediction is
#: numbers the model was not fitted to; a fit is the calibration's anchor
#: (it holds because a constant was chosen to make it hold); a claim that
#: holds by construction follows from how the model is written, whatever
#: its constants.
PREDICTION = "prediction"
FIT = "fit"
CONSTRUCTION = "by construction"
STATUSES = (PREDICTION, FIT, CONSTRUCTION)


@dataclass
class ShapeCheck:
    """One claim checked: the paper's words, whether it holds, the numbers."""

    claim: str
    holds: bool
    detail: str
    #: The claim's number ("D1", "P1"); "" for the thesis's bare-metal claims.
    id: str = ""
    #: The VM setup it is checked on (:attr:`~irqlab.reproduce.thesis.VmSetup.key`), "" for bare metal.
    setup: str = ""
    #: What its verdict tells (:data:`STATUSES`); "" where the paper module does not say.
    status: str = ""
    #: The setup whose numbers this check's setup repeats, run for run (its
    #: verdict is that setup's, so it is no evidence of its own and is not
    #: counted); "" for a check that counts.
    repeats: str = ""


@dataclass(frozen=True)
class Claim:
    """A claim as a paper module declares it, beside its check: its number,
    the paper's words, the tolerance (the check module's constants, as
    written into each detail) and its status (:data:`STATUSES`)."""

    id: str
    words: str
    tolerance: str
    status: str
    check: Callable[..., ShapeCheck]

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"{self.id}: status {self.status!r} is not one of {STATUSES}")


def tally(checks: list[ShapeCheck]) -> str:
    """How many of ``checks`` hold, in one sentence: all of them, then by
    status, and the repeats left out of the count."""
    counted = [c for c in checks if not c.repeats]
    held = sum(c.holds for c in counted)
    parts = []
    for status in STATUSES:
        group = [c for c in counted if c.status == status]
        if group:
            parts.append(f"{sum(c.holds for c in group)} of {len(group)} {_plural(status)}")
    text = f"{held} of {len(counted)} hold"
    if parts and len(parts) + any(not c.status for c in counted) > 1:
        text += f" ({', '.join(parts)})"
    elif parts:
        text += f" (all {_plural(counted[0].status)})"
    repeats = [c for c in checks if c.repeats]
    if repeats:
        of = sorted({c.repeats for c in repeats})
        text += (
            f"; {len(repeats)} more repeat {' and '.join(of)}'s numbers run for run and are not counted"
        )
    return text


def _plural(status: str) -> str:
    return {PREDICTION: "predictions", FIT: "fits", CONSTRUCTION: "by construction"}[status]


def claim(id_: str, words: str, *, tolerance: str, status: str) -> Callable:
    """Declare the decorated check as claim ``id_`` in the paper's
    ``words``: the check is called with the words as its keyword
    ``claim`` and must return a :class:`ShapeCheck` of that id; its
    :class:`Claim` is the result's ``claim`` attribute."""

    def declare(check: Callable[..., ShapeCheck]) -> Callable[..., ShapeCheck]:
        @functools.wraps(check)
        def checked(*args, **kwargs) -> ShapeCheck:
            result = check(*args, claim=words, **kwargs)
            if result.id != id_:
                raise ValueError(f"{check.__name__} is declared as {id_} but checked {result.id!r}")
            # The verdict says what it tells: the declaration's status
            # unless the check set its own (a VM check of a by-construction
            # part, say).
            result.status = result.status or status
            return result

        checked.claim = Claim(id_, words, tolerance, status, checked)  # type: ignore[attr-defined]
        return checked

    return declare


def declared(checks) -> list[Claim]:
    """The :class:`Claim` of each check function, in order."""
    return [c.claim for c in checks]
