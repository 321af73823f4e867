"""The ITR paper: Emmerich, Raumer, Beifuß et al., "Optimizing Latency and
CPU Load in Packet Processing Systems" (SPECTS 2015), Figures 3, 5, 7 and 8
and the claims of §IV–V, reproduced from the simulator.

The paper's device under test (§III) is one core of a 3.3 GHz Xeon
E3-1230 v2 forwarding minimum-size frames in the kernel (Open vSwitch) on an
Intel 82599 with one queue, under constant-bit-rate load from 0.02 to 2.5
Mpps. It compares three interrupt throttling (ITR) regimes of the ixgbe
driver: none (Figure 3), ixgbe's default dynamic 3-state ITR (Figure 5),
and the paper's linear ITR, ``r = r_max − ρ (r_max − r_min) / ρ_max`` with
100 000 and 8 000 IRQ/s and ρ_max = 2.1 Mpps (Figure 8); Figure 7 is the
load-latency product ``P_ll = c_pkt · t`` (busy cycles per packet times
mean latency) of the two ITRs.

Here that device is ``scenarios/itr/forwarding.toml``, the regime its field
``itr.policy`` ("off", "ixgbe", "linear") and the offered load ``load.qps``
(packets/s). Each figure is a study file beside it
(``scenarios/itr/figure-{3,5,8,7}.study.toml``: an axis over ``itr.policy``,
one over ``load.qps``), run by the study machinery that ``irqlab sweep``
and ``irqlab reproduce thesis`` use, each into its own results store (a
Parquet dataset) under the output directory. The runs shared by several
figures (no ITR is in Figures 3, 5 and 8) are run once per store: a store
holds one study, and a point's seed derives from the point (regime, load),
not from the study, so a shared run is the same run in every store —
:func:`read_itr` checks that they are identical and reports it. The whole
grid takes about 25 s on two cores, so running the duplicates (some 12 s)
costs less than a cache shared between stores would in complexity.

The claims (C1–C13, :mod:`irqlab.reproduce.itr_checks`) are computed from
what the stores hold, each with the paper's sentence, the tolerance chosen
from its wording, whether it holds and the measured numbers. Nothing
simulated is written down here.

What was fitted: one constant, ``costs.forward_packet_cycles`` (1 238
cycles per forwarded packet at 3.3 GHz), chosen so that the maximum
forwarding rate without ITR is the paper's 2.1 Mpps; claim C4 (overload at
2.1 Mpps) is therefore the calibration anchor, not a prediction. The
interrupt path keeps the thesis's fitted cycle counts unchanged (same core
microarchitecture), the ITR policies are ports of ixgbe's and of the
paper's patch with the paper's constants, and the rest of the scenario is
published values or estimates (its comments say which). Everything else —
the curves, the other twelve claims — is a prediction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from irqlab.reproduce import itr_checks, itr_explain
from irqlab.reproduce.claim import ShapeCheck
from irqlab.reproduce.itr_checks import IXGBE, LINEAR, OFF, Runs, busy, mean_us, mpps, overloaded, pll
from irqlab.reproduce.flags import duration_option
from irqlab.reproduce.paper import Paper, Table
from irqlab.reproduce.studies import adjust_spec, run_studies, scenario_dir
from irqlab.study.axis import Axis
from irqlab.study.spec import Study, build_study, load_study_file
from irqlab.study.store import STUDY
from irqlab.summary import Summary

#: The figures, in the order they are run, with their regimes in the order
#: of the study files' ``itr.policy`` axes.
FIGURES: dict[str, tuple[str, ...]] = {
    "figure-3": (OFF,),
    "figure-5": (OFF, IXGBE),
    "figure-8": (OFF, IXGBE, LINEAR),
    "figure-7": (IXGBE, LINEAR),
}
#: What the paper calls them.
FIGURE_TITLES = {
    "figure-3": "Figure 3: experimental results without IRQ throttling",
    "figure-5": "Figure 5: experimental results with default ITR",
    "figure-8": "Figure 8: experimental results with our improved ITR",
    "figure-7": "Figure 7: comparison of the load-latency products",
}
#: Figure 7's loads stop here ("an offered load from 0 to 2.1 Mpps").
FIGURE_7_MAX_PPS = 2_100_000
#: The regimes as the tables, plots and reports name them.
LABELS = {OFF: "no ITR", IXGBE: "ixgbe default ITR", LINEAR: "linear ITR"}
#: ``costs.forward_packet_cycles`` as fitted (the core's default).
FORWARD_PACKET_CYCLES_FIT = 1238
#: The interrupt-path constants the ITR scenario keeps from the thesis fit.
INTERRUPT_PATH = (
    "hardirq_cycles", "softirq_entry_cycles", "napi_poll_cycles", "interrupt_penalty_cycles", "irq_cold_cycles",
)


def itr_dir() -> Path:
    """``scenarios/itr`` of the working directory, else of the repository."""
    return scenario_dir("itr", "forwarding.toml")


def default_scenario() -> Path:
    """``scenarios/itr/forwarding.toml``."""
    return itr_dir() / "forwarding.toml"


def itr_studies(
    scenario: Optional[Path] = None,
    duration_s: Optional[float] = None,
    seed: Optional[int] = None,
    loads: Optional[tuple[int, ...]] = None,
    overrides: tuple[str, ...] = (),
) -> list[Study]:
    """The four figures' studies from their files, in :data:`FIGURES` order,
    with what the command line changes: another scenario, the duration, the
    base seed, the offered loads (Figure 7: those up to 2.1 Mpps), and
    ``overrides`` (``"key=value"``) added to their ``[set]``."""
    studies = []
    for name in FIGURES:
        spec = adjust_spec(load_study_file(itr_dir() / f"{name}.study.toml"), scenario, duration_s, seed, overrides)
        if loads is not None:
            chosen = tuple(q for q in loads if name != "figure-7" or q <= FIGURE_7_MAX_PPS) or tuple(loads)
            spec["axes"] = [a if a.field != "load.qps" else Axis("load.qps", chosen) for a in spec["axes"]]
        studies.append(build_study(spec.pop("scenario"), **spec))
    return studies


@dataclass
class ItrResult:
    """Each figure's runs, keyed by (regime, offered packets/s), as its
    results store holds them."""

    figures: dict[str, dict[tuple[str, int], Summary]] = field(default_factory=dict)
    #: Each figure's results directory.
    directories: dict[str, Path] = field(default_factory=dict)
    seed: int = 1
    duration_s: float = math.nan
    #: The scenario as run (resolved, with the studies' overrides).
    resolved: dict = field(default_factory=dict)
    #: (regime, load) pairs run in two stores or more, and those whose
    #: summaries differ between stores (none: the runs are deterministic).
    shared: int = 0
    mismatched: list[tuple[str, int]] = field(default_factory=list)

    def runs(self, name: str) -> dict[tuple[str, int], Summary]:
        return self.figures.get(name, {})

    def all_runs(self) -> dict[tuple[str, int], Summary]:
        """Every figure's runs in one mapping (a shared run is the same run)."""
        merged: dict[tuple[str, int], Summary] = {}
        for runs in self.figures.values():
            merged.update(runs)
        return merged


