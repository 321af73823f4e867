"""The ITR paper's claims (Emmerich et al., SPECTS 2015, §IV–V), each
checked on simulated runs: C1–C13.

Every check takes runs keyed by ``(itr.policy, offered load in packets/s)``
(:data:`Runs`), computes what the claim is about from them and returns a
:class:`~irqlab.reproduce.claim.ShapeCheck` with the claim quoted from the
paper, whether it holds and the measured numbers. A claim with several
parts holds when every part does; the detail gives each part's verdict.

The tolerances are the module's constants, chosen from the paper's wording
("about", "near", "marginally") and written into each detail; they are not
adjusted to what the simulation gives. A claim whose numbers are missing (a
run that forwarded nothing, a grid without the loads it needs) does not
hold, and its detail says what was missing.

Words used in the details:

- *overloaded*: a run that dropped packets, or whose offered load is within
  :data:`OVERLOAD_MARGIN` of the most its regime forwarded at any load (it
  is past capacity; with 0.2 s of simulation the buffers may not be full
  yet). The paper: "We define system overload as the point at which the DuT
  starts dropping packets" and omits overloaded latencies from its graphs.
- *pre-overload*: the other runs.
- *polling-dominated*: pre-overload loads above the no-ITR interrupt rate's
  peak where that rate has fallen to at most :data:`POLLING_FRACTION` of
  the peak (NAPI polls instead of taking interrupts: "the NAPI polling
  mechanism dominates").
"""

from __future__ import annotations

import math
from typing import Callable, Mapping, Optional, Sequence

from irqlab.reproduce.claim import CONSTRUCTION, FIT, PREDICTION, ShapeCheck, claim, declared
from irqlab.summary import Summary

#: Runs keyed by (itr.policy, offered packets/s).
Runs = Mapping[tuple[str, int], Summary]

OFF, IXGBE, LINEAR = "off", "ixgbe", "linear"

# -- the paper's numbers --------------------------------------------------------

#: §IV-A: "Before the system becomes overloaded at 2.1 Mpps".
PAPER_OVERLOAD_PPS = 2_100_000
#: §IV-A: "The latency under overload for our DuT is 2300 µs".
PAPER_OVERLOAD_LATENCY_US = 2300.0
#: §IV-B: "the IRQ rate would peak without ITR (i.e. about 0.5 Mpps as seen in Figure 3)".
PAPER_IRQ_PEAK_PPS = 500_000
#: §IV-B: "a plateau at about 60 µs".
PAPER_PLATEAU_US = 60.0
#: §V-E: "low rates below 0.1 Mpps".
PAPER_LOW_PPS = 100_000
#: ixgbe's lowest interrupt rate (its "bulk" state, Figure 2; the linear ITR's r_min).
IXGBE_MIN_IRQ_RATE = 8000

# -- tolerances (fixed from the paper's wording; see each claim) ---------------------

#: A load within 1 % of the most its regime forwarded is overloaded.
OVERLOAD_MARGIN = 0.01
#: CPU "at 100 %": at least this busy.
FULL_CPU_PCT = 99.0
#: "Linear": a least-squares line leaves no point further than this (points
#: of CPU) and explains at least LINEAR_MIN_R2 of the variance.
LINEAR_MAX_RESIDUAL_PT = 3.0
LINEAR_MIN_R2 = 0.99
#: "About 0.5 Mpps": the peak within one step of the 0.1 Mpps load grid.
PEAK_TOLERANCE_PPS = 100_000
#: "Falls": after the peak each load's interrupt rate is at most the
#: previous one's times (1 + this).
MONOTONE_SLACK = 0.02
#: "Drops to zero": at most this fraction of the peak.
NEAR_ZERO_FRACTION = 0.05
#: Polling-dominated: no-ITR interrupt rate at most this fraction of its peak.
POLLING_FRACTION = 0.10
#: "Lowest point": within this fraction of the minimum.
LOWEST_TOLERANCE = 0.10
#: "Increases only marginally": at most this factor over the latency at 100 % CPU.
MARGINAL_FACTOR = 1.5
#: The fitted overload point: within this fraction of 2.1 Mpps.
ANCHOR_TOLERANCE = 0.02
#: "About 2300 µs" under overload.
OVERLOAD_LATENCY_TOLERANCE = 0.15
#: "A sudden jump": overload latency at least this factor over every pre-overload latency.
JUMP_FACTOR = 10.0
#: Full throttling: ixgbe's interrupt rate at most its floor times (1 + this).
FULL_THROTTLE_SLACK = 0.05
#: "About 60 µs": the plateau's median within this fraction; "plateau":
#: every plateau point within this fraction of the median.
PLATEAU_TOLERANCE = 0.25
#: "Increases ... until": the first load's latency at most this fraction of the plateau.
RISE_FRACTION = 0.5
#: "Drops again": the polling-dominated loads' latency at most this factor of the plateau.
DROP_FACTOR = 0.8
#: "The maximum achieved throughput remains the same": within this fraction.
SAME_THROUGHPUT = 0.01
#: "The same behaviour" below 0.1 Mpps: latency, CPU and interrupt rate within
#: this fraction of each other (CPU: or within SAME_CPU_PT points).
SAME_TOLERANCE = 0.10
SAME_CPU_PT = 1.0
#: "Almost as low as ... no ITR": the linear ITR's latency is at most this
#: fraction of the way from no ITR's to ixgbe's, plus CLOSE_SLACK_US.
CLOSE_GAP_FRACTION = 0.25
CLOSE_SLACK_US = 1.0
#: "Between" no ITR's and ixgbe's CPU load, give or take this many points.
BETWEEN_SLACK_PT = 1.0
#: "Significant improvement": the largest difference at least this fraction of ixgbe's P_ll.
SIGNIFICANT_FRACTION = 0.25
#: "No trade-off at low and high loads": the two P_ll within this fraction of ixgbe's.
CONVERGE_TOLERANCE = 0.10


