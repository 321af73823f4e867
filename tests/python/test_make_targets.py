"""What the Makefile's targets run (issue 62, item 15): `make test` reports
every skipped test with its reason, as the README promises, and every Rust
test that only means something in a debug build is run by a target CI runs
(`.ci/run` runs `make test` and `make debug-check`).

`make -n` prints a target's commands without running them (nor its
prerequisites' recipes), so these tests read what the targets would do.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")


def _dry_run(target: str, *flags: str) -> str:
    # -o setup treats the setup target as done, so only the target's own
    # recipe is printed.
    out = subprocess.run(["make", "-n", *flags, "-o", "setup", target], cwd=REPO, capture_output=True, text=True,
                         timeout=60, check=True)
    return out.stdout


def test_make_test_prints_each_skip_with_its_reason():
    pytest_lines = [line for line in _dry_run("test").splitlines() if "pytest" in line]
    assert pytest_lines, "make test runs no pytest"
    for line in pytest_lines:
        assert re.search(r"(^|\s)-r\w*s", line), f"make test's pytest hides skip reasons: {line.strip()}"


def test_ci_runs_every_debug_only_rust_test():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "make debug-check" in ci and "make test" in ci
    commands = _dry_run("debug-check") + _dry_run("test")
    debug_only = sorted(
        path.stem for path in (REPO / "crates").glob("*/tests/*.rs")
        if "not(debug_assertions), ignore" in path.read_text(encoding="utf-8"))
    assert debug_only, "no Rust test is marked debug-only: this test has nothing to check"
    for name in debug_only:
        # A debug build: `cargo test` without --release, naming the test.
        runs = [line for line in commands.splitlines()
                if "cargo test" in line and "--release" not in line and re.search(rf"--test {name}\b", line)]
        assert runs, f"crates/*/tests/{name}.rs checks debug assertions but no CI target runs it in a debug build"


def test_setup_asks_pip_to_be_quiet():
    # maturin develop installs the dependencies with pip, which otherwise
    # prints "Requirement already satisfied" for each of them on every build.
    # -B: as if every file had changed, so that the build's recipe is printed.
    maturin = [line for line in _dry_run(".venv/.irqlab-installed", "-B").splitlines() if "maturin develop" in line]
    assert maturin, "make setup runs no maturin develop"
    for line in maturin:
        assert "PIP_QUIET=1" in line and "--quiet" in line, line
