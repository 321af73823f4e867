"""The IRQ Suspend thesis on bare metal (Table 4.1, Figure 4.1) and in
virtual machines (§4.5–4.6: Tables 4.2–4.5, Figures 4.2–4.5).

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

The VM results (§4.6) are the same two experiments with memcached in a KVM
guest, one per setup of :data:`VM_SETUPS` (full passthrough, an SR-IOV
virtual function): Table 4.1's and Figure 4.1's studies with the setup's
scenario file in place of ``bare-metal.toml`` and its profiles, so the same
seeds, durations and loads (:func:`vm_studies`). The thesis's values for
them are withheld in the copy available here; only the simulation is shown,
and §4.6's qualitative claims are checked on it (:func:`vm_checks`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from irqlab.reproduce.claim import CONSTRUCTION, FIT, PREDICTION, Claim, ShapeCheck
from irqlab.study.axis import Axis
from irqlab.study.spec import Study, build_study, load_study_file
from irqlab.study.store import MANIFEST, STUDY
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


@dataclass(frozen=True)
class VmSetup:
    """One of the thesis's VM setups (§4.6): a scenario file in
    ``scenarios/thesis/`` and the table and figure it reproduces."""

    #: Short name, for keys and JSON ("passthrough").
    key: str
    #: What the claims and headings call it ("full passthrough").
    label: str
    #: Two letters for the checks' numbers ("PT").
    abbreviation: str
    #: The scenario file, in ``scenarios/thesis/``.
    scenario: str
    #: The thesis's table and figure numbers ("4.4").
    table: str
    figure: str
    #: The profiles the thesis ran on it.
    profiles: tuple[str, ...] = PROFILES
    #: Which claims apply: "passthrough" (§4.6: P1-P6) or "virtio" (§4.5:
    #: V1-V12, and P5, P6, which the thesis also states for VirtIO).
    claims: str = "passthrough"
    #: Its figure's open-loop loads when the command line gives none (None:
    #: Figure 4.1's). The VirtIO setups saturate far below bare metal.
    loads: Optional[tuple[int, ...]] = None

    @property
    def table_study(self) -> str:
        """The name of its closed-loop study and results directory."""
        return f"table-{self.table}"

    @property
    def figure_study(self) -> str:
        """The name of its open-loop study and results directory."""
        return f"figure-{self.figure}"


#: The thesis's VM setups (§4.6), each run as Table 4.1 and Figure 4.1 are;
#: a setup whose scenario file is missing is skipped with a message.
VIRTIO_PROFILES = ("no-coalescing", "irq-suspend", "busy-wait")
VM_SETUPS = (
    VmSetup(
        "virtio-aligned", "VirtIO aligned", "VA", "virtio-aligned.toml", "4.2", "4.2",
        VIRTIO_PROFILES, "virtio", tuple(range(50_000, 250_001, 25_000)),
    ),
    VmSetup(
        "virtio-packed", "VirtIO 4 + 2", "VP", "virtio-packed.toml", "4.3", "4.3",
        VIRTIO_PROFILES, "virtio", tuple(range(50_000, 450_001, 50_000)),
    ),
    VmSetup("passthrough", "full passthrough", "PT", "passthrough.toml", "4.4", "4.4"),
    VmSetup("sriov", "SR-IOV", "SR", "sriov.toml", "4.5", "4.5"),
)

#: What stands in the thesis column of the VM tables and figures.
VM_PAPER_UNAVAILABLE = "unavailable"
#: Why, in one sentence for the reports.
VM_PAPER_NOTE = (
    "The thesis's values for its VM tables and figures are withheld in the copy available here, so only "
    "the simulation is shown; the paper's values are unavailable, not estimated."
)


def thesis_dir() -> Path:
    """``scenarios/thesis`` of the working directory, else of the repository."""
    from irqlab.reproduce.studies import scenario_dir

    return scenario_dir("thesis", "bare-metal.toml")


def default_scenario() -> Path:
    """``scenarios/thesis/bare-metal.toml`` of the working directory or of the repository."""
    return thesis_dir() / "bare-metal.toml"


#: The studies of the reproduction (files in ``scenarios/thesis/``), each run
#: into the subdirectory of the output directory of the same name.
TABLE_STUDY = "table-4.1"
FIGURE_STUDY = "figure-4.1"
CAI_KARSTEN_STUDY = "cai-karsten"


@dataclass
class VmResult:
    """One VM setup's runs: closed loop keyed by profile, open loop by
    (profile, qps), as :class:`ThesisResult`'s bare-metal ones."""

    setup: VmSetup
    closed: dict[str, Summary] = field(default_factory=dict)
    open: dict[tuple[str, int], Summary] = field(default_factory=dict)


@dataclass
class ThesisResult:
    """Summaries of every run, keyed by profile (closed) and (profile, qps)
    (open); ``cai_karsten`` holds the Cai & Karsten study's, keyed by
    profile (empty when it was not run); ``vm`` each VM setup's, keyed by
    :attr:`VmSetup.key` in :data:`VM_SETUPS` order."""

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
    #: Figure 4.1's, then, when they were run, Cai & Karsten's and each VM
    #: setup's table and figure.
    directories: tuple[Path, ...] = ()
    vm: dict[str, VmResult] = field(default_factory=dict)
    #: One sentence per VM setup that was not run, and why.
    vm_skipped: list[str] = field(default_factory=list)


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