# -- reading runs ----------------------------------------------------------------


def loads_of(runs: Runs, policy: str) -> list[int]:
    """The offered loads ``policy`` was run at, ascending."""
    return sorted(q for (p, q) in runs if p == policy)


def mean_us(s: Summary) -> float:
    """Mean latency, µs; NaN when the run forwarded nothing."""
    value = s.latency_us.mean
    return math.nan if value is None else float(value)


def busy(s: Summary) -> float:
    """CPU load, % (100 − idle), the paper's CPU utilisation."""
    return 100.0 - float(s.cpu_pct.idle)


def pll(s: Summary) -> float:
    """The load-latency product P_ll (cycles × µs); NaN without a latency."""
    value = s.get("load_latency_product")
    if value is None or s.latency_us.mean is None:
        return math.nan
    return float(value)


def max_rate(runs: Runs, policy: str) -> float:
    """The most ``policy`` forwarded at any load (packets/s)."""
    rates = [float(runs[(policy, q)].throughput_qps) for q in loads_of(runs, policy)]
    return max(rates, default=math.nan)


def drops(s: Summary) -> int:
    return int(s.get("drops") or 0)


def saturated(s: Summary, load: int) -> bool:
    """The run dropped packets or forwarded less than its offered load
    (less :data:`OVERLOAD_MARGIN`)."""
    return drops(s) > 0 or float(s.throughput_qps) < (1.0 - OVERLOAD_MARGIN) * load


def capacity(runs: Runs, policy: str) -> float:
    """The most ``policy`` forwarded, when some run of it was saturated (then
    that is its capacity); infinite when none was (the grid stops short of
    overload)."""
    if not any(saturated(runs[(policy, q)], q) for q in loads_of(runs, policy)):
        return math.inf
    return max_rate(runs, policy)


def overloaded(runs: Runs, policy: str, load: int) -> bool:
    """Whether the run is overloaded: it dropped packets, or its offered load
    is within :data:`OVERLOAD_MARGIN` of its regime's capacity."""
    return drops(runs[(policy, load)]) > 0 or load >= (1.0 - OVERLOAD_MARGIN) * capacity(runs, policy)


def pre_overload(runs: Runs, *policies: str) -> list[int]:
    """Loads every one of ``policies`` was run at and none is overloaded at."""
    common = set(loads_of(runs, policies[0]))
    for p in policies[1:]:
        common &= set(loads_of(runs, p))
    return sorted(q for q in common if not any(overloaded(runs, p, q) for p in policies))


def first_drop(runs: Runs, policy: str) -> Optional[int]:
    """The lowest offered load at which ``policy`` dropped packets."""
    return next((q for q in loads_of(runs, policy) if drops(runs[(policy, q)]) > 0), None)


def polling_dominated(runs: Runs) -> list[int]:
    """Pre-overload loads above the no-ITR interrupt rate's peak where it is
    at most :data:`POLLING_FRACTION` of the peak; empty without no-ITR runs."""
    loads = loads_of(runs, OFF)
    if not loads:
        return []
    peak_at = max(loads, key=lambda q: float(runs[(OFF, q)].irqs_per_s))
    peak = float(runs[(OFF, peak_at)].irqs_per_s)
    return [
        q for q in pre_overload(runs, OFF) if q > peak_at and float(runs[(OFF, q)].irqs_per_s) <= POLLING_FRACTION * peak
    ]


# -- formatting ------------------------------------------------------------------


def mpps(q: float) -> str:
    """Packets/s as ``1.25 Mpps`` (up to 4 decimals, trailing zeros cut)."""
    if isinstance(q, float) and math.isnan(q):
        return "—"
    return f"{q / 1e6:.4f}".rstrip("0").rstrip(".") + " Mpps"


def _m(q: float) -> str:
    """Packets/s as a bare number of Mpps, for lists."""
    return mpps(q).removesuffix(" Mpps")


def f1(x: float, unit: str = "") -> str:
    return "—" if math.isnan(x) else f"{x:.1f}{unit}"


def kilo(x: float) -> str:
    return "—" if math.isnan(x) else f"{x / 1e3:,.1f}k"


def _ratio(a: float, b: float, fmt: str = "{:.0f}") -> str:
    """``a / b`` formatted, ``—`` when it is not a number."""
    if not b or math.isnan(a) or math.isnan(b):
        return "—"
    return fmt.format(a / b)


def part(label: str, holds: bool, text: str) -> str:
    """One part of a claim's detail: ``(a) holds: …`` / ``(a) FAILS: …``."""
    return f"({label}) {'holds' if holds else 'FAILS'}: {text}"