def run_itr(
    scenario: Optional[Path] = None,
    duration_s: Optional[float] = None,
    seed: Optional[int] = None,
    loads: Optional[tuple[int, ...]] = None,
    *,
    out: Path,
    jobs: Optional[int] = None,
    resume: bool = False,
    quiet: bool = False,
    overrides: tuple[str, ...] = (),
) -> ItrResult:
    """Run the four figures' studies into ``out/figure-3`` … ``out/figure-7``
    on every core (``jobs``: that many) and read them back.

    Without ``resume`` the results directories start afresh (earlier results
    there are removed); with it, what a previous, interrupted reproduction
    finished is kept.
    """
    run_studies(itr_studies(scenario, duration_s, seed, loads, overrides), out, jobs=jobs, resume=resume, quiet=quiet)
    return read_itr(out)


def read_itr(out: Path) -> ItrResult:
    """The reproduction's runs from the results directories under ``out``
    (the claims are checked on what the stores hold)."""
    from irqlab import results

    r = ItrResult()
    for name in FIGURES:
        directory = out / name
        frame = results.succeeded(results.load(directory))
        r.directories[name] = directory
        r.figures[name] = {
            (str(row["itr.policy"]), int(row["load.qps"])): results.summary(row) for _, row in frame.iterrows()
        }
        if name == "figure-3":
            r.duration_s = float(frame["duration_s"].iloc[0]) if len(frame) else math.nan
            spec = load_study_file(directory / STUDY)
            r.seed = int(spec["seed"])
            r.resolved = spec["scenario"].with_overrides(list(spec["overrides"])).resolved()
    seen: dict[tuple[str, int], tuple] = {}
    shared: set[tuple[str, int]] = set()
    for runs in r.figures.values():
        for key, s in runs.items():
            mark = _identity(s)
            if key in seen:
                shared.add(key)
                if seen[key] != mark and key not in r.mismatched:
                    r.mismatched.append(key)
            seen[key] = mark
    r.shared = len(shared)
    return r


