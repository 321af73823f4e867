"""``irqlab reproduce index``: one page over the five papers' reproductions
(``irqlab-out/index.html``): per paper, how many of its claims hold as
predictions, as fits and by construction, its headline figure, and a link
to its report; and one line per paper on stdout.

It reads what the reproductions wrote (each paper's ``summaries.json`` and
figures under ``--out``), runs nothing, and says which papers were not
reproduced there yet and how to reproduce them.
"""

from __future__ import annotations

import argparse
import base64
import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from irqlab.reproduce.claim import FIT, PREDICTION, STATUSES


@dataclass(frozen=True)
class Entry:
    """A paper as the index shows it: its command's name, its directory
    under ``--out`` ("" for the thesis, whose report is ``--out`` itself),
    what it is, and its headline figure's file in that directory."""

    name: str
    subdir: str
    title: str
    mechanism: str
    headline: str


#: The papers, in the order ``make demo`` reproduces them.
PAPERS = (
    Entry("thesis", "", "IRQ Suspend thesis: memcached on 8 cores, bare metal and in KVM guests",
          "IRQ suspension: epoll busy polling that keeps NIC interrupts suspended while the application is busy",
          "figure-4.1b-p99.png"),
    Entry("cover-letter", "cover-letter", "IRQ suspension cover letter (v7): twelve cases on an AMD EPYC",
          "IRQ suspension against deferral and busy polling", "closed-ratios.png"),
    Entry("itr", "itr", "Improved ITR (Emmerich et al., SPECTS 2015): one core forwarding on an 82599",
          "A linear ITR in place of ixgbe's", "figure-7.png"),
    Entry("iaps", "iaps", "IAPS (Helbig & Kim, ICOIN 2025): iperf3 streams into 8 cores",
          "Packet steering that avoids IPIs", "figure-2.png"),
    Entry("vic", "vic", "vIC (Ahmad, Gulati & Mashtizadeh, USENIX ATC 2011): Iometer in an ESX VM",
          "Virtual interrupt coalescing for VM storage", "table-2.png"),
    Entry("sriov", "sriov", "Golden-section ITR search for SR-IOV: 1-15 KVM guests on 82599 VFs",
          "A golden-section search of the VFs' interrupt rate", "figure-2.png"),
)

INDEX = "index.html"


@dataclass
class Tally:
    """One paper's claims as its reproduction checked them."""

    held: int = 0
    counted: int = 0
    #: status → (held, checked).
    by_status: dict[str, tuple[int, int]] = None  # type: ignore[assignment]

    def sentence(self) -> str:
        parts = [f"{h} of {n} {s if s == 'by construction' else s + 's'}" for s, (h, n) in self.by_status.items() if n]
        return f"{self.held} of {self.counted} claims hold" + (f" ({', '.join(parts)})" if parts else "")


def tally_of(checks: list[dict]) -> Tally:
    """How many of ``checks`` (rows of ``summaries.json``) hold, by status;
    rows that repeat another setup's numbers are not counted."""
    counted = [c for c in checks if not c.get("repeats")]
    by_status = {}
    for s in (*STATUSES, ""):
        group = [c for c in counted if (c.get("status") or "") == s]
        if group:
            by_status[s or "unmarked"] = (sum(bool(c.get("holds")) for c in group), len(group))
    return Tally(sum(bool(c.get("holds")) for c in counted), len(counted), by_status)


def recorded_kind(base: Path) -> Optional[str]:
    """The reproduction ``base``'s marker (``reproduction.json``) records:
    None when there is no marker (an output written before markers
    existed, which only its folder's name can identify), "" when the
    marker cannot be read."""
    from irqlab.reproduce.output import MARKER

    path = base / MARKER
    if not path.exists():
        return None
    try:
        kind = json.loads(path.read_text(encoding="utf-8"))["kind"]
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    return kind if isinstance(kind, str) else ""


