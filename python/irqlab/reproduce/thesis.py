"""The IRQ Suspend thesis on bare metal: Table 4.1 and Figure 4.1.

Shafiei 2025, sections 4.1–4.4 and appendix A: memcached on 8 cores at
3 GHz, one RX/TX queue pair per core, mutilate with 6 × 8 × 16 connections at
depth 1 and the ETC workload. Table 4.1 is the closed-loop maximum
throughput of the four profiles; Figure 4.1 is open loop from 100k to 500k
QPS in steps of 50k (p95, p99 and CPU utilisation).

Beside Table 4.1 stands a second measurement of the same kind of setup,
Cai & Karsten (SIGMETRICS 2024), as a prediction, not a fit: their
configurations mapped onto irqlab profiles (:data:`CAI_KARSTEN`), run on the
thesis scenario unchanged, their QPS and ratios to their vanilla printed
beside irqlab's.

Everything here comes from simulator runs of ``scenarios/thesis/bare-metal.toml``,
organised as three studies beside it (``table-4.1.study.toml``,
``figure-4.1.study.toml`` and ``cai-karsten.study.toml``) and run by the
study machinery into a results store; the claims are checked on what the
store holds. The papers' numbers are only printed beside them.
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


@dataclass(frozen=True)
class PublishedConfiguration:
    """One of Cai & Karsten's configurations and the profile it maps to."""

    #: Their configuration, as issue 10 names it.
    name: str
    #: Their maximum throughput (QPS, memcached, 8 cores).
    qps: int
    #: The irqlab profile it maps to (docs/calibration.md, "The second measurement").
    profile: str
    #: How sure the mapping is, in a few words.
    mapping: str


#: Where :data:`CAI_KARSTEN`'s numbers come from.
CAI_KARSTEN_SOURCE = (
    "Cai & Karsten, SIGMETRICS 2024 (POMACS 7(3), doi 10.1145/3626780): memcached on 8 cores, maximum QPS, "
    "as quoted in issue 10 and in a secondary summary of the paper's table, which labels 847k \"IRQ packing\" "
    "and 967k \"IRQ suppression\"; the paper's text was not available (docs/notes/second-measurement-sources.md)"
)

#: Cai & Karsten's memcached results on 8 cores (:data:`CAI_KARSTEN_SOURCE`),
#: vanilla first, each with the irqlab profile it maps to. A prediction is
#: made from them, never a fit: no constant is tuned to these numbers.
CAI_KARSTEN = (
    PublishedConfiguration(
        "vanilla", 724_000, "adaptive-coalescing",
        "deferral and busy poll off as in adaptive; their NIC coalescing unknown",
    ),
    PublishedConfiguration(
        "IRQ batching", 847_000, "irq-batching",
        "the issue's knobs (the cover letter's defer20); the paper's own values unknown",
    ),
    PublishedConfiguration(
        "IRQ suspension", 967_000, "irq-suspend",
        "the issue's mapping to Linux 6.13 IRQ suspension as the thesis configures it (suspend20)",
    ),
    PublishedConfiguration(
        "kernel polling", 947_000, "kernel-polling",
        "judgement: IRQ suspension without deferral (the cover letter's suspend0)",
    ),
)

#: The mapping's caveats, for the reports (one or two sentences).
CAI_KARSTEN_CAVEATS = (
    "Their numbers come from another machine and setup, and no source available here gives their knob values: "
    "irq-batching takes the issue's (the IRQ-suspension cover letter's defer20), kernel-polling is a judgement "
    "(Linux 6.13 IRQ suspension without deferral, the cover letter's suspend0, for a prototype that masked the "
    "queue's IRQ in epoll; without deferral Linux's busy poll cannot take over from interrupts), and vanilla's NIC "
    "coalescing is unknown, so it runs as the thesis's adaptive coalescing. The baselines differ (724k against "
    "irqlab's adaptive-coalescing), so compare the ratios to each study's own vanilla, not the absolute QPS."
)

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
CAI_KARSTEN_STUDY = "cai-karsten"


