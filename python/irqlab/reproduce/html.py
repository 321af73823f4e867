"""The HTML report of ``irqlab reproduce thesis``: the thesis's tables and
claims first, then the generic study report of every results store."""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Optional

from irqlab.reproduce.claim import tally
from irqlab.reproduce.thesis import (
    CAI_KARSTEN_CAVEATS,
    CAI_KARSTEN_SOURCE,
    ShapeCheck,
    ThesisResult,
    cai_karsten_rows,
    explanation_rows,
    figure_4_1_rows,
    figure_rows,
    table_4_1_rows,
    vm_table_rows,
)


def _table(rows: list[dict[str, object]], floats: str = "") -> str:
    """Rows as a table (:func:`irqlab.htmltable.table_html`): headers with
    units and one number format per column, chosen from its values."""
    from irqlab.reproduce.claims import frame_html

    return frame_html(rows, floats)


def _renamed_table(
    rows: list[dict[str, object]], columns: dict[str, str], formats: dict[str, str], float_format
) -> str:
    """``rows``' ``columns`` (key → heading) as an HTML table; a column in
    ``formats`` (by key or heading) is formatted so (a missing value as
    "—"), other numbers by ``float_format``."""
    from irqlab.htmltable import MISSING, table_html

    def fmt(f):
        return lambda x: MISSING if x is None or (isinstance(x, float) and x != x) else f(x)

    key_of = {heading: key for key, heading in columns.items()}
    given = {key_of.get(k, k): fmt(f.format) for k, f in formats.items()}
    others = {k: fmt(float_format) for k in columns if k not in given and rows and isinstance(rows[0].get(k), float)}
    return table_html(rows, list(columns), headers=columns, formats={**others, **given})


