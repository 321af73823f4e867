"""Text, CSV, JSON and Markdown output of ``irqlab reproduce thesis``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from irqlab.reproduce.thesis import (
    CAI_KARSTEN_CAVEATS,
    PROFILES,
    TABLE_4_1,
    ShapeCheck,
    ThesisResult,
    cai_karsten_rows,
    explanation_rows,
    figure_4_1_rows,
    latency,
    table_4_1_rows,
)

METRIC_LABEL = {
    "qps": "QPS",
    "cycles_per_query": "cycles/query",
    "user": "user %",
    "system": "system %",
    "softirq": "softirq %",
}


def table_4_1_text(r: ThesisResult) -> str:
    rows = table_4_1_rows(r)
    lines = [
        "Table 4.1 (closed loop, memcached 8 cores): irqlab vs thesis",
        f"{'profile':<21}{'metric':<14}{'irqlab':>12}{'thesis':>12}{'deviation':>12}",
    ]
    for row in rows:
        fmt = "{:>12,.0f}" if row["metric"] in ("qps", "cycles_per_query") else "{:>12.1f}"
        dev = f"{row['deviation']:+.1f} {row['unit']}"
        lines.append(
            f"{row['profile']:<21}{METRIC_LABEL[str(row['metric'])]:<14}"
            + fmt.format(row["simulated"])
            + fmt.format(row["paper"])
            + f"{dev:>12}"
        )
    return "\n".join(lines)


#: The heading of the Cai & Karsten comparison, in every output.
HOLDOUT_TITLE = "Out of sample: each profile predicted by the fit that left it out"


def holdout_text(r: ThesisResult) -> str:
    """The leave-one-out predictions against Table 4.1 (empty without them)."""
    from irqlab.reproduce import holdout

    if not r.holdout:
        return ""
    proc = r.holdout_procedure
    lines = [
        HOLDOUT_TITLE,
        f"(constants from tools/calibrate.py --leave-one-out, best of {proc.get('starts', '?')} starts, kept in "
        f"scenarios/thesis/{holdout.LOO_FILE}; each run at Table 4.1's duration and seed)",
        holdout.text_table(r.holdout),
        *_wrap(HOLDOUT_NOTE, 100),
    ]
    return "\n".join(lines)


#: What the predictions show, for the reports (docs/calibration.md says more).
HOLDOUT_NOTE = (
    "The polling profiles predict each other and adaptive-coalescing's throughput is predicted, not its CPU split; "
    "no-coalescing is not predicted: its interruption costs are calibrated on it. The all-profile fit stays the "
    "default (docs/calibration.md, \"Out of sample\")."
)


def holdout_rows(r: ThesisResult) -> list[dict[str, object]]:
    """One row per held-out profile: the prediction and its errors."""
    from irqlab.reproduce import holdout

    return [
        {
            "held_out": p.fit.holdout,
            "fitted_on": " ".join(p.fit.fitted_on),
            "qps": p.summary.throughput_qps,
            "thesis_qps": TABLE_4_1[p.fit.holdout]["qps"],
            **{k: p.errors[k] for k in holdout.ERRORS},
            "in_sample_qps_errors": holdout.in_sample_qps(p),
        }
        for p in r.holdout
    ]


CAI_KARSTEN_TITLE = "Cai & Karsten (SIGMETRICS 2024), 8 cores: a prediction, not a fit"


def cai_karsten_text(r: ThesisResult) -> str:
    """Their QPS, the profile each configuration maps to, irqlab's QPS, the
    error, both ratios to each study's own vanilla, and the caveats; empty
    when the study was not run."""
    rows = cai_karsten_rows(r)
    if not rows:
        return ""
    lines = [
        CAI_KARSTEN_TITLE,
        f"{'configuration':<16}{'their QPS':>11}  {'irqlab profile':<21}{'irqlab QPS':>11}{'error':>9}"
        f"{'theirs/vanilla':>16}{'irqlab/vanilla':>16}",
    ]
    for row in rows:
        lines.append(
            f"{row['configuration']:<16}{_qps(row['their_qps']):>11}  {row['profile']:<21}"
            f"{_qps(row['irqlab_qps']):>11}{_pct(row['error_pct']):>9}"
            f"{_ratio(row['their_ratio_to_vanilla']):>16}{_ratio(row['irqlab_ratio_to_vanilla']):>16}"
        )
    lines += ["", *_wrap(CAI_KARSTEN_CAVEATS, 100)]
    return "\n".join(lines)


def _qps(x: object) -> str:
    return "\u2014" if math.isnan(float(x)) else f"{float(x):,.0f}"  # type: ignore[arg-type]


def _pct(x: object) -> str:
    return "\u2014" if math.isnan(float(x)) else f"{float(x):+.1f} %"  # type: ignore[arg-type]


def _ratio(x: object) -> str:
    return "\u2014" if math.isnan(float(x)) else f"{float(x):.3f}"  # type: ignore[arg-type]


def _wrap(text: str, width: int) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width)


def explanation_text(r: ThesisResult) -> str:
    lines = [
        "Why (closed loop, per profile)",
        f"{'profile':<21}{'irqs/s':>10}{'pkts/irq':>10}{'ctx sw/query':>14}{'busy-polled':>13}{'softirqs/s':>12}{'watchdog/s':>12}",
    ]
    for row in explanation_rows(r):
        lines.append(
            f"{row['profile']:<21}{row['irqs_per_s']:>10,.0f}{row['packets_per_irq']:>10.1f}"
            f"{row['context_switches_per_query']:>14.3f}{row['busy_poll_pct']:>12.1f}%"
            f"{row['softirqs_per_s']:>12,.0f}{row['watchdog_fires_per_s']:>12,.0f}"
        )
    return "\n".join(lines)


def figure_4_1_text(r: ThesisResult) -> str:
    lines = [
        "Figure 4.1 (open loop): p95 / p99 latency (µs) and CPU utilisation (%)",
        f"{'offered':>8}  " + "".join(f"{p:>26}" for p in PROFILES),
    ]
    loads = sorted({q for (_, q) in r.open})
    for q in loads:
        cells = []
        for p in PROFILES:
            s = r.open[(p, q)]
            cells.append(f"{_us(latency(s, 'p95'))}/{_us(latency(s, 'p99'))} {100 - s.cpu_pct.idle:>5.1f}%")
        lines.append(f"{q // 1000:>7}k  " + "".join(f"{c:>26}" for c in cells))
    return "\n".join(lines)


def _us(x: float) -> str:
    """A latency in a 7-wide column; ``—`` when the run completed no request."""
    return "\u2014".rjust(7) if math.isnan(x) else f"{x:>7.1f}"


def checks_text(checks: list[ShapeCheck]) -> str:
    lines = ["The thesis's claims, checked on the simulation"]
    for c in checks:
        lines.append(f"  [{'ok' if c.holds else 'NO'}] {c.claim}: {c.detail}")
    return "\n".join(lines)


def write_csv(rows: list[dict[str, object]], path: Path) -> Path:
    """``rows`` as a CSV file."""
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def write_files(r: ThesisResult, checks: list[ShapeCheck], out: Path, figures: list[Path]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    tables = [
        ("table-4.1.csv", table_4_1_rows(r)),
        ("explanations.csv", explanation_rows(r)),
        ("figure-4.1.csv", figure_4_1_rows(r)),
    ]
    if r.cai_karsten:
        tables.append(("cai-karsten.csv", cai_karsten_rows(r)))
    if r.holdout:
        tables.append(("leave-one-out.csv", holdout_rows(r)))
    for name, rows in tables:
        path = out / name
        pd.DataFrame(rows).to_csv(path, index=False)
        written.append(path)
    summaries = {
        "closed": {p: s.to_dict() for p, s in r.closed.items()},
        "open": [{"profile": p, "offered_qps": q, **s.to_dict()} for (p, q), s in sorted(r.open.items())],
        "cai_karsten": {p: s.to_dict() for p, s in r.cai_karsten.items()},
        "leave_one_out": {p.fit.holdout: p.summary.to_dict() for p in r.holdout},
        "checks": [{"claim": c.claim, "holds": c.holds, "detail": c.detail} for c in checks],
        "seed": r.seed,
        "closed_duration_s": r.closed_duration_s,
        "open_duration_s": r.open_duration_s,
    }
    path = out / "summaries.json"
    path.write_text(json.dumps(summaries, indent=1))
    written.append(path)
    md = [
        "# irqlab: the IRQ Suspend thesis on bare metal (Table 4.1, Figure 4.1)",
        "",
        f"Simulated with `scenarios/thesis/bare-metal.toml`, seed {r.seed}; closed loop "
        f"{r.closed_duration_s} s and open loop {r.open_duration_s} s of simulated time per point.",
        "",
        "```",
        table_4_1_text(r),
        "```",
        "",
    ]
    if r.holdout:
        md += ["```", holdout_text(r), "```", ""]
    if r.cai_karsten:
        md += ["```", cai_karsten_text(r), "```", ""]
    md += [
        "```",
        explanation_text(r),
        "```",
        "",
        "```",
        figure_4_1_text(r),
        "```",
        "",
        "```",
        checks_text(checks),
        "```",
        "",
    ]
    md += [f"![{f.stem}]({f.name})" for f in figures]
    path = out / "report.md"
    path.write_text("\n".join(md) + "\n")
    written.append(path)
    return written
