"""The IAPS paper's claims (Helbig & Kim, ICOIN 2025, §IV), each checked on
simulated runs: D1–D10.

Every check takes the runs' means per (steering scheme, connections)
(:data:`Table`, built by :func:`irqlab.reproduce.iaps.table`) and returns a
:class:`~irqlab.reproduce.claim.ShapeCheck` with the paper's sentence,
whether it holds and the numbers measured. The tolerances are this
module's constants, chosen from the paper's wording and written into each
detail; they are not adjusted to what the simulation gives. A claim whose
numbers are missing does not hold, and its detail says what was missing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from irqlab.reproduce.claim import FIT, PREDICTION, ShapeCheck, claim, declared

RSS, RPS, RFS, IAPS = "rss", "rps", "rfs", "iaps"
SOFTWARE = (RPS, RFS, IAPS)
NAMES = {RSS: "RSS", RPS: "RPS", RFS: "RFS", IAPS: "IAPS"}

# -- the paper's numbers ---------------------------------------------------------

#: §IV-B: the software schemes and RSS saturate/peak at four connections.
PEAK_CONNECTIONS = 4
#: §IV-B: "above 50 Gbps up to 16 connections"; RPS and RFS "drop below 50
#: Gbps at eight and 16 connections, respectively".
LINE_GBPS = 50.0
IAPS_HOLDS_UP_TO = 16
RPS_BELOW_AT = 8
RFS_BELOW_AT = 16
#: §IV-B: at 32 connections IAPS is 4.3 % above RPS and 4.2 % above RFS.
PAPER_GAIN_PCT = {RPS: 4.3, RFS: 4.2}
#: §IV-B: "near 4x as many packets per IPI" at 32 connections.
PAPER_PPI_RATIO = 4.0
MOST_CONNECTIONS = 32

# -- tolerances ---------------------------------------------------------------------

#: "Peak at four": the throughput at four connections within this fraction
#: of the scheme's highest (10 seeds' means differ by about this much when
#: nothing changes).
PEAK_TOLERANCE = 0.01
#: "Declining" after the peak: the throughput at 32 below that at four by
#: more than this fraction.
DECLINE_MIN = 0.01
#: RSS's "steady throughput" from 4 to 32 connections: within this fraction.
STEADY_TOLERANCE = 0.02
#: "Spike": the first connection count whose drops reach this fraction of
#: the scheme's most.
SPIKE_FRACTION = 0.25
#: "By a few percent" (the issue's words for 4.3 % and 4.2 %): a gain from
#: 1 % to 10 %.
GAIN_RANGE_PCT = (1.0, 10.0)
#: "Near 4x": from 3x to 5x.
PPI_RATIO_RANGE = (3.0, 5.0)
#: A share "decreases" / "increases" from one count to the next unless it
#: moves against the trend by more than this many points; "plateaus": stays
#: within this many points of the value at eight connections.
TREND_SLACK_PT = 2.0
PLATEAU_PT = 5.0


@dataclass(frozen=True)
class Point:
    """One (scheme, connections) point: the means over its seeds."""

    gbps: float
    #: Packets dropped anywhere (ring, backlog, socket) in the measured time.
    drops: float
    ring_drops: float
    backlog_drops: float
    packets_per_ipi: float
    ipis_per_s: float
    frames_per_gro_packet: float
    #: IAPS's decision shares, percent (NaN for other schemes).
    previous_busy_pct: float = math.nan
    new_busy_pct: float = math.nan
    no_busy_pct: float = math.nan
    #: The interrupt core's busy share (core 0), percent.
    core0_busy_pct: float = math.nan
    seeds: int = 1


#: Means per (scheme, connections).
Table = Mapping[tuple[str, int], Point]


def connections(t: Table, scheme: str) -> list[int]:
    return sorted(n for (s, n) in t if s == scheme)


def _g(x: float) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.1f}"


def _series(t: Table, scheme: str, attr: str, fmt: str = "{:.1f}") -> str:
    return ", ".join(f"{n}: {fmt.format(getattr(t[(scheme, n)], attr))}" for n in connections(t, scheme))


def _missing(id_: str, claim: str, what: str) -> ShapeCheck:
    return ShapeCheck(claim=claim, holds=False, detail=f"cannot be checked: {what}", id=id_)


def _have(t: Table, scheme: str, ns: Sequence[int]) -> Optional[str]:
    absent = [n for n in ns if (scheme, n) not in t]
    return f"no {NAMES.get(scheme, scheme)} run at {absent} connections" if absent else None


@claim(
    "D1",
    "All of the software-based algorithms also reach their peak at four connections, after which they start declining.",
    tolerance="PEAK_CONNECTIONS, MOST_CONNECTIONS, PEAK_TOLERANCE, DECLINE_MIN",
    status=PREDICTION,
)
def d1_software_peak_at_four(t: Table, *, claim: str) -> ShapeCheck:
    parts, ok = [], True
    for s in SOFTWARE:
        ns = connections(t, s)
        if PEAK_CONNECTIONS not in ns or MOST_CONNECTIONS not in ns:
            return _missing("D1", claim, f"{NAMES[s]} needs runs at 4 and 32 connections")
        top = max(t[(s, n)].gbps for n in ns)
        at4 = t[(s, PEAK_CONNECTIONS)].gbps
        at32 = t[(s, MOST_CONNECTIONS)].gbps
        peak = at4 >= (1 - PEAK_TOLERANCE) * top
        after = [t[(s, n)].gbps for n in ns if n > PEAK_CONNECTIONS]
        declines = at32 < (1 - DECLINE_MIN) * at4 and all(x <= at4 * (1 + PEAK_TOLERANCE) for x in after)
        ok &= peak and declines
        parts.append(
            f"{NAMES[s]} {'peaks' if peak else 'does not peak'} at 4 (highest {top:.1f}, at 4 {at4:.1f} Gbit/s) and "
            f"{'declines' if declines else 'does not decline'} to {at32:.1f} at 32"
        )
    detail = "; ".join(parts) + (
        f". Peak: within {PEAK_TOLERANCE:.0%} of the highest; decline: 32 below 4 by more than {DECLINE_MIN:.0%}, "
        f"no count above 4 higher than 4 by more than {PEAK_TOLERANCE:.0%}."
    )
    return ShapeCheck(claim=claim, holds=ok, detail=detail, id="D1")


@claim(
    "D2",
    "RSS reaches a saturation point at four connections and maintains a steady throughput even as connections increase to 32.",
    tolerance="PEAK_CONNECTIONS, MOST_CONNECTIONS, PEAK_TOLERANCE, STEADY_TOLERANCE",
    status=PREDICTION,
)
def d2_rss_steady(t: Table, *, claim: str) -> ShapeCheck:
    ns = connections(t, RSS)
    if PEAK_CONNECTIONS not in ns or MOST_CONNECTIONS not in ns:
        return _missing("D2", claim, "RSS needs runs at 4 and 32 connections")
    top = max(t[(RSS, n)].gbps for n in ns)
    tail = [t[(RSS, n)].gbps for n in ns if n >= PEAK_CONNECTIONS]
    saturated = t[(RSS, PEAK_CONNECTIONS)].gbps >= (1 - PEAK_TOLERANCE) * top
    steady = min(tail) >= (1 - STEADY_TOLERANCE) * max(tail)
    detail = (
        f"RSS: {_series(t, RSS, 'gbps')} Gbit/s; at 4 {'within' if saturated else 'not within'} {PEAK_TOLERANCE:.0%} "
        f"of its highest ({top:.1f}); from 4 to 32 {'steady' if steady else 'not steady'} "
        f"({min(tail):.1f}-{max(tail):.1f}, tolerance {STEADY_TOLERANCE:.0%})."
    )
    return ShapeCheck(claim=claim, holds=saturated and steady, detail=detail, id="D2")


def _software_at_most(t: Table) -> Optional[str]:
    """Why the software schemes' runs at the most connections are missing, if they are."""
    return next((w for s in SOFTWARE if (w := _have(t, s, (MOST_CONNECTIONS,))) is not None), None)


