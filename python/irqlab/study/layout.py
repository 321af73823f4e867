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
        if isinstance(record, dict) and "key" in record:
            yield record