def vm_studies(
    setup: VmSetup,
    closed_duration_s: Optional[float] = None,
    open_duration_s: Optional[float] = None,
    loads: Optional[tuple[int, ...]] = None,
    seed: Optional[int] = None,
    overrides: tuple[str, ...] = (),
) -> tuple[Study, Study]:
    """A VM setup's table and figure studies: Table 4.1's and Figure 4.1's
    study files with the setup's scenario, name and profiles, changed by the
    command line as :func:`thesis_studies` changes those. The runs' seeds
    derive from the base seed and the point (profile, load), so each VM run
    has the seed of the bare-metal run it is compared with."""
    scenario = thesis_dir() / setup.scenario
    where = f"{setup.label}, memcached in a KVM guest ({setup.scenario})"
    table = _thesis_study(
        TABLE_STUDY, scenario, closed_duration_s, seed, overrides,
        renamed={
            "name": setup.table_study, "profiles": list(setup.profiles),
            "description": f"Thesis Table {setup.table}: closed-loop maximum throughput and CPU breakdown, {where}",
        },
    )
    figure = _thesis_study(
        FIGURE_STUDY, scenario, open_duration_s, seed, overrides, loads,
        renamed={
            "name": setup.figure_study, "profiles": list(setup.profiles),
            "description": f"Thesis Figure {setup.figure}: open-loop p95/p99 latency and CPU utilisation, {where}",
        },
    )
    return table, figure


def _thesis_study(
    name: str,
    scenario: Optional[Path],
    duration: Optional[float],
    seed: Optional[int],
    overrides: tuple[str, ...],
    loads: Optional[tuple[int, ...]] = None,
    renamed: Optional[dict] = None,
) -> Study:
    spec = load_study_file(thesis_dir() / f"{name}.study.toml")
    if renamed:
        # Another study made from this file (a VM setup's): its own name,
        # description and profiles, no study file of its own.
        spec.update(renamed, study_text=None)
    from irqlab.reproduce.studies import adjust_spec

    adjust_spec(spec, scenario, duration, seed, overrides)
    if loads is not None:
        spec["axes"] = [Axis("load.qps", tuple(loads))]
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
    vm: bool = True,
    vm_setups: tuple[VmSetup, ...] = VM_SETUPS,
) -> ThesisResult:
    """Run Table 4.1 (closed loop) and Figure 4.1 (open loop) as studies into
    ``out/table-4.1`` and ``out/figure-4.1`` on every core (``jobs``: that
    many), and, with ``cai_karsten``, the Cai & Karsten study (closed loop,
    Table 4.1's duration) into ``out/cai-karsten``; then read them. With
    ``leave_one_out`` and the thesis scenario, each Table 4.1 profile is also
    predicted by the leave-one-out fit that never saw it
    (:mod:`irqlab.reproduce.holdout`, into ``out/leave-one-out``). With
    ``vm`` and the thesis scenario, each of ``vm_setups`` whose scenario file
    exists is run the same way into ``out/table-<n>`` and ``out/figure-<n>``;
    the others are named in :attr:`ThesisResult.vm_skipped`.

    Without ``resume`` the results directories start afresh (earlier
    results there, from this or another irqlab, are removed); with it, what a
    previous, interrupted reproduction finished is kept.
    """
    import shutil

    studies = list(thesis_studies(scenario, closed_duration_s, open_duration_s, loads, seed, overrides))
    if cai_karsten:
        studies.append(cai_karsten_study(scenario, closed_duration_s, seed, overrides))
    thesis_scenario = scenario is None or Path(scenario).resolve() == default_scenario().resolve()
    run_setups, skipped = [], []
    for setup in vm_setups if vm else ():
        what = f"Table {setup.table} and Figure {setup.figure} ({setup.label})"
        if not thesis_scenario:
            skipped.append(f"{what} skipped: they are compared with the thesis's bare-metal scenario, not {scenario}")
        elif not (thesis_dir() / setup.scenario).is_file():
            skipped.append(f"{what} skipped: {thesis_dir() / setup.scenario} does not exist")
        else:
            run_setups.append(setup)
            studies += vm_studies(setup, closed_duration_s, open_duration_s, loads or setup.loads, seed, overrides)
    from irqlab.reproduce import holdout
    from irqlab.reproduce.studies import run_studies

    run_studies(studies, out, jobs=jobs, resume=resume, quiet=quiet)

    # The predictions are cheap and made afresh: never one from an earlier
    # reproduction (perhaps of another scenario) beside these results.
    shutil.rmtree(out / holdout.LOO_DIR, ignore_errors=True)
    thesis = read_thesis(out, tuple(run_setups))
    thesis.vm_skipped = skipped
    if leave_one_out and thesis_scenario:
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