def _identity(s: Summary) -> tuple:
    """What makes two runs the same run (not their wall time)."""
    return (s.seed, s.throughput_qps, s.latency_us.mean, s.latency_us.p99, s.cpu_pct.idle, s.irqs_per_s,
            s.get("drops"), s.get("sim_events"))


# -- claims ----------------------------------------------------------------------


def fitted_note(r: ItrResult) -> str:
    """Which constant was fitted and what is a prediction, with the values as run."""
    costs = r.resolved.get("costs", {})
    itr = r.resolved.get("itr", {})
    ghz = r.resolved.get("cpu", {}).get("freq_ghz", math.nan)
    fpc = costs.get("forward_packet_cycles")
    changed = "" if fpc == FORWARD_PACKET_CYCLES_FIT else f" (the fit is {FORWARD_PACKET_CYCLES_FIT}; this run sets {fpc})"
    path = ", ".join(f"{k.removesuffix('_cycles').replace('_', ' ')} {costs.get(k, '?')}" for k in INTERRUPT_PATH)
    return (
        f"Fitted: one constant, costs.forward_packet_cycles = {fpc} cycles per forwarded packet at {ghz:g} GHz"
        f"{changed}, chosen so that the maximum forwarding rate without ITR is the paper's 2.1 Mpps; C4 checks "
        f"that anchor and is not a prediction. The interrupt path keeps the thesis's fitted cycle counts unchanged "
        f"({path}); the ITR policies are ixgbe's 3-state machine and the paper's patch with its constants (r_max "
        f"{itr.get('max_rate', '?')}/s, r_min {itr.get('min_rate', '?')}/s, "
        f"rho_max {mpps(float(itr.get('rho_max_pps', math.nan)))}). "
        "Everything else - the curves and C1-C3, C5-C13 - is a prediction."
    )


def shape_checks(r: ItrResult) -> list[ShapeCheck]:
    """C1–C13 on the stores' runs (:func:`irqlab.reproduce.itr_checks.checks`)."""
    fpc = r.resolved.get("costs", {}).get("forward_packet_cycles", "?")
    fitted = f"FITTED: costs.forward_packet_cycles = {fpc} was chosen to put this point at 2.1 Mpps"
    return itr_checks.checks(
        r.runs("figure-3"), r.runs("figure-5"), r.runs("figure-8"), r.runs("figure-7"), fitted
    )


def explanations(r: ItrResult, checks: list[ShapeCheck]) -> dict[str, str]:
    """Why each failing claim fails, by claim id (:mod:`irqlab.reproduce.itr_explain`)."""
    runs = r.all_runs()
    found = {c.id: itr_explain.explain(c, runs, r.resolved) for c in checks}
    return {k: v for k, v in found.items() if v}


def shared_note(r: ItrResult) -> str:
    """One sentence on the runs that several figures share."""
    if r.mismatched:
        which = ", ".join(f"{p} at {mpps(q)}" for p, q in r.mismatched[:5])
        return f"Runs shared by figures: {r.shared}; {len(r.mismatched)} DIFFER between stores ({which})."
    return (
        f"Runs shared by figures: {r.shared} (regime, load) pairs are in two stores or more, identical in each "
        "(a point's seed derives from the point, not the study)."
    )


# -- tables ----------------------------------------------------------------------


def with_no_itr(r: ItrResult, name: str) -> dict[tuple[str, int], Summary]:
    """Figure ``name``'s runs, with Figure 3's no-ITR runs where it has none:
    Figure 7's grid stops at 2.1 Mpps, where its ITR runs have not dropped
    yet, so its overload point is no ITR's (the ITRs do not move it, C8)."""
    merged = {k: v for k, v in r.runs("figure-3").items() if k[0] == OFF}
    merged.update(r.runs(name))
    return merged


def is_overloaded(runs: Runs, policy: str, load: int) -> bool:
    """The run is overloaded, or no ITR is at that load (:func:`with_no_itr`)."""
    return overloaded(runs, policy, load) or ((OFF, load) in runs and overloaded(runs, OFF, load))