def _first_below(t: Table, s: str, line: float) -> Optional[int]:
    return next((n for n in connections(t, s) if n >= PEAK_CONNECTIONS and t[(s, n)].gbps < line), None)


@claim(
    "D3",
    "IAPS maintains a throughput of above 50 Gbps up to 16 connections, as opposed to RPS or RFS, which drop "
    "below 50 Gbps at eight and 16 connections, respectively.",
    tolerance="LINE_GBPS, RPS_BELOW_AT, RFS_BELOW_AT, PEAK_CONNECTIONS, IAPS_HOLDS_UP_TO",
    status=FIT,
)
def d3_iaps_holds_50(t: Table, *, claim: str) -> ShapeCheck:
    for s, ns in ((IAPS, (4, 8, 16)), (RPS, (4, 8)), (RFS, (4, 8, 16))):
        if (why := _have(t, s, ns)) is not None:
            return _missing("D3", claim, why)
    iaps_ok = all(t[(IAPS, n)].gbps > LINE_GBPS for n in connections(t, IAPS) if PEAK_CONNECTIONS <= n <= IAPS_HOLDS_UP_TO)
    rps_at, rfs_at = _first_below(t, RPS, LINE_GBPS), _first_below(t, RFS, LINE_GBPS)
    ok = iaps_ok and rps_at == RPS_BELOW_AT and rfs_at == RFS_BELOW_AT
    detail = (
        f"IAPS {'stays above' if iaps_ok else 'does not stay above'} 50 Gbit/s from 4 to 16 connections "
        f"({_series(t, IAPS, 'gbps')}); RPS first below 50 at {rps_at} (paper 8), RFS at {rfs_at} (paper 16); "
        f"RPS {_series(t, RPS, 'gbps')}; RFS {_series(t, RFS, 'gbps')}."
    )
    return ShapeCheck(claim=claim, holds=ok, detail=detail, id="D3")


