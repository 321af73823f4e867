"""The test of any paper reproduction (:class:`irqlab.reproduce.paper.Paper`):
its declaration, ``irqlab reproduce PAPER`` end to end on short runs (the
JSON and every file it promises), the text form from the same stores, and
a bad flag. Each paper's test file calls these and adds what only that
paper's numbers can say."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from irqlab.reproduce.claim import STATUSES
from irqlab.reproduce.paper import Paper

ROOT = Path(__file__).resolve().parents[2]


def irqlab(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "irqlab", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT)


def check_declaration(paper: Paper, module) -> None:
    """Every claim declared once, with words, a tolerance whose constants
    exist in ``module`` (the paper's checks) and a status; every table
    named once."""
    ids = [c.id for c in paper.claims]
    assert ids and len(set(ids)) == len(ids), ids
    for c in paper.claims:
        assert c.words.strip() and c.tolerance.strip(), c.id
        assert c.status in STATUSES, c.id
        for name in c.tolerance.split(", "):
            if name.isidentifier() and name.isupper():
                assert hasattr(module, name), f"{c.id}: {name} is not a constant of {module.__name__}"
    names = [t.name for t in paper.tables]
    assert len(set(names)) == len(names), names
    assert len({t.json_key for t in paper.tables}) == len(names)


def _get(report: dict, key: str) -> object:
    for part in key.split("/"):
        report = report[part]
    return report


def end_to_end(paper: Paper, out: Path, *flags: str) -> dict:
    """``irqlab reproduce PAPER --out OUT FLAGS --json``, then the text form
    from the same stores; asserts what every reproduction promises and
    returns the JSON report."""
    proc = irqlab("reproduce", paper.name, "--out", str(out), *flags, "--quiet", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    declared = {c.id: c for c in paper.claims}
    assert [c["id"] for c in report["checks"]] == list(declared)
    for c in report["checks"]:
        assert isinstance(c["holds"], bool) and c["detail"]
        assert c["claim"] == declared[c["id"]].words, c["id"]
        if paper.explain is not None:
            assert isinstance(c["why"], str) and (c["why"] == "" or not c["holds"])
    whys = [c["why"] for c in report["checks"] if c.get("why")]
    assert len(whys) == len(set(whys)), "two claims' diagnoses are word for word the same"
    if paper.notes:
        assert "prediction" in report["fitted"]
    for t in paper.tables:
        assert isinstance(_get(report, t.json_key), list), t.json_key
    names = [f"{t.name}.csv" for t in paper.tables if t.csv] + ["checks.csv", "summaries.json", "report.md",
                                                                "report.html"]
    assert sorted(str(out / n) for n in names) == sorted(f for f in report["files"] if not f.endswith(".png"))
    for f in report["files"]:
        assert Path(f).is_file() and Path(f).stat().st_size > 0, f
    pngs = [Path(f) for f in report["files"] if f.endswith(".png")]
    assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    for study in paper.studies:
        for name in ("results.parquet", "study.toml"):
            assert (out / study / name).is_file(), f"{study}/{name}"
    summaries = json.loads((out / "summaries.json").read_text())
    assert [c["id"] for c in summaries["checks"]] == list(declared)
    html = (out / "report.html").read_text()
    assert "http://" not in html and "https://" not in html
    for i in declared:
        assert f"<b>{i} " in html
    md = (out / "report.md").read_text()
    for t in paper.tables:
        if t.text:
            assert f"## {t.title}" in md, t.title

    # The text form from the same stores (--resume: nothing runs again).
    journals = {s: (out / s / "journal.jsonl").read_text() for s in paper.studies}
    text = irqlab("reproduce", paper.name, "--out", str(out), *flags, "--quiet", "--resume", "--no-plots")
    assert text.returncode == 0, text.stderr
    assert {s: (out / s / "journal.jsonl").read_text() for s in paper.studies} == journals
    lines = text.stdout.splitlines()
    for t in paper.tables:
        if t.text:
            assert any(line.startswith(t.title) for line in lines), t.title
    assert any(line.startswith(paper.checks_title) for line in lines)
    verdicts = [line.split()[1].rstrip(":") for line in lines if line.startswith(("  [ok] ", "  [NO] "))]
    assert verdicts == list(declared)
    assert f"report: {out / 'report.html'}" in lines
    return report


#: Bad flags of a paper that takes ``--duration`` and ``--seeds``, each with
#: the flag its one sentence names.
BAD_FLAGS = [
    (("--seeds", "0"), "--seeds"),
    (("--duration", "-1"), "--duration"),
    (("--scenario", "/nonexistent.toml"), "--scenario"),
]


def bad_flag(paper: Paper, out: Path, flags: tuple[str, ...], start: str) -> None:
    """A bad flag: one sentence naming it, exit status 2, nothing run."""
    proc = irqlab("reproduce", paper.name, "--out", str(out), *flags, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert start in proc.stderr and proc.stderr.strip().count("\n") == 0, proc.stderr
    assert not any((out / s).exists() for s in paper.studies)