def read_thesis(out: Path, vm_setups: tuple[VmSetup, ...] = VM_SETUPS) -> ThesisResult:
    """The thesis result from the results directories under ``out`` (the
    claim checks read the store); the Cai & Karsten study's when ``out``
    holds one, and each of ``vm_setups`` whose table and figure it holds."""
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
    for setup in vm_setups:
        table_dir, figure_dir = out / setup.table_study, out / setup.figure_study
        if not ((table_dir / MANIFEST).is_file() and (figure_dir / MANIFEST).is_file()):
            continue
        vm = result.vm[setup.key] = VmResult(setup)
        result.directories += (table_dir, figure_dir)
        for _, row in results.succeeded(results.load(table_dir)).iterrows():
            vm.closed[str(row["profile"])] = results.summary(row)
        for _, row in results.succeeded(results.load(figure_dir)).iterrows():
            vm.open[(str(row["profile"]), int(row["load.qps"]))] = results.summary(row)
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


#: Table 4.1's metrics compared as ratios (the CPU shares in points).
RELATIVE_METRICS = ("qps", "ipc", "cycles_per_query")


def table_4_1_rows(r: ThesisResult) -> list[dict[str, float | str]]:
    """Per profile and metric: simulated, paper, deviation (relative for QPS,
    IPC and cycles per query, in points for CPU shares). Softirq compares the
    model's softirq + hard-IRQ time with the paper's softirq column (the
    thesis reports no separate IRQ share). IPC is there when the model
    reports it (``microarch.ipc_model = "disruption"``)."""
    rows: list[dict[str, float | str]] = []
    for p in PROFILES:
        s, t = r.closed[p], TABLE_4_1[p]
        c = s.cpu_pct
        sim = {
            "qps": s.throughput_qps,
            "ipc": getattr(s, "ipc", None),
            "cycles_per_query": s.cycles_per_query,
            "user": c.user,
            "system": c.system,
            "softirq": c.softirq + c.irq,
        }
        for metric, value in sim.items():
            if value is None:
                continue
            paper = float(t[metric])
            if metric in RELATIVE_METRICS:
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
    return figure_rows(r.open)


def figure_rows(open_: dict[tuple[str, int], Summary], profiles: tuple[str, ...] = PROFILES) -> list[dict[str, float | str]]:
    """One row per open-loop run, by load then profile; a VM run's rows also
    have the host's busy share of the vCPU cores and its VM exits and
    virtual interrupts per second."""
    rows: list[dict[str, float | str]] = []
    for (p, q), s in sorted(open_.items(), key=lambda kv: (kv[0][1], profiles.index(kv[0][0]))):
        row: dict[str, float | str] = {
            "profile": p,
            "offered_qps": q,
            "achieved_qps": s.throughput_qps,
            "p95_us": latency(s, "p95"),
            "p99_us": latency(s, "p99"),
            "cpu_pct": 100.0 - s.cpu_pct.idle,
            "irqs_per_s": s.irqs_per_s,
            "busy_poll_pct": s.busy_poll_pct,
        }
        if s.get("vm") is not None:
            row["host_cpu_pct"] = host_busy(s)
            row["vm_exits_per_s"] = s.vm.vm_exits_per_s
            row["virtual_irqs_per_s"] = s.vm.virtual_irqs_per_s
            row["halt_poll_success_pct"] = s.vm.halt_poll_success_pct
        rows.append(row)
    return rows


def host_busy(s: Summary) -> float:
    """The host's busy share of the cores running a VM run's vCPUs
    (``100 - vm.host_cpu_pct.idle``): guest time, KVM's exits and halt
    polling, the host's interrupts."""
    return 100.0 - float(s.vm.host_cpu_pct.idle)


def _share(record: object, key: str) -> float:
    """A CPU share that the JSON leaves out when it is 0 (``steal``, ``guest``)."""
    value = record.get(key) if record is not None else None  # type: ignore[attr-defined]
    return 0.0 if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


#: What the host did on the application vCPUs' cores, in the VM tables
#: (``vm.host_split_pct``): guest mode, KVM's exits, its own interrupts,
#: vhost and halt polling.
HOST_SPLIT = ("guest", "exit", "irq", "vhost", "halt_poll")


def vm_table_rows(r: ThesisResult, setup: VmSetup) -> list[dict[str, float | str]]:
    """A VM setup's table (Tables 4.2–4.5): per profile, closed loop, QPS
    and its change from bare metal (Table 4.1's run), cycles per query and
    IPC, the guest's user/system/softirq(+IRQ, as in Table 4.1)/steal shares
    of its vCPUs, the host's busy share of the vCPU cores and what it was
    for (:data:`HOST_SPLIT`), VM exits and virtual interrupts per second;
    the thesis's values are unavailable."""
    vm = r.vm[setup.key]
    rows: list[dict[str, float | str]] = []
    for p in setup.profiles:
        s = vm.closed.get(p)
        if s is None:
            continue
        c = s.cpu_pct
        split = s.vm.get("host_split_pct") or {}
        bare = r.closed[p].throughput_qps if p in r.closed else math.nan
        rows.append(
            {
                "profile": p,
                "qps": s.throughput_qps,
                "qps_vs_bare_metal_pct": 100.0 * (ratio(s.throughput_qps, bare) - 1.0),
                "cycles_per_query": s.cycles_per_query,
                "ipc": _share(s, "ipc") or math.nan,
                "user": c.user,
                "system": c.system,
                "softirq": c.softirq + c.irq,
                "steal": _share(c, "steal"),
                "host_busy_pct": host_busy(s),
                **{f"host_{k}_pct": _share(split, k) for k in HOST_SPLIT},
                "vm_exits_per_s": s.vm.vm_exits_per_s,
                "virtual_irqs_per_s": s.vm.virtual_irqs_per_s,
                "thesis": VM_PAPER_UNAVAILABLE,
            }
        )
    return rows


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
            status=FIT,
        ),
        ShapeCheck(
            "irq-suspend reaches at least 97 % of busy-wait's throughput",
            q["irq-suspend"] >= 0.97 * q["busy-wait"],
            f"{100 * ratio(q['irq-suspend'], q['busy-wait']):.1f} %",
            status=FIT,
        ),
        ShapeCheck(
            "irq-suspend and busy-wait spend at most 3 % in softirq",
            all(c[p].cpu_pct.softirq + c[p].cpu_pct.irq <= 3.0 for p in ("irq-suspend", "busy-wait")),
            ", ".join(f"{p} {c[p].cpu_pct.softirq + c[p].cpu_pct.irq:.1f} %" for p in ("irq-suspend", "busy-wait")),
            status=FIT,
        ),
    ]
    return checks + figure_checks(r.open)


