"""Shared helpers: the small test scenario and a way to run the `irqlab` command.

Tests marked ``needs_run`` need ``irqlab_core::run`` to simulate; the others
only need the scenario layer (``_core.resolve``) and the Python package.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SMALL = HERE / "scenarios" / "small.toml"

#: Short enough to keep every run in the suite well under a second.
SHORT = "0.01"


def irqlab(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``python -m irqlab ARGS`` from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", "irqlab", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,
    )


@pytest.fixture
def small() -> Path:
    return SMALL


@pytest.fixture
def small_text() -> str:
    return SMALL.read_text(encoding="utf-8")