def _spike(t: Table, s: str) -> Optional[int]:
    ns = connections(t, s)
    most = max((t[(s, n)].drops for n in ns), default=0.0)
    if most <= 0:
        return None
    return next(n for n in ns if t[(s, n)].drops >= SPIKE_FRACTION * most)


@claim(
    "D4",
    "IAPS's packet drops spike later than RFS or RPS.",
    tolerance="SPIKE_FRACTION",
    status=PREDICTION,
)
def d4_iaps_drops_spike_later(t: Table, *, claim: str) -> ShapeCheck:
    spikes = {s: _spike(t, s) for s in SOFTWARE}
    if spikes[RPS] is None or spikes[RFS] is None:
        return _missing("D4", claim, f"RPS or RFS dropped nothing (spikes {spikes})")
    later = spikes[IAPS] is None or spikes[IAPS] > max(spikes[RPS], spikes[RFS])
    detail = (
        f"first connection count whose drops reach {SPIKE_FRACTION:.0%} of the scheme's most: RPS {spikes[RPS]}, "
        f"RFS {spikes[RFS]}, IAPS {spikes[IAPS] if spikes[IAPS] is not None else 'never (no drops)'}; drops per run "
        f"(ring + backlog + socket, mean over seeds): RPS {_series(t, RPS, 'drops', '{:.0f}')}; RFS "
        f"{_series(t, RFS, 'drops', '{:.0f}')}; IAPS {_series(t, IAPS, 'drops', '{:.0f}')}."
    )
    return ShapeCheck(claim=claim, holds=later, detail=detail, id="D4")


@claim(
    "D5",
    "At 32 connections, IAPS incurs the highest number of packet drops.",
    tolerance="MOST_CONNECTIONS",
    status=PREDICTION,
)
def d5_iaps_most_drops_at_32(t: Table, *, claim: str) -> ShapeCheck:
    if (why := _software_at_most(t)) is not None:
        return _missing("D5", claim, why)
    d = {s: t[(s, MOST_CONNECTIONS)].drops for s in SOFTWARE}
    ok = d[IAPS] > max(d[RPS], d[RFS])
    detail = f"drops at 32 connections: IAPS {d[IAPS]:.0f}, RPS {d[RPS]:.0f}, RFS {d[RFS]:.0f} (mean per run)."
    return ShapeCheck(claim=claim, holds=ok, detail=detail, id="D5")