def figure_checks(
    open_: dict[tuple[str, int], Summary],
    profiles: tuple[str, ...] = PROFILES,
    cpu=lambda s: 100.0 - s.cpu_pct.idle,
) -> list[ShapeCheck]:
    """Figure 4.1's claims on the open-loop runs ``open_`` (``cpu``: a run's
    CPU utilisation in percent). A claim about a profile not in
    ``profiles`` is left out."""
    checks: list[ShapeCheck] = []
    loads = sorted({qps for (_, qps) in open_})
    if not loads:
        return checks
    have = set(profiles)

    def o(p: str, qps: int) -> Summary:
        return open_[(p, qps)]

    hi = [x for x in loads if x >= 300_000]
    interrupt_driven = [p for p in ("no-coalescing", "adaptive-coalescing") if p in have]
    if {"irq-suspend", "busy-wait"} <= have and interrupt_driven:
        for qps in hi:
            a, b = latency(o("irq-suspend", qps), "p99"), latency(o("busy-wait", qps), "p99")
            interrupts = [latency(o(p, qps), "p99") for p in interrupt_driven]
            interrupt = math.nan if any(math.isnan(x) for x in interrupts) else min(interrupts)
            checks.append(
                ShapeCheck(
                    f"{qps // 1000}k QPS: irq-suspend's p99 within 25 % of busy-wait's, both below the interrupt-driven profiles",
                    abs(ratio(a, b) - 1.0) <= 0.25 and max(a, b) < interrupt,
                    f"irq-suspend {us(a)}, busy-wait {us(b)}, best interrupt-driven {us(interrupt)}",
                    status=PREDICTION,
                )
            )
    lo = loads[0]
    if "adaptive-coalescing" in have:
        p99 = {p: latency(o(p, lo), "p99") for p in profiles}
        checks.append(
            ShapeCheck(
                f"{lo // 1000}k QPS: adaptive-coalescing has the highest p99",
                not any(math.isnan(v) for v in p99.values()) and max(p99, key=lambda p: p99[p]) == "adaptive-coalescing",
                ", ".join(f"{p} {us(v)}" for p, v in p99.items()),
                status=PREDICTION,
            )
        )
    busy = {(p, x): cpu(o(p, x)) for p in profiles for x in loads}
    if "busy-wait" in have:
        checks.append(
            ShapeCheck(
                "busy-wait uses >= 99 % CPU at every load",
                all(busy[("busy-wait", x)] >= 99.0 for x in loads),
                f"min {min(busy[('busy-wait', x)] for x in loads):.1f} %",
                # Busy-wait's thread never sleeps, whatever the costs.
                status=CONSTRUCTION,
            )
        )
    if {"irq-suspend", "adaptive-coalescing"} <= have:
        checks.append(
            ShapeCheck(
                f"{lo // 1000}k QPS: irq-suspend's CPU at most 1.2 x adaptive-coalescing's",
                busy[("irq-suspend", lo)] <= 1.2 * busy[("adaptive-coalescing", lo)],
                f"irq-suspend {busy[('irq-suspend', lo)]:.1f} %, adaptive-coalescing {busy[('adaptive-coalescing', lo)]:.1f} %",
                status=PREDICTION,
            )
        )
    if {"no-coalescing", "adaptive-coalescing"} <= have:
        checks.append(
            ShapeCheck(
                "no-coalescing uses more CPU than adaptive-coalescing at every load",
                all(busy[("no-coalescing", x)] > busy[("adaptive-coalescing", x)] for x in loads),
                ", ".join(f"{x // 1000}k {busy[('no-coalescing', x)]:.0f}/{busy[('adaptive-coalescing', x)]:.0f}" for x in loads),
                status=PREDICTION,
            )
        )
    return checks


# -- the VM claims (§4.5–4.6) ------------------------------------------------------

#: The profiles' short names in the checks' numbers.
SHORT = {
    "no-coalescing": "nc", "adaptive-coalescing": "ad", "irq-suspend": "is", "busy-wait": "bw",
    "irq-batching": "ib", "kernel-polling": "kp",
}

#: P2 in the thesis's words (§4.6): the figure is withheld in the copy here.
P2_WORDS = "irq-suspend's and busy-wait's QPS below bare metal's (relatively close, approximately [withheld] lower)"

