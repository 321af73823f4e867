"""The IRQ Suspend thesis as the harness runs it: Table 4.1 and Figure 4.1
on bare metal, Cai & Karsten's 8-core results, the leave-one-out fits and
the VM setups (:mod:`irqlab.reproduce.thesis`), with its own files and
printout (:mod:`irqlab.reproduce.report`, :mod:`irqlab.reproduce.html`):
its claims have no numbers on bare metal, and it adds the VM claims, the
held-out profiles and, with ``--sensitivity``, the unfitted constants."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from irqlab.reproduce import thesis
from irqlab.reproduce.claim import ShapeCheck
from irqlab.reproduce.flags import seconds_flag, seed_and_jobs
from irqlab.reproduce.harness import interrupted, json_row, say_written
from irqlab.reproduce.paper import Paper
from irqlab.reproduce.thesis import ThesisResult


def options(args: argparse.Namespace) -> dict:
    """``--closed-duration``, ``--open-duration`` and ``--no-vm`` as ``run_thesis``'s keywords."""
    return {
        "closed_duration_s": seconds_flag(args.closed_duration, "--closed-duration"),
        "open_duration_s": seconds_flag(args.open_duration, "--open-duration"),
        "vm": not args.no_vm,
    }


def warnings(r: ThesisResult) -> list[str]:
    """Every run's warnings (e.g. no request completed, so no latency),
    each naming the setup, profile and load of the runs it is about (issue
    62, item 17; :mod:`irqlab.reproduce.where`)."""
    from typing import Callable

    from irqlab.reproduce.where import located, value
    from irqlab.summary import Summary

    def closed(setup: Callable[[Summary], str], study: str, runs) -> list:
        return [((setup(s), study, p, "closed loop"), s) for p, s in runs.items()]

    def open_loop(setup: Callable[[Summary], str], study: str, runs) -> list:
        return [((setup(s), study, p, f"at {value(q)} QPS"), s) for (p, q), s in runs.items()]

    def bare(s: Summary) -> str:
        # The scenario's own name (its `name`), whichever file --scenario gave.
        return f"bare metal ({s.get('scenario')})"

    runs = [*closed(bare, thesis.TABLE_STUDY, r.closed), *open_loop(bare, thesis.FIGURE_STUDY, r.open),
            *closed(bare, thesis.CAI_KARSTEN_STUDY, r.cai_karsten)]
    runs += [((bare(p.summary), "leave-one-out", f"{p.fit.holdout} predicted by the fit without it"), p.summary)
             for p in r.holdout]
    for vm in r.vm.values():
        def guest(s: Summary, label: str = vm.setup.label) -> str:
            return f"{label} guest ({s.get('scenario')})"

        runs += [*closed(guest, f"table-{vm.setup.table}", vm.closed),
                 *open_loop(guest, f"figure-{vm.setup.figure}", vm.open)]
    return located((where, w) for where, s in runs for w in s.warnings)


def checks(r: ThesisResult) -> list[ShapeCheck]:
    """The bare-metal claims (no number), then the VM claims (P1-P6, V1-V6)."""
    return thesis.shape_checks(r) + thesis.vm_checks(r)


def _split(all_checks: list[ShapeCheck]) -> tuple[list[ShapeCheck], list[ShapeCheck]]:
    return [c for c in all_checks if not c.id], [c for c in all_checks if c.id]