def line_fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float, float, int]:
    """Least-squares line through ``(xs, ys)``: slope, intercept, R², the
    largest absolute residual and its index."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else math.nan
    intercept = my - slope * mx
    residuals = [y - (slope * x + intercept) for x, y in zip(xs, ys)]
    ss_tot = sum((y - my) ** 2 for y in ys)
    r2 = 1.0 - sum(r * r for r in residuals) / ss_tot if ss_tot else 1.0
    worst = max(range(n), key=lambda i: abs(residuals[i]))
    return slope, intercept, r2, abs(residuals[worst]), worst


def _linear(loads: list[int], values: list[float], what: str) -> tuple[bool, str]:
    """Whether ``values`` over ``loads`` pass the linearity test, and the numbers."""
    if len(loads) < 3 or any(math.isnan(v) for v in values):
        return False, f"{what}: {len(loads)} usable loads, a line needs at least 3"
    xs = [q / 1e6 for q in loads]
    slope, intercept, r2, worst, at = line_fit(xs, values)
    holds = r2 >= LINEAR_MIN_R2 and worst <= LINEAR_MAX_RESIDUAL_PT
    return holds, (
        f"{what}: line over {len(loads)} loads {_m(loads[0])}-{_m(loads[-1])} Mpps, {slope:.1f} %/Mpps "
        f"+ {intercept:.1f} %, R² {r2:.3f} (needs >= {LINEAR_MIN_R2}), largest residual {worst:.1f} pt at "
        f"{mpps(loads[at])} (needs <= {LINEAR_MAX_RESIDUAL_PT:g} pt)"
    )


def _missing(id_: str, claim: str, what: str) -> ShapeCheck:
    return ShapeCheck(claim, False, f"not checked: {what}", id_)


def _series(runs: Runs, policy: str, loads: Sequence[int], value: Callable[[Summary], float]) -> str:
    return ", ".join(f"{_m(q)}: {f1(value(runs[(policy, q)]))}" for q in loads)


# -- §IV-A: no ITR (Figure 3) ----------------------------------------------------


@claim(
    "C1",
    "The CPU utilization increases linearly with the number of packets per second until it hits 100%.",
    tolerance="FULL_CPU_PCT",
    status=PREDICTION,
)
def c1_cpu_linear(runs: Runs, *, claim: str) -> ShapeCheck:
    """C1: without ITR, CPU load is linear in the offered load below 100 %
    and stays at 100 % from the first load that reaches it."""
    loads = loads_of(runs, OFF)
    if not loads:
        return _missing("C1", claim, "no runs without ITR")
    cpu = {q: busy(runs[(OFF, q)]) for q in loads}
    full = next((q for q in loads if cpu[q] >= FULL_CPU_PCT), None)
    if full is None:
        text = f"CPU never reaches {FULL_CPU_PCT:g} % (max {max(cpu.values()):.1f} %)"
        return ShapeCheck(claim, False, part("a", False, text), "C1")
    stays = [q for q in loads if q >= full and cpu[q] < FULL_CPU_PCT]
    a = part("a", not stays, f"CPU >= {FULL_CPU_PCT:g} % from {mpps(full)} on"
             + (f", but {', '.join(f'{f1(cpu[q])} % at {mpps(q)}' for q in stays)}" if stays else ""))
    below = [q for q in loads if q < full]
    ok_b, text = _linear(below, [cpu[q] for q in below], "CPU below 100 %")
    b = part("b", ok_b, f"{text}; CPU {_series(runs, OFF, below, busy)} %")
    return ShapeCheck(claim, not stays and ok_b, f"{a}; {b}", "C1")


@claim(
    "C2",
    "the IRQ rate would peak without ITR (i.e. about 0.5 Mpps as seen in Figure 3) ... the NAPI adopts and polls "
    "more often, this is visible in the decreasing IRQ rate ... At a specific point the IRQ rate drops to zero.",
    tolerance="PEAK_TOLERANCE_PPS, PAPER_IRQ_PEAK_PPS, NEAR_ZERO_FRACTION, MONOTONE_SLACK",
    status=PREDICTION,
)
def c2_irq_peak(runs: Runs, *, claim: str) -> ShapeCheck:
    """C2: without ITR the interrupt rate peaks within one grid step of 0.5
    Mpps, falls from there over the pre-overload loads, and is near zero at
    the first overloaded load."""
    loads = loads_of(runs, OFF)
    if not loads:
        return _missing("C2", claim, "no runs without ITR")
    irq = {q: float(runs[(OFF, q)].irqs_per_s) for q in loads}
    peak_at = max(loads, key=lambda q: irq[q])
    peak = irq[peak_at]
    ok_a = abs(peak_at - PAPER_IRQ_PEAK_PPS) <= PEAK_TOLERANCE_PPS
    nearest = min(loads, key=lambda q: abs(q - PAPER_IRQ_PEAK_PPS))
    a = part("a", ok_a, f"peak {kilo(peak)} IRQ/s at {mpps(peak_at)} (needs {mpps(PAPER_IRQ_PEAK_PPS)} ± "
             f"{mpps(PEAK_TOLERANCE_PPS)}; {kilo(irq[nearest])} IRQ/s at {mpps(nearest)})")
    pre = [q for q in pre_overload(runs, OFF) if q >= peak_at]
    rises = [(p, q) for p, q in zip(pre, pre[1:]) if irq[q] > irq[p] * (1.0 + MONOTONE_SLACK)]
    b = part("b", not rises, f"falls from the peak to {kilo(irq[pre[-1]]) if pre else '—'} IRQ/s at "
             f"{mpps(pre[-1]) if pre else '—'} (each load at most +{MONOTONE_SLACK:.0%} over the previous)"
             + (f"; rises at {', '.join(mpps(q) for _, q in rises)}" if rises else ""))
    over = [q for q in loads if overloaded(runs, OFF, q)]
    if over:
        ok_c = irq[over[0]] <= NEAR_ZERO_FRACTION * peak
        c = part("c", ok_c, f"{kilo(irq[over[0]])} IRQ/s at the first overloaded load {mpps(over[0])} "
                 f"(needs <= {NEAR_ZERO_FRACTION:.0%} of the peak)")
    else:
        ok_c, c = False, part("c", False, "no overloaded load in the grid")
    return ShapeCheck(claim, ok_a and not rises and ok_c, f"{a}; {b}; {c}", "C2")


@claim(
    "C3",
    "Once the system hits 100% CPU utilization, the latency is at its lowest point. ... Before the system becomes "
    "overloaded at 2.1 Mpps, the latency increases only marginally.",
    tolerance="MARGINAL_FACTOR, LOWEST_TOLERANCE, FULL_CPU_PCT",
    status=PREDICTION,
)
def c3_latency_lowest_at_full_cpu(runs: Runs, *, claim: str) -> ShapeCheck:
    """C3: without ITR, the mean latency at the first pre-overload load with
    100 % CPU is within :data:`LOWEST_TOLERANCE` of the lowest pre-overload
    latency, and no later pre-overload latency exceeds it by more than
    :data:`MARGINAL_FACTOR`."""
    pre = pre_overload(runs, OFF)
    lat = {q: mean_us(runs[(OFF, q)]) for q in pre}
    full = next((q for q in pre if busy(runs[(OFF, q)]) >= FULL_CPU_PCT), None)
    if full is None or any(math.isnan(v) for v in lat.values()):
        return _missing("C3", claim, "no pre-overload load at 100 % CPU, or a run without latency")
    low_at = min(pre, key=lambda q: lat[q])
    ok_a = lat[full] <= (1.0 + LOWEST_TOLERANCE) * lat[low_at]
    a = part("a", ok_a, f"{f1(lat[full])} µs at {mpps(full)}, the first load at 100 % CPU; lowest {f1(lat[low_at])} µs "
             f"at {mpps(low_at)} (needs within {LOWEST_TOLERANCE:.0%})")
    after = [q for q in pre if q >= full]
    top = max(after, key=lambda q: lat[q])
    ok_b = lat[top] <= MARGINAL_FACTOR * lat[full]
    b = part("b", ok_b, f"highest before overload {f1(lat[top])} µs at {mpps(top)}, x{_ratio(lat[top], lat[full], '{:.1f}')} "
             f"(needs <= x{MARGINAL_FACTOR:g}); {_series(runs, OFF, after, mean_us)} µs")
    return ShapeCheck(claim, ok_a and ok_b, f"{a}; {b}", "C3")


@claim(
    "C4",
    "Before the system becomes overloaded at 2.1 Mpps ... We define system overload as the point at which the DuT "
    "starts dropping packets.",
    tolerance="ANCHOR_TOLERANCE, PAPER_OVERLOAD_PPS",
    status=FIT,
)
def c4_overload_point(runs: Runs, fitted: str = "", *, claim: str) -> ShapeCheck:
    """C4 (the calibration anchor): without ITR the maximum forwarding rate
    is within :data:`ANCHOR_TOLERANCE` of 2.1 Mpps, no load below 2.1 Mpps
    less that tolerance drops packets, every load above it plus the
    tolerance does."""
    loads = loads_of(runs, OFF)
    if not loads:
        return _missing("C4", claim, "no runs without ITR")
    top = max_rate(runs, OFF)
    ok_a = abs(top / PAPER_OVERLOAD_PPS - 1.0) <= ANCHOR_TOLERANCE
    a = part("a", ok_a, f"maximum forwarding rate {mpps(top)} (needs {mpps(PAPER_OVERLOAD_PPS)} ± {ANCHOR_TOLERANCE:.0%})")
    lo = [q for q in loads if q <= (1.0 - ANCHOR_TOLERANCE) * PAPER_OVERLOAD_PPS]
    hi = [q for q in loads if q >= (1.0 + ANCHOR_TOLERANCE) * PAPER_OVERLOAD_PPS]
    dropped = {q: drops(runs[(OFF, q)]) for q in loads}
    early = [q for q in lo if dropped[q] > 0]
    late = [q for q in hi if dropped[q] == 0]
    ok_b = bool(hi) and not early and not late
    first = first_drop(runs, OFF)
    b = part("b", ok_b, f"first drops at {mpps(first) if first else '—'}"
             + (f" ({dropped[first]:,} dropped)" if first else "")
             + f"; none up to {mpps(lo[-1]) if lo else '—'}, drops at every load from {mpps(hi[0]) if hi else '—'}"
             + (f"; but drops at {', '.join(mpps(q) for q in early)}" if early else "")
             + (f"; but none at {', '.join(mpps(q) for q in late)}" if late else ""))
    note = f"; {fitted}" if fitted else ""
    return ShapeCheck(claim, ok_a and ok_b, f"{a}; {b}{note}", "C4")


@claim(
    "C5",
    "Overloading the system causes all buffers to be filled completely causing a sudden jump to a large latency "
    "that is now dominated by the system's buffer size. The latency under overload for our DuT is 2300 µs",
    tolerance="PAPER_OVERLOAD_LATENCY_US, OVERLOAD_LATENCY_TOLERANCE, JUMP_FACTOR",
    status=PREDICTION,
)
def c5_overload_latency(runs: Runs, *, claim: str) -> ShapeCheck:
    """C5: without ITR every load that drops packets has a mean latency within
    :data:`OVERLOAD_LATENCY_TOLERANCE` of 2300 µs, at least
    :data:`JUMP_FACTOR` times every pre-overload latency."""
    dropping = [q for q in loads_of(runs, OFF) if drops(runs[(OFF, q)]) > 0]
    if not dropping:
        return _missing("C5", claim, "no load without ITR dropped packets")
    lat = {q: mean_us(runs[(OFF, q)]) for q in dropping}
    off = [q for q, v in lat.items() if not abs(v / PAPER_OVERLOAD_LATENCY_US - 1.0) <= OVERLOAD_LATENCY_TOLERANCE]
    a = part("a", not off, f"{_series(runs, OFF, dropping, mean_us)} µs at the loads that drop (needs "
             f"{PAPER_OVERLOAD_LATENCY_US:g} µs ± {OVERLOAD_LATENCY_TOLERANCE:.0%})")
    pre = [mean_us(runs[(OFF, q)]) for q in pre_overload(runs, OFF)]
    highest = max(pre, default=math.nan)
    ok_b = bool(pre) and min(lat.values()) >= JUMP_FACTOR * highest
    b = part("b", ok_b, f"at least x{_ratio(min(lat.values()), highest)} the highest pre-overload latency "
             f"{f1(highest)} µs (needs x{JUMP_FACTOR:g})")
    return ShapeCheck(claim, not off and ok_b, f"{a}; {b}", "C5")


# -- §IV-B: the default ixgbe ITR (Figure 5) ---------------------------------------


def _plateau(runs: Runs) -> tuple[list[int], list[int], Optional[int]]:
    """ixgbe's plateau loads, the polling-dominated loads and the first load
    of full throttling (interrupt rate at its floor)."""
    pre = pre_overload(runs, IXGBE)
    floor = IXGBE_MIN_IRQ_RATE * (1.0 + FULL_THROTTLE_SLACK)
    full = next((q for q in pre if float(runs[(IXGBE, q)].irqs_per_s) <= floor), None)
    polling = set(polling_dominated(runs))
    plateau = [q for q in pre if full is not None and q >= full and q not in polling]
    return plateau, [q for q in pre if q in polling], full


def _median(values: list[float]) -> float:
    v = sorted(values)
    n = len(v)
    return math.nan if not n else (v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2]))


@claim(
    "C6",
    "The latency now increases with the packet rate until it reaches a plateau at about 60 µs.",
    tolerance="PLATEAU_TOLERANCE, RISE_FRACTION, PAPER_PLATEAU_US",
    status=PREDICTION,
)
def c6_ixgbe_plateau(runs: Runs, *, claim: str) -> ShapeCheck:
    """C6: with ixgbe's ITR, the plateau (pre-overload loads from full
    throttling on, less the polling-dominated ones) has a median mean
    latency within :data:`PLATEAU_TOLERANCE` of 60 µs, every plateau load
    within that fraction of the median, and the lowest load's latency at
    most :data:`RISE_FRACTION` of it."""
    plateau, _, full = _plateau(runs)
    if not plateau:
        return _missing("C6", claim, "no pre-overload ixgbe load at full throttling (needs runs without ITR too)")
    lat = {q: mean_us(runs[(IXGBE, q)]) for q in plateau}
    median = _median(list(lat.values()))
    first = loads_of(runs, IXGBE)[0]
    first_lat = mean_us(runs[(IXGBE, first)])
    ok_a = first_lat <= RISE_FRACTION * median
    a = part("a", ok_a, f"{f1(first_lat)} µs at {mpps(first)}, rising to the plateau (needs <= "
             f"{RISE_FRACTION:.0%} of its median)")
    ok_b = abs(median / PAPER_PLATEAU_US - 1.0) <= PLATEAU_TOLERANCE
    floor = kilo(float(runs[(IXGBE, full)].irqs_per_s))
    b = part("b", ok_b, f"plateau {mpps(plateau[0])}-{mpps(plateau[-1])} (full throttling, {floor} IRQ/s, from "
             f"{mpps(full)}): median {f1(median)} µs (needs {PAPER_PLATEAU_US:g} µs ± {PLATEAU_TOLERANCE:.0%})")
    lo, hi = min(lat.values()), max(lat.values())
    ok_c = lo >= (1.0 - PLATEAU_TOLERANCE) * median and hi <= (1.0 + PLATEAU_TOLERANCE) * median
    c = part("c", ok_c, f"plateau from {f1(lo)} to {f1(hi)} µs (needs within {PLATEAU_TOLERANCE:.0%} of the median); "
             f"{_series(runs, IXGBE, plateau, mean_us)} µs")
    return ShapeCheck(claim, ok_a and ok_b and ok_c, f"{a}; {b}; {c}", "C6")


@claim(
    "C7",
    "It then drops again right before the system becomes overloaded.",
    tolerance="DROP_FACTOR, POLLING_FRACTION",
    status=PREDICTION,
)
def c7_ixgbe_drop_before_overload(runs: Runs, *, claim: str) -> ShapeCheck:
    """C7: with ixgbe's ITR, the mean latency at every polling-dominated
    pre-overload load is at most :data:`DROP_FACTOR` of the plateau's median."""
    plateau, polling, _ = _plateau(runs)
    if not plateau or not polling:
        return _missing("C7", claim, "no plateau or no polling-dominated pre-overload load (needs runs without ITR too)")
    median = _median([mean_us(runs[(IXGBE, q)]) for q in plateau])
    lat = {q: mean_us(runs[(IXGBE, q)]) for q in polling}
    ok = all(v <= DROP_FACTOR * median for v in lat.values())
    peak = max(float(runs[(OFF, q)].irqs_per_s) for q in loads_of(runs, OFF))
    return ShapeCheck(claim, ok, part("a", ok, (
        f"{_series(runs, IXGBE, polling, mean_us)} µs at the polling-dominated loads (no-ITR IRQ rate <= "
        f"{POLLING_FRACTION:.0%} of its {kilo(peak)}/s peak) vs the plateau's median {f1(median)} µs (needs <= "
        f"x{DROP_FACTOR:g})")), "C7")