#: Busy-wait's CPU is ~100 % on bare metal and in a VM: P5 allows it this
#: many points below bare metal.
P5_BUSY_WAIT_SLACK_PT = 0.5


def vm_checks(r: ThesisResult) -> list[ShapeCheck]:
    """The thesis's claims about its VM results, each checked on every VM
    setup that was run, by claim then setup. BM is Table 4.1's and Figure
    4.1's runs; QPS is closed-loop throughput; VM the setup's runs.

    - P1 (§4.6, §6): irq-suspend and busy-wait gain more in the VM: their QPS
      ratios to adaptive-coalescing and to no-coalescing are larger in the VM
      than on BM.
    - P2 (§4.6): irq-suspend's and busy-wait's QPS are below BM's ("relatively
      close to those of the HV ... approximately [a figure withheld in the
      copy here] lower"): the direction only.
    - P3 (§4.6): 1 - QPS(VM)/QPS(BM) is larger for the interrupt-driven
      profiles than for irq-suspend and busy-wait, and largest for
      no-coalescing.
    - P4 (§4.6): the setup's figure passes Figure 4.1's checks
      (:func:`figure_checks`), CPU being the host's busy share of the vCPU
      cores.
    - P5 (§4.6, KVM halt polling): at every open-loop load and for every
      profile, the host's busy share of the vCPU cores is at least BM's CPU
      busy share (busy-wait, ~100 % in both: at least BM's minus
      :data:`P5_BUSY_WAIT_SLACK_PT`). It holds by construction: the guest
      runs bare metal's code at bare metal's costs, and the host adds its
      exits and halt polls on the same cores.
    - P6 (Figures 4.2–4.5): no-coalescing has the lowest QPS.

    A claim whose numbers are missing (a run that did nothing) does not
    hold; a claim about a profile the setup was not run with is left out
    for it. Each check carries its claim's status (P4's, the Figure 4.1
    claim's it repeats); a setup whose every run gives another's numbers
    (:func:`repeated_setups`) is checked and printed, but marked as
    repeating that setup and not counted."""
    checks: list[ShapeCheck] = []
    vms = [vm for vm in r.vm.values() if vm.setup.claims == "passthrough"]
    bm = {p: s.throughput_qps for p, s in r.closed.items()}
    for make in (_p1, _p2, _p3, _p4, _p5, _p6):
        for vm in vms:
            checks += make(r, vm, bm)
    checks += virtio_checks(r)
    status = {c.id: c.status for c in CLAIMS}
    repeats = repeated_setups(r)
    for c in checks:
        c.status = c.status or status[c.id]
        c.repeats = repeats.get(c.setup, "")
    return checks


def repeated_setups(r: ThesisResult) -> dict[str, str]:
    """Each VM setup whose every run (closed and open loop, same profiles
    and loads) gives the numbers of an earlier setup's, to that setup's
    label: SR-IOV, while the model has no source for how a virtual function
    differs from the whole device (docs/calibration.md, "Virtual
    machines"), is passthrough's prediction again."""
    out: dict[str, str] = {}
    vms = list(r.vm.values())
    for i, vm in enumerate(vms):
        for earlier in vms[:i]:
            if earlier.setup.key not in out and _same_numbers(vm, earlier):
                out[vm.setup.key] = earlier.setup.label
                break
    return out


#: What two runs must agree on to be the same prediction (with the VM
#: counters, whatever the setup's kind).
_RESULTS = ("throughput_qps", "requests_completed", "latency_us", "cpu_pct", "cycles_per_query")


def _same_numbers(a: VmResult, b: VmResult) -> bool:
    if a.closed.keys() != b.closed.keys() or a.open.keys() != b.open.keys() or not a.closed:
        return False
    pairs = [(a.closed[k], b.closed[k]) for k in a.closed] + [(a.open[k], b.open[k]) for k in a.open]
    return all(_results(x) == _results(y) for x, y in pairs)


def _results(s: Summary) -> tuple:
    vm = {k: v for k, v in (s.get("vm") or {}).items() if k != "kind"}
    return tuple(s.get(f) for f in _RESULTS) + (vm,)


