"""How a sweep shows its progress on stderr.

On a terminal: a rich progress bar with done/total, points per second and
the time left. Otherwise (a pipe, a CI log) or with ``--quiet``: one line
each time another tenth of the points is done.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any, Optional


class Progress:
    """Counts finished points of one sweep and shows them."""

    def __init__(self, name: str, total: int, already: int, *, bar: bool, stream: Optional[IO[str]] = None) -> None:
        self.name = name
        self.total = total
        self.done = already
        self.failed = 0
        self.stream = stream or sys.stderr
        self.started = time.monotonic()
        self._ran = 0
        self._tenth = self._tenths()
        self._bar: Any = None
        if bar and total > already:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress
            from rich.progress import TextColumn, TimeElapsedColumn, TimeRemainingColumn

            self._bar = RichProgress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=Console(file=self.stream),
                transient=False,
            )
            self._bar.start()
            self._task = self._bar.add_task(f"sweep {name}", total=total, completed=already, rate="")

    @staticmethod
    def wanted(quiet: bool, stream: Optional[IO[str]] = None) -> bool:
        """Whether a bar (rather than lines) suits ``stream``."""
        s = stream or sys.stderr
        return not quiet and hasattr(s, "isatty") and s.isatty()

    def _tenths(self) -> int:
        return (10 * self.done) // self.total if self.total else 10

    def rate(self) -> float:
        """Points per wall second over this invocation."""
        elapsed = time.monotonic() - self.started
        return self._ran / elapsed if elapsed > 0 else 0.0

    def advance(self, failed: bool) -> None:
        self.done += 1
        self._ran += 1
        self.failed += failed
        rate = self.rate()
        if self._bar is not None:
            self._bar.update(self._task, advance=1, rate=f"{rate:.1f} points/s")
            return
        tenth = self._tenths()
        if tenth > self._tenth:
            self._tenth = tenth
            left = (self.total - self.done) / rate if rate > 0 else float("nan")
            eta = "" if self.done == self.total else f", about {left:.0f} s left"
            failed_text = f", {self.failed} failed" if self.failed else ""
            self._line(
                f"sweep {self.name}: {self.done}/{self.total} points ({100 * self.done // self.total} %), "
                f"{rate:.1f} points/s{failed_text}{eta}"
            )

    def _line(self, text: str) -> None:
        try:
            print(text, file=self.stream, flush=True)
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
