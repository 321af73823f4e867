"""The harness that runs any paper (:class:`~irqlab.reproduce.paper.Paper`):
its flags checked before anything runs, its studies run into ``--out``,
its warnings said once each, its claims checked, its plots and files
written (the tables as CSV, ``checks.csv``, ``summaries.json``,
``report.md`` and ``report.html``), and the result printed as text or as
one JSON object."""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import tempfile
import textwrap
from pathlib import Path
from typing import Optional

from irqlab.flags import whole_number
from irqlab.reproduce.claim import ShapeCheck
from irqlab.reproduce.flags import ReproduceUsageError, seconds_flag, seed_and_jobs
from irqlab.reproduce.paper import Paper

__all__ = ["ReproduceUsageError", "reproduce", "seconds_flag", "seed_and_jobs"]


def scenario_flag(paper: Paper, args: argparse.Namespace) -> Optional[Path]:
    """``--scenario`` as a path, which must name a valid scenario file of
    the kind the paper's experiments need (:attr:`Paper.scenario_needs`), or None."""
    from irqlab.scenario import Scenario

    if args.scenario is None:
        return None
    if not Path(args.scenario).is_file():
        raise ReproduceUsageError(f"--scenario {args.scenario} is not a file; give a scenario file (TOML)")
    resolved = Scenario.load(args.scenario).resolved()
    needs, example = paper.scenario_needs, paper.scenario
    got = {k: resolved.get(k.split(".")[0], {}).get(k.split(".")[1]) for k in needs}
    if got != needs:
        want = ", ".join(f'{k} = "{v}"' for k, v in needs.items())
        have = ", ".join(f'{k} = "{v}"' for k, v in got.items() if needs[k] != v)
        raise ReproduceUsageError(f"--scenario {args.scenario} has {have}; reproduce {args.paper} needs a scenario "
                                  f"with {want} (as {example})")
    return Path(args.scenario)


