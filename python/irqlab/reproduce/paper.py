"""A paper as a reproduction declares it: its studies (the simulator's
runs), its checks, its tables, its plots and its fit note. The harness
(:mod:`irqlab.reproduce.harness`) does the rest: flags, the runs, the
warnings, printing, and the files (CSV, JSON, Markdown, HTML)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from irqlab.reproduce.claim import Claim, ShapeCheck

Rows = list[dict[str, object]]


def _frame_html(rows: Rows, float_format: str = "") -> str:
    from irqlab.reproduce.claims import frame_html

    return frame_html(rows, float_format)


@dataclass(frozen=True)
class Table:
    """One of a paper's tables or figures as rows.

    ``name`` is its CSV file (``<name>.csv``) and, with ``-`` as ``_``, its
    key in the JSON; ``key`` a JSON key of its own instead (``group/name``
    nests it in ``group``). With ``text`` it is printed and in
    ``report.md`` under ``title``; with ``html`` its rows are a section of
    ``report.html`` under ``title``."""

    name: str
    rows: Callable[[Any], Rows]
    title: str = ""
    text: Optional[Callable[[Any], str]] = None
    html: bool = True
    key: str = ""
    csv: bool = True

    @property
    def json_key(self) -> str:
        return self.key or self.name.replace("-", "_")


@dataclass(frozen=True)
class Paper:
    """A reproduction: what ``irqlab reproduce <name>`` runs, checks and writes.

    ``run(scenario, *, seed, out, jobs, resume, quiet, **options)`` runs the
    studies into ``out`` and reads them back as the paper's result, which
    has ``directories`` (study name → results directory, in run order),
    ``warnings``, ``seed`` and ``duration_s`` (and ``seeds`` when the paper
    takes ``--seeds``). ``options(args)`` checks the paper's own flags (the
    harness checks ``--seed``, ``--jobs``, ``--seeds`` and ``--scenario``)
    and returns them as ``run``'s keywords.

    ``checks(result)`` checks every claim (``claims`` declares them);
    ``notes`` are paragraphs said after the claims, the first of them the
    fit note (``fitted`` in the JSON). ``explain(result, checks)`` (by
    claim id) says why a failing claim fails. ``summaries(result)`` is the
    data part of ``summaries.json`` (default: every table's rows);
    ``extra_json(result)`` more keys after the fit note. ``plots`` names the
    module whose ``all_figures(result, out)`` writes the PNG plots (loaded
    only when plots are asked for: it imports matplotlib, and the paper's
    module).

    A paper whose files do not fit this shape gives ``write(result, checks,
    out, figures, args)`` (the files it wrote, report.html included) and
    ``say(result, checks, out, files, figures, args)`` (prints it) instead.
    """

    name: str
    #: The studies' names (``scenarios/<name>/<study>.study.toml``, results
    #: in ``--out/<study>``), in the order they run.
    studies: tuple[str, ...]
    #: The scenario file its studies run (``--scenario`` replaces it), and
    #: what another must have: another kind of scenario fails late (a
    #: missing column after every run) or, worse, runs and checks the wrong
    #: experiment.
    scenario: str
    scenario_needs: dict[str, str]
    run: Callable[..., Any]
    checks: Callable[[Any], list[ShapeCheck]]
    claims: tuple[Claim, ...] = ()
    title: Callable[[Any], str] = lambda r: ""
    intro: Callable[[Any], str] = lambda r: ""
    checks_title: str = ""
    notes: tuple[Callable[[Any], str], ...] = ()
    tables: tuple[Table, ...] = ()
    plots: str = ""
    plots_title: str = "Figures in the paper's layout"
    html_table: Callable[[Rows], str] = _frame_html
    options: Callable[[Any], dict] = lambda args: {}
    seeds: bool = False
    warned: Callable[[str], bool] = lambda warning: True
    warnings: Callable[[Any], list[str]] = lambda r: list(r.warnings)
    explain: Optional[Callable[[Any, list[ShapeCheck]], dict[str, str]]] = None
    summaries: Optional[Callable[[Any], dict]] = None
    extra_json: Callable[[Any], dict] = lambda r: {}
    write: Optional[Callable[..., list[Path]]] = None
    say: Optional[Callable[..., int]] = None
