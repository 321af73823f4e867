"""The tuner driver: the one loop that drives a search policy with
measurements, shared by ``irqlab tune`` (a simulated run per measurement),
``irqlab linux tune`` (a slice of real load) and, through it, ``irqlab
testbed tune``. The policy is the golden-section search of
``irqlab_policy::search`` (``irqlab._core.GoldenSection``); the commands
only say how a value is measured, which knob it sets and how to print.

:func:`drive` takes ``measure(value) -> objective`` and a policy, and runs
each search in three parts:

1. **The current value** (the knob as it was before the tuner; the
   commands pass it as ``current``) is measured first, so that every
   search has it under the same load as its probes.
2. **The search**: the policy names a value, ``measure`` measures it, until
   the policy converges (its answer is the middle of its last interval) or
   ``out_of_time()`` says no measurement fits any more.
3. **Drift**: the answer is measured again. If its objective moved from
   the one the search saw there (or, when the search never measured the
   answer itself, at the measured value nearest to it inside the last
   interval) by more than ``restart_fraction`` of it *and* by more than
   ``DRIFT_NOISE_FACTOR`` (3) noises (below), the load changed under the
   search: it starts over (the policy's ``restart``), keeping that
   measurement as the new search's first. Three noises, not two: the
   reference is a probe the search kept for being good, so it reads high,
   and a restart spends a whole search (at 20 % noise, 5 % of searches
   restart for nothing, against 47 % on the fraction alone).
   Only the last search's measurements choose the best; one taken before a
   restart was of another load.

Then **the minimum effect**. The search's candidate is its answer, as
measured again, or (cut short by the budget) the best value it measured;
each value counts by its latest measurement. The candidate replaces the
current value only if it beats the current value's measurement in the
same search by more than the tolerance::

    tolerance = max(min_effect * |objective at the current value|, NOISE_FACTOR * noise)

A smaller gain (or none) is a tie, and the current value is kept: on a
flat objective the search's best is noise, and applying it would change
the knob for nothing.

**The noise** comes from the measurements themselves: every value measured
more than once in one search gives a pair per repeat (its successive
measurements). The fresh golden-section search measures its surviving
probe again at every iteration, and the answer is measured again at the
end, so a search of 16 measurements has about 7 pairs at no extra cost.
``noise`` is the root mean square of those differences, an estimate of the
standard deviation of the difference between two measurements of one
value; a flat objective's gain (a difference of two measurements) exceeds
twice it about one time in 40 when the noise is normal. With no pair (a
short budget) the noise is unknown and ``min_effect`` alone decides. A
deterministic measurement (the simulator, whose runs at one value and
seed are identical) has noise 0, and ``min_effect`` is the effect the
tuner thinks worth a change.

A measurement of NaN (the objective could not be measured) is the worst
possible, as the policy counts it, and is left out of the noise.
``measure`` may raise: the exception leaves :func:`drive` as it is (the
commands put the device back); nothing is chosen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Optional, Protocol

#: The default --min-effect: a change of less than 1 % of the objective at
#: the current value is not worth making.
DEFAULT_MIN_EFFECT = 0.01
#: The largest --min-effect: an effect beyond half the objective is no
#: longer a "minimum" (a latency cannot fall by more than all of it).
MAX_MIN_EFFECT = 0.5
#: The tolerance in noises: a gain under twice the RMS difference of two
#: measurements of one value is a tie.
NOISE_FACTOR = 2.0
#: A move of the answer's objective by more than this fraction (beyond the
#: noise) means the load changed: search again (``irqlab linux tune``'s rule).
DEFAULT_RESTART_FRACTION = 0.25
#: ... and by more than this many noises.
DRIFT_NOISE_FACTOR = 3.0


class Policy(Protocol):
    """What the driver needs of a search policy (``GoldenSection``)."""

    def probe(self) -> tuple[bool, float]: ...

    def observe(self, value: float) -> tuple[bool, float]: ...

    def restart(self) -> None: ...

    @property
    def interval(self) -> tuple[float, float]: ...


def check_min_effect(value: float, error: type[Exception] = ValueError, flag: str = "--min-effect") -> float:
    """``value`` if it is a fraction from 0 to :data:`MAX_MIN_EFFECT`, else
    ``error`` in one sentence naming ``flag`` and the range."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_MIN_EFFECT:
        raise error(f"{flag} must be a fraction from 0 to {MAX_MIN_EFFECT:g} of the objective (got {value!r})")
    return float(value)


