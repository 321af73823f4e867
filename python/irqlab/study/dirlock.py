"""One sweep at a time in a results directory (issue 62, item 13).

Two identical sweeps started into one ``--out`` both ran every point still
missing (83 runs for 48 points): each read the journal before the other had
written to it. A sweep therefore holds an exclusive ``flock(2)`` on the
results directory itself for as long as it writes there, and a second one is
refused at once instead of waiting: it would only have re-run the same
points, and a wait would look like a hang.

The lock is on the directory's own open file description (``open(2)`` of
the directory, ``O_CLOEXEC``), so no lock file is added to the results, a
child process does not inherit it, and the kernel drops it when the holder
exits however it exits (``flock(2)``: the lock goes with the last
descriptor of the open file description).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Optional


class DirectoryBusy(Exception):
    """Another holder has the directory; the message is one sentence."""


class DirectoryLock:
    """An exclusive lock on one directory, held until :meth:`release`."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: Optional[int] = fd

    @classmethod
    def take(cls, path: Path, flag: str) -> DirectoryLock:
        """Lock ``path`` (an existing directory) or raise :class:`DirectoryBusy`
        naming ``flag`` if another sweep holds it."""
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DirectoryBusy(
                f"{flag} {path} is being written by another irqlab sweep right now; wait for it to finish "
                "(then run this one again to add what it lacks), or give another directory"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd)

    def release(self) -> None:
        """Let the next sweep in (closing the descriptor drops the lock)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __del__(self) -> None:
        # A holder dropped without release (a Store never closed) lets go.
        self.release()