@claim(
    "C8",
    "Note that the maximum achieved throughput remains the same.",
    tolerance="SAME_THROUGHPUT",
    # At the maximum rate NAPI polls without pause and the vector stays
    # masked, so no ITR setting can act there: the model gives the same
    # maximum whatever its constants.
    status=CONSTRUCTION,
)
def c8_same_max_throughput(runs: Runs, *, claim: str) -> ShapeCheck:
    """C8: ixgbe's maximum forwarding rate is within :data:`SAME_THROUGHPUT`
    of no ITR's, and both first drop packets at the same load."""
    if not loads_of(runs, OFF) or not loads_of(runs, IXGBE):
        return _missing("C8", claim, "needs runs with and without ITR")
    a, b = max_rate(runs, OFF), max_rate(runs, IXGBE)
    ok_a = a > 0 and abs(b / a - 1.0) <= SAME_THROUGHPUT
    fa, fb = first_drop(runs, OFF), first_drop(runs, IXGBE)
    ok_b = fa == fb
    text_a = f"maximum forwarding rate ixgbe {mpps(b)}, no ITR {mpps(a)} (needs within {SAME_THROUGHPUT:.0%})"
    text_b = f"first drops at {mpps(fb) if fb else '—'} (ixgbe) and {mpps(fa) if fa else '—'} (no ITR)"
    return ShapeCheck(claim, ok_a and ok_b, f"{part('a', ok_a, text_a)}; {part('b', ok_b, text_b)}", "C8")


