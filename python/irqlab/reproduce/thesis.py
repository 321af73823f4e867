"""The IRQ Suspend thesis on bare metal: Table 4.1 and Figure 4.1.

Shafiei 2025, sections 4.1–4.4 and appendix A: memcached on 8 cores at
3 GHz, one RX/TX queue pair per core, mutilate with 6 × 8 × 16 connections at
depth 1 and the ETC workload. Table 4.1 is the closed-loop maximum
throughput of the four profiles; Figure 4.1 is open loop from 100k to 500k
QPS in steps of 50k (p95, p99 and CPU utilisation).

Everything here comes from simulator runs of ``scenarios/thesis/bare-metal.toml``,
organised as two studies beside it (``table-4.1.study.toml`` and
``figure-4.1.study.toml``) and run by the study machinery into a results
store; the claims are checked on what the store holds. The paper's numbers
are only printed beside them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from irqlab._core import ScenarioError
from irqlab.scenario import Scenario
from irqlab.study.axis import Axis
from irqlab.study.spec import Study, build_study, load_study_file
from irqlab.study.store import MANIFEST, STUDY
from irqlab.study.sweep import sweep
from irqlab.summary import Summary

PROFILES = ("no-coalescing", "adaptive-coalescing", "irq-suspend", "busy-wait")

#: Thesis Table 4.1: QPS, IPC, cycles per query, user %, system %, softirq %.
TABLE_4_1 = {
    "no-coalescing": {"qps": 668_071, "ipc": 0.657, "cycles_per_query": 35_841, "user": 17, "system": 49, "softirq": 34},
    "adaptive-coalescing": {"qps": 905_219, "ipc": 0.829, "cycles_per_query": 26_451, "user": 21, "system": 53, "softirq": 26},
    "irq-suspend": {"qps": 958_737, "ipc": 0.892, "cycles_per_query": 24_975, "user": 23, "system": 77, "softirq": 0},
    "busy-wait": {"qps": 963_527, "ipc": 0.895, "cycles_per_query": 24_850, "user": 22, "system": 78, "softirq": 0},
}

#: Figure 4.1's offered loads (QPS).
FIGURE_4_1_LOADS = tuple(range(100_000, 500_001, 50_000))


def thesis_dir() -> Path:
    """``scenarios/thesis`` of the working directory, else of the repository."""
    here = Path("scenarios/thesis")
    if (here / "bare-metal.toml").is_file():
        return here
    return Path(__file__).resolve().parents[3] / "scenarios" / "thesis"


def default_scenario() -> Path:
    """``scenarios/thesis/bare-metal.toml`` of the working directory or of the repository."""
    return thesis_dir() / "bare-metal.toml"


#: The studies of the reproduction (files in ``scenarios/thesis/``), each run
#: into the subdirectory of the output directory of the same name.
TABLE_STUDY = "table-4.1"
FIGURE_STUDY = "figure-4.1"


@dataclass
class ThesisResult:
    """Summaries of every run, keyed by profile (closed) and (profile, qps) (open)."""

    closed: dict[str, Summary] = field(default_factory=dict)
    open: dict[tuple[str, int], Summary] = field(default_factory=dict)
    seed: int = 1
    closed_duration_s: float = 1.0
    open_duration_s: float = 0.5
    #: The results directories the summaries were read from.
    directories: tuple[Path, ...] = ()


def thesis_studies(
    scenario: Optional[Path] = None,
    closed_duration_s: Optional[float] = None,
    open_duration_s: Optional[float] = None,
    loads: Optional[tuple[int, ...]] = None,
    seed: Optional[int] = None,
    overrides: tuple[str, ...] = (),
) -> tuple[Study, Study]:
    """Table 4.1's and Figure 4.1's studies from their files, with what the
    command line changes (another scenario, durations, loads, base seed) and
    ``overrides`` (``"key=value"``) added to their ``[set]``."""
    studies = []
    for name, duration in ((TABLE_STUDY, closed_duration_s), (FIGURE_STUDY, open_duration_s)):
        spec = load_study_file(thesis_dir() / f"{name}.study.toml")
        if scenario is not None:
            spec["scenario"] = Scenario.load(scenario)
        if duration is not None:
            spec["duration_s"] = duration
        if seed is not None:
            spec["seed"] = seed
        if loads is not None and name == FIGURE_STUDY:
            spec["axes"] = [Axis("load.qps", tuple(loads))]
        if overrides:
            spec["overrides"] = tuple(spec["overrides"]) + tuple(overrides)
        studies.append(build_study(spec.pop("scenario"), **spec))
    return studies[0], studies[1]


def run_thesis(
    scenario: Optional[Path] = None,
    closed_duration_s: Optional[float] = None,
    open_duration_s: Optional[float] = None,
    loads: Optional[tuple[int, ...]] = None,
    seed: Optional[int] = None,
    *,
    out: Path,
    jobs: Optional[int] = None,
    resume: bool = False,
    quiet: bool = False,
    overrides: tuple[str, ...] = (),
) -> ThesisResult:
    """Run Table 4.1 (closed loop) and Figure 4.1 (open loop) as studies into
    ``out/table-4.1`` and ``out/figure-4.1`` on every core, then read them.

    Without ``resume`` the two results directories start afresh (earlier
    results there, from this or another irqlab, are removed); with it, what a
    previous, interrupted reproduction finished is kept.
    """
    import contextlib
    import io
    import shutil

    for study in thesis_studies(scenario, closed_duration_s, open_duration_s, loads, seed, overrides):
        directory = out / study.name
        if not resume and (directory / MANIFEST).is_file():
            shutil.rmtree(directory)
        quiet_stderr = contextlib.redirect_stderr(io.StringIO()) if quiet else contextlib.nullcontext()
        with quiet_stderr:
            result = sweep(study, directory, jobs=jobs)
        if result.failures:
            first = result.failures[0]
            raise ScenarioError(f"{study.name}: point {first.what} failed: {first.error}")
    return read_thesis(out)


def read_thesis(out: Path) -> ThesisResult:
    """The thesis result from the results directories under ``out`` (the claim checks read the store)."""
    from irqlab import results

    table = results.load(out / TABLE_STUDY)
    figure = results.load(out / FIGURE_STUDY)
    result = ThesisResult(directories=(out / TABLE_STUDY, out / FIGURE_STUDY))
    for _, row in results.succeeded(table).iterrows():
        result.closed[str(row["profile"])] = results.summary(row)
    for _, row in results.succeeded(figure).iterrows():
        result.open[(str(row["profile"]), int(row["load.qps"]))] = results.summary(row)
    result.seed = int(_study_value(out / TABLE_STUDY, "seed", 1))
    result.closed_duration_s = float(table["duration_s"].iloc[0]) if len(table) else math.nan
    result.open_duration_s = float(figure["duration_s"].iloc[0]) if len(figure) else math.nan
    return result


def _study_value(directory: Path, key: str, default: object) -> object:
    import tomllib

    try:
        return tomllib.loads((directory / STUDY).read_text())["study"].get(key, default)
    except (OSError, ValueError, KeyError):
        return default


# -- comparisons ------------------------------------------------------------


def latency(s: Summary, key: str) -> float:
    """``s.latency_us[key]``, NaN when the run completed no request (the
    core reports ``None`` then: there is no latency to compare)."""
    value = s.latency_us[key]
    return math.nan if value is None else float(value)


def ratio(a: float, b: float) -> float:
    """``a / b``, NaN when ``b`` is 0 or either is NaN (a run that did nothing)."""
    return a / b if b and not (math.isnan(a) or math.isnan(b)) else math.nan


def us(x: float) -> str:
    """A latency for a sentence: ``12.3 us``, or ``—`` when there is none."""
    return "—" if math.isnan(x) else f"{x:.1f} us"


def table_4_1_rows(r: ThesisResult) -> list[dict[str, float | str]]:
    """Per profile and metric: simulated, paper, deviation (relative for QPS
    and cycles per query, in points for CPU shares). Softirq compares the
    model's softirq + hard-IRQ time with the paper's softirq column (the
    thesis reports no separate IRQ share)."""
    rows: list[dict[str, float | str]] = []
    for p in PROFILES:
        s, t = r.closed[p], TABLE_4_1[p]
        c = s.cpu_pct
        sim = {
            "qps": s.throughput_qps,
            "cycles_per_query": s.cycles_per_query,
            "user": c.user,
            "system": c.system,
            "softirq": c.softirq + c.irq,
        }
        for metric, value in sim.items():
            paper = float(t[metric])
            if metric in ("qps", "cycles_per_query"):
                dev = 100.0 * (value / paper - 1.0)
                unit = "%"
            else:
                dev = value - paper
                unit = "pt"
            rows.append({"profile": p, "metric": metric, "simulated": value, "paper": paper, "deviation": dev, "unit": unit})
    return rows


def explanation_rows(r: ThesisResult) -> list[dict[str, float | str]]:
    """What explains the throughput differences, per profile (closed loop)."""
    rows: list[dict[str, float | str]] = []
    for p in PROFILES:
        s = r.closed[p]
        rows.append(
            {
                "profile": p,
                "irqs_per_s": s.irqs_per_s,
                "packets_per_irq": s.packets_per_irq,
                "context_switches_per_query": s.context_switches_per_query,
                "busy_poll_pct": s.busy_poll_pct,
                "softirqs_per_s": s.softirqs_per_s,
                "watchdog_fires_per_s": s.watchdog_fires_per_s,
            }
        )
    return rows


def figure_4_1_rows(r: ThesisResult) -> list[dict[str, float | str]]:
    rows: list[dict[str, float | str]] = []
    for (p, q), s in sorted(r.open.items(), key=lambda kv: (kv[0][1], PROFILES.index(kv[0][0]))):
        rows.append(
            {
                "profile": p,
                "offered_qps": q,
                "achieved_qps": s.throughput_qps,
                "p95_us": latency(s, "p95"),
                "p99_us": latency(s, "p99"),
                "cpu_pct": 100.0 - s.cpu_pct.idle,
                "irqs_per_s": s.irqs_per_s,
                "busy_poll_pct": s.busy_poll_pct,
            }
        )
    return rows


@dataclass
class ShapeCheck:
    claim: str
    holds: bool
    detail: str


def shape_checks(r: ThesisResult) -> list[ShapeCheck]:
    """The thesis's qualitative claims (Table 4.1 ordering, Figure 4.1
    shapes), each checked on the simulated numbers. A claim about a latency
    that a run could not measure (no request completed) does not hold."""
    c = {p: r.closed[p] for p in PROFILES}
    q = {p: c[p].throughput_qps for p in PROFILES}
    checks = [
        ShapeCheck(
            "throughput: no-coalescing < adaptive-coalescing < irq-suspend <= busy-wait",
            q["no-coalescing"] < q["adaptive-coalescing"] < q["irq-suspend"] <= q["busy-wait"] * 1.0001,
            ", ".join(f"{p} {q[p] / 1e3:.0f}k" for p in PROFILES),
        ),
        ShapeCheck(
            "irq-suspend reaches at least 97 % of busy-wait's throughput",
            q["irq-suspend"] >= 0.97 * q["busy-wait"],
            f"{100 * ratio(q['irq-suspend'], q['busy-wait']):.1f} %",
        ),
        ShapeCheck(
            "irq-suspend and busy-wait spend at most 3 % in softirq",
            all(c[p].cpu_pct.softirq + c[p].cpu_pct.irq <= 3.0 for p in ("irq-suspend", "busy-wait")),
            ", ".join(f"{p} {c[p].cpu_pct.softirq + c[p].cpu_pct.irq:.1f} %" for p in ("irq-suspend", "busy-wait")),
        ),
    ]
    loads = sorted({qps for (_, qps) in r.open})
    if not loads:
        return checks

    def o(p: str, qps: int) -> Summary:
        return r.open[(p, qps)]

    hi = [x for x in loads if x >= 300_000]
    for qps in hi:
        a, b = latency(o("irq-suspend", qps), "p99"), latency(o("busy-wait", qps), "p99")
        interrupts = [latency(o(p, qps), "p99") for p in ("no-coalescing", "adaptive-coalescing")]
        interrupt = math.nan if any(math.isnan(x) for x in interrupts) else min(interrupts)
        checks.append(
            ShapeCheck(
                f"{qps // 1000}k QPS: irq-suspend's p99 within 25 % of busy-wait's, both below the interrupt-driven profiles",
                abs(ratio(a, b) - 1.0) <= 0.25 and max(a, b) < interrupt,
                f"irq-suspend {us(a)}, busy-wait {us(b)}, best interrupt-driven {us(interrupt)}",
            )
        )
    lo = loads[0]
    p99 = {p: latency(o(p, lo), "p99") for p in PROFILES}
    checks.append(
        ShapeCheck(
            f"{lo // 1000}k QPS: adaptive-coalescing has the highest p99",
            not any(math.isnan(v) for v in p99.values()) and max(p99, key=lambda p: p99[p]) == "adaptive-coalescing",
            ", ".join(f"{p} {us(v)}" for p, v in p99.items()),
        )
    )
    cpu = {(p, x): 100.0 - o(p, x).cpu_pct.idle for p in PROFILES for x in loads}
    checks.append(
        ShapeCheck(
            "busy-wait uses >= 99 % CPU at every load",
            all(cpu[("busy-wait", x)] >= 99.0 for x in loads),
            f"min {min(cpu[('busy-wait', x)] for x in loads):.1f} %",
        )
    )
    checks.append(
        ShapeCheck(
            f"{lo // 1000}k QPS: irq-suspend's CPU at most 1.2 x adaptive-coalescing's",
            cpu[("irq-suspend", lo)] <= 1.2 * cpu[("adaptive-coalescing", lo)],
            f"irq-suspend {cpu[('irq-suspend', lo)]:.1f} %, adaptive-coalescing {cpu[('adaptive-coalescing', lo)]:.1f} %",
        )
    )
    checks.append(
        ShapeCheck(
            "no-coalescing uses more CPU than adaptive-coalescing at every load",
            all(cpu[("no-coalescing", x)] > cpu[("adaptive-coalescing", x)] for x in loads),
            ", ".join(f"{x // 1000}k {cpu[('no-coalescing', x)]:.0f}/{cpu[('adaptive-coalescing', x)]:.0f}" for x in loads),
        )
    )
    return checks