def locate(out: Path) -> tuple[dict[str, Path], list[str]]:
    """Which directory under ``out`` holds each paper's reproduction, and a
    sentence for each directory whose marker contradicts its folder's name.

    The marker is trusted over the folder (issue 62, item 12): an ITR
    reproduction written into ``vic/`` is ITR's, listed as ITR when ITR's
    own folder holds none and never as vIC. A folder without a marker is
    taken by its name, as outputs older than the marker were."""
    by_name = {e.name: e for e in PAPERS}
    default = {e.name: out / e.subdir if e.subdir else out for e in PAPERS}
    kinds = {}
    try:
        children = sorted(p for p in out.iterdir() if p.is_dir())
    except OSError:
        children = []
    for base in (out, *children):
        kinds[base] = recorded_kind(base)
    written = {base for base in kinds if (base / "summaries.json").is_file()}
    placed: dict[str, Path] = {}
    for e in PAPERS:
        kind = kinds.get(default[e.name])
        if default[e.name] in written and (kind is None or kind == e.name):
            placed[e.name] = default[e.name]
    # A directory whose marker names a paper stands for that paper when the
    # paper's own folder holds no reproduction of it.
    for base, kind in kinds.items():
        if kind in by_name and kind not in placed and base in written:
            placed[kind] = base
    notes = []
    for e in PAPERS:
        base = default[e.name]
        kind = kinds.get(base)
        if kind is None or kind == e.name or base not in written:
            continue
        where = str(base)
        if not kind:
            notes.append(f"reproduce index: {where} has an unreadable reproduction.json, so it is not listed "
                         f"as {e.name}; re-run irqlab reproduce {e.name} --out {base}")
        elif kind not in by_name:
            notes.append(f"reproduce index: {where} holds a reproduction of kind {kind!r} (its reproduction.json), "
                         f"which is no paper this index lists; it is not listed as {e.name}")
        elif placed.get(kind) == base:
            notes.append(f"reproduce index: {where} holds the output of irqlab reproduce {kind} (its "
                         f"reproduction.json), so it is listed as {kind}, not as {e.name}")
        else:
            notes.append(f"reproduce index: {where} holds the output of irqlab reproduce {kind} (its "
                         f"reproduction.json), not of {e.name}; it is not listed, since "
                         f"{placed[kind]} holds {kind}'s")
    return placed, notes


