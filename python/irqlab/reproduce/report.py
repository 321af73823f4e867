"""Text, CSV, JSON and Markdown output of ``irqlab reproduce thesis``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from irqlab.reproduce.claim import tally
from irqlab.reproduce.thesis import (
    CAI_KARSTEN_CAVEATS,
    PROFILES,
    TABLE_4_1,
    VM_PAPER_NOTE,
    VM_PAPER_UNAVAILABLE,
    ShapeCheck,
    ThesisResult,
    VmSetup,
    cai_karsten_rows,
    explanation_rows,
    figure_4_1_rows,
    figure_rows,
    host_busy,
    latency,
    table_4_1_rows,
    vm_table_rows,
)
from irqlab.files import write_text_whole, write_whole

METRIC_LABEL = {
    "qps": "QPS",
    "ipc": "IPC",
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
        fmt = {"qps": "{:>12,.0f}", "cycles_per_query": "{:>12,.0f}", "ipc": "{:>12.3f}"}.get(str(row["metric"]), "{:>12.1f}")
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
    "The polling profiles predict each other; adaptive-coalescing's throughput and IPC are predicted within 6 % and "
    "its CPU split within 5 points; no-coalescing is not predicted: its interruption costs are calibrated on it. "
    "The all-profile fit stays the "
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
    return _figure_text(
        "Figure 4.1 (open loop): p95 / p99 latency (µs) and CPU utilisation (%)",
        r.open, PROFILES, lambda s: 100 - s.cpu_pct.idle,
    )


def _figure_text(title: str, open_: dict, profiles: tuple[str, ...], cpu) -> str:
    lines = [title, f"{'offered':>8}  " + "".join(f"{p:>26}" for p in profiles)]
    loads = sorted({q for (_, q) in open_})
    for q in loads:
        cells = []
        for p in profiles:
            s = open_.get((p, q))
            cells.append("\u2014" if s is None else f"{_us(latency(s, 'p95'))}/{_us(latency(s, 'p99'))} {cpu(s):>5.1f}%")
        lines.append(f"{q // 1000:>7}k  " + "".join(f"{c:>26}" for c in cells))
    return "\n".join(lines)


#: The heading of the VM part, in every output.
VM_TITLE = "Virtual machines (thesis §4.5–4.6): memcached in a KVM guest, 8 vCPUs pinned 1:1"


def vm_table_title(setup: VmSetup) -> str:
    return f"Table {setup.table} ({setup.label}, closed loop): irqlab; thesis {VM_PAPER_UNAVAILABLE}"


def vm_figure_title(setup: VmSetup) -> str:
    return (
        f"Figure {setup.figure} ({setup.label}, open loop): p95 / p99 latency (µs) and host CPU busy of the "
        f"vCPU cores (%); thesis {VM_PAPER_UNAVAILABLE}"
    )


#: What the VM tables' columns are, for the reports.
VM_TABLE_NOTE = (
    "user/system/softirq/steal are the guest's view of its vCPUs (softirq includes hard-IRQ time, as in "
    "Table 4.1); host busy is the host's busy share of the cores running the vCPUs (100 - host idle: guest "
    "time, exits, halt polling), split into exit% (KVM from an exit to the entry), irq% (the host's hard IRQs: "
    "VFIO vectors, kick IPIs, notifications, its NIC's) and vhost% among others; vs BM is the QPS change from "
    "Table 4.1's run of the profile."
)


def vm_table_text(r: ThesisResult, setup: VmSetup) -> str:
    """A VM setup's table: per profile QPS, its change from bare metal,
    cycles per query, the guest's CPU split, the host's busy share, VM exits
    and virtual interrupts per second, and the thesis column (unavailable)."""
    lines = [
        vm_table_title(setup),
        f"{'profile':<21}{'QPS':>10}{'vs BM':>9}{'cycles/q':>10}{'IPC':>7}{'user%':>7}{'sys%':>7}{'sirq%':>7}"
        f"{'steal%':>7}{'host busy%':>11}{'exit%':>7}{'irq%':>6}{'vhost%':>7}{'exits/s':>10}{'vIRQs/s':>10}  thesis",
    ]
    for row in vm_table_rows(r, setup):
        lines.append(
            f"{row['profile']:<21}{_qps(row['qps']):>10}{_pct(row['qps_vs_bare_metal_pct']):>9}"
            f"{_qps(row['cycles_per_query']):>10}{_ipc(row['ipc']):>7}{row['user']:>7.1f}{row['system']:>7.1f}"
            f"{row['softirq']:>7.1f}{row['steal']:>7.1f}{row['host_busy_pct']:>11.1f}{row['host_exit_pct']:>7.1f}"
            f"{row['host_irq_pct']:>6.1f}{row['host_vhost_pct']:>7.1f}{_qps(row['vm_exits_per_s']):>10}"
            f"{_qps(row['virtual_irqs_per_s']):>10}  {row['thesis']}"
        )
    return "\n".join(lines)


def _ipc(x: float) -> str:
    """An IPC, or ``—`` where the run has none (fixed costs, or no work)."""
    return "\u2014" if math.isnan(x) else f"{x:.3f}"


def vm_figure_text(r: ThesisResult, setup: VmSetup) -> str:
    return _figure_text(vm_figure_title(setup), r.vm[setup.key].open, setup.profiles, host_busy)


def vm_text(r: ThesisResult, vm_checks: list[ShapeCheck]) -> str:
    """The VM part: the skipped setups, each setup's table and figure, and
    the §4.6 claims; empty when no setup was run or skipped."""
    if not r.vm and not r.vm_skipped:
        return ""
    parts = [VM_TITLE + "\n" + "\n".join(_wrap(VM_PAPER_NOTE + " " + VM_TABLE_NOTE, 100))]
    parts += [f"skipped: {m}" for m in r.vm_skipped]
    for vm in r.vm.values():
        parts += [vm_table_text(r, vm.setup), vm_figure_text(r, vm.setup)]
    if r.vm:
        parts.append(checks_text(vm_checks, VM_CHECKS_TITLE))
    return "\n\n".join(parts)


VM_CHECKS_TITLE = "The thesis's VM claims (§4.5–4.6), checked on the simulation (BM = bare metal, QPS = closed loop)"


def _us(x: float) -> str:
    """A latency in a 7-wide column; ``—`` when the run completed no request."""
    return "\u2014".rjust(7) if math.isnan(x) else f"{x:>7.1f}"


def checks_text(checks: list[ShapeCheck], title: str = "The thesis's claims, checked on the simulation") -> str:
    """The title with how many hold (:func:`~irqlab.reproduce.claim.tally`),
    then each check marked, with its status and the setup it repeats."""
    lines = [f"{title}: {tally(checks)}"]
    for c in checks:
        lines.append(f"  [{'ok' if c.holds else 'NO'}] {c.claim}: {c.detail}{mark(c)}")
    return "\n".join(lines)


def mark(c: ShapeCheck) -> str:
    """`` [status]``, or `` [repeats X, not counted]``; empty when neither is known."""
    if c.repeats:
        return f" [repeats {c.repeats}, not counted]"
    return f" [{c.status}]" if c.status else ""


def write_csv(rows: list[dict[str, object]], path: Path) -> Path:
    """``rows`` as a CSV file."""
    write_whole(path, lambda tmp: pd.DataFrame(rows).to_csv(tmp, index=False))
    return path


def check_row(c: ShapeCheck) -> dict[str, object]:
    """A check for JSON: claim, holds, detail, and for a VM claim its number and setup."""
    row: dict[str, object] = {"claim": c.claim, "holds": c.holds, "detail": c.detail, "status": c.status}
    if c.id:
        row.update(id=c.id, setup=c.setup, repeats=c.repeats)
    return row


def title(r: ThesisResult) -> str:
    """The reports' title: what was reproduced."""
    if not r.vm:
        return "irqlab: the IRQ Suspend thesis on bare metal (Table 4.1, Figure 4.1)"
    tables = ", ".join(["4.1", *(vm.setup.table for vm in r.vm.values())])
    figures = ", ".join(["4.1", *(vm.setup.figure for vm in r.vm.values())])
    return f"irqlab: the IRQ Suspend thesis on bare metal and in VMs (Tables {tables}; Figures {figures})"


