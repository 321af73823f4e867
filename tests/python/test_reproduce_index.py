"""``irqlab reproduce index``: the page over the papers' reproductions, from
what they wrote (no runs here: the summaries are written by hand)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import irqlab
from irqlab.reproduce.index import INDEX, PAPERS, index_html, tally_of


def _summaries(directory: Path, checks: list[dict], **extra: object) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "summaries.json").write_text(json.dumps({"checks": checks, **extra}))
    (directory / "report.html").write_text("<!DOCTYPE html><title>r</title>")


CHECKS = [
    {"id": "V1", "holds": True, "status": "prediction"},
    {"id": "V2", "holds": False, "status": "prediction"},
    {"id": "V3", "holds": True, "status": "fit"},
    {"id": "V4", "holds": True, "status": "by construction"},
]


def test_tally_counts_by_status_and_leaves_repeats_out() -> None:
    t = tally_of(CHECKS + [{"holds": True, "status": "prediction", "repeats": "passthrough"}])
    assert (t.held, t.counted) == (3, 4)
    assert t.by_status == {"prediction": (1, 2), "fit": (1, 1), "by construction": (1, 1)}
    assert t.sentence() == "3 of 4 claims hold (1 of 2 predictions, 1 of 1 fits, 1 of 1 by construction)"


def test_index_lists_each_paper_and_says_which_are_missing(tmp_path: Path) -> None:
    out = tmp_path / "irqlab-out"
    _summaries(out, CHECKS[:1], vm_checks=CHECKS[1:2])
    _summaries(out / "vic", CHECKS)
    page, lines = index_html(out)
    assert lines[0] == f"thesis: 1 of 2 claims hold (1 of 2 predictions): {out / 'report.html'}"
    assert lines[4] == f"vic: 3 of 4 claims hold (1 of 2 predictions, 1 of 1 fits, 1 of 1 by construction): " \
                       f"{out / 'vic' / 'report.html'}"
    assert lines[1] == f"cover-letter: not reproduced here (irqlab reproduce cover-letter --out {out / 'cover-letter'})"
    assert '<a href="vic/report.html">' in page and '<a href="report.html">' in page
    assert page.count('class="paper missing"') == len(PAPERS) - 2
    assert "http://" not in page and "https://" not in page


def test_cli_writes_the_index_and_prints_a_line_per_paper(tmp_path: Path) -> None:
    out = tmp_path / "o"
    _summaries(out / "sriov", CHECKS)
    proc = irqlab("reproduce", "index", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == f"index: {out / INDEX}"
    assert len(proc.stdout.splitlines()) == len(PAPERS) + 1
    assert (out / INDEX).read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("setup, message", [
    ("missing", "is not a directory"),
    ("empty", "holds no reproduction"),
    ("fifo", "a FIFO"),
])
def test_cli_errors_are_one_sentence(tmp_path: Path, setup: str, message: str) -> None:
    out = tmp_path / "o"
    if setup != "missing":
        out.mkdir()
    if setup == "fifo":
        _summaries(out / "vic", CHECKS)
        os.mkfifo(out / INDEX)
    proc = irqlab("reproduce", "index", "--out", str(out))
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def _marker(directory: Path, kind: str) -> None:
    (directory / "reproduction.json").write_text(json.dumps({"kind": kind}))


def test_a_directory_is_listed_by_its_recorded_kind_not_its_folder(tmp_path: Path) -> None:
    # issue 62, item 12: an ITR reproduction written into vic/ is ITR's.
    out = tmp_path / "o"
    _summaries(out / "vic", CHECKS)
    _marker(out / "vic", "itr")
    proc = irqlab("reproduce", "index", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[2] == f"itr: 3 of 4 claims hold (1 of 2 predictions, 1 of 1 fits, 1 of 1 by construction): " \
                       f"{out / 'vic' / 'report.html'}"
    assert lines[4].startswith("vic: not reproduced here")
    assert proc.stderr.splitlines() == [
        f"irqlab: warning: reproduce index: {out / 'vic'} holds the output of irqlab reproduce itr (its "
        "reproduction.json), so it is listed as itr, not as vic"]
    page = (out / INDEX).read_text()
    assert page.count('class="paper missing"') == len(PAPERS) - 1
    assert '<h2><a href="vic/report.html">Improved ITR' in page


def test_a_mislabelled_directory_is_not_listed_twice(tmp_path: Path) -> None:
    out = tmp_path / "o"
    _summaries(out / "itr", CHECKS[:1])
    _marker(out / "itr", "itr")
    _summaries(out / "vic", CHECKS)
    _marker(out / "vic", "itr")
    page, lines = index_html(out)
    assert lines[2].startswith("itr: 1 of 1 claims hold") and lines[2].endswith(str(out / "itr" / "report.html"))
    assert lines[4].startswith("vic: not reproduced here")
    proc = irqlab("reproduce", "index", "--out", str(out))
    assert proc.returncode == 0
    assert "it is not listed, since" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_an_unreadable_marker_is_not_taken_for_its_folder(tmp_path: Path) -> None:
    out = tmp_path / "o"
    _summaries(out / "vic", CHECKS)
    (out / "vic" / "reproduction.json").write_text("{")
    _summaries(out / "sriov", CHECKS)
    proc = irqlab("reproduce", "index", "--out", str(out))
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[4].startswith("vic: not reproduced here")
    assert proc.stdout.splitlines()[5].startswith("sriov: 3 of 4 claims hold")
    assert "unreadable reproduction.json" in proc.stderr