@claim(
    "D6",
    "Yet its throughput is still higher than RPS or RFS with an improvement of 4.3% and 4.2%, respectively.",
    tolerance="GAIN_RANGE_PCT",
    status=PREDICTION,
)
def d6_iaps_gain_at_32(t: Table, *, claim: str) -> ShapeCheck:
    if (why := _software_at_most(t)) is not None:
        return _missing("D6", claim, why)
    lo, hi = GAIN_RANGE_PCT
    gains = {s: 100.0 * (t[(IAPS, 32)].gbps / t[(s, 32)].gbps - 1.0) for s in (RPS, RFS)}
    ok = all(lo <= g <= hi for g in gains.values())
    detail = (
        f"at 32 connections IAPS {t[(IAPS, 32)].gbps:.2f} Gbit/s, {gains[RPS]:+.1f} % over RPS "
        f"({t[(RPS, 32)].gbps:.2f}; paper +4.3 %) and {gains[RFS]:+.1f} % over RFS ({t[(RFS, 32)].gbps:.2f}; paper "
        f"+4.2 %); a few percent: {lo:g}-{hi:g} %."
    )
    return ShapeCheck(claim=claim, holds=ok, detail=detail, id="D6")


@claim(
    "D7",
    "For any number of connections except for one, IAPS processes more packets per IPI than RPS or RFS.",
    tolerance="none: the claim's shape alone",
    status=PREDICTION,
)
def d7_more_packets_per_ipi(t: Table, *, claim: str) -> ShapeCheck:
    ns = [n for n in connections(t, IAPS) if (RPS, n) in t and (RFS, n) in t]
    if len(ns) < 2:
        return _missing("D7", claim, "fewer than two connection counts with all three schemes")
    worse = [n for n in ns if t[(IAPS, n)].packets_per_ipi <= max(t[(RPS, n)].packets_per_ipi, t[(RFS, n)].packets_per_ipi)]
    ok = len(worse) <= 1
    detail = (
        f"IAPS not above both at {worse or 'no count'} (at most one allowed); packets per IPI: IAPS "
        f"{_series(t, IAPS, 'packets_per_ipi')}; RPS {_series(t, RPS, 'packets_per_ipi')}; RFS "
        f"{_series(t, RFS, 'packets_per_ipi')}."
    )
    return ShapeCheck(claim=claim, holds=ok, detail=detail, id="D7")


@claim(
    "D8",
    "At its maximum at 32 connections, it processes near 4x as many packets per IPI as the other schemes.",
    tolerance="PPI_RATIO_RANGE, PEAK_TOLERANCE",
    status=PREDICTION,
)
def d8_near_4x_at_32(t: Table, *, claim: str) -> ShapeCheck:
    if (why := _software_at_most(t)) is not None:
        return _missing("D8", claim, why)
    lo, hi = PPI_RATIO_RANGE
    ppi = {s: t[(s, 32)].packets_per_ipi for s in SOFTWARE}
    top = max(t[(IAPS, n)].packets_per_ipi for n in connections(t, IAPS))
    at_max = ppi[IAPS] >= (1 - PEAK_TOLERANCE) * top
    ratios = {s: ppi[IAPS] / ppi[s] if ppi[s] > 0 else math.inf for s in (RPS, RFS)}
    near = all(lo <= r <= hi for r in ratios.values())
    detail = (
        f"IAPS's packets per IPI at 32: {ppi[IAPS]:.1f} ({'its maximum' if at_max else f'not its maximum, {top:.1f}'}), "
        f"{ratios[RPS]:.1f}x RPS's ({ppi[RPS]:.1f}) and {ratios[RFS]:.1f}x RFS's ({ppi[RFS]:.1f}); near 4x: {lo:g}-{hi:g}x."
    )
    return ShapeCheck(claim=claim, holds=at_max and near, detail=detail, id="D8")