@claim(
    "C9",
    "The CPU load now behaves linearly once the full throttling takes effect at the fifth data point (20 MByte/s) "
    "in Figure 5, this reduces the IRQ rate significantly. ... the ITR controls the trade-off between CPU load and "
    "latency",
    tolerance="PAPER_LOW_PPS",
    status=PREDICTION,
)
def c9_ixgbe_cpu(runs: Runs, *, claim: str) -> ShapeCheck:
    """C9: ixgbe's ITR uses less CPU than no ITR at every pre-overload load
    from 0.1 Mpps on, and its CPU load is linear in the load (the test of
    C1) from full throttling on, over the pre-overload loads."""
    pre = [q for q in pre_overload(runs, OFF, IXGBE) if q >= PAPER_LOW_PPS]
    if not pre:
        return _missing("C9", claim, "no pre-overload load from 0.1 Mpps with runs with and without ITR")
    more = [q for q in pre if not busy(runs[(IXGBE, q)]) < busy(runs[(OFF, q)])]
    pairs = ", ".join(f"{_m(q)}: {f1(busy(runs[(IXGBE, q)]))}/{f1(busy(runs[(OFF, q)]))}" for q in pre)
    a = part("a", not more, f"ixgbe/no-ITR CPU {pairs} %"
             + (f"; not less at {', '.join(mpps(q) for q in more)}" if more else ""))
    _, _, full = _plateau(runs)
    lin = [q for q in pre_overload(runs, IXGBE) if full is not None and q >= full]
    ok_b, text = _linear(lin, [busy(runs[(IXGBE, q)]) for q in lin], "ixgbe CPU from full throttling on")
    return ShapeCheck(claim, not more and ok_b, f"{a}; {part('b', ok_b, text)}", "C9")


