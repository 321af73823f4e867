"""``irqlab reproduce thesis``, ``itr``, ``iaps``, ``vic`` and ``sriov``: papers' results from the simulator."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from irqlab.flags import seconds, whole_number
from irqlab.study.cli import sigterm_as_interrupt

if TYPE_CHECKING:
    from irqlab.reproduce.thesis import ThesisResult

# The reproduction modules (pandas, matplotlib) load only when the command
# runs, so that every other `irqlab` command starts fast.


class ReproduceUsageError(ValueError):
    """A bad flag of ``irqlab reproduce``; the message is one sentence."""


def add_reproduce_parser(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = commands.add_parser(
        "reproduce",
        help="reproduce a paper's results from the simulator",
        description="Reproduce a paper's experiments from the simulator, with the paper's numbers beside them.",
        allow_abbrev=False,
    )
    papers = p.add_subparsers(dest="paper", metavar="PAPER", required=True)
    t = papers.add_parser(
        "thesis",
        help="IRQ Suspend thesis: Table 4.1 and Figure 4.1 (bare metal), Tables 4.2-4.5 and Figures 4.2-4.5 "
        "(VMs), and Cai & Karsten's 8-core results",
        description=(
            "Run Table 4.1 (closed loop, four profiles) and Figure 4.1 (open loop, 100k-500k QPS in steps "
            "of 50k) of the IRQ Suspend thesis as the studies scenarios/thesis/table-4.1.study.toml and "
            "figure-4.1.study.toml, and Cai & Karsten's (SIGMETRICS 2024) four 8-core configurations as "
            "cai-karsten.study.toml (a prediction, not a fit); run both thesis studies again with memcached in a "
            "KVM guest, once per VM setup whose scenario file exists (passthrough.toml: Table 4.4 and Figure 4.4; "
            "sriov.toml: Table 4.5 and Figure 4.5), with the same seeds, durations and loads, and check the "
            "thesis's VM claims (section 4.6) on them; print them beside the papers and write the "
            "results stores (Parquet), an HTML report, CSV, JSON, a Markdown report and PNG plots."
        ),
        allow_abbrev=False,
    )
    t.add_argument("--out", metavar="DIR", default="irqlab-out", help="output directory (default irqlab-out/)")
    t.add_argument("--scenario", metavar="FILE", help="scenario file (default scenarios/thesis/bare-metal.toml)")
    t.add_argument(
        "--closed-duration",
        metavar="S",
        help="simulated seconds per closed-loop run, Table 4.1's and Cai & Karsten's (default: the studies', 1.0)",
    )
    t.add_argument("--open-duration", metavar="S", help="simulated seconds per open-loop point (default: the study's, 0.5)")
    _run_flags(t, "print the checks and file list as one JSON object")
    t.add_argument(
        "--sensitivity",
        action="store_true",
        help="also rerun both studies with each unfitted constant at x0.5 and x1.5 and report which claims flip "
        "(20 more reproductions; a tornado chart in the report)",
    )
    t.add_argument("--no-vm", action="store_true", help="skip the VM setups (Tables and Figures 4.2-4.5)")
    t.set_defaults(handler=_cmd_thesis)
    i = papers.add_parser(
        "itr",
        help="ITR paper (Emmerich et al., SPECTS 2015): Figures 3, 5, 7 and 8 (no ITR, ixgbe's default ITR, the "
        "linear ITR, load-latency product)",
        description=(
            "Run Figures 3, 5, 8 and 7 of the ITR paper (one core forwarding 60-byte frames on an 82599, "
            "constant-bit-rate load from 0.02 to 2.5 Mpps; no ITR, ixgbe's default dynamic ITR and the paper's "
            "linear ITR) as the studies scenarios/itr/figure-{3,5,8,7}.study.toml, check the claims of sections "
            "IV-V (C1-C13) on them, print the figures as tables and the claims with their numbers, and write "
            "the results stores (Parquet), an HTML report, CSV, JSON, a Markdown report and PNG plots. One "
            "constant is fitted (costs.forward_packet_cycles, to the 2.1 Mpps overload point); the rest is a "
            "prediction."
        ),
        allow_abbrev=False,
    )
    # Its own default, beside the thesis's irqlab-out/: the reports have the same names.
    i.add_argument("--out", metavar="DIR", default="irqlab-out/itr", help="output directory (default irqlab-out/itr/)")
    i.add_argument("--scenario", metavar="FILE", help="scenario file (default scenarios/itr/forwarding.toml)")
    i.add_argument("--duration", metavar="S", help="simulated seconds per point (default: the studies', 0.2)")
    _run_flags(i, "print the checks, tables and file list as one JSON object")
    i.set_defaults(handler=_cmd_itr)
    a = papers.add_parser(
        "iaps",
        help="IAPS paper (Helbig & Kim, ICOIN 2025): Figures 2 and 3 (RSS, RPS, RFS and IAPS with 1-32 iperf3 "
        "streams on 8 cores)",
        description=(
            "Run Figure 2 of the IAPS paper (iperf3-like TCP streams into 8 cores at up to ~50 Gbit/s; RPS, RFS "
            "and IAPS steering from one RX queue, RSS with eight) as the studies "
            "scenarios/iaps/figure-2.study.toml and figure-2-rss.study.toml, ten seeds per point, check the claims "
            "of section IV (D1-D10) on the seeds' means, print Figures 2 and 3 as tables and the claims with their "
            "numbers, and write the results stores (Parquet), an HTML report, CSV, JSON, a Markdown report and PNG "
            "plots. One constant is fitted (costs.rx_frame_cycles, where the interrupt core saturates); the rest is "
            "a prediction."
        ),
        allow_abbrev=False,
    )
    a.add_argument("--out", metavar="DIR", default="irqlab-out/iaps", help="output directory (default irqlab-out/iaps/)")
    a.add_argument("--scenario", metavar="FILE", help="scenario file (default scenarios/iaps/bulk-8core.toml)")
    a.add_argument("--duration", metavar="S", help="simulated seconds per run (default: the studies', 0.1)")
    a.add_argument("--seeds", metavar="N", help="seeds per point (default: the studies', 10)")
    _run_flags(a, "print the checks, tables and file list as one JSON object")
    a.set_defaults(handler=_cmd_iaps)
    v = papers.add_parser(
        "vic",
        help="vIC paper (Ahmad, Gulati & Mashtizadeh, USENIX ATC 2011): Tables 2-8 and Figures 3-5 (Iometer in an "
        "ESX VM, OIO 8-64, virtual interrupt coalescing off and on; the IPI send threshold; a TPC-C-like load)",
        description=(
            "Run Tables 2-5 of the vIC paper (Iometer's one worker reading 4 KB and 8 KB from a cached LUN "
            "through an emulated SCSI adapter, 8-64 outstanding I/Os, vIC off and on) as the studies "
            "scenarios/vic/table-2.study.toml and table-4.study.toml, and Figure 5 (the IPI send threshold with "
            "Iometer and a CPU-bound Hyper Pi in one 2-vCPU VM) as figure-5.study.toml and "
            "figure-5-no-io.study.toml, and Table 8 and Figures 3-4 (a TPC-C-like load, vIC off and at "
            "cifThreshold 4 and 2) as table-8.study.toml, and Table 7 (SQLIOSim- and GSBlaster-like loads) as "
            "table-7-sqliosim.study.toml and table-7-gsblaster.study.toml, three seeds per point, check the claims "
            "of sections 4.1-4.5 (V1-V24) on the seeds' means, print Tables 2, 3 and 6 beside the paper, the "
            "withheld Tables 4-5, 7 and 8 and Figures 3-5 as simulated, and write the results stores (Parquet), an HTML report, CSV, "
            "JSON, a Markdown report and PNG plots. The path's costs are fitted on Table 2's baseline rows; "
            "everything with vIC on is a prediction."
        ),
        allow_abbrev=False,
    )
    v.add_argument("--out", metavar="DIR", default="irqlab-out/vic", help="output directory (default irqlab-out/vic/)")
    v.add_argument("--scenario", metavar="FILE", help="scenario file (default scenarios/vic/iometer.toml)")
    v.add_argument("--duration", metavar="S", help="simulated seconds per run (default: the studies', 0.5)")
    v.add_argument("--seeds", metavar="N", help="seeds per point (default: the studies', 3)")
    _run_flags(v, "print the checks, tables and file list as one JSON object")
    v.set_defaults(handler=_cmd_vic)
    r = papers.add_parser(
        "sriov",
        help="SR-IOV paper (Guan et al.): Figures I-IV (KVM guests on 82599 virtual functions; a static throttle "
        "rate, and 1-15 VMs with the default ITR against the golden-section tuner)",
        description=(
            "Run Figure I of the SR-IOV paper (three KVM guests, each receiving a TCP stream through its own 82599 "
            "virtual function over one 10 Gbit/s wire, the VFs' interrupt throttle rate fixed from 978 to "
            "488,281 per second) as the study scenarios/sriov/figure-1.study.toml, and Figures II-IV (1-15 VMs, "
            "ixgbevf's default dynamic ITR against the paper's golden-section search of the rate) as "
            "figure-2.study.toml, check the claims of sections III and V-B (S1-S6), print the figures as tables "
            "and the claims with their numbers, and write the results stores (Parquet), an HTML report, CSV, "
            "JSON, a Markdown report and PNG plots. One constant is fitted (costs.rx_frame_cycles, where the "
            "guests' CPU is used up); the rest is a prediction."
        ),
        allow_abbrev=False,
    )
    r.add_argument("--out", metavar="DIR", default="irqlab-out/sriov", help="output directory (default irqlab-out/sriov/)")
    r.add_argument("--scenario", metavar="FILE", help="scenario file (default scenarios/sriov/r630.toml)")
    r.add_argument("--duration", metavar="S", help="simulated seconds per run (default: the studies', 0.1)")
    r.add_argument("--seeds", metavar="N", help="seeds per point (default: the studies', 1)")
    _run_flags(r, "print the checks, tables and file list as one JSON object")
    r.set_defaults(handler=_cmd_sriov)


def _run_flags(p: argparse.ArgumentParser, json_help: str) -> None:
    """The flags every reproduction has: seed, jobs, resume, plots, progress, JSON."""
    p.add_argument("--seed", metavar="N", help="base seed the runs' seeds are derived from (default: the studies', 1)")
    p.add_argument("--jobs", metavar="N", help="parallel runs (default: every core)")
    p.add_argument("--resume", action="store_true", help="keep the runs an interrupted reproduction finished in --out")
    p.add_argument(
        "--force",
        action="store_true",
        help="write into --out even if it holds another kind of output (another reproduction's, a sweep's, "
        "other files); refused without it",
    )
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--quiet", action="store_true", help="no progress indication")
    p.add_argument("--json", action="store_true", help=json_help)


def _seconds(text: Optional[str], flag: str) -> Optional[float]:
    return seconds(text, flag, ReproduceUsageError, most=3600)


def _seed_and_jobs(args: argparse.Namespace) -> tuple[Optional[int], Optional[int]]:
    """``--seed`` and ``--jobs``, checked."""
    from irqlab.run import MAX_SEED

    seed = whole_number(args.seed, "--seed", 0, MAX_SEED, ReproduceUsageError)
    return seed, whole_number(args.jobs, "--jobs", 1, 4096, ReproduceUsageError)


#: What each reproduction's experiments need of a --scenario, and the file
#: that has it: another kind of scenario fails late (a missing column after
#: every run) or, worse, runs and checks the wrong experiment.
SCENARIO_NEEDS = {
    "thesis": ({"app.kind": "memcached"}, "scenarios/thesis/bare-metal.toml"),
    "itr": ({"nic.kind": "82599", "app.kind": "forwarding"}, "scenarios/itr/forwarding.toml"),
    "iaps": ({"app.kind": "bulk"}, "scenarios/iaps/bulk-8core.toml"),
    "vic": ({"app.kind": "iometer"}, "scenarios/vic/iometer.toml"),
    "sriov": ({"nic.kind": "82599", "app.kind": "bulk", "vm.kind": "sriov"}, "scenarios/sriov/r630.toml"),
}


def _scenario(args: argparse.Namespace) -> Optional[Path]:
    """``--scenario`` as a path, which must name a valid scenario file of
    the kind the paper's experiments need (:data:`SCENARIO_NEEDS`), or None."""
    from irqlab.scenario import Scenario

    if args.scenario is None:
        return None
    if not Path(args.scenario).is_file():
        raise ReproduceUsageError(f"--scenario {args.scenario} is not a file; give a scenario file (TOML)")
    resolved = Scenario.load(args.scenario).resolved()
    needs, example = SCENARIO_NEEDS[args.paper]
    got = {k: resolved.get(k.split(".")[0], {}).get(k.split(".")[1]) for k in needs}
    if got != needs:
        want = ", ".join(f'{k} = "{v}"' for k, v in needs.items())
        have = ", ".join(f'{k} = "{v}"' for k, v in got.items() if needs[k] != v)
        raise ReproduceUsageError(f"--scenario {args.scenario} has {have}; reproduce {args.paper} needs a scenario "
                                  f"with {want} (as {example})")
    return Path(args.scenario)