def read_paper(out: Path, e: Entry, base: Optional[Path] = None) -> Optional[tuple[Tally, Path, Optional[Path]]]:
    """A paper's tally, report and headline figure in ``base`` (by default
    its folder under ``out``), or None when it was not reproduced there (no
    ``summaries.json`` with checks)."""
    if base is None:
        base = out / e.subdir if e.subdir else out
    try:
        doc = json.loads((base / "summaries.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("checks"), list):
        return None
    checks = [c for c in doc["checks"] + (doc.get("vm_checks") or []) if isinstance(c, dict)]
    figure = base / e.headline
    return tally_of(checks), base / "report.html", figure if figure.is_file() else None


def found_papers(out: Path) -> dict[str, Optional[tuple[Tally, Path, Optional[Path]]]]:
    """Each paper's reproduction under ``out`` (``read_paper``'s answer),
    from the directory ``locate`` gives it."""
    placed, _notes = locate(out)
    return {e.name: read_paper(out, e, placed[e.name]) if e.name in placed else None for e in PAPERS}


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def index_html(out: Path) -> tuple[str, list[str]]:
    """The index page and its lines for stdout."""
    from irqlab.study.report import _CSS, _CSP

    cards, lines, rows = [], [], []
    papers = found_papers(out)
    for e in PAPERS:
        found = papers[e.name]
        rows.append(_summary_row(out, e, found))
        if found is None:
            cmd = f"irqlab reproduce {e.name} --out {out / e.subdir if e.subdir else out}"
            cards.append(f'<section class="paper missing"><h2>{_e(e.title)}</h2><p>{_e(e.mechanism)}.</p>'
                         f'<p class="note">Not reproduced in this directory yet: <code>{_e(cmd)}</code></p></section>')
            lines.append(f"{e.name}: not reproduced here ({cmd})")
            continue
        t, report, figure = found
        link = report.relative_to(out).as_posix()
        predicted = t.by_status.get(PREDICTION, (0, 0))
        fitted = t.by_status.get(FIT, (0, 0))
        img = ""
        if figure is not None:
            data = base64.b64encode(figure.read_bytes()).decode("ascii")
            img = (f'<a href="{_e(link)}"><img src="data:image/png;base64,{data}" '
                   f'alt="{_e(e.title)}: headline figure ({_e(figure.name)})"></a>')
        cards.append(
            f'<section class="paper"><h2><a href="{_e(link)}">{_e(e.title)}</a></h2><p>{_e(e.mechanism)}.</p>'
            f'<p class="tally"><b>{predicted[0]} of {predicted[1]}</b> predictions hold'
            f'{f"; {fitted[0]} of {fitted[1]} fits" if fitted[1] else ""}. {_e(t.sentence())}.</p>'
            f"{img}<p><a href=\"{_e(link)}\">The full report: the paper's tables and figures beside the simulation, "
            "every claim with its evidence</a></p></section>")
        lines.append(f"{e.name}: {t.sentence()}: {report}")
    page = (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        "<title>irqlab: the papers' results beside the simulation</title>\n<style>\n" + _CSS + "\n"
        ".paper { border-top: 1px solid #ccc; padding-top: .4rem; }\n"
        ".paper img { max-width: 100%; height: auto; border: 1px solid #eee; }\n"
        ".tally { font-size: 1.05rem; }\n"
        "</style>\n</head>\n<body>\n<h1>irqlab: the papers' results beside the simulation</h1>\n"
        "<p>Each paper's claims checked on the simulator's runs. A <b>prediction</b> is a number the model was "
        "not fitted to; a <b>fit</b> holds because a constant was chosen to make it hold; a claim that holds "
        "<b>by construction</b> follows from how the model is written. Only predictions count as reproduced.</p>\n"
        + _summary_table(rows) + "\n".join(cards) + "\n</body>\n</html>\n"
    )
    return page, lines


def _summary_row(out: Path, e: Entry, found) -> dict[str, str]:
    """The paper's line of the summary table: claims holding per status."""
    if found is None:
        return {"paper": e.title, "link": "", **{s: "" for s in STATUSES}, "all": "not reproduced here"}
    t, report, _figure = found

    def cell(status: str) -> str:
        held, n = t.by_status.get(status, (0, 0))
        return f"{held} of {n}" if n else "\u2014"

    return {"paper": e.title, "link": report.relative_to(out).as_posix(), **{s: cell(s) for s in STATUSES},
            "all": f"{t.held} of {t.counted}"}


def _summary_table(rows: list[dict[str, str]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in ("Predictions hold", "Fits hold", "By construction", "All"))
    body = "".join(
        "<tr><td class=\"text\">"
        + (f'<a href="{_e(r["link"])}">{_e(r["paper"])}</a>' if r["link"] else _e(r["paper"]))
        + "</td>" + "".join(f"<td>{_e(r[k])}</td>" for k in (*STATUSES, "all")) + "</tr>"
        for r in rows
    )
    return (f'<div class="table-box"><table class="summary"><thead><tr><th class="text">Paper</th>{head}</tr>'
            f"</thead><tbody>{body}</tbody></table></div>")


def write_index(out: Path) -> tuple[Path, list[str]]:
    """Write ``out/index.html``; the path and the stdout lines."""
    from irqlab.files import write_text_whole

    page, lines = index_html(out)
    path = out / INDEX
    write_text_whole(path, page)
    return path, lines


def command(args: argparse.Namespace) -> int:
    """``irqlab reproduce index``: its exit status."""
    from irqlab.cli_common import write_stdout
    from irqlab.files import check_output_file
    from irqlab.reproduce.harness import ReproduceUsageError

    out = Path(args.out)
    if not out.is_dir():
        raise ReproduceUsageError(f"--out {args.out} is not a directory; give the directory the reproductions "
                                  "wrote into (default irqlab-out)")
    check_output_file(out / INDEX, "--out", ReproduceUsageError)
    from irqlab.cli_common import say_warning

    for note in locate(out)[1]:
        say_warning(note)
    if all(found is None for found in found_papers(out).values()):
        raise ReproduceUsageError(f"--out {args.out} holds no reproduction (no summaries.json with checks); run "
                                  "irqlab reproduce PAPER --out there first, or make demo")
    path, lines = write_index(out)
    for line in lines:
        write_stdout(line)
    write_stdout(f"index: {path}")
    return 0
