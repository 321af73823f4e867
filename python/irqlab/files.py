"""Writing whole files: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any, Callable


def write_whole(path: Path, write: Callable[[Path], Any]) -> None:
    """Call ``write(tmp)`` for a new file beside ``path``, then move it onto
    ``path`` (``rename(2)`` is atomic within a directory). The file gets the
    usual permissions (``0666`` less the umask), as a file written in place
    would: results, figures and reports are for sharing."""
    path = Path(path)
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - 100 collisions of 32 random bits
        raise FileExistsError(f"cannot create a temporary file beside {path}")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_text_whole(path: Path, text: str) -> None:
    """:func:`write_whole` of UTF-8 text."""
    write_whole(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