# -- §V-E: the linear ITR (Figures 8 and 7) ------------------------------------------


def _close(a: float, b: float, tolerance: float) -> bool:
    return abs(a - b) <= tolerance * max(abs(a), abs(b))


@claim(
    "C10",
    "Both show the same behavior at low rates below 0.1 Mpps as there is effectively no throttling.",
    tolerance="PAPER_LOW_PPS, SAME_TOLERANCE, SAME_CPU_PT",
    status=PREDICTION,
)
def c10_same_below_100k(runs: Runs, *, claim: str) -> ShapeCheck:
    """C10: below 0.1 Mpps ixgbe's and the linear ITR's mean latency, CPU
    load and interrupt rate are within :data:`SAME_TOLERANCE` of each other
    (CPU: or :data:`SAME_CPU_PT` points), and both latencies within that of
    no ITR's (no effective throttling)."""
    low = [q for q in set(loads_of(runs, IXGBE)) & set(loads_of(runs, LINEAR)) & set(loads_of(runs, OFF))
           if q < PAPER_LOW_PPS]
    low.sort()
    if not low:
        return _missing("C10", claim, "no load below 0.1 Mpps with all three regimes")
    diff_a, diff_b, rows = [], [], []
    for q in low:
        x, y, o = runs[(IXGBE, q)], runs[(LINEAR, q)], runs[(OFF, q)]
        same = (
            _close(mean_us(x), mean_us(y), SAME_TOLERANCE)
            and (_close(busy(x), busy(y), SAME_TOLERANCE) or abs(busy(x) - busy(y)) <= SAME_CPU_PT)
            and _close(float(x.irqs_per_s), float(y.irqs_per_s), SAME_TOLERANCE)
        )
        unthrottled = _close(mean_us(x), mean_us(o), SAME_TOLERANCE) and _close(mean_us(y), mean_us(o), SAME_TOLERANCE)
        if not same:
            diff_a.append(q)
        if not unthrottled:
            diff_b.append(q)
        rows.append(
            f"{_m(q)}: latency {f1(mean_us(x))}/{f1(mean_us(y))}/{f1(mean_us(o))} µs, CPU {f1(busy(x))}/{f1(busy(y))}/"
            f"{f1(busy(o))} %, IRQ/s {kilo(float(x.irqs_per_s))}/{kilo(float(y.irqs_per_s))}/{kilo(float(o.irqs_per_s))}"
        )
    a = part("a", not diff_a, f"ixgbe and linear within {SAME_TOLERANCE:.0%} (CPU: or {SAME_CPU_PT:g} pt)"
             + (f", not at {', '.join(mpps(q) for q in diff_a)}" if diff_a else ""))
    b = part("b", not diff_b, f"both latencies within {SAME_TOLERANCE:.0%} of no ITR's"
             + (f", not at {', '.join(mpps(q) for q in diff_b)}" if diff_b else ""))
    return ShapeCheck(claim, not diff_a and not diff_b, f"{a}; {b}; ixgbe/linear/no ITR at {'; '.join(rows)}", "C10")