def figure_rows(r: ItrResult, name: str) -> list[dict[str, object]]:
    """One row per run of figure ``name``, by load then regime."""
    runs = r.runs(name)
    judged = with_no_itr(r, name)
    order = FIGURES[name]
    rows: list[dict[str, object]] = []
    for (p, q), s in sorted(runs.items(), key=lambda kv: (kv[0][1], order.index(kv[0][0]) if kv[0][0] in order else 9)):
        rows.append(
            {
                "figure": name,
                "itr_policy": p,
                "offered_pps": q,
                "throughput_pps": float(s.throughput_qps),
                "latency_mean_us": mean_us(s),
                "latency_p99_us": math.nan if s.latency_us.p99 is None else float(s.latency_us.p99),
                "cpu_pct": busy(s),
                "irqs_per_s": float(s.irqs_per_s),
                "packets_per_irq": float(s.packets_per_irq),
                "cycles_per_packet": float(s.cycles_per_query),
                "load_latency_product": pll(s),
                "drops": int(s.get("drops") or 0),
                "overloaded": is_overloaded(judged, p, q),
            }
        )
    return rows


def figure_7_rows(r: ItrResult) -> list[dict[str, object]]:
    """Per load of Figure 7: both P_ll, their difference (ixgbe − linear)
    and that difference relative to ixgbe's."""
    runs = r.runs("figure-7")
    judged = with_no_itr(r, "figure-7")
    loads = sorted({q for (p, q) in runs if (IXGBE, q) in runs and (LINEAR, q) in runs})
    rows: list[dict[str, object]] = []
    for q in loads:
        x, y = pll(runs[(IXGBE, q)]), pll(runs[(LINEAR, q)])
        rows.append(
            {
                "offered_pps": q,
                "pll_ixgbe": x,
                "pll_linear": y,
                "difference": x - y,
                "difference_pct": 100.0 * (x - y) / x if x else math.nan,
                "overloaded": is_overloaded(judged, IXGBE, q) or is_overloaded(judged, LINEAR, q),
            }
        )
    return rows


def _cell(x: float, fmt: str, width: int) -> str:
    return ("\u2014" if isinstance(x, float) and math.isnan(x) else fmt.format(x)).rjust(width)


def figure_text(r: ItrResult, name: str) -> str:
    """Figure ``name`` as a table: per load, per regime throughput (Mpps),
    mean latency (µs), CPU load (%), IRQ/s and P_ll (k cycle·µs); * marks
    an overloaded run."""
    order = FIGURES[name]
    rows = {(row["itr_policy"], row["offered_pps"]): row for row in figure_rows(r, name)}
    loads = sorted({q for (_, q) in rows})
    head1 = f"{'offered':>8}" + "".join(f"  {LABELS[p]:^40}" for p in order)
    head2 = f"{'Mpps':>8}" + "".join(f"  {'Mpps':>7}{'lat µs':>8}{'CPU %':>6}{'IRQ/s':>9}{'P_ll k':>10}" for _ in order)
    lines = [f"{FIGURE_TITLES[name]} (irqlab; * overloaded)", head1, head2]
    for q in loads:
        cells = []
        for p in order:
            row = rows.get((p, q))
            if row is None:
                cells.append(f"  {'—':>40}")
                continue
            cells.append(
                "  " + _cell(float(row["throughput_pps"]) / 1e6, "{:.4f}", 7)
                + _cell(float(row["latency_mean_us"]), "{:.1f}", 8)
                + _cell(float(row["cpu_pct"]), "{:.1f}", 6)
                + _cell(float(row["irqs_per_s"]), "{:,.0f}", 9)
                + _cell(float(row["load_latency_product"]) / 1e3, "{:,.1f}", 9)
                + ("*" if row["overloaded"] else " ")
            )
        lines.append(f"{q / 1e6:>8.3f}" + "".join(cells))
    return "\n".join(lines)


def figure_7_text(r: ItrResult) -> str:
    lines = [
        f"{FIGURE_TITLES['figure-7']} (irqlab; P_ll in k cycle·µs; * overloaded)",
        f"{'offered Mpps':>12}{'ixgbe':>10}{'linear':>10}{'ixgbe-linear':>14}{'%':>7}",
    ]
    for row in figure_7_rows(r):
        lines.append(
            f"{int(row['offered_pps']) / 1e6:>12.3f}"
            + _cell(float(row["pll_ixgbe"]) / 1e3, "{:,.1f}", 10)
            + _cell(float(row["pll_linear"]) / 1e3, "{:,.1f}", 10)
            + _cell(float(row["difference"]) / 1e3, "{:,.1f}", 14)
            + _cell(float(row["difference_pct"]), "{:+.0f}", 7)
            + ("*" if row["overloaded"] else "")
        )
    return "\n".join(lines)


CHECKS_TITLE = "The ITR paper's claims (§IV-V), checked on the simulation"


