"""Out of sample: each profile of Table 4.1 predicted by a fit that never saw it.

``tools/calibrate.py --leave-one-out`` fits the cost constants on three of
Table 4.1's four profiles and predicts the fourth, for each profile in turn;
its result is kept in ``scenarios/thesis/calibration-loo.json`` (the fits
take about an hour, too long for a reproduction). The reproduction re-runs
each held-out profile with the constants of the fit that left it out, at
Table 4.1's duration and with the seed of Table 4.1's own run of that
profile, so the only difference from Table 4.1 is the constants; it writes
the predictions to ``OUT/leave-one-out/predictions.json`` and reports each
error against the thesis.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import irqlab
from irqlab.files import write_whole
from irqlab.summary import Summary

#: The leave-one-out fits, beside the thesis scenario.
LOO_FILE = "calibration-loo.json"
#: Where a reproduction writes its predictions (under its output directory).
LOO_DIR = "leave-one-out"
PREDICTIONS = "predictions.json"

#: The error measures, in the order the reports print them.
ERRORS = ("qps_pct", "cycles_per_query_pct", "user_pt", "system_pt", "softirq_pt")


@dataclass(frozen=True)
class HoldoutFit:
    """One leave-one-out fit of ``tools/calibrate.py``."""

    holdout: str
    fitted_on: tuple[str, ...]
    overrides: tuple[str, ...]
    #: The fit's errors on the profiles it was fitted on (at the fit's own
    #: duration), keyed by profile then by :data:`ERRORS`.
    in_sample: dict[str, dict[str, float]]


@dataclass(frozen=True)
class HoldoutPrediction:
    fit: HoldoutFit
    summary: Summary
    #: The prediction's errors against Table 4.1 (:data:`ERRORS`).
    errors: dict[str, float]


def load_fits(path: Path) -> tuple[list[HoldoutFit], dict[str, Any]]:
    """The fits in ``path`` (``calibrate.py --leave-one-out --out``) and how
    they were made; a file of another shape is a ``ValueError`` naming it."""
    try:
        data = json.loads(path.read_text())
        fits = [
            HoldoutFit(
                holdout=str(f["holdout"][0]),
                fitted_on=tuple(map(str, f["fitted_on"])),
                overrides=tuple(map(str, f["overrides"])),
                in_sample={p: {k: float(e[k]) for k in ERRORS} for p, e in f["errors"].items() if p in f["fitted_on"]},
            )
            for f in data["leave_one_out"]
        ]
    except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
        raise ValueError(f"{path}: not a leave-one-out result of tools/calibrate.py ({e})") from None
    return fits, dict(data.get("procedure") or {})


def errors(summary: Summary, published: dict[str, float]) -> dict[str, float]:
    """QPS and cycles per query in %, CPU shares in points (softirq + hard
    IRQ, as the thesis reports no separate IRQ column), as calibrate.py."""
    c = summary.cpu_pct
    e = {
        "qps_pct": 100.0 * (summary.throughput_qps / published["qps"] - 1.0),
        "cycles_per_query_pct": 100.0 * (summary.cycles_per_query / published["cycles_per_query"] - 1.0),
        "user_pt": c.user - published["user"],
        "system_pt": c.system - published["system"],
        "softirq_pt": c.softirq + c.irq - published["softirq"],
    }
    ipc = getattr(summary, "ipc", None)  # under the disruption model only
    if ipc is not None and "ipc" in published:
        e["ipc_pct"] = 100.0 * (ipc / published["ipc"] - 1.0)
    return e


def predict(
    fits: list[HoldoutFit],
    scenario: Path,
    table: dict[str, dict[str, float]],
    seeds: dict[str, int],
    duration_s: float,
    jobs: Optional[int] = None,
    overrides: tuple[str, ...] = (),
) -> list[HoldoutPrediction]:
    """Run each fit's held-out profile with the fit's constants (after the
    reproduction's own ``overrides``), with ``seeds[profile]``, on ``jobs``
    threads (default: every core, as a sweep)."""

    def one(f: HoldoutFit) -> HoldoutPrediction:
        s = irqlab.run(
            str(scenario), profile=f.holdout, overrides=list(overrides) + list(f.overrides),
            seed=seeds.get(f.holdout), duration_s=duration_s,
        )
        return HoldoutPrediction(f, s, errors(s, table[f.holdout]))

    from irqlab.study.executor import default_jobs

    with cf.ThreadPoolExecutor(jobs or default_jobs()) as ex:
        return list(ex.map(one, fits))


def save(predictions: list[HoldoutPrediction], procedure: dict[str, Any], directory: Path) -> Path:
    """Write the predictions where :func:`read` finds them."""
    directory.mkdir(parents=True, exist_ok=True)
    doc = {
        "procedure": procedure,
        "predictions": [
            {
                "holdout": p.fit.holdout,
                "fitted_on": list(p.fit.fitted_on),
                "overrides": list(p.fit.overrides),
                "in_sample": p.fit.in_sample,
                "summary": p.summary.to_dict(),
                "errors": p.errors,
            }
            for p in predictions
        ],
    }
    path = directory / PREDICTIONS
    text = json.dumps(doc, indent=2) + "\n"
    write_whole(path, lambda tmp: tmp.write_text(text))
    return path


def read(directory: Path) -> tuple[list[HoldoutPrediction], dict[str, Any]]:
    """What :func:`save` wrote, or nothing when there is no such file."""
    path = directory / PREDICTIONS
    if not path.is_file():
        return [], {}
    doc = json.loads(path.read_text())
    out = []
    for d in doc["predictions"]:
        fit = HoldoutFit(d["holdout"], tuple(d["fitted_on"]), tuple(d["overrides"]), d["in_sample"])
        out.append(HoldoutPrediction(fit, Summary(d["summary"]), {k: float(v) for k, v in d["errors"].items()}))
    return out, dict(doc.get("procedure") or {})


def in_sample_qps(p: HoldoutPrediction) -> str:
    """The fit's in-sample QPS errors, ``-0.3 / +0.4 / +0.1 % (ad / is / bw)``."""
    short = {"no-coalescing": "nc", "adaptive-coalescing": "ad", "irq-suspend": "is", "busy-wait": "bw"}
    names = [n for n in p.fit.fitted_on if n in p.fit.in_sample]
    values = " / ".join(f"{p.fit.in_sample[n]['qps_pct']:+.1f}" for n in names)
    return f"{values} % ({' / '.join(short.get(n, n) for n in names)})"


def text_table(predictions: list[HoldoutPrediction]) -> str:
    """The predictions as an aligned text table."""
    ipc = any("ipc_pct" in p.errors for p in predictions)
    head = (
        f"{'held out':<22}{'QPS':>12}{'error':>9}{'cyc/query':>11}{'user':>8}{'system':>8}{'softirq':>9}"
        + (f"{'IPC':>8}" if ipc else "") + "  in-sample QPS errors"
    )
    lines = [head]
    for p in predictions:
        e = p.errors
        ipc_cell = f"{e['ipc_pct']:>+7.1f}%" if "ipc_pct" in e else f"{'—':>8}"
        lines.append(
            f"{p.fit.holdout:<22}{p.summary.throughput_qps / 1e3:>11.1f}k{e['qps_pct']:>+8.1f}%{e['cycles_per_query_pct']:>+10.1f}%"
            f"{e['user_pt']:>+6.1f}pt{e['system_pt']:>+6.1f}pt{e['softirq_pt']:>+7.1f}pt"
            + (ipc_cell if ipc else "") + f"  {in_sample_qps(p)}"
        )
    return "\n".join(lines)


def worst_qps_error_pct(predictions: list[HoldoutPrediction]) -> float:
    """The largest held-out QPS error in absolute value (NaN without predictions)."""
    return max((abs(p.errors["qps_pct"]) for p in predictions), default=math.nan)
