"""Where a result came from: the irqlab version and the git commit of the
source tree it runs from (``maturin develop`` installs in place)."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path
from typing import Optional

from irqlab._core import __version__


@functools.lru_cache(maxsize=1)
def git_commit() -> Optional[str]:
    """``HEAD``'s commit of the checkout this package lives in, with
    ``-dirty`` when tracked files differ from it; ``None`` outside a checkout
    or without git."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}-dirty" if dirty else head or None


def version() -> str:
    return __version__