def write(r: ThesisResult, all_checks: list[ShapeCheck], out: Path, figures: list[Path], args: argparse.Namespace):
    """CSV, JSON, report.md, with ``--sensitivity`` its reruns and chart,
    and report.html: the files written, or the exit status when the
    sensitivity runs were interrupted."""
    from irqlab.reproduce import html, report

    bare, vm_claims = _split(all_checks)
    files = report.write_files(r, bare, out, figures, vm_claims)
    variants = None
    if args.sensitivity:
        from irqlab.reproduce import sensitivity
        from irqlab.scenario import Scenario
        from irqlab.study.cli import sigterm_as_interrupt

        opts = options(args)
        seed, jobs = seed_and_jobs(args)
        try:
            with sigterm_as_interrupt():
                variants = sensitivity.run_sensitivity(
                    out,
                    Scenario.load(args.scenario or thesis.default_scenario()),
                    r,
                    closed_duration_s=opts["closed_duration_s"],
                    open_duration_s=opts["open_duration_s"],
                    jobs=jobs,
                    resume=args.resume,
                    quiet=args.quiet or args.json,
                    seed=seed,
                )
        except KeyboardInterrupt as e:
            return interrupted(args, out, e)
        files.append(report.write_csv(sensitivity.rows(variants), out / "sensitivity.csv"))
        files.append(sensitivity.tornado(variants, out / "sensitivity-tornado.png"))
    files.append(html.write_thesis_report(r, bare, out, figures, variants, vm_claims))
    return files


def _vm_json(r: ThesisResult) -> list[dict[str, object]]:
    """Each VM setup run: what it is, its table's and figure's rows."""
    return [
        {
            "setup": vm.setup.key,
            "label": vm.setup.label,
            "scenario": f"scenarios/thesis/{vm.setup.scenario}",
            "table": vm.setup.table,
            "figure": vm.setup.figure,
            "profiles": list(vm.setup.profiles),
            "thesis": thesis.VM_PAPER_UNAVAILABLE,
            "table_rows": [json_row(row) for row in thesis.vm_table_rows(r, vm.setup)],
            "figure_rows": [json_row(row) for row in thesis.figure_rows(vm.open, vm.setup.profiles)],
        }
        for vm in r.vm.values()
    ]


def say(r: ThesisResult, all_checks: list[ShapeCheck], out: Path, files: list[Path], figures: list[Path],
        args: argparse.Namespace) -> int:
    from irqlab.cli_common import write_stdout
    from irqlab.reproduce import report

    bare, vm_claims = _split(all_checks)
    if args.json:
        write_stdout(
            json.dumps(
                {
                    "checks": [report.check_row(c) for c in bare],
                    "cai_karsten": [json_row(row) for row in thesis.cai_karsten_rows(r)],
                    "leave_one_out": [json_row(row) for row in report.holdout_rows(r)],
                    "vm": _vm_json(r),
                    "vm_checks": [report.check_row(c) for c in vm_claims],
                    "vm_skipped": r.vm_skipped,
                    "files": [str(f) for f in files + figures],
                }
            )
        )
        return 0
    write_stdout(report.table_4_1_text(r))
    write_stdout("")
    if r.holdout:
        write_stdout(report.holdout_text(r))
        write_stdout("")
    if r.cai_karsten:
        write_stdout(report.cai_karsten_text(r))
        write_stdout("")
    write_stdout(report.explanation_text(r))
    write_stdout("")
    write_stdout(report.figure_4_1_text(r))
    write_stdout("")
    write_stdout(report.checks_text(bare))
    write_stdout("")
    if r.vm or r.vm_skipped:
        write_stdout(report.vm_text(r, vm_claims))
        write_stdout("")
    say_written(len(files) + len(figures), out, r.directories, args.no_plots)
    return 0


#: The reproduction as the harness runs it (:mod:`irqlab.reproduce.harness`).
PAPER = Paper(
    name="thesis",
    studies=(thesis.TABLE_STUDY, thesis.FIGURE_STUDY, thesis.CAI_KARSTEN_STUDY),
    scenario="scenarios/thesis/bare-metal.toml",
    scenario_needs={"app.kind": "memcached"},
    # Looked up when called, so that a test can stand in for the runs.
    run=lambda *a, **k: thesis.run_thesis(*a, **k),
    options=options,
    warnings=warnings,
    checks=checks,
    claims=thesis.CLAIMS,
    plots="irqlab.reproduce.plots",
    write=write,
    say=say,
)