def virtio_checks(r: ThesisResult) -> list[ShapeCheck]:
    """The thesis's claims about its VirtIO setups (§4.5), on the setups of
    kind "virtio" that were run (VA aligned, VP packed; QPS closed loop):

    - V1: aligned, irq-suspend and busy-wait serve more than no-coalescing.
    - V2: their gain over no-coalescing is smaller packed than aligned.
    - V3: irq-suspend and busy-wait spend less of the application vCPUs in
      softirq than no-coalescing, in each setup.
    - V4: packed, irq-suspend and busy-wait still serve more than
      no-coalescing.
    - V5: packed serves more than aligned, profile by profile.
    - V6: busy-wait and irq-suspend take far fewer VM exits than
      no-coalescing (below half), in each setup.
    - V8: at the lowest load, the three profiles' p99 are within 25 %.
    - V10: at the lowest load both setups share with Figure 4.1, every
      profile's p99 is above bare metal's.
    - V12: busy-wait's guest CPU is ~100 % at every load, irq-suspend's is
      below it at the lowest, and no-coalescing's and irq-suspend's rise
      with load.
    - P5 and P6 (also stated for VirtIO: Figures 4.2c, 4.3c; the
      footnotes).
    """
    vms = {vm.setup.key: vm for vm in r.vm.values() if vm.setup.claims == "virtio"}
    if not vms:
        return []
    bm = {p: s.throughput_qps for p, s in r.closed.items()}
    checks: list[ShapeCheck] = []
    va, vp = vms.get("virtio-aligned"), vms.get("virtio-packed")
    nc, is_, bw = "no-coalescing", "irq-suspend", "busy-wait"

    def gains(vm: VmResult) -> dict[str, float]:
        return {p: ratio(_qps(vm, p), _qps(vm, nc)) for p in (is_, bw)}

    def gain_text(vm: VmResult) -> str:
        return ", ".join(f"{SHORT[p]}/nc {_f(g, '{:.3f}')}" for p, g in gains(vm).items())

    if va is not None:
        checks.append(_vm_check(va, "V1", "irq-suspend and busy-wait serve more than no-coalescing",
                                all(g > 1.0 for g in gains(va).values()), gain_text(va)))
    if va is not None and vp is not None:
        ga, gp = gains(va), gains(vp)
        checks.append(_vm_check(vp, "V2", "the gain of irq-suspend and busy-wait over no-coalescing is smaller packed than aligned",
                                all(gp[p] < ga[p] for p in ga), f"VP {gain_text(vp)}; VA {gain_text(va)}"))
    for vm in vms.values():
        soft = {p: vm.closed[p].cpu_pct.softirq if p in vm.closed else math.nan for p in (nc, is_, bw)}
        checks.append(_vm_check(vm, "V3", "irq-suspend and busy-wait spend less of the application vCPUs in softirq",
                                soft[is_] < soft[nc] and soft[bw] < soft[nc],
                                ", ".join(f"{SHORT[p]} {_f(v, '{:.1f}')} %" for p, v in soft.items())))
    if vp is not None:
        checks.append(_vm_check(vp, "V4", "irq-suspend and busy-wait still serve more than no-coalescing",
                                all(g > 1.0 for g in gains(vp).values()), gain_text(vp)))
    if va is not None and vp is not None:
        checks.append(_vm_check(vp, "V5", "packed serves more than aligned, profile by profile",
                                all(_qps(vp, p) > _qps(va, p) for p in (nc, is_, bw)),
                                ", ".join(f"{SHORT[p]} VP {_k(_qps(vp, p))} vs VA {_k(_qps(va, p))}" for p in (nc, is_, bw))))
    for vm in vms.values():
        exits = {p: float(vm.closed[p].vm.vm_exits_per_s) if p in vm.closed else math.nan for p in (nc, is_, bw)}
        checks.append(_vm_check(vm, "V6", "busy-wait and irq-suspend take far fewer VM exits than no-coalescing (below half)",
                                exits[bw] < 0.5 * exits[nc] and exits[is_] < 0.5 * exits[nc],
                                ", ".join(f"{SHORT[p]} {_k(v)}/s" for p, v in exits.items())))
    for vm in vms.values():
        loads = sorted({q for (_, q) in vm.open})
        if not loads:
            continue
        low = loads[0]
        p99 = {p: _p99(vm.open.get((p, low))) for p in (nc, is_, bw)}
        lo, hi = min(p99.values()), max(p99.values())
        checks.append(_vm_check(vm, "V8", f"at {low // 1000}k QPS the three profiles' p99 are within 25 %",
                                hi <= 1.25 * lo, ", ".join(f"{SHORT[p]} {us(v)}" for p, v in p99.items())))
        common = sorted(set(loads) & {q for (_, q) in r.open})
        if common:
            q = common[0]
            pairs = {p: (_p99(vm.open.get((p, q))), _p99(r.open.get((p, q)))) for p in (nc, is_, bw)}
            checks.append(_vm_check(vm, "V10", f"at {q // 1000}k QPS every profile's p99 is above bare metal's",
                                    all(v > b for v, b in pairs.values()),
                                    ", ".join(f"{SHORT[p]} {us(v)} vs BM {us(b)}" for p, (v, b) in pairs.items())))
        guest = {(p, q): 100.0 - s.cpu_pct.idle for (p, q), s in vm.open.items()}
        series = {p: [guest.get((p, q), math.nan) for q in loads] for p in (nc, is_, bw)}
        rises = all(series[p][-1] > series[p][0] for p in (nc, is_))
        holds = rises and min(series[bw]) > 99.0 and series[is_][0] < series[bw][0]
        checks.append(_vm_check(vm, "V12", "busy-wait's vCPUs ~100 % busy at every load; irq-suspend below it at the lowest; "
                                "no-coalescing and irq-suspend rise with load", holds,
                                ", ".join(f"{SHORT[p]} {_f(v[0], '{:.0f}')} -> {_f(v[-1], '{:.0f}')} %" for p, v in series.items())))
    for vm in vms.values():
        checks += _p5(r, vm, bm) + _p6(r, vm, bm)
    return checks


def _p99(s: Optional[Summary]) -> float:
    if s is None or s.latency_us.p99 is None:
        return math.nan
    return float(s.latency_us.p99)


def _qps(vm: VmResult, p: str) -> float:
    s = vm.closed.get(p)
    return s.throughput_qps if s is not None else math.nan