def prepare_out(args: argparse.Namespace) -> Path:
    """The ``--out`` directory of ``args.paper``, checked, created and marked
    before any run (:func:`irqlab.reproduce.output.prepare_out`); raises
    :class:`ReproduceUsageError` (exit status 2)."""
    from irqlab.reproduce.output import prepare_out as prepare

    out = prepare(args.out, args.paper, force=args.force, error=ReproduceUsageError)
    try:
        fd, probe = tempfile.mkstemp(prefix=".irqlab-write-test-", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise ReproduceUsageError(f"--out {out} is not a writable directory: {e.strerror or e}") from None
    return out


# -- running ---------------------------------------------------------------------


def interrupted(args: argparse.Namespace, out: Path, e: BaseException) -> int:
    """Say how to finish an interrupted reproduction; its exit status."""
    from irqlab.cli_common import say
    from irqlab.study.cli import EXIT_TERMINATED, Terminated

    how = ("run the same command again to finish it" if args.resume else
           "run the same command with --resume to keep them and finish (without it the reproduction starts afresh)")
    say("warning", f"reproduce {args.paper} interrupted; the finished runs are in {out}/; {how}")
    return EXIT_TERMINATED if isinstance(e, Terminated) else 130


def reproduce(paper: Paper, args: argparse.Namespace) -> int:
    """``irqlab reproduce <paper>``: its exit status."""
    from irqlab.cli_common import say_warning
    from irqlab.study.cli import sigterm_as_interrupt
    from irqlab.study.spec import StudyError

    # The flags first: a bad one is said before any run.
    options = paper.options(args)
    seed, jobs = seed_and_jobs(args)
    if paper.seeds:
        options["seeds"] = whole_number(args.seeds, "--seeds", 1, 1000, ReproduceUsageError)
    scenario = scenario_flag(paper, args)
    out = prepare_out(args)
    try:
        with sigterm_as_interrupt():
            result = paper.run(scenario, seed=seed, out=out, jobs=jobs, resume=args.resume,
                               quiet=args.quiet or args.json, **options)
    except StudyError as e:
        raise ReproduceUsageError(str(e)) from None
    except KeyboardInterrupt as e:
        return interrupted(args, out, e)
    for warning in dict.fromkeys(paper.warnings(result)):
        if paper.warned(warning):
            say_warning(warning)
    checks = paper.checks(result)
    figures = [] if args.no_plots or not paper.plots else importlib.import_module(paper.plots).all_figures(result, out)
    if paper.write is not None:
        files = paper.write(result, checks, out, figures, args)
        if isinstance(files, int):
            return files  # interrupted
    else:
        files = write_files(paper, result, checks, out, figures)
        files.append(write_html(paper, result, checks, out, figures))
    if paper.say is not None:
        return paper.say(result, checks, out, files, figures, args)
    return say(paper, result, checks, out, files, figures, args)


# -- printing --------------------------------------------------------------------


def json_row(row: dict[str, object]) -> dict[str, object]:
    """A row with NaN (a run that did nothing) as null: JSON has no NaN."""
    return {k: None if isinstance(v, float) and v != v else v for k, v in row.items()}


def json_clean(x: object) -> object:
    """``x`` with every non-finite float as None (JSON has no NaN)."""
    if isinstance(x, dict):
        return {k: json_clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_clean(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _put(doc: dict, key: str, value: object) -> None:
    """``doc[key] = value``, ``group/name`` nesting it in ``doc[group]``."""
    if "/" in key:
        group, name = key.split("/", 1)
        doc.setdefault(group, {})[name] = value
    else:
        doc[key] = value


def say_written(n_files: int, out: Path, stores, no_plots: bool) -> None:
    """The closing lines of a reproduction: what it wrote, and the report."""
    from irqlab.cli_common import write_stdout

    write_stdout(
        f"wrote {n_files} files to {out}/ (report.html, report.md, CSV, JSON"
        + ("" if no_plots else ", PNG plots")
        + f") and the results stores {', '.join(f'{d}/' for d in stores)}"
    )
    write_stdout(f"report: {out / 'report.html'}")


def _why(paper: Paper, r, checks: list[ShapeCheck]) -> Optional[dict[str, str]]:
    return paper.explain(r, checks) if paper.explain is not None else None


def checks_text(paper: Paper, r, checks: list[ShapeCheck]) -> str:
    from irqlab.reproduce.claims import claims_text

    return claims_text(paper.checks_title, checks, why=_why(paper, r, checks))


def say(paper: Paper, r, checks: list[ShapeCheck], out: Path, files: list[Path], figures: list[Path],
        args: argparse.Namespace) -> int:
    """Print a reproduction: one JSON object (the checks, every table's
    rows, the notes and the files), or the tables, the claims, the notes
    and what was written."""
    from irqlab.cli_common import write_stdout
    from irqlab.reproduce.claims import claim_row

    if args.json:
        why = _why(paper, r, checks)
        doc: dict = {"checks": [claim_row(c, why) for c in checks]}
        for t in paper.tables:
            _put(doc, t.json_key, [json_row(row) for row in t.rows(r)])
        if paper.notes:
            doc["fitted"] = paper.notes[0](r)
        doc.update(paper.extra_json(r))
        doc["files"] = [str(f) for f in files + figures]
        write_stdout(json.dumps(doc))
        return 0
    for text in (*(t.text(r) for t in paper.tables if t.text), checks_text(paper, r, checks)):
        write_stdout(text)
        write_stdout("")
    for note in paper.notes:
        write_stdout("\n".join(textwrap.wrap(note(r), 110)))
    write_stdout("")
    say_written(len(files) + len(figures), out, r.directories.values(), args.no_plots)
    return 0


# -- files -----------------------------------------------------------------------


def write_files(paper: Paper, r, checks: list[ShapeCheck], out: Path, figures: list[Path]) -> list[Path]:
    """Each table as CSV, checks.csv, summaries.json and report.md."""
    import pandas as pd

    from irqlab.files import write_text_whole, write_whole
    from irqlab.reproduce.claims import claim_row

    why = _why(paper, r, checks)
    rows = [claim_row(c, why) for c in checks]
    written = []
    for t in paper.tables:
        if t.csv:
            path = out / f"{t.name}.csv"
            table_rows = t.rows(r)
            write_whole(path, lambda tmp: pd.DataFrame(table_rows).to_csv(tmp, index=False))
            written.append(path)
    path = out / "checks.csv"
    write_whole(path, lambda tmp: pd.DataFrame(rows).to_csv(tmp, index=False))
    written.append(path)
    doc: dict = {}
    if paper.summaries is not None:
        doc.update(paper.summaries(r))
    else:
        for t in paper.tables:
            _put(doc, t.json_key, t.rows(r))
    doc["checks"] = rows
    if paper.notes:
        doc["fitted"] = paper.notes[0](r)
    doc.update(paper.extra_json(r))
    doc["seed"] = r.seed
    if paper.seeds:
        doc["seeds"] = r.seeds
    doc["duration_s"] = r.duration_s
    path = out / "summaries.json"
    write_text_whole(path, json.dumps(json_clean(doc), indent=1, allow_nan=False))
    written.append(path)
    md = [f"# {paper.title(r)}", "", paper.intro(r), ""]
    for note in paper.notes:
        md += [note(r), ""]
    md += ["```", checks_text(paper, r, checks), "```", ""]
    for t in paper.tables:
        if t.text:
            md += [f"## {t.title}", "", "```", t.text(r), "```", ""]
    md += [f"![{f.stem}]({f.name})" for f in figures]
    path = out / "report.md"
    write_text_whole(path, "\n".join(md) + "\n")
    written.append(path)
    return written


def write_html(paper: Paper, r, checks: list[ShapeCheck], out: Path, figures: list[Path]) -> Path:
    """``out/report.html``: the claims and notes, the plots, the tables,
    then every study's generic report."""
    from irqlab.reproduce.claims import claims_section
    from irqlab.reproduce.html import _image
    from irqlab.study.report import write_report

    notes = [note(r) for note in paper.notes]
    from irqlab.htmltable import paper_pairs

    # What a reader came for first: the paper's tables beside the simulation
    # (those with the paper's values) and its figures, then the claims; then
    # the simulated-only tables (a figure's numbers), folded, and (folded)
    # every study's raw results.
    tables = [(t, t.rows(r)) for t in paper.tables if t.html and t.title]
    compared = [(t.title, paper.html_table(rows) + _csv_link(t)) for t, rows in tables if paper_pairs(rows)]
    simulated = [(t.title, _folded(paper.html_table(rows), len(rows)) + _csv_link(t))
                 for t, rows in tables if not paper_pairs(rows)]
    sections = compared[:1]
    if figures:
        sections.append((paper.plots_title, "".join(_image(f) for f in figures)))
    sections += compared[1:]
    sections.append(claims_section(paper.checks_title, checks, paper.intro(r), notes, _why(paper, r, checks)))
    sections += simulated
    first, *others = r.directories.values()
    return write_report(first, out / "report.html", title=paper.title(r), sections_before=sections,
                        extra_dirs=tuple(others), collapse=True)


def _folded(table: str, rows: int) -> str:
    """A simulated-only table, folded: the figures above draw it."""
    return f"<details><summary>The simulated numbers ({rows} rows)</summary>{table}</details>"


def _csv_link(t) -> str:
    """A link to the table's CSV file beside the report, if it has one."""
    return f'<p class="note">As CSV: <a href="{t.name}.csv">{t.name}.csv</a></p>' if t.csv else ""