def title(r: ItrResult) -> str:
    return "irqlab: the ITR paper (Emmerich et al., SPECTS 2015), Figures 3, 5, 7 and 8"


def intro(r: ItrResult) -> str:
    return (
        f"Simulated with scenarios/itr/forwarding.toml (one {r.resolved.get('cpu', {}).get('freq_ghz', '?')} GHz core "
        f"forwarding 60-byte frames on an 82599, constant-bit-rate load), seed {r.seed}, {r.duration_s:g} s of "
        f"simulated time per point after {r.resolved.get('run', {}).get('warmup_s', '?')} s of warm-up. Latency is "
        "the mean; CPU load is 100 - idle; P_ll = busy cycles per packet x mean latency. Overloaded runs (drops, or "
        "offered load at the regime's capacity) are marked and, as in the paper, left out of the latency plots."
    )


# -- the reproduction ------------------------------------------------------------


def summaries(r: ItrResult) -> dict:
    """``summaries.json``'s data: every run of every figure, as stored."""
    return {
        "figures": {
            name: [{"itr_policy": p, "offered_pps": q, **s.to_dict()} for (p, q), s in sorted(r.runs(name).items())]
            for name in FIGURES
        }
    }


def warnings(r: ItrResult) -> list[str]:
    """The runs' warnings; not that an overloaded run dropped packets:
    overload is part of the paper's experiment (C4, C5), and the tables
    mark those runs."""
    from irqlab.reproduce.where import located, value

    # Each named by its figure, ITR policy and offered load (issue 62, item 17).
    runs = [((name, f"itr.policy = {policy}", f"at {value(pps)} packets/s"), s)
            for name in FIGURES for (policy, pps), s in r.runs(name).items()]
    return located((where, w) for where, s in runs for w in s.warnings
                   if not (int(s.get("drops") or 0) > 0 and "were dropped" in w))


#: Each column's format in the report's tables.
HTML_FORMATS = {
    "offered_pps": "{:,.0f}", "throughput_pps": "{:,.0f}", "latency_mean_us": "{:.1f}", "latency_p99_us": "{:.1f}",
    "cpu_pct": "{:.1f}", "irqs_per_s": "{:,.0f}", "packets_per_irq": "{:.1f}", "cycles_per_packet": "{:,.0f}",
    "load_latency_product": "{:,.0f}", "pll_ixgbe": "{:,.0f}", "pll_linear": "{:,.0f}", "difference": "{:,.0f}",
    "difference_pct": "{:+.1f}",
}


def html_table(rows: list[dict[str, object]]) -> str:
    """Rows as an HTML table (:func:`irqlab.htmltable.table_html`), the
    columns of :data:`HTML_FORMATS` in theirs (NaN as a dash)."""
    from irqlab.htmltable import table_html

    def fmt(f: str):
        return lambda x: "\u2014" if x is None or x != x else f.format(x)

    keys = {k for row in rows for k in row}
    return table_html(rows, formats={k: fmt(f) for k, f in HTML_FORMATS.items() if k in keys})


def _figure(name: str) -> Table:
    return Table(name, lambda r: figure_rows(r, name), FIGURE_TITLES[name], lambda r: figure_text(r, name),
                 key=f"figures/{name}")


#: The reproduction as the harness runs it (:mod:`irqlab.reproduce.harness`).
PAPER = Paper(
    name="itr",
    studies=tuple(FIGURES),
    scenario="scenarios/itr/forwarding.toml",
    scenario_needs={"nic.kind": "82599", "app.kind": "forwarding"},
    # Looked up when called, so that a test can stand in for the runs.
    run=lambda *a, **k: run_itr(*a, **k),
    options=duration_option,
    warnings=warnings,
    checks=shape_checks,
    claims=itr_checks.CLAIMS,
    explain=explanations,
    title=title,
    intro=intro,
    checks_title=CHECKS_TITLE,
    notes=(fitted_note, shared_note),
    extra_json=lambda r: {"shared_runs": {"pairs": r.shared, "mismatched": [list(k) for k in r.mismatched]}},
    summaries=summaries,
    tables=(
        _figure("figure-3"),
        _figure("figure-5"),
        _figure("figure-8"),
        # Figure 7's runs: a CSV and JSON, not a table of the reports (its P_ll table is).
        Table("figure-7", lambda r: figure_rows(r, "figure-7"), html=False, key="figures/figure-7"),
        Table("figure-7-pll", figure_7_rows, FIGURE_TITLES["figure-7"], figure_7_text),
    ),
    plots="irqlab.reproduce.itr_plots",
    html_table=html_table,
)
