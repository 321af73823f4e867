"""Text, CSV, JSON and Markdown output of ``irqlab reproduce thesis``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from irqlab.reproduce.thesis import (
    PROFILES,
    ShapeCheck,
    ThesisResult,
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
    for name, rows in (
        ("table-4.1.csv", table_4_1_rows(r)),
        ("explanations.csv", explanation_rows(r)),
        ("figure-4.1.csv", figure_4_1_rows(r)),
    ):
        path = out / name
        pd.DataFrame(rows).to_csv(path, index=False)
        written.append(path)
    summaries = {
        "closed": {p: s.to_dict() for p, s in r.closed.items()},
        "open": [{"profile": p, "offered_qps": q, **s.to_dict()} for (p, q), s in sorted(r.open.items())],
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