def write_files(
    r: ThesisResult, checks: list[ShapeCheck], out: Path, figures: list[Path], vm_checks: list[ShapeCheck] = ()
) -> list[Path]:
    vm_checks = list(vm_checks)
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
    for vm in r.vm.values():
        tables.append((f"{vm.setup.table_study}.csv", vm_table_rows(r, vm.setup)))
        tables.append((f"{vm.setup.figure_study}.csv", figure_rows(vm.open, vm.setup.profiles)))
    for name, rows in tables:
        path = out / name
        write_whole(path, lambda tmp: pd.DataFrame(rows).to_csv(tmp, index=False))
        written.append(path)
    summaries = {
        "closed": {p: s.to_dict() for p, s in r.closed.items()},
        "open": [{"profile": p, "offered_qps": q, **s.to_dict()} for (p, q), s in sorted(r.open.items())],
        "cai_karsten": {p: s.to_dict() for p, s in r.cai_karsten.items()},
        "leave_one_out": {p.fit.holdout: p.summary.to_dict() for p in r.holdout},
        "checks": [check_row(c) for c in checks],
        "vm": {
            vm.setup.key: {
                "closed": {p: s.to_dict() for p, s in vm.closed.items()},
                "open": [{"profile": p, "offered_qps": q, **s.to_dict()} for (p, q), s in sorted(vm.open.items())],
            }
            for vm in r.vm.values()
        },
        "vm_checks": [check_row(c) for c in vm_checks],
        "vm_skipped": r.vm_skipped,
        "seed": r.seed,
        "closed_duration_s": r.closed_duration_s,
        "open_duration_s": r.open_duration_s,
    }
    path = out / "summaries.json"
    write_text_whole(path, json.dumps(summaries, indent=1))
    written.append(path)
    scenarios = ", ".join(f"`scenarios/thesis/{vm.setup.scenario}`" for vm in r.vm.values())
    md = [
        f"# {title(r)}",
        "",
        f"Simulated with `scenarios/thesis/bare-metal.toml`{f' and {scenarios}' if scenarios else ''}, seed "
        f"{r.seed}; closed loop {r.closed_duration_s} s and open loop {r.open_duration_s} s of simulated time per point.",
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
    if r.vm or r.vm_skipped:
        md += [f"## {VM_TITLE}", "", *_wrap(VM_PAPER_NOTE + " " + VM_TABLE_NOTE, 100), ""]
        md += [f"Skipped: {m}" + "\n" for m in r.vm_skipped]
        for vm in r.vm.values():
            md += ["```", vm_table_text(r, vm.setup), "```", "", "```", vm_figure_text(r, vm.setup), "```", ""]
        if r.vm:
            md += ["```", checks_text(vm_checks, VM_CHECKS_TITLE), "```", ""]
    md += [f"![{f.stem}]({f.name})" for f in figures]
    path = out / "report.md"
    write_text_whole(path, "\n".join(md) + "\n")
    written.append(path)
    return written