@claim(
    "C11",
    "Our algorithm then exhibits a higher CPU utilization while maintaining a latency that is almost as low as seen "
    "in the first measurement with no ITR",
    tolerance="CLOSE_SLACK_US, CLOSE_GAP_FRACTION",
    status=PREDICTION,
)
def c11_linear_latency_close(runs: Runs, *, claim: str) -> ShapeCheck:
    """C11: at every pre-overload load, the linear ITR's mean latency is at
    most :data:`CLOSE_GAP_FRACTION` of the way from no ITR's to ixgbe's,
    plus :data:`CLOSE_SLACK_US`: ``lin - off <= 0.25 max(ixgbe - off, 0) + 1 µs``."""
    pre = pre_overload(runs, OFF, IXGBE, LINEAR)
    if not pre:
        return _missing("C11", claim, "no pre-overload load with all three regimes")
    far, rows = [], []
    for q in pre:
        o, x, y = (mean_us(runs[(p, q)]) for p in (OFF, IXGBE, LINEAR))
        bound = CLOSE_GAP_FRACTION * max(x - o, 0.0) + CLOSE_SLACK_US
        if not (y - o <= bound):
            far.append(q)
        rows.append(f"{_m(q)}: {f1(y)}/{f1(o)}/{f1(x)}")
    ratios = [mean_us(runs[(LINEAR, q)]) / mean_us(runs[(OFF, q)]) for q in pre if mean_us(runs[(OFF, q)]) > 0]
    ratios = [x for x in ratios if not math.isnan(x)] or [math.nan]
    ok = not far
    text = (
        f"close = linear's latency at most {CLOSE_GAP_FRACTION:.0%} of the way from no ITR's to ixgbe's + "
        f"{CLOSE_SLACK_US:g} µs; {len(pre) - len(far)} of {len(pre)} pre-overload loads are"
        + (f", not {', '.join(mpps(q) for q in far)}" if far else "")
        + f"; linear/no-ITR latency x{f1(min(ratios))} to x{f1(max(ratios))}; linear/no ITR/ixgbe µs at {'; '.join(rows)}"
    )
    return ShapeCheck(claim, ok, part("a", ok, text), "C11")


@claim(
    "C12",
    "Our algorithm then exhibits a higher CPU utilization (§V-E) ... [no ITR] is also the worst-case for CPU "
    "utilization due to the overhead of interrupt processing (§IV-A)",
    tolerance="BETWEEN_SLACK_PT",
    status=PREDICTION,
)
def c12_linear_cpu_between(runs: Runs, *, claim: str) -> ShapeCheck:
    """C12: at every pre-overload load, ixgbe's CPU load <= the linear
    ITR's <= no ITR's, give or take :data:`BETWEEN_SLACK_PT` points."""
    pre = pre_overload(runs, OFF, IXGBE, LINEAR)
    if not pre:
        return _missing("C12", claim, "no pre-overload load with all three regimes")
    outside, rows = [], []
    for q in pre:
        o, x, y = (busy(runs[(p, q)]) for p in (OFF, IXGBE, LINEAR))
        if not (x - BETWEEN_SLACK_PT <= y <= o + BETWEEN_SLACK_PT):
            outside.append(q)
        rows.append(f"{_m(q)}: {f1(x)}/{f1(y)}/{f1(o)}")
    ok = not outside
    return ShapeCheck(claim, ok, part("a", ok, (
        f"ixgbe <= linear <= no ITR (± {BETWEEN_SLACK_PT:g} pt) at {len(pre) - len(outside)} of {len(pre)} "
        "pre-overload loads" + (f", not at {', '.join(mpps(q) for q in outside)}" if outside else "")
        + f"; CPU % ixgbe/linear/no ITR at {'; '.join(rows)}"
    )), "C12")


