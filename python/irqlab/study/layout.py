"""The files of a results directory, by name, and its journal read back:
what :mod:`irqlab.study.store` writes and :mod:`irqlab.results` reads
(the store compacts its journal with the second's Parquet writer, so the
two cannot import each other)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from irqlab.study.spec import StudyError

MANIFEST = "manifest.json"
JOURNAL = "journal.jsonl"
RESULTS = "results.parquet"
SCENARIO = "scenario.toml"
STUDY = "study.toml"

#: Version of the directory layout and journal records, in the manifest's
#: ``format``: a directory of another format is refused, not misread.
FORMAT = 1


def check_format(manifest: dict[str, Any], path: Path) -> None:
    """Refuse a manifest of another :data:`FORMAT` (issue 62, item 12: format
    99 was read without a word) in one sentence naming ``path``."""
    theirs = manifest.get("format")
    if isinstance(theirs, bool) or theirs != FORMAT:
        raise StudyError(
            f"{path} says format {json.dumps(theirs)}, and this irqlab reads format {FORMAT} only; read it with the "
            "irqlab that wrote it, or run the sweep again into a new directory"
        )


def read_journal(path: Path) -> Iterator[dict[str, Any]]:
    journal = path / JOURNAL
    try:
        lines = journal.read_bytes().split(b"\n")
    except FileNotFoundError:
        return
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            if i >= len(lines) - 2:
                continue  # a torn last line: the run it was for will run again
            raise StudyError(f"{journal} line {i + 1} is not a journal record; the directory is damaged") from None
        if not (isinstance(record, dict) and isinstance(record.get("key"), str)):
            # Dropping it would lose a run without a word (a point then shows
            # fewer seeds than it ran: issue 62, item 12).
            kinds = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}
            what = "an object without a run key" if isinstance(record, dict) else kinds.get(type(record), "null")
            raise StudyError(f"{journal} line {i + 1} is {what}, not a journal record; the directory is damaged")
        yield record