def _image(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    alt = html.escape(path.stem)
    return f'<figure><img src="data:image/png;base64,{data}" alt="{alt}"><figcaption>{alt}</figcaption></figure>'


def _claims(checks: list[ShapeCheck]) -> str:
    """The claims as lists grouped by status (predictions, fits, by construction)."""
    from irqlab.reproduce.claims import grouped_claims_html
    from irqlab.reproduce.report import mark

    return grouped_claims_html(checks, lambda c: (
        f'<li class="{"ok" if c.holds else "no"}"><b>{"holds" if c.holds else "does not hold"}</b>: '
        f"{html.escape(c.claim)} <span>({html.escape(c.detail)})</span>{html.escape(mark(c))}</li>"
    ))


def thesis_sections(
    result: ThesisResult, checks: list[ShapeCheck], figures: list[Path], vm_checks: list[ShapeCheck] = ()
) -> list[tuple[str, str]]:
    """(heading, HTML) sections specific to the thesis."""
    claims = _claims(checks)
    sections = [
        (
            "Table 4.1: the thesis beside the simulation",
            "<p>Each cell: the thesis's value, the simulated one and the deviation, relative (%) for QPS, IPC "
            "and cycles per query, in points (pt) for CPU shares; the simulated softirq share includes hard-IRQ "
            "time (the thesis reports no IRQ column).</p>"
            + table_4_1_layout(result)
            + '<p class="note">As CSV: <a href="table-4.1.csv">table-4.1.csv</a></p>',
        ),
    ]
    if figures:
        sections.append(("Figures in the thesis's layout", FIGURES_NOTE + "".join(_image(f) for f in figures)))
    sections.append(
        (
            "The thesis's claims, checked on the simulation",
            f"<p>{html.escape(tally(checks))}. Each is checked on the results stores below "
            f"(seed {result.seed}, closed loop {result.closed_duration_s} s and open loop "
            f"{result.open_duration_s} s simulated per run).</p>{claims}",
        )
    )
    if result.holdout:
        sections.append(holdout_section(result))
    if result.cai_karsten:
        sections.append(cai_karsten_section(result))
    sections += [
        ("Why: what explains the throughput differences (closed loop)", _table(explanation_rows(result))),
        ("Figure 4.1 (open loop)", _table(figure_4_1_rows(result))),
    ]
    vm = vm_sections(result, list(vm_checks))
    if vm:
        # One section, its parts under their own headings: the contents stay short.
        (title_, intro), *parts = vm
        sections.append((title_, intro + "".join(f"<h3>{html.escape(h)}</h3>{body}" for h, body in parts)))
    return sections


#: Why Figure 4.1 has no points of the thesis's.
FIGURES_NOTE = (
    '<p class="note">The thesis states no values for Figure 4.1 (§4.4.2-4.4.3 describe its curves\' shapes, '
    "which the claims below check), so its figures show the simulation only; Table 4.1's chart puts the thesis's "
    "bars beside irqlab's.</p>"
)

#: Table 4.1's columns as the thesis prints them, with their formats.
TABLE_4_1_COLUMNS = (
    ("qps", "QPS", "{:,.0f}"),
    ("ipc", "IPC", "{:.3f}"),
    ("cycles_per_query", "Cycles per query", "{:,.0f}"),
    ("user", "User (%)", "{:.1f}"),
    ("system", "System (%)", "{:.1f}"),
    ("softirq", "Softirq (%)", "{:.1f}"),
)


def table_4_1_layout(result: ThesisResult) -> str:
    """Table 4.1 as the thesis lays it out (a row per profile, a column per
    metric), each profile's thesis values over irqlab's with the deviation
    (:func:`irqlab.htmltable.paired_table_html`)."""
    from irqlab.htmltable import paired_table_html
    from irqlab.reproduce.plots import LABELS

    rows: dict[str, dict[str, object]] = {}
    for r in table_4_1_rows(result):
        row = rows.setdefault(str(r["profile"]), {"profile": LABELS.get(str(r["profile"]), str(r["profile"]))})
        row[str(r["metric"])] = r["simulated"]
        row[f"thesis_{r['metric']}"] = r["paper"]
    shown = [(m, h, f) for m, h, f in TABLE_4_1_COLUMNS if any(m in row for row in rows.values())]
    ordered = [{"profile": row["profile"], **{k: row.get(k) for m, _, _ in shown for k in (m, f"thesis_{m}")}}
               for row in rows.values()]
    return paired_table_html(ordered, headers={"profile": "Profile", **{m: h for m, h, _ in shown}},
                             formats={m: (lambda f: lambda v: "\u2014" if v is None else f.format(v))(f)
                                      for m, _, f in shown})


def vm_sections(result: ThesisResult, checks: list[ShapeCheck]) -> list[tuple[str, str]]:
    """The VM part (§4.6): the claims, then each setup's table and figure;
    none when no setup was run or skipped."""
    from irqlab.reproduce.report import VM_CHECKS_TITLE, VM_TABLE_NOTE, VM_TITLE, vm_figure_title, vm_table_title
    from irqlab.reproduce.thesis import VM_PAPER_NOTE

    if not result.vm and not result.vm_skipped:
        return []
    skipped = "".join(f'<p class="note">Skipped: {html.escape(m)}</p>' for m in result.vm_skipped)
    scenarios = ", ".join(f"<code>scenarios/thesis/{html.escape(vm.setup.scenario)}</code>" for vm in result.vm.values())
    intro = (
        "<p>Table 4.1's and Figure 4.1's studies rerun with memcached in a KVM guest"
        + (f" ({scenarios})" if scenarios else "")
        + f": same seeds, durations and loads. {html.escape(VM_PAPER_NOTE)} {html.escape(VM_TABLE_NOTE)}</p>"
    )
    sections = [(VM_TITLE, intro + skipped)]
    if result.vm:
        sections.append(
            (VM_CHECKS_TITLE, f"<p>{html.escape(tally(checks))}.</p>{_claims(checks)}")
        )
    columns = {
        "profile": "profile", "qps": "QPS", "qps_vs_bare_metal_pct": "QPS vs bare metal %",
        "cycles_per_query": "cycles/query", "ipc": "IPC", "host_guest_pct": "host: guest %",
        "host_exit_pct": "host: exits %", "host_irq_pct": "host: IRQs %", "host_vhost_pct": "host: vhost %",
        "host_halt_poll_pct": "host: halt poll %", "user": "user %", "system": "system %", "softirq": "softirq %",
        "steal": "steal %", "host_busy_pct": "host busy %", "vm_exits_per_s": "VM exits/s",
        "virtual_irqs_per_s": "virtual IRQs/s", "thesis": "thesis",
    }
    formats = {
        "QPS": "{:,.0f}", "QPS vs bare metal %": "{:+.2f}", "cycles/query": "{:,.0f}", "VM exits/s": "{:,.0f}",
        "virtual IRQs/s": "{:,.0f}", "IPC": "{:.3f}",
    }
    for vm in result.vm.values():
        table = _renamed_table(vm_table_rows(result, vm.setup), columns, formats, lambda x: f"{x:.1f}")
        sections.append((vm_table_title(vm.setup), table))
        sections.append((vm_figure_title(vm.setup), _table(figure_rows(vm.open, vm.setup.profiles))))
    return sections


def holdout_section(result: ThesisResult) -> tuple[str, str]:
    """Each Table 4.1 profile predicted by the leave-one-out fit that never saw it."""
    from irqlab.reproduce import holdout
    from irqlab.reproduce.report import HOLDOUT_NOTE, HOLDOUT_TITLE, holdout_rows

    columns = {
        "held_out": "held out", "fitted_on": "fitted on", "qps": "QPS", "thesis_qps": "thesis QPS",
        "qps_pct": "QPS error %", "cycles_per_query_pct": "cycles/query %", "user_pt": "user pt",
        "system_pt": "system pt", "softirq_pt": "softirq pt", "in_sample_qps_errors": "in-sample QPS errors (fit)",
    }
    table = _renamed_table(
        holdout_rows(result), columns, {"QPS": "{:,.0f}", "thesis QPS": "{:,.0f}"}, lambda x: f"{x:+.1f}"
    )
    proc = result.holdout_procedure
    text = (
        "<p>For each profile of Table 4.1, the cost constants fitted on the other three "
        f"(<code>tools/calibrate.py --leave-one-out</code>, best of {html.escape(str(proc.get('starts', '?')))} "
        f"starts, {html.escape(str(proc.get('duration_s', '?')))} s per fit run; kept in "
        f"<code>scenarios/thesis/{holdout.LOO_FILE}</code>), run on the held-out profile at Table 4.1's "
        f"duration ({result.closed_duration_s} s) and seed. {html.escape(HOLDOUT_NOTE)}</p>"
    )
    return (HOLDOUT_TITLE, text + table)


def cai_karsten_section(result: ThesisResult) -> tuple[str, str]:
    """The second measurement beside Table 4.1: their QPS, the profile each
    configuration maps to, irqlab's QPS, the error and both ratios to each
    study's own vanilla."""
    from irqlab.reproduce.report import CAI_KARSTEN_TITLE

    columns = {
        "configuration": "configuration", "their_qps": "their QPS", "profile": "irqlab profile",
        "irqlab_qps": "irqlab QPS", "error_pct": "error %", "their_ratio_to_vanilla": "theirs / their vanilla",
        "irqlab_ratio_to_vanilla": "irqlab / irqlab's vanilla",
    }
    formats = {"their QPS": "{:,.0f}", "irqlab QPS": "{:,.0f}", "error %": "{:+.1f}"}
    table = _renamed_table(cai_karsten_rows(result), columns, formats, lambda x: f"{x:.3f}")
    text = (
        f"<p>Run on the thesis scenario unchanged, no constant tuned to these numbers (seed {result.seed}, "
        f"{result.closed_duration_s} s simulated per run). {html.escape(CAI_KARSTEN_CAVEATS)}</p>"
        f'<p class="note">Source: {html.escape(CAI_KARSTEN_SOURCE)}.</p>'
    )
    return (CAI_KARSTEN_TITLE, text + table)


def sensitivity_section(variants: list, tornado: Path) -> tuple[str, str]:
    """The sensitivity study: the tornado chart and, per variant, the QPS
    changes and the claims that flip."""
    from irqlab.reproduce.sensitivity import rows

    flipped = [v for v in variants if v.lost or v.gained]
    text = (
        f"<p>Each constant that Table 4.1 did not fit, at ×0.5 and ×1.5, one at a time; both studies rerun "
        f"for each ({len(variants)} variants). {len(flipped)} variant{'s' if len(flipped) != 1 else ''} "
        "flip a claim.</p>"
    )
    return ("Sensitivity: the unfitted constants", text + _image(tornado) + _table(rows(variants)))


def write_thesis_report(
    result: ThesisResult,
    checks: list[ShapeCheck],
    out: Path,
    figures: list[Path],
    variants: Optional[list] = None,
    vm_checks: list[ShapeCheck] = (),
) -> Path:
    """``out/report.html``: the thesis sections, then every study."""
    from irqlab.reproduce.report import title
    from irqlab.study.report import write_report

    sections = thesis_sections(result, checks, figures, list(vm_checks))
    if variants is not None:
        sections.append(sensitivity_section(variants, out / "sensitivity-tornado.png"))
    table_dir, figure_dir, *others = result.directories
    return write_report(
        figure_dir,
        out / "report.html",
        title=title(result),
        sections_before=sections,
        extra_dirs=(table_dir, *others),
        collapse=True,
    )