def _k(x: float) -> str:
    return _f(x, "{:,.0f}")


def _f(x: float, fmt: str) -> str:
    """``x`` formatted, or ``—`` when it is NaN (a run that did nothing)."""
    return "—" if math.isnan(x) else fmt.format(x)


def _vm_check(vm: VmResult, id_: str, claim: str, holds: bool, detail: str, status: str = "") -> ShapeCheck:
    """A VM claim's check; its status is its claim's (:data:`CLAIMS`) unless given."""
    return ShapeCheck(f"{id_} {vm.setup.label}: {claim}", bool(holds), detail, id_, vm.setup.key, status)


def _p1(r: ThesisResult, vm: VmResult, bm: dict[str, float]) -> list[ShapeCheck]:
    have = set(vm.setup.profiles)
    pairs = [(a, b) for a in ("irq-suspend", "busy-wait") for b in ("adaptive-coalescing", "no-coalescing")]
    pairs = [(a, b) for a, b in pairs if {a, b} <= have]
    if not pairs:
        return []
    x = vm.setup.abbreviation
    ratios = {(a, b): (ratio(_qps(vm, a), _qps(vm, b)), ratio(bm.get(a, math.nan), bm.get(b, math.nan))) for a, b in pairs}
    return [
        _vm_check(
            vm, "P1",
            "irq-suspend and busy-wait gain more over the interrupt-driven profiles than on bare metal "
            f"(QPS ratios larger for {x} than for BM)",
            all(v > b for v, b in ratios.values()),
            ", ".join(f"{SHORT[a]}/{SHORT[b]} {x} {_f(v, '{:.3f}')} vs BM {_f(bb, '{:.3f}')}" for (a, b), (v, bb) in ratios.items()),
        )
    ]


def _p2(r: ThesisResult, vm: VmResult, bm: dict[str, float]) -> list[ShapeCheck]:
    ps = [p for p in ("irq-suspend", "busy-wait") if p in vm.setup.profiles]
    if not ps:
        return []
    x = vm.setup.abbreviation
    change = {p: 100.0 * (ratio(_qps(vm, p), bm.get(p, math.nan)) - 1.0) for p in ps}
    return [
        _vm_check(
            vm, "P2",
            P2_WORDS,
            all(change[p] < 0.0 for p in ps),
            ", ".join(f"{SHORT[p]} {x} {_k(_qps(vm, p))} vs BM {_k(bm.get(p, math.nan))} ({_f(change[p], '{:+.3f}')} %)" for p in ps),
        )
    ]


def _p3(r: ThesisResult, vm: VmResult, bm: dict[str, float]) -> list[ShapeCheck]:
    have = vm.setup.profiles
    interrupt = [p for p in ("no-coalescing", "adaptive-coalescing") if p in have]
    polling = [p for p in ("irq-suspend", "busy-wait") if p in have]
    if not interrupt or not polling:
        return []
    loss = {p: 100.0 * (1.0 - ratio(_qps(vm, p), bm.get(p, math.nan))) for p in (*interrupt, *polling)}
    claim = "interrupt-driven profiles lose more QPS to the VM than irq-suspend and busy-wait"
    holds = min(loss[p] for p in interrupt) > max(loss[p] for p in polling)
    if "no-coalescing" in have:
        claim += ", no-coalescing the most"
        holds = holds and all(loss["no-coalescing"] > v for p, v in loss.items() if p != "no-coalescing")
    return [
        _vm_check(
            vm, "P3", f"{claim} (1 - QPS({vm.setup.abbreviation})/QPS(BM))", holds,
            ", ".join(f"{SHORT[p]} {_f(v, '{:.2f}')} %" for p, v in loss.items()),
        )
    ]


def _p4(r: ThesisResult, vm: VmResult, bm: dict[str, float]) -> list[ShapeCheck]:
    checks = figure_checks(vm.open, vm.setup.profiles, cpu=host_busy)
    return [
        _vm_check(vm, "P4", f"Figure {vm.setup.figure} repeats Figure 4.1 (CPU: host's busy share): {c.claim}", c.holds,
                  c.detail, c.status)
        for c in checks
    ]


def _p5(r: ThesisResult, vm: VmResult, bm: dict[str, float]) -> list[ShapeCheck]:
    loads = sorted({q for (p, q) in vm.open} & {q for (p, q) in r.open})
    if not loads:
        return []
    x = vm.setup.abbreviation
    margins = []
    holds = True
    for p in vm.setup.profiles:
        if (p, loads[0]) not in r.open:
            continue
        slack = P5_BUSY_WAIT_SLACK_PT if p == "busy-wait" else 0.0
        diffs = {
            q: host_busy(vm.open[(p, q)]) - (100.0 - r.open[(p, q)].cpu_pct.idle)
            if (p, q) in vm.open and (p, q) in r.open else math.nan
            for q in loads
        }
        failing = [q for q, d in diffs.items() if not d >= -slack]
        holds = holds and not failing
        q_min = min(diffs, key=lambda q: diffs[q] if not math.isnan(diffs[q]) else -math.inf)
        text = f"{SHORT[p]} min {_f(diffs[q_min], '{:+.1f}')} pt at {q_min // 1000}k"
        if failing:
            text += f" (below at {', '.join(f'{q // 1000}k' for q in failing)})"
        margins.append(text)
    return [
        _vm_check(
            vm, "P5",
            f"host CPU busy of the vCPU cores >= bare-metal CPU busy at every load, every profile "
            f"(busy-wait: >= minus {P5_BUSY_WAIT_SLACK_PT} pt)",
            holds,
            f"{x} host busy - BM busy: " + ", ".join(margins),
        )
    ]