@claim(
    "C13",
    "Our algorithm shows a significant improvement, especially for medium packet loads. There is no trade-off "
    "decision to be made at low and high loads",
    tolerance="PAPER_LOW_PPS, SIGNIFICANT_FRACTION, CONVERGE_TOLERANCE",
    status=PREDICTION,
)
def c13_load_latency_product(runs: Runs, *, claim: str) -> ShapeCheck:
    """C13: with low = loads below 0.1 Mpps, high = polling-dominated loads
    (from the no-ITR runs in ``runs``) and medium = the pre-overload loads
    between: (a) the linear ITR's P_ll is below ixgbe's at every medium load;
    (b) the largest difference ixgbe − linear over all pre-overload loads
    is at a medium load and at least :data:`SIGNIFICANT_FRACTION` of ixgbe's
    P_ll there; (c) at low and high loads the two are within
    :data:`CONVERGE_TOLERANCE` of ixgbe's."""
    # Overload as no ITR's (the ITRs do not move it, C8): Figure 7's grid
    # stops at 2.1 Mpps, where neither ITR run has dropped yet.
    pre = pre_overload(runs, IXGBE, LINEAR, OFF)
    polling = set(polling_dominated(runs))
    if not pre or not polling:
        return _missing("C13", claim, "no pre-overload load with both ITRs, or no polling-dominated load (needs no-ITR runs)")
    x = {q: pll(runs[(IXGBE, q)]) for q in pre}
    y = {q: pll(runs[(LINEAR, q)]) for q in pre}
    if any(math.isnan(v) for v in (*x.values(), *y.values())):
        return _missing("C13", claim, "a run without latency")
    low = [q for q in pre if q < PAPER_LOW_PPS]
    high = [q for q in pre if q in polling]
    medium = [q for q in pre if q >= PAPER_LOW_PPS and q not in polling]
    if not medium:
        return _missing("C13", claim, "no medium load")
    worse = [q for q in medium if not y[q] < x[q]]
    a = part("a", not worse, f"linear below ixgbe at {len(medium) - len(worse)} of {len(medium)} medium loads "
             f"({mpps(medium[0])}-{mpps(medium[-1])})" + (f", not at {', '.join(mpps(q) for q in worse)}" if worse else ""))
    best = max(pre, key=lambda q: x[q] - y[q])
    gain = x[best] - y[best]
    ok_b = best in medium and gain >= SIGNIFICANT_FRACTION * x[best]
    b = part("b", ok_b, f"largest difference {kilo(gain)} cycle·µs ({_ratio(100 * gain, x[best])} % of ixgbe's {kilo(x[best])}) "
             f"at {mpps(best)}, {'a medium' if best in medium else 'not a medium'} load (needs >= {SIGNIFICANT_FRACTION:.0%})")
    ends = low + high
    apart = [q for q in ends if not abs(x[q] - y[q]) <= CONVERGE_TOLERANCE * x[q]]
    values = ", ".join(f"{_m(q)}: {kilo(x[q])}/{kilo(y[q])} ({_ratio(100 * (y[q] - x[q]), x[q], '{:+.0f}')} %)" for q in ends)
    c = part("c", bool(ends) and not apart, "ixgbe/linear at low and high loads " + (values or "—")
             + f" (needs within {CONVERGE_TOLERANCE:.0%}; high = polling-dominated)")
    return ShapeCheck(claim, not worse and ok_b and bool(ends) and not apart, f"{a}; {b}; {c}", "C13")


def checks(fig3: Runs, fig5: Runs, fig8: Runs, fig7: Runs, fitted: str = "") -> list[ShapeCheck]:
    """C1–C13, each on its figure's runs (C13 on Figure 7's with Figure 3's
    no-ITR runs for the polling-dominated loads); ``fitted`` is said in C4's
    detail."""
    with_off = {**{k: v for k, v in fig3.items() if k[0] == OFF}, **fig7}
    return [
        c1_cpu_linear(fig3),
        c2_irq_peak(fig3),
        c3_latency_lowest_at_full_cpu(fig3),
        c4_overload_point(fig3, fitted),
        c5_overload_latency(fig3),
        c6_ixgbe_plateau(fig5),
        c7_ixgbe_drop_before_overload(fig5),
        c8_same_max_throughput(fig5),
        c9_ixgbe_cpu(fig5),
        c10_same_below_100k(fig8),
        c11_linear_latency_close(fig8),
        c12_linear_cpu_between(fig8),
        c13_load_latency_product(with_off),
    ]


#: Each claim as declared beside its check, in order.
CLAIMS = declared((
    c1_cpu_linear,
    c2_irq_peak,
    c3_latency_lowest_at_full_cpu,
    c4_overload_point,
    c5_overload_latency,
    c6_ixgbe_plateau,
    c7_ixgbe_drop_before_overload,
    c8_same_max_throughput,
    c9_ixgbe_cpu,
    c10_same_below_100k,
    c11_linear_latency_close,
    c12_linear_cpu_between,
    c13_load_latency_product,
))