def _interrupted(args: argparse.Namespace, out: Path, e: BaseException) -> int:
    """Say how to finish an interrupted reproduction; its exit status."""
    from irqlab.cli_common import say as _say
    from irqlab.study.cli import EXIT_TERMINATED, Terminated

    how = ("run the same command again to finish it" if args.resume else
           "run the same command with --resume to keep them and finish (without it the reproduction starts afresh)")
    _say("warning", f"reproduce {args.paper} interrupted; the finished runs are in {out}/; {how}")
    return EXIT_TERMINATED if isinstance(e, Terminated) else 130


def _say_written(n_files: int, out: Path, stores, no_plots: bool) -> None:
    """The closing lines of a reproduction: what it wrote, and the report."""
    from irqlab.cli_common import write_stdout

    write_stdout(
        f"wrote {n_files} files to {out}/ (report.html, report.md, CSV, JSON"
        + ("" if no_plots else ", PNG plots")
        + f") and the results stores {', '.join(f'{d}/' for d in stores)}"
    )
    write_stdout(f"report: {out / 'report.html'}")


def prepare_out(args: argparse.Namespace) -> Path:
    """The ``--out`` directory of ``args.paper``, checked, created and marked
    before any run (:func:`irqlab.reproduce.prepare_out`); raises
    :class:`ReproduceUsageError` (exit status 2)."""
    from irqlab.reproduce import prepare_out as prepare

    out = prepare(args.out, args.paper, force=args.force, error=ReproduceUsageError)
    try:
        fd, probe = tempfile.mkstemp(prefix=".irqlab-write-test-", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise ReproduceUsageError(f"--out {out} is not a writable directory: {e.strerror or e}") from None
    return out


def _json_row(row: dict[str, object]) -> dict[str, object]:
    """A row with NaN (a run that did nothing) as null: JSON has no NaN."""
    return {k: None if isinstance(v, float) and v != v else v for k, v in row.items()}


def _vm_json(r: "ThesisResult") -> list[dict[str, object]]:
    """Each VM setup run: what it is, its table's and figure's rows."""
    from irqlab.reproduce.thesis import VM_PAPER_UNAVAILABLE, figure_rows, vm_table_rows

    return [
        {
            "setup": vm.setup.key,
            "label": vm.setup.label,
            "scenario": f"scenarios/thesis/{vm.setup.scenario}",
            "table": vm.setup.table,
            "figure": vm.setup.figure,
            "profiles": list(vm.setup.profiles),
            "thesis": VM_PAPER_UNAVAILABLE,
            "table_rows": [_json_row(row) for row in vm_table_rows(r, vm.setup)],
            "figure_rows": [_json_row(row) for row in figure_rows(vm.open, vm.setup.profiles)],
        }
        for vm in r.vm.values()
    ]


def _cmd_thesis(args: argparse.Namespace) -> int:
    # The flags first: a bad one is said without loading pandas and matplotlib.
    closed = _seconds(args.closed_duration, "--closed-duration")
    open_ = _seconds(args.open_duration, "--open-duration")
    seed, jobs = _seed_and_jobs(args)
    scenario = _scenario(args)

    from irqlab.cli_common import say_warning, write_stdout
    from irqlab.reproduce import plots, report
    from irqlab.reproduce import html
    from irqlab.reproduce.thesis import cai_karsten_rows, run_thesis, shape_checks, vm_checks
    from irqlab.study.spec import StudyError

    out = prepare_out(args)
    try:
        with sigterm_as_interrupt():
            result = run_thesis(
                scenario,
                closed_duration_s=closed,
                open_duration_s=open_,
                seed=seed,
                out=out,
                jobs=jobs,
                resume=args.resume,
                quiet=args.quiet or args.json,
                vm=not args.no_vm,
            )
    except StudyError as e:
        raise ReproduceUsageError(str(e)) from None
    except KeyboardInterrupt as e:
        return _interrupted(args, out, e)
    # A run's warnings (e.g. no request completed, so no latency), each once.
    runs = [*result.closed.values(), *result.open.values(), *result.cai_karsten.values()]
    runs += [p.summary for p in result.holdout]
    runs += [s for vm in result.vm.values() for s in (*vm.closed.values(), *vm.open.values())]
    for warning in dict.fromkeys(w for s in runs for w in s.warnings):
        say_warning(warning)
    checks = shape_checks(result)
    vm_claims = vm_checks(result)
    figures = [] if args.no_plots else plots.figure_4_1(result, out) + [plots.table_4_1_chart(result, out)]
    figures += [] if args.no_plots else plots.vm_figures(result, out)
    files = report.write_files(result, checks, out, figures, vm_claims)
    variants = None
    if args.sensitivity:
        from irqlab.reproduce import sensitivity
        from irqlab.reproduce.thesis import default_scenario
        from irqlab.scenario import Scenario

        try:
            with sigterm_as_interrupt():
                variants = sensitivity.run_sensitivity(
                    out,
                    Scenario.load(args.scenario or default_scenario()),
                    result,
                    closed_duration_s=closed,
                    open_duration_s=open_,
                    jobs=jobs,
                    resume=args.resume,
                    quiet=args.quiet or args.json,
                    seed=seed,
                )
        except KeyboardInterrupt as e:
            return _interrupted(args, out, e)
        files.append(report.write_csv(sensitivity.rows(variants), out / "sensitivity.csv"))
        files.append(sensitivity.tornado(variants, out / "sensitivity-tornado.png"))
    files.append(html.write_thesis_report(result, checks, out, figures, variants, vm_claims))
    if args.json:
        write_stdout(
            json.dumps(
                {
                    "checks": [report.check_row(c) for c in checks],
                    "cai_karsten": [_json_row(row) for row in cai_karsten_rows(result)],
                    "leave_one_out": [_json_row(row) for row in report.holdout_rows(result)],
                    "vm": _vm_json(result),
                    "vm_checks": [report.check_row(c) for c in vm_claims],
                    "vm_skipped": result.vm_skipped,
                    "files": [str(f) for f in files + figures],
                }
            )
        )
        return 0
    write_stdout(report.table_4_1_text(result))
    write_stdout("")
    if result.holdout:
        write_stdout(report.holdout_text(result))
        write_stdout("")
    if result.cai_karsten:
        write_stdout(report.cai_karsten_text(result))
        write_stdout("")
    write_stdout(report.explanation_text(result))
    write_stdout("")
    write_stdout(report.figure_4_1_text(result))
    write_stdout("")
    write_stdout(report.checks_text(checks))
    write_stdout("")
    if result.vm or result.vm_skipped:
        write_stdout(report.vm_text(result, vm_claims))
        write_stdout("")
    _say_written(len(files) + len(figures), out, result.directories, args.no_plots)
    return 0


def _cmd_itr(args: argparse.Namespace) -> int:
    from irqlab.cli_common import say_warning, write_stdout
    from irqlab.reproduce import itr
    from irqlab.study.spec import StudyError

    duration = _seconds(args.duration, "--duration")
    seed, jobs = _seed_and_jobs(args)
    scenario = _scenario(args)
    out = prepare_out(args)
    try:
        with sigterm_as_interrupt():
            result = itr.run_itr(
                scenario,
                duration_s=duration,
                seed=seed,
                out=out,
                jobs=jobs,
                resume=args.resume,
                quiet=args.quiet or args.json,
            )
    except StudyError as e:
        raise ReproduceUsageError(str(e)) from None
    except KeyboardInterrupt as e:
        return _interrupted(args, out, e)
    # A run's warnings, each once; not that an overloaded run dropped
    # packets: overload is part of the paper's experiment (C4, C5), and the
    # tables mark those runs.
    runs = [s for name in itr.FIGURES for s in result.runs(name).values()]
    warnings = (w for s in runs for w in s.warnings if not (int(s.get("drops") or 0) > 0 and "were dropped" in w))
    for warning in dict.fromkeys(warnings):
        say_warning(warning)
    checks = itr.shape_checks(result)
    figures = []
    if not args.no_plots:
        from irqlab.reproduce import itr_plots

        figures = itr_plots.all_figures(result, out)
    files = itr.write_files(result, checks, out, figures)
    files.append(itr.write_html(result, checks, out, figures))
    why = itr.explanations(result, checks)
    if args.json:
        write_stdout(
            json.dumps(
                {
                    "checks": [itr.check_row(c, why) for c in checks],
                    "figures": {name: [_json_row(row) for row in itr.figure_rows(result, name)] for name in itr.FIGURES},
                    "figure_7_pll": [_json_row(row) for row in itr.figure_7_rows(result)],
                    "fitted": itr.fitted_note(result),
                    "shared_runs": {"pairs": result.shared, "mismatched": [list(k) for k in result.mismatched]},
                    "files": [str(f) for f in files + figures],
                }
            )
        )
        return 0
    for name in ("figure-3", "figure-5", "figure-8"):
        write_stdout(itr.figure_text(result, name))
        write_stdout("")
    write_stdout(itr.figure_7_text(result))
    write_stdout("")
    write_stdout(itr.checks_text(checks, why=why))
    write_stdout("")
    import textwrap

    write_stdout("\n".join(textwrap.wrap(itr.fitted_note(result), 110)))
    write_stdout("\n".join(textwrap.wrap(itr.shared_note(result), 110)))
    write_stdout("")
    _say_written(len(files) + len(figures), out, result.directories.values(), args.no_plots)
    return 0


def _run_paper(args: argparse.Namespace, paper, run, plots_module: str, warned=lambda warning: True) -> "tuple | int":
    """A seeded reproduction's common part (IAPS, vIC): the flags checked,
    ``run(...)`` (the paper module's) into ``--out``, its warnings said (those ``warned``
    keeps), the claims checked, the plots, files and report written.
    Returns the result, the checks, the output directory, the files and
    the figures; or, when Ctrl-C or SIGTERM stopped the runs, the exit status."""
    import importlib

    from irqlab.cli_common import say_warning
    from irqlab.study.spec import StudyError

    duration = _seconds(args.duration, "--duration")
    seed, jobs = _seed_and_jobs(args)
    seeds = whole_number(args.seeds, "--seeds", 1, 1000, ReproduceUsageError)
    scenario = _scenario(args)
    out = prepare_out(args)
    try:
        with sigterm_as_interrupt():
            result = run(
                scenario,
                duration_s=duration,
                seed=seed,
                seeds=seeds,
                out=out,
                jobs=jobs,
                resume=args.resume,
                quiet=args.quiet or args.json,
            )
    except StudyError as e:
        raise ReproduceUsageError(str(e)) from None
    except KeyboardInterrupt as e:
        return _interrupted(args, out, e)
    for warning in result.warnings:
        if warned(warning):
            say_warning(warning)
    checks = paper.shape_checks(result)
    figures = [] if args.no_plots else importlib.import_module(plots_module).all_figures(result, out)
    files = paper.write_files(result, checks, out, figures)
    files.append(paper.write_html(result, checks, out, figures))
    return result, checks, out, files, figures


def _say_paper(args: argparse.Namespace, paper, ran: tuple, tables: dict, texts: list[str]) -> int:
    """Print a reproduction from ``_run_paper``: one JSON object (the
    checks, ``tables``' rows, the fit and the files), or ``texts``, the
    claims and the fit, and what was written."""
    import textwrap

    from irqlab.cli_common import write_stdout

    result, checks, out, files, figures = ran
    if args.json:
        doc = {"checks": [paper.check_row(c) for c in checks]}
        doc.update({name: [_json_row(row) for row in rows] for name, rows in tables.items()})
        doc.update(fitted=paper.fitted_note(result), files=[str(f) for f in files + figures])
        write_stdout(json.dumps(doc))
        return 0
    for text in (*texts, paper.checks_text(checks)):
        write_stdout(text)
        write_stdout("")
    write_stdout("\n".join(textwrap.wrap(paper.fitted_note(result), 110)))
    write_stdout("")
    _say_written(len(files) + len(figures), out, result.directories.values(), args.no_plots)
    return 0


def _cmd_iaps(args: argparse.Namespace) -> int:
    from irqlab.reproduce import iaps

    # Drops are part of the experiment (Figure 2b): not warned about.
    ran = _run_paper(args, iaps, iaps.run_iaps, "irqlab.reproduce.iaps_plots", warned=lambda w: "were dropped" not in w)
    if isinstance(ran, int):
        return ran  # interrupted
    result = ran[0]
    tables = {"figure_2": iaps.figure_2_rows(result), "figure_3": iaps.figure_3_rows(result)}
    return _say_paper(args, iaps, ran, tables, [iaps.figure_2_text(result), iaps.figure_3_text(result)])


def _cmd_vic(args: argparse.Namespace) -> int:
    from irqlab.reproduce import vic
    from irqlab.reproduce.vic_checks import KB4, KB8

    ran = _run_paper(args, vic, vic.run_vic, "irqlab.reproduce.vic_plots")
    if isinstance(ran, int):
        return ran  # interrupted
    r = ran[0]
    tables = {
        "table_2": vic.table_2_rows(r, KB4), "table_3": vic.table_3_rows(r, KB4), "table_4": vic.table_2_rows(r, KB8),
        "table_5": vic.table_3_rows(r, KB8), "table_6": vic.table_6_rows(r), "figure_5": vic.figure_5_rows(r),
        "table_7": vic.table_7_rows(r), "table_8": vic.table_8_rows(r), "figures_3_4": vic.figures_3_4_rows(r),
        "fit": vic.fit_rows(r),
    }
    texts = [vic.table_2_text(r, KB4), vic.table_3_text(r, KB4), vic.table_2_text(r, KB8), vic.table_3_text(r, KB8),
             vic.table_6_text(r), vic.figure_5_text(r), vic.table_7_text(r), vic.table_8_text(r),
             vic.figures_3_4_text(r)]
    return _say_paper(args, vic, ran, tables, texts)


def _cmd_sriov(args: argparse.Namespace) -> int:
    from irqlab.reproduce import sriov

    ran = _run_paper(args, sriov, sriov.run_sriov, "irqlab.reproduce.sriov_plots")
    if isinstance(ran, int):
        return ran  # interrupted
    r = ran[0]
    tables = {
        "figure_1": sriov.figure_1_rows(r), "figure_2": sriov.figure_2_rows(r),
        "figures_3_4": sriov.figures_3_4_rows(r),
    }
    texts = [sriov.figure_1_text(r), sriov.figure_2_text(r), sriov.figures_3_4_text(r)]
    return _say_paper(args, sriov, ran, tables, texts)