def _p6(r: ThesisResult, vm: VmResult, bm: dict[str, float]) -> list[ShapeCheck]:
    if "no-coalescing" not in vm.setup.profiles:
        return []
    q = {p: _qps(vm, p) for p in vm.setup.profiles}
    return [
        _vm_check(
            vm, "P6", "no-coalescing has the lowest closed-loop QPS",
            all(q["no-coalescing"] < v for p, v in q.items() if p != "no-coalescing"),
            ", ".join(f"{SHORT[p]} {_k(v)}" for p, v in q.items()),
        )
    ]


#: The thesis's claims as declared: the words (with ``{qps}`` for a load,
#: ``{setup}`` for a VM setup's abbreviation, ``{figure}`` for its figure),
#: the tolerance and the status. The thesis's claims are checked in groups
#: by :func:`shape_checks` (T, F: bare metal, printed without their
#: number), :func:`vm_checks` (P) and :func:`virtio_checks` (V), on
#: whichever loads and setups were run, so the declarations name their
#: group's function. Table 4.1 is what the costs were fitted on
#: (docs/calibration.md): its claims are fits; Figure 4.1, Cai & Karsten's
#: results and the VM setups are predictions.


def _prediction(group):
    """A declaration of a claim that ``group`` checks and nothing was fitted on."""

    def declare(id_: str, words: str, tolerance: str = "none: the order") -> Claim:
        return Claim(id_, words, tolerance, PREDICTION, group)

    return declare


_bare_metal, _vm, _virtio = _prediction(shape_checks), _prediction(vm_checks), _prediction(virtio_checks)

CLAIMS = (
    Claim("T1", "throughput: no-coalescing < adaptive-coalescing < irq-suspend <= busy-wait",
          "busy-wait's QPS x 1.0001 (equal within rounding)", FIT, shape_checks),
    Claim("T2", "irq-suspend reaches at least 97 % of busy-wait's throughput", "97 %", FIT, shape_checks),
    Claim("T3", "irq-suspend and busy-wait spend at most 3 % in softirq", "3 % (softirq + irq)", FIT, shape_checks),
    _bare_metal("F1", "{qps}k QPS: irq-suspend's p99 within 25 % of busy-wait's, both below the interrupt-driven "
                "profiles", "25 %, at every load from 300k QPS"),
    _bare_metal("F2", "{qps}k QPS: adaptive-coalescing has the highest p99", "none: the order at the lowest load"),
    Claim("F3", "busy-wait uses >= 99 % CPU at every load", "99 %", CONSTRUCTION, shape_checks),
    _bare_metal("F4", "{qps}k QPS: irq-suspend's CPU at most 1.2 x adaptive-coalescing's", "1.2 x, at the lowest load"),
    _bare_metal("F5", "no-coalescing uses more CPU than adaptive-coalescing at every load"),
    _vm("P1", "irq-suspend and busy-wait gain more over the interrupt-driven profiles than on bare metal "
        "(QPS ratios larger for {setup} than for BM)"),
    _vm("P2", P2_WORDS, "none: the direction (the thesis's figure is withheld in the copy here)"),
    _vm("P3", "interrupt-driven profiles lose more QPS to the VM than irq-suspend and busy-wait"
        "[, no-coalescing the most] (1 - QPS({setup})/QPS(BM))"),
    _vm("P4", "Figure {figure} repeats Figure 4.1 (CPU: host's busy share): (each of F1-F5)", "F1-F5's"),
    Claim("P5", "host CPU busy of the vCPU cores >= bare-metal CPU busy at every load, every profile "
          "(busy-wait: >= minus P5_BUSY_WAIT_SLACK_PT pt)", "P5_BUSY_WAIT_SLACK_PT", CONSTRUCTION, vm_checks),
    _vm("P6", "no-coalescing has the lowest closed-loop QPS"),
    _virtio("V1", "irq-suspend and busy-wait serve more than no-coalescing"),
    _virtio("V2", "the gain of irq-suspend and busy-wait over no-coalescing is smaller packed than aligned"),
    _virtio("V3", "irq-suspend and busy-wait spend less of the application vCPUs in softirq"),
    _virtio("V4", "irq-suspend and busy-wait still serve more than no-coalescing"),
    _virtio("V5", "packed serves more than aligned, profile by profile"),
    _virtio("V6", "busy-wait and irq-suspend take far fewer VM exits than no-coalescing (below half)", "0.5 x"),
    _virtio("V8", "at {qps}k QPS the three profiles' p99 are within 25 %", "25 %, at the lowest load"),
    _virtio("V10", "at {qps}k QPS every profile's p99 is above bare metal's"),
    _virtio("V12", "busy-wait's vCPUs ~100 % busy at every load; irq-suspend below it at the lowest; "
            "no-coalescing and irq-suspend rise with load", "99 %"),
)