@dataclass
class ThesisResult:
    """Summaries of every run, keyed by profile (closed) and (profile, qps)
    (open); ``cai_karsten`` holds the Cai & Karsten study's, keyed by
    profile (empty when it was not run)."""

    closed: dict[str, Summary] = field(default_factory=dict)
    open: dict[tuple[str, int], Summary] = field(default_factory=dict)
    cai_karsten: dict[str, Summary] = field(default_factory=dict)
    #: Each Table 4.1 profile predicted by the leave-one-out fit that never
    #: saw it (:mod:`irqlab.reproduce.holdout`); empty when not run.
    holdout: list = field(default_factory=list)
    #: How those fits were made (``tools/calibrate.py``'s procedure).
    holdout_procedure: dict = field(default_factory=dict)
    seed: int = 1
    closed_duration_s: float = 1.0
    open_duration_s: float = 0.5
    #: The results directories the summaries were read from: Table 4.1's,
    #: Figure 4.1's and, when it was run, Cai & Karsten's.
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
    table = _thesis_study(TABLE_STUDY, scenario, closed_duration_s, seed, overrides)
    figure = _thesis_study(FIGURE_STUDY, scenario, open_duration_s, seed, overrides, loads)
    return table, figure


def cai_karsten_study(
    scenario: Optional[Path] = None,
    closed_duration_s: Optional[float] = None,
    seed: Optional[int] = None,
    overrides: tuple[str, ...] = (),
) -> Study:
    """The Cai & Karsten study from its file (closed loop, the four profiles
    of :data:`CAI_KARSTEN`), changed as :func:`thesis_studies` changes Table
    4.1's."""
    return _thesis_study(CAI_KARSTEN_STUDY, scenario, closed_duration_s, seed, overrides)


def _thesis_study(
    name: str,
    scenario: Optional[Path],
    duration: Optional[float],
    seed: Optional[int],
    overrides: tuple[str, ...],
    loads: Optional[tuple[int, ...]] = None,
) -> Study:
    spec = load_study_file(thesis_dir() / f"{name}.study.toml")
    if scenario is not None:
        spec["scenario"] = Scenario.load(scenario)
    if duration is not None:
        spec["duration_s"] = duration
    if seed is not None:
        spec["seed"] = seed
    if loads is not None:
        spec["axes"] = [Axis("load.qps", tuple(loads))]
    if overrides:
        spec["overrides"] = tuple(spec["overrides"]) + tuple(overrides)
    return build_study(spec.pop("scenario"), **spec)


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
    cai_karsten: bool = True,
    leave_one_out: bool = True,
) -> ThesisResult:
    """Run Table 4.1 (closed loop) and Figure 4.1 (open loop) as studies into
    ``out/table-4.1`` and ``out/figure-4.1`` on every core (``jobs``: that
    many), and, with ``cai_karsten``, the Cai & Karsten study (closed loop,
    Table 4.1's duration) into ``out/cai-karsten``; then read them. With
    ``leave_one_out`` and the thesis scenario, each Table 4.1 profile is also
    predicted by the leave-one-out fit that never saw it
    (:mod:`irqlab.reproduce.holdout`, into ``out/leave-one-out``).

    Without ``resume`` the results directories start afresh (earlier
    results there, from this or another irqlab, are removed); with it, what a
    previous, interrupted reproduction finished is kept.
    """
    import contextlib
    import io
    import shutil

    studies = list(thesis_studies(scenario, closed_duration_s, open_duration_s, loads, seed, overrides))
    if cai_karsten:
        studies.append(cai_karsten_study(scenario, closed_duration_s, seed, overrides))
    for study in studies:
        directory = out / study.name
        if not resume and (directory / MANIFEST).is_file():
            shutil.rmtree(directory)
        quiet_stderr = contextlib.redirect_stderr(io.StringIO()) if quiet else contextlib.nullcontext()
        with quiet_stderr:
            result = sweep(study, directory, jobs=jobs)
        if result.failures:
            first = result.failures[0]
            raise ScenarioError(f"{study.name}: point {first.what} failed: {first.error}")
    from irqlab.reproduce import holdout

    # The predictions are cheap and made afresh: never one from an earlier
    # reproduction (perhaps of another scenario) beside these results.
    shutil.rmtree(out / holdout.LOO_DIR, ignore_errors=True)
    thesis = read_thesis(out)
    if leave_one_out and (scenario is None or Path(scenario).resolve() == default_scenario().resolve()):
        _predict_held_out(thesis, out, jobs, overrides)
    return thesis


