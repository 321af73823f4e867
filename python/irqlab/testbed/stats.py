"""What the testbed's repeated measurements say: medians with their spread
per profile and phase, and throughput ratios between profiles with
confidence intervals.

A ratio is taken within each repeat (the profiles of one repeat ran minutes
apart, in a rotated order), then summarised over the repeats as the
geometric mean with a Student-t interval on the logarithms: the ratio of two
throughputs is the natural unit, and its logarithm is symmetric in the two
profiles. Two profiles whose interval includes 1 are a tie.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Optional, Sequence

#: Confidence of the ratio intervals.
CONFIDENCE = 0.95

#: With one repeat there is no interval: throughputs within this fraction of
#: each other are then a tie.
TIE_FRACTION = 0.01

_CORE_KEYS = ("user", "system", "softirq", "irq", "idle", "net_rx_per_s", "napi_wakeups_per_s", "napi_thread_pct",
              "ipis_per_s", "app_sleeps_per_s", "app_preemptions_per_s", "app_background_wakeups_per_s",
              "app_background_cpu_pct")


def _ok(runs: Sequence[dict[str, Any]], profile: str, phase: str) -> list[dict[str, Any]]:
    return [r for r in runs if r["profile"] == profile and r["phase"] == phase]


def phase_summary(rs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Medians (and min/max) of one profile's runs of one phase, in the
    shape of one run (``loadgen`` and ``server_core``), plus per-request
    figures: NET_RX softirqs (the client's receive) and NAPI-thread
    wake-ups."""
    if not rs:
        return {}
    med = lambda xs: statistics.median(xs)  # noqa: E731
    qps = [r["loadgen"]["achieved_qps"] for r in rs]
    core = {k: med([r["server_core"].get(k, 0.0) for r in rs]) for k in _CORE_KEYS}
    # Measurements from before the exact clocks were read have no busy_exact.
    if all("busy_exact" in r["server_core"] for r in rs):
        core["busy_exact"] = med([r["server_core"]["busy_exact"] for r in rs])
    client = {k: med([r.get("client_core", {}).get(k, 0.0) for r in rs]) for k in ("user", "system", "softirq", "idle", "ipis_per_s")}
    per_req = lambda key: [r["server_core"].get(key, 0.0) / max(r["loadgen"]["achieved_qps"], 1e-9) for r in rs]  # noqa: E731
    return {
        "n": len(rs),
        "flagged": sum(1 for r in rs if r.get("flagged")),
        "loadgen": {
            "achieved_qps": med(qps),
            "latency_us": {q: med([r["loadgen"]["latency_us"][q] for r in rs]) for q in ("p50", "p95", "p99")
                           if all(q in r["loadgen"]["latency_us"] for r in rs)},
        },
        "server_core": core,
        "client_core": client,
        "per_request": {
            "napi_wakeups": med(per_req("napi_wakeups_per_s")),
            "net_rx": med(per_req("net_rx_per_s")),
            "server_ipis": med(per_req("ipis_per_s")),
            "app_preemptions": med(per_req("app_preemptions_per_s")),
            "app_sleeps": med(per_req("app_sleeps_per_s")),
        },
        "spread": {"achieved_qps": [min(qps), max(qps)]},
    }


def per_profile(runs: Sequence[dict[str, Any]], profiles: Sequence[str]) -> list[dict[str, Any]]:
    """One entry per profile measured: ``{"profile", "closed", "low", "medium"}``."""
    out = []
    for p in profiles:
        phases = {ph: phase_summary(_ok(runs, p, ph)) for ph in ("closed", "low", "medium")}
        if any(phases.values()):
            out.append({"profile": p, **phases})
    return out


def ratio(runs: Sequence[dict[str, Any]], a: str, b: str, phase: str = "closed") -> Optional[dict[str, float]]:
    """Throughput of ``a`` over ``b``, paired by repeat: ``{"ratio", "low",
    "high", "n"}`` (``low``/``high`` NaN with one repeat), or None when no
    repeat measured both."""
    qa = {r["repeat"]: r["loadgen"]["achieved_qps"] for r in _ok(runs, a, phase)}
    qb = {r["repeat"]: r["loadgen"]["achieved_qps"] for r in _ok(runs, b, phase)}
    logs = [math.log(qa[k] / qb[k]) for k in sorted(qa.keys() & qb.keys()) if qa[k] > 0 and qb[k] > 0]
    if not logs:
        return None
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return {"ratio": math.exp(mean), "low": math.nan, "high": math.nan, "n": 1}
    from scipy import stats

    half = stats.t.ppf(0.5 + CONFIDENCE / 2, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return {"ratio": math.exp(mean), "low": math.exp(mean - half), "high": math.exp(mean + half), "n": len(logs)}


def is_tie(r: dict[str, float]) -> bool:
    """The two throughputs are not told apart: the interval includes 1 (or,
    with one repeat, the ratio is within :data:`TIE_FRACTION` of 1)."""
    if r["n"] < 2 or math.isnan(r["low"]):
        return abs(r["ratio"] - 1) <= TIE_FRACTION
    return r["low"] <= 1.0 <= r["high"]


def ranked_measured(runs: Sequence[dict[str, Any]], profiles: Sequence[str], phase: str = "closed") -> list[list[str]]:
    """The profiles from the lowest median throughput up, each joined to the
    previous one's group when the two are a tie (:func:`is_tie`)."""
    med = {p: statistics.median([r["loadgen"]["achieved_qps"] for r in _ok(runs, p, phase)])
           for p in profiles if _ok(runs, p, phase)}
    groups: list[list[str]] = []
    prev = None
    for p in sorted(med, key=lambda n: (med[n], n)):
        r = ratio(runs, p, prev, phase) if prev is not None else None
        if groups and r is not None and is_tie(r):
            groups[-1].append(p)
        else:
            groups.append([p])
        prev = p
    return groups


def ratio_text(r: Optional[dict[str, float]]) -> str:
    """``1.45 (1.41–1.50)``, or ``1.45`` with one repeat."""
    if r is None:
        return "n/a"
    if r["n"] < 2 or math.isnan(r["low"]):
        return f"{r['ratio']:.3f}"
    return f"{r['ratio']:.3f} ({r['low']:.3f}–{r['high']:.3f}, {CONFIDENCE:.0%} CI, {r['n']} repeats)"
