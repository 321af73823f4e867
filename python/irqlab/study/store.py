"""The results directory of one sweep.

::

    DIR/manifest.json    what sweep this is (its fingerprint), when, by which irqlab
    DIR/scenario.toml    the scenario's text, as given
    DIR/study.toml       the study, as a study file that re-runs it
    DIR/journal.jsonl    one line per finished run, appended as each finishes
    DIR/results.parquet  the dataset: a row per run (see irqlab.results)

The journal is what makes a sweep resumable: a line is written (and flushed
to the kernel) as soon as a run finishes, so Ctrl-C, SIGTERM or a crash keeps
every finished run; a torn last line (a crash mid-write) is ignored; any
other line that is not a record says the directory is damaged. The
Parquet file is rebuilt from the journal when the sweep stops, however it
stops, and by the next sweep of the same directory after a crash. One sweep
at a time writes a directory (:mod:`irqlab.study.dirlock`).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Iterator, Optional

from irqlab.files import write_text_whole
from irqlab.study.dirlock import DirectoryBusy, DirectoryLock
from irqlab.study.layout import FORMAT, JOURNAL, MANIFEST, RESULTS, SCENARIO, STUDY, check_format, read_journal
from irqlab.study.spec import Study, StudyError


class Store:
    """An open results directory (see the module)."""

    def __init__(self, path: Path, lock: Optional[DirectoryLock] = None) -> None:
        self.path = path
        self._lock = lock

    # -- opening ----------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike[str], study: Study, flag: str = "--out") -> Store:
        """The directory for ``study``, locked for this sweep: created if it
        does not exist or is empty, reopened (to resume) if it holds this
        same study, refused in one sentence if it holds anything else or
        another sweep is writing it (:mod:`irqlab.study.dirlock`). Nothing is
        written before those checks pass; :meth:`close` lets the next sweep in."""
        out = Path(path)
        cls._check(out, study, flag)  # before the directory is created
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StudyError(f"{flag} {out} cannot be created: {e.strerror or e}") from None
        try:
            lock = DirectoryLock.take(out, flag)
        except DirectoryBusy as e:
            raise StudyError(str(e)) from None
        except OSError as e:
            raise StudyError(f"{flag} {out} cannot be opened: {e.strerror or e}") from None
        store = cls(out, lock)
        try:
            # Again under the lock: another sweep may have started it meanwhile.
            if cls._check(out, study, flag):
                store._write_texts(study)  # plots or description may have changed
                store._drop_torn_line()
                return store
            # The manifest first: a sweep killed right after it is resumed
            # (the texts are rewritten on reopening); one killed before it
            # would leave a directory that is neither empty nor a sweep.
            write_text_whole(
                out / MANIFEST,
                json.dumps(
                    {
                        "format": FORMAT,
                        "name": study.name,
                        "fingerprint": study.fingerprint(),
                        "points": study.size,
                        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                        "axes": [a.field for a in study.axes],
                    },
                    indent=2,
                )
                + "\n",
            )
            store._write_texts(study)
        except BaseException:
            store.close()
            raise
        return store

    @staticmethod
    def _check(out: Path, study: Study, flag: str) -> bool:
        """True if ``out`` holds ``study``'s sweep (to resume), False if it
        is missing or empty; else :class:`StudyError`."""
        if out.exists() and not out.is_dir():
            raise StudyError(f"{flag} {out} exists and is not a directory; give a directory for the results")
        manifest = out / MANIFEST
        if manifest.is_file():
            try:
                theirs = json.loads(manifest.read_text())
                fingerprint = theirs["fingerprint"]
            except (OSError, ValueError, KeyError, TypeError):
                raise StudyError(f"{flag} {out} holds an unreadable {MANIFEST}; give another directory") from None
            check_format(theirs, manifest)
            if fingerprint != study.fingerprint():
                raise StudyError(
                    f"{flag} {out} holds the results of another sweep ({theirs.get('name', '?')}: different scenario, "
                    "profiles, axes, seeds or duration); give another directory or remove that one"
                )
            return True
        if out.is_dir() and any(out.iterdir()):
            raise StudyError(f"{flag} {out} is not empty and holds no sweep; give a new or empty directory")
        return False

    def close(self) -> None:
        """Release the directory (the next sweep into it may start)."""
        if self._lock is not None:
            self._lock.release()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write_texts(self, study: Study) -> None:
        write_text_whole(self.path / SCENARIO, study.scenario_text)
        # Policy paths relative to the directory, as a study file's are read.
        write_text_whole(self.path / STUDY, study.to_toml(SCENARIO, directory=self.path))

    # -- the journal --------------------------------------------------------------

    def _drop_torn_line(self) -> None:
        """Cut a torn last line (a crash mid-write) off the journal, so that
        the next record starts a line of its own instead of joining it into
        one unreadable line; the run it was for runs again."""
        journal = self.path / JOURNAL
        try:
            with open(journal, "rb+") as f:
                data = f.read()
                if data and not data.endswith(b"\n"):
                    f.truncate(data.rfind(b"\n") + 1)
        except FileNotFoundError:
            pass

    def records(self) -> Iterator[dict[str, Any]]:
        """Every journal record in order (a torn last line is skipped)."""
        return read_journal(self.path)

    def finished(self) -> dict[str, dict[str, Any]]:
        """The latest record per run key."""
        return {r["key"]: r for r in self.records()}

    def append(self, record: dict[str, Any]) -> None:
        """Add one finished run; on disk (in the kernel's page cache) when this returns."""
        line = json.dumps(record, allow_nan=True) + "\n"
        fd = os.open(self.path / JOURNAL, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            # One write of a whole line: readers see it entirely or not at all.
            data = line.encode()
            written = os.write(fd, data)
            while written < len(data):
                written += os.write(fd, data[written:])
        finally:
            os.close(fd)

    # -- the dataset ---------------------------------------------------------------

    def compact(self, study: Study) -> Path:
        """Rebuild ``results.parquet`` from the journal (atomically)."""
        from irqlab.results import write_parquet

        target = self.path / RESULTS
        write_parquet(
            list(self.finished().values()), target, {"name": study.name, "fingerprint": study.fingerprint()}
        )
        return target