def _predict_held_out(thesis: ThesisResult, out: Path, jobs: Optional[int], overrides: tuple[str, ...]) -> None:
    """Each profile with the constants of the leave-one-out fit that left it
    out, at Table 4.1's duration and with the seed of Table 4.1's run of it,
    written to ``out/leave-one-out/`` (only for the thesis scenario: the fits
    were made on it)."""
    from irqlab.reproduce import holdout

    directory = out / holdout.LOO_DIR
    path = thesis_dir() / holdout.LOO_FILE
    if not path.is_file():
        return
    fits, procedure = holdout.load_fits(path)
    fits = [f for f in fits if f.holdout in thesis.closed]
    seeds = {p: int(s.seed) for p, s in thesis.closed.items()}
    predictions = holdout.predict(
        fits, default_scenario(), TABLE_4_1, seeds, thesis.closed_duration_s, jobs, overrides
    )
    holdout.save(predictions, procedure, directory)
    thesis.holdout, thesis.holdout_procedure = predictions, procedure


def read_thesis(out: Path) -> ThesisResult:
    """The thesis result from the results directories under ``out`` (the
    claim checks read the store); the Cai & Karsten study's when ``out``
    holds one."""
    from irqlab import results

    table = results.load(out / TABLE_STUDY)
    figure = results.load(out / FIGURE_STUDY)
    result = ThesisResult(directories=(out / TABLE_STUDY, out / FIGURE_STUDY))
    for _, row in results.succeeded(table).iterrows():
        result.closed[str(row["profile"])] = results.summary(row)
    for _, row in results.succeeded(figure).iterrows():
        result.open[(str(row["profile"]), int(row["load.qps"]))] = results.summary(row)
    if (out / CAI_KARSTEN_STUDY / MANIFEST).is_file():
        result.directories += (out / CAI_KARSTEN_STUDY,)
        for _, row in results.succeeded(results.load(out / CAI_KARSTEN_STUDY)).iterrows():
            result.cai_karsten[str(row["profile"])] = results.summary(row)
    from irqlab.reproduce import holdout

    result.holdout, result.holdout_procedure = holdout.read(out / holdout.LOO_DIR)
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


def cai_karsten_rows(r: ThesisResult) -> list[dict[str, float | str]]:
    """Per Cai & Karsten configuration: their QPS, the profile it maps to,
    irqlab's QPS for it (NaN when the run is missing), the error relative to
    theirs, and both ratios to each study's own vanilla (their 724k; irqlab's
    run of the profile vanilla maps to). Empty when the study was not run."""
    if not r.cai_karsten:
        return []
    vanilla = CAI_KARSTEN[0]
    base = r.cai_karsten[vanilla.profile].throughput_qps if vanilla.profile in r.cai_karsten else math.nan
    rows: list[dict[str, float | str]] = []
    for c in CAI_KARSTEN:
        sim = r.cai_karsten[c.profile].throughput_qps if c.profile in r.cai_karsten else math.nan
        rows.append(
            {
                "configuration": c.name,
                "their_qps": float(c.qps),
                "profile": c.profile,
                "irqlab_qps": sim,
                "error_pct": 100.0 * (ratio(sim, c.qps) - 1.0),
                "their_ratio_to_vanilla": c.qps / vanilla.qps,
                "irqlab_ratio_to_vanilla": ratio(sim, base),
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