def _trend(values: list[float], rising: bool) -> bool:
    sign = 1.0 if rising else -1.0
    return all(sign * (b - a) >= -TREND_SLACK_PT for a, b in zip(values, values[1:])) and sign * (values[-1] - values[0]) > TREND_SLACK_PT


@claim(
    "D9",
    "As server load increases, the likelihood of finding a new busy core increases, while the likelihood of "
    "finding no busy core or finding the previous core still busy decreases.",
    tolerance="TREND_SLACK_PT",
    status=PREDICTION,
)
def d9_case_trends(t: Table, *, claim: str) -> ShapeCheck:
    ns = connections(t, IAPS)
    if len(ns) < 2 or any(math.isnan(t[(IAPS, n)].new_busy_pct) for n in ns):
        return _missing("D9", claim, "IAPS decision shares at two connection counts or more")
    c1 = [t[(IAPS, n)].previous_busy_pct for n in ns]
    c2 = [t[(IAPS, n)].new_busy_pct for n in ns]
    c3 = [t[(IAPS, n)].no_busy_pct for n in ns]
    up2, down3, down1 = _trend(c2, True), _trend(c3, False), c1[-1] < c1[0] - TREND_SLACK_PT
    detail = (
        f"new busy core {'rises' if up2 else 'does not rise'} ({_series(t, IAPS, 'new_busy_pct')} %); no busy core "
        f"{'falls' if down3 else 'does not fall'} ({_series(t, IAPS, 'no_busy_pct')} %); previous core busy "
        f"{'falls' if down1 else 'does not fall'} from {c1[0]:.1f} to {c1[-1]:.1f} % "
        f"({_series(t, IAPS, 'previous_busy_pct')} %). A trend allows {TREND_SLACK_PT:g} points against it per step."
    )
    return ShapeCheck(claim=claim, holds=up2 and down3 and down1, detail=detail, id="D9")


@claim(
    "D10",
    "The percentage of case 1 declines until eight connections and plateaus afterward, while case 3 steadily "
    "decreases as connections increase.",
    tolerance="PLATEAU_PT",
    status=PREDICTION,
)
def d10_case_shapes(t: Table, *, claim: str) -> ShapeCheck:
    ns = connections(t, IAPS)
    if 8 not in ns or len([n for n in ns if n > 8]) < 1 or any(math.isnan(t[(IAPS, n)].previous_busy_pct) for n in ns):
        return _missing("D10", claim, "IAPS decision shares up to 8 connections and beyond")
    upto = [t[(IAPS, n)].previous_busy_pct for n in ns if n <= 8]
    after = [t[(IAPS, n)].previous_busy_pct for n in ns if n >= 8]
    declines = _trend(upto, False)
    plateau = max(after) - min(after) <= PLATEAU_PT
    c3 = [t[(IAPS, n)].no_busy_pct for n in ns]
    steady = all(b < a for a, b in zip(c3, c3[1:]))
    detail = (
        f"case 1 {'declines' if declines else 'does not decline'} up to 8 connections and "
        f"{'plateaus' if plateau else 'does not plateau'} after (within {PLATEAU_PT:g} points: {min(after):.1f}-"
        f"{max(after):.1f} %): {_series(t, IAPS, 'previous_busy_pct')} %; case 3 "
        f"{'decreases at every step' if steady else 'does not decrease at every step'}: {_series(t, IAPS, 'no_busy_pct')} %."
    )
    return ShapeCheck(claim=claim, holds=declines and plateau and steady, detail=detail, id="D10")


CHECKS = (
    d1_software_peak_at_four, d2_rss_steady, d3_iaps_holds_50, d4_iaps_drops_spike_later, d5_iaps_most_drops_at_32,
    d6_iaps_gain_at_32, d7_more_packets_per_ipi, d8_near_4x_at_32, d9_case_trends, d10_case_shapes,
)


def all_checks(t: Table) -> list[ShapeCheck]:
    """D1–D10 on ``t``."""
    return [check(t) for check in CHECKS]


#: Each claim as declared beside its check, in order.
CLAIMS = declared(CHECKS)