def parse_min_effect(text: str, error: type[Exception] = ValueError, flag: str = "--min-effect") -> float:
    """A --min-effect flag's text as a fraction (:func:`check_min_effect`)."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = math.nan
    if not 0 <= value <= MAX_MIN_EFFECT:
        raise error(f"{flag} must be a fraction from 0 to {MAX_MIN_EFFECT:g} of the objective (got {text!r})")
    return value


@dataclass(frozen=True)
class Measurement:
    #: 1 for the first measurement of the run, in the order taken.
    step: int
    value: float
    objective: float
    #: 0 for the first search, 1 after the first restart, ...
    search: int
    #: "current" (the value before the tuner), "probe" (the policy's) or
    #: "answer" (the converged answer, measured again).
    role: str


@dataclass
class Outcome:
    #: Every measurement, in the order taken (one per ``measure`` call).
    measurements: list[Measurement] = field(default_factory=list)
    restarts: int = 0
    #: Whether the last search converged (its answer is ``answer``).
    converged: bool = False
    answer: Optional[float] = None
    #: The last search's best before the tie rule (None: nothing measured).
    candidate: Optional[Measurement] = None
    #: The current value's latest measurement in the last search.
    baseline: Optional[Measurement] = None
    #: The measurement backing the value chosen: the candidate, or the
    #: baseline when the candidate did not beat it by more than ``tolerance``.
    best: Optional[Measurement] = None
    #: Whether the current value was kept (a tie, or nothing beat it).
    kept: bool = False
    #: RMS difference of repeated measurements of one value (None: no repeat).
    noise: Optional[float] = None
    noise_pairs: int = 0
    min_effect: float = DEFAULT_MIN_EFFECT
    #: The gain the candidate needed over the baseline (None: no baseline).
    tolerance: Optional[float] = None

    @property
    def last_search(self) -> list[Measurement]:
        return [m for m in self.measurements if m.search == self.restarts]


def noise_of(measurements: list[Measurement]) -> tuple[Optional[float], int]:
    """The RMS difference between successive measurements of one value in
    one search, and how many such pairs there were (None, 0 with none)."""
    last: dict[tuple[int, float], float] = {}
    squares: list[float] = []
    for m in measurements:
        if not math.isfinite(m.objective):
            continue
        key = (m.search, m.value)
        if key in last:
            squares.append((m.objective - last[key]) ** 2)
        last[key] = m.objective
    if not squares:
        return None, 0
    return math.sqrt(sum(squares) / len(squares)), len(squares)


def gain(candidate: float, baseline: float, maximize: bool) -> float:
    """How much better ``candidate`` is than ``baseline`` (negative: worse);
    NaN is the worst objective."""
    if math.isnan(candidate):
        return -math.inf if not math.isnan(baseline) else 0.0
    if math.isnan(baseline):
        return math.inf
    return candidate - baseline if maximize else baseline - candidate


def _latest(measurements: list[Measurement]) -> dict[float, Measurement]:
    latest: dict[float, Measurement] = {}
    for m in measurements:
        latest[m.value] = m
    return latest


def measured_best(measurements: list[Measurement], maximize: bool,
                  answer: Optional[float] = None) -> Optional[Measurement]:
    """The search's own ``answer`` where it was measured, else the best value
    measured (NaN the worst; the first measured on a tie); each value by its
    latest measurement. None if nothing was measured."""
    latest = _latest(measurements)
    if answer is not None and answer in latest:
        return latest[answer]

    def score(m: Measurement) -> float:
        y = m.objective
        return -math.inf if math.isnan(y) else y if maximize else -y

    return max(latest.values(), key=score, default=None)


def _reference(measurements: list[Measurement], answer: float,
               interval: tuple[float, float]) -> Optional[Measurement]:
    """What the search saw at its answer: the latest measurement there, or
    at the measured value nearest to it inside the last interval (the
    objective of a smooth optimum changes little across it)."""
    lo, hi = interval
    near = [m for m in _latest(measurements).values() if lo <= m.value <= hi or m.value == answer]
    if not near:
        return None
    return min(near, key=lambda m: (abs(m.value - answer), -m.step))


def drifted(before: float, after: float, restart_fraction: float, noise: Optional[float]) -> bool:
    """Whether the objective at one value moved from ``before`` to
    ``after`` by more than ``restart_fraction`` of ``before`` and by more
    than ``DRIFT_NOISE_FACTOR`` noises."""
    if not (math.isfinite(before) and math.isfinite(after)) or before == 0:
        return False
    moved = abs(after - before)
    return moved > restart_fraction * abs(before) and moved > DRIFT_NOISE_FACTOR * (noise or 0.0)


def drive(policy: Policy, measure: Callable[[float], float], *, maximize: bool, current: Optional[float] = None,
          min_effect: float = DEFAULT_MIN_EFFECT, restart_fraction: Optional[float] = DEFAULT_RESTART_FRACTION,
          snap: Callable[[float], float] = float, out_of_time: Callable[[], bool] = lambda: False,
          say: Callable[[str], None] = lambda _m: None) -> Outcome:
    """Run the searches (see the module) and choose; the :class:`Outcome`.

    ``measure(value)`` sets the knob to ``value`` and returns the objective;
    ``snap`` turns a value the policy names into one the knob takes (a whole
    number); ``out_of_time()`` is asked before every measurement; ``current``
    is the knob's value before the tuner (None: no single one, and then no
    tie rule: the candidate is chosen); ``restart_fraction`` None turns the
    drift rule off (a deterministic measurement cannot drift). ``say`` gets
    a line when the search restarts, runs out of time to, or keeps the
    current value."""
    check_min_effect(min_effect)
    out = Outcome(min_effect=min_effect)
    ms = out.measurements

    def take(value: float, role: str) -> float:
        y = float(measure(value))
        ms.append(Measurement(len(ms) + 1, value, y, out.restarts, role))
        return y

    answer: Optional[float] = None
    while True:
        if current is not None and not out_of_time():
            take(current, "current")
        done, x = policy.probe()
        # When the interval is as narrow as floats allow around its values,
        # the policy asks for the same probe again and again: stop there, at
        # the middle of the interval (what the policy would hold once done).
        asked: set[tuple[float, float, float]] = set()
        while not done and not out_of_time():
            state = (*policy.interval, x)
            if state in asked:
                lo, hi = policy.interval
                done, x = True, (lo + hi) / 2
                break
            asked.add(state)
            done, x = policy.observe(take(snap(x), "probe"))
        # The answer exists only once the search converged; before that the
        # policy's best is the middle of the whole range, measured by nothing.
        answer = snap(x) if done else None
        if answer is None or out_of_time():
            break
        search = [m for m in ms if m.search == out.restarts]
        seen = _reference(search, answer, policy.interval)
        noise, _ = noise_of(ms)
        again = take(answer, "answer")
        if restart_fraction is None or seen is None or not drifted(seen.objective, again, restart_fraction, noise):
            break
        where = f"{answer:g}" if seen.value == answer else f"{answer:g} (from {seen.value:g}'s)"
        if out_of_time():
            say(f"the objective at {where} moved from {seen.objective:.4g} to {again:.4g}: the load changed, but "
                "the budget leaves no time to search again")
            break
        out.restarts += 1
        say(f"the objective at {where} moved from {seen.objective:.4g} to {again:.4g}: the load changed; "
            "searching again")
        # The measurement that showed the change is the new load's: the new search keeps it.
        ms[-1] = replace(ms[-1], search=out.restarts)
        policy.restart()
    out.converged, out.answer = answer is not None, answer
    last = out.last_search
    out.noise, out.noise_pairs = noise_of(ms)
    out.candidate = measured_best(last, maximize, answer)
    out.best = out.candidate
    if current is None or out.candidate is None:
        return out
    out.baseline = _latest(last).get(current)
    if out.baseline is None:
        return out
    base = out.baseline.objective
    out.tolerance = max(min_effect * abs(base) if math.isfinite(base) else 0.0, NOISE_FACTOR * (out.noise or 0.0))
    if out.candidate.value == current:
        out.kept, out.best = True, out.baseline
        return out
    better = gain(out.candidate.objective, base, maximize)
    if better > out.tolerance:
        return out
    out.kept, out.best = True, out.baseline
    noise = "no repeated measurement" if out.noise is None else f"noise {out.noise:.4g} from {out.noise_pairs} repeats"
    how = "no better than" if not better > 0 else f"better by only {better:.4g} than"
    say(f"the search's best, {out.candidate.value:g} ({out.candidate.objective:.4g}), is {how} the current value "
        f"{current:g} ({base:.4g}), within the tolerance {out.tolerance:.4g} (min effect {min_effect:g} of it; "
        f"{noise}): a tie, the current value is kept")
    return out
